"""narr's own codex Markdown (``narr export codex``), read back whole.

The layout is the one :mod:`narrative.engine.codex` writes: ``## Layer``, ``### Name``, then
``- key: value`` lines (the id first), and ``####`` subsections: Traits, State, Sections,
Extensions, Relations, Incoming relations (the last left to the other node, whose outgoing
relations they are). A value is JSON when it parses as JSON, else the text; a key is JSON-quoted
when it would not read back bare. Every JSON value is read within :mod:`narrative.lore.limits`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from narrative import safejson
from narrative.errors import InvalidInputError
from narrative.ids import LAYERS
from narrative.lore.entry import Entry
from narrative.lore.limits import check_value

LAYER_TITLES: Final = {"character": "Characters", "item": "Items", "ambient": "Ambient",
                       "background": "Background"}
_LAYER_BY_TITLE: Final = {title: layer for layer, title in LAYER_TITLES.items()}
TITLE: Final = re.compile(r"^# .*: codex\s*$")


def is_codex(text: str) -> bool:
    return bool(TITLE.match(text.lstrip().split("\n", 1)[0]))


def value(where: str, text: str) -> Any:
    """A codex value: JSON when it parses, else the text (the rule ``codex.text_value`` writes by)."""
    try:
        parsed = safejson.loads(text)
    except safejson.JSONLimitError:
        raise InvalidInputError(f"{where}: a value nested too deep to read") from None
    except ValueError:
        return text
    check_value(where, parsed)
    return parsed


def key_and_rest(line: str) -> tuple[str, str] | None:
    """``- key: rest`` -> ``(key, rest)``, the key JSON-quoted when the writer had to quote it."""
    body = line[2:]
    if body.startswith('"'):
        try:
            key, end = json.JSONDecoder().raw_decode(body)
        except (ValueError, RecursionError):
            key, end = None, 0
        if isinstance(key, str) and body[end:].startswith(": "):
            return key, body[end + 2:]
    if ": " not in body:
        return None
    key, rest = body.split(": ", 1)
    return key, rest


def _relation(where: str, rest: str) -> tuple[str, dict[str, Any]]:
    """``target (Name) {attrs}`` -> ``(target, attrs)``."""
    target, _, tail = rest.partition(" ")
    attrs: dict[str, Any] = {}
    for match in re.finditer(r"(?:^| )\{", tail):
        start = match.end() - 1
        try:
            parsed, end = json.JSONDecoder().raw_decode(tail, start)
        except RecursionError:
            raise InvalidInputError(f"{where}: relation attributes nested too deep to read") from None
        except ValueError:
            continue
        if end == len(tail.rstrip()) and isinstance(parsed, dict):
            check_value(where, parsed)
            attrs = parsed
            break
    return target, attrs


def _names(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        return []
    return [" ".join(v.split()) for v in values if isinstance(v, str) and v.strip()]


def parse_codex(label: str, text: str) -> list[Entry]:
    out: list[Entry] = []
    layer: str | None = None
    entry: Entry | None = None
    section = ""
    for number, line in enumerate(text.split("\n"), 1):
        where = f"{label}:{number}"
        if line.startswith("## "):
            title = line[3:].strip()
            layer = _LAYER_BY_TITLE.get(title, title.lower())
            if layer not in LAYERS:
                raise InvalidInputError(f"{where}: unknown layer section {title!r}")
            entry, section = None, ""
        elif line.startswith("### "):
            if layer is None:
                raise InvalidInputError(f"{where}: a node before any layer section")
            entry = Entry(where, line[4:].strip(), layer, layer_given=True, named_by="exact", exact=True)
            entry.title = entry.name
            out.append(entry)
            section = ""
        elif line.startswith("#### "):
            section = line[5:].strip().lower()
        elif line.startswith("- ") and entry is not None:
            parsed = key_and_rest(line)
            if parsed is None:
                raise InvalidInputError(f"{where}: not a '- key: value' line")
            key, rest = parsed
            if section == "":
                _field(where, entry, key, rest)
            elif section in ("traits", "state"):
                getattr(entry, section)[key] = value(where, rest)
            elif section == "sections":
                got = value(where, rest)
                entry.sections[key] = got if isinstance(got, str) else rest
            elif section == "extensions":
                entry.extensions[key] = value(where, rest)
            elif section == "relations":
                target, attrs = _relation(where, rest)
                entry.relations.append((key, target, attrs))
    for entry in out:
        if entry.ref is None:
            raise InvalidInputError(f"{entry.source}: the node {entry.name!r} has no '- id:' line")
    return out


def _field(where: str, entry: Entry, key: str, rest: str) -> None:
    if key == "id":
        entry.ref = rest.strip()
    elif key == "aliases":
        entry.aliases = _names(value(where, rest))
    elif key == "tags":
        entry.tags = _names(value(where, rest))
    elif key == "always_in_view":
        entry.always_in_view = value(where, rest) is True
    elif key in ("kind", "summary", "lifecycle"):
        got = value(where, rest)
        setattr(entry, key, got if isinstance(got, str) else rest)
