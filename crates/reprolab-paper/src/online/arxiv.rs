//! arXiv's export API: the query for a reference's title, and its Atom answer read with an XML
//! parser (roxmltree).

use crate::document::normalize;

const ATOM: &str = "http://www.w3.org/2005/Atom";
const ARXIV: &str = "http://arxiv.org/schemas/atom";

/// One paper of an arXiv answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ArxivEntry {
    /// The identifier without its version: `1710.09412`, `hep-th/9901001`.
    pub id: String,
    /// The abstract page, as arXiv gives it (`http://arxiv.org/abs/1710.09412v2`).
    pub abs_url: String,
    pub title: String,
    /// The abstract.
    pub summary: String,
    /// Full names, in order.
    pub authors: Vec<String>,
    pub year: Option<u16>,
    /// The authors' comment (`arxiv:comment`), which often links the code.
    pub comment: Option<String>,
    /// Every `<link href>` of the entry.
    pub links: Vec<String>,
}

/// The query URL: the normalised title as a phrase in the title field, `max_results` answers.
pub fn query_url(base: &str, title: &str, max_results: usize) -> Result<String, String> {
    let phrase = normalize(title);
    let url = reqwest::Url::parse_with_params(
        base,
        &[
            ("search_query", format!("ti:\"{phrase}\"")),
            ("start", "0".into()),
            ("max_results", max_results.to_string()),
        ],
    )
    .map_err(|e| format!("the arXiv URL {base:?} is not a URL ({e})"))?;
    Ok(url.to_string())
}

/// Whitespace (arXiv wraps titles and abstracts) collapsed to single spaces.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The entries of an arXiv Atom feed; an error for what is not one, and for arXiv's own error
/// answers (a feed whose one entry is titled Error, with an `api/errors` id).
pub fn parse_feed(xml: &str) -> Result<Vec<ArxivEntry>, String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not XML: {e}"))?;
    let root = doc.root_element();
    if !root.has_tag_name((ATOM, "feed")) {
        return Err(format!(
            "not an Atom feed (the root element is <{}>)",
            root.tag_name().name()
        ));
    }
    let text_of = |node: roxmltree::Node, ns: &str, name: &str| {
        node.children()
            .find(|c| c.has_tag_name((ns, name)))
            .and_then(|c| c.text())
            .map(flat)
    };
    let mut entries = Vec::new();
    for entry in root.children().filter(|c| c.has_tag_name((ATOM, "entry"))) {
        let id_url = text_of(entry, ATOM, "id").unwrap_or_default();
        if id_url.contains("/api/errors") {
            let why = text_of(entry, ATOM, "summary").unwrap_or_default();
            return Err(format!("arXiv answered with an error: {why}"));
        }
        let Some(id) = id_url.split("/abs/").nth(1).map(strip_version) else {
            return Err(format!(
                "an entry's id {id_url:?} is not an arXiv abstract URL"
            ));
        };
        let title = text_of(entry, ATOM, "title").unwrap_or_default();
        if title.is_empty() {
            return Err(format!("entry {id} has no title"));
        }
        let authors = entry
            .children()
            .filter(|c| c.has_tag_name((ATOM, "author")))
            .filter_map(|a| text_of(a, ATOM, "name"))
            .filter(|n| !n.is_empty())
            .collect();
        let year =
            text_of(entry, ATOM, "published").and_then(|p| p.get(..4).and_then(|y| y.parse().ok()));
        let links = entry
            .children()
            .filter(|c| c.has_tag_name((ATOM, "link")))
            .filter_map(|l| l.attribute("href").map(str::to_string))
            .collect();
        entries.push(ArxivEntry {
            id: id.to_string(),
            abs_url: id_url.clone(),
            title,
            summary: text_of(entry, ATOM, "summary").unwrap_or_default(),
            authors,
            year,
            comment: text_of(entry, ARXIV, "comment"),
            links,
        });
    }
    Ok(entries)
}

/// `1710.09412v2` → `1710.09412`.
fn strip_version(id: &str) -> &str {
    match id.rfind('v') {
        Some(i) if i > 0 && id[i + 1..].chars().all(|c| c.is_ascii_digit()) && i + 1 < id.len() => {
            &id[..i]
        }
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query: search_query=ti:"mixup"</title>
  <opensearch:totalResults>1</opensearch:totalResults>
  <entry>
    <id>http://arxiv.org/abs/1710.09412v2</id>
    <published>2017-10-25T17:51:41Z</published>
    <title>mixup: Beyond Empirical
      Risk Minimization</title>
    <summary>  Large deep neural networks are powerful. We propose mixup, which trains
a neural network on convex combinations of pairs of examples and their labels.
    </summary>
    <author><name>Hongyi Zhang</name></author>
    <author><name>Moustapha Cisse</name></author>
    <arxiv:comment>ICLR camera ready; code at https://github.com/facebookresearch/mixup-cifar10</arxiv:comment>
    <link href="http://arxiv.org/abs/1710.09412v2" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/1710.09412v2" rel="related" type="application/pdf"/>
  </entry>
</feed>"#;

    #[test]
    fn an_entry_is_read_whole() {
        let entries = parse_feed(FEED).unwrap();
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(e.id, "1710.09412");
        assert_eq!(e.abs_url, "http://arxiv.org/abs/1710.09412v2");
        assert_eq!(e.title, "mixup: Beyond Empirical Risk Minimization");
        assert!(
            e.summary
                .starts_with("Large deep neural networks are powerful. We propose")
        );
        assert_eq!(e.authors, vec!["Hongyi Zhang", "Moustapha Cisse"]);
        assert_eq!(e.year, Some(2017));
        assert!(
            e.comment
                .as_deref()
                .unwrap()
                .contains("github.com/facebookresearch")
        );
        assert_eq!(e.links.len(), 2);
    }

    #[test]
    fn an_empty_answer_has_no_entries() {
        let xml = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>q</title></feed>"#;
        assert_eq!(parse_feed(xml).unwrap(), vec![]);
    }

    #[test]
    fn malformed_and_error_answers_are_errors() {
        let e = parse_feed("<feed><entry>").unwrap_err();
        assert!(e.starts_with("not XML"), "{e}");
        let e = parse_feed("<html><body>Service Unavailable</body></html>").unwrap_err();
        assert!(
            e.contains("not an Atom feed (the root element is <html>)"),
            "{e}"
        );
        let e = parse_feed("").unwrap_err();
        assert!(e.starts_with("not XML"), "{e}");
        let error = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry>
<id>http://arxiv.org/api/errors#incorrect_id_format_for_1234</id><title>Error</title>
<summary>incorrect id format for 1234</summary></entry></feed>"#;
        let e = parse_feed(error).unwrap_err();
        assert_eq!(
            e,
            "arXiv answered with an error: incorrect id format for 1234"
        );
        let untitled = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry>
<id>http://arxiv.org/abs/2001.00001v1</id></entry></feed>"#;
        assert!(parse_feed(untitled).unwrap_err().contains("no title"));
    }

    #[test]
    fn versions_are_stripped_from_ids() {
        assert_eq!(strip_version("1710.09412v12"), "1710.09412");
        assert_eq!(strip_version("hep-th/9901001v1"), "hep-th/9901001");
        assert_eq!(strip_version("1710.09412"), "1710.09412");
        assert_eq!(strip_version("solv-int/9901001"), "solv-int/9901001");
    }

    #[test]
    fn the_query_is_the_title_phrase() {
        let url = query_url(
            "http://127.0.0.1:9/api/query",
            "mixup: Beyond Empirical Risk Minimization",
            5,
        )
        .unwrap();
        let parsed = reqwest::Url::parse(&url).unwrap();
        let q: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        assert_eq!(
            q[0],
            (
                "search_query".into(),
                "ti:\"mixup beyond empirical risk minimization\"".into()
            )
        );
        assert_eq!(q[2], ("max_results".into(), "5".into()));
        assert!(query_url("not a url", "t", 5).is_err());
    }
}
