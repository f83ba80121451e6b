"""Merging story lines: ``narr merge``, ``narr conflicts``, ``narr resolve``."""

from __future__ import annotations

from typing import Any

import click

from narrative.cli.completion import complete_branch, complete_field, complete_node
from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_answer, json_option, short, warn
from narrative.cli.rows import answered
from narrative.cli.terminal import echo


@click.command("merge")
@click.argument("branch", required=False, shell_complete=complete_branch)
@click.option("--continue", "go_on", is_flag=True,
              help="Commit the stopped merge once every conflict is resolved.")
@click.option("--abort", is_flag=True, help="Forget the stopped merge (the world never changed).")
@json_option
@pass_context
def merge_cmd(ctx: Context, branch: str | None, go_on: bool, abort: bool, as_json: bool) -> None:
    """Merge story branch BRANCH into the current one, node by node and field by field.

    BRANCH may be a remote's branch as last fetched (origin/main) or any
    revision (a commit, an event id).

    Changes to different fields (and different relation edges) merge cleanly; the
    same field changed to different values is a conflict: the merge stops with
    nothing committed (narr conflicts, narr resolve, narr merge --continue).
    Uncommitted hand edits stay when the merge leaves their nodes alone; edits
    to nodes it changes are refused, naming the nodes.

    \b
    Examples:
      narr merge what-if
      narr merge --continue
    """
    from narrative.operations import lines

    if sum((branch is not None, go_on, abort)) != 1:
        raise click.UsageError("give a BRANCH, --continue or --abort")
    if abort:
        aborted = answered(ctx, lines.ABORT_MERGE, as_json)
        if aborted is not None:
            echo(f"Merge of {aborted.branch} aborted; nothing was changed")
        return
    merged = (answered(ctx, lines.CONTINUE_MERGE, as_json) if go_on else
              answered(ctx, lines.MERGE, as_json, branch=branch))
    if merged is None:
        return
    result = merged.to_json()
    for note in result["warnings"]:
        warn(note)
    kept = (f"  your hand edits to {', '.join(result['kept_edits'])} stay uncommitted "
            "(narr status)") if result["kept_edits"] else ""
    if result["fast_forward"]:
        echo(f"Fast-forward to {result['branch']}, at {short(result['commit'])}")
        if kept:
            echo(kept)
        return
    diffusions = result["record"]["diffusions"]
    sides = {side: sum(1 for d in diffusions if d.get("side") == side)
             for side in ("theirs", "resolved")}
    echo(f"Merged {result['branch']} as {short(result['commit'])}: "
               f"{sides['theirs']} change(s) from {result['branch']}, "
               f"{sides['resolved']} resolved")
    for j in result["joined"]:
        echo(f"  {j['theirs']} became {j['ours']}: both lines created {j['name']!r}")
    if kept:
        echo(kept)


@click.command("conflicts")
@json_option
@pass_context
def conflicts_cmd(ctx: Context, as_json: bool) -> None:
    """List the conflicts of the merge in progress, with the resolutions chosen so far.

    \b
    Example:
      narr conflicts
    """
    from narrative.engine.merge import conflict_line
    from narrative.operations.lines import CONFLICTS

    found = answered(ctx, CONFLICTS, as_json)
    if found is None:
        return
    data = found.to_json()
    echo(f"Merging {data['branch']}: {data['unresolved']} of {len(data['conflicts'])} "
               "conflict(s) unresolved")
    for c in data["conflicts"]:
        mark = "resolved" if c["resolved"] else "open    "
        echo(f"  {mark} {conflict_line(c)}")


@click.command("resolve")
@click.argument("node", shell_complete=complete_node)
@click.argument("field", shell_complete=complete_field)
@click.option("--ours", "take", flag_value="ours", help="Keep this story line's value.")
@click.option("--theirs", "take", flag_value="theirs", help="Take the merged branch's value.")
@click.option("--value", "value", metavar="JSON", help="Set this value (JSON; a bare word is a string).")
@json_option
@pass_context
def resolve_cmd(ctx: Context, node: str, field: str, take: str | None, value: str | None,
                as_json: bool) -> None:
    """Resolve the conflict on NODE's FIELD (state.mood or /state/mood; '' is the whole node).

    \b
    Examples:
      narr resolve lin-yuan state.mood --theirs
      narr resolve lin-yuan /state/mood --value '"tired but elated"'
    """
    from narrative.engine.merge import parse_value
    from narrative.operations.lines import RESOLVE

    if (take is None) == (value is None):
        raise click.UsageError("give one of --ours, --theirs or --value JSON")
    wr = ctx.world
    arguments: dict[str, Any] = {"node": node, "field": field}
    if take is not None:
        arguments["take"] = take
    else:
        arguments["value"] = parse_value(value or "")
    resolved = RESOLVE.answer_to(wr, RESOLVE.parse(arguments))
    if as_json:
        emit_answer(resolved)
        return
    left = resolved.unresolved
    echo(f"Resolved {node} {field or '(whole node)'}; "
               + (f"{left} conflict(s) left" if left else "narr merge --continue commits the merge"))


COMMANDS = [merge_cmd, conflicts_cmd, resolve_cmd]
