"""The world's write lock: two narr processes never interleave writes.

``flock`` is released by the kernel when a process dies, so a ``kill -9`` never
leaves a stale lock behind. The holder writes its pid and command into the lock
file so the process that is turned away can say who is busy.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from narrative.errors import BusyError

DEFAULT_TIMEOUT = 3.0


_running = threading.local()


def command() -> list[str]:
    """The command line to name in the lock file: the process's, or the request a server runs."""
    argv: list[str] | None = getattr(_running, "argv", None)
    return argv if argv is not None else sys.argv


def running_command(argv: list[str] | None) -> None:
    """Name ``argv`` (None: the process's own) as this thread's command in lock files it takes."""
    _running.argv = argv


def lock_timeout() -> float:
    try:
        return max(0.0, float(os.environ.get("NARR_LOCK_TIMEOUT", DEFAULT_TIMEOUT)))
    except ValueError:
        return DEFAULT_TIMEOUT


class WriteLock:
    """Exclusive, re-entrant within one object; waits up to ``timeout`` seconds, then refuses."""

    def __init__(self, path: Path, timeout: float | None = None) -> None:
        self.path = path
        self.timeout = lock_timeout() if timeout is None else timeout
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        if self._fd is not None:
            self._depth += 1
            return
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise BusyError(
                        f"another narr process{holder} is changing this world",
                        hint="wait for it to finish and run the command again",
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {' '.join(command()[:4])}\n".encode("utf-8", "replace"), 0)
        self._fd = fd
        self._depth = 1

    def try_acquire(self) -> bool:
        """Take the lock only if it is free right now (readers that may tidy up use this)."""
        saved, self.timeout = self.timeout, 0.0
        try:
            self.acquire()
        except BusyError:
            return False
        finally:
            self.timeout = saved
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

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


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if not text:
        return ""
    pid, _, cmd = text.partition(" ")
    return f" (pid {pid}: {cmd})" if cmd else f" (pid {pid})"
