"""The world's write lock: two narr processes never interleave writes.

The lock is ``flock`` on POSIX and ``filelock``'s elsewhere (``msvcrt.locking``
on Windows), both released by the system when a process dies, so a ``kill -9``
never leaves a stale lock behind. POSIX takes ``flock`` directly because importing
filelock (with the logging and asyncio machinery it brings) costs 40-80 ms, which
every reader that tidies the stat cache would pay: more than the rest of
``narr status`` on a small world. The holder writes its pid and command into a file beside the
lock so the process that is turned away can say who is busy.

A world on a read-only (or full) file system cannot take the lock: writers say
so with a :class:`~narrative.errors.StorageError`, readers go on without it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from narrative.errors import BusyError, StorageError, storage_error
from narrative.invocation import getenv

DEFAULT_TIMEOUT = 3.0
POLL = 0.05


_running = threading.local()


def command() -> list[str]:
    """The command line to name in the lock file: the process's, or the request a server runs."""
    argv: list[str] | None = getattr(_running, "argv", None)
    return argv if argv is not None else sys.argv


def running_command(argv: list[str] | None) -> None:
    """Name ``argv`` (None: the process's own) as this thread's command in lock files it takes."""
    _running.argv = argv


def give_up_waiting(check: Callable[[], bool] | None) -> None:
    """Let this thread's next write be called off while it waits for the lock: ``check()``
    true then raises :class:`Abandoned` (nothing written). Once the lock is taken the write
    goes through whole, whatever ``check`` says. None: wait as usual."""
    _running.give_up = check


def call_off_writes(check: Callable[[], bool] | None) -> None:
    """Let this thread's writes be called off until each writes its first byte, not only
    while they wait for the lock: ``check()`` true then raises :class:`Abandoned` where a
    write begins (:func:`refuse_if_called_off`). What Ctrl-C does to a process of its own,
    for a command run for a client that can go away (``narr serve``). None: as usual."""
    _running.call_off = check


def refuse_if_called_off() -> None:
    """Raise :class:`Abandoned` when this thread's write was called off
    (:func:`call_off_writes`) and has written nothing yet: where a write begins, its lock
    held, which may come long after the lock was taken (an event holds it while it
    resolves names and asks its diffuser). A call that writes twice may stop between the
    two, as a process interrupted there would."""
    check = getattr(_running, "call_off", None)
    if check is not None and check():
        raise Abandoned("the write was called off before it wrote anything")


class Abandoned(Exception):
    """A write called off while it waited for the world's lock: nothing was written."""


class _Timeout(Exception):
    pass


class _Flock:
    """An exclusive ``flock`` on one file, with filelock's ``acquire``/``release`` shape."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float, poll_interval: float) -> None:
        import fcntl
        import time

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._fd = fd
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise _Timeout() from None
                time.sleep(poll_interval)

    def release(self) -> None:
        import fcntl

        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def _new_lock(path: Path) -> tuple[Any, type[Exception]]:
    """The lock object for ``path`` and the exception its ``acquire`` raises on time-out."""
    try:
        import fcntl  # noqa: F401  (only whether it exists)
    except ImportError:
        from filelock import FileLock, Timeout

        return FileLock(str(path)), Timeout
    return _Flock(str(path)), _Timeout


def lock_timeout() -> float:
    try:
        return max(0.0, float(getenv("NARR_LOCK_TIMEOUT") or DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


class WriteLock:
    """Exclusive, re-entrant within one object; refuses once the lock has stayed with one
    holder for ``timeout`` seconds of its wait.

    A wait counts from the last sign that the writers ahead are getting on (the lock changed
    hands, or its holder used the processor), not from its start: twenty commands started
    at once on a busy machine each wait their turn, as writers queued in a server do, and
    only a holder that sits on the lock (stopped, or waiting on something else) turns the
    others away."""

    def __init__(self, path: Path, timeout: float | None = None,
                 taken: Callable[[], None] | None = None) -> None:
        self.path = path
        self.timeout = lock_timeout() if timeout is None else timeout
        self._taken = taken  # called at each hold's start, the lock held
        self._lock: Any = None  # a _Flock, or a filelock lock where fcntl does not exist
        self._depth = 0
        # How many times this object has taken the lock: what was seen under one hold is
        # still so under it, as no other narr process can have written meanwhile.
        self.holds = 0

    @property
    def holder_path(self) -> Path:
        return self.path.with_name(self.path.name + ".holder")

    def acquire(self) -> None:
        if self._lock is not None:
            self._depth += 1
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock, timed_out = _new_lock(self.path)
        except OSError as exc:
            raise _refused(exc, self.path) from None
        try:
            self._wait(lock, timed_out)
        except timed_out:
            raise BusyError(
                f"another narr process{_read_holder(self.holder_path)} is changing this world",
                hint="wait for it to finish and run the command again",
            ) from None
        except OSError as exc:
            raise _refused(exc, self.path) from None
        try:
            self.holder_path.write_bytes(
                f"{os.getpid()} {' '.join(command()[:4])}\n".encode("utf-8", "replace"))
        except OSError as exc:
            lock.release()
            raise _refused(exc, self.holder_path) from None
        self._lock = lock
        self._depth = 1
        self.holds += 1
        if self._taken is not None:
            try:
                self._taken()
            except BaseException:
                self.release()
                raise

    def _wait(self, lock: Any, timed_out: type[Exception]) -> None:
        """Take ``lock`` before it has stayed with one holder for the timeout, or give up when
        this thread's write is called off (:func:`give_up_waiting`), polling for either. A
        write called off before it asks (its caller gone while it prepared) takes no lock."""
        give_up = getattr(_running, "give_up", None)
        if give_up is not None and give_up():
            raise Abandoned("the write was called off before it took the world's lock")
        try:
            lock.acquire(timeout=0.0, poll_interval=POLL)
            return
        except timed_out:
            pass
        import time

        deadline = time.monotonic() + self.timeout
        seen = _stamp(self.holder_path)
        while True:
            if give_up is not None and give_up():
                raise Abandoned("the write was called off while it waited for the world's lock")
            try:
                lock.acquire(timeout=min(POLL, max(0.0, deadline - time.monotonic())),
                             poll_interval=POLL)
            except timed_out:
                now = _stamp(self.holder_path)
                if now != seen:  # the writers ahead are getting on
                    seen = now
                    deadline = time.monotonic() + self.timeout
                elif time.monotonic() >= deadline:
                    raise
                continue
            _running.give_up = None  # taken: this write, and the rest of its call, go through
            return

    def try_acquire(self) -> bool:
        """Take the lock only if it is free right now (readers that may tidy up use this).

        A read-only or full file system is no reason for a reader to fail: it then
        simply does without the lock (and does not tidy up).
        """
        saved, self.timeout = self.timeout, 0.0
        # A reader's hold is not the write a called-off check is for (give_up_waiting):
        # it neither asks nor spends it.
        give_up, _running.give_up = getattr(_running, "give_up", None), None
        try:
            self.acquire()
        except (BusyError, StorageError):
            return False
        finally:
            self.timeout = saved
            _running.give_up = give_up
        return True

    def release(self) -> None:
        if self._lock is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        lock, self._lock = self._lock, None
        try:
            self.holder_path.write_bytes(b"")
        except OSError:
            pass  # only a name for a busy message; the lock itself is what counts
        finally:
            lock.release()

    @property
    def held(self) -> bool:
        return self._lock is not None

    @contextmanager
    def looking(self, wait: float) -> Iterator[bool]:
        """A look at the world that must not see a write half done (a page's stamp of hand
        edits, taken while another process's event has written a file and not yet its
        commit): the lock held shared, which no writer holds meanwhile and which writes
        nothing. True once no writer holds it, False when one still does after ``wait``
        seconds. Where no shared lock can be had (no ``fcntl``, a lock file that cannot be
        opened on a read-only world) the look goes ahead unguarded: True."""
        if self._lock is not None:
            yield True
            return
        try:
            import fcntl
        except ImportError:
            yield True
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            yield True
            return
        import time

        deadline = time.monotonic() + wait
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(min(POLL, max(0.0, deadline - time.monotonic())))
            yield True
        finally:
            os.close(fd)  # (closing lets the shared lock go)

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _stamp(path: Path) -> tuple[int, int, int, int | None] | None:
    """The holder file's identity and time, and the processor time its holder has used: each
    holder rewrites the file as it takes the lock and as it lets go, so a new stamp means the
    lock changed hands or its holder worked."""
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            pid = fh.read(24).split(b" ", 1)[0]
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size, _cpu_ticks(pid))


def _cpu_ticks(pid: bytes) -> int | None:
    """The processor time (clock ticks, user and system) the process ``pid`` has used, where
    ``/proc`` says."""
    if not pid.isdigit():
        return None
    try:
        with open(b"/proc/" + pid + b"/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _refused(exc: OSError, path: Path) -> StorageError | OSError:
    """The typed error for a lock the file system would not let narr create."""
    return storage_error(exc, str(path)) or exc


def _read_holder(path: Path) -> str:
    try:
        text = path.read_bytes()[:200].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if not text:
        return ""
    pid, _, cmd = text.partition(" ")
    return f" (pid {pid}: {cmd})" if cmd else f" (pid {pid})"
