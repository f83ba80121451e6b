"""How far a long use case has got, told to whoever shows it (the command line's bar).

A row of the operations table runs with its arguments alone, and a door's progress bar is no
argument: the door that draws one (the command line, on a terminal) sets it for the thread that
runs the row (:func:`telling`), and a use case given no ``progress`` of its own tells that one
(:func:`teller`). Through HTTP and MCP none is set and nothing is told.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[int, int, str], None]
"""``progress(done, total, what)``."""

_local = threading.local()


@contextmanager
def telling(progress: Progress | None) -> Iterator[None]:
    """Within the block, a use case on this thread tells ``progress`` how far it is."""
    saved = getattr(_local, "progress", None)
    _local.progress = progress
    try:
        yield
    finally:
        _local.progress = saved


def teller() -> Progress | None:
    """What this thread's long use case tells how far it is (None: nobody watches)."""
    found: Progress | None = getattr(_local, "progress", None)
    return found
