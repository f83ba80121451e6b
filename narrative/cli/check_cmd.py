"""``narr check`` and ``narr gc``: verify that the history explains the world; keep it small."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option, warn

if TYPE_CHECKING:
    from narrative.engine.check import CheckReport


@click.command("check")
@click.argument("rev", required=False)
@click.option("--history-only", is_flag=True,
              help="Check the events only, not every node of the current world.")
@json_option
@pass_context
def check_cmd(ctx: Context, rev: str | None, history_only: bool, as_json: bool) -> None:
    """Check every event (parent + edits + diffusions == event) and every node.

    Exits non-zero and names the first broken event or node.
    """
    from narrative.engine.check import check
    from narrative.errors import CheckFailedError
    from narrative.store.failures import is_damage

    try:
        report = check(ctx.world, rev, world=not history_only)
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
        emit_json(report.to_json())
    else:
        for problem in report.problems:
            click.echo(f"broken: {problem}")
        for line in report.worktree_problems:
            click.echo(f"working tree: {line}")
        if report.ok:
            nodes = (f", {report.nodes} node{'' if report.nodes == 1 else 's'} valid"
                     if not history_only else "")
            click.echo(f"ok: {report.events} event{'' if report.events == 1 else 's'} "
                       f"on the story line{nodes}")
    if not report.ok:
        first = (str(report.problems[0]) if report.problems
                 else f"working tree: {report.worktree_problems[0]}")
        n = len(report.problems) + len(report.worktree_problems)
        raise CheckFailedError(f"check failed: {first}" + (f" ({n - 1} more)" if n > 1 else ""),
                               hint=_plain_commit_hint(ctx, report))


def _plain_commit_hint(ctx: Context, report: CheckReport) -> str | None:
    """How to recover when plain git commits (``git commit -am``) absorbed hand edits.

    Moving the branch back to the last event with ``git reset --mixed`` keeps the
    files, so their changes become hand edits again, which the next event records.
    """
    plain = [p for p in report.problems if p.commit and p.event is None
             and "is not a narr event" in p.problem]
    if not plain or plain[0].commit is None:
        return None
    from narrative.store.history import peel_commit

    commit = peel_commit(ctx.world, plain[0].commit)
    parents = commit.parents if commit is not None else []
    if not parents:
        return None
    last = str(parents[0].id)[:12]
    return (f"plain git commits changed world/; to make their changes hand edits again "
            f"(kept, and recorded by the next event), keep them on a branch and move back to "
            f"the last event: git branch narr-plain-commits && git reset --mixed {last}")


@click.command("gc")
@json_option
@pass_context
def gc_cmd(ctx: Context, as_json: bool) -> None:
    """Pack the repository (git gc): events leave loose objects, packing shrinks them.

    narr also starts git gc --auto in the background when loose objects pile up
    (NARR_AUTO_GC=0 turns that off). Nothing narr keeps is ever pruned.
    """
    from narrative.store.maintenance import gc

    result = gc(ctx.world).to_json()
    if as_json:
        emit_json(result)
        return
    mb = 1024 * 1024
    click.echo(f"Packed: {result['bytes_before'] / mb:.1f} MB -> {result['bytes_after'] / mb:.1f} MB "
               f"({result['loose_before']} loose objects -> {result['loose_after']})")


COMMANDS = [check_cmd, gc_cmd]
