"""Rendering: JSON first, text made from the same dicts so the two cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from narrative.cli.context import Context
from narrative.cli.terminal import echo, paint

if TYPE_CHECKING:
    from narrative.answers import Answer

F = TypeVar("F", bound=Callable[..., Any])

ARROW = "→"


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    obj = ctx.find_object(Context)
    if obj is not None and value:
        obj.json = True
    return value


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, callback=_remember_json,
                        help="Print the result as JSON.")(func)


def page_options(func: F) -> F:
    """``--limit N`` and ``--cursor NEXT``: a page of a long list, as every door reads one."""
    func = click.option("--cursor", metavar="NEXT",
                        help="Start where the page before ended (its next).")(func)
    return click.option("--limit", type=click.IntRange(min=1), metavar="N",
                        help="List at most N (the answer's next says where the rest start).")(func)


def next_page(found: Any) -> None:
    """Say, after a page of text, where the next starts."""
    if getattr(found, "next", None):
        echo(f"... more: --cursor {found.next}", err=True)


def emit_json(data: Any, name: str) -> None:
    """``data`` as the answer ``name`` (:mod:`narrative.answers`): an object naming its shape,
    a list as its ``items``, the same JSON the HTTP API and the MCP tools give."""
    from narrative.answers import answer, schema

    click.echo(json.dumps(answer(schema(name), data), indent=2, ensure_ascii=False))


def emit_answer(found: Answer) -> None:
    """An answer as ``--json`` prints it: the very JSON the HTTP API and the MCP tools give."""
    click.echo(json.dumps(found.answer(), indent=2, ensure_ascii=False))


def value_text(value: Any, limit: int | None = 70) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def change_line(ch: dict[str, Any], limit: int | None = 70,
                expired: dict[str, str] | None = None) -> str:
    """``target field: old → new`` for one change dict (absent values shown as such)."""
    target, field = ch["target"], ch["field"]
    if field == "":
        if "old_value" not in ch:
            node = ch.get("new_value") or {}
            return f"{target}: created ({node.get('layer', '?')}, {node.get('name', '')!s})"
        if "new_value" not in ch:
            why = (expired or {}).get(target)
            if why is None:
                return f"{target}: removed"
            return f"{target}: expired" + ("" if why.startswith("expired") else f" ({why})")
    old = value_text(ch["old_value"], limit) if "old_value" in ch else "(absent)"
    new = value_text(ch["new_value"], limit) if "new_value" in ch else "(absent)"
    return f"{target} {field}: {paint(old, 'old')} {ARROW} {paint(new, 'new')}"


def record_lines(rec: dict[str, Any], *, full: bool = False,
                 expired: dict[str, str] | None = None) -> list[str]:
    """The human view of an event record dict (as produced by ``--json``)."""
    limit = None if full else 70
    lines = []
    if rec.get("timestamp"):
        lines.append(f"  story time: {rec['timestamp']}")
    if rec.get("close_scene"):
        lines.append("  closes the scene")
    for ch in rec.get("edits", []):
        lines.append(f"  {paint('hand edit', 'edit')}  {change_line(ch, limit)}")
    if expired is None:
        expired = _expiry_reasons(rec)
    for ch in rec.get("diffusions", []):
        lines.append(f"  {change_line(ch, limit, expired)}")
    if not rec.get("diffusions") and rec.get("kind") == "event":
        lines.append("  (no change to the world: a story beat)")
    return lines


def _expiry_reasons(rec: dict[str, Any]) -> dict[str, str]:
    """Why each node a recorded event removed ended, told from the node's lifecycle.

    The record keeps the removed node whole, so a later ``narr show`` can say
    what ``narr event`` said when it ran.
    """
    out = {}
    for ch in rec.get("diffusions", []):
        if ch["field"] == "" and "new_value" not in ch and isinstance(ch.get("old_value"), dict):
            lifecycle = ch["old_value"].get("lifecycle")
            if lifecycle == "event":
                out[ch["target"]] = "event lifecycle"
            elif lifecycle == "scene" and rec.get("close_scene"):
                out[ch["target"]] = "scene closed"
            else:
                out[ch["target"]] = "expired"
    return out


def group_listing(click_ctx: click.Context, as_json: bool, fetch: Callable[[Any], Any],
                  empty: str, name: str) -> list[dict[str, Any]]:
    """What a group's bare form (``narr edits``, ``narr failed``) has to print as text.

    Empty when a subcommand runs instead, when the items went out as JSON, or when
    there are none (then ``empty`` says so).
    """
    if click_ctx.invoked_subcommand is not None:
        return []
    ctx = click_ctx.find_object(Context)
    assert ctx is not None
    found = fetch(ctx.world)
    from narrative.answers import Answer

    items: list[dict[str, Any]] = found.to_json()["items"] if isinstance(found, Answer) else found
    if as_json:
        emit_answer(found) if isinstance(found, Answer) else emit_json(items, name)
        return []
    if not items:
        echo(empty)
    return items


def warn(message: str) -> None:
    echo(paint(f"narr: warning: {message}", "warning", err=True), err=True)


ONE_LINE = 72


def one_line(content: str | None, limit: int = ONE_LINE) -> str:
    """An event's content on one line: its first line, cut at ``limit`` characters, "…" when cut."""
    lines = (content or "").strip().splitlines() or [""]
    text = lines[0].strip()
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text + (" …" if len(lines) > 1 else "")


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: two for wide characters (Chinese), none for combining marks.

    What wcwidth measures for the scripts a story uses, from the standard library's
    East Asian Width table; ``len`` counts 林远 as two columns where a terminal shows four.
    """
    import unicodedata

    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (as ``f"{text:<width}"`` for ASCII)."""
    return text + " " * max(0, width - display_width(text))


def short(commit: str | None) -> str:
    return (commit or "")[:10]


def short_event(event_id: str | None) -> str:
    """An event's short id (:func:`narrative.ids.short_event_id`)."""
    from narrative.ids import short_event_id

    return short_event_id(event_id)


def local_time(stamp: str | None) -> str:
    """An ISO 8601 time (``2026-11-30T10:45:00Z``, as ``--json`` gives) in local time for
    text: ``2026-11-30 11:45``; text that is not a time is shown as it is."""
    from datetime import UTC, datetime

    if not stamp:
        return ""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone().strftime("%Y-%m-%d %H:%M")
