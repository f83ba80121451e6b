"""A command that is a row of the operations table: its options parsed into the row's
arguments, the row run on the world, its answer printed as ``--json`` or handed back for
the command to print as text.

So ``narr why ... --json`` is the ``why`` operation's answer byte for byte as HTTP and MCP
give it, and the text is made from that same answer. A command names its row's family
(``reads``, ``travel``...) so it loads that family's argument models alone, never the
whole table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from narrative.answers import Answer
    from narrative.cli.context import Context
    from narrative.operations import Operation

A = TypeVar("A", bound="Answer")


def row(family: str, name: str) -> Operation[Any]:
    """The row ``name`` of the table's module ``family`` (``narrative.operations.FAMILY``)."""
    from importlib import import_module

    for found in import_module(f"narrative.operations.{family}").ROWS:
        if found.name == name:
            return found  # type: ignore[no-any-return]
    raise LookupError(f"no row {name!r} in narrative.operations.{family}")


def answered(ctx: Context, op: Operation[A], as_json: bool, **options: Any) -> A | None:
    """Run ``op`` with the options the command was given (None: the row's default): its
    answer, or None once it has gone out as ``--json``."""
    from narrative.cli.output import emit_answer

    found = ctx.call(op, **options)
    if as_json:
        emit_answer(found)
        return None
    return found
