"""``narr mcp``: the world's operations as Model Context Protocol tools, over stdio or HTTP.

Built on the official ``mcp`` SDK (its low-level server, so that each tool's JSON Schema is
the one :data:`narrative.api.OPERATIONS` generates for HTTP and OpenAPI too, not a second one
inferred from a Python signature). A tool call is one operation: its arguments are validated by
the operation's model, its answer is the operation's versioned JSON (``structuredContent``, and
the same text in ``content`` for clients that read only that); a narr error is a tool result
with ``isError`` and :meth:`NarrError.to_json`, so an agent reads whose fault it was. A write
tool is annotated as such (``readOnlyHint`` false, ``destructiveHint`` for reset and hand
edits) so a client can ask its user first.

The process keeps the engine loaded and opens the world per call, as ``narr serve`` does, so a
call costs the operation and not Python's start. Reads run on worker threads and never wait for
a write; writes run one at a time (and take the world's lock, so a CLI writer beside the server
is waited for, then refused as busy, as between two CLI writers). Resources: ``narr://brief``
(the brief as Markdown) and ``narr://node/{id}`` (a node's file).

With ``--port`` the protocol's streamable HTTP transport listens on loopback at ``/mcp`` and
wants the world's bearer token (``.git/narr/token``), like the HTTP API.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from narrative import __version__
from narrative.errors import InvalidInputError, NarrError, NotFoundError, error_json

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from narrative.operations import Operation
    from narrative.store import WorldRepo

log = logging.getLogger("narr.mcp")

# Hand edits are for people and their editors (the studio, PUT /api/nodes): an agent records
# what happens as events, which keep the why.
HIDDEN = frozenset({"edit_node"})

INSTRUCTIONS = (
    "A narr world: story state as JSON nodes, story events as git commits. Read `brief` before "
    "writing the next scene; record what happens with `event` (dry_run first to see what would "
    "change); ask `why` a field holds its value; `reset` and `replay` move through time, nothing "
    "is lost. Nodes are named by id, name or alias. Every answer names its shape in `schema`.")


def _no_tool(name: str, tools: dict[str, Operation[Any]]) -> NotFoundError:
    """A tool asked for that is not offered: why, when it is a row no server runs."""
    from narrative.api import OPERATIONS

    unserved = next((op for op in OPERATIONS if op.name == name and not op.served), None)
    if unserved is not None:
        return NotFoundError(f"no tool {name!r}: {unserved.unserved}",
                             hint=f"run narr {unserved.cli} where the new world is to be")
    return NotFoundError(f"no tool {name!r}", hint="the tools are " + ", ".join(tools))


class WorldTools:
    """The operations of one world, as the MCP handlers call them.

    Kept warm as ``narr serve`` keeps a world: the catalog held open (no checkpoint at every
    call's close), a file watcher so a scan for hand edits looks only at what changed, and
    repository handles kept per thread (one writer thread, a few readers), which re-read only
    what changed on disk.
    """

    def __init__(self, root: Path, git_dir: Path | None = None) -> None:
        from narrative.api import OPERATIONS

        self.root = root
        self.git_dir = git_dir
        self.operations = {op.name: op for op in OPERATIONS
                           if op.served and op.name not in HIDDEN}
        self.writer = ThreadPoolExecutor(1, "narr-mcp-writer", initializer=_warm_thread)
        self.readers = ThreadPoolExecutor(4, "narr-mcp-reader", initializer=_warm_thread)
        self._catalog: Any = None
        self._watcher: Any = None
        self._under_way: set[threading.Event] = set()  # each call's "its client has gone"

    def start(self) -> None:
        """Hold the catalog open and watch the files (each a cache: without it, calls still
        answer the same, only slower)."""
        if self.git_dir is None:
            return
        try:
            from narrative.store import Catalog

            self._catalog = Catalog(self.git_dir / "narr" / "catalog.sqlite")
            self._catalog.tree()
        except Exception:
            self._catalog = None
        try:
            from narrative.store import WorldWatcher

            watcher = WorldWatcher(self.root, self.git_dir)
            watcher.start()
            self._watcher = watcher
        except Exception as exc:
            log.warning("narr mcp: not watching files (%s)", exc)

    def close(self) -> None:
        self.hang_up()  # a review under way stops; a write that began completes
        self.writer.shutdown(wait=True)
        self.readers.shutdown(wait=False, cancel_futures=True)
        if self._watcher is not None:
            self._watcher.stop()
        if self._catalog is not None:
            self._catalog.close()

    async def acall(self, name: str, arguments: dict[str, Any] | None,
                    request: Any = None) -> types.CallToolResult:
        """:meth:`call` on the writer thread (a write) or a reader thread, off the event loop.

        A write the client cancels (or leaves by hanging up) is called off if it has not
        begun: still queued, or waiting for the world's lock; nothing is written. Once it holds
        the lock it completes whole, since half an event is never an option; the protocol lets
        no answer go to a cancelled call, so the server's log says what was written
        (:meth:`write`) and the client's next ``log`` or ``status`` shows it.
        """
        op = self.operations.get(name)
        cancelled = threading.Event()
        self._under_way.add(cancelled)
        try:
            if op is None or not op.writes:
                job = self.readers.submit(self.read, name, arguments, cancelled, request)
                try:
                    return await asyncio.wrap_future(job)
                except anyio.get_cancelled_exc_class():
                    cancelled.set()  # the read stops at its next step
                    job.cancel()
                    raise
            job = self.writer.submit(self.write, name, arguments, cancelled, request)
            try:
                return await asyncio.wrap_future(job)
            except anyio.get_cancelled_exc_class():
                cancelled.set()
                if job.cancel():  # still queued behind another write: it never runs
                    log.warning("narr mcp: %s (request %s) was cancelled before it began; nothing was "
                                "written", name, request)
                raise
        finally:
            self._under_way.discard(cancelled)

    def under_way(self) -> int:
        return len(self._under_way)

    def hang_up(self) -> int:
        """The client has gone: every call under way is called off (a read at its next step, a
        write still waiting for the world; a write that began completes). How many there were."""
        calls = list(self._under_way)
        for cancelled in calls:
            cancelled.set()
        return len(calls)

    def read(self, name: str, arguments: dict[str, Any] | None, cancelled: threading.Event,
             request: Any = None) -> types.CallToolResult:
        """A read tool's call on a reader thread, stopped between two steps once ``cancelled``
        is set (:mod:`narrative.engine.calloff`)."""
        from narrative.engine.calloff import CalledOff, watching

        try:
            with watching(cancelled.is_set):
                return self.call(name, arguments)
        except CalledOff:
            log.info("narr mcp: %s (request %s) stopped: its client has gone", name, request)
            return _result(error_json("the call was cancelled; it stopped before its end",
                                      "Cancelled"), error=True)

    def write(self, name: str, arguments: dict[str, Any] | None, cancelled: threading.Event,
              request: Any = None) -> types.CallToolResult:
        """A write tool's call on the writer thread, called off while it waits for the world's
        lock once ``cancelled`` is set (:func:`narrative.store.lock.give_up_waiting`), and while
        it still only reads (a chapter's review): nothing is written then."""
        from narrative.engine.calloff import CalledOff, watching
        from narrative.store import Abandoned, give_up_waiting

        give_up_waiting(cancelled.is_set)
        if cancelled.is_set():  # called off (its client gone) before its turn came
            log.warning("narr mcp: %s (request %s) was cancelled before it began; nothing was "
                        "written", name, request)
            return _result(error_json("the call was cancelled before it began; nothing was "
                                      "written", "Cancelled"), error=True)
        try:
            with watching(cancelled.is_set):
                result = self.call(name, arguments)
        except CalledOff as exc:  # a chapter's review, before it wrote anything
            log.warning("narr mcp: %s (request %s) stopped: %s; nothing was written", name,
                        request, exc)
            return _result(error_json(f"the call was cancelled ({exc}); nothing was written",
                                      "Cancelled"), error=True)
        except Abandoned:
            log.warning("narr mcp: %s (request %s) was cancelled while it waited for the world's "
                        "lock; nothing was written", name, request)
            return _result(error_json("the call was cancelled before it began; nothing was "
                                      "written", "Cancelled"), error=True)
        finally:
            give_up_waiting(None)
        if cancelled.is_set():
            answer = result.structured_content or {}
            what = ", ".join(f"{key} {answer[key]}" for key in ("commit", "id", "content")
                             if isinstance(answer.get(key), str))
            log.warning("narr mcp: %s (request %s) was cancelled after it began; it completed "
                        "(%s%s): %s", name, request, answer.get("schema"),
                        ", an error" if result.is_error else "",
                        what or json.dumps(answer, ensure_ascii=False)[:500])
        return result

    def tools(self) -> list[types.Tool]:
        from narrative.schemas import answer_schema

        return [types.Tool(
            name=op.name, title=op.name.replace("_", " "), description=op.summary,
            input_schema=op.params.model_json_schema(), output_schema=answer_schema(op.answer_name),
            annotations=types.ToolAnnotations(
                read_only_hint=not op.writes, destructive_hint=op.destructive if op.writes else None,
                idempotent_hint=op.idempotent if op.writes else None, open_world_hint=False))
            for op in self.operations.values()]

    def _open(self) -> WorldRepo:
        from narrative.store import WorldRepo

        return WorldRepo.open(self.root)

    def run(self, op: Operation[Any], arguments: dict[str, Any] | None) -> dict[str, Any]:
        """One call, in a worker thread: the versioned answer, or a NarrError."""
        params = op.parse(arguments)
        with self._open() as wr:
            return op.call(wr, params)

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        from narrative.engine.calloff import CalledOff
        from narrative.store import Abandoned

        op = self.operations.get(name)
        try:
            if op is None:
                raise _no_tool(name, self.operations)
            answer = self.run(op, arguments)
        except Abandoned:
            raise  # a cancelled write that never began: :meth:`write` says so
        except CalledOff:
            raise  # a call whose client went: :meth:`read` or :meth:`write` says so
        except NarrError as exc:
            return _result(exc.to_json("mcp"), error=True)
        except Exception as exc:  # a bug of ours: the traceback to our stderr, not to the agent
            log.error("the tool %s failed", name, exc_info=exc)
            return _result(error_json("narr failed on this call (a bug); its log has the details",
                                      "InternalError"), error=True)
        return _result(answer)

    def refusal(self, name: Any, arguments: Any) -> types.CallToolResult:
        """The typed error of a call whose arguments no operation can take (text that is not
        valid Unicode), found without running anything."""
        op = self.operations.get(name) if isinstance(name, str) else None
        if op is None:
            return _result(NotFoundError(f"no tool {name!r}", hint="the tools are "
                                         + ", ".join(self.operations)).to_json(), error=True)
        try:
            op.parse(arguments if isinstance(arguments, dict) else None)
        except NarrError as exc:
            return _result(exc.to_json(), error=True)
        return _result(InvalidInputError("the arguments: text that is not valid Unicode "
                                         "(a lone surrogate)").to_json(), error=True)

    def read_resource(self, uri: str) -> tuple[str, str]:
        """``(mime type, text)`` of ``narr://brief`` or ``narr://node/ID``."""
        from narrative.operations.reads import BriefParams, GetNodeParams, run_brief, run_get_node

        with self._open() as wr:
            if uri == "narr://brief":
                return "text/markdown", run_brief(wr, BriefParams()).to_markdown()
            if uri.startswith("narr://node/"):
                node = uri.removeprefix("narr://node/")
                got = run_get_node(wr, GetNodeParams(node=node))
                return "application/json", json.dumps(got.to_json()["node"], indent=2, ensure_ascii=False)
        raise InvalidInputError(f"no resource {uri!r}: narr://brief or narr://node/ID")


def _result(value: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    text = json.dumps(value, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=value,
                                is_error=error)


def make_server(world: WorldTools) -> Server[Any]:
    """The MCP server of ``world``."""

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=world.tools())

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        return await world.acall(params.name, params.arguments, ctx.request_id)

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            name="brief", uri="narr://brief", mime_type="text/markdown",
            description="the brief for the next event, as Markdown")])

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="node", uri_template="narr://node/{id}", mime_type="application/json",
            description="a node's file (its id, name or alias)")])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types.jsonrpc import INVALID_PARAMS

        try:
            mime, text = await asyncio.wrap_future(world.readers.submit(world.read_resource,
                                                                         str(params.uri)))
        except NarrError as exc:
            raise MCPError(INVALID_PARAMS, exc.message, exc.to_json("mcp")) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=params.uri, mime_type=mime, text=text)])

    return Server("narr", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


@contextmanager
def _world(root: Path, git_dir: Path) -> Iterator[WorldTools]:
    _warm()
    world = WorldTools(root, git_dir)
    world.start()
    try:
        yield world
    finally:
        world.close()


def serve_stdio(root: Path, git_dir: Path) -> None:
    """Serve the world over this process's stdin and stdout until the client hangs up (through
    :mod:`narrative.serve.mcp_stdio`, which answers every line)."""
    from narrative.serve import mcp_stdio

    with _world(root, git_dir) as world:
        mcp_stdio.serve(make_server(world), world)


def serve_http(root: Path, git_dir: Path, port: int, *, ready: Any = None) -> None:
    """Serve the world with the streamable HTTP transport on ``127.0.0.1:port`` (0: any free
    port), at ``/mcp``, behind the world's bearer token; ``ready(port)`` once it listens."""
    from narrative.serve.server import token as world_token

    token = world_token(git_dir)
    with _world(root, git_dir) as world:
        _serve_http(make_server(world).streamable_http_app(host="127.0.0.1"), token, port, ready)


def _serve_http(app: Any, token: str, port: int, ready: Any) -> None:
    import uvicorn

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(),
                                                                        token.encode()):
                body = json.dumps(error_json("a bearer token is required (.git/narr/token)",
                                             "Unauthorized"))
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await app(scope, receive, send)

    config = uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="warning",
                            lifespan="on")
    server = uvicorn.Server(config)
    if ready is not None:
        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets)
            ready(server.servers[0].sockets[0].getsockname()[1])

        server.startup = startup  # type: ignore[method-assign]
    server.run()


def _warm() -> None:
    """Load what the first call would (the engine and the operations' models)."""
    from narrative.serve.server import _import_engine

    _import_engine()


def _warm_thread() -> None:
    from narrative.serve.pools import keep_repositories_warm

    keep_repositories_warm()
