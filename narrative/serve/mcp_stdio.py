"""``narr mcp`` over stdio: the SDK's transport, fed and drained by narr so that every line the
client sends gets an answer and a client that goes away costs one line of log.

Why narr wraps the SDK's ``stdio_server`` (mcp 2.3) rather than using it as it comes:

- it parses each line with pydantic and hands what fails to the session as a bare exception,
  with no request id, which the session only logs: a line that is not JSON, a JSON value that
  is not a JSON-RPC message (``[]``, no ``method``, ``"jsonrpc": "1.0"``, an ``id`` of ``true``
  taken for a notification) gets no answer, and the client waits for ever;
- pydantic's JSON parser refuses a lone surrogate escape (``"\\ud800"``) anywhere in the line,
  so a tool call holding one in an argument goes unanswered too, where the CLI and the HTTP API
  refuse the same text by name;
- it decodes stdin with ``errors="replace"``, so bytes that are not UTF-8 silently become
  U+FFFD in what the call records;
- a client that hangs up mid-call makes its writer raise ``BrokenPipeError`` through its task
  group: a 60-line ``ExceptionGroup`` on stderr, while the call's thread runs on.

``stdio_server`` takes explicit streams, so narr gives it a line source (:class:`Lines`) that
answers what it refuses itself, as JSON-RPC says (-32700 for what is not JSON, -32600 for
what is not a request, -32602 for parameters that cannot be text) or, for a tool call, as the
tool's typed input error naming the argument; it passes on only lines the SDK reads as they
are. And a writer (:class:`Wire`) that notes a hang-up in one line of log, ends the session and
calls off the calls under way (:meth:`narrative.serve.mcp.WorldTools.hang_up`). Standard
input and output are moved off fds 0 and 1 while serving (as the SDK does for itself), so a
stray print cannot corrupt the wire.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import anyio

from narrative.nodefile import encodable

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from narrative.serve.mcp import WorldTools

log = logging.getLogger("narr.mcp")

MAX_LINE: Final = 16 * 1024 * 1024  # one message: an audit's chapter is at most 1M characters
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_HUNG_UP = (errno.EPIPE, errno.ECONNRESET, errno.EBADF, errno.EIO)


def _lone_surrogate(value: Any, path: str = "") -> str | None:
    """The JSON pointer of the first text in ``value`` that UTF-8 cannot encode, or None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not encodable(item):
                return where or "/"
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and not encodable(key):
                    return f"{where}/{key!r}"
                stack.append((sub, f"{where}/{key}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}/{i}") for i, sub in enumerate(item))
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def error_reply(request_id: Any, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                      ensure_ascii=False)


class Wire:
    """The client's end: lines out to it, and whether it is still there."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.gone = anyio.Event()
        self.why: str | None = None
        self._lock = anyio.Lock()
        self.world: WorldTools | None = None

    async def write(self, text: str) -> None:
        """One message (the SDK's, or a refusal): whole, one writer at a time; nothing once
        the client has gone, and never an exception (a hang-up is noted instead)."""
        if self.gone.is_set():
            return
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # an echo of text UTF-8 cannot hold: escape it
            data = json.dumps(json.loads(text.rstrip("\n")), ensure_ascii=True).encode() + b"\n"
        async with self._lock:
            try:
                await anyio.to_thread.run_sync(self._write_all, data, abandon_on_cancel=True)
            except OSError as exc:
                if exc.errno not in _HUNG_UP:
                    raise
                self.hang_up(f"its end of the pipe is closed ({exc.strerror})")

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view):]

    async def flush(self) -> None:
        return None

    def hang_up(self, why: str) -> None:
        """The client went away: say so once, call off what runs for it, end the session."""
        if self.gone.is_set():
            return
        self.why = why
        self.gone.set()
        stopped = self.world.hang_up() if self.world is not None else 0
        log.warning("narr mcp: the client hung up (%s)%s", why,
                    f"; {stopped} call(s) under way called off" if stopped else "")


class Lines:
    """What the SDK reads: the client's lines that it can take as they are. The others are
    answered here, and never reach it."""

    def __init__(self, in_fd: int, wire: Wire, world: WorldTools) -> None:
        self.in_fd = in_fd
        self.wire = wire
        self.world = world
        self._buffer = bytearray()
        self._eof = False
        self._skipping = False  # the rest of a line too long to take

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._line()
            if line is None:
                raise StopAsyncIteration
            text = await self._screen(line)
            if text is not None:
                return text

    async def _line(self) -> bytes | None:
        """The next whole line (without its newline), or None at the end of the input."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                if self._skipping:
                    self._skipping = False
                    continue
                return line
            if len(self._buffer) > MAX_LINE:
                if not self._skipping:
                    await self.wire.write(error_reply(None, INVALID_REQUEST, f"Invalid Request: a message "
                                                      f"of more than {MAX_LINE:,} bytes") + "\n")
                self._skipping = True
                self._buffer.clear()
            if self._eof or self.wire.gone.is_set():
                if self._buffer and not self._skipping:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            chunk = await self._read()
            if not chunk:
                self._ended()
            self._buffer += chunk

    async def _read(self) -> bytes:
        """Some bytes of input (b"" at its end), given up when the client is gone."""
        data = b""
        async with anyio.create_task_group() as tg:
            async def watch() -> None:
                await self.wire.gone.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            try:
                data = await self._read_some()
            finally:
                tg.cancel_scope.cancel()
        return data

    async def _read_some(self) -> bytes:
        try:
            try:
                await anyio.wait_readable(self.in_fd)
            except (OSError, ValueError, NotImplementedError):  # a regular file: nothing to poll
                return await anyio.to_thread.run_sync(os.read, self.in_fd, 1 << 16,
                                                      abandon_on_cancel=True)
            return os.read(self.in_fd, 1 << 16)
        except OSError as exc:
            if exc.errno not in _HUNG_UP:
                raise
            return b""

    def _ended(self) -> None:
        """The input ended: the client is done (the protocol's client closes its input to
        leave). Calls still under way for it are called off, and that is a hang-up."""
        if not self._eof:
            self._eof = True
            if self.world.under_way():
                self.wire.hang_up("it closed its input with calls under way")

    async def _screen(self, line: bytes) -> str | None:
        """``line`` as the SDK will take it, or None once it is answered (or dropped) here."""
        verdict = screen(line, self.world)
        if isinstance(verdict, Reply):
            if verdict.text is not None:
                await self.wire.write(verdict.text + "\n")
            return None
        return verdict


class Reply:
    """What narr answers a line itself (None: a line with no one to answer)."""

    def __init__(self, text: str | None) -> None:
        self.text = text


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a batch (an array)"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return "a number" if isinstance(value, int | float) else "a string"


def screen(line: bytes, world: WorldTools) -> str | Reply:
    """The line's text when the SDK reads it as it is; else what answers it, as JSON-RPC says."""
    import mcp_types as types
    from pydantic import ValidationError

    if not line.strip():
        return Reply(None)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Reply(error_reply(None, PARSE_ERROR, f"Parse error: not UTF-8 text (byte {exc.start})"))
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return Reply(error_reply(None, PARSE_ERROR, f"Parse error: not JSON ({exc})"))
    if not isinstance(value, dict):
        return Reply(error_reply(None, INVALID_REQUEST, f"Invalid Request: {_kind(value)}, not a "
                                 "JSON-RPC message object"))
    has_id = "id" in value
    request_id = value.get("id")
    if has_id and (isinstance(request_id, bool) or not isinstance(request_id, str | int)
                   or (isinstance(request_id, str) and not encodable(request_id))):
        return Reply(error_reply(None, INVALID_REQUEST, "Invalid Request: the id must be a string or "
                                 "an integer"))
    if value.get("jsonrpc") != "2.0":
        return Reply(error_reply(request_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'))
    method = value.get("method")
    if method is None and not (has_id and ("result" in value or "error" in value)):
        return Reply(error_reply(request_id, INVALID_REQUEST, "Invalid Request: no method (and not a "
                                 "response)"))
    if method is not None and (not isinstance(method, str) or not encodable(method)):
        return Reply(error_reply(request_id, INVALID_REQUEST, "Invalid Request: the method must be text"))
    where = _lone_surrogate(value)
    if where is not None:
        return _unreadable_text(value, method, request_id if has_id else None, where, world)
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = "/".join(str(p) for p in first.get("loc", ()))
        return Reply(error_reply(request_id, INVALID_REQUEST,
                                 f"Invalid Request: {first.get('msg', 'not a JSON-RPC message')}"
                                 + (f" ({at})" if at else "")))
    return text


def _unreadable_text(value: dict[str, Any], method: Any, request_id: Any, where: str,
                     world: WorldTools) -> Reply:
    """A message holding text UTF-8 cannot encode (a lone surrogate escape): a tool call gets
    its tool's typed error naming the argument; another request, -32602; anything else can
    have no answer, and is logged."""
    if request_id is None:
        log.warning("narr mcp: dropped a message with text that is not valid Unicode at %s (a "
                    "notification or a response: there is no one to answer)", where)
        return Reply(None)
    params = value.get("params")
    if method == "tools/call" and isinstance(params, dict) and where.startswith("/params/arguments"):
        body = world.refusal(params.get("name"), params.get("arguments")).model_dump(
            mode="json", by_alias=True, exclude_none=True)
        return Reply(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": body}, ensure_ascii=False))
    return Reply(error_reply(request_id, INVALID_PARAMS, f"Invalid params: {where}: text that is not "
                             "valid Unicode (a lone surrogate)"))


@contextmanager
def _claimed() -> Iterator[tuple[int, int]]:
    """Private copies of fds 0 and 1 for the wire; fd 0 reads nothing and fd 1 goes to stderr
    meanwhile, so nothing else in the process reads the client's input or writes on the wire."""
    import fcntl

    sys.stdout.flush()
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield in_fd, out_fd
    finally:
        os.close(null)
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.close(in_fd)
        os.close(out_fd)


def serve(server: Server[Any], world: WorldTools) -> None:
    """Serve ``world`` on this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    with _claimed() as (in_fd, out_fd):
        wire = Wire(out_fd)
        wire.world = world
        lines = Lines(in_fd, wire, world)

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_watch_output, wire)
                async with stdio_server(stdin=lines, stdout=wire) as (read, write):  # type: ignore[arg-type]
                    await server.run(read, write, server.create_initialization_options())
                tg.cancel_scope.cancel()

        anyio.run(main)


async def _watch_output(wire: Wire) -> None:
    """A client that closes its end of our output, while a long call runs and nothing is being
    written, is noticed at once: the pipe reports an error to ``poll``."""
    import select

    if not hasattr(select, "poll"):
        return
    done = [False]

    def wait() -> bool:
        poller = select.poll()
        poller.register(wire.out_fd, select.POLLERR | select.POLLHUP)
        while not done[0]:
            if poller.poll(250):
                return True
        return False

    try:
        if await anyio.to_thread.run_sync(wait, abandon_on_cancel=True):
            wire.hang_up("its end of the output pipe is closed")
    finally:
        done[0] = True
