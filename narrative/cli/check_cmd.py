"""``narr check``: verify that the history explains the world."""

from __future__ import annotations

import click

from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option, warn


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

    report = check(ctx.world, rev, world=not history_only)
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
            nodes = f", {report.nodes} nodes valid" if not history_only else ""
            click.echo(f"ok: {report.events} events on the story line{nodes}")
    if not report.ok:
        first = (str(report.problems[0]) if report.problems
                 else f"working tree: {report.worktree_problems[0]}")
        n = len(report.problems) + len(report.worktree_problems)
        raise CheckFailedError(f"check failed: {first}" + (f" ({n - 1} more)" if n > 1 else ""))


COMMANDS = [check_cmd]
