"""Reading commands: ``log``, ``show``, ``get``, ``nodes``, ``status``."""

from __future__ import annotations

import json
from typing import Any

import click

from narrative.cli.completion import (
    complete_field,
    complete_node,
    complete_rev,
    complete_rev_or_node,
)
from narrative.cli.context import Context, pass_context
from narrative.cli.output import (
    change_line,
    emit_answer,
    emit_json,
    json_option,
    local_time,
    next_page,
    one_line,
    page_options,
    record_lines,
    short,
    warn,
)
from narrative.cli.rows import answered, row
from narrative.cli.terminal import echo, no_pager_option, paged, paint


@click.command("log")
@click.argument("rev", required=False, default="HEAD", metavar="[REV | A..B | NODE]",
                shell_complete=complete_rev_or_node)
@click.option("-n", "limit", type=click.IntRange(min=0), help="Show at most N events.")
@click.option("--node", "as_node", is_flag=True,
              help="Take the argument as a node (name, alias or id), never as a revision.")
@click.option("--chapters", "chapters", is_flag=True,
              help="List the chapters instead, newest first, with their summaries (those a "
                   "merge brought too, marked with their branch).")
@no_pager_option
@json_option
@pass_context
def log_cmd(ctx: Context, rev: str, limit: int | None, as_node: bool, chapters: bool,
            as_json: bool) -> None:
    """The story so far: events along the first-parent chain, newest first.

    REV starts the line elsewhere (HEAD~3, a branch, an event id); A..B lists the
    events on B's line that A does not reach, as git does; NODE (a name, alias or
    id) lists the events that touched that node: its changes, hand edits recorded
    on it, relations pointed at it. Text that is both a revision and a node is refused.

    \b
    Examples:
      narr log -n 5
      narr log main..what-if
      narr log 林远
      narr log --chapters
    """
    from narrative.engine.log import log_of

    if chapters:
        if as_node or ".." in rev:
            raise click.UsageError("--chapters lists the chapters of a story line: give a "
                                   "revision, not a node or a range")
        _chapters(ctx, rev, limit, as_json)
        return
    found = log_of(ctx.world, rev, limit, node=True if as_node else None)
    if as_json:
        emit_json([e.to_json() for e in found], "log")
        return
    with paged(ctx):
        _log_lines([e.summary for e in found])  # from the catalog: no record is parsed


def _chapters(ctx: Context, rev: str, limit: int | None, as_json: bool) -> None:
    """The chapters row; ``-n 0`` asks for none, as it does of the events."""
    from narrative.operations.chapters import CHAPTERS

    answer = ctx.call(CHAPTERS, rev=rev, limit=limit or None)
    if limit == 0:
        answer = answer.model_copy(update={"items": []})
    if as_json:
        emit_answer(answer)
        return
    found = answer.to_json()["items"]
    if not found:
        echo("No chapters yet (narr chapter FILE records one).")
        return
    with paged(ctx):
        for c in found:
            told = c["events_on_line"]
            size = f"{told} event{'' if told == 1 else 's'}"
            if told != c["events"]:
                size += f" of {c['events']}"
            line = f"  [from {c['line']}]" if c["line"] else ""
            echo(f"{c['number']:>4}  {short(c['commit'])} {one_line(c['heading'])}  ({size}, "
                 f"{c['sentences']} sentences){line}")
            echo(f"      {one_line(c['summary'], 100)}")


def _log_lines(entries: list[dict[str, Any]]) -> None:
    for e in entries:
        counts = []
        if e["changes"]:
            counts.append(f"{e['changes']} change{'s' if e['changes'] != 1 else ''}")
        if e["edits"]:
            counts.append(f"{e['edits']} hand edit{'s' if e['edits'] != 1 else ''}")
        when = f" [{e['timestamp']}]" if e.get("timestamp") else ""
        tail = f"  ({', '.join(counts)})" if counts else ""
        mark = {"genesis": "  (genesis)", "commit": "  (a plain git commit, not an event)",
                "chapter": "  (chapter)"}.get(e["kind"], "")
        echo(f"{short(e['commit'])} {one_line(e['content'])}"
                   f"{when}{tail}{mark}")


@click.command("show")
@click.argument("rev", required=False, default="HEAD", shell_complete=complete_rev)
@no_pager_option
@json_option
@pass_context
def show_cmd(ctx: Context, rev: str, as_json: bool) -> None:
    """One event's record: REV is a git revision (HEAD~2, a hash, a branch) or an event id;
    chapter:N is chapter N's own record (its text, scenes and summary, then its events).

    \b
    Examples:
      narr show
      narr show HEAD~2
      narr show chapter:3
    """
    found = answered(ctx, row("reads", "show"), as_json, rev=rev)
    if found is None:
        return
    with paged(ctx):
        _show_lines(found.to_json())


def _show_lines(data: dict[str, Any]) -> None:
    if data.get("kind") == "chapter" and isinstance(data.get("chapter"), dict):
        _chapter_lines(data)
        return
    echo(f"commit {data['commit']}")
    if data.get("id"):
        echo(f"event  {data['id']} ({data['kind']})")
        echo(f"parent {data.get('parent')}")
        echo(f"at     {local_time(data.get('created_at'))}")
    echo("")
    for line in data["content"].splitlines() or [""]:
        echo(f"    {line}")
    echo("")
    for line in record_lines(data, full=True):
        echo(line)
    if data.get("narrative_text"):
        echo("")
        echo(data["narrative_text"])


def _chapter_lines(data: dict[str, Any]) -> None:
    """A chapter's record: where it stands, its summary, its scenes and its events."""
    from narrative.engine import chapters
    from narrative.errors import NarrError

    chapter = data["chapter"]
    echo(f"commit  {data['commit']}")
    echo(f"chapter {data['id']} (chapter {chapter['number']})")
    echo(f"at      {local_time(data.get('created_at'))}")
    echo("")
    echo(f"    {data['content']}")
    echo("")
    if data.get("timestamp"):
        echo(f"  story time: {data['timestamp']}")
    echo(f"  summary: {chapter['summary']}")
    for line in record_lines({**data, "kind": "chapter"}, full=True):
        echo(line)
    ctx = click.get_current_context().find_object(Context)
    told: list[dict[str, Any]] = []
    if ctx is not None:
        try:
            told = chapters.show(ctx.world, int(chapter["number"]))["told"]
        except NarrError:
            told = []
    by_scene: dict[int, list[dict[str, Any]]] = {}
    for e in told:
        by_scene.setdefault(e["scene"], []).append(e)
    for scene in chapter["scenes"]:
        title = f": {scene['title']}" if scene.get("title") else ""
        echo(f"scene {scene['number']}{title} (sentences {scene['first_sentence']}-"
             f"{scene['first_sentence'] + scene['sentences'] - 1})")
        for e in by_scene.get(scene["number"], []):
            echo(f"  {short(e['commit'])} {e['sentence']:>4}. {one_line(e['content'], 80)}  "
                 f"({e['changes']} change{'' if e['changes'] == 1 else 's'})")
    echo(f"{chapter['sentences']} sentences, {chapter['events']} events recorded")


@click.command("get")
@click.argument("node", metavar="NODE", shell_complete=complete_node)
@click.argument("field", required=False, shell_complete=complete_field)
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="The node as it was at a revision or event.")
@json_option
@pass_context
def get_cmd(ctx: Context, node: str, field: str | None, at: str | None, as_json: bool) -> None:
    """A node (or one FIELD, dotted or a JSON pointer) as the world holds it now or --at REV.

    NODE is the node's id, name or alias.

    \b
    Examples:
      narr get 林远
      narr get "Lin Yuan" state.location --at HEAD~2
    """
    if field is None:  # the get_node row's answer, its node printed whole as text
        found = answered(ctx, row("reads", "get_node"), as_json, node=node, at=at)
        if found is not None:
            echo(json.dumps(found.to_json()["node"], indent=2, ensure_ascii=False, sort_keys=True))
        return
    from narrative.operations.reads import GET_VALUE

    found = answered(ctx, GET_VALUE, as_json, node=node, field=field, at=at)
    if found is None:
        return
    if not isinstance(found.value, str):
        echo(json.dumps(found.value, indent=2, ensure_ascii=False, sort_keys=True))
    else:
        echo(found.value)


@click.command("nodes")
@click.option("--layer", type=click.Choice(["character", "item", "ambient", "background"]),
              help="Only the nodes of this layer.")
@page_options
@json_option
@pass_context
def nodes_cmd(ctx: Context, layer: str | None, limit: int | None, cursor: str | None,
              as_json: bool) -> None:
    """List the world's nodes (hand edits included).

    \b
    Example:
      narr nodes --layer character
    """
    found = answered(ctx, row("reads", "list_nodes"), as_json, layer=layer, limit=limit,
                     cursor=cursor)
    if found is None:
        return
    rows = found.to_json()["items"]
    width = max((len(r["id"]) for r in rows), default=2)
    for r in rows:
        flag = f"  [{r['edited']}]" if r["edited"] else ""
        life = "" if r["lifecycle"] == "permanent" else f" ({r['lifecycle']})"
        echo(f"{r['id']:<{width}}  {r['layer']:<10}  {r['kind'] or '-':<12}  {r['name']}"
                   f"{life}{flag}")
    if any(r["edited"] == "invalid" for r in rows):
        warn("some node files are not valid nodes (marked [invalid]): narr status says why")
    next_page(found)


@click.command("status")
@json_option
@pass_context
def status_cmd(ctx: Context, as_json: bool) -> None:
    """Hand edits not yet recorded by an event, field by field, and anything in the way.

    \b
    Example:
      narr status
    """
    if as_json:
        found = ctx.call(row("reads", "status"))
        for message in found.to_json()["warnings"]:
            warn(message)
        emit_answer(found)
        return
    from narrative.engine.status_data import status_data

    # The text is made of the answer's data, no model (pydantic is most of a cold status),
    # and names HEAD by its line in the log: its record is not read.
    data = status_data(ctx.world, head_record=False)
    if data.needs_wording:
        import narrative.operations  # noqa: F401  (the table words the warnings' steps)
    st = data.json
    for message in data.cli_warnings:
        warn(message)
    head = data.line
    where = f"On branch {st['branch']}" if st["branch"] else "HEAD is detached"
    echo(f"{where}, at {short(head['commit'])} {one_line(head['content'])}"
               if head else where)
    if st["story_time"]:
        since = st["story_time"]["since"]
        tail = "" if head and since["commit"] == head["commit"] else (
            f" (since {short(since['commit'])} {one_line(since['content'])})")
        echo(f"Story time: {st['story_time']['value']}{tail}")
    if st["edits"]:
        echo("\n" + paint("Hand edits (the next event records them):", "edit"))
        for ch in st["edits"]:
            echo(f"  {change_line(ch)}")
    if st["reformat"]:
        echo("\nThe next event rewrites these files in narr's canonical layout:")
        for path in st["reformat"]:
            echo(f"  {path}")
    if st["problems"]:
        echo("\nProblems (the next event refuses until they are fixed):")
        for p in st["problems"]:
            echo(f"  {p}")
    if st["outside_world"]:
        echo("\nChanged outside world/ (not story state; narr leaves them to git):")
        for p in st["outside_world"]:
            echo(f"  {p}")
    if st["failed_events"]:
        echo("\nFailed events kept (narr failed lists them; narr event --retry runs the newest):")
        for f in st["failed_events"]:
            echo(f"  {local_time(f['saved_at'])}  {f['content']!r}: {f['error']}")
    if not (st["edits"] or st["problems"] or st["outside_world"] or st["failed_events"]):
        echo("Nothing to record: the world is as the last event left it.")


COMMANDS = [log_cmd, show_cmd, get_cmd, nodes_cmd, status_cmd]
