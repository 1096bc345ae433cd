//! The LLM judge, the last resort of the verifier. It first writes a probe when it can (running
//! it decides, as for any probe); otherwise it judges in PaperBench's format (# Expectations /
//! # Reality / # Score 0 or 1), asked `votes` times (distinct seeds) and decided by majority. A
//! vote whose score cannot be read, or a failed call, is invalid and counts for neither side; a
//! tie or no valid vote leaves the criterion undecided (PaperBench: a failed judge is not a 0).

use std::path::Path;

use reprolab_llm::parse::extract_code;
use reprolab_llm::{ChatModel, ChatRequest};
use serde::{Deserialize, Serialize};

use crate::checks::{CheckResult, Checker, Outcome};
use crate::code;
use crate::fingerprint::{Criterion, normalize};
use crate::verify::Judge;

/// Code shown to the judge at most, in characters (the most relevant files first).
pub const CODE_BUDGET: usize = 24_000;

const SYSTEM: &str = "You are a careful reviewer. You check whether a code base implements one \
criterion taken from a research paper. Judge only that criterion, from the code you are shown. \
Answer in exactly this format:\n# Expectations\nWhat code that implements the criterion must \
contain, from the paper.\n# Reality\nWhat the code contains, citing file:line.\n# Score\n1 if \
the code implements the criterion as stated, 0 if it does not or if you cannot find it.";

/// One vote, as read from an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    /// 0 or 1; `None` when the answer had no readable score or the call failed.
    pub score: Option<u8>,
    /// The answer's Reality section (or the error).
    pub reality: String,
}

pub struct LlmJudge<'a> {
    pub model: &'a dyn ChatModel,
    /// The paper's text, for the paragraph each criterion comes from.
    pub paper: &'a str,
    pub votes: u32,
    pub max_tokens: u32,
    /// Before judging, ask for a probe that checks the criterion by running the code.
    pub write_probes: bool,
}

const PROBE_SYSTEM: &str = "You write short Python test scripts that check one claim about a \
code base by running it on a small input. You answer with one fenced Python block, or NONE.";

impl Judge for LlmJudge<'_> {
    async fn judge(&self, criterion: &Criterion, code_dir: &Path) -> CheckResult {
        let prompt = prompt(
            &paragraph_of(self.paper, &criterion.source),
            &format!("{} (scope: {})", criterion.fact, criterion.scope),
            &code_for(criterion, code_dir),
        );
        let votes = self.ask(&prompt).await;
        decide(&votes)
    }

    async fn probe_for(&self, criterion: &Criterion, code_dir: &Path) -> Option<String> {
        if !self.write_probes {
            return None;
        }
        let prompt = format!(
            "## The criterion, from a paper\n{} (scope: {})\nThe paper says: {}\n\n## The code \
(its directory is the working directory and first on sys.path)\n{}\n\nWrite a Python script \
that checks the criterion by importing this code and running it on a small input: compare an \
output with the paper's formula computed independently, a shape, a value after initialisation, \
a schedule at a given step. Use `assert condition, \"expected ..., found ...\"`. No files, no \
network, a few seconds at most. If running code cannot check this criterion (it is about where \
data comes from, or wording), answer NONE.",
            criterion.fact,
            criterion.scope,
            paragraph_of(self.paper, &criterion.source),
            code_for(criterion, code_dir)
        );
        let mut req = ChatRequest::with_system(PROBE_SYSTEM, prompt);
        req.max_tokens = self.max_tokens;
        let answer = self.model.chat(&req).await.ok()?;
        let text = answer.text();
        if text.trim().trim_matches('.').eq_ignore_ascii_case("none") {
            return None;
        }
        extract_code(text, &|_| true)
            .code
            .filter(|c| !c.trim().is_empty())
    }
}

/// The code the model sees for `criterion`: the files that mention it most first.
fn code_for(criterion: &Criterion, code_dir: &Path) -> String {
    let files = code::read_dir(code_dir);
    let query = format!(
        "{} {} {}",
        criterion.fact, criterion.scope, criterion.source
    );
    code::render(&code::ranked(&files, &query), CODE_BUDGET)
}

impl LlmJudge<'_> {
    /// `votes` answers to `prompt`; with more than one, sampled (temperature 0.7) with distinct
    /// seeds, so each is its own request (and its own recording).
    pub async fn ask(&self, prompt: &str) -> Vec<Vote> {
        let votes = self.votes.max(1);
        let mut out = Vec::with_capacity(votes as usize);
        for i in 0..votes {
            let mut req = ChatRequest::with_system(SYSTEM, prompt);
            req.max_tokens = self.max_tokens;
            if votes > 1 {
                req.temperature = 0.7;
                req.seed = Some(u64::from(i));
            }
            out.push(match self.model.chat(&req).await {
                Ok(resp) => read_vote(resp.text()),
                Err(e) => Vote {
                    score: None,
                    reality: format!("the judge's call failed: {e}"),
                },
            });
        }
        out
    }
}

fn prompt(paper: &str, criterion: &str, code: &str) -> String {
    format!(
        "## The paper says\n{paper}\n\n## The criterion\n{criterion}\n\n## The code\n{code}\n\n\
         Does the code implement the criterion? Answer with # Expectations, # Reality and # Score."
    )
}

/// The majority of the valid votes; a tie or none valid decides nothing.
pub fn decide(votes: &[Vote]) -> CheckResult {
    let ones = votes.iter().filter(|v| v.score == Some(1)).count();
    let zeros = votes.iter().filter(|v| v.score == Some(0)).count();
    let invalid = votes.len() - ones - zeros;
    let outcome = match ones.cmp(&zeros) {
        std::cmp::Ordering::Greater => Outcome::Pass,
        std::cmp::Ordering::Less => Outcome::Fail,
        std::cmp::Ordering::Equal => Outcome::Undecided,
    };
    let mut tally = format!("judge: {ones} of {} votes say it holds", votes.len());
    if invalid > 0 {
        tally.push_str(&format!(" ({invalid} unreadable or failed)"));
    }
    let mut evidence = vec![tally];
    let winner = match outcome {
        Outcome::Pass => Some(1),
        Outcome::Fail => Some(0),
        Outcome::Undecided => None,
    };
    evidence.extend(
        votes
            .iter()
            .filter(|v| winner.is_none() || v.score == winner)
            .take(2)
            .map(|v| code::clip(&v.reality, 600)),
    );
    CheckResult {
        checker: Checker::Judge,
        outcome,
        evidence,
    }
}

/// Score and reality of an answer. The score is the first 0 or 1 after the last "Score"
/// heading (`# Score`, `**Score:**`, `Score: 1`); the reality is the text under "Reality".
pub fn read_vote(answer: &str) -> Vote {
    let lower = answer.to_lowercase();
    let score = lower.rfind("score").and_then(|at| {
        lower[at + "score".len()..]
            .chars()
            .find(|c| c.is_ascii_digit())
            .and_then(|c| match c {
                '0' => Some(0),
                '1' => Some(1),
                _ => None,
            })
    });
    let reality = section(answer, "reality").unwrap_or_else(|| answer.trim().to_string());
    Vote { score, reality }
}

/// The text after a `# Name` (or `Name:`) heading, up to the next heading.
fn section(answer: &str, name: &str) -> Option<String> {
    let mut lines = answer.lines();
    lines.find(|l| {
        let t = l
            .trim()
            .trim_start_matches('#')
            .trim()
            .trim_matches('*')
            .to_lowercase();
        t.starts_with(name)
    })?;
    let body: Vec<&str> = lines
        .take_while(|l| !l.trim_start().starts_with('#') && !l.to_lowercase().contains("score"))
        .collect();
    let text = body.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The paragraph of `paper` holding `source` (blank-line separated), else `source` itself.
pub fn paragraph_of(paper: &str, source: &str) -> String {
    let want = normalize(source);
    paper
        .split("\n\n")
        .find(|p| normalize(p).contains(&want))
        .map(|p| p.trim().to_string())
        .unwrap_or_else(|| source.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_are_read_from_paperbench_answers_and_loose_ones() {
        let v = read_vote(
            "# Expectations\nSGD, momentum 0.9\n# Reality\ntrain.py:12 uses Adam\n# Score\n0\n",
        );
        assert_eq!(v.score, Some(0));
        assert_eq!(v.reality, "train.py:12 uses Adam");
        assert_eq!(read_vote("**Reality:** fine\n**Score:** 1").score, Some(1));
        assert_eq!(read_vote("Score: 7").score, None);
        assert_eq!(read_vote("I think it is right.").score, None);
    }

    #[test]
    fn the_majority_of_valid_votes_decides_and_a_tie_does_not() {
        let vote = |s: Option<u8>| Vote {
            score: s,
            reality: format!("{s:?}"),
        };
        let r = decide(&[vote(Some(1)), vote(Some(0)), vote(Some(1))]);
        assert_eq!(r.outcome, Outcome::Pass);
        assert!(r.evidence[0].contains("2 of 3"));
        assert_eq!(
            decide(&[vote(Some(1)), vote(Some(0))]).outcome,
            Outcome::Undecided
        );
        let r = decide(&[vote(None), vote(Some(0)), vote(None)]);
        assert_eq!(r.outcome, Outcome::Fail);
        assert!(r.evidence[0].contains("2 unreadable"));
        assert_eq!(decide(&[vote(None)]).outcome, Outcome::Undecided);
    }

    #[test]
    fn the_paragraph_of_a_source_is_found_across_wrapping() {
        let paper = "# T\n\nIntro text.\n\nWe use a\nbatch size of 64 and\nAdam.\n\nEnd.";
        assert_eq!(
            paragraph_of(paper, "batch size of 64 and Adam."),
            "We use a\nbatch size of 64 and\nAdam."
        );
        assert_eq!(paragraph_of(paper, "missing"), "missing");
    }
}
