"""A long read called off when the one who asked for it has gone.

A server runs each call on a worker thread; a thread cannot be stopped from outside, so a read
that takes seconds (``audit`` of a long chapter) would run to its end at full CPU for a client
that hung up long ago. The server sets a check for the thread that runs the call
(:func:`watching`); the operation's loop asks :func:`check` at each step (a sentence), which
raises :class:`CalledOff` once the check says the caller is gone. A read has nothing to undo,
so stopping between two steps is always safe. Outside a server no check is set and
:func:`check` costs an attribute lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


class CalledOff(Exception):
    """The caller went away: the read stopped between two steps, with nothing to answer."""


@contextmanager
def watching(gone: Callable[[], bool] | None) -> Iterator[None]:
    """Within the block, :func:`check` on this thread raises once ``gone()`` is true."""
    saved = getattr(_local, "gone", None)
    _local.gone = gone
    try:
        yield
    finally:
        _local.gone = saved


def check() -> None:
    """Raise :class:`CalledOff` when this thread's caller has gone."""
    gone = getattr(_local, "gone", None)
    if gone is not None and gone():
        raise CalledOff
