//! GitHub's REST API: repositories linked from a paper's abstract, the repository search, and a
//! repository's top-level files (the contents API), read from their JSON.

use serde::Deserialize;

use crate::document::normalize;
use crate::lineage::{TITLE_WITH_AUTHORS, is_code_name, jaccard, title_words};

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

/// The files worth reading, README first, then code (Python first), at most `max`, each at most
/// `max_bytes`; names that are hidden or could leave the directory are never taken.
pub fn pick_files(listing: &[Content], max: usize, max_bytes: u64) -> Vec<&Content> {
    let mut files: Vec<&Content> = listing
        .iter()
        .filter(|c| c.kind == "file" && c.download_url.is_some() && c.size <= max_bytes)
        .filter(|c| {
            !c.name.is_empty()
                && !c.name.starts_with('.')
                && !c.name.contains(['/', '\\'])
                && c.name != ".."
        })
        .filter(|c| is_readme_name(&c.name) || is_code_name(&c.name))
        .collect();
    let order = |c: &Content| {
        if is_readme_name(&c.name) {
            0
        } else if c.name.ends_with(".py") {
            1
        } else {
            2
        }
    };
    files.sort_by(|a, b| order(a).cmp(&order(b)).then(a.name.cmp(&b.name)));
    // One README is enough.
    let mut seen_readme = false;
    files.retain(|c| {
        let r = is_readme_name(&c.name);
        let keep = !(r && seen_readme);
        seen_readme |= r;
        keep
    });
    files.truncate(max);
    files
}

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

    fn file(name: &str, size: u64) -> Content {
        Content {
            name: name.into(),
            kind: "file".into(),
            size,
            download_url: Some(format!("http://x/{name}")),
        }
    }

    #[test]
    fn the_readme_and_small_code_files_are_picked() {
        let listing = vec![
            file("utils.py", 10),
            file("LICENSE", 10),
            file("README.md", 10),
            file("readme.txt", 10),
            file("config.yaml", 10),
            file("huge.py", 10_000_000),
            file(".hidden.py", 10),
            file("train.py", 10),
            Content {
                kind: "dir".into(),
                ..file("models", 0)
            },
        ];
        let names: Vec<&str> = pick_files(&listing, 10, 100_000)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            names,
            vec!["README.md", "train.py", "utils.py", "config.yaml"]
        );
        assert_eq!(pick_files(&listing, 2, 100_000).len(), 2);
    }

    #[test]
    fn a_repository_names_the_paper_by_description_id_or_name() {
        let repo = |name: &str, description: Option<&str>| Repo {
            full_name: format!("o/{name}"),
            html_url: String::new(),
            name: name.into(),
            description: description.map(str::to_string),
            homepage: None,
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
