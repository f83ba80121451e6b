"""Repository handles a server keeps between commands (:class:`narrative.store.worldrepo.RepositoryPool`).

A fresh handle pays, at its first attribute lookup, for reading git's index (1 MB at 10k
nodes, 10 MB at 100k) and the attribute files, and again before it writes the index. A kept
handle re-reads only what changed on disk: libgit2 checks the index's, the attribute files'
and the config's stamps, reads refs from disk every time and looks for objects written by
others when one is missing, so plain git run beside the server is seen as it is by a fresh
handle. The one thing it does not re-read is a setting it has looked up once
(``core.autocrlf``...): a handle is kept only with the stamp of the config files it was
opened under (:func:`narrative.store.gitconfig.settings_stamp`), and one whose files changed
since is dropped for a fresh one.

A command run once needs none of this, so the store opens a handle per world unless a
server installs this pool (:func:`keep_repositories_warm`, :func:`lend_repositories_to_readers`).

The handles are the store's own objects, held here without being looked into.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any


class _Warm(threading.local):
    repos: dict[str, tuple[Any, Hashable]] | None = None  # found -> (handle, its stamp)


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
        self.idle: dict[str, list[tuple[Any, Hashable]]] = {}

    def take(self, found: str, stamp: Hashable) -> Any:
        with self.lock:
            if not self.enabled:
                return None
            free = self.idle.get(found)
            if free and free[-1][1] != stamp:
                free.clear()  # opened under settings changed since: none will do
            return free.pop()[0] if free else None

    def give_back(self, found: str, repo: Any, stamp: Hashable) -> bool:
        with self.lock:
            if not self.enabled:
                return False
            free = self.idle.setdefault(found, [])
            if len(free) >= self.IDLE or any(r is repo for r, _ in free):
                return False
            free.append((repo, stamp))
            return True


class Pool:
    """The store's :class:`~narrative.store.worldrepo.RepositoryPool` of a server: a thread
    that keeps its handles warm uses its own; any other takes one an earlier reader gave back."""

    def __init__(self) -> None:
        self.warm = _Warm()
        self.lent = _Lent()

    def take(self, found: str, opener: Callable[[str], Any], stamp: Hashable) -> Any:
        kept = self.warm.repos
        if kept is None:
            return self.lent.take(found, stamp) or opener(found)
        held = kept.get(found)
        if held is not None and held[1] == stamp:
            return held[0]
        # None kept, or one opened under settings changed since (dropped, not freed: a
        # world still open on this thread may hold it; it goes when the last one closes)
        repo = opener(found)
        kept[found] = (repo, stamp)
        return repo

    def give_back(self, found: str, repo: Any, stamp: Hashable) -> bool:
        kept = self.warm.repos
        if kept is not None and any(r is repo for r, _ in kept.values()):
            return True  # this thread's own, open for its next command
        return self.lent.give_back(found, repo, stamp)


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
