use super::*;

fn labels(s: &[&str]) -> Vec<FaultLabel> {
    s.iter().map(|l| l.parse().unwrap()).collect()
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

fn answered(fault: &str, origin: &str, engine: &str, answer: &[&str], gt: &[&str]) -> Row {
    Row::new(&Answers {
        fault: fault.into(),
        origin: origin.into(),
        engine: engine.into(),
        gt: labels(gt),
        answers: vec![strings(answer)],
        seconds: 2.0,
        llm: None,
    })
}

#[test]
fn the_vote_takes_the_most_frequent_answer_and_the_last_of_a_tie() {
    let a = strings(&["HLR"]);
    let b = strings(&["ACH", "HLR"]);
    assert_eq!(vote(&[a.clone(), b.clone(), a.clone()]), (a.clone(), 2));
    // One each: the last in sorted order wins (["HLR"] > ["ACH", "HLR"]).
    assert_eq!(vote(&[a.clone(), b.clone()]), (a, 1));
    assert_eq!(vote(&[]), (Vec::new(), 0));
}

#[test]
fn a_row_scores_the_vote_and_averages_time_over_repeats() {
    let r = Row::new(&Answers {
        fault: "f".into(),
        origin: "real".into(),
        engine: "dynamic".into(),
        gt: labels(&["HLR"]),
        answers: vec![
            strings(&["HLR"]),
            strings(&["HLR"]),
            strings(&["ACH", "HLR"]),
        ],
        seconds: 3.0,
        llm: None,
    });
    assert_eq!(r.answer, ["HLR"]);
    assert_eq!((r.rc, r.pr, r.f3), (1.0, 1.0, 1.0));
    assert!((r.stability - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!((r.repeats, r.seconds), (3, 1.0));
    assert_eq!((r.rc_after, r.variants, r.mapped), (1.0, 0, None));
    // The LLM engine's stability and mapped share are its own vote's.
    let llm = Row::new(&Answers {
        answers: vec![strings(&["HLR"])],
        llm: Some((0.5, 0.8)),
        ..Answers::default()
    });
    assert_eq!((llm.stability, llm.mapped), (0.8, Some(0.5)));
}

#[test]
fn after_scores_against_the_variant_with_the_highest_rc() {
    let mut r = answered("f", "real", "static", &["OCH"], &["HLR"]);
    assert_eq!(r.rc, 0.0);
    score_after(&mut r, &[labels(&["HLR"]), labels(&["OCH"])]);
    assert_eq!(r.gt_after, ["OCH"]);
    assert_eq!((r.rc_after, r.variants), (1.0, 1));
    let mut variants = Variants::new();
    variants.insert("f".into(), vec![labels(&["HLR"]), labels(&["OCH"])]);
    variants.insert("g".into(), vec![labels(&["HLR"])]);
    let rows = vec![
        answered("f", "real", "static", &["OCH"], &["HLR"]),
        answered("gone", "real", "static", &["OCH"], &["HLR"]),
    ];
    let results = finish(rows, &variants);
    assert_eq!(results.rows.len(), 1);
    assert_eq!((results.faults, results.with_alternatives), (2, 1));
    assert_eq!(results.rows[0].rc_after, 1.0);
}

fn sample() -> Vec<Row> {
    let mut rows = vec![
        answered("m1", "mutation", "static", &["HLR"], &["HLR"]),
        answered("m2", "mutation", "static", &["ACH"], &["HLR"]),
        answered("r1", "real", "static", &["HLR", "OCH"], &["HLR"]),
        answered("m1", "mutation", "all", &["HLR"], &["HLR"]),
    ];
    rows[1].rc_after = 1.0;
    rows
}

#[test]
fn table5_averages_per_origin_and_engine() {
    let s = summary_rows(&sample(), &strings(&["static", "all", "llm"]));
    assert_eq!(s[0][0], "engine");
    assert_eq!(
        s[1],
        strings(&[
            "static", "3", "0.50", "0.50", "1.00", "0.91", "0.67", "0.50", "0.64", "1.00", "2.00",
            "-"
        ])
    );
    assert_eq!(s[2][..5], strings(&["all", "1", "1.00", "1.00", "-"]));
    assert_eq!(s[3][..3], strings(&["llm", "0", "-"]));
}

#[test]
fn manual_faults_get_columns_and_a_set_of_their_own_only_when_present() {
    let mut rows = sample();
    assert!(!summary_rows(&rows, &strings(&["static"]))[0].contains(&"RC manual".to_string()));
    let mut manual = rows[0].clone();
    manual.fault = "two-causes".into();
    manual.origin = "manual".into();
    rows.push(manual);
    let s = summary_rows(&rows, &strings(&["static"]));
    let at = s[0].iter().position(|h| h == "RC manual").unwrap();
    assert_eq!(s[0][at + 1], "F3 manual");
    assert_eq!(s[0][at + 2], "RC all");
    assert_eq!(s[1][1], "4");
    let t = before_after_rows(&rows, &strings(&["static"]));
    assert!(t.iter().any(|r| r[1] == "manual (1)"), "{t:?}");
}

#[test]
fn table7_leaves_out_empty_fault_sets() {
    let t = before_after_rows(&sample(), &strings(&["static", "all"]));
    let sets: Vec<(&str, &str)> = t[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        sets,
        [
            ("static", "artificial (2)"),
            ("static", "real (1)"),
            ("static", "all (3)"),
            ("all", "artificial (1)"),
            ("all", "all (1)")
        ]
    );
    // RC before 0.5 and after 1.0 on the artificial faults of static.
    assert_eq!(t[1][2..4], strings(&["0.50", "1.00"]));
}

#[test]
fn the_report_has_table7_and_after_columns_only_with_alternatives() {
    let setup = Setup {
        benchmark: "benchmarks/faults".into(),
        engines: strings(&["static", "all"]),
        repeats: 3,
    };
    let mut results = Results {
        rows: sample(),
        faults: 3,
        with_alternatives: 0,
    };
    let md = build_report(&results, &setup).to_markdown();
    assert!(md.starts_with("# Localisation benchmark: benchmarks/faults\n"));
    assert!(!md.contains("Table 7") && !md.contains("RC after"));
    assert!(md.contains("| m1 | static | HLR | HLR | **1.00** | 1.00 | 1.00 | 1.00 | 2.00 |"));
    results.with_alternatives = 1;
    let md = build_report(&results, &setup).to_markdown();
    assert!(md.contains("1 of 3 faults have alternative ground truths"));
    // Bold RC after where it beats RC before.
    assert!(md.contains("| m2 | static | HLR | ACH | 0.00 | 0.00 | 0.00 | - | **1.00** |"));
}

/// The study's Table 5, DeepFD column, recomputed from DeepFD's outputs in its Table 10 (answers
/// without layers; D9 'N/A' as an empty answer, which the study scores 0 and keeps in the
/// averages). Per origin and over all faults the means are over faults (T.A. = the mean over
/// all 22 faults, not the mean of the two averages nor F3 of the mean PR and RC).
#[test]
fn table5_reproduces_the_studys_deepfd_column() {
    let faults: [(&str, &str, &[&str], &[&str]); 22] = [
        ("M1", "mutation", &["WCI(0)"], &["HLR", "ACH", "LCH", "HNE"]),
        ("M2", "mutation", &["ACH(7)"], &["OCH", "HLR", "HNE"]),
        ("M3", "mutation", &["HLR"], &["OCH", "HLR", "LCH"]),
        ("C1", "mutation", &["ACH(2)"], &["OCH", "HLR", "ACH", "LCH"]),
        ("C2", "mutation", &["HNE"], &["OCH", "ACH", "LCH"]),
        ("C3", "mutation", &["WCI(2)"], &["OCH", "ACH", "LCH", "HNE"]),
        ("R1", "mutation", &["RAW(0)"], &["HLR", "LCH", "HNE"]),
        ("R2", "mutation", &["ACH(2)"], &["OCH", "LCH", "HNE"]),
        ("R3", "mutation", &["HLR"], &["OCH", "LCH", "HNE"]),
        ("R4", "mutation", &["LCH"], &["ACH", "LCH"]),
        ("R5", "mutation", &["OCH"], &["OCH", "ACH", "HNE"]),
        ("R6", "mutation", &["WCI(0)"], &["OCH", "ACH", "LCH", "HNE"]),
        ("R7", "mutation", &["ACH(2)"], &["OCH", "LCH", "HNE"]),
        ("D1", "real", &["ACH(7)"], &["ACH"]),
        ("D2", "real", &["OCH", "HNE", "HBS"], &["ACH"]),
        (
            "D3",
            "real",
            &["OCH", "LCH", "ACH(0,1)", "HNE", "HBS"],
            &["OCH", "HLR"],
        ),
        ("D4", "real", &["ACH(0,1)", "LCH", "HLR"], &["OCH"]),
        ("D5", "real", &["HNE", "HBS"], &["OCH", "ACH"]),
        (
            "D6",
            "real",
            &["HLR", "HNE", "LCH", "ACH(1)"],
            &["OCH", "HLR", "HNE"],
        ),
        ("D7", "real", &["HLR"], &["LCH"]),
        ("D8", "real", &["OCH", "HLR"], &["OCH", "HLR", "LCH", "HNE"]),
        ("D9", "real", &["CPP", "ACH(5,6)", "HBS"], &[]),
    ];
    let rows: Vec<Row> = faults
        .iter()
        .map(|(id, origin, gt, answer)| answered(id, origin, "dfd", answer, gt))
        .collect();
    // Per fault as printed: M3 0.33 / 0.83, C1 0.25 / 0.77, D3 RC 0.2 PR 0.5 F3 0.21, D6 0.5 /
    // 0.67 / 0.51, D8 1 / 0.5 / 0.91.
    let at = |id: &str| rows.iter().find(|r| r.fault == id).unwrap();
    let printed = |r: &Row| format!("{:.2} {:.2} {:.2}", r.rc, r.pr, r.f3);
    assert_eq!(printed(at("M3")), "1.00 0.33 0.83");
    assert_eq!(printed(at("C1")), "1.00 0.25 0.77");
    assert_eq!(printed(at("D3")), "0.20 0.50 0.21");
    assert_eq!(printed(at("D6")), "0.50 0.67 0.51");
    assert_eq!(printed(at("D8")), "1.00 0.50 0.91");
    assert_eq!(printed(at("D9")), "0.00 0.00 0.00");
    let s = summary_rows(&rows, &strings(&["dfd"]));
    // Study: AF Avg. RC 0.31, F3 0.26; RF Avg. RC 0.30, F3 0.29; T.A. PR 0.19, F3 0.27. Its
    // T.A. RC prints 0.31, but its own rows give 6.7 / 22 = 0.3045 (and the mean of the two
    // averages 0.3038): 0.30.
    assert_eq!(
        s[1][..9],
        strings(&[
            "dfd", "22", "0.31", "0.26", "0.30", "0.29", "0.30", "0.19", "0.27"
        ])
    );
}
