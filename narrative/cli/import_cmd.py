"""``narr import``: story bibles (lorebooks, character cards, notes, a codex) become nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import change_line, emit_json, json_option, short, warn
from narrative.cli.terminal import echo, paint, progress_bar
from narrative.ids import LAYERS


@click.command("import")
@click.argument("source", metavar="FILE|DIR", type=click.Path(path_type=Path))
@click.option("--layer", type=click.Choice(LAYERS), default="background", show_default=True,
              help="The layer of lorebook entries and of notes whose front matter names none.")
@click.option("--include-disabled", is_flag=True,
              help="Import disabled lorebook entries too (they are listed as left out otherwise).")
@click.option("--user", "user", metavar="NAME",
              help="What {{user}} stands for in cards and lorebooks (default: [import] user in "
                   "narr.toml, else User).")
@click.option("--dry-run", is_flag=True, help="Say what would be imported, changing nothing.")
@json_option
@pass_context
def import_cmd(ctx: Context, source: Path, layer: str, include_disabled: bool, user: str | None,
               dry_run: bool, as_json: bool) -> None:
    """Bring in a story bible as nodes, in one event: no text lost, what the world has left alone.

    Entries about one thing (a character kept in several lorebook entries that
    share a key) become one node, the other entries' texts its sections; the
    report says where every entry went. An entry whose name or alias a node
    carries, in any layer, is that node: it adds only what the node lacks (state,
    relations, aliases, tags, a summary where there is none, its other texts as
    sections). A name the import would leave on two nodes is reported as ambiguous.

    FILE is a SillyTavern lorebook (World Info) or character card (V1/V2/V3 JSON,
    a PNG card, a CHARX), a Markdown note with YAML front matter, a `narr export
    codex` file or one of narr's exports; DIR is a folder of them (an Obsidian
    vault: its templates, daily notes, trash and what .narrignore lists left out).

    \b
    Examples:
      narr import lorebook.json --dry-run
      narr import card.png --user Mei
      narr import ~/vault --layer character
    """
    from narrative.engine.bible import import_bible
    from narrative.invocation import absolute

    source = absolute(ctx.directory / source)  # relative to -C, as git's paths are
    wr = ctx.world
    with progress_bar("Importing", as_json=as_json) as progress:
        result = import_bible(wr, source, layer=layer, dry_run=dry_run, progress=progress,
                              include_disabled=include_disabled, user=user)
    data = result.to_json()
    if as_json:
        emit_json(data, "import")
        return
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
    return lines


COMMANDS = [import_cmd]
