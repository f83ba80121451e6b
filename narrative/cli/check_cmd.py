"""``narr check``, ``narr adopt`` and ``narr gc``: verify that the history explains the world,
make plain commits it cannot explain hand edits again, keep it small."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from narrative.cli.completion import complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option, short, warn
from narrative.cli.rows import answered
from narrative.cli.terminal import echo, progress_bar

if TYPE_CHECKING:
    from narrative.engine.check import CheckReport


@click.command("check")
@click.argument("rev", required=False, shell_complete=complete_rev)
@click.option("--history-only", is_flag=True,
              help="Check the events only, not every node of the current world.")
@click.option("--full", is_flag=True,
              help="Walk every event of the story line, not only those since the last check "
                   "that passed.")
@json_option
@pass_context
def check_cmd(ctx: Context, rev: str | None, history_only: bool, full: bool,
              as_json: bool) -> None:
    """Check every event (parent + edits + diffusions == event) and every node.

    A check that passes remembers where the story line stood (in the catalog); the
    next one verifies only the events after that, so it costs what changed, not the
    history. A history rewritten under it is walked whole; --full walks everything.
    Exits non-zero and names the first broken event or node.

    \b
    Examples:
      narr check
      narr check --full
      narr check HEAD~10 --history-only
    """
    from narrative.engine.check import check
    from narrative.errors import CheckFailedError
    from narrative.store import is_damage

    try:
        with progress_bar("Checking", as_json=as_json) as progress:
            report = check(ctx.world, rev, world=not history_only, full=full, progress=progress)
    except Exception as exc:
        if not is_damage(exc):  # an object git cannot read (a damaged file, a lost commit)
            raise
        raise CheckFailedError(
            f"check failed: the repository is damaged: {str(exc).strip(chr(34))}",
            hint="git fsck names every damaged object; a clone or a backup has the history"
        ) from None
    for message in report.warnings:
        warn(message)
    if as_json:
        emit_json(report.to_json(), "check")
    else:
        for problem in report.problems:
            echo(f"broken: {problem}")
        for line in report.worktree_problems:
            echo(f"working tree: {line}")
        if report.ok:
            nodes = (f", {report.nodes} node{'' if report.nodes == 1 else 's'} valid"
                     if not history_only else "")
            echo(f"ok: {report.events} event{'' if report.events == 1 else 's'} "
                       f"on the story line{nodes}")
    if not report.ok:
        first = (str(report.problems[0]) if report.problems
                 else f"working tree: {report.worktree_problems[0]}")
        n = len(report.problems) + len(report.worktree_problems)
        raise CheckFailedError(f"check failed: {first}" + (f" ({n - 1} more)" if n > 1 else ""),
                               hint=_plain_commit_hint(ctx, report))


def _plain_commit_hint(ctx: Context, report: CheckReport) -> str | None:
    """How to recover when plain git commits (``git commit -am``) absorbed hand edits."""
    merges = [p for p in report.problems if p.fix]
    if merges:
        return "a plain git merge: " + " && ".join(merges[0].fix)
    plain = [p for p in report.problems if p.commit and p.event is None
             and "is not a narr event" in p.problem]
    if not plain:
        return None
    from narrative.engine.adopt import buried

    deep = buried(ctx.world, [p.commit for p in plain if p.commit])
    if deep is not None:
        return deep
    return ("plain git commits changed world/; narr adopt moves the branch back to the last "
            "event and keeps their changes as hand edits (the next event records them; the "
            "commits stay under refs/narr/adopted/)")


@click.command("adopt")
@json_option
@pass_context
def adopt_cmd(ctx: Context, as_json: bool) -> None:
    """Make plain git commits on top of the last event hand edits again.

    After a git commit -am absorbed hand edits, the branch moves back to the last
    event on the story line and every file stays as it is: the commits' changes
    under world/ become hand edits the next event records, their changes outside
    world/ become uncommitted changes. The commits are kept under refs/narr/adopted/.

    \b
    Example:
      narr adopt
    """
    from narrative.operations.upkeep import ADOPT

    adopted = answered(ctx, ADOPT, as_json)
    if adopted is None:
        return
    result = adopted.to_json()
    for note in result["warnings"]:
        warn(note)
    n = len(result["adopted"])
    echo(f"The story now stands at {short(result['to'])} {result['event']['content']}")
    echo(f"  adopted {n} plain commit{'s' if n != 1 else ''}, kept as "
               f"{result['kept_as'].removeprefix('refs/narr/')}:")
    for c in result["adopted"][:10]:
        echo(f"    {short(c['commit'])} {c['subject']}")
    if n > 10:
        echo(f"    ... and {n - 10} more")
    k = len(result["world_paths"])
    echo(f"  {k} file{'s' if k != 1 else ''} under world/ now hand edits "
               "(narr status; the next event records them)")
    if result["other_paths"]:
        k = len(result["other_paths"])
        echo(f"  {k} file{'s' if k != 1 else ''} outside world/ now uncommitted changes "
                   "(git status): " + ", ".join(result["other_paths"][:5])
                   + (" ..." if k > 5 else ""))


@click.command("gc")
@json_option
@pass_context
def gc_cmd(ctx: Context, as_json: bool) -> None:
    """Pack the repository (git gc): events leave loose objects, packing shrinks them.

    narr also starts git gc --auto in the background when loose objects pile up
    (NARR_AUTO_GC=0 turns that off). Nothing narr keeps is ever pruned.

    \b
    Example:
      narr gc
    """
    from narrative.operations.upkeep import GC

    packed = answered(ctx, GC, as_json)
    if packed is None:
        return
    result = packed.to_json()
    mb = 1024 * 1024
    echo(f"Packed: {result['bytes_before'] / mb:.1f} MB -> {result['bytes_after'] / mb:.1f} MB "
               f"({result['loose_before']} loose objects -> {result['loose_after']})")


COMMANDS = [check_cmd, gc_cmd, adopt_cmd]
