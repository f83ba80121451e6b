"""Rows of lore: a story bible brought in (``import_lore``), and the world written out for other
tools (``export_codex``, ``export_lorebook``, ``export_card``, ``export_notes``).

A program over HTTP or MCP has no file system on this machine, so an export answers the
document itself (the codex, the book's or the card's JSON, the vault's notes with their text)
and writing it to a file stays the command line's (``-o FILE``, ``narr export vault DIR``, with
their checks: never inside the world, never through a symbolic link, never over a note changed
since). A PNG card is the command line's too: it embeds the card in an image file it reads.

An import takes either the document (``content``, its file ``name``; a PNG card or a CHARX as
``base64``), at most :data:`MAX_DOCUMENT` characters, or a ``source``: a file or folder on the
machine narr runs on. Through HTTP and MCP a source must lie inside the world's folder (a
``lore/`` folder beside ``world/``, say), never in ``world/``, ``.git/`` or the settings: the
server runs as the machine's user, and a caller that could name any path could read any file
of that user's into the world and back out of it (:func:`narrative.invocation.remote`). The
library and the command line run as the user who names the path, so they read it wherever it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from narrative.errors import InvalidInputError
from narrative.operations import MAX_STRING, At, NodeName, Operation, Params, Short

if TYPE_CHECKING:
    from narrative.answer_models import (
        CardAnswer,
        CodexAnswer,
        ImportAnswer,
        LorebookAnswer,
        VaultNotesAnswer,
    )
    from narrative.store import WorldRepo

MAX_DOCUMENT = 4 * 1024 * 1024
"""Characters of a document given as ``content`` (base64 included): far above a real lorebook of
a few thousand entries, and inside the HTTP API's bound on a body, so that a document too big
is the same typed error through every door. A bigger one: a file, through the command line."""

Layer = Literal["character", "item", "ambient", "background"]


class ImportLoreParams(Params):
    source: Annotated[str, Field(min_length=1, max_length=MAX_STRING)] | None = Field(
        None, description=(
            "a file or folder to import (a lorebook, a card, a note, a codex, a vault); over HTTP "
            "and MCP only one inside the world's folder, relative to it"))
    content: Annotated[str, Field(min_length=1, max_length=MAX_DOCUMENT)] | None = Field(
        None, description=(
            "the document itself, instead of a source: a lorebook's or a card's JSON, a note's "
            "or a codex's Markdown; a PNG card or a CHARX in base64"))
    name: Annotated[str, Field(min_length=1, max_length=255)] | None = Field(
        None, description=(
            "the file name of the content (world.json, Lin Yuan.md, card.png): a note's title, "
            "what the document is, and its name in the report and the event"))
    base64: bool = Field(False, description="content is base64 (a PNG card or a CHARX)")
    layer: Layer = Field("background", description=(
        "the layer of lorebook entries and of notes whose front matter names none"))
    include_disabled: bool = Field(False, description="disabled lorebook entries too")
    user: Short | None = Field(None, description=(
        "what {{user}} stands for in cards and books (default: [import] user of narr.toml, else "
        "it stays as written)"))
    merge_similar: bool = Field(False, description=(
        "names only alike (a close spelling, one inside the other) are one node"))
    stubs: bool = Field(False, description=(
        "a node for each note a [[link]] names that is neither in the import nor in the world"))
    skip_bad: bool = Field(False, description=(
        "in a folder, leave out (and list) the files that cannot be imported"))
    dry_run: bool = Field(False, description="say what would be imported, change nothing")


Progress = Callable[[int, int, str], None]


def run_import_lore(wr: WorldRepo, p: ImportLoreParams,
                    progress: Progress | None = None) -> ImportAnswer:
    """The import ``p`` asks for; ``progress(done, total, what)`` hears of each file and entry
    (the command line's bar)."""
    from narrative.answer_models import ImportAnswer
    from narrative.engine.bible import import_bible, import_document

    if (p.source is None) == (p.content is None):
        raise InvalidInputError("the arguments: give source (a file or folder) or content (the "
                                "document itself), one of the two")
    if p.content is not None:
        if p.name is None:
            raise InvalidInputError("the arguments: /name: give the content's file name "
                                    "(world.json, Lin Yuan.md, card.png): it says what the "
                                    "document is")
        result = import_document(wr, _label(p.name), _document(p.content, p.base64),
                                 layer=p.layer, dry_run=p.dry_run,
                                 include_disabled=p.include_disabled, user=p.user,
                                 merge_similar=p.merge_similar, stubs=p.stubs)
    else:
        assert p.source is not None
        if p.name is not None or p.base64:
            raise InvalidInputError(f"the arguments: /{'name' if p.name is not None else 'base64'}: "
                                    "goes with content; a source is read as its file is")
        result = import_bible(wr, _source(wr, p.source), layer=p.layer, dry_run=p.dry_run,
                              progress=progress, include_disabled=p.include_disabled,
                              user=p.user, merge_similar=p.merge_similar, stubs=p.stubs,
                              skip_bad=p.skip_bad)
    return ImportAnswer.model_validate(result.to_json())


def _label(name: str) -> str:
    """The content's name as a relative path (a vault note's place), checked: it is only a label,
    never opened, but it is shown and kept as a note's path."""
    path = PurePosixPath(name)
    bad = ("\\" in name or path.is_absolute()
           or any(part in ("", ".", "..") for part in name.split("/"))
           or any(ord(ch) < 32 for ch in name))
    if bad:
        raise InvalidInputError(f"the arguments: /name: {name!r} is no file name (a name, or a "
                                "relative path with no '..', as Characters/Lin Yuan.md)")
    return name


def _document(content: str, encoded: bool) -> str | bytes:
    if not encoded:
        return content
    import binascii
    from base64 import b64decode

    try:
        return b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError(f"the arguments: /content: not base64 ({exc})") from None


def _source(wr: WorldRepo, source: str) -> Path:
    """The path an import reads: as given to the library or the command line (which give it
    absolute, or relative to where they run); over HTTP and MCP, inside the world's folder only
    (module docstring), relative to it, with no link leading out of it."""
    from narrative.invocation import absolute, remote_door

    if remote_door() is None:
        return absolute(source)
    from narrative.store import export_places

    where = export_places(wr)
    given = Path(source)
    real = Path(os.path.realpath(given if given.is_absolute() else where.root / given))
    if where.root not in real.parents:
        raise InvalidInputError(
            f"the arguments: /source: {source}: not inside the world's folder, and narr reads "
            "no file outside it for a program over HTTP or MCP",
            hint="send the document itself as content (with its name), or put it in a folder of "
                 "the world's (lore/, say)")
    for name, kept in where.kept:
        if real == kept or kept in real.parents:
            raise InvalidInputError(f"the arguments: /source: {source}: inside the world's own "
                                    f"{name}, which narr reads as the world, not as lore")
    return real


class ExportCodexParams(Params):
    at: At = None


class ExportLorebookParams(Params):
    at: At = None
    pov: NodeName | None = Field(None, description=(
        "only what this character can know (the rule of brief's pov)"))


class ExportCardParams(Params):
    node: NodeName
    spec: Literal["v3", "v2"] = Field("v3", description="the character card specification")
    at: At = None
    pov: NodeName | None = Field(None, description=(
        "only what this character can know (the rule of brief's pov)"))


class ExportVaultParams(Params):
    at: At = None


def run_export_codex(wr: WorldRepo, p: ExportCodexParams) -> CodexAnswer:
    from narrative.answer_models import CodexAnswer
    from narrative.engine.codex import codex

    return CodexAnswer.model_validate(codex(wr, p.at).to_json())


def run_export_lorebook(wr: WorldRepo, p: ExportLorebookParams) -> LorebookAnswer:
    from narrative.answer_models import LorebookAnswer
    from narrative.engine.lorebook import export_lorebook

    made = export_lorebook(wr, p.at, p.pov)
    return LorebookAnswer.model_validate({"world": made.world, "at": made.at, "pov": made.pov,
                                          "left_out": made.left_out, "lorebook": made.book})


def run_export_card(wr: WorldRepo, p: ExportCardParams) -> CardAnswer:
    from narrative.answer_models import CardAnswer
    from narrative.engine.lorebook import export_card

    made = export_card(wr, p.node, at=p.at, pov=p.pov, spec=p.spec)
    return CardAnswer.model_validate({"node": made.node, "spec": made.spec, "card": made.card})


def run_export_notes(wr: WorldRepo, p: ExportVaultParams) -> VaultNotesAnswer:
    from narrative.answer_models import VaultNotesAnswer
    from narrative.engine.vault import vault_notes

    made = vault_notes(wr, p.at)
    notes = [{"id": node, "path": path, "text": made.files[path].decode("utf-8")}
             for node, path in sorted(made.paths.items())]
    return VaultNotesAnswer.model_validate({"world": wr.config.name, "at": made.at, "notes": notes})


A = "narrative.answer_models"
_OUTPUT = ("-o FILE: the command line writes the document there, whole, never inside the "
           "world nor through a link (HTTP and MCP answer it)")
IMPORT_LORE = Operation(
    "import_lore", "Bring in a story bible as nodes, in one event: a SillyTavern lorebook or "
    "character card, a Markdown note, a codex, a vault; no text lost, what the world has left "
    "alone, a second import of the same adds nothing (dry_run: only say what it would do).",
    ImportLoreParams, run_import_lore, f"{A}:ImportAnswer", "POST", "/api/import", "import",
    writes=True, positional=("source",))
EXPORT_CODEX = Operation(
    "export_codex", "The story bible: every node by layer, with its state and relations both "
    "ways (now, hand edits included, or as committed at a revision).",
    ExportCodexParams, run_export_codex, f"{A}:CodexAnswer", "GET", "/api/export/codex",
    "export codex", cli_only={"fmt": "--format: how it prints (md, or json as --json)"})
EXPORT_LOREBOOK = Operation(
    "export_lorebook", "The world as a SillyTavern World Info book, one entry per node, its "
    "state in words (pov: only what that character can know).",
    ExportLorebookParams, run_export_lorebook, f"{A}:LorebookAnswer", "GET",
    "/api/export/lorebook", "export lorebook", cli_only={"output": _OUTPUT})
EXPORT_CARD = Operation(
    "export_card", "One node as a SillyTavern character card (V3 or V2 JSON), the world as "
    "its character book.",
    ExportCardParams, run_export_card, f"{A}:CardAnswer", "GET", "/api/export/card/{node}",
    "export card", positional=("node",),
    cli_only={"output": _OUTPUT,
              "image": "--png FILE: the card embedded in an image the command line reads, "
                       "written with -o (a binary file: HTTP and MCP answer the card's JSON)"})
EXPORT_NOTES = Operation(
    "export_notes", "The world as an Obsidian vault: one note per node (path and Markdown "
    "text), relations as [[links]].",
    ExportVaultParams, run_export_notes, f"{A}:VaultNotesAnswer", "GET", "/api/export/vault",
    "export vault",
    cli_only={"folder": "DIR: the command line writes the notes there (never over a note "
                        "changed since, never inside the world); HTTP and MCP answer them"})
ROWS = (IMPORT_LORE, EXPORT_CODEX, EXPORT_LOREBOOK, EXPORT_CARD, EXPORT_NOTES)
