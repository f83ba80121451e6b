"""Time travel: ``reset``, ``chains``, ``replay``, ``revert``, ``reflog``, ``edits``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from narrative.cli.completion import complete_chain, complete_node, complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import (
    change_line,
    emit_answer,
    group_listing,
    json_option,
    local_time,
    one_line,
    short,
    short_event,
    warn,
)
from narrative.cli.rows import answered, row
from narrative.cli.terminal import echo, progress_bar

if TYPE_CHECKING:
    from narrative.store import WorldRepo


@click.command("reset")
@click.argument("rev", required=False, shell_complete=complete_rev)
@click.option("--before", "before", metavar="NODE", shell_complete=complete_node,
              help="Go back to just before the event that created NODE.")
@click.option("--chapter", "chapter", type=click.IntRange(min=1), metavar="N",
              help="Go back to just before chapter N began (its events kept as a chain).")
@click.option("--keep-edits", is_flag=True,
              help="Carry uncommitted hand edits over (yours win any collision) instead of "
                   "setting them aside.")
@click.option("--hard", is_flag=True,
              help="The world exactly as committed at REV: restore no edits, set all aside.")
@json_option
@pass_context
def reset_cmd(ctx: Context, rev: str | None, before: str | None, chapter: int | None,
              keep_edits: bool, hard: bool, as_json: bool) -> None:
    """Move the story back (or anywhere) to REV: a git revision (HEAD~3) or an event id.

    The world becomes what it was when the story stood at REV, including hand
    edits the next event had picked up. Nothing is lost: the undone events stay
    under refs/narr/abandoned/ (narr chains), and uncommitted hand edits are set
    aside (narr edits).

    \b
    Examples:
      narr reset HEAD~2
      narr reset --before black-ring
      narr reset --chapter 3
    """
    if before is not None:  # named as the command line names it in an error
        before = ctx.node(before, must_exist=False, context="--before")
    found = answered(ctx, row("travel", "reset"), as_json, rev=rev, before=before,
                     chapter=chapter, keep_edits=keep_edits, hard=hard)
    if found is None:
        return
    result = found.to_json()
    for note in result["warnings"]:
        warn(note)
    ev = result["event"]
    echo(f"The story now stands at {short(result['to'])} {one_line(ev['content'])}")
    if result["undone"]:
        n = len(result["undone"])
        echo(f"  undid {n} event{'s' if n != 1 else ''}, newest first:")
        for u in result["undone"][:10]:
            echo(f"    {short(u['commit'])} {one_line(u['content'])}")
        if n > 10:
            echo(f"    ... and {n - 10} more")
    if result["restored_edits"]:
        echo("  hand edits back in the working tree (the next event records them):")
        for ch in result["restored_edits"]:
            echo(f"    {change_line(ch)}")
    carried = len(result["carried_edits"]) - sum(1 for c in result["collisions"] if c.get("note"))
    if carried:
        echo(f"  carried over {carried} uncommitted hand edit(s)")
    for c in result["collisions"]:
        where = f"{c['target']} {c['field'] or '(whole node)'}"
        if c.get("note"):
            echo(f"  not carried over ({c['note']} there): {where}")
        else:
            echo(f"  collision, your value kept: {where}")
    if result["abandoned"]:
        kept = chain_label(result["abandoned"])
        echo(f"  the undone chain is kept as {kept} (narr chains; narr replay {kept})")
    elif result["undone"]:
        echo("  the undone events were already kept in an abandoned chain (narr chains)")
    if result["set_aside"]:
        echo("  your uncommitted hand edits were set aside: narr edits; narr edits restore 1")
    for path in result["kept_paths"]:
        warn(f"{path} changed while narr was working; your version is kept")


def chain_label(ref: str) -> str:
    """The readable name in an abandoned chain's ref (``.../7-rain-stops-4f2a`` -> ``rain-stops-4f2a``)."""
    tail = ref.rsplit("/", 1)[-1]
    number, _, label = tail.partition("-")
    return label if number.isdigit() and label else tail


@click.group("chains", invoke_without_command=True)
@json_option
@click.pass_context
def chains_cmd(click_ctx: click.Context, as_json: bool) -> None:
    """Abandoned chains of events (kept for good), newest first, by number and name.

    A chain keeps its number and name for good; narr replay and narr chains drop
    take either. Chains already replayed are marked so (replayed 4 of 25: only
    their first events). Chains another writer
    pushed come after yours, as origin/N (origin/rain-stops-4f2a).

    \b
    Example:
      narr chains
    """
    chains = row("travel", "chains")

    def listing(wr: WorldRepo) -> Any:
        return chains.answer_to(wr, chains.parse({}))

    for c in group_listing(click_ctx, as_json, listing, "No abandoned chains.", "chains"):
        mark = ""
        if c["replayed"]:
            part = c["length"] > 0 and c["replayed_events"] < c["length"]
            mark = f"  (replayed {c['replayed_events']} of {c['length']})" if part else "  (replayed)"
        n = f"{c['remote']}/{c['n']}" if c["remote"] else str(c["n"])
        if c["length"] == 0:
            echo(f"{n:>3}  {c['name']}  (back on the story line){mark}")
            continue
        first = f"{short_event(c['first']['id'])} {one_line(c['first']['content'])}"
        echo(f"{n:>3}  {c['name']}  {c['length']} event(s), abandoned "
                   f"{local_time(c['abandoned_at'])}{mark}")
        echo(f"       first: {first}")
        if c["length"] > 1:
            echo(f"       last:  {short_event(c['last']['id'])} "
                       f"{one_line(c['last']['content'])}")


@chains_cmd.command("drop")
@click.argument("which", shell_complete=complete_chain)
@click.option("--force", is_flag=True,
              help="Drop it even if some of its events are kept by no other ref (they are lost).")
@json_option
@pass_context
def chains_drop_cmd(ctx: Context, which: str, force: bool, as_json: bool) -> None:
    """Delete abandoned chain WHICH (number or name); refused while it alone keeps events.

    A chain of yours that went up with narr push is deleted there by your next push.

    \b
    Examples:
      narr chains drop rain-stops-5004
      narr chains drop 2 --force
    """
    from narrative.operations.travel import DROP_CHAIN

    result = answered(ctx, DROP_CHAIN, as_json, which=which, force=force)
    if result is None:
        return
    lost = len(result.lost)
    echo(f"Dropped chain {result.dropped}"
               + (f"; {lost} event{'s' if lost != 1 else ''} lost with it" if lost else ""))


SUMMARY_OVER = 5
"""A replay of more events than this prints a summary instead of one line per event."""


@click.command("replay")
@click.argument("chain", shell_complete=complete_chain)
@click.option("--to", "to", metavar="EVENT",
              help="Replay the chain only up to EVENT (an event id, its start or last digits).")
@click.option("--reuse", is_flag=True,
              help="Re-apply the recorded changes instead of running the diffuser again.")
@click.option("--diffuser", help="Diffuser to run the events through (default: the world's).")
@click.option("--again", is_flag=True,
              help="Replay every event, even those the story holds an earlier replay of.")
@json_option
@pass_context
def replay_cmd(ctx: Context, chain: str, to: str | None, reuse: bool, diffuser: str | None,
               again: bool, as_json: bool) -> None:
    """Re-run an abandoned CHAIN (number or name from narr chains, origin/N, or tip) on top of HEAD.

    \b
    Examples:
      narr replay rain-stops-5004 --reuse
      narr replay 2 --to ad311d30
    """
    from narrative.engine.progress import telling

    with progress_bar("Replaying", as_json=as_json) as progress, telling(progress):
        result = ctx.call(row("travel", "replay"), chain=chain, reuse=reuse, diffuser=diffuser,
                          again=again, to=to)
    data = result.to_json()
    if as_json:
        emit_answer(result)
    else:
        for note in data["warnings"]:
            warn(note)
        for line in replay_lines(data):
            echo(line)
    if result.error is not None:
        raise result.error


def replay_lines(data: dict[str, Any]) -> list[str]:
    """The text of a replay: one line per event when few, else what came out different."""
    n = len(data["events"])
    if data["fast_forward"]:
        return [f"Fast-forwarded: the story stands at {short(data['head'])} again; "
                f"{n} event{'s' if n != 1 else ''} came back unchanged"]
    differs = {d["id"] for d in data["different"]}
    out = []
    if n <= SUMMARY_OVER:
        for e in data["events"]:
            mark = "  (changes differ from the original)" if e["id"] in differs else ""
            out.append(f"[{short(e['commit'])}] {one_line(e['content'])}{mark}")
    out.append(f"Replayed {n} of {data['total']} event(s) from chain {data['chain']}.")
    if n > SUMMARY_OVER:
        if data["different"]:
            out.append(f"{len(data['different'])} came out different from the original:")
            for d in data["different"][:10]:
                out.append(f"  {short(d['commit'])} {one_line(d['content'])}  "
                           f"({d['original_changes']} change(s) then, {d['changes']} now)")
            if len(data["different"]) > 10:
                out.append(f"  ... and {len(data['different']) - 10} more")
        else:
            out.append("Every event made the same changes as the original.")
    if data["skipped"]:
        out.append("Not replayed: commits made with plain git, not events (still in the chain; "
                   "git cherry-pick brings one back):")
        out += [f"  {short(c['commit'])} {c['subject']}" for c in data["skipped"]]
    return out


@click.command("revert")
@click.argument("rev", shell_complete=complete_rev)
@click.option("--message", "-m", "content", help="The new event's content (default: 'Revert: ...').")
@json_option
@pass_context
def revert_cmd(ctx: Context, rev: str, content: str | None, as_json: bool) -> None:
    """Add a new event that undoes the changes of event REV, keeping history.

    \b
    Example:
      narr revert HEAD~1
    """
    from narrative.cli.output import record_lines

    result = answered(ctx, row("travel", "revert"), as_json, rev=rev, content=content)
    if result is None:
        return
    rec = result.to_json()
    echo(f"[{ctx.world.branch()} {short(result.commit)}] {one_line(rec['content'])}")
    for line in record_lines(rec):
        echo(line)
    for note in result.warnings:
        warn(note)


@click.command("reflog")
@click.option("-n", "limit", type=click.IntRange(min=0), help="Show at most N entries.")
@json_option
@pass_context
def reflog_cmd(ctx: Context, limit: int | None, as_json: bool) -> None:
    """Where HEAD has been: every event, reset, replay and switch, newest first.

    \b
    Example:
      narr reflog -n 10
    """
    from narrative.operations.upkeep import REFLOG

    entries = answered(ctx, REFLOG, as_json, limit=limit)
    if entries is None:
        return
    for e in entries.items:
        echo(f"HEAD@{{{e.n}}} {short(e.new)} {local_time(e.when)}  {e.message}")
        if e.content and e.content not in e.message:
            echo(f"           now at: {one_line(e.content)}")


@click.group("edits", invoke_without_command=True)
@json_option
@click.pass_context
def edits_cmd(click_ctx: click.Context, as_json: bool) -> None:
    """Hand edits set aside by a reset or a switch; restore them with 'narr edits restore N'.

    Another writer's, fetched by narr pull or clone, come after yours as origin/N.

    \b
    Example:
      narr edits
    """
    from narrative.operations.upkeep import EDITS

    def listing(wr: WorldRepo) -> Any:
        return EDITS.answer_to(wr, EDITS.parse({}))

    for item in group_listing(click_ctx, as_json, listing, "No set-aside hand edits.", "edits"):
        done = f", restored {local_time(item['restored_at'])}" if item["restored_at"] else ""
        n = f"{item['remote']}/{item['n']}" if item["remote"] else str(item["n"])
        echo(f"{n:>3}  {local_time(item['created_at'])}  {item['reason']}{done}")
        for ch in item["changes"][:8]:
            echo(f"       {change_line(ch)}")
        for path in item["raw_files"]:
            echo(f"       {path} (not a valid node; kept byte for byte)")
        if len(item["changes"]) > 8:
            echo(f"       ... and {len(item['changes']) - 8} more")


@edits_cmd.command("restore")
@click.argument("which", default="1")
@click.option("--force", is_flag=True,
              help="Let the set-aside values win collisions (current edits are set aside first).")
@json_option
@pass_context
def edits_restore_cmd(ctx: Context, which: str, force: bool, as_json: bool) -> None:
    """Put set-aside edits WHICH (number from 'narr edits', default 1) back as hand edits.

    \b
    Examples:
      narr edits restore
      narr edits restore 2 --force
    """
    from narrative.operations.upkeep import RESTORE_EDITS

    restored = answered(ctx, RESTORE_EDITS, as_json, which=which, force=force)
    if restored is None:
        return
    result = restored.to_json()
    for note in result["warnings"]:
        warn(note)
    echo(f"Restored {len(result['changes'])} change(s) as hand edits; narr status shows them.")
    if result["set_aside"]:
        echo("Your conflicting hand edits were set aside first: narr edits")


@edits_cmd.command("drop")
@click.argument("which")
@json_option
@pass_context
def edits_drop_cmd(ctx: Context, which: str, as_json: bool) -> None:
    """Forget set-aside edits WHICH for good (never the story they sit on).

    Events only these edits still held are kept as an abandoned chain first.

    Edits of yours that went up with narr push are deleted there by your next push.

    \b
    Example:
      narr edits drop 2
    """
    from narrative.operations.upkeep import DROP_EDITS

    dropped = answered(ctx, DROP_EDITS, as_json, which=which)
    if dropped is None:
        return
    echo(f"Dropped {dropped.dropped}")
    if dropped.kept_as is not None:
        echo(f"The events only these edits held are kept as an abandoned chain "
             f"({dropped.kept_as.rsplit('/', 1)[-1]}; narr chains lists it)")


COMMANDS = [reset_cmd, chains_cmd, replay_cmd, revert_cmd, reflog_cmd, edits_cmd]
