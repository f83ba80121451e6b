"""The time budget for matching a world's rules and cue words against one event's text.

A world's rule patterns and its ``[cues]`` words are compiled into regular
expressions. Written carelessly (or on purpose) one can match in exponential
time ("(a|a a) (a|a a) ... b", a cue term of many ``{x}``), and cloning someone's
story must not hang narr. Every expression made from a world's words is therefore
compiled here, with the ``regex`` module, whose matching takes a ``timeout``:

- the budget holds on any thread (a signal timer only reaches the main thread,
  and ``narr serve`` runs events on others);
- ``regex`` releases the GIL while it matches a ``str``, so a long match does not
  stall the server's other requests as ``re`` would;
- it is ``re``'s syntax and semantics (``VERSION0``) for the expressions narr
  builds (escaped words, classes, gaps, look-behinds), so rules match as before.

The deadline lives in a context variable set by :func:`within`: a match outside
any budget (a test, ``narr audit`` splitting sentences) runs unbounded, as with
``re``. ``regex`` is imported on the first compile, not when narr starts (it costs
a process about 5 ms). narr's own fixed expressions stay with ``re``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

_deadline: ContextVar[float | None] = ContextVar("narr_match_deadline", default=None)


class OutOfTime(Exception):
    """The budget ran out while matching; its text, when set, names what was matching."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Matching in the block stops with :class:`OutOfTime` once ``seconds`` are spent
    (or an enclosing budget's end comes first)."""
    deadline = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _deadline.reset(token)


def _timeout() -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise OutOfTime
    return left


@lru_cache(maxsize=4096)
def compile(pattern: str, *, ignore_case: bool = True) -> regex.Pattern[str]:
    """``pattern`` compiled with ``re``'s semantics (case-insensitive unless told)."""
    import regex

    return regex.compile(pattern, regex.V0 | (regex.IGNORECASE if ignore_case else 0))


def search(rx: regex.Pattern[str], text: str, pos: int = 0,
           endpos: int | None = None) -> regex.Match[str] | None:
    try:
        return rx.search(text, pos, endpos, timeout=_timeout())
    except TimeoutError:
        raise OutOfTime from None


def match(rx: regex.Pattern[str], text: str, pos: int = 0,
          endpos: int | None = None) -> regex.Match[str] | None:
    try:
        return rx.match(text, pos, endpos, timeout=_timeout())
    except TimeoutError:
        raise OutOfTime from None


def fullmatch(rx: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    try:
        return rx.fullmatch(text, timeout=_timeout())
    except TimeoutError:
        raise OutOfTime from None


def finditer(rx: regex.Pattern[str], text: str, pos: int = 0,
             endpos: int | None = None) -> Iterator[regex.Match[str]]:
    try:
        yield from rx.finditer(text, pos, endpos, timeout=_timeout())
    except TimeoutError:
        raise OutOfTime from None
