//! docs/architecture.md against the real workspace: the crate table lists every crate in
//! `crates/` once, its "depends on" column is exactly the reprolab crates of that crate's
//! `[dependencies]`, its rows are in dependency order, the dependency layers point one way, and
//! every crate has a README. Plain text parsing: no process, no Python.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every crate directory below `crates/` with a Cargo.toml: package name -> directory.
fn crates() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        out.insert(package_name(&read(&manifest), &manifest), dir);
    }
    out
}

fn package_name(toml: &str, path: &Path) -> String {
    let mut section = String::new();
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[package]"
            && let Some(rest) = line.strip_prefix("name")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            return value.trim().trim_matches('"').to_string();
        }
    }
    panic!("{}: no [package] name", path.display())
}

/// The reprolab crates in a Cargo.toml's `[dependencies]` (not dev- or build-dependencies),
/// as `reprolab-x = ...`, `reprolab-x.workspace = true` or a `[dependencies.reprolab-x]` table.
fn reprolab_dependencies(toml: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let header = line.trim_start_matches('[').trim_end_matches(']').trim();
            in_deps = header == "dependencies";
            if let Some(name) = header.strip_prefix("dependencies.")
                && name.starts_with("reprolab")
            {
                out.insert(name.trim_matches('"').to_string());
            }
            continue;
        }
        if !in_deps || !line.starts_with("reprolab") {
            continue;
        }
        let end = line
            .find(|c: char| c == '.' || c == '=' || c.is_whitespace())
            .unwrap_or(line.len());
        out.insert(line[..end].to_string());
    }
    out
}

struct Row {
    krate: String,
    depends_on: BTreeSet<String>,
}

/// The rows of the table under "## Crates", in order.
fn table(doc: &str) -> Vec<Row> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Crates\n"))
        .expect("docs/architecture.md has no \"## Crates\" section");
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        let krate = cells[0].trim().trim_matches('`').to_string();
        let last = cells.last().unwrap().trim();
        let depends_on = if last == "—" || last == "-" || last.is_empty() {
            BTreeSet::new()
        } else {
            last.split(',')
                .map(|d| format!("reprolab-{}", d.trim().trim_matches('`')))
                .collect()
        };
        rows.push(Row { krate, depends_on });
    }
    assert!(!rows.is_empty(), "the \"## Crates\" table has no rows");
    rows
}

/// The fenced block under "### Dependency layers": crate -> layer number.
fn layers(doc: &str) -> BTreeMap<String, usize> {
    let section = doc
        .split("\n### Dependency layers")
        .nth(1)
        .expect("docs/architecture.md has no \"### Dependency layers\" section");
    let block = section
        .split("```")
        .nth(1)
        .expect("the dependency layers are not in a fenced block");
    let mut out = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let (n, names) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("layer line without \"N:\": {line:?}"));
        let n: usize = n.trim().parse().unwrap();
        for name in names.split_whitespace() {
            assert!(
                out.insert(name.to_string(), n).is_none(),
                "{name} is in two dependency layers"
            );
        }
    }
    out
}

fn names(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        return "—".into();
    }
    set.iter()
        .map(|d| d.trim_start_matches("reprolab-"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn the_crate_table_matches_every_cargo_toml() {
    let doc = read(&repo().join("docs/architecture.md"));
    let rows = table(&doc);
    let crates = crates();

    let listed: Vec<&str> = rows.iter().map(|r| r.krate.as_str()).collect();
    let listed_set: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(
        listed.len(),
        listed_set.len(),
        "docs/architecture.md lists a crate twice: {listed:?}"
    );
    for name in crates.keys() {
        assert!(
            listed_set.contains(name.as_str()),
            "docs/architecture.md: crate {name} (crates/) has no row in the crate table"
        );
    }

    let mut wrong = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let Some(dir) = crates.get(&row.krate) else {
            wrong.push(format!(
                "row {}: no crate of that name in crates/",
                row.krate
            ));
            continue;
        };
        let actual = reprolab_dependencies(&read(&dir.join("Cargo.toml")));
        if actual != row.depends_on {
            wrong.push(format!(
                "row {}: \"depends on\" says `{}`, its Cargo.toml [dependencies] have `{}`",
                row.krate,
                names(&row.depends_on),
                names(&actual)
            ));
        }
        for dep in &actual {
            if !listed[..i].contains(&dep.as_str()) {
                wrong.push(format!(
                    "row {}: depends on {dep}, whose row is not above it",
                    row.krate
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's crate table is out of date:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn dependency_layers_point_one_way() {
    let doc = read(&repo().join("docs/architecture.md"));
    let layers = layers(&doc);
    let mut wrong = Vec::new();
    for (name, dir) in crates() {
        let Some(&own) = layers.get(&name) else {
            wrong.push(format!("{name} is in no dependency layer"));
            continue;
        };
        for dep in reprolab_dependencies(&read(&dir.join("Cargo.toml"))) {
            match layers.get(&dep) {
                Some(&l) if l < own => {}
                Some(&l) => wrong.push(format!(
                    "{name} (layer {own}) depends on {dep} (layer {l}): not a lower layer"
                )),
                None => wrong.push(format!("{dep} is in no dependency layer")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's dependency layers are out of date:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn every_crate_has_a_readme() {
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|(_, dir)| !dir.join("README.md").is_file())
        .map(|(name, _)| name)
        .collect();
    assert!(
        missing.is_empty(),
        "crates without a README.md: {missing:?}"
    );
}

#[test]
fn the_cargo_toml_parser_reads_only_normal_dependencies() {
    let toml = "[package]\nname = \"x\"\n\n[dependencies]\nreprolab-core.workspace = true\n\
reprolab-llm = { workspace = true }\nserde.workspace = true\n\n[dev-dependencies]\n\
reprolab-rng.workspace = true\n\n[dependencies.reprolab-stats]\nworkspace = true\n";
    let deps: Vec<String> = reprolab_dependencies(toml).into_iter().collect();
    assert_eq!(deps, ["reprolab-core", "reprolab-llm", "reprolab-stats"]);
}
