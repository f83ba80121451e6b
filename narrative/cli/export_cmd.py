"""The story as documents: ``narr story`` (the book so far) and ``narr export codex`` (the bible)."""

from __future__ import annotations

import click

from narrative.cli.completion import complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_json, json_option
from narrative.cli.terminal import no_pager_option, paged

_FORMAT = click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md",
                       show_default=True, help="Markdown to read, or JSON (the same as --json).")


@click.command("story")
@click.option("--from", "start", metavar="REV", shell_complete=complete_rev,
              help="Start after this event (default: the beginning, after the genesis).")
@click.option("--to", "end", metavar="REV", shell_complete=complete_rev,
              help="End with this event (default: HEAD).")
@no_pager_option
@_FORMAT
@json_option
@pass_context
def story_cmd(ctx: Context, start: str | None, end: str | None, fmt: str, as_json: bool) -> None:
    """The book so far: the story line's events oldest first, with story time and narrative text.

    \b
    Example:
      narr story --to HEAD~2 > draft.md
    """
    from narrative.engine.book import book

    result = book(ctx.world, start, end)
    if as_json or fmt == "json":
        emit_json(result.to_json())
        return
    with paged(ctx):
        click.echo(result.to_markdown(), nl=False)


@click.group("export")
def export_group() -> None:
    """Write the story out as a document: narr export codex is the story bible.

    The book itself is narr story.

    \b
    Example:
      narr export codex > bible.md
    """


@export_group.command("codex")
@click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
              help="The world as committed at a revision or event (default: now, hand edits included).")
@_FORMAT
@json_option
@pass_context
def codex_cmd(ctx: Context, at: str | None, fmt: str, as_json: bool) -> None:
    """The story bible: every node by layer, with its state and relations both ways.

    \b
    Examples:
      narr export codex > bible.md
      narr export codex --at HEAD~5 --format json
    """
    from narrative.engine.codex import codex

    result = codex(ctx.world, at)
    if as_json or fmt == "json":
        emit_json(result.to_json())
    else:
        click.echo(result.to_markdown(), nl=False)


COMMANDS = [story_cmd, export_group]
