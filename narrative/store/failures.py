"""Failures of the machine or the repository, named: a full disk, a read-only mount, a damaged
object. Kept here, where git and SQLite are, so the command line loads neither to start."""

from __future__ import annotations

import sqlite3

from narrative.errors import NarrError, RepositoryDamagedError, Step, StorageError, storage_error
from narrative.store.libgit import pygit2

_FULL_DB = ("database or disk is full", "disk i/o error")
_READ_ONLY_DB = ("readonly database", "unable to open database file")


def environment_error(exc: BaseException) -> NarrError | None:
    """The typed error for a failure of the machine or the repository, not of narr.

    The library converts these where it can say more (which file, whether the
    story moved); this is the net under the rest, so a full disk, a read-only
    mount or a damaged object is one clear message, never a traceback.
    """
    if isinstance(exc, OSError):
        return storage_error(exc, exc.filename or "a file")
    if isinstance(exc, sqlite3.Error):
        text = str(exc).lower()
        if any(s in text for s in _FULL_DB):
            return StorageError(f"the disk is full: narr's cache cannot be written ({exc})",
                                hint="free some space and run the command again")
        if any(s in text for s in _READ_ONLY_DB):
            return StorageError(f"the world is read-only: narr's cache cannot be written ({exc})")
        return None
    if isinstance(exc, pygit2.GitError):
        text = str(exc)
        if "No space left" in text:
            return StorageError(f"the disk is full: git cannot write ({text})",
                                hint="free some space and run the command again")
        if "Read-only file system" in text or "Permission denied" in text:
            return StorageError(f"the world is read-only: git cannot write ({text})")
        return RepositoryDamagedError(
            f"the repository is damaged: {text}",
            hint="{0} names what is broken; git fsck says more (a clone or a backup has the "
                 "history)", steps=[Step("check")])
    return None



def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` is git failing to read an object (a damaged file, a lost commit)."""
    return isinstance(exc, pygit2.GitError | KeyError)
