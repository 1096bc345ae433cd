#!/usr/bin/env python3
"""Assemble benchmarks/codegen/tasks.jsonl from the per-task sources in src/.

Why sources: a JSONL line with four Python modules escaped inside it cannot be reviewed or
edited by hand. Each task lives in one `src/<stage>/<name>.task` file, split into sections:

    # %% meta                      TOML: id, entry_point, stage, task, data, requirements,
                                   optional timeout_s
    # %% reference                 the complete reference module
    # %% prompt                    optional; default: the reference's imports + the entry
                                   point's signature and docstring
    # %% test                      the pytest module (imports `from solution import ...`)
    # %% wrong: <what is wrong>    one section per typical wrong solution: either a complete
                                   module, or edit blocks applied to the reference:
                                       <<<<
                                       text in the reference (must occur exactly once)
                                       ====
                                       replacement text
                                       >>>>

The prompt is derived from the reference so that the two can never disagree: the import lines
plus the entry point's `def`/`class` line(s) down to the end of its docstring.

Repository-level tasks are listed in src/repo/tasks.toml and written to repo-tasks.jsonl; their
prompts are derived from the repository file in the same way (plus, for a method, the enclosing
class with its other methods).

Usage: python build_tasks.py [--check]   (--check: fail if the JSONL files are not up to date)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
OUT = HERE / "tasks.jsonl"
REPO_SPEC = SRC / "repo" / "tasks.toml"
REPO_OUT = HERE / "repo-tasks.jsonl"
CATALOGUE_OUT = HERE / "TASKS.md"
STAGES = ("pre_post_processing", "model_construction", "training", "inference", "evaluation")
TASK_TYPES = ("classification", "regression", "object_detection", "image_segmentation",
              "time_series", "recommendation", "general")
DATA_TYPES = ("image", "text", "structured_array", "others")
REPO_KEYS = ("id", "repo", "file", "function", "tests", "stage", "task", "data", "requirements")

SECTION_RE = re.compile(r"^# %% (meta|reference|prompt|test|wrong)(?::\s*(.*))?$")
EDIT_RE = re.compile(r"^<<<<\n(.*?)\n====\n(.*?)^>>>>$", re.S | re.M)


class TaskSourceError(Exception):
    """A task source file is malformed; the message names the file and the problem."""


def split_sections(path: Path) -> list[tuple[str, str, str]]:
    """Return (section kind, section argument, body) triples in file order."""
    sections: list[tuple[str, str, list[str]]] = []
    for lineno, line in enumerate(path.read_text().splitlines(keepends=True), 1):
        m = SECTION_RE.match(line.rstrip("\n"))
        if m:
            sections.append((m.group(1), (m.group(2) or "").strip(), []))
        elif sections:
            sections[-1][2].append(line)
        elif line.strip():
            raise TaskSourceError(f"{path}:{lineno}: text before the first '# %% ' section header")
    return [(kind, arg, "".join(body).strip("\n") + "\n") for kind, arg, body in sections]


def derive_prompt(reference: str, entry_point: str, path: Path) -> str:
    """Imports + the entry point's header and docstring, taken verbatim from the reference."""
    tree = ast.parse(reference)
    lines = reference.splitlines()
    imports = [
        ast.get_source_segment(reference, node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == entry_point:
            doc = node.body[0] if node.body else None
            if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)):
                raise TaskSourceError(f"{path}: entry point '{entry_point}' has no docstring")
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            header = "\n".join(lines[start - 1 : doc.end_lineno])
            return "\n".join(imports) + "\n\n\n" + header + "\n"
    raise TaskSourceError(f"{path}: reference defines no top-level '{entry_point}'")


def apply_edits(reference: str, body: str, path: Path, what: str) -> str:
    """Apply `<<<< old ==== new >>>>` blocks to the reference; each old text must be unique."""
    edits = EDIT_RE.findall(body)
    if not edits:
        if "<<<<" in body:
            raise TaskSourceError(f"{path}: wrong '{what}': malformed edit block")
        return body  # a complete module
    leftover = EDIT_RE.sub("", body).strip()
    if leftover:
        raise TaskSourceError(f"{path}: wrong '{what}': text outside edit blocks: {leftover[:60]!r}")
    module = reference
    for old, new in edits:
        new = new[:-1] if new.endswith("\n") else new
        count = module.count(old)
        if count != 1:
            raise TaskSourceError(
                f"{path}: wrong '{what}': edit text occurs {count} times in the reference, "
                f"expected exactly once: {old[:60]!r}"
            )
        module = module.replace(old, new)
    if module == reference:
        raise TaskSourceError(f"{path}: wrong '{what}': edits leave the reference unchanged")
    return module


def build_task(path: Path) -> dict:
    sections = split_sections(path)
    by_kind: dict[str, str] = {}
    wrong: list[str] = []
    for kind, arg, body in sections:
        if kind == "wrong":
            continue
        if kind in by_kind:
            raise TaskSourceError(f"{path}: section '{kind}' appears twice")
        by_kind[kind] = body
    for required in ("meta", "reference", "test"):
        if required not in by_kind:
            raise TaskSourceError(f"{path}: missing section '# %% {required}'")
    try:
        meta = tomllib.loads(by_kind["meta"])
    except tomllib.TOMLDecodeError as e:
        raise TaskSourceError(f"{path}: meta section is not valid TOML: {e}") from e
    for key in ("id", "entry_point", "stage", "task", "data", "requirements"):
        if key not in meta:
            raise TaskSourceError(f"{path}: meta lacks '{key}'")
    reference = by_kind["reference"]
    for kind, arg, body in sections:
        if kind == "wrong":
            if not arg:
                raise TaskSourceError(f"{path}: '# %% wrong:' needs a description after the colon")
            module = apply_edits(reference, body, path, arg)
            wrong.append(f"# wrong: {arg}\n{module}")
    prompt = by_kind.get("prompt") or derive_prompt(reference, meta["entry_point"], path)
    task = {
        "id": meta["id"],
        "prompt": prompt,
        "entry_point": meta["entry_point"],
        "reference": reference,
        "test": by_kind["test"],
        "labels": {"stage": meta["stage"], "task": meta["task"], "data": meta["data"]},
        "requirements": meta["requirements"],
    }
    if "timeout_s" in meta:
        task["timeout_s"] = meta["timeout_s"]
    task["wrong"] = wrong
    return task


def _header_through_docstring(lines: list[str], node, path: Path) -> str:
    doc = node.body[0] if node.body else None
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)):
        raise TaskSourceError(f"{path}: '{node.name}' has no docstring")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return "\n".join(lines[start - 1 : doc.end_lineno])


def derive_repo_prompt(spec: dict, source: str, path: Path) -> str:
    """Comment naming the file + imports + (class context) + target signature and docstring."""
    tree = ast.parse(source)
    lines = source.splitlines()
    imports = "\n".join(
        ast.get_source_segment(source, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
    )
    cls_name, fn_name = spec.get("class"), spec["function"]
    what = f"method `{cls_name}.{fn_name}`" if cls_name else f"function `{fn_name}`"
    comment = f"# Repository {Path(spec['repo']).name}, file {spec['file']}: implement the {what}."
    if spec.get("note"):
        comment += f"\n# {spec['note']}"
    if cls_name is None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == fn_name:
                return f"{comment}\n{imports}\n\n\n{_header_through_docstring(lines, node, path)}\n"
        raise TaskSourceError(f"{path}: no top-level function '{fn_name}'")
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            parts = [_header_through_docstring(lines, node, path)]
            target = None
            for member in node.body[1:]:
                if isinstance(member, ast.FunctionDef) and member.name == fn_name:
                    target = member
                elif isinstance(member, ast.FunctionDef):
                    start = min([member.lineno] + [d.lineno for d in member.decorator_list])
                    parts.append("\n".join(lines[start - 1 : member.end_lineno]))
            if target is None:
                raise TaskSourceError(f"{path}: class '{cls_name}' has no method '{fn_name}'")
            parts.append(_header_through_docstring(lines, target, path))
            return f"{comment}\n{imports}\n\n\n" + "\n\n".join(parts) + "\n"
    raise TaskSourceError(f"{path}: no class '{cls_name}'")


def build_repo_tasks() -> str:
    try:
        specs = tomllib.loads(REPO_SPEC.read_text())["task"]
    except (tomllib.TOMLDecodeError, KeyError) as e:
        raise TaskSourceError(f"{REPO_SPEC}: expected [[task]] tables: {e}") from e
    out = []
    for spec in specs:
        missing = [k for k in REPO_KEYS if k not in spec]
        if missing:
            raise TaskSourceError(f"{REPO_SPEC}: task {spec.get('id', '?')} lacks {missing}")
        path = HERE / spec["repo"] / spec["file"]
        if not path.is_file():
            raise TaskSourceError(f"{REPO_SPEC}: task {spec['id']}: {path} does not exist")
        task = {"id": spec["id"], "repo": spec["repo"], "file": spec["file"], "function": spec["function"]}
        if spec.get("class"):
            task["class"] = spec["class"]
        task["tests"] = spec["tests"]
        task["prompt"] = derive_repo_prompt(spec, path.read_text(), path)
        task["labels"] = {"stage": spec["stage"], "task": spec["task"], "data": spec["data"]}
        task["requirements"] = spec["requirements"]
        if "timeout_s" in spec:
            task["timeout_s"] = spec["timeout_s"]
        out.append(json.dumps(task, ensure_ascii=False) + "\n")
    return "".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def build_catalogue(tasks_jsonl: str, repo_jsonl: str) -> str:
    """TASKS.md: label counts and one row per task, generated so it cannot drift from the set."""
    tasks = [json.loads(line) for line in tasks_jsonl.splitlines()]
    repo_tasks = [json.loads(line) for line in repo_jsonl.splitlines()]
    out = ["# Codegen task catalogue", "",
           "Generated by `build_tasks.py` from `src/`; do not edit by hand.", "",
           f"{len(tasks)} function-level tasks with {sum(len(t['wrong']) for t in tasks)} "
           f"wrong solutions, and {len(repo_tasks)} repository-level tasks.", ""]
    out += ["| stage \\ task | " + " | ".join(TASK_TYPES) + " | total |",
            "|---|" + "---|" * (len(TASK_TYPES) + 1)]
    for stage in STAGES:
        row = [sum(1 for t in tasks if t["labels"]["stage"] == stage and t["labels"]["task"] == k)
               for k in TASK_TYPES]
        out.append(f"| {stage} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    totals = [sum(1 for t in tasks if t["labels"]["task"] == k) for k in TASK_TYPES]
    out.append("| total | " + " | ".join(map(str, totals)) + f" | {len(tasks)} |")
    out += ["", "| data | " + " | ".join(DATA_TYPES) + " |", "|---|" + "---|" * len(DATA_TYPES),
            "| tasks | " + " | ".join(str(sum(1 for t in tasks if t["labels"]["data"] == d))
                                    for d in DATA_TYPES) + " |"]
    for stage in STAGES:
        out += ["", f"## {stage}", "", "| id | task | data | what | typical wrong solutions |",
                "|---|---|---|---|---|"]
        for t in tasks:
            if t["labels"]["stage"] != stage:
                continue
            tree = ast.parse(t["prompt"])
            node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
            what = ast.get_docstring(node).splitlines()[0].rstrip(".")
            wrong = "; ".join(w.splitlines()[0].removeprefix("# wrong: ") for w in t["wrong"])
            out.append(f"| `{t['id']}` | {t['labels']['task']} | {t['labels']['data']} | "
                       f"{_cell(what)} | {_cell(wrong)} |")
    out += ["", "## repository tasks (`repo-tasks.jsonl`)", "",
            "| id | target | stage | task | data | tests |", "|---|---|---|---|---|---|"]
    for t in repo_tasks:
        target = f"{t['file']}: " + (f"{t['class']}.{t['function']}" if "class" in t else t["function"])
        out.append(f"| `{t['id']}` | `{target}` | {t['labels']['stage']} | {t['labels']['task']} | "
                   f"{t['labels']['data']} | {len(t['tests'])} node ids |")
    return "\n".join(out) + "\n"


def build_all() -> str:
    paths = sorted(SRC.rglob("*.task"))
    if not paths:
        raise TaskSourceError(f"no *.task files under {SRC}")
    tasks = [build_task(p) for p in paths]
    ids = [t["id"] for t in tasks]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise TaskSourceError(f"duplicate task ids: {dupes}")
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if tasks.jsonl is stale")
    args = parser.parse_args()
    try:
        tasks_jsonl, repo_jsonl = build_all(), build_repo_tasks()
        outputs = [(OUT, tasks_jsonl), (REPO_OUT, repo_jsonl),
                   (CATALOGUE_OUT, build_catalogue(tasks_jsonl, repo_jsonl))]
    except TaskSourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stale = False
    for path, text in outputs:
        n = text.count("\n") if path.suffix == ".jsonl" else None
        what = f"{n} tasks" if n is not None else "catalogue"
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"error: {path} is stale; run build_tasks.py", file=sys.stderr)
                stale = True
            else:
                print(f"{path.name} is up to date ({what})")
        else:
            path.write_text(text)
            print(f"wrote {what} to {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
