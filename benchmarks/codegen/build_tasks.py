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

Usage: python build_tasks.py [--check]   (--check: fail if tasks.jsonl is not up to date)
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
        text = build_all()
    except TaskSourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    n = text.count("\n")
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"error: {OUT} is stale; run build_tasks.py", file=sys.stderr)
            return 1
        print(f"{OUT.name} is up to date ({n} tasks)")
        return 0
    OUT.write_text(text)
    print(f"wrote {n} tasks to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
