//! Neutrality analysis (Kim et al., Algorithm 1): a breadth-first search from a faulty
//! subject's known fix over configs that differ by one hyperparameter at a time, keeping the
//! neighbours that are *neutral* (not significantly worse than their parent) and collecting
//! those that are not significantly worse than the known fix as *alternative ground truths*.
//!
//! The search, as in the study: the root (the fixed config) is trained `runs` times; each
//! dequeued node's neighbours ([`mod@neighbours`]) are trained and judged against the node and
//! against the root ([`decision`]); of a node's neutral neighbours the best `top_k` by mean
//! metric are enqueued. It stops when the queue is empty or at the budget (neighbours tried,
//! or a wall-clock deadline).
//!
//! What differs from the study, for speed, none of it changing a decision the study's rule
//! would make on the same runs:
//! * a whole BFS level (every node dequeued at the same depth) is expanded at once and its
//!   neighbours are trained concurrently, `parallel` neighbours in flight, each asking the
//!   objective for its seeds at once (the binary's objective spreads them over every worker);
//! * a config already tried (from any parent) is not tried again: the graph is a tree;
//! * sequential testing: a neighbour is trained in stages (3, 6, then 10 of 10 runs) and
//!   dropped at an interim stage only when it is clearly worse than both its parent and the
//!   root ([`decision::stop_early`]);
//! * every training goes through the objective, so the binary's evaluation cache makes a rerun
//!   (or a resumed, longer run) retrain nothing it already knows. Seeds are `0..runs` for every
//!   node.

//!
//! Module map:
//! * this file: [`NeutralitySettings`], the analysis ([`analyse`], [`neutrality()`]) and its
//!   result ([`NeutralityResult`]: every [`Node`] tried, with its [`NodeClass`]).
//! * [`mod@neighbours`]: the one-hyperparameter moves of a config ([`Move`], [`STUDY_OPERATORS`]).
//! * [`decision`]: whether a neighbour is neutral / an alternative ([`judge`]), and when
//!   sequential testing may stop early ([`stop_early`], [`stages`]).
//! * [`alternatives`]: the alternative ground truths as fixes of the faulty config
//!   (`alternatives.json`, [`Alternatives`]) and AJ against the best variant ([`best_aj`]).
//! * [`dot`]: the neutrality graph in Graphviz DOT (the SVG drawing is `reprolab-report`'s job).
//!
//! Depends on `reprolab-core`, `reprolab-stats` (the tests behind a decision),
//! `reprolab-search` (the [`Objective`] every training goes through, the space's value steps)
//! and `reprolab-repair` (a config's runs as a validation [`Group`], AJ and patch diffs, the
//! [`RepairError`] it shares with the repair engines).

pub mod alternatives;
pub mod decision;
pub mod dot;
pub mod neighbours;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use reprolab_core::{Config, FaultType, Goal, SearchSpace, Split, Subject};
use reprolab_repair::{Group, RepairError};
use reprolab_search::Objective;
use reprolab_search::join::join_bounded;
use serde::{Deserialize, Serialize};

pub use alternatives::{
    ALTERNATIVES_FILE, Alternative, Alternatives, AlternativesError, Table4, best_aj, change_labels,
};
pub use decision::{Comparison, Decision, EARLY_ALPHA, EARLY_EFFECT, judge, stages, stop_early};
pub use neighbours::{Move, STUDY_OPERATORS, neighbours};

/// How the analysis runs and when it stops.
#[derive(Debug, Clone, PartialEq)]
pub struct NeutralitySettings {
    /// Trainings per node (seeds `0..runs`); the study: 10. At least 3.
    pub runs: usize,
    /// Neutral neighbours of a node enqueued for expansion, best mean first; the study: 5.
    pub top_k: usize,
    /// The split the metric is read on (default: holdout, as repair validation).
    pub split: Split,
    /// Train neighbours in stages and stop clearly worse ones early.
    pub sequential: bool,
    /// The fault types whose parameters are changed (default: [`STUDY_OPERATORS`]).
    pub operators: Vec<FaultType>,
    /// Stop after this many neighbours have been tried (the root not counted).
    pub max_tried: Option<usize>,
    /// Stop at this instant: no new training stage starts after it; neighbours caught in the
    /// middle are kept as unfinished (their trainings are cached for a rerun).
    pub deadline: Option<Instant>,
    /// Neighbours trained at once (≥ 1).
    pub parallel: usize,
}

impl Default for NeutralitySettings {
    fn default() -> Self {
        NeutralitySettings {
            runs: 10,
            top_k: 5,
            split: Split::Holdout,
            sequential: true,
            operators: STUDY_OPERATORS.to_vec(),
            max_tried: None,
            deadline: None,
            parallel: 4,
        }
    }
}

/// A wall-clock budget as people write it (`neutrality --budget`): `30m`, `90s`, `1h`, `1.5h`, a
/// number and a unit (s, m, h).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let expected = "expected a number with a unit, like 30m, 90s or 1h";
    let split = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("{t:?} has no unit; {expected}"))?;
    let (num, unit) = t.split_at(split);
    let x: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{num:?} is not a number; {expected}"))?;
    let scale = match unit.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown unit {u:?}; {expected}")),
    };
    if !(x.is_finite() && x > 0.0) {
        return Err(format!("{t:?} is not a positive duration; {expected}"));
    }
    Ok(Duration::from_secs_f64(x * scale))
}

/// Why the analysis stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NeutralityStop {
    /// The queue ran empty: the whole reachable network (within top-k) was explored.
    Exhausted,
    /// `max_tried` neighbours were tried.
    Nodes,
    /// The wall-clock deadline passed.
    Time,
}

/// One config the search trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Index in [`NeutralityResult::nodes`]; 0 is the root (the known fix).
    pub id: usize,
    pub parent: Option<usize>,
    /// Moves from the root.
    pub depth: usize,
    /// The move from the parent; `None` for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Move>,
    /// The full config.
    pub config: Config,
    /// Its runs (seeds `0..k`).
    pub runs: Group,
    /// The decision; `None` for the root and for a neighbour the deadline interrupted.
    pub decision: Option<Decision>,
    /// Among the top-k neutral neighbours of its parent: put in the queue (expanded unless the
    /// analysis stopped first). The root is always enqueued.
    pub enqueued: bool,
}

/// What a node is in the neutrality graph; the colours of the study's Figure 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeClass {
    /// The known fix (black).
    Root,
    /// An alternative ground truth significantly better than the known fix (blue).
    BetterThanGt,
    /// An alternative ground truth: not significantly worse than the known fix (green).
    Alternative,
    /// Neutral to its parent but significantly worse than the known fix (grey).
    Neutral,
    /// Significantly worse than its parent and the fix: not in the graph.
    NotNeutral,
    /// Interrupted by the deadline: not decided, not in the graph.
    Unfinished,
}

impl Node {
    pub fn class(&self) -> NodeClass {
        if self.parent.is_none() {
            return NodeClass::Root;
        }
        match &self.decision {
            None => NodeClass::Unfinished,
            Some(d) if d.alternative && d.better_than_gt => NodeClass::BetterThanGt,
            Some(d) if d.alternative => NodeClass::Alternative,
            Some(d) if d.neutral => NodeClass::Neutral,
            Some(_) => NodeClass::NotNeutral,
        }
    }

    /// Whether the node belongs to the neutrality graph: the root, the neighbours neutral to
    /// their parent, and the alternative ground truths.
    pub fn in_graph(&self) -> bool {
        !matches!(self.class(), NodeClass::NotNeutral | NodeClass::Unfinished)
    }

    /// Whether it is an alternative ground truth.
    pub fn is_alternative(&self) -> bool {
        matches!(
            self.class(),
            NodeClass::Alternative | NodeClass::BetterThanGt
        )
    }
}

/// Everything the analysis found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeutralityResult {
    pub goal: Goal,
    pub split: Split,
    pub runs: usize,
    pub top_k: usize,
    pub sequential: bool,
    /// Every config trained, in the order tried; the root first.
    pub nodes: Vec<Node>,
    pub stop: NeutralityStop,
    /// BFS levels expanded.
    pub levels: usize,
    /// Trainings asked of the objective (cached ones included).
    pub trainings: usize,
    /// Trainings sequential testing did not need: `runs − k` for each neighbour stopped early.
    pub saved: usize,
}

impl NeutralityResult {
    /// The root (the known fix).
    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// Neighbours decided (the root and unfinished ones not counted).
    pub fn tried(&self) -> usize {
        self.nodes.iter().filter(|n| n.decision.is_some()).count()
    }

    /// Nodes of the neutrality graph, the root not counted (the study's "# Node").
    pub fn graph_size(&self) -> usize {
        self.nodes.iter().skip(1).filter(|n| n.in_graph()).count()
    }

    /// The alternative ground truths, in the order found.
    pub fn alternatives(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.is_alternative())
    }

    /// Neighbours stopped at an interim stage.
    pub fn stopped_early(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.decision.is_some_and(|d| d.early))
            .count()
    }

    /// Neighbours interrupted by the deadline.
    pub fn unfinished(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.class() == NodeClass::Unfinished)
            .count()
    }
}

/// Reported after each BFS level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelProgress {
    /// Depth of the neighbours just tried.
    pub depth: usize,
    pub tried: usize,
    pub graph: usize,
    pub alternatives: usize,
    pub trainings: usize,
    /// Nodes in the queue for the next level.
    pub queued: usize,
}

/// The analysis of a faulty subject: BFS from its `[fix]` config over its search space.
pub async fn analyse<O: Objective>(
    obj: &O,
    subject: &Subject,
    settings: &NeutralitySettings,
    on_level: &mut dyn FnMut(&LevelProgress),
) -> Result<NeutralityResult, RepairError> {
    let Some(fix) = &subject.fix else {
        return Err(RepairError::Settings(format!(
            "{}: the manifest has no [fix] table; neutrality analysis starts from the known fix",
            subject.manifest_path.display()
        )));
    };
    neutrality(
        obj,
        &subject.space,
        subject.metric.goal,
        &fix.config,
        settings,
        on_level,
    )
    .await
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Algorithm 1 from `root` over `space` (see the module doc).
pub async fn neutrality<O: Objective>(
    obj: &O,
    space: &SearchSpace,
    goal: Goal,
    root: &Config,
    settings: &NeutralitySettings,
    on_level: &mut dyn FnMut(&LevelProgress),
) -> Result<NeutralityResult, RepairError> {
    check_settings(settings)?;
    let issues = space.validate(root);
    if !issues.is_empty() {
        let list: Vec<String> = issues.iter().map(|i| i.to_string()).collect();
        return Err(RepairError::Patch(format!(
            "the fixed config does not fit the search space: {}",
            list.join("; ")
        )));
    }
    let seeds: Vec<u64> = (0..settings.runs as u64).collect();
    let root_runs = checked(
        obj.evaluate(root, &seeds, settings.split, None).await,
        seeds.len(),
    )?;
    let root_group = Group::from_runs(&root_runs);
    if root_group.n < 2 {
        return Err(RepairError::Objective(format!(
            "the fixed config finished {} of {} trainings; the analysis compares every neighbour \
             with its metric",
            root_group.n, settings.runs
        )));
    }
    let mut nodes = vec![Node {
        id: 0,
        parent: None,
        depth: 0,
        change: None,
        config: root.clone(),
        runs: root_group,
        decision: None,
        enqueued: true,
    }];
    let mut seen: HashSet<String> = HashSet::from([root.canonical_json()]);
    let mut queue = vec![0usize];
    let (mut trainings, mut saved, mut levels) = (settings.runs, 0, 0);
    let stop = loop {
        if queue.is_empty() {
            break NeutralityStop::Exhausted;
        }
        if past(settings.deadline) {
            break NeutralityStop::Time;
        }
        let tried = nodes.len() - 1;
        if settings.max_tried.is_some_and(|m| tried >= m) {
            break NeutralityStop::Nodes;
        }
        let mut candidates = Vec::new();
        for &p in &queue {
            for mv in neighbours::neighbours(space, &nodes[p].config, &settings.operators) {
                let config = neighbours::apply(&nodes[p].config, &mv);
                if seen.insert(config.canonical_json()) {
                    candidates.push((p, mv, config));
                }
            }
        }
        let mut truncated = false;
        if let Some(m) = settings.max_tried
            && candidates.len() > m - tried
        {
            candidates.truncate(m - tried);
            truncated = true;
        }
        let outcomes = {
            let root_group = &nodes[0].runs;
            let futures = candidates
                .iter()
                .map(|(p, _, config)| {
                    try_neighbour(obj, config, &nodes[*p].runs, root_group, goal, settings)
                })
                .collect();
            join_bounded(futures, settings.parallel).await
        };
        let depth = nodes[queue[0]].depth + 1;
        let first_new = nodes.len();
        let mut interrupted = false;
        for ((parent, mv, config), outcome) in candidates.into_iter().zip(outcomes) {
            let (runs, decision) = outcome?;
            trainings += runs.len();
            if runs.is_empty() {
                // Never started: the deadline passed first.
                interrupted = true;
                continue;
            }
            match &decision {
                None => interrupted = true,
                Some(d) if d.early => saved += settings.runs - d.runs,
                Some(_) => {}
            }
            nodes.push(Node {
                id: nodes.len(),
                parent: Some(parent),
                depth,
                change: Some(mv),
                config,
                runs: Group::from_runs(&runs),
                decision,
                enqueued: false,
            });
        }
        levels += 1;
        queue = next_queue(&mut nodes, &queue, first_new, goal, settings.top_k);
        on_level(&LevelProgress {
            depth,
            tried: nodes.iter().filter(|n| n.decision.is_some()).count(),
            graph: nodes.iter().skip(1).filter(|n| n.in_graph()).count(),
            alternatives: nodes.iter().filter(|n| n.is_alternative()).count(),
            trainings,
            queued: queue.len(),
        });
        if interrupted || past(settings.deadline) {
            break NeutralityStop::Time;
        }
        if truncated {
            break NeutralityStop::Nodes;
        }
    };
    Ok(NeutralityResult {
        goal,
        split: settings.split,
        runs: settings.runs,
        top_k: settings.top_k,
        sequential: settings.sequential,
        nodes,
        stop,
        levels,
        trainings,
        saved,
    })
}

fn check_settings(s: &NeutralitySettings) -> Result<(), RepairError> {
    if s.runs < 3 {
        return Err(RepairError::Settings(format!(
            "runs = {}: every node needs at least 3 trainings (the study uses 10)",
            s.runs
        )));
    }
    if s.top_k == 0 {
        return Err(RepairError::Settings(
            "top_k = 0: at least one neutral neighbour per node must be enqueued".into(),
        ));
    }
    if s.parallel == 0 {
        return Err(RepairError::Settings(
            "parallel = 0: at least one neighbour must be trained at a time".into(),
        ));
    }
    Ok(())
}

fn checked(
    result: Result<Vec<(Option<f64>, f64)>, String>,
    expected: usize,
) -> Result<Vec<(Option<f64>, f64)>, RepairError> {
    let runs = result.map_err(RepairError::Objective)?;
    if runs.len() != expected {
        return Err(RepairError::Objective(format!(
            "the objective returned {} results for {expected} seeds",
            runs.len()
        )));
    }
    Ok(runs)
}

/// Trains one neighbour stage by stage until it is decided: `(runs, decision)`; the decision
/// is `None` when the deadline interrupted it (no runs at all when it passed before the start).
async fn try_neighbour<O: Objective>(
    obj: &O,
    config: &Config,
    parent: &Group,
    gt: &Group,
    goal: Goal,
    settings: &NeutralitySettings,
) -> Result<(Vec<(Option<f64>, f64)>, Option<Decision>), RepairError> {
    let stages = decision::stages(settings.runs, settings.sequential);
    let mut runs: Vec<(Option<f64>, f64)> = Vec::new();
    for (i, &k) in stages.iter().enumerate() {
        if past(settings.deadline) {
            return Ok((runs, None));
        }
        let seeds: Vec<u64> = (runs.len() as u64..k as u64).collect();
        let more = checked(
            obj.evaluate(config, &seeds, settings.split, None).await,
            seeds.len(),
        )?;
        runs.extend(more);
        let group = Group::from_runs(&runs);
        let last = i + 1 == stages.len();
        if last || stop_early(parent, gt, &group, goal) {
            let d = judge(parent, gt, &group, goal, !last);
            return Ok((runs, Some(d)));
        }
    }
    unreachable!("the last stage always decides")
}

/// The next level's queue: for each parent of this level, in order, its best `top_k` neutral
/// neighbours among the nodes from `first_new` on, marked enqueued.
fn next_queue(
    nodes: &mut [Node],
    level: &[usize],
    first_new: usize,
    goal: Goal,
    top_k: usize,
) -> Vec<usize> {
    let mut next = Vec::new();
    for &p in level {
        let mut kids: Vec<usize> = nodes[first_new..]
            .iter()
            .filter(|n| n.parent == Some(p) && n.decision.is_some_and(|d| d.neutral))
            .map(|n| n.id)
            .collect();
        // Best mean first (goal-aware); ties keep the order tried.
        let key = |id: usize| {
            let m = goal.sign() * nodes[id].runs.mean;
            if m.is_nan() { f64::NEG_INFINITY } else { m }
        };
        kids.sort_by(|a, b| key(*b).total_cmp(&key(*a)).then(a.cmp(b)));
        kids.truncate(top_k);
        for k in kids {
            nodes[k].enqueued = true;
            next.push(k);
        }
    }
    next
}
