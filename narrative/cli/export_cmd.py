"""The story as documents: ``narr story`` (the book so far), ``narr export codex`` (the bible), and
the world for other tools: ``narr export lorebook``, ``card`` (SillyTavern) and ``vault`` (Obsidian)."""

from __future__ import annotations

from pathlib import Path

import click

from narrative.cli.completion import complete_node, complete_rev
from narrative.cli.context import Context, pass_context
from narrative.cli.output import emit_answer, emit_json, json_option
from narrative.cli.terminal import echo, no_pager_option, paged

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
    from narrative.engine.book import render_markdown
    from narrative.operations.chapters import STORY

    result = ctx.call(STORY, start=start, end=end)
    if as_json or fmt == "json":
        emit_answer(result)
        return
    with paged(ctx):
        echo(render_markdown(result.to_json()), nl=False)


@click.group("export")
def export_group() -> None:
    """Write the world out: the story bible, a SillyTavern lorebook or card, an Obsidian vault.

    The book itself is narr story. Each export reads back through narr import
    with no change to names, aliases, summaries, traits, relations and flags.

    \b
    Examples:
      narr export codex > bible.md
      narr export lorebook --pov lin-yuan -o world.json
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
        emit_json(result.to_json(), "codex")
    else:
        echo(result.to_markdown(), nl=False)


_AT = click.option("--at", "at", metavar="REV", shell_complete=complete_rev,
                   help="The world as committed at a revision or event (default: now, hand edits "
                        "included).")
_POV = click.option("--pov", metavar="NODE", shell_complete=complete_node,
                    help="Only what this character can know (the rule of narr brief --pov).")
_OUTPUT = click.option("-o", "--output", type=click.Path(path_type=Path),
                       help="Write the file here (whole, or not at all) instead of printing it.")


def _write(ctx: Context, output: Path, data: bytes, what: str, as_json: bool) -> None:
    from narrative.engine.lorebook import write_output
    from narrative.invocation import absolute

    path = write_output(ctx.world, output, data, base=absolute(ctx.directory))
    if as_json:
        emit_json({"path": str(path), "what": what, "bytes": len(data)}, "export_written")
    else:
        echo(f"Wrote {output}: {what}")


@export_group.command("lorebook")
@_AT
@_POV
@_OUTPUT
@json_option
@pass_context
def lorebook_cmd(ctx: Context, at: str | None, pov: str | None, output: Path | None,
                 as_json: bool) -> None:
    """The world as a SillyTavern World Info book: one entry per node, its state in words.

    Keys are the node's name and aliases; the content its summary, sections,
    traits, current state and relations; nodes marked always_in_view are constant
    entries. The lorebook is JSON: --json prints the same.

    \b
    Examples:
      narr export lorebook > world.json
      narr export lorebook --pov lin-yuan --at HEAD~2 -o lin-yuan.json
    """
    from narrative.engine.lorebook import export_lorebook

    result = export_lorebook(ctx.world, at, pov)
    if output is not None:
        n = len(result.book["entries"])
        _write(ctx, output, result.text().encode("utf-8"), f"{n} entr{'y' if n == 1 else 'ies'}", as_json)
    else:
        echo(result.text(), nl=False)


@export_group.command("card")
@click.argument("node", shell_complete=complete_node)
@click.option("--spec", type=click.Choice(["v3", "v2"]), default="v3", show_default=True,
              help="The character card specification to write.")
@click.option("--png", "image", type=click.Path(path_type=Path),
              help="Embed the card in this PNG image (chara and ccv3 chunks); needs -o.")
@_AT
@_POV
@_OUTPUT
@json_option
@pass_context
def card_cmd(ctx: Context, node: str, spec: str, image: Path | None, at: str | None, pov: str | None,
             output: Path | None, as_json: bool) -> None:
    """One node as a SillyTavern character card, the world as its character book.

    The summary is the description, the trait personality the personality; the
    fields an import kept (scenario, greetings, examples, prompts) come back; the
    book holds the node's sections and current state, then the rest of the world.

    \b
    Examples:
      narr export card lin-yuan > lin-yuan.json
      narr export card 林远 --png portrait.png -o lin-yuan.png
    """
    from narrative.engine.lorebook import export_card, read_image
    from narrative.invocation import absolute

    data = None
    if image is not None:
        if output is None:
            raise click.UsageError("--png writes a binary file: give it -o FILE")
        data = read_image(absolute(ctx.directory) / image, f"--png {image}")
    result = export_card(ctx.world, node, at=at, pov=pov, spec=spec, image=data,
                         image_label=str(image) if image else "image")
    entries = len(result.card["data"]["character_book"]["entries"])
    what = f"the card of {result.node}, {entries} book entr{'y' if entries == 1 else 'ies'}"
    if result.png is not None and output is not None:
        _write(ctx, output, result.png, what + " (PNG)", as_json)
    elif output is not None:
        _write(ctx, output, result.text().encode("utf-8"), what, as_json)
    else:
        echo(result.text(), nl=False)


@export_group.command("vault")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@_AT
@json_option
@pass_context
def vault_cmd(ctx: Context, folder: Path, at: str | None, as_json: bool) -> None:
    """The world as an Obsidian vault: one note per node, relations as [[links]].

    DIR must be new or empty, or a vault this command wrote: a note changed
    there since is never overwritten, and the folder is replaced whole. DIR is
    never inside the world (world/, .git/, rules/) nor reached through a
    symbolic link; -o of the other exports neither.

    \b
    Examples:
      narr export vault ~/vaults/my-world
      narr export vault snapshot --at HEAD~3
    """
    from narrative.engine.vault import export_vault
    from narrative.invocation import absolute

    result = export_vault(ctx.world, folder, at, base=absolute(ctx.directory))
    if as_json:
        emit_json(result.to_json(), "vault")
        return
    echo(f"Wrote {folder}: {len(result.notes)} note{'' if len(result.notes) == 1 else 's'}"
               + (f", removed {len(result.removed)} of the last export" if result.removed else ""))


COMMANDS = [story_cmd, export_group]
