"""Story branches: ``narr branch`` and ``narr switch``."""

from __future__ import annotations

import click

from narrative.cli.completion import complete_branch, complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import (
    display_width,
    json_option,
    next_page,
    one_line,
    pad,
    page_options,
    short,
    warn,
)
from narrative.cli.rows import answered
from narrative.cli.terminal import echo


@click.command("branch")
@click.argument("name", required=False, shell_complete=complete_branch)
@click.argument("rev", required=False, shell_complete=complete_rev)
@click.option("--delete", "-d", "delete", is_flag=True,
              help="Delete branch NAME (its events stay kept under refs/narr/abandoned/).")
@click.option("--remotes", "-r", "remotes", is_flag=True,
              help="List the remotes' branches as last fetched (origin/alt).")
@page_options
@json_option
@pass_context
def branch_cmd(ctx: Context, name: str | None, rev: str | None, delete: bool, remotes: bool,
               limit: int | None, cursor: str | None, as_json: bool) -> None:
    """List story branches, or create branch NAME at REV (default: the current event).

    \b
    Examples:
      narr branch
      narr branch -r
      narr branch what-if HEAD~2
      narr branch -d what-if
    """
    from narrative.operations import lines

    if remotes:
        if name is not None or delete:
            raise click.UsageError("--remotes only lists")
        found = answered(ctx, lines.REMOTE_BRANCHES, as_json, limit=limit, cursor=cursor)
        if found is None:
            return
        width = max([20, *(display_width(row.name) for row in found)])
        for row in found:
            local = f"  (followed by {row.followed_by})" if row.followed_by else ""
            echo(f"  {pad(row.name, width)} {short(row.commit)} {one_line(row.content)}{local}")
        next_page(found)
        return
    if name is None:
        if delete:
            raise click.UsageError("--delete needs a branch NAME")
        listed = answered(ctx, lines.BRANCHES, as_json, limit=limit, cursor=cursor)
        if listed is None:
            return
        width = max([20, *(display_width(line.name) for line in listed)])
        for line in listed:
            mark = "*" if line.current else " "
            echo(f"{mark} {pad(line.name, width)} {short(line.commit)} {one_line(line.content)}")
        next_page(listed)
        return
    if delete:
        if rev is not None:
            raise click.UsageError("--delete takes only a branch NAME")
        deleted = answered(ctx, lines.DELETE_BRANCH, as_json, name=name)
        if deleted is not None:
            kept = f"; its events are kept as {deleted.kept_as}" if deleted.kept_as else ""
            echo(f"Deleted branch {name} (was {short(deleted.commit)}){kept}")
        return
    made = answered(ctx, lines.CREATE_BRANCH, as_json, name=name, rev=rev)
    if made is not None:
        echo(f"Created branch {name} at {short(made.commit)} {one_line(made.content)}")


@click.command("switch")
@click.argument("name", shell_complete=complete_branch)
@click.option("-c", "--create", is_flag=True, help="Create the branch at the current event first.")
@click.option("--set-aside", is_flag=True,
              help="Set uncommitted hand edits aside (narr edits) instead of refusing.")
@json_option
@pass_context
def switch_cmd(ctx: Context, name: str, create: bool, set_aside: bool, as_json: bool) -> None:
    """Move to story branch NAME; the world becomes that branch's.

    A NAME only one remote has (origin/NAME, as last fetched) becomes a local
    branch following it, as git switch does.

    \b
    Examples:
      narr switch -c what-if
      narr switch main --set-aside
    """
    from narrative.operations.lines import SWITCH

    result = answered(ctx, SWITCH, as_json, name=name, set_aside=set_aside, create=create)
    if result is None:
        return
    for note in result.warnings:
        warn(note)
    if result.tracking:
        echo(f"Branch {name} made from {result.tracking} (narr pull and narr push follow it)")
    echo(f"Switched to {name}, at {short(result.commit)} {one_line(result.content)}")
    if result.set_aside:
        echo("Your uncommitted hand edits were set aside: narr edits")


COMMANDS = [branch_cmd, switch_cmd]
