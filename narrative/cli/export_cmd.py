"""The story as documents: ``narr story`` (the book so far), ``narr export codex`` (the bible), and
the world for other tools: ``narr export lorebook``, ``card`` (SillyTavern) and ``vault`` (Obsidian)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    from narrative.operations.lore import EXPORT_CODEX

    found = ctx.call(EXPORT_CODEX, at=at)
    if as_json or fmt == "json":
        emit_answer(found)
    else:
        echo(found.to_markdown(), nl=False)


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
    from narrative.operations.lore import EXPORT_LOREBOOK

    found = ctx.call(EXPORT_LOREBOOK, at=at, pov=pov)
    if output is not None:
        entries = found.lorebook["entries"]
        n = len(entries) if isinstance(entries, dict | list) else 0
        _write(ctx, output, found.text().encode("utf-8"), f"{n} entr{'y' if n == 1 else 'ies'}", as_json)
    else:
        echo(found.text(), nl=False)  # the book itself, --json or not: it is JSON


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
    from narrative.operations.lore import EXPORT_CARD

    if image is not None:  # a PNG card: the command line's own, it reads and writes files
        if output is None:
            raise click.UsageError("--png writes a binary file: give it -o FILE")
        _png_card(ctx, node, spec, image, at, pov, output, as_json)
        return
    found = ctx.call(EXPORT_CARD, node=node, spec=spec, at=at, pov=pov)
    if output is not None:
        _write(ctx, output, found.text().encode("utf-8"), _card_what(found.node, found.card), as_json)
    else:
        echo(found.text(), nl=False)


def _card_what(node: str, card: dict[str, Any]) -> str:
    entries = len(card["data"]["character_book"]["entries"])
    return f"the card of {node}, {entries} book entr{'y' if entries == 1 else 'ies'}"


def _png_card(ctx: Context, node: str, spec: str, image: Path, at: str | None, pov: str | None,
              output: Path, as_json: bool) -> None:
    """The card in an image: the row's arguments checked as the row checks them, the image
    read from the command's directory, the PNG written whole."""
    from narrative.engine.lorebook import export_card, read_image
    from narrative.invocation import absolute
    from narrative.operations.lore import EXPORT_CARD, ExportCardParams

    given = {"node": node, "spec": spec, "at": at, "pov": pov}
    params = EXPORT_CARD.parse({k: v for k, v in given.items() if v is not None})
    assert isinstance(params, ExportCardParams)
    data = read_image(absolute(ctx.directory) / image, f"--png {image}")
    result = export_card(ctx.world, params.node, at=params.at, pov=params.pov, spec=params.spec,
                         image=data, image_label=str(image))
    assert result.png is not None
    _write(ctx, output, result.png, _card_what(result.node, result.card) + " (PNG)", as_json)


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
    from narrative.operations.lore import EXPORT_NOTES, ExportVaultParams

    params = EXPORT_NOTES.parse({"at": at} if at is not None else {})
    assert isinstance(params, ExportVaultParams)
    # the row's notes, written into DIR: the writing (whole, never over a changed note) is ours
    result = export_vault(ctx.world, folder, params.at, base=absolute(ctx.directory))
    if as_json:
        emit_json(result.to_json(), "vault")
        return
    echo(f"Wrote {folder}: {len(result.notes)} note{'' if len(result.notes) == 1 else 's'}"
               + (f", removed {len(result.removed)} of the last export" if result.removed else ""))


COMMANDS = [story_cmd, export_group]
