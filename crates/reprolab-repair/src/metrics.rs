//! The study's measures of a repair (its §3): the patch as a diff, improvement rate (IR),
//! patch complexity and asymmetric Jaccard (AJ) over fault types.

use std::collections::BTreeSet;

use reprolab_core::{Config, FaultType, Goal, SearchSpace, Subject, normalize_type};

pub use reprolab_search::space::patch_diff;

/// Improvement rate `IR = (M_patch − M_fault) / (M_GT − M_fault)`, computed as
/// `s·(M_patch − M_fault) / s·(M_GT − M_fault)` with `s = +1` for goal `max` and `−1` for `min`,
/// so that an improvement towards the ground truth is positive for losses too. 1 = as good as
/// the ground truth; above 1 = better than it; negative = worse than the faulty config (when
/// the ground truth is better than the faulty config). `None` when `M_GT == M_fault` or a mean
/// is not finite.
pub fn ir(m_patch: f64, m_fault: f64, m_gt: f64, goal: Goal) -> Option<f64> {
    let s = goal.sign();
    let num = s * (m_patch - m_fault);
    let den = s * (m_gt - m_fault);
    let r = num / den;
    (den != 0.0 && r.is_finite()).then_some(r)
}

/// Patch complexity: changed hyperparameters / all hyperparameters of the space (0..1). The
/// denominator is the config's key count when the space is empty; 0 for an empty config.
pub fn complexity(faulty: &Config, patch: &Config, space: &SearchSpace) -> f64 {
    let total = if space.is_empty() {
        faulty.len()
    } else {
        space.len()
    };
    if total == 0 {
        return 0.0;
    }
    patch_diff(faulty, patch).len() as f64 / total as f64
}

/// The (normalised) fault types of the hyperparameters a patch changes, from the space's
/// `fault` labels (parameters without one contribute nothing).
pub fn changed_types(space: &SearchSpace, faulty: &Config, patch: &Config) -> BTreeSet<FaultType> {
    patch_diff(faulty, patch)
        .iter()
        .filter_map(|(k, _, _)| space.get(k).and_then(|p| p.fault))
        .map(normalize_type)
        .collect()
}

/// The (normalised) ground-truth fault types of a subject: its `[fix]` labels, or, when it
/// lists none, the types of the hyperparameters the fixed config changes. Empty without a fix.
pub fn gt_types(subject: &Subject) -> BTreeSet<FaultType> {
    let Some(fix) = &subject.fix else {
        return BTreeSet::new();
    };
    if fix.faults.is_empty() {
        changed_types(&subject.space, &subject.config, &fix.config)
    } else {
        fix.faults.iter().map(|l| normalize_type(l.fault)).collect()
    }
}

/// Asymmetric Jaccard `|OP_patch ∩ OP_GT| / |OP_GT|` over fault types, both sets normalised
/// with [`normalize_type`]. `None` when the ground truth has no type.
pub fn asymmetric_jaccard(
    patch_ops: &BTreeSet<FaultType>,
    gt_ops: &BTreeSet<FaultType>,
) -> Option<f64> {
    let p: BTreeSet<FaultType> = patch_ops.iter().copied().map(normalize_type).collect();
    let g: BTreeSet<FaultType> = gt_ops.iter().copied().map(normalize_type).collect();
    if g.is_empty() {
        return None;
    }
    Some(p.intersection(&g).count() as f64 / g.len() as f64)
}
