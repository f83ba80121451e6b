#!/usr/bin/env python
"""``narr import`` of a large Obsidian vault and a large SillyTavern book, and the exports back.

    python benchmarks/importing.py --notes 6000 --entries 20000   # prints the figures as JSON
    python benchmarks/importing.py --entries 20000                # the lorebook figures only
    python benchmarks/importing.py --notes 6000 --no-book         # the vault figures only

``run.py`` calls :func:`measure` and :func:`measure_lorebook` in its ``import`` section. Both
are generated from a seed, so the same size gives the same files, and both are made the way
writers make them, with what makes an import work: names alike but not the same (Giant Toad and
Giant Ice Toad, Name1 and Name12: reported, never merged), one name in two folders.

- **The vault** (:func:`write_vault`): notes in folders by kind, front matter with aliases, tags
  and a type, a ``# Title`` on most, a first paragraph of prose, verse or a table, ``[[links]]``
  to other notes (by name, by path where two notes share a name, with ``|shown`` text, with a
  ``#heading``, as embeds), some to notes that are not there, sections with more links.
- **The book** (:func:`write_lorebook`): a World Info file of exactly ``entries`` entries, every
  fourth with a second entry about the same thing (a facet: a section), Markdown and macros in
  the content.

Each measure runs in process and gives seconds of wall time (``*_s``) and of CPU (``*_cpu_s``:
what the figure would be on a quiet machine, where the benchmark is not sharing its cores):

- ``first``: into an empty world (read, weighed, created, one event);
- ``again``: the same files a second time (everything is found there: nothing recorded);
- ``export``: the world written back (``narr export vault`` / ``narr export lorebook``);
- ``reimport``: that export into another empty world (``same``: whether the nodes are equal);
- ``arbiter``: of the vault's first run, the time the arbiter took.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

SYLLABLES = ["an", "bel", "cor", "dra", "el", "fen", "gal", "hal", "ith", "jor", "kel", "lun", "mar",
             "nor", "or", "pel", "quen", "ros", "sil", "tor", "ul", "val", "wen", "xan", "yr", "zel",
             "ash", "bryn", "cael", "dun", "eth", "fal", "gor", "hel", "ist", "kar", "lor", "mor",
             "ner", "oth", "pra", "rin", "sar", "tha", "ur", "vor", "wyn", "yth"]
ADJECTIVES = ["Giant", "Lesser", "Greater", "Black", "Silver", "Old", "Hollow", "Red", "Ice", "Storm"]
FOLDERS = {"People": "character", "Places": "place", "Items": "item", "Factions": "faction",
           "Spells": "lore", "Monsters": "creature", "Weather": "weather"}
SPELL_WORDS = ["Light", "Blight", "Control Water", "Control Weather", "Find Steed", "Find Greater Steed"]


def _names(rng: random.Random, n: int) -> list[str]:
    """``n`` different names, some alike on purpose: two syllables and a word, with a number,
    with an adjective."""
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        i += 1
        a, b = rng.choice(SYLLABLES), rng.choice(SYLLABLES)
        base = (a + b).capitalize()
        shape = i % 10
        if shape == 0:
            name = f"{rng.choice(ADJECTIVES)} {base}"
        elif shape == 1:
            name = f"{base} {rng.choice(SYLLABLES).capitalize()}{rng.choice(SYLLABLES)}"
        elif shape == 2:
            name = f"{base}{i % 97}"
        elif shape == 3:
            name = f"{rng.choice(ADJECTIVES)} {rng.choice(ADJECTIVES)} {base}"
        else:
            name = f"{base} {rng.choice(SYLLABLES).capitalize()}"
        if name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return out


def _paragraph(rng: random.Random, links: list[str], i: int) -> str:
    """A first paragraph: prose, verse (line breaks) or a table, with a link or two."""
    link = f"[[{rng.choice(links)}]]" if links else "nobody"
    if i % 7 == 0:
        return (f"Sung at the ferry:\nthe river keeps {link},\nthe tide keeps the rest,\n"
                "and the lamp keeps none.")
    if i % 11 == 0:
        return f"| what | where |\n|---|---|\n| {link} | north bank |\n| a lamp | the hull |"
    return (f"Known along the river for {rng.choice(['patience', 'debts', 'songs', 'a scar', 'silence'])}, "
            f"and for {link}. " + "More is told of it in the harbour than is true. " * rng.randint(1, 4))


def write_vault(folder: Path, notes: int, seed: int = 11) -> int:
    """``notes`` Markdown notes of an Obsidian vault under ``folder``; how many were written."""
    rng = random.Random(seed)
    names = _names(rng, notes)
    folders = list(FOLDERS)
    placed: list[tuple[str, str]] = []  # (folder, name)
    for i, name in enumerate(names):
        placed.append((folders[i % len(folders)], name))
    for k in range(0, notes // 50):  # one name in two folders: a person and a place, say
        placed[k * 50 + 1] = (folders[(k * 50 + 2) % len(folders)], placed[k * 50][1])
    for j, word in enumerate(SPELL_WORDS):
        if j < len(placed):
            placed[j * 3 + 5] = ("Spells", word)
    stems: dict[str, int] = {}
    for _, name in placed:
        stems[name.casefold()] = stems.get(name.casefold(), 0) + 1

    def link_to(k: int) -> str:
        where, name = placed[k]
        return f"{where}/{name}" if stems[name.casefold()] > 1 else name

    folder.mkdir(parents=True, exist_ok=True)
    for i, (where, name) in enumerate(placed):
        targets = [link_to(rng.randrange(len(placed))) for _ in range(3)]
        lines = ["---", f"type: {FOLDERS[where]}"]
        if i % 3 == 0:
            lines.append(f"aliases: [{json.dumps(name.split()[0] + ' ' + str(i))}]")
        lines.append(f"tags: [{where.lower()}, {'river' if i % 2 else 'hill'}]")
        if i % 13 == 0:
            lines.append(f"id: n{i}")
        lines += ["---", ""]
        if i % 5:
            lines += [f"# {name}", ""]
        lines += [_paragraph(rng, targets, i), ""]
        lines += ["## Story", "", f"Met [[{targets[0]}|someone]] at the ferry; see [[{targets[1]}#Story]].",
                  ""]
        if i % 12 == 0:
            lines += [f"It wrote to [[Lost Letter {i % 40}]], which nobody has found.", ""]
        if i % 9 == 0:
            lines += ["## Gear", "", f"- a lamp\n- ![[{targets[2]}]]\n- a coat #gear", ""]
        path = folder / where / f"{name}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    return len(placed)


def write_lorebook(path: Path, entries: int, seed: int = 11) -> int:
    """A World Info book of ``entries`` entries at ``path``; how many were written."""
    rng = random.Random(seed)
    names = _names(rng, entries)
    book: dict[str, Any] = {}
    i = 0
    while len(book) < entries:
        name = names[i]
        uid = len(book)
        table = "| when | what |\n|---|---|\n| spring | floods |"
        content = (f"{name} is known to {{{{user}}}} by {rng.choice(['name', 'rumour', 'a scar'])}.\n\n"
                   + ("- keeps a lamp\n- owes a debt" if i % 3 else table))
        book[str(uid)] = {"uid": uid, "key": [name, f"{name.split()[0]} {i}"], "keysecondary": [],
                          "comment": name, "content": content, "constant": i % 50 == 0,
                          "selective": False, "order": 100 + i, "position": i % 2, "disable": False,
                          "displayIndex": uid}
        if i % 4 == 0 and len(book) < entries:
            uid = len(book)
            book[str(uid)] = {"uid": uid, "key": [name], "comment": f"{name} — history",
                              "content": f"What {name} did before the story starts ({i}).",
                              "order": 500 + i, "position": 1, "disable": False, "displayIndex": uid}
        i += 1
    path.write_text(json.dumps({"entries": book}, ensure_ascii=False), encoding="utf-8")
    return len(book)


@contextmanager
def _clock(out: dict[str, Any], name: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    out[f"{name}_s"] = round(time.perf_counter() - wall, 3)
    out[f"{name}_cpu_s"] = round(time.process_time() - cpu, 3)


def _fresh(root: Path) -> Path:
    from narrative.engine.init import init_world

    if root.exists():
        shutil.rmtree(root)
    init_world(root)
    return root


def _in(root: Path, work: Callable[[Any], Any]) -> Any:
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(root)
    try:
        return work(wr)
    finally:
        wr.close()


def _kept(root: Path) -> dict[str, Any]:
    from narrative.engine.nodes import current_nodes

    keys = ("name", "layer", "kind", "aliases", "summary", "lifecycle", "traits", "state", "relations",
            "tags", "sections", "always_in_view", "extensions")
    nodes = _in(root, lambda wr: current_nodes(wr)[0])
    return {i: {k: n.get(k) for k in keys} for i, n in nodes.items()}


def measure(scratch: Path, notes: int) -> dict[str, Any]:
    """Import a vault of ``notes`` notes into a new world under ``scratch`` twice, export it as a
    vault, import that into another new world; seconds and counts."""
    import narrative.delta.arbiter as arbiter_mod
    import narrative.engine.bible as bible
    from narrative.engine.vault import export_vault

    vault = scratch / f"vault-{notes}"
    if not vault.exists():
        write_vault(vault, notes)
    root = _fresh(scratch / f"import-world-{notes}")
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
            with _clock(out, run):
                result = _in(root, lambda wr: bible.import_bible(wr, vault))
            out[f"{run}_arbiter_s"] = round(spent[-1], 3)
            out[f"{run}_created"] = len(result.created)
            out[f"{run}_existing"] = len(result.existing)
            if run == "first":
                out.update(relations=len(result.related), similar=len(result.similar),
                           missing=len(result.missing), ambiguous=len(result.ambiguous))
    finally:
        bible.arbitrate = arbitrate  # type: ignore[assignment]
    written = scratch / f"vault-{notes}-exported"
    if written.exists():
        shutil.rmtree(written)
    with _clock(out, "export"):
        _in(root, lambda wr: export_vault(wr, written))
    copy = _fresh(scratch / f"import-copy-{notes}")
    with _clock(out, "reimport"):
        result = _in(copy, lambda wr: bible.import_bible(wr, written))
    out["reimport_created"] = len(result.created)
    out["same"] = _kept(copy) == _kept(root)
    return out


def measure_lorebook(scratch: Path, entries: int) -> dict[str, Any]:
    """Import a lorebook of ``entries`` entries into a new world twice, export it, import the export."""
    import narrative.engine.bible as bible
    from narrative.engine.lorebook import export_lorebook

    scratch.mkdir(parents=True, exist_ok=True)
    book = scratch / f"lorebook-{entries}.json"
    written = write_lorebook(book, entries)
    root = _fresh(scratch / f"lorebook-world-{entries}")
    out: dict[str, Any] = {"entries": written, "bytes": book.stat().st_size}
    for run in ("first", "again"):
        with _clock(out, run):
            result = _in(root, lambda wr: bible.import_bible(wr, book))
        out[f"{run}_created"] = len(result.created)
        out[f"{run}_sections"] = sum(e["section"] is not None for e in result.entries)
        if run == "first":
            out["similar"] = len(result.similar)
    with _clock(out, "export"):
        exported = _in(root, export_lorebook)
        text = exported.text()
    out["exported_entries"] = len(exported.book["entries"])
    again = scratch / f"lorebook-{entries}-exported.json"
    again.write_text(text, encoding="utf-8")
    out["exported_bytes"] = again.stat().st_size
    copy = _fresh(scratch / f"lorebook-copy-{entries}")
    with _clock(out, "reimport"):
        result = _in(copy, lambda wr: bible.import_bible(wr, again))
    out["reimport_created"] = len(result.created)
    out["same"] = _kept(copy) == _kept(root)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=2000, help="notes of the vault")
    parser.add_argument("--entries", type=int, default=2000, help="entries of the lorebook")
    parser.add_argument("--no-book", action="store_true", help="the vault only")
    parser.add_argument("--scratch", type=Path, default=None,
                        help="where the files and the worlds are made (default: a temporary folder)")
    args = parser.parse_args()

    def run(scratch: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "--entries" not in sys.argv or "--notes" in sys.argv:
            out["vault"] = measure(scratch, args.notes)
        if not args.no_book:
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
