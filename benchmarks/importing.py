#!/usr/bin/env python
"""``narr import`` of a large vault and a large lorebook, and ``narr export lorebook`` of the result.

    python benchmarks/importing.py --notes 2000       # prints the figures as JSON
    python benchmarks/importing.py --entries 2000     # the lorebook figures only

``run.py`` calls :func:`measure` in its ``import`` section. The notes are the
benchmark world's nodes (``worldgen.generate_nodes``: English, pinyin and Chinese
names and aliases over the four layers) written as one note each, with front matter
and relations by name, as an Obsidian vault keeps them. Three runs, in process:

- ``first``: the vault into an empty world (every entry weighed against the ones
  before it in the same import, then created);
- ``again``: the same vault a second time (every entry is found already there, so
  nothing is recorded);
- ``arbiter_s``: of the first run, the time the arbiter took to weigh the entries.

:func:`measure_lorebook` does the same with a SillyTavern World Info book of ``entries`` entries
(the same generated nodes, one entry each, and every fourth with a second entry about it, a
facet that becomes a section), then exports the world as a lorebook (``export_s``) and imports
that into another empty world (``reimport_s``: narr's own records, read back exactly).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def write_vault(folder: Path, notes: int, seed: int = 11) -> int:
    """``notes`` Markdown notes with YAML front matter under ``folder``; how many were written."""
    from worldgen import generate_nodes

    nodes, seen = [], set()
    for n in generate_nodes(notes * 3, seed=seed):  # the generator repeats names: one note per name
        if len(nodes) < notes and n["name"].casefold() not in seen:
            seen.add(n["name"].casefold())
            nodes.append(n)
    name_of = {n["id"]: n["name"] for n in nodes}
    folder.mkdir(parents=True, exist_ok=True)
    for n in nodes:
        lines = ["---", f"name: {json.dumps(n['name'], ensure_ascii=False)}", f"layer: {n['layer']}",
                 f"kind: {n['kind']}"]
        if n["aliases"]:
            lines.append(f"aliases: {json.dumps(n['aliases'], ensure_ascii=False)}")
        if any(t in name_of for targets in n["relations"].values() for t in targets):
            lines.append("relations:")
            for rtype, targets in n["relations"].items():
                names = [name_of[t] for t in targets if t in name_of]
                if not names:
                    continue
                lines.append(f"  {rtype}: {json.dumps(names, ensure_ascii=False)}")
        lines += ["---", "", n["summary"], ""]
        (folder / f"{n['layer']}" / f"{n['id']}.md").parent.mkdir(exist_ok=True)
        (folder / f"{n['layer']}" / f"{n['id']}.md").write_text("\n".join(lines), encoding="utf-8")
    return len(nodes)


def measure(scratch: Path, notes: int) -> dict[str, Any]:
    """Import a vault of ``notes`` notes into a new world under ``scratch``, twice; seconds and counts."""
    import narrative.delta.arbiter as arbiter_mod
    import narrative.engine.bible as bible
    from narrative.engine.init import init_world
    from narrative.store.worldrepo import WorldRepo

    vault = scratch / f"vault-{notes}"
    if not vault.exists():
        write_vault(vault, notes)
    root = scratch / f"import-world-{notes}"
    if root.exists():
        import shutil

        shutil.rmtree(root)
    init_world(root)

    spent: list[float] = []
    arbitrate = arbiter_mod.arbitrate

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return arbitrate(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t0)

    bible.arbitrate = timed  # type: ignore[assignment]
    out: dict[str, Any] = {"notes": notes}
    try:
        for run in ("first", "again"):
            wr = WorldRepo.open(root)
            try:
                t0 = time.perf_counter()
                result = bible.import_bible(wr, vault)
                out[f"{run}_s"] = round(time.perf_counter() - t0, 3)
            finally:
                wr.close()
            out[f"{run}_arbiter_s"] = round(spent[-1], 3)
            out[f"{run}_created"] = len(result.created)
            out[f"{run}_existing"] = len(result.existing)
    finally:
        bible.arbitrate = arbitrate  # type: ignore[assignment]
    return out


def write_lorebook(path: Path, entries: int, seed: int = 11) -> int:
    """A World Info book of ``entries`` entries at ``path``; how many were written."""
    from worldgen import generate_nodes

    nodes, seen = [], set()
    for n in generate_nodes(entries * 3, seed=seed):
        key = n["name"].casefold()
        if key not in seen and not any(a.casefold() in seen for a in n["aliases"]):
            seen.add(key)
            seen.update(a.casefold() for a in n["aliases"])
            nodes.append(n)
    book: dict[str, Any] = {}
    for i, n in enumerate(nodes):
        if len(book) >= entries:
            break
        book[str(len(book))] = {"uid": len(book), "key": [n["name"], *n["aliases"]], "keysecondary": [],
                                "comment": n["name"], "content": n["summary"], "constant": i % 50 == 0,
                                "selective": False, "order": 100 + i, "position": i % 2, "disable": False}
        if i % 4 == 0 and len(book) < entries:
            book[str(len(book))] = {"uid": len(book), "key": [n["name"]], "comment": f"{n['name']} — history",
                                    "content": f"What {n['name']} did before the story starts ({i}).",
                                    "order": 500 + i, "position": 1, "disable": False}
    path.write_text(json.dumps({"entries": book}, ensure_ascii=False), encoding="utf-8")
    return len(book)


def measure_lorebook(scratch: Path, entries: int) -> dict[str, Any]:
    """Import a lorebook of ``entries`` entries into a new world twice, export it, import the export."""
    import shutil

    import narrative.engine.bible as bible
    from narrative.engine.init import init_world
    from narrative.engine.lorebook import export_lorebook
    from narrative.store.worldrepo import WorldRepo

    scratch.mkdir(parents=True, exist_ok=True)
    book = scratch / f"lorebook-{entries}.json"
    written = write_lorebook(book, entries)
    roots = [scratch / f"lorebook-world-{entries}", scratch / f"lorebook-copy-{entries}"]
    for root in roots:
        if root.exists():
            shutil.rmtree(root)
        init_world(root)
    out: dict[str, Any] = {"entries": written, "bytes": book.stat().st_size}
    for run in ("first", "again"):
        wr = WorldRepo.open(roots[0])
        try:
            t0 = time.perf_counter()
            result = bible.import_bible(wr, book)
            out[f"{run}_s"] = round(time.perf_counter() - t0, 3)
            out[f"{run}_created"] = len(result.created)
            out[f"{run}_sections"] = sum(e["section"] is not None for e in result.entries)
        finally:
            wr.close()
    wr = WorldRepo.open(roots[0])
    try:
        t0 = time.perf_counter()
        exported = export_lorebook(wr)
        text = exported.text()
        out["export_s"] = round(time.perf_counter() - t0, 3)
        out["exported_entries"] = len(exported.book["entries"])
    finally:
        wr.close()
    again = scratch / f"lorebook-{entries}-exported.json"
    again.write_text(text, encoding="utf-8")
    wr = WorldRepo.open(roots[1])
    try:
        t0 = time.perf_counter()
        result = bible.import_bible(wr, again)
        out["reimport_s"] = round(time.perf_counter() - t0, 3)
        out["reimport_created"] = len(result.created)
    finally:
        wr.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--entries", type=int, default=2000, help="entries of the lorebook")
    parser.add_argument("--scratch", type=Path, default=None,
                        help="where the vault and the world are made (default: a temporary folder)")
    args = parser.parse_args()

    def run(scratch: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "--entries" not in sys.argv:
            out["vault"] = measure(scratch, args.notes)
        out["lorebook"] = measure_lorebook(scratch / "lorebook", args.entries)
        return out

    if args.scratch is None:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run(Path(tmp)), indent=2))
    else:
        print(json.dumps(run(args.scratch), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
