"""A served command whose server died or stopped under it: what happened, said exactly.

The thin client (:mod:`narrative.client`) keeps what it handed over: the arguments,
the standard input the command read, and, for ``narr event``, the id the server said
the event would take when it began. When the server dies after the command began,
the connection cannot say whether the command wrote; the world can, once no server
can write any more. Its journal is finished or undone as after any crash, and the
event was recorded exactly when a branch holds a commit whose record has that id. So
the client says that the event was recorded, or says that it was not and records it
here itself: nothing typed is lost, nothing is recorded twice.

A server stopped (SIGSTOP, Ctrl-Z) longer than a client waits may still go on. Its
client keeps the event's words as a failed event (``narr failed``, ``narr event
--retry``) rather than record it here and leaves; the server, going on, writes nothing
of a command whose client has left unless its write had begun, and then its own run
forgets the kept copy (:func:`narrative.engine.failed.forget_same`): recorded once.

Only this rare path imports narr's engine in the client.
"""

from __future__ import annotations

import io
import sys
from typing import Any

from narrative.client import READERS, Interrupted, split_globals


def settle(lost: Interrupted, argv: list[str], git_dir: str, prog_name: str) -> int | None:
    """What the client does after ``lost``: the exit code to leave with, having said what
    happened, or None to run the command in this process (it did not happen, and no server
    will run it now)."""
    directory, command = split_globals(argv)
    pid = lost.info.get("pid")
    gone = lost.state == "gone"
    if command == "event":
        if lost.started:
            from narrative.errors import NarrError

            try:
                commit = recorded(directory, lost.event_id)
            except NarrError as exc:  # the world cannot be opened here now (moved, damaged...)
                _say(f"error: the narr server stopped while it ran this event, and whether it "
                     f"was recorded cannot be told here ({exc.message}); {prog_name} log shows "
                     "the story line")
                return 1
            if commit is not None:
                lost_words = "" if lost.printed else (
                    f"; what it would have printed is lost: {prog_name} show {commit[:10]} "
                    "shows the event")
                _say(f"warning: the narr server stopped while it ran this command, after it "
                     f"recorded the event as {commit[:10]}{lost_words}")
                return 0
        if gone:
            _say("warning: the narr server stopped before it recorded this event; it is "
                 "recorded here instead")
            _replay_stdin(lost.stdin)
            return None
        from narrative.engine.event import keep_instead

        keep_instead(f"the narr server (pid {pid}) was stopped (SIGSTOP or Ctrl-Z) while it had "
                     "this event, so it is kept here instead: the server records it only if it "
                     f"had begun writing it (it finishes when it goes on, kill -CONT {pid}, and "
                     "forgets this copy)")
        _replay_stdin(lost.stdin)
        return None
    if command in READERS and not lost.printed:
        return None  # a read that printed nothing yet: read again here
    if gone:
        _say(f"error: the narr server stopped while running this command; run {prog_name} "
             "status to see where the story stands")
    else:
        _say(f"error: the narr server (pid {pid}) was stopped (SIGSTOP or Ctrl-Z) while it had "
             f"this command: it goes on when the server does (kill -CONT {pid}), or never "
             f"({prog_name} serve --stop); {prog_name} status shows where the story stands")
    return 1


def recorded(directory: str | None, event_id: str | None) -> str | None:
    """The commit that recorded ``event_id`` on one of the world's branches, once an
    interrupted write is finished or undone; None when none did."""
    if event_id is None:
        return None
    from narrative.invocation import absolute
    from narrative.store import WorldRepo, finish_interrupted, recent_event

    with WorldRepo.open(absolute(directory or ".")) as wr:
        finish_interrupted(wr)
        found = recent_event(wr, event_id, _event_time(event_id))
        return found.id if found is not None else None


def _event_time(event_id: str) -> float:
    """The time an event id was made (its first 48 bits: milliseconds since the epoch)."""
    try:
        return int(event_id.replace("-", "")[:12], 16) / 1000
    except ValueError:
        return 0.0


def _replay_stdin(data: bytes | None) -> None:
    """Standard input as the command first found it: what it had read through the server,
    then the rest of it, for it to read again here."""
    if data is not None:
        encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Again(data, sys.stdin)), encoding=encoding)


class _Again(io.RawIOBase):
    """``data``, then what is left of the stream ``was``. It holds ``was`` itself, not only its
    buffer: a text stream let go closes the buffer under it."""

    def __init__(self, data: bytes, was: Any) -> None:
        self._data = memoryview(data)
        self._was = was
        self._rest = getattr(was, "buffer", None)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._data:
            n = min(len(buffer), len(self._data))
            buffer[:n] = self._data[:n]
            self._data = self._data[n:]
            return n
        if self._rest is None:
            return 0
        read = getattr(self._rest, "read1", None) or self._rest.read
        chunk = read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


def _say(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"narr: {text}\n")
    sys.stderr.flush()
