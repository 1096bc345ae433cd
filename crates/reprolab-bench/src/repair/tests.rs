use super::*;

fn row(fault: &str, engine: &str, budget: &str, repeat: usize) -> Row {
    Row {
        fault: fault.into(),
        engine: engine.into(),
        budget: budget.into(),
        repeat,
        goal: Goal::Max,
        faulty_mean: 0.5,
        patched_mean: 0.5,
        patched_std: 0.0,
        gt_mean: Some(0.9),
        significant: false,
        ir: Some(0.0),
        complexity: 0.0,
        changed: 0,
        gt_changed: 1,
        aj: Some(0.0),
        trials: 10,
        pruned: 0,
        spent_s: 1.0,
        budget_s: None,
        min_changed: None,
        min_ir: None,
        min_significant: None,
        patch_types: Some(Vec::new()),
        aj_after: None,
        history: Vec::new(),
        runs: None,
    }
}

/// A significant patch of `changed` hyperparameters reaching `mean`.
fn patched(mut r: Row, mean: f64, ir: f64, changed: usize) -> Row {
    r.patched_mean = mean;
    r.ir = Some(ir);
    r.significant = true;
    r.changed = changed;
    r.complexity = changed as f64 / 10.0;
    r.aj = Some(1.0);
    r
}

fn rows() -> Vec<Row> {
    vec![
        patched(row("a", "random", "10x", 0), 0.9, 1.0, 4),
        row("a", "random", "10x", 1),
        patched(row("a", "bohb", "10x", 0), 0.8, 0.75, 2),
        patched(row("a", "bohb", "10x", 1), 0.7, 0.5, 2),
        row("b", "random", "10x", 0),
        row("b", "random", "10x", 1),
        row("b", "bohb", "10x", 0),
        Row {
            aj: Some(0.5),
            ..patched(row("b", "bohb", "10x", 1), 0.7, 0.5, 1)
        },
    ]
}

#[test]
fn cells_have_one_key_and_rows_know_theirs() {
    let r = row("a", "bohb", "10x", 2);
    assert_eq!(r.cell().key(), "a|bohb|10x|2");
    assert!(done(&rows()).contains("b|bohb|10x|1"));
}

#[test]
fn the_summary_aggregates_per_engine_and_budget_in_order_of_appearance() {
    let s = summary_rows(&rows(), false);
    assert_eq!(s[0].len(), 10);
    assert_eq!(s[0][4], "median IR");
    assert_eq!(s[1][..4], ["random", "10x", "4", "1/4"]);
    // IRs 1, 0, 0, 0: median 0; changed and AJ over the significant patch only (the study's
    // Figure 5: a cell without a confirmed patch does not pull AJ to 0).
    assert_eq!(s[1][4..], ["0.00", "4.00", "1.00", "0.40", "1.00", "-"]);
    assert_eq!(s[2][..4], ["bohb", "10x", "4", "3/4"]);
    // IRs 0.75, 0.5, 0, 0.5: median 0.5; mean changed (2 + 2 + 1) / 3, AJ (1 + 1 + 0.5) / 3.
    assert_eq!(s[2][4..], ["0.50", "1.67", "1.00", "0.17", "0.83", "-"]);
    let with_after = summary_rows(&rows(), true);
    assert_eq!(with_after[0][9], "mean AJ after");
    assert_eq!(with_after[1][9], "-");
}

#[test]
fn table9_gives_mean_and_sigma_bold_when_most_repeats_are_significant() {
    let t = table9(&rows());
    assert_eq!(
        t.headers,
        [
            "fault",
            "goal",
            "faulty",
            "ground truth",
            "random 10x",
            "bohb 10x"
        ]
    );
    let a = &t.rows[0];
    assert_eq!((a[0].text.as_str(), a[1].text.as_str()), ("a", "max ↑"));
    assert_eq!((a[2].text.as_str(), a[3].text.as_str()), ("0.500", "0.900"));
    // One of two repeats significant: not bold; two of two: bold.
    assert_eq!(a[4].text, "0.700 ± 0.283");
    assert!(!a[4].mark);
    assert_eq!(a[5].text, "0.750 ± 0.071");
    assert!(a[5].mark);
    assert!(!t.rows[1][5].mark);
}

#[test]
fn targets_compare_medians_and_minimised_sizes() {
    let mut rs = rows();
    assert!(targets(&rs).is_empty());
    for r in rs.iter_mut().filter(|r| r.engine == "random") {
        r.budget = "20x".into();
    }
    rs[2].min_changed = Some(1);
    rs[2].gt_changed = 2;
    let t = targets(&rs);
    assert_eq!(
        t[0],
        "Median IR: bohb at 10x = 0.50, random at 20x = 0.00 (target: bohb at 10x >= random at 20x: met)."
    );
    assert_eq!(
        t[1],
        "Minimised patches change 1.00 hyperparameters on average against 2.00 in the ground truth (0.50x; target <= 2x)."
    );
}

#[test]
fn rows_sort_by_the_order_asked_for() {
    let setup = Setup {
        benchmark: "b".into(),
        engines: vec!["bohb".into(), "random".into()],
        budgets: vec!["20x".into(), "10x".into()],
        repeats: 2,
        runs: 10,
    };
    let mut rs = vec![
        row("b", "random", "10x", 0),
        row("a", "random", "20x", 1),
        row("a", "bohb", "10x", 0),
        row("a", "random", "20x", 0),
    ];
    sort_rows(&mut rs, &setup);
    let keys: Vec<String> = rs.iter().map(|r| r.cell().key()).collect();
    assert_eq!(
        keys,
        [
            "a|random|20x|0",
            "a|random|20x|1",
            "a|bohb|10x|0",
            "b|random|10x|0"
        ]
    );
}

#[test]
fn aj_after_scores_against_the_best_variant() {
    use reprolab_core::FaultType;
    let mut r = row("a", "bohb", "10x", 0);
    r.aj = Some(0.0);
    r.patch_types = Some(vec![FaultType::HLR]);
    let gt: BTreeSet<FaultType> = [FaultType::OCH].into();
    let mut variants: Variants = BTreeMap::new();
    variants.insert("a".into(), (gt.clone(), Vec::new()));
    // No alternatives: the row's own AJ.
    assert_eq!(aj_after(&r, &variants), Some(0.0));
    let alt: Vec<FaultLabel> = vec!["HLR".parse().unwrap()];
    variants.insert("a".into(), (gt, vec![alt]));
    assert_eq!(aj_after(&r, &variants), Some(1.0));
    // A fault the variants do not know, or a row without patch types.
    r.fault = "z".into();
    assert_eq!(aj_after(&r, &variants), None);
    let results = finish(
        vec![r, row("a", "bohb", "10x", 0)],
        &variants,
        &Setup {
            benchmark: "b".into(),
            engines: vec!["bohb".into()],
            budgets: vec!["10x".into()],
            repeats: 1,
            runs: 2,
        },
    );
    assert_eq!(results.rows.len(), 1);
    assert_eq!(results.with_alternatives, 1);
    assert_eq!(results.rows[0].aj_after, Some(0.0));
}

#[test]
fn the_setup_states_what_the_budgets_meant() {
    // Rows measured before budgets had the default config's floor keep their meaning.
    let old = vec![row("a", "random", "10x", 0)];
    assert_eq!(
        budget_meaning(&old),
        "multiples of the faulty program's mean training time, counted as summed training time"
    );
    let mut rs = vec![
        row("a", "random", "10x", 0),
        row("b", "random", "10x", 0),
        row("a", "random", "20x", 0),
    ];
    for (r, s) in rs.iter_mut().zip([12.0, 14.0, 26.0]) {
        r.budget_s = Some(s);
    }
    let now = budget_meaning(&rs);
    assert!(
        now.starts_with("multiples of the larger of the faulty and the default (fixed) program's mean training time, so that m× buys at least m full trainings of the default program"),
        "{now}"
    );
    assert!(
        now.ends_with("by less than one trial; mean budget per cell: 10x 13.0 s, 20x 26.0 s"),
        "{now}"
    );
}

#[test]
fn the_anytime_figures_show_one_line_per_engine_and_only_for_rows_with_histories() {
    let setup = Setup {
        benchmark: "b".into(),
        engines: vec!["random".into(), "guided".into()],
        budgets: vec!["10x".into()],
        repeats: 1,
        runs: 10,
    };
    let mut variants: Variants = BTreeMap::new();
    variants.insert("f1".into(), (BTreeSet::new(), Vec::new()));
    let mut rows = vec![row("f1", "random", "10x", 0), row("f1", "guided", "10x", 0)];
    let none = build_report(&finish(rows.clone(), &variants, &setup), &setup);
    assert!(
        !none.to_markdown().contains("Anytime"),
        "old rows: no section"
    );
    rows[0].budget_s = Some(4.0);
    rows[0].history = vec![[1.0, 0.5], [2.0, 0.6], [4.0, 0.7]];
    rows[1].budget_s = Some(4.0);
    rows[1].history = vec![[1.0, 0.5], [1.5, 0.9]];
    let report = build_report(&finish(rows, &variants, &setup), &setup);
    let section = report
        .sections
        .iter()
        .find(|s| s.heading.starts_with("Anytime"))
        .unwrap();
    let svg = &section.figures[0].svg;
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
    assert!(svg.contains("guided (1 cells)") && svg.contains("% of budget spent"));
}

#[test]
fn runs_per_fault_pool_each_engines_repeats_with_cis_cut_to_the_metric() {
    let samples = |xs: &[f64]| xs.iter().map(|x| Some(*x)).collect::<Vec<_>>();
    let with_runs = |mut r: Row, patched: &[f64]| {
        r.runs = Some(runs::Runs {
            faulty: samples(&[0.5, 0.52, 0.48]),
            patched: samples(patched),
            gt: Some(samples(&[1.0, 0.98, 1.0])),
            metric: "accuracy".into(),
        });
        r
    };
    let rows = vec![
        with_runs(row("a", "random", "10x", 0), &[0.9, 0.92, 0.88]),
        row("a", "random", "10x", 1), // no patch: no validation
        with_runs(row("a", "bohb", "10x", 0), &[1.0, 0.96, 1.0]),
        with_runs(row("a", "bohb", "10x", 1), &[0.7]),
        row("b", "random", "10x", 0),
    ];
    let section = runs::section(&rows).expect("rows with runs");
    assert_eq!(section.figures.len(), 1, "fault b kept no runs");
    let t = &section.tables[0];
    let cells: Vec<Vec<&str>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.text.as_str()).collect())
        .collect();
    assert_eq!(cells[0][..5], ["a", "faulty", "1", "0", "3"]);
    assert_eq!(cells[1][..5], ["a", "random 10x", "2", "1", "3"]);
    assert_eq!(
        cells[2][..5],
        ["a", "bohb 10x", "2", "0", "4"],
        "pooled over repeats"
    );
    assert_eq!(cells[3][..5], ["a", "known fix", "1", "0", "3"]);
    // The fix's runs near 1: the t interval would pass 1.0; cut to the metric's range.
    assert_eq!(cells[3][5], "0.9933");
    assert!(cells[3][6].ends_with(", 1.0000]"), "{}", cells[3][6]);
    // Rows without runs (older results) give no section.
    assert!(runs::section(&[row("a", "random", "10x", 0)]).is_none());
}

#[test]
fn a_cell_without_a_patch_scores_ir_0_and_aj_0_only_when_the_fault_has_a_fix() {
    // No trial beat the faulty config: the patch is the faulty config itself (the study's first
    // trial), so M_patch = M_fault gives IR = 0 / (M_GT − M_fault) = 0, and a patch changing
    // nothing has no operators: AJ = 0 / |OP_GT| = 0. Without a ground truth neither exists.
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/faults/real/D1");
    let mut subject = Subject::load(&dir).unwrap();
    let cell = CellId {
        fault: subject.name.clone(),
        engine: "random".into(),
        budget: "10x".into(),
        repeat: 0,
    };
    let out = RepairOutcome {
        validation: None,
        faulty_mean: 0.52,
        trials: 7,
        pruned: 0,
        spent_s: 3.0,
        budget_s: Some(3.0),
        minimized: None,
        history: &[],
    };
    let r = Row::new(&cell, &subject, &out);
    assert_eq!((r.ir, r.aj), (Some(0.0), Some(0.0)));
    assert_eq!((r.patched_mean, r.complexity, r.changed), (0.52, 0.0, 0));
    assert!(!r.significant);
    assert_eq!(
        r.gt_changed,
        patch_diff(&subject.config, &subject.fix.as_ref().unwrap().config).len()
    );
    subject.fix = None;
    let r = Row::new(&cell, &subject, &out);
    assert_eq!((r.ir, r.aj, r.gt_changed), (None, None, 0));
}
