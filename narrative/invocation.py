"""Where a command runs: its working directory and its environment variables.

A ``narr`` process runs one command, in the process's own directory with the
process's own variables. A server (``narr serve``) runs many commands at once, each
for a client standing in its own directory with its own variables; changing the
process's directory or ``os.environ`` for one of them would change them for every
other command running beside it. So narr reads both through this module: the
current command's :class:`Invocation` (a context variable the server sets for each
request, on the thread that runs it) or, outside one, the process's.

Only the places that read a variable or resolve a path a user typed come here;
everything else works with absolute paths (a world's root is always absolute).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Invocation:
    """One command's working directory (absolute) and environment."""

    cwd: str
    env: Mapping[str, str]
    # The id the command's event takes (a server names it to its client before the event
    # runs, so that a client whose server dies can tell whether the event was recorded).
    event_ids: list[str] = field(default_factory=list)


_current: ContextVar[Invocation | None] = ContextVar("narr_invocation", default=None)
_remote: ContextVar[str | None] = ContextVar("narr_remote", default=None)


@contextmanager
def running(cwd: str, env: Mapping[str, str], event_id: str | None = None) -> Iterator[Invocation]:
    """Run the block as a command started in ``cwd`` with the variables ``env``; the first
    event it records takes ``event_id``, when given."""
    invocation = Invocation(os.path.abspath(cwd), dict(env), [event_id] if event_id else [])
    token = _current.set(invocation)
    try:
        yield invocation
    finally:
        _current.reset(token)


@contextmanager
def remote(door: str) -> Iterator[None]:
    """Run the block for a program on the other side of a socket (``door``: ``HTTP``, ``MCP``).

    Such a caller has no directory and no files on this machine, and may be an agent the
    machine's user did not watch: a path it names is read only inside the world (the lore an
    import reads), never elsewhere on the user's disk. Set on the thread that runs the call."""
    token = _remote.set(door)
    try:
        yield
    finally:
        _remote.reset(token)


def remote_door() -> str | None:
    """The door of the call under way when it came over a socket (:func:`remote`), else None."""
    return _remote.get()


def reserved_event_id() -> str | None:
    """The id set aside for the next event this command records (taken: the one after it
    gets a new id), or None."""
    current = _current.get()
    return current.event_ids.pop() if current is not None and current.event_ids else None


def environ() -> Mapping[str, str]:
    """The command's environment (the process's outside a server's request)."""
    current = _current.get()
    return os.environ if current is None else current.env


def getenv(name: str, default: str | None = None) -> str | None:
    return environ().get(name, default)


def absolute(path: str | os.PathLike[str]) -> Path:
    """A path the user typed, as the command must open it.

    Relative paths are relative to the command's directory. Outside a server's
    request that is the process's own, so the path is left as typed (and messages
    naming it read as the user wrote it).
    """
    given = Path(path)
    current = _current.get()
    if current is None or given.is_absolute():
        return given
    return Path(current.cwd) / given


def cwd() -> str:
    """The command's working directory."""
    current = _current.get()
    return os.getcwd() if current is None else current.cwd


def expanduser(path: str) -> str:
    """``~`` and ``~/...`` with the command's ``HOME`` (``~user`` as the system knows it)."""
    current = _current.get()
    if current is None or not (path == "~" or path.startswith("~/")):
        return os.path.expanduser(path)
    home = current.env.get("HOME")
    if home is None:  # as os.path.expanduser does without HOME
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    return (home.rstrip("/") + path[1:]) or "/"
