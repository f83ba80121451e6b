"""Per-request standard streams for a server that runs commands in threads.

click and narr write to ``sys.stdout`` and ``sys.stderr`` and read
``sys.stdin.buffer``, resolved at each call. The server replaces the three with
proxies that forward to the streams of the request the current thread serves
(and to the process's own streams elsewhere), so requests running at once never
see each other's output. ``shutil.get_terminal_size`` (click's help width) and
``isatty`` answer for the client's terminal, as they would in its own process.

A pager must run where the terminal is: output a command pages is held for the
request alone (:meth:`_Proxy.narr_redirected`, not ``contextlib.redirect_stdout``, which
would take every request's output) and sent to the client to page
(:meth:`_Proxy.narr_page`).
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout, suppress
from typing import IO, Any, TextIO, cast

_local = threading.local()
_original_terminal_size = shutil.get_terminal_size


class RequestIO:
    """The streams and terminal of one request."""

    def __init__(self, write: Callable[[int, bytes], None], read_stdin: Callable[[int], bytes],
                 *, stdout_tty: bool, stderr_tty: bool, stdin_tty: bool,
                 columns: int, lines: int, page: Callable[[str, str], None] | None = None) -> None:
        self.page = page
        self.stdout: IO[str] = io.TextIOWrapper(
            io.BufferedWriter(_Sink(write, 1, stdout_tty)),
            encoding="utf-8", errors="strict", line_buffering=stdout_tty)
        self.stderr = io.TextIOWrapper(io.BufferedWriter(_Sink(write, 2, stderr_tty)),
                                       encoding="utf-8", errors="backslashreplace",
                                       line_buffering=True, write_through=True)
        self.stdin = io.TextIOWrapper(
            io.BufferedReader(_Source(read_stdin, stdin_tty)),
            encoding="utf-8", errors="strict")
        self.terminal = os.terminal_size((columns, lines))

    def close(self) -> None:
        for stream in (self.stdout, self.stderr):
            with suppress(OSError, ValueError):
                stream.flush()


class _Sink(io.RawIOBase):
    def __init__(self, write: Callable[[int, bytes], None], channel: int, tty: bool) -> None:
        self._write = write
        self._channel = channel
        self._tty = tty

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._tty

    def write(self, data: Any) -> int:
        payload = bytes(data)
        if payload:
            self._write(self._channel, payload)
        return len(payload)


class _Source(io.RawIOBase):
    """Standard input, asked of the client as the command reads it, never more than it reads
    (a command that stops at a bound, :mod:`narrative.store.bounded`, stops the client reading
    too: ``narr event - < /dev/zero`` ends as it does without a server)."""

    def __init__(self, read: Callable[[int], bytes], tty: bool) -> None:
        self._read = read  # up to n bytes; empty at the end
        self._tty = tty
        self._ended = False

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._tty

    def readinto(self, buffer: Any) -> int:
        if self._ended or not len(buffer):
            return 0
        chunk = self._read(len(buffer))
        self._ended = not chunk
        buffer[:len(chunk)] = chunk
        return len(chunk)


class _Proxy:
    """Stands in for ``sys.stdout``/``stderr``/``stdin``: the current request's stream."""

    def __init__(self, name: str, fallback: IO[str]) -> None:
        self._name = name
        self._fallback = fallback

    def _target(self) -> Any:
        current: RequestIO | None = getattr(_local, "io", None)
        return getattr(current, self._name) if current is not None else self._fallback

    @contextmanager
    def narr_redirected(self, stream: IO[str]) -> Iterator[None]:
        """``contextlib.redirect_stdout`` for this thread's request only (else for the process)."""
        current: RequestIO | None = getattr(_local, "io", None)
        if current is None:
            with redirect_stdout(stream):
                yield
            return
        saved, current.stdout = current.stdout, stream
        try:
            yield
        finally:
            current.stdout = saved

    def narr_page(self, command: str, text: str) -> bool:
        """Have the client show ``text`` through ``command``; False outside a request that can."""
        current: RequestIO | None = getattr(_local, "io", None)
        if current is None or current.page is None:
            return False
        current.stdout.flush()
        current.page(command, text)
        return True

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._target(), attr)

    def __iter__(self) -> Iterator[str]:
        return iter(self._target())

    # The methods click looks up on the class or calls directly.
    def write(self, data: Any) -> int:
        return int(self._target().write(data))

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return bool(self._target().isatty())

    @property
    def buffer(self) -> Any:
        return self._target().buffer

    @property
    def encoding(self) -> str:
        return str(self._target().encoding)

    @property
    def errors(self) -> str | None:
        errors = self._target().errors
        return str(errors) if errors is not None else None


def _terminal_size(fallback: tuple[int, int] = (80, 24)) -> os.terminal_size:
    current: RequestIO | None = getattr(_local, "io", None)
    if current is not None:
        return current.terminal
    return _original_terminal_size(fallback)


def install() -> None:
    """Route the process's standard streams through the per-request proxies (once)."""
    if isinstance(sys.stdout, _Proxy):
        return
    sys.stdout = cast(TextIO, _Proxy("stdout", sys.stdout))
    sys.stderr = cast(TextIO, _Proxy("stderr", sys.stderr))
    sys.stdin = cast(TextIO, _Proxy("stdin", sys.stdin))
    shutil.get_terminal_size = _terminal_size


@contextmanager
def serving(request_io: RequestIO) -> Iterator[RequestIO]:
    """Make ``request_io`` this thread's standard streams for the block."""
    previous = getattr(_local, "io", None)
    _local.io = request_io
    try:
        yield request_io
    finally:
        request_io.close()
        _local.io = previous
