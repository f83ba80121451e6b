"""Bounds on what an import reads, and the JSON reader that keeps to them.

A lorebook, a card or a vault may come from anyone, so every reader here has a size it stops at
and turns what is beyond it into one :class:`InvalidInputError` naming the file (and the entry
when there is one), never a traceback or an hour of work. The figures are far above what real
files hold (the largest published lorebooks are a few MB with a few thousand entries, an entry a
few KB with a dozen keys) and low enough that the worst input still imports in seconds.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from narrative import safejson
from narrative.errors import InvalidInputError

MB: Final = 1024 * 1024
MAX_TEXT_FILE: Final = 8 * MB  # one Markdown note or codex
MAX_JSON_FILE: Final = 64 * MB  # a lorebook or card: narr's own export of 16,000 nodes is about 45 MB
MAX_PNG_FILE: Final = 64 * MB  # a card's image may be large; its text chunk may not
MAX_CHUNK: Final = 8 * MB  # one PNG text chunk, and a CHARX's card.json, once inflated
MAX_PNG_TEXT: Final = 12 * MB  # the card text (chara and ccv3 together) one PNG gives, inflated
MAX_PNG_CHUNKS: Final = 100_000  # a 64 MB image in libpng's 8 KB chunks has about 8,000
MAX_ENTRIES: Final = 20_000  # entries in one lorebook
MAX_KEYS: Final = 1_000  # keys (or secondary keys) of one entry
MAX_ENTRY_TEXT: Final = 1 * MB  # the content of one entry, one note's body
MAX_DEPTH: Final = 48  # objects inside each other: a node keeps what it imports a few levels down
MAX_INT_BITS: Final = 64  # a story's numbers fit in 64 bits (JavaScript's in 53)
MAX_FILES: Final = 50_000  # files in an imported folder


def too_big(label: str, size: int, limit: int, what: str = "file") -> InvalidInputError:
    return InvalidInputError(
        f"{label}: the {what} is {_size(size)}, more than the {_size(limit)} narr imports",
        hint="split it into smaller files and import them one by one")


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n:,} bytes"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(label: str, text: str) -> Any:
    """``text`` as JSON, refused with a message naming ``label`` when it is not JSON or is
    beyond the bounds (nesting, huge integers, NaN, text that is not Unicode)."""
    try:
        value = safejson.loads(text, parse_constant=_reject_constant, max_depth=MAX_DEPTH)
    except safejson.JSONLimitError as exc:
        raise InvalidInputError(f"{label}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{label}: not JSON (line {exc.lineno}, column {exc.colno}: "
                                f"{exc.msg})") from None
    except ValueError as exc:  # an integer of thousands of digits, NaN
        raise InvalidInputError(f"{label}: not JSON narr can read ({_first_sentence(exc)})") from None
    if _RISKY.search(text):  # else nothing in it can break a bound: the walk is paid only when it may
        check_value(label, value)
    return value


# what JSON text must hold for a parsed value to break a bound that parsing does not check
# (depth it does): a surrogate written as an escape, an integer of 20 digits or more (64 bits
# hold 19), an exponent of three digits (a float beyond 1e308 is infinite)
_RISKY: Final = re.compile(r"\\u[dD][89a-fA-F]|\d{20}|[eE][+-]?\d{3}")


def _first_sentence(exc: Exception) -> str:
    return str(exc).split(";")[0].split(": value has")[0]


def check_value(label: str, value: Any, depth_limit: int = MAX_DEPTH) -> None:
    """Refuse, naming ``label``, a parsed value too deep, with an integer too long, a number
    that is not finite or a string that is not valid Unicode. Iterative: any depth is safe."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if item.bit_length() > MAX_INT_BITS:
                raise InvalidInputError(f"{label}: an integer beyond {MAX_INT_BITS} bits "
                                        f"({item.bit_length():,} bits)")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInputError(f"{label}: a number too large for JSON")
        elif isinstance(item, str):
            _check_text(label, item)
        elif isinstance(item, dict | list):
            if depth > depth_limit:
                raise InvalidInputError(f"{label}: values nested more than {depth_limit} levels deep")
            if isinstance(item, dict):
                for key in item:
                    if isinstance(key, str):
                        _check_text(label, key)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)


def _check_text(label: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{label}: text {text[:20]!r}... is not valid Unicode "
                                "(a lone surrogate)") from None


def decode_text(label: str, data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped), or an error naming the byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{label}: not UTF-8 text (byte {exc.start})") from None
