"""Work a write may leave until its answer is out.

Bringing the catalog to the world a move landed on is a quarter of a reset at 10k nodes,
and nobody needs to wait for it: the catalog is a cache that names the tree it describes,
and every reader of it brings it to the tree it reads first (a command that comes before
the work is done loses time, never truth). A server collects such work while it runs a
command and does it on its writer thread once the answer has gone, before the next write;
anywhere else the work is done at once, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_PENDING: ContextVar[list[Callable[[], None]] | None] = ContextVar("narr_deferred", default=None)


def deferring() -> bool:
    """Whether work handed to :func:`later` now waits for the answer."""
    return _PENDING.get() is not None


def later(work: Callable[[], None]) -> None:
    """Do ``work`` once the answer is out (now, where nobody collects it)."""
    pending = _PENDING.get()
    if pending is None:
        work()
    else:
        pending.append(work)


@contextlib.contextmanager
def collecting() -> Iterator[list[Callable[[], None]]]:
    """Collect the work :func:`later` is handed in this thread, for the caller to run."""
    pending: list[Callable[[], None]] = []
    token = _PENDING.set(pending)
    try:
        yield pending
    finally:
        _PENDING.reset(token)
