//! Every public function of reprolab-stats against SciPy 1.17, on the cases of
//! `fixtures/scipy_reference.json` (made by `fixtures/scipy_reference.py`; its `calls` name
//! the SciPy call behind each expected value, and the script says how to regenerate it).

use std::fmt::{Debug, Display};

use reprolab_stats::*;
use serde_json::Value;

/// Relative tolerance for exact methods and closed forms (the JSON keeps 12 digits).
const EXACT: f64 = 1e-9;
/// Relative tolerance for p-values through a normal or Student-t tail (and the t quantile):
/// statrs is accurate to ~1e-10 there, not to SciPy's 1e-16.
const APPROX: f64 = 1e-6;
/// Absolute tolerance on a t or z statistic that is rounding noise around 0 (a mean
/// difference of ~1e-17): numpy's pairwise sum and our sequential sum round differently.
const NOISE_T: f64 = 1e-12;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/scipy_reference.json")).expect("valid JSON")
}

/// A number of the JSON, where infinities are the strings `"inf"` and `"-inf"`.
fn num(v: &Value) -> f64 {
    match v.as_str() {
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

/// The values `k / den` of `case[key]`: one correctly rounded division, as numpy does.
fn values(case: &Value, key: &str) -> Vec<f64> {
    let den = case["den"].as_u64().expect("den") as f64;
    let ks = case[key].as_array().unwrap_or_else(|| panic!("no {key}"));
    ks.iter()
        .map(|k| k.as_i64().expect("int") as f64 / den)
        .collect()
}

fn opt_values(case: &Value, key: &str) -> Vec<Option<f64>> {
    values(case, key).into_iter().map(Some).collect()
}

/// Collects every mismatch of one function, so that a failure lists them all.
#[derive(Default)]
struct Check {
    cases: usize,
    failures: Vec<String>,
    worst: f64,
}

impl Check {
    fn close(&mut self, what: impl Display, got: f64, want: f64, rtol: f64) {
        self.close_or_abs(what, got, want, rtol, 0.0);
    }

    fn close_or_abs(&mut self, what: impl Display, got: f64, want: f64, rtol: f64, atol: f64) {
        let ok = if got.is_infinite() || want.is_infinite() {
            got == want
        } else {
            let err = (got - want).abs();
            if want != 0.0 && err > atol {
                self.worst = self.worst.max(err / want.abs());
            }
            err <= atol || err <= rtol * want.abs()
        };
        if !ok {
            self.failures
                .push(format!("{what}: ours {got:e}, scipy {want:e}"));
        }
    }

    fn eq<T: PartialEq + Debug>(&mut self, what: impl Display, got: T, want: T) {
        if got != want {
            self.failures
                .push(format!("{what}: ours {got:?}, scipy {want:?}"));
        }
    }

    /// Our result and SciPy's array when both exist; `None` when neither does (no test), or
    /// after recording a mismatch when only one does.
    fn both<'a>(
        &mut self,
        what: &impl Display,
        got: Option<TestResult>,
        want: &'a Value,
    ) -> Option<(TestResult, &'a Vec<Value>)> {
        match (got, want.as_array()) {
            (Some(g), Some(w)) => Some((g, w)),
            (None, None) => None,
            (g, _) => {
                self.failures
                    .push(format!("{what}: ours {g:?}, scipy {want}"));
                None
            }
        }
    }

    /// A [`TestResult`] against `[statistic, p, method, ..]` (or `null` for no test).
    fn test(&mut self, what: impl Display, got: Option<TestResult>, want: &Value) {
        let Some((got, want)) = self.both(&what, got, want) else {
            return;
        };
        let method = want[2].as_str().expect("method");
        self.eq(format_args!("{what} method"), got.method, method);
        self.close(
            format_args!("{what} statistic"),
            got.statistic,
            num(&want[0]),
            EXACT,
        );
        let rtol = if method == "exact" { EXACT } else { APPROX };
        self.close(format_args!("{what} p"), got.p_value, num(&want[1]), rtol);
    }

    /// A t or z test (its method is not in the JSON) against `[statistic, p]` or `null`.
    fn parametric(&mut self, what: impl Display, got: Option<TestResult>, want: &Value) {
        let Some((got, want)) = self.both(&what, got, want) else {
            return;
        };
        let (t, p) = (num(&want[0]), num(&want[1]));
        self.close_or_abs(format_args!("{what} t"), got.statistic, t, EXACT, NOISE_T);
        self.close(format_args!("{what} p"), got.p_value, p, APPROX);
    }

    fn finish(self, name: &str) {
        eprintln!(
            "{name}: {} cases, worst relative error {:.1e}",
            self.cases, self.worst
        );
        assert!(self.cases > 0, "{name}: no cases");
        assert!(
            self.failures.is_empty(),
            "{name}: {} mismatches with SciPy:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

fn cases<'a>(key: &str, f: &'a Value) -> impl Iterator<Item = (usize, &'a Value)> {
    f[key].as_array().expect(key).iter().enumerate()
}

#[test]
fn wilcoxon_signed_rank_matches_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("paired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        c.test(
            format_args!("paired[{i}] {}", case["name"]),
            wilcoxon_signed_rank(&x, &y),
            &case["wilcoxon"],
        );
        c.cases += 1;
    }
    c.finish("wilcoxon_signed_rank");
}

#[test]
fn wilcoxon_one_sided_matches_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("paired", &f) {
        let d: Vec<f64> = values(case, "x")
            .iter()
            .zip(values(case, "y"))
            .map(|(a, b)| a - b)
            .collect();
        for (alt, greater) in [("greater", true), ("less", false)] {
            let what = format_args!("paired[{i}] {} {alt}", case["name"]);
            c.test(what, wilcoxon_one_sided(&d, greater), &case[alt]);
            c.cases += 1;
        }
    }
    c.finish("wilcoxon_one_sided");
}

#[test]
fn rounded_differences_are_correctly_rounded_to_12_digits() {
    // No SciPy function: the textbook meaning of "rounded to 12 significant digits" is the
    // nearest double to the 12-digit decimal, which Rust's exact formatting and parsing give.
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("paired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        for (a, b) in [(&x, &y), (&y, &x)] {
            for (j, got) in rounded_differences(a, b).into_iter().enumerate() {
                let d = a[j] - b[j];
                let want: f64 = format!("{d:.11e}").parse().unwrap();
                c.eq(format_args!("paired[{i}][{j}] {d:e}"), got, want);
                c.cases += 1;
            }
        }
    }
    c.finish("rounded_differences");
}

#[test]
fn mann_whitney_u_matches_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("unpaired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        let what = format_args!("unpaired[{i}] {}", case["name"]);
        c.test(what, mann_whitney_u(&x, &y), &case["mwu"]);
        c.cases += 1;
    }
    c.finish("mann_whitney_u");
}

#[test]
fn t_tests_match_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("paired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        let what = format_args!("paired[{i}] {} paired_t", case["name"]);
        c.parametric(what, paired_t(&x, &y), &case["paired_t"]);
        c.cases += 1;
    }
    let constant = |v: &[f64]| v.iter().all(|&a| a == v[0]);
    for (i, case) in cases("unpaired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        let what = format!("unpaired[{i}] {} welch", case["name"]);
        c.cases += 1;
        if x.len().min(y.len()) >= 2 && constant(&x) && constant(&y) && x[0] != y[0] {
            // Documented difference, not compared with SciPy: describe.rs `mean` ("A constant
            // slice returns its value *exactly*") and ttest.rs ("different means give
            // t = ±inf, p = 0"). numpy's mean of [13/15; 5] is an ulp off, so SciPy sees a
            // variance of 1.5e-32 and reports t ≈ 1.2e15, p ≈ 2.9e-60.
            let r = welch_t(&x, &y).expect("different means");
            let sign = (x[0] - y[0]).signum();
            c.eq(format!("{what} t"), r.statistic, sign * f64::INFINITY);
            c.eq(format!("{what} p"), r.p_value, 0.0);
            continue;
        }
        c.parametric(what, welch_t(&x, &y), &case["welch"]);
    }
    c.finish("welch_t + paired_t");
}

#[test]
fn glm_test_matches_scipy_linregress() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("unpaired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        let what = format_args!("unpaired[{i}] {} glm", case["name"]);
        c.parametric(what, glm_test(&x, &y), &case["glm"]);
        c.cases += 1;
    }
    c.finish("glm_test");
}

#[test]
fn effect_sizes_match_reference() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("unpaired", &f) {
        let (x, y) = (values(case, "x"), values(case, "y"));
        let name = &case["name"];
        let d = num(&case["cohens_d"]);
        c.close(
            format_args!("unpaired[{i}] {name} d"),
            cohens_d(&x, &y),
            d,
            EXACT,
        );
        let a = num(&case["a12"]);
        c.close(
            format_args!("unpaired[{i}] {name} a12"),
            a12(&x, &y),
            a,
            EXACT,
        );
        c.cases += 1;
    }
    c.finish("cohens_d + a12");
}

#[test]
fn describe_matches_numpy_and_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("describe", &f) {
        let x = values(case, "x");
        let s = summarize(&x);
        let what = |field: &str| format!("describe[{i}] {field}");
        c.eq(what("n"), s.n, x.len());
        for (field, got) in [
            ("mean", s.mean),
            ("std", s.std),
            ("median", s.median),
            ("min", s.min),
            ("max", s.max),
        ] {
            c.close(what(field), got, num(&case[field]), EXACT);
        }
        c.eq(what("mean()"), mean(&x), s.mean);
        c.eq(what("median()"), median(&x), s.median);
        c.eq(what("std_dev()"), std_dev(&x), s.std);
        c.close(what("variance()"), variance(&x), s.std * s.std, EXACT);
        // The centre is the mean; the half-width goes through the t quantile (APPROX).
        let (lo, hi) = (num(&case["ci"][0]), num(&case["ci"][1]));
        c.close(
            what("ci centre"),
            (s.ci95.0 + s.ci95.1) / 2.0,
            (lo + hi) / 2.0,
            EXACT,
        );
        c.close(
            what("ci half"),
            (s.ci95.1 - s.ci95.0) / 2.0,
            (hi - lo) / 2.0,
            APPROX,
        );
        c.cases += 1;
    }
    c.finish("summarize/mean/median/std_dev/variance");
}

#[test]
fn bootstrap_ci_matches_numpy_quantiles() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("bootstrap", &f) {
        let x = values(case, "x");
        let stat = match case["stat"].as_str() {
            Some("mean") => mean,
            Some("median") => median,
            s => panic!("unknown statistic {s:?}"),
        };
        let resamples = case["resamples"].as_u64().unwrap() as usize;
        let conf = case["confidence"].as_f64().unwrap();
        let seed = case["seed"].as_u64().unwrap();
        let (lo, hi) = bootstrap_ci(&x, stat, resamples, conf, seed);
        c.close(
            format_args!("bootstrap[{i}] lo"),
            lo,
            num(&case["ci"][0]),
            EXACT,
        );
        c.close(
            format_args!("bootstrap[{i}] hi"),
            hi,
            num(&case["ci"][1]),
            EXACT,
        );
        c.cases += 1;
    }
    c.finish("bootstrap_ci");
}

#[test]
fn pass_at_k_matches_exact_binomials() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("passk", &f) {
        let [n, cc, k] = [0, 1, 2].map(|j| case[j].as_u64().unwrap());
        let got = pass_at_k(n, cc, k).unwrap_or(f64::NAN);
        c.close(
            format_args!("passk[{i}] n={n} c={cc} k={k}"),
            got,
            num(&case[3]),
            EXACT,
        );
        c.cases += 1;
    }
    let m = &f["mean_passk"];
    let problems: Vec<(u64, u64)> = m["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect();
    for (k, want) in m["k"]
        .as_array()
        .unwrap()
        .iter()
        .zip(m["p"].as_array().unwrap())
    {
        let k = k.as_u64().unwrap();
        let got = mean_pass_at_k(&problems, k).unwrap_or(f64::NAN);
        c.close(format_args!("mean_pass_at_k k={k}"), got, num(want), EXACT);
        c.cases += 1;
    }
    c.finish("pass_at_k + mean_pass_at_k");
}

/// One `[num, den, p_lower, p_upper, method]` TOST expectation.
fn check_tost(c: &mut Check, what: impl Display, got: Option<Equivalence>, want: &Value) {
    let margin = want[0].as_f64().unwrap() / want[1].as_f64().unwrap();
    let Some(e) = got else {
        return c.failures.push(format!("{what}: no TOST"));
    };
    let method = want[4].as_str().unwrap();
    let rtol = if method == "exact" { EXACT } else { APPROX };
    let (lo, hi) = (num(&want[2]), num(&want[3]));
    c.eq(format_args!("{what} margin"), e.margin, margin);
    c.eq(format_args!("{what} method"), e.method, method);
    c.close(format_args!("{what} p_lower"), e.p_lower, lo, rtol);
    c.close(format_args!("{what} p_upper"), e.p_upper, hi, rtol);
    c.close(format_args!("{what} p"), e.p_value, lo.max(hi), rtol);
    c.eq(
        format_args!("{what} equivalent"),
        e.equivalent,
        lo.max(hi) < ALPHA,
    );
}

#[test]
fn tost_matches_two_one_sided_scipy_wilcoxons() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("paired", &f) {
        // B − A with B = y, as compare_by_seed passes them
        let diffs = rounded_differences(&values(case, "y"), &values(case, "x"));
        for want in case["tost"].as_array().unwrap() {
            let margin = want[0].as_f64().unwrap() / want[1].as_f64().unwrap();
            let what = format!(
                "paired[{i}] {} margin {}/{}",
                case["name"], want[0], want[1]
            );
            check_tost(&mut c, what, tost(&diffs, margin), want);
            c.cases += 1;
        }
    }
    c.finish("tost");
}

#[test]
fn compare_and_verdict_match_scipy() {
    let f = fixture();
    let mut c = Check::default();
    for (i, case) in cases("compare", &f) {
        let (a, b) = (values(case, "a"), values(case, "b"));
        let (extra_a, extra_b) = (values(case, "extra_a"), values(case, "extra_b"));
        let all_a = [a.clone(), extra_a.clone()].concat();
        let all_b = [b.clone(), extra_b.clone()].concat();
        // The same runs seed by seed: the extra runs finished on one side only.
        let none = |n: usize| vec![None; n];
        let seeds_a = [
            opt_values(case, "a"),
            opt_values(case, "extra_a"),
            none(extra_b.len()),
        ];
        let seeds_b = [
            opt_values(case, "b"),
            none(extra_a.len()),
            opt_values(case, "extra_b"),
        ];
        let (seeds_a, seeds_b) = (seeds_a.concat(), seeds_b.concat());
        for goal in [Goal::Max, Goal::Min] {
            let key = if goal == Goal::Max { "max" } else { "min" };
            let want_verdict = case["verdict"][key].as_str().unwrap();
            let margin = case["tost"][0].as_f64().unwrap() / case["tost"][1].as_f64().unwrap();
            let (by_seed, eq) = compare_by_seed(&seeds_a, &seeds_b, goal, Some(margin));
            for (how, got) in [
                ("compare", compare(&a, &b, &all_a, &all_b, goal)),
                ("by_seed", by_seed),
            ] {
                let what = format!("compare[{i}] {how} {key}");
                c.eq(format_args!("{what} pairs"), got.pairs, a.len());
                c.test(
                    format_args!("{what} wilcoxon"),
                    got.wilcoxon,
                    &case["wilcoxon"],
                );
                let mw = &case["mwu"];
                let got_mw = got.mann_whitney.expect("groups are not empty");
                c.close(
                    format_args!("{what} mwu U"),
                    got_mw.statistic,
                    num(&mw[0]),
                    EXACT,
                );
                let rtol = if got_mw.method == "exact" {
                    EXACT
                } else {
                    APPROX
                };
                c.close(
                    format_args!("{what} mwu p"),
                    got_mw.p_value,
                    num(&mw[1]),
                    rtol,
                );
                c.close(
                    format_args!("{what} d"),
                    got.cohens_d,
                    num(&case["cohens_d"]),
                    EXACT,
                );
                c.close(
                    format_args!("{what} a12"),
                    got.a12,
                    num(&case["a12"]),
                    EXACT,
                );
                let v = serde_json::to_value(got.verdict).unwrap();
                c.eq(
                    format_args!("{what} verdict"),
                    v.as_str().unwrap(),
                    want_verdict,
                );
                // verdict() itself, from SciPy's p and the reference d
                let p = case["wilcoxon"].get(1).map_or(1.0, num);
                let direct = if a.len() < 2 {
                    Verdict::NotSignificant
                } else {
                    verdict(p, num(&case["cohens_d"]), goal)
                };
                let v = serde_json::to_value(direct).unwrap();
                c.eq(
                    format_args!("{what} verdict()"),
                    v.as_str().unwrap(),
                    want_verdict,
                );
            }
            check_tost(
                &mut c,
                format!("compare[{i}] by_seed tost"),
                eq,
                &case["tost"],
            );
            c.cases += 1;
        }
    }
    c.finish("compare + compare_by_seed + verdict");
}
