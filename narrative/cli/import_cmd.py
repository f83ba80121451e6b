"""``narr import``: story bibles (lorebooks, character cards, notes, a codex) become nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import change_line, emit_answer, json_option, short, warn
from narrative.cli.terminal import echo, paint, progress_bar
from narrative.ids import LAYERS


@click.command("import")
@click.argument("source", metavar="FILE|DIR", type=click.Path(path_type=Path))
@click.option("--layer", type=click.Choice(LAYERS), default="background", show_default=True,
              help="The layer of lorebook entries and of notes whose front matter names none.")
@click.option("--include-disabled", is_flag=True,
              help="Import disabled lorebook entries too (they are listed as left out otherwise).")
@click.option("--user", "user", metavar="NAME",
              help="Replace {{user}} in cards and lorebooks with NAME (default: [import] user in "
                   "narr.toml, else the macro stays as written).")
@click.option("--merge-similar", is_flag=True,
              help="Take names that are only alike (a close spelling, one inside the other) as "
                   "one node, as an event's new nodes are; by default they stay apart, reported.")
@click.option("--stubs", is_flag=True,
              help="Make a node for each note a [[link]] names that is neither in the import nor "
                   "in the world (listed as missing otherwise).")
@click.option("--skip-bad", is_flag=True,
              help="In a folder, leave out the files that cannot be imported (listed) and import "
                   "the rest; by default they are all named and nothing is imported.")
@click.option("--dry-run", is_flag=True, help="Say what would be imported, changing nothing.")
@json_option
@pass_context
def import_cmd(ctx: Context, source: Path, layer: str, include_disabled: bool, user: str | None,
               merge_similar: bool, stubs: bool, skip_bad: bool, dry_run: bool, as_json: bool) -> None:
    """Bring in a story bible as nodes, in one event: no text lost, what the world has left alone.

    Entries about one thing (a character kept in several lorebook entries that
    share a key) become one node, the other entries' texts its sections; the
    report says where every entry went. Identity is exact: an entry is a node
    only by the same name (case and width aside) or an id its source gives; an
    entry whose name a node carries, in any layer, is that node, and adds only
    what the node lacks. Names only alike are reported, never merged; a name
    the import would leave on two nodes is reported as ambiguous. [[links]]
    stay in the text and become relations. A book or card narr exported brings
    back what was changed in SillyTavern, as hand edits.

    FILE is a SillyTavern lorebook (World Info) or character card (V1/V2/V3 JSON,
    a PNG card, a CHARX), a Markdown note with YAML front matter, a `narr export
    codex` file or one of narr's exports; DIR is a folder of them (an Obsidian
    vault: its templates, daily notes, trash and what .narrignore lists left out).

    \b
    Examples:
      narr import lorebook.json --dry-run
      narr import card.png --user Mei
      narr import ~/vault --layer character
      narr import ~/vault --skip-bad --stubs
    """
    from narrative.invocation import absolute
    from narrative.operations.lore import IMPORT_LORE, ImportLoreParams, run_import_lore

    given = {"source": str(absolute(ctx.directory / source)),  # relative to -C, as git's paths are
             "layer": layer, "include_disabled": include_disabled, "user": user,
             "merge_similar": merge_similar, "stubs": stubs, "skip_bad": skip_bad,
             "dry_run": dry_run}
    params = IMPORT_LORE.parse({k: v for k, v in given.items() if v is not None})
    assert isinstance(params, ImportLoreParams)
    wr = ctx.world
    with progress_bar("Importing", as_json=as_json) as progress:
        found = run_import_lore(wr, params, progress)  # the row's use case, with the bar
    if as_json:
        emit_answer(found)
        return
    data = found.to_json()
    for message in data["warnings"]:
        warn(message)
    for line in import_lines(data, wr.branch()):
        echo(line)


def import_lines(d: dict[str, Any], branch: str | None) -> list[str]:
    """The human view of an import's ``--json``."""
    read = ", ".join(f"{s['path']} ({s['format']}, {s['entries']} "
                     f"entr{'y' if s['entries'] == 1 else 'ies'})" for s in d["sources"])
    lines = []
    if not d["sources"]:
        lines.append("Nothing to import: every file was left out")
    elif d["content"] is None:
        lines.append(f"Nothing to import: the world has everything in {read}")
    elif d["dry_run"]:
        lines.append(f"[dry run: nothing recorded] {d['content']}: {read}")
    else:
        lines.append(f"[{branch or 'HEAD'} {short(d['commit'])}] {d['content']}: {read}")
    for ch in d.get("edits", []):  # hand edits the import's event recorded, as narr event shows them
        lines.append(f"  {paint('hand edit', 'edit')}  {change_line(ch)}")
    for c in d["created"]:
        lines.append(f"  created {c['id']} ({c['layer']}, {c['name']}) from {c['source']}")
    for r in d["related"]:
        lines.append(f"  related {r['source']} -{r['type']}-> {r['target']}")
    for e in d["existing"]:
        added = f"; added {', '.join(e['added'])}" if e["added"] else ""
        lines.append(f"  already there: {e['name']} from {e['source']} is {e['id']} ({e['how']}){added}")
        lines.extend(f"    note: {note}" for note in e.get("notes", []))
    for e in d.get("entries", []):
        if e["section"] is not None:
            lines.append(f"  {e['source']} ({e['title'] or e['name']}) is the section "
                         f"{e['section']!r} of {e['node']}")
    for s in d.get("skipped", []):
        what = f"{s['source']} ({s['title']})" if s.get("title") else s["source"]
        lines.append(f"  left out {what}: {s['reason']}")
    for a in d.get("ambiguous", []):
        lines.append(f"  {paint('ambiguous', 'warning')}: {a['name']!r} now names {', '.join(a['ids'])}; "
                     "name them by id")
    for m in d.get("similar", []):
        lines.append(f"  similar: {m['name']} ({m['id']}) is like {m['similar_to']} ({m['other']}), "
                     f"kept apart: {m['how']}")
    for m in d.get("missing", []):
        lines.append(f"  missing: {m['source']} links {m['link']}, a note that is not there")
    return lines


COMMANDS = [import_cmd]
