"""The one JSON reader for what comes from outside narr's own process.

A world's node files and event records, a remote's history, an import, a request: any of
them may come from a stranger. Python's parser recurses once per nesting level, so JSON
nested a thousand deep raises ``RecursionError`` (a traceback in every command that reads
that commit), and whatever survives the parser can still blow the stack of a later step
(``json.dumps``, pydantic, a deep copy). Every reader goes through :func:`loads`, which
bounds size and depth and turns a violation into :class:`JSONLimitError`, a ``ValueError``
naming what was wrong, so each caller's existing "not JSON" path (skip the commit, refuse
the file, a 400) handles it too.

The bounds sit far above anything narr writes (a node is refused past 64 levels, a record
wraps node values a few levels further down) and far below what hurts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

MAX_DEPTH: Final = 200  # objects and arrays inside each other
MAX_BYTES: Final = 256 * 1024 * 1024  # one document: an import of 20,000 entries is ~20 MB


class JSONLimitError(ValueError):
    """JSON beyond narr's bounds: too deep, too large."""


class TooDeepError(JSONLimitError):
    """Objects and arrays nested beyond the bound."""


def loads(data: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH,
          max_bytes: int = MAX_BYTES,
          object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
          parse_constant: Callable[[str], Any] | None = None) -> Any:
    """``json.loads`` within bounds: :class:`JSONLimitError` past ``max_depth`` levels or
    ``max_bytes`` (``json.JSONDecodeError`` and ``ValueError`` as usual otherwise)."""
    if len(data) > max_bytes:
        raise JSONLimitError(f"{len(data):,} bytes of JSON, more than the {max_bytes:,} "
                             "narr reads")
    try:
        if object_pairs_hook is None and parse_constant is None:
            value = json.loads(data)  # the module's one decoder: no new one per call (2x faster)
        else:
            value = json.loads(data, object_pairs_hook=object_pairs_hook,
                               parse_constant=parse_constant)
    except RecursionError:
        raise TooDeepError(f"values nested more than {max_depth} levels deep") from None
    if _may_be_deeper(data, max_depth) and depth_beyond(value, max_depth):
        raise TooDeepError(f"values nested more than {max_depth} levels deep")
    return value


def _may_be_deeper(data: str | bytes | bytearray, max_depth: int) -> bool:
    """Whether ``data`` holds enough brackets to nest past ``max_depth`` (a count at C speed,
    so the walk is paid only by documents that could fail it)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{") > max_depth
    return data.count(b"[") + data.count(b"{") > max_depth


def depth_beyond(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether a parsed value nests objects and arrays more than ``max_depth`` deep
    (iterative: safe at any depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return False
