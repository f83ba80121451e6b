"""Asking the story: ``why``, ``history``, ``search``, ``graph``, ``brief``."""

from __future__ import annotations

from typing import Any

import click

from narrative.cli.completion import complete_field, complete_node, complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import ARROW, emit_answer, emit_json, json_option, one_line, short, value_text
from narrative.cli.terminal import echo, no_pager_option, paged

_FIELD_ABSENT = "(absent)"


def _event_text(ev: dict[str, Any] | None) -> str:
    if not ev:
        return "(none)"
    when = f" [{ev['timestamp']}]" if ev.get("timestamp") else ""
    return f"{short(ev['commit'])} {one_line(ev['content'])}{when}"


def _old_new(d: dict[str, Any]) -> str:
    old = value_text(d["old_value"]) if "old_value" in d else _FIELD_ABSENT
    new = value_text(d["new_value"]) if "new_value" in d else _FIELD_ABSENT
    return f"{old} {ARROW} {new}"


@click.command("why")
@click.argument("node", metavar="NODE", shell_complete=complete_node)
@click.argument("field", shell_complete=complete_field)
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="Ask about the story as it stood at a revision or event.")
@json_option
@pass_context
def why_cmd(ctx: Context, node: str, field: str, at: str | None, as_json: bool) -> None:
    """Which event (or hand edit) set a field's value, and the events it followed from.

    \b
    Example:
      narr why 林远 state.mood
    """
    from narrative.engine.why import why

    d = why(ctx.world, ctx.node(node, must_exist=False), field, at).to_json()
    if as_json:
        emit_json(d, "why")
        return
    value = value_text(d["value"], None) if "value" in d else _FIELD_ABSENT
    echo(f"{d['node']} {d['field']} = {value}")
    if d.get("ended"):
        echo(f"  as it stood when it ended in {_event_text(d['ended']['event'])} "
                   f"({d['ended']['reason']})")
    if d["uncommitted"] is not None:
        was = d["uncommitted"].get("committed_value", ...)
        echo("  from a hand edit not yet recorded (the next event records it); "
                   f"the last event left {value_text(was) if was is not ... else _FIELD_ABSENT}")
    change = d.get("change")
    if change is not None:
        what = "a hand edit, recorded by event" if change["by"] == "edit" else "event"
        echo(f"  set by {what} {_event_text(d['event'])}")
        if d["merged_from"]:
            echo(f"  which brought it from {_event_text(d['merged_from'])}")
        if d.get("chapter"):
            echo(f"  {told_text(d['chapter'])}")
        if "old_value" in d or "new_value" in d:
            echo(f"  {_old_new(d)}")
        if change["field"] != d["field"]:
            echo(f"  (its change: {change['target']} {change['field'] or '(whole node)'}: "
                       f"{_old_new(change)})")
    elif d["source"] == "genesis" or (d["uncommitted"] is not None and d["event"]):
        echo(f"  as the world began: {_event_text(d['event'])}")
    elif d["uncommitted"] is None:
        echo("  no recorded change explains it (a plain git commit changed the world?)")
    if d["ancestry"]:
        echo("  follows from, newest first:")
        for a in d["ancestry"]:
            links = ", ".join(
                f"{'declared cause' if x['kind'] == 'declared' else x['target'] + ' ' + x['field']}"
                f" {ARROW} {short(x['commit'])}" for x in a["led_to"])
            echo(f"    {_event_text(a)}  ({links})")
    elif change is not None:
        echo("  it read nothing an earlier event wrote")


def _history_line(ch: dict[str, Any]) -> str:
    hand = "hand edit: " if ch["by"] == "edit" else ""
    what = ch["what"]
    if what == "created":
        return f"{hand}created"
    if what == "ended":
        return f"{hand}ended ({ch['reason']})"
    if what == "relation":
        arrow = f"{ch['type']} {ARROW} {ch['other']}" if ch["direction"] == "out" else (
            f"{ch['other']} {ch['type']} {ARROW} it")
        tail = f": {_old_new(ch)}" if ch["change"] == "changed" else ""
        return f"{hand}relation {ch['change']}: {arrow}{tail}"
    return f"{hand}{ch['field']}: {_old_new(ch)}"


@click.command("history")
@click.argument("node", metavar="NODE", shell_complete=complete_node)
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="The story line ending at a revision or event.")
@no_pager_option
@json_option
@pass_context
def history_cmd(ctx: Context, node: str, at: str | None, as_json: bool) -> None:
    """Everything that happened to a node, event by event, oldest first.

    \b
    Examples:
      narr history 林远
      narr history temple-bell --at HEAD~3
    """
    from narrative.engine.history_of import history_of

    d = history_of(ctx.world, ctx.node(node, must_exist=False), at).to_json()
    if as_json:
        emit_json(d, "history")
        return
    with paged(ctx):
        _history_lines(d)


def _history_lines(d: dict[str, Any]) -> None:
    if d["at_genesis"]:
        echo(f"{d['node']}: in the world from genesis")
    for ev in d["events"]:
        echo(_event_text(ev) + (f"  ({told_text(ev['chapter'])})" if ev.get("chapter") else ""))
        for ch in ev["changes"]:
            echo(f"  {_history_line(ch)}")
        if not ev["changes"] and ev["mentioned"]:
            echo("  named, not changed")
    if not d["exists"]:
        ended = d.get("ended")
        echo(f"{d['node']} is no longer in the world" + (
            f": it ended in {_event_text(ended['event'])} ({ended['reason']})" if ended else ""))


def told_text(place: dict[str, Any]) -> str:
    """``sentence 12 of Chapter 3: The Ferry``: where an event was told."""
    return f"sentence {place['sentence']} of {place['heading']}"


@click.command("search")
@click.argument("q", metavar="QUERY")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="Show at most N results.")
@json_option
@pass_context
def search_cmd(ctx: Context, q: str, limit: int, as_json: bool) -> None:
    """Nodes and events whose text holds every word of QUERY (English or Chinese), best first.

    \b
    Examples:
      narr search 黑戒
      narr search ferry --limit 5
    """
    from narrative.engine.search import search

    d = search(ctx.world, q, limit).to_json()
    if as_json:
        emit_json(d, "search")
        return
    if not d["hits"]:
        echo(f"nothing matches {q!r}")
    for h in d["hits"]:
        if h["kind"] == "node":
            mark = "  [hand-edited]" if h["edited"] else ""
            kind = f"/{h['node_kind']}" if h["node_kind"] else ""
            echo(f"node   {h['id']}  {h['name']} ({h['layer']}{kind}){mark}")
        else:
            echo(f"event  {_event_text(h)}" + (f"  [from {h['line']}]" if h.get("line") else ""))


_FORMAT = click.option("--format", "format_", type=click.Choice(["dot", "mermaid", "graphml", "json"]),
                       default="dot", show_default=True, help="Output format.")
_DEPTH = click.option("--depth", type=click.IntRange(min=0), default=1, show_default=True,
                      help="With --around: how many steps away to keep.")


@click.group("graph", invoke_without_command=True)
@click.option("--format", "format_", type=click.Choice(["dot", "mermaid", "graphml", "json"]),
              help="Without a subcommand: the world graph in this format (as narr graph world).")
@click.option("--around", metavar="NODE", shell_complete=complete_node,
              help="Without a subcommand: the world graph near this node.")
@click.option("--depth", type=click.IntRange(min=0), default=None,
              help="With --around: how many steps away to keep (1).")
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="Without a subcommand: the world graph as it stood then.")
@json_option
@click.pass_context
def graph_group(click_ctx: click.Context, format_: str | None, around: str | None,
                depth: int | None, at: str | None, as_json: bool) -> None:
    """Export the world graph or the event graph (dot, mermaid, graphml, json), or connect two nodes.

    Alone, it counts what each graph holds; with --format, --around or --at it is
    the world graph (narr graph --format dot is narr graph world --format dot).

    \b
    Examples:
      narr graph world --format dot | dot -Tsvg > world.svg
      narr graph --format mermaid --around 林远
    """
    world_options = format_ is not None or around is not None or depth is not None or at is not None
    if click_ctx.invoked_subcommand is not None:
        if world_options:
            raise click.UsageError(f"put --format, --around, --depth and --at after "
                                   f"'{click_ctx.invoked_subcommand}': they are its options")
        return
    ctx = click_ctx.find_object(Context)
    assert ctx is not None
    if world_options:
        _emit_graph(ctx, "WORLD_GRAPH", as_json, format=format_, around=around, depth=depth, at=at)
        return
    from narrative.operations.graphs import GRAPH_SIZES

    found = ctx.call(GRAPH_SIZES)
    if as_json:
        emit_answer(found)
        return
    d = found.to_json()
    echo(f"world: {d['world']['nodes']} nodes, {d['world']['edges']} edges (relations and references)")
    echo(f"events: {d['events']['nodes']} commits on the story line, "
               f"{d['events']['edges']} causal edges")


def _emit_graph(ctx: Context, row: str, as_json: bool, **arguments: Any) -> None:
    """The graph the row of that name in :mod:`narrative.operations.graphs` exports."""
    from narrative.operations import graphs

    found = ctx.call(getattr(graphs, row), **arguments)
    if as_json:
        emit_answer(found)
    else:
        echo(found.output, nl=False)


@graph_group.command("world")
@_FORMAT
@click.option("--around", metavar="NODE", shell_complete=complete_node, help="Only the nodes near this one.")
@_DEPTH
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="The world as it stood at a revision or event.")
@json_option
@pass_context
def graph_world_cmd(ctx: Context, format_: str, around: str | None, depth: int, at: str | None,
                    as_json: bool) -> None:
    """The world graph at HEAD (or --at an earlier event): nodes and their relations.

    \b
    Example:
      narr graph world --around 林远 --depth 2 --format mermaid
    """
    _emit_graph(ctx, "WORLD_GRAPH", as_json, format=format_, around=around, depth=depth, at=at)


@graph_group.command("events")
@_FORMAT
@click.option("--around", metavar="REV", help="Only the events causally near this one.")
@_DEPTH
@json_option
@pass_context
def graph_events_cmd(ctx: Context, format_: str, around: str | None, depth: int,
                     as_json: bool) -> None:
    """The event graph of the story line: which event depends on which.

    \b
    Example:
      narr graph events --format mermaid
    """
    _emit_graph(ctx, "EVENT_GRAPH", as_json, format=format_, around=around, depth=depth)


@graph_group.command("connect")
@click.argument("source", shell_complete=complete_node)
@click.argument("target", shell_complete=complete_node)
@json_option
@pass_context
def graph_connect_cmd(ctx: Context, source: str, target: str, as_json: bool) -> None:
    """The shortest chains of relations between two nodes, either way round.

    \b
    Example:
      narr graph connect lin-yuan elder-mo
    """
    from narrative.operations.graphs import CONNECT

    found = ctx.call(CONNECT, source=source, target=target)
    if as_json:
        emit_answer(found)
        return
    d = found.to_json()
    if not d["paths"]:
        echo(f"{source} and {target} are not connected")
        return
    for path in d["paths"]:
        parts = [path[0]["from"]] if path else [source]
        for hop in path:
            rels = " | ".join(_arrows(hop["relations"]))
            parts += [rels, hop["to"]]
        echo(" ".join(parts))


def _arrows(relations: list[dict[str, Any]]) -> list[str]:
    """A hop's relations as arrows, one both ways (``enemy-of`` from each side) as ``<-t->``."""
    ways: dict[str, set[str]] = {}
    for r in relations:
        ways.setdefault(r["type"], set()).add(r["direction"])
    return [f"<-{t}->" if len(d) > 1 else f"-{t}->" if "forward" in d else f"<-{t}-"
            for t, d in ways.items()]


@click.command("brief")
@click.argument("goal", required=False)
@click.option("--focus", "focus", multiple=True, metavar="NODE", shell_complete=complete_node,
              help="A node to centre on (repeatable).")
@click.option("--budget", type=click.IntRange(min=1), default=4000, show_default=True,
              help="At most this many characters of items.")
@click.option("--pov", metavar="NODE", shell_complete=complete_node,
              help="Only what this character can know.")
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="The pack as the story stood at a revision or event (no hand edits).")
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text",
              show_default=True, help="Plain text, Markdown to read or hand a model, or JSON "
                                      "(the same as --json).")
@json_option
@pass_context
def brief_cmd(ctx: Context, goal: str | None, focus: tuple[str, ...], budget: int, pov: str | None,
              at: str | None, fmt: str, as_json: bool) -> None:
    """What to have in hand for the next event: health, focus, continuity, events, each with its reason.

    \b
    Examples:
      narr brief
      narr brief "Su Qing confronts Lin Yuan" --format md > context.md
      narr brief --focus 林远 --pov su-qing --budget 2000
      narr brief --at HEAD~3
    """
    from narrative.engine.brief import brief, head_text

    focus = tuple(ctx.node(f, context="--focus") for f in focus)
    pov = ctx.node(pov, context="--pov") if pov is not None else None
    result = brief(ctx.world, goal, list(focus), budget, pov, at=at)
    if as_json or fmt == "json":
        emit_json(result.to_json(), "brief")
        return
    if fmt == "md":
        echo(result.to_markdown(), nl=False)
        return
    from narrative.engine.brief import section_label, words_for

    d = result.to_json()
    said = words_for(d["language"])
    where = said["at"].format(head=head_text(d["head"], d["story_time"], d["language"]))
    if at is not None:
        where += said["as_of"].format(at=at)
    echo(where + (said["pov"].format(pov=d["pov"]) if d["pov"] else ""))
    section = None
    colon = "：" if said is words_for("zh") else ":"
    for item in d["items"]:
        if item["section"] != section:
            section = item["section"]
            echo(f"\n{section_label(section, d['language'])}{colon}")
        echo(f"  {item['text']}")
        echo(f"    ({item['reason']})")
        if item.get("fix"):
            echo(f"    {said['fix']}{colon}{' ' if colon == ':' else ''}{item['fix']}")
    tail = said["left_out"].format(n=d["dropped"]) if d["dropped"] else ""
    echo("\n" + said["size"].format(used=d["used"], budget=d["budget"]) + tail)


@click.command("threads")
@click.option("--all", "all_", is_flag=True, help="Also the resolved threads.")
@click.option("--at", "at", metavar="REV", help="The threads as they stood at a revision or event.")
@json_option
@pass_context
def threads_cmd(ctx: Context, all_: bool, at: str | None, as_json: bool) -> None:
    """Open threads (nodes of kind thread or hook), stalest first; secrets nobody has learned.

    \b
    Examples:
      narr threads
      narr threads --all --at HEAD~3
    """
    from narrative.engine.threads import moved_text, threads

    result = threads(ctx.world, at, include_resolved=all_)
    if as_json:
        emit_json(result.to_json(), "threads")
        return
    names = {t.id: t.name for t in result.threads}
    if result.threads:
        echo("Threads, stalest first:")
    else:
        echo("No open threads." if not result.resolved_left_out else "No open threads left.")
    for t in result.threads:
        edited = "  [hand-edited]" if t.edited else ""
        echo(f"  {t.id}  {t.name}  {t.status}: {moved_text(t)}{edited}")
        if t.last_moved is not None:
            echo(f"    last moved by {_event_text(t.last_moved.to_json())}")
        if t.payoff:
            echo(f"    payoff: {t.payoff}")
        if t.waiting_on:
            echo("    waits for: " + ", ".join(
                f"{d} ({names[d]})" if d in names else d for d in t.waiting_on))
    if result.resolved_left_out:
        n = result.resolved_left_out
        echo(f"({n} resolved thread{'s' if n > 1 else ''} left out: --all shows "
                   f"{'them' if n > 1 else 'it'})")
    if result.secrets:
        echo("\nSecrets nobody has learned:")
        for sec in result.secrets:
            echo(f"  {sec['id']}  {sec['name']}")


COMMANDS = [why_cmd, history_cmd, search_cmd, graph_group, brief_cmd, threads_cmd]
