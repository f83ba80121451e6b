"""The CLI's lazy context: ``-C PATH`` like git's, the world opened on first use."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from narrative.answers import Answer
    from narrative.operations import Operation
    from narrative.store import WorldRepo

A = TypeVar("A", bound="Answer")


class Context:
    def __init__(self, directory: Path, *, no_color: bool = False, no_pager: bool = False) -> None:
        self.directory = directory
        self.json = False
        self.no_color = no_color
        self.no_pager = no_pager
        self._world: WorldRepo | None = None
        # decided once, on the real streams: the pager's buffer later stands in for stdout
        from narrative.cli.terminal import colour_allowed

        self.colour_out = colour_allowed(self, sys.stdout)
        self.colour_err = colour_allowed(self, sys.stderr)

    @property
    def world(self) -> WorldRepo:
        if self._world is None:
            from narrative.invocation import absolute
            from narrative.store import WorldRepo

            self._world = WorldRepo.open(absolute(self.directory))
            _warn_unknown_keys(self._world)
        return self._world

    def call(self, row: Operation[A], **arguments: Any) -> A:
        """Run ``row`` on this world (in this directory, for a row that needs no world) with the
        arguments the command's options gave (those left out, None, are the row's defaults): its
        answer, as every other door gets it."""
        given = {key: list(value) if isinstance(value, tuple) else value
                 for key, value in arguments.items() if value is not None}
        params = row.parse(given)
        if not row.needs_world:
            from narrative.invocation import absolute

            return row.answer_to(absolute(self.directory), params)
        return row.answer_to(self.world, params)

    def node(self, text: str, *, must_exist: bool = True, context: str | None = None,
             ended: bool | None = None) -> str:
        """The id of the node ``text`` names: its id, a name or an alias (engine.naming);
        ``ended``: a node that has ended may be meant (by default when it need not exist)."""
        from narrative.engine.naming import Names

        return Names(self.world).resolve(text, must_exist=must_exist, context=context,
                                         ended=ended)

    def close(self) -> None:
        if self._world is not None:
            self._world.close()
            self._world = None


def _warn_unknown_keys(wr: WorldRepo) -> None:
    """A misspelt setting in narr.toml would be silently ignored: say which, and what is known."""
    from narrative.cli.terminal import echo
    from narrative.config import CONFIG_FILE, known_keys, unknown_keys

    unknown = unknown_keys(wr.config.raw)
    if unknown:
        echo(f"narr: warning: {CONFIG_FILE}: unknown key{'s' if len(unknown) > 1 else ''} "
                   f"{', '.join(unknown)} (ignored; known keys: {known_keys()})", err=True)


pass_context = click.make_pass_decorator(Context)


def typed_path(value: str | Path, ctx: click.Context | None = None) -> Path:
    """A file named on the command line, as the command must open it: relative to ``-C``'s
    directory when one is given (as git's ``-C``: "as if started there"), in the command's
    own directory (a served command's is its client's, :mod:`narrative.invocation`)."""
    from narrative.invocation import absolute

    given = Path(value)
    if given.is_absolute():
        return given
    root = (ctx or click.get_current_context(silent=True))
    directory = root.find_root().params.get("directory") if root is not None else None
    return absolute(Path(directory) / given if directory else given)


class InputFile(click.File):
    """click's ``File``, opened where :func:`typed_path` says."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value != "-":
            resolved = str(typed_path(value, ctx))
            if resolved != value:
                try:
                    return super().convert(resolved, param, ctx)
                except click.BadParameter as exc:  # name the file as the user did
                    self.fail(exc.message.replace(click.format_filename(resolved),
                                                  click.format_filename(value), 1), param, ctx)
        return super().convert(value, param, ctx)
