//! GitHub's REST API: repositories linked from a paper's abstract, the repository search, a
//! repository's default branch, its whole file list (the git trees API) or its top-level files
//! (the contents API), read from their JSON; and where a file's raw text is downloaded.

use serde::Deserialize;

use crate::document::normalize;
use crate::lineage::{TITLE_WITH_AUTHORS, jaccard, title_words};

/// A repository, as the search API lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Repo {
    /// `owner/name`.
    pub full_name: String,
    pub html_url: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub homepage: Option<String>,
    /// Search hits carry it: no request for the repository itself is needed then.
    #[serde(default)]
    pub default_branch: Option<String>,
}

/// What `GET /repos/{owner}/{repo}` says that matters here.
#[derive(Debug, Deserialize)]
struct RepoInfo {
    default_branch: String,
}

/// One entry of a git tree: a file (`blob`), a folder (`tree`) or a submodule (`commit`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TreeEntry {
    /// Relative to the repository's root, `/`-separated.
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// `120000` for a symbolic link (its blob is the link's target, not code).
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub size: u64,
}

/// A recursive git tree; `truncated` when GitHub left entries out (over 100,000 of them or
/// 7 MB), so that it is not the whole repository.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tree {
    pub tree: Vec<TreeEntry>,
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Deserialize)]
struct SearchAnswer {
    items: Vec<Repo>,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Content {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub download_url: Option<String>,
}

/// The search URL: the normalised title in a repository's name, description or README, the five
/// best matches.
pub fn search_url(base: &str, title: &str) -> Result<String, String> {
    let url = reqwest::Url::parse_with_params(
        &format!("{}/search/repositories", base.trim_end_matches('/')),
        &[
            (
                "q",
                format!("{} in:name,description,readme", normalize(title)),
            ),
            ("per_page", "5".into()),
        ],
    )
    .map_err(|e| format!("the GitHub API URL {base:?} is not a URL ({e})"))?;
    Ok(url.to_string())
}

/// The listing of a repository's top directory.
pub fn contents_url(base: &str, full_name: &str) -> String {
    format!("{}/repos/{full_name}/contents", base.trim_end_matches('/'))
}

/// The repository itself (its default branch).
pub fn repo_url(base: &str, full_name: &str) -> String {
    format!("{}/repos/{full_name}", base.trim_end_matches('/'))
}

/// Every file of the repository at `branch`, in one answer (the git trees API, recursive).
pub fn tree_url(base: &str, full_name: &str, branch: &str) -> Result<String, String> {
    let mut url = parse_base(base, "the GitHub API URL")?;
    url.path_segments_mut()
        .map_err(|()| format!("the GitHub API URL {base:?} cannot have a path"))?
        .pop_if_empty()
        .extend(["repos"])
        .extend(full_name.split('/'))
        .extend(["git", "trees"])
        .extend(branch.split('/'));
    url.set_query(Some("recursive=1"));
    Ok(url.to_string())
}

/// Where the text of `path` (a tree entry's) at `branch` is downloaded: `RAW/owner/repo/
/// branch/path` (raw.githubusercontent.com's layout), each part percent-encoded.
pub fn raw_url(
    raw_base: &str,
    full_name: &str,
    branch: &str,
    path: &str,
) -> Result<String, String> {
    let mut url = parse_base(raw_base, "the raw files' URL")?;
    url.path_segments_mut()
        .map_err(|()| format!("the raw files' URL {raw_base:?} cannot have a path"))?
        .pop_if_empty()
        .extend(full_name.split('/'))
        .extend(branch.split('/'))
        .extend(path.split('/'));
    Ok(url.to_string())
}

fn parse_base(base: &str, what: &str) -> Result<reqwest::Url, String> {
    reqwest::Url::parse(base.trim_end_matches('/'))
        .map_err(|e| format!("{what} {base:?} is not a URL ({e})"))
}

/// The default branch, from the repository's own answer.
pub fn parse_default_branch(body: &[u8]) -> Result<String, String> {
    serde_json::from_slice::<RepoInfo>(body)
        .map(|r| r.default_branch)
        .map_err(|e| format!("the repository's answer is not what GitHub sends ({e})"))
}

/// A recursive git tree.
pub fn parse_tree(body: &[u8]) -> Result<Tree, String> {
    serde_json::from_slice::<Tree>(body)
        .map_err(|e| format!("the file tree is not what GitHub sends ({e})"))
}

/// The repositories of a search answer, best first.
pub fn parse_search(body: &[u8]) -> Result<Vec<Repo>, String> {
    serde_json::from_slice::<SearchAnswer>(body)
        .map(|a| a.items)
        .map_err(|e| format!("the search answer is not what GitHub sends ({e})"))
}

/// The entries of a directory listing.
pub fn parse_contents(body: &[u8]) -> Result<Vec<Content>, String> {
    serde_json::from_slice::<Vec<Content>>(body)
        .map_err(|e| format!("the listing is not a directory's ({e})"))
}

/// `owner/name` of every GitHub repository `text` links (`github.com/owner/name`), in order,
/// once each.
pub fn linked_repos(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("github.com/") {
        let rest = &text[at + "github.com/".len()..];
        let part = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect()
        };
        let owner = part(rest);
        let Some(after) = rest[owner.len()..].strip_prefix('/') else {
            continue;
        };
        let name = part(after);
        let name = name.trim_end_matches('.');
        let name = name.strip_suffix(".git").unwrap_or(name);
        if owner.is_empty() || name.is_empty() {
            continue;
        }
        let full = format!("{owner}/{name}");
        if !out.contains(&full) {
            out.push(full);
        }
    }
    out
}

/// Why a search hit is the paper's code, if it says so itself: its description names the
/// paper's title or its arXiv id, or its name agrees with the title.
pub fn repo_names_paper(repo: &Repo, title: &str, arxiv_id: &str) -> Option<&'static str> {
    let about = format!(
        "{} {}",
        repo.description.as_deref().unwrap_or(""),
        repo.homepage.as_deref().unwrap_or("")
    );
    let title_norm = normalize(title);
    if !title_norm.is_empty() && format!(" {} ", normalize(&about)).contains(&title_norm) {
        return Some("its description names the title");
    }
    if about.contains(arxiv_id) {
        return Some("its description cites the arXiv id");
    }
    let name = repo.name.replace(['-', '_', '.'], " ");
    let main = title.split_once(':').map_or(title, |(m, _)| m);
    let agrees = |t: &str| jaccard(&title_words(&name), &title_words(t)) >= TITLE_WITH_AUTHORS;
    if agrees(title) || (title_words(main).len() >= 2 && agrees(main)) {
        return Some("its name agrees with the title");
    }
    None
}

/// Whether a README's text cites the paper: its arXiv id, or its whole title.
pub fn readme_cites(readme: &str, title: &str, arxiv_id: &str) -> bool {
    let title_norm = normalize(title);
    readme.contains(arxiv_id) || (!title_norm.is_empty() && normalize(readme).contains(&title_norm))
}

/// Whether a file's name is a README's.
pub fn is_readme_name(name: &str) -> bool {
    name.to_ascii_lowercase().starts_with("readme")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_in_abstracts_are_found_once() {
        let text = "Code: https://github.com/facebookresearch/mixup-cifar10. Also \
                    github.com/a/b.git and (https://github.com/facebookresearch/mixup-cifar10)";
        assert_eq!(
            linked_repos(text),
            vec!["facebookresearch/mixup-cifar10", "a/b"]
        );
        assert_eq!(
            linked_repos("https://github.com/onlyowner"),
            Vec::<String>::new()
        );
        assert_eq!(linked_repos("no link"), Vec::<String>::new());
    }

    #[test]
    fn search_answers_are_read_and_bad_ones_are_errors() {
        let body = br#"{"total_count": 1, "incomplete_results": false, "items": [
            {"full_name": "t/softened-targets", "html_url": "https://github.com/t/softened-targets",
             "name": "softened-targets", "description": null, "stargazers_count": 3}]}"#;
        let repos = parse_search(body).unwrap();
        assert_eq!(repos[0].full_name, "t/softened-targets");
        assert_eq!(repos[0].description, None);
        assert_eq!(
            parse_search(br#"{"total_count": 0, "items": []}"#).unwrap(),
            vec![]
        );
        let e = parse_search(br#"{"message": "API rate limit exceeded"}"#).unwrap_err();
        assert!(e.contains("not what GitHub sends"), "{e}");
        assert!(parse_search(b"<html>").is_err());
    }

    #[test]
    fn listings_are_read_and_a_file_answer_is_an_error() {
        let body = br#"[{"name": "train.py", "path": "train.py", "type": "file", "size": 10,
            "download_url": "http://x/train.py"}, {"name": "src", "type": "dir", "size": 0,
            "download_url": null}]"#;
        let items = parse_contents(body).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].kind, "dir");
        assert!(parse_contents(br#"{"name": "README.md", "type": "file"}"#).is_err());
    }

    #[test]
    fn trees_and_default_branches_are_read_and_bad_ones_are_errors() {
        let body = br#"{"sha": "abc", "url": "u", "truncated": false, "tree": [
            {"path": "src", "mode": "040000", "type": "tree", "sha": "1", "url": "u"},
            {"path": "src/model.py", "mode": "100644", "type": "blob", "sha": "2", "size": 120,
             "url": "u"},
            {"path": "vendor/lib", "mode": "160000", "type": "commit", "sha": "3"}]}"#;
        let tree = parse_tree(body).unwrap();
        assert!(!tree.truncated);
        assert_eq!(tree.tree.len(), 3);
        assert_eq!(tree.tree[1].path, "src/model.py");
        assert_eq!(tree.tree[1].size, 120);
        assert_eq!(tree.tree[2].kind, "commit");
        assert!(
            parse_tree(br#"{"truncated": true, "tree": []}"#)
                .unwrap()
                .truncated
        );
        let e = parse_tree(br#"{"message": "Git Repository is empty."}"#).unwrap_err();
        assert!(e.contains("not what GitHub sends"), "{e}");
        assert_eq!(
            parse_default_branch(br#"{"full_name": "o/r", "default_branch": "main"}"#).unwrap(),
            "main"
        );
        assert!(parse_default_branch(br#"{"message": "Not Found"}"#).is_err());
    }

    #[test]
    fn tree_and_raw_urls_keep_the_base_path_and_encode_their_parts() {
        assert_eq!(
            tree_url("https://api.github.com/", "o/r", "main").unwrap(),
            "https://api.github.com/repos/o/r/git/trees/main?recursive=1"
        );
        assert_eq!(
            tree_url("https://ghe.example/api/v3", "o/r", "release/v1").unwrap(),
            "https://ghe.example/api/v3/repos/o/r/git/trees/release/v1?recursive=1"
        );
        assert_eq!(
            raw_url(
                "https://raw.githubusercontent.com",
                "o/r",
                "main",
                "src/my model#1.py"
            )
            .unwrap(),
            "https://raw.githubusercontent.com/o/r/main/src/my%20model%231.py"
        );
        assert!(tree_url("not a url", "o/r", "main").is_err());
    }

    #[test]
    fn a_repository_names_the_paper_by_description_id_or_name() {
        let repo = |name: &str, description: Option<&str>| Repo {
            full_name: format!("o/{name}"),
            html_url: String::new(),
            name: name.into(),
            description: description.map(str::to_string),
            homepage: None,
            default_branch: None,
        };
        let title = "mixup: Beyond Empirical Risk Minimization";
        let r = repo(
            "x",
            Some("PyTorch code of \"mixup: Beyond Empirical Risk Minimization\""),
        );
        assert!(repo_names_paper(&r, title, "1710.09412").is_some());
        let r = repo("x", Some("see arXiv:1710.09412"));
        assert!(repo_names_paper(&r, title, "1710.09412").is_some());
        let r = repo("softened_targets", None);
        assert_eq!(
            repo_names_paper(
                &r,
                "Softened Targets: Calibrating Classifiers",
                "2401.00001"
            ),
            Some("its name agrees with the title")
        );
        // One word of a title is too common a name.
        let r = repo("mixup", None);
        assert_eq!(repo_names_paper(&r, title, "1710.09412"), None);
        let r = repo("awesome-deep-learning", Some("A list of papers"));
        assert_eq!(repo_names_paper(&r, title, "1710.09412"), None);
        assert!(readme_cites(
            "# Mixup\nhttps://arxiv.org/abs/1710.09412",
            title,
            "1710.09412"
        ));
        assert!(!readme_cites("# Something else", title, "1710.09412"));
    }
}
