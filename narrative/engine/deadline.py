"""Long readings end: past their time budget with one clear error, or as soon as whoever asked
for them is gone.

Reading a chapter (``narr audit``, the review of ``narr chapter``) costs a few milliseconds
a sentence, and a draft can be long: a megabyte of text is minutes of work. Each reading
therefore runs against a :class:`Deadline`, checked between sentences, and stops with
:class:`~narrative.errors.OutOfTimeError` (saying how far it got) when its budget is spent.

A server reads for clients that can leave: an MCP client that cancels its call or closes
the server's standard input, an HTTP client that hangs up. The transport says so with
:func:`stop_when` (a check, set on the thread that does the work), and the next check
between two sentences raises :class:`Gone`: the work ends there, nothing having been
written, and no thread is left reading for nobody (the process that served the client can
exit). A chapter's recording is never stopped half-way: it is checked only before it
starts to write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from narrative.errors import OutOfTimeError

DEFAULT_BUDGET = 120.0
"""Seconds a reading may take unless told otherwise: 200k characters read in well under it."""

_local = threading.local()


class Gone(Exception):
    """Whoever asked for the work is gone: it stopped between two sentences, nothing written."""


@contextmanager
def stop_when(check: Callable[[], bool] | None) -> Iterator[None]:
    """Work on this thread inside the block stops at its next check once ``check()`` is true."""
    outer = getattr(_local, "check", None)
    _local.check = check if outer is None or check is None else (
        lambda: check() or outer())
    try:
        yield
    finally:
        _local.check = outer


def gone() -> bool:
    """Whether whoever asked for the work on this thread is gone."""
    check = getattr(_local, "check", None)
    return check is not None and bool(check())


class Deadline:
    """The end of one reading's budget; :meth:`check` between two units of its work."""

    def __init__(self, seconds: float | None, what: str, hint: str) -> None:
        if seconds is not None and not seconds > 0:
            from narrative.errors import InvalidInputError

            raise InvalidInputError(f"a time budget must be more than 0 seconds, not {seconds}")
        self.seconds = seconds
        self.what = what
        self.hint = hint
        self.started = time.monotonic()
        self.end = None if seconds is None else self.started + seconds

    def check(self, done: int, total: int, unit: str = "sentence") -> None:
        """Raise :class:`Gone` when the asker left, :class:`OutOfTimeError` past the budget."""
        if gone():
            raise Gone(f"{self.what} stopped at {unit} {done + 1} of {total}: its client left")
        if self.end is not None and time.monotonic() > self.end:
            raise OutOfTimeError(
                f"{self.what} ran past its time budget of {self.seconds:g} s: it had read "
                f"{done} of {total} {unit}s", hint=self.hint)

    @property
    def spent(self) -> float:
        return time.monotonic() - self.started
