//! What the long steps of a reproduction tell whoever shows progress. The flows live in this
//! crate so that tests reach them; spinners and terminal lines are the binary's, behind this
//! trait.

/// Receives the steps of a flow; every method does nothing by default.
pub trait Progress: Sync {
    /// A long step begins (running a script with every seed, minimising); it ends at [`end`].
    ///
    /// [`end`]: Progress::end
    fn begin(&self, _step: &str) {}
    /// The step begun last has ended.
    fn end(&self) {}
    /// A line for people that is not part of the result (what minimisation removed, why there
    /// is no code context).
    fn note(&self, _line: &str) {}
}

/// Shows nothing (a bench's bugs, tests).
pub struct Quiet;

impl Progress for Quiet {}
