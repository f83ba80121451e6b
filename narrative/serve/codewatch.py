"""Whether narr's own files changed since a server started, known without reading them.

A client must not be answered by a server of other code (an edited checkout, an upgrade
under it). Working out the code's version costs a client a ``stat`` of every module
(about 200): a millisecond of each served command. A server that watches its package
with inotify knows instead: the kernel queues the event of an edit before the write
returns, so a non-blocking read of the queue when a client connects holds every edit
made before that client started. Such a server records :func:`narrative.client.code_identity`
(narr's version, where its package lies, the Python) and names it again when a client
connects for as long as its files are unchanged; a client whose identity is the same
needs no version of its own. Elsewhere (no inotify, a watch that failed) clients compare
the whole version as before.
"""

from __future__ import annotations

import os
import threading

from narrative import client
from narrative.store import Inotify, WatchTrouble, can_watch_files


class CodeWatch:
    """The watches on narr's package, for a server whose code version is ``version``."""

    def __init__(self, version: str) -> None:
        package = os.path.dirname(os.path.realpath(client.__file__))
        self._package = package
        self._place = _place(package)
        self._inotify: Inotify | None = Inotify(package, "")
        self._version = version
        self._lock = threading.Lock()  # connections are served on threads of their own
        # An edit after the version was worked out and before the watches took hold.
        self._changed = client.current_code_version() != version

    def unchanged(self) -> bool:
        """Whether the package's files are still the ones the server's version names (once
        they are not, never again)."""
        with self._lock:
            if self._changed or self._inotify is None:
                return False
            try:
                touched = any(_counts(path) for path in self._inotify.read())
                # A directory above the package moved or replaced (a checkout moved aside
                # and cloned anew) moves the watched one with it, unseen: its place tells.
                gone = _place(self._package) != self._place
            except (WatchTrouble, OSError):
                touched = gone = True  # the watches no longer cover what a client loads
            # Something under the package was written: the version says whether it was code
            # (a module's size or time), not a file beside it.
            if gone or (touched and client.current_code_version() != self._version):
                self._changed = True
                self.close()
            return not self._changed

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None


def _place(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _counts(path: str) -> bool:
    """Whether a change at ``path`` may be a change of code: a module, or a directory (made,
    moved or removed whole), not bytecode or an editor's swap file."""
    name = os.path.basename(path)
    return name.endswith(".py") or ("." not in name and name != "__pycache__")


def watch_code(version: str) -> CodeWatch | None:
    """A watch on narr's package, or None where there can be none (no inotify, no watch)."""
    if not can_watch_files():
        return None
    try:
        return CodeWatch(version)
    except (OSError, WatchTrouble):
        return None
