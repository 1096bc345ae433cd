//! The grid of `bench repair`: engines (each prunable one once per pruner, `bohb+median`) ×
//! budgets, narrowed to the arms asked for (`--arms random@20x,bohb+median@5x`), and the cells
//! (fault × arm × repeat) a run still has to repair.

use std::collections::HashSet;
use std::path::PathBuf;

use reprolab_repair::Engine;

use super::{CellId, Setup};

/// One engine of the grid under one pruner, as reports name it: `bohb`, `bohb+median`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant<P> {
    pub engine: Engine,
    pub name: String,
    /// The pruner; `None`: its trials train to their end.
    pub prune: Option<P>,
}

/// `ENGINE@BUDGET`, as `--arms` names an arm.
pub fn arm(engine: &str, budget: &str) -> String {
    format!("{engine}@{budget}")
}

/// Every engine once per pruner of `prunes` (`None`: unpruned; each pruner with its name), in
/// the order given; an engine that does not prune runs once, unpruned.
pub fn variants<P: Copy>(engines: &[Engine], prunes: &[Option<(P, &str)>]) -> Vec<Variant<P>> {
    let mut all = Vec::new();
    for &engine in engines {
        let mut own: Vec<Variant<P>> = Vec::new();
        for p in prunes {
            let p = if engine.prunes() { *p } else { None };
            let name = match p {
                None => engine.name().to_string(),
                Some((_, pruner)) => format!("{}+{pruner}", engine.name()),
            };
            if !own.iter().any(|v| v.name == name) {
                own.push(Variant {
                    engine,
                    name,
                    prune: p.map(|(p, _)| p),
                });
            }
        }
        all.extend(own);
    }
    all
}

/// The engine variants × budgets of a run, and the arms of it that run.
#[derive(Debug, Clone)]
pub struct Grid<P> {
    pub variants: Vec<Variant<P>>,
    /// Budgets as written (`10x`), in the order asked for.
    pub budgets: Vec<String>,
    /// `--arms`; empty: every arm of the grid.
    arms: Vec<String>,
}

impl<P> Grid<P> {
    /// The grid of `variants` × `budgets`, narrowed to `arms` (each `ENGINE@BUDGET`; empty: all).
    /// An arm not in the grid is an error that lists the grid.
    pub fn new(
        variants: Vec<Variant<P>>,
        budgets: Vec<String>,
        arms: Vec<String>,
    ) -> Result<Grid<P>, String> {
        let grid = Grid {
            variants,
            budgets,
            arms,
        };
        let all = grid.all_arms();
        if let Some(bad) = grid.arms.iter().find(|x| !all.contains(x)) {
            return Err(format!(
                "--arms {bad:?} is not in the grid of --engines, --budgets and --prune: {}",
                all.join(", ")
            ));
        }
        Ok(grid)
    }

    /// Every arm of the grid, engine by engine.
    fn all_arms(&self) -> Vec<String> {
        self.variants
            .iter()
            .flat_map(|v| self.budgets.iter().map(|b| arm(&v.name, b)))
            .collect()
    }

    /// Whether the arm of `engine` (a variant's name) under `budget` runs.
    pub fn wanted(&self, engine: &str, budget: &str) -> bool {
        self.arms.is_empty() || self.arms.contains(&arm(engine, budget))
    }

    /// How many arms run.
    pub fn arm_count(&self) -> usize {
        self.all_arms()
            .iter()
            .filter(|x| self.arms.is_empty() || self.arms.contains(x))
            .count()
    }

    /// The report's set-up: only the engines and budgets of arms that run.
    pub fn setup(&self, benchmark: PathBuf, repeats: usize, runs: usize) -> Setup {
        Setup {
            benchmark,
            engines: self
                .variants
                .iter()
                .map(|v| v.name.clone())
                .filter(|n| self.budgets.iter().any(|b| self.wanted(n, b)))
                .collect(),
            budgets: self
                .budgets
                .iter()
                .filter(|b| self.variants.iter().any(|v| self.wanted(&v.name, b)))
                .cloned()
                .collect(),
            repeats,
            runs,
        }
    }

    /// The cells of `faults` × the arms that run × `repeats` whose key is not in `done`, fault by
    /// fault, then budget, engine and repeat; each with the indices of its fault, budget and
    /// variant.
    pub fn pending(
        &self,
        faults: &[String],
        repeats: usize,
        done: &HashSet<String>,
    ) -> Vec<(Pending, CellId)> {
        let mut cells = Vec::new();
        for (fault_i, fault) in faults.iter().enumerate() {
            for (budget_i, budget) in self.budgets.iter().enumerate() {
                for (variant_i, v) in self.variants.iter().enumerate() {
                    if !self.wanted(&v.name, budget) {
                        continue;
                    }
                    for repeat in 0..repeats {
                        let cell = CellId {
                            fault: fault.clone(),
                            engine: v.name.clone(),
                            budget: budget.clone(),
                            repeat,
                        };
                        if !done.contains(&cell.key()) {
                            let at = Pending {
                                fault: fault_i,
                                budget: budget_i,
                                variant: variant_i,
                            };
                            cells.push((at, cell));
                        }
                    }
                }
            }
        }
        cells
    }
}

/// Where a pending cell is in its grid: indices of its fault, budget and variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub fault: usize,
    pub budget: usize,
    pub variant: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Option<(u8, &str)> = None;
    const MEDIAN: Option<(u8, &str)> = Some((1, "median"));

    fn names<P>(v: &[Variant<P>]) -> Vec<&str> {
        v.iter().map(|v| v.name.as_str()).collect()
    }

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn prunable_engines_run_once_per_pruner_the_others_once_unpruned() {
        let v = variants(
            &[Engine::Bohb, Engine::Rules, Engine::Random],
            &[NONE, MEDIAN, MEDIAN],
        );
        assert_eq!(
            names(&v),
            ["bohb", "bohb+median", "rules", "random", "random+median"]
        );
        assert_eq!(v[1].prune, Some(1));
        assert_eq!(v[2].prune, None);
        assert_eq!(names(&variants(&[Engine::Guided], &[MEDIAN])), ["guided"]);
    }

    #[test]
    fn arms_narrow_the_grid_and_the_report_names_only_what_runs() {
        let v = variants(&[Engine::Random, Engine::Bohb], &[NONE]);
        let budgets = strings(&["4x", "8x"]);
        let all = Grid::new(v.clone(), budgets.clone(), Vec::new()).unwrap();
        assert_eq!(all.arm_count(), 4);
        assert!(all.wanted("bohb", "8x"));
        let some = Grid::new(
            v.clone(),
            budgets.clone(),
            strings(&["random@4x", "bohb@4x"]),
        )
        .unwrap();
        assert_eq!(some.arm_count(), 2);
        assert!(!some.wanted("bohb", "8x"));
        let setup = some.setup(PathBuf::from("b"), 2, 3);
        assert_eq!(setup.engines, ["random", "bohb"]);
        assert_eq!(setup.budgets, ["4x"]);
        assert_eq!((setup.repeats, setup.runs), (2, 3));
        let e = Grid::new(v, budgets, strings(&["tpe@4x"])).unwrap_err();
        assert_eq!(
            e,
            "--arms \"tpe@4x\" is not in the grid of --engines, --budgets and --prune: \
             random@4x, random@8x, bohb@4x, bohb@8x"
        );
    }

    #[test]
    fn pending_cells_leave_out_the_done_and_the_arms_that_do_not_run() {
        let v = variants(&[Engine::Random, Engine::Bohb], &[NONE]);
        let grid = Grid::new(
            v,
            strings(&["4x", "8x"]),
            strings(&["bohb@4x", "random@8x"]),
        )
        .unwrap();
        let done: HashSet<String> = ["D1|bohb|4x|0".to_string()].into();
        let cells = grid.pending(&strings(&["D1", "D2"]), 2, &done);
        let keys: Vec<String> = cells.iter().map(|(_, c)| c.key()).collect();
        assert_eq!(
            keys,
            [
                "D1|bohb|4x|1",
                "D1|random|8x|0",
                "D1|random|8x|1",
                "D2|bohb|4x|0",
                "D2|bohb|4x|1",
                "D2|random|8x|0",
                "D2|random|8x|1",
            ]
        );
        assert_eq!(
            cells[0].0,
            Pending {
                fault: 0,
                budget: 0,
                variant: 1
            }
        );
    }
}
