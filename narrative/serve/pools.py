"""Repository handles a server keeps between commands (:class:`narrative.store.worldrepo.RepositoryPool`).

A fresh handle pays, at its first attribute lookup, for reading git's index (1 MB at 10k
nodes, 10 MB at 100k) and the attribute files, and again before it writes the index. A kept
handle re-reads only what changed on disk: libgit2 checks the index's, the attribute files'
and the config's stamps, reads refs from disk every time and looks for objects written by
others when one is missing, so plain git run beside the server is seen as it is by a fresh
handle. A command run once needs none of this, so the store opens a handle per world unless
a server installs this pool (:func:`keep_repositories_warm`, :func:`lend_repositories_to_readers`).

The handles are the store's own objects, held here without being looked into.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class _Warm(threading.local):
    repos: dict[str, Any] | None = None


class _Lent:
    """Repository handles a server lends its readers, one command at a time each.

    Readers run on a thread of their own per request, so a thread's kept handle
    (:func:`keep_repositories_warm`) would be opened afresh every time: a status with
    hand edits paid for git's index again (3 ms of its 10 at 10k nodes, 10 MB to read
    at 100k). A handle taken from here is the taker's alone until its world closes and
    gives it back; libgit2 re-reads from disk what changed since, as for a kept one.
    """

    IDLE = 4  # handles kept per world between commands

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.enabled = False
        self.idle: dict[str, list[Any]] = {}

    def take(self, found: str) -> Any:
        with self.lock:
            if not self.enabled:
                return None
            free = self.idle.get(found)
            return free.pop() if free else None

    def give_back(self, found: str, repo: Any) -> bool:
        with self.lock:
            if not self.enabled:
                return False
            free = self.idle.setdefault(found, [])
            if len(free) >= self.IDLE or any(r is repo for r in free):
                return False
            free.append(repo)
            return True


class Pool:
    """The store's :class:`~narrative.store.worldrepo.RepositoryPool` of a server: a thread
    that keeps its handles warm uses its own; any other takes one an earlier reader gave back."""

    def __init__(self) -> None:
        self.warm = _Warm()
        self.lent = _Lent()

    def take(self, found: str, opener: Callable[[str], Any]) -> Any:
        kept = self.warm.repos
        if kept is None:
            return self.lent.take(found) or opener(found)
        repo = kept.get(found)
        if repo is None:
            repo = kept[found] = opener(found)
        return repo

    def give_back(self, found: str, repo: Any) -> bool:
        kept = self.warm.repos
        if kept is not None and any(r is repo for r in kept.values()):
            return True  # this thread's own, open for its next command
        return self.lent.give_back(found, repo)


POOL = Pool()


def _install() -> None:
    from narrative.store import use_pool

    use_pool(POOL)


def keep_repositories_warm() -> None:
    """Keep each repository this thread opens open for its next command. Per thread: the
    server's writers, which run one at a time on its writer thread, share one; readers on
    other threads open their own (or borrow: :func:`lend_repositories_to_readers`)."""
    _install()
    if POOL.warm.repos is None:
        POOL.warm.repos = {}


def lend_repositories_to_readers() -> None:
    """In a server: let reader threads reuse the handles earlier readers closed."""
    _install()
    POOL.lent.enabled = True
