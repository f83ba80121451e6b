"""Long readings end: past their time budget with one clear error, or as soon as whoever asked
for them is gone.

Reading a chapter (``narr audit``, the review of ``narr chapter``) costs a few milliseconds
a sentence, and a draft can be long: a megabyte of text is minutes of work. Each reading
therefore runs against a :class:`Deadline`, checked between sentences, and stops with
:class:`~narrative.errors.OutOfTimeError` (saying how far it got) when its budget is spent.

A server reads for clients that can leave (an MCP client that cancels its call or hangs up,
an HTTP client that hangs up, a served command's client gone): the transport says so with
:func:`narrative.engine.calloff.watching`, and each check here asks it too, so the work ends
between two sentences with :class:`~narrative.engine.calloff.CalledOff`, nothing having been
written. A chapter's recording is never stopped half-way: it is checked only before it
starts to write.
"""

from __future__ import annotations

import time

from narrative.engine import calloff
from narrative.errors import OutOfTimeError

DEFAULT_BUDGET = 120.0
"""Seconds a reading may take unless told otherwise: 200k characters read in well under it."""


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
        """Raise :class:`~narrative.engine.calloff.CalledOff` when the asker left,
        :class:`OutOfTimeError` past the budget."""
        try:
            calloff.check()
        except calloff.CalledOff:
            raise calloff.CalledOff(
                f"{self.what} stopped at {unit} {done + 1} of {total}: its client left") from None
        if self.end is not None and time.monotonic() > self.end:
            raise OutOfTimeError(
                f"{self.what} ran past its time budget of {self.seconds:g} s: it had read "
                f"{done} of {total} {unit}s", hint=self.hint)

    @property
    def spent(self) -> float:
        return time.monotonic() - self.started
