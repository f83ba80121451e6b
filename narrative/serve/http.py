"""The JSON API of ``narr serve --port N``: the library's operations over HTTP on loopback, under ``/api/``.

Every request needs ``Authorization: Bearer TOKEN``, the world's token in
``.git/narr/token`` (mode 0600, made by the first server): loopback is shared
by every user and program on the machine, so listening there is not enough.
The routes, their arguments and the OpenAPI document are generated from
:data:`narrative.api.OPERATIONS`: a read takes its arguments from the path and
query, a write from a JSON body of at most :data:`MAX_BODY` bytes, validated by
the operation's model (a wrong type is a 400 naming the field). Answers are the
operation's versioned JSON (``"schema": "narr.NAME/1"``); errors are
:meth:`NarrError.to_json` with the status of their kind (the caller's fault 4xx,
a diffuser's 502, a failing disk or a bug of ours 5xx, its traceback in the
server's log only). Reads run at once on the thread pool; writes go to the
server's writer thread, one at a time, as the CLI's writers do, and neither
holds up the other requests. Each call opens the world afresh. The same app
serves the studio at ``/`` (:mod:`narrative.serve.studio`), whose page carries
the token in a cookie instead of the header."""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from narrative.errors import InvalidInputError, NarrError, error_json

if TYPE_CHECKING:
    from narrative.operations import Operation
    from narrative.serve.server import Server
    from narrative.store import WorldRepo

log = logging.getLogger("narr.serve")

MAX_BODY = 8 * 1024 * 1024
"""Bytes in a request body; beyond it the answer is 413 and nothing is read further. An
event's words are at most 256 KiB and a chapter for audit 1 M characters, well inside it."""

# Answers that can also be had as text: ``?format=md`` (the operation's result rendered).
_TEXT_FORMATS: dict[str, dict[str, tuple[str, Callable[[Any], str]]]] = {
    "brief": {"md": ("text/markdown", lambda result: result.to_markdown())},
    "story": {"md": ("text/markdown", lambda result: _book_markdown(result))},
}


def _book_markdown(result: Any) -> str:
    """The book as ``narr story`` prints it."""
    from narrative.engine.book import render_markdown

    return render_markdown(result.to_json())


def _error(exc: NarrError) -> Response:
    return JSONResponse(exc.to_json("http"), status_code=exc.http_status)


def _internal(exc: BaseException) -> Response:
    """A bug of ours: the traceback to the server's log, a plain 500 to the caller."""
    log.error("an HTTP request failed", exc_info=exc)
    return JSONResponse(error_json("narr failed on this request (a bug); the server's log has "
                                   "the details", "InternalError"), status_code=500)


class _Api:
    def __init__(self, server: Server, token: str) -> None:
        self.server = server
        self.token = token
        self.notices: Any = None  # the studio's change notices, poked after every write

    # --- plumbing ---------------------------------------------------------------------

    def _with_world(self, work: Callable[[WorldRepo], Any]) -> Any:
        from narrative.store import WorldRepo

        with WorldRepo.open(self.server.root) as wr:
            return work(wr)

    def read(self, work: Callable[[WorldRepo], Any]) -> Response:
        """Run a read now (a sync handler: Starlette runs it on its thread pool)."""
        try:
            return JSONResponse(self._with_world(work))
        except NarrError as exc:
            return _error(exc)
        except Exception as exc:
            return _internal(exc)

    def guarded(self, work: Callable[[WorldRepo], Any], request: Request | None,
                after: list[str]) -> Callable[[WorldRepo], Any]:
        """``work`` run only on the HEAD the caller saw when it sent the studio's ``If-Match``
        (:func:`narrative.serve.studio.guard`: 412 when the story moved), noting HEAD after it
        in ``after`` for the answer's ``ETag``."""
        from narrative.serve import studio

        inner = studio.guard(request, work)

        def run(wr: WorldRepo) -> Any:
            try:
                return inner(wr)
            finally:
                after.append(f'"{wr.head_id() or "none"}"')
        return run

    def finish(self, response: Response, after: list[str]) -> Response:
        """A write's answer: HEAD after it as ``ETag``, and the studio's pages told."""
        if after:
            response.headers["ETag"] = after[0]
        if self.notices is not None:
            self.notices.poke()
        return response

    def write(self, work: Callable[[WorldRepo], Any], request: Request | None = None) -> Response:
        """Run a write of the studio's own on the server's one writer thread, guarded as
        :meth:`guarded` says (a sync handler: Starlette runs it on its thread pool)."""
        after: list[str] = []
        run = self.guarded(work, request, after)
        try:
            response: Response = JSONResponse(self.server.submit(lambda: self._with_world(run)))
        except NarrError as exc:
            response = _error(exc)
        except Exception as exc:
            response = _internal(exc)
        return self.finish(response, after)

    def authorised(self, request: Request) -> bool:
        """The bearer token, or the studio's cookie (with its header on anything but a read)."""
        from narrative.serve import studio

        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer" and secrets.compare_digest(value.strip().encode(),
                                                                 self.token.encode()):
            return True
        if not studio.same(studio.cookie_token(request), self.token):
            return False
        return request.method in ("GET", "HEAD") or request.headers.get(studio.HEADER) == "1"

    def endpoint(self, op: Operation[Any]) -> Callable[[Request], Any]:
        """The HTTP handler of one operation: arguments from the path, then the query (a read)
        or the JSON body (a write), validated by the operation's model; reads run on the thread
        pool at once, writes on the server's one writer thread, and neither holds up the loop."""
        formats = _TEXT_FORMATS.get(op.name, {})
        own = "format" in op.params.model_fields  # the graphs': an argument, not the answer's form

        async def handle(request: Request) -> Response:
            try:
                fmt = "json" if own else request.query_params.get("format", "json")
                if fmt != "json" and fmt not in formats:
                    raise InvalidInputError(f"format must be {' or '.join(['json', *formats])}, "
                                            f"not {fmt!r}")
                params = op.parse(*(await _arguments(op, request)))
            except NarrError as exc:
                return _error(exc)

            def work(wr: WorldRepo) -> Any:
                if fmt == "json":
                    return op.call(wr, params)
                return formats[fmt][1](op.run(wr, params))

            after: list[str] = []
            guarded = self.guarded(work, request, after) if op.writes else work
            gone = threading.Event()  # the client hung up: a long reading stops at its next check

            def stoppable(inner: Callable[[WorldRepo], Any]) -> Any:
                from narrative.engine.calloff import watching

                with watching(gone.is_set):
                    return self._with_world(inner)

            def run() -> Any:
                if op.writes:
                    return self.server.submit(lambda: stoppable(guarded))
                return stoppable(work)

            from narrative.engine.calloff import CalledOff

            try:
                result = await _watching(request, gone, run_in_threadpool(run))
            except CalledOff:
                log.info("%s %s stopped: its client hung up; nothing was written",
                         request.method, request.url.path)
                return Response(status_code=499)  # nobody reads it
            except NarrError as exc:
                response: Response = _error(exc)
            except Exception as exc:
                response = _internal(exc)
            else:
                response = (PlainTextResponse(result, media_type=formats[fmt][0]) if fmt != "json"
                            else JSONResponse(result))
            return self.finish(response, after) if op.writes else response

        return handle


async def _watching(request: Request, gone: threading.Event, work: Any) -> Any:
    """Await ``work``, setting ``gone`` should the client hang up meanwhile."""
    import asyncio

    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.25)
        if done:
            return task.result()
        if not gone.is_set() and await request.is_disconnected():
            gone.set()


async def _arguments(op: Operation[Any], request: Request) -> tuple[dict[str, Any], str, bool]:
    """``(arguments, source, lax)`` for :meth:`Operation.parse`."""
    args: dict[str, Any] = dict(request.path_params)
    if op.method == "GET":
        fields = op.params.model_fields
        for name in request.query_params:
            if name == "format" and name not in fields:
                continue
            values = request.query_params.getlist(name)
            field = fields.get(name)
            many = field is not None and getattr(field.annotation, "__origin__", None) is list
            args[name] = values if many else values[-1]
        if "all" in args and isinstance(args["all"], str):  # ?all=1 as the CLI's --all
            args["all"] = args["all"].lower() in ("1", "true", "yes", "on")
        return args, "the query", True
    body = await read_body(request)
    if op.body is not None:
        args[op.body] = body
        return args, "the request body", False
    if not isinstance(body, dict):
        raise InvalidInputError("the request body must be a JSON object")
    clash = set(body) & set(args)
    if clash:
        raise InvalidInputError(f"the request body: /{sorted(clash)[0]}: given in the path already")
    return {**args, **body}, "the request body", False


async def read_body(request: Request) -> Any:
    """The JSON body, read no further than :data:`MAX_BODY` (413 beyond it)."""
    raw = await read_raw(request)
    if not raw.strip():
        return {}
    from narrative.delta.parse import parse_input

    return parse_input(raw, "the request body")



async def read_raw(request: Request) -> bytes:
    """The body's bytes, read no further than :data:`MAX_BODY` (413 beyond it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLargeError(int(declared))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLargeError(size)
        chunks.append(chunk)
    return b"".join(chunks)


class BodyTooLargeError(InvalidInputError):
    """A request body beyond :data:`MAX_BODY`."""

    http_status = 413

    def __init__(self, size: int) -> None:
        super().__init__(f"the request body is over {MAX_BODY} bytes ({size} at least)",
                         hint="an event's words are at most 256 KiB; send a long chapter in parts")


def _int(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidInputError(f"{name} must be a whole number, not {value!r}") from None


def _component(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A published answer schema as an OpenAPI component: its ``$defs`` moved into
    ``components`` (a name already there must hold the same schema), its references rewritten
    to point there, and ``$id``/``$schema`` dropped (an ``$id`` would re-base those references)."""
    import json

    text = json.dumps({k: v for k, v in schema.items() if k not in ("$defs", "$id", "$schema")})
    defs = schema.get("$defs", {})
    for name, definition in defs.items():
        moved = json.loads(json.dumps(definition).replace('"#/$defs/', '"#/components/schemas/'))
        if components.setdefault(name, moved) != moved:
            raise AssertionError(f"two answer schemas define {name} differently")
    return dict(json.loads(text.replace('"#/$defs/', '"#/components/schemas/')))


def openapi() -> dict[str, Any]:
    """The API described for tools, generated from the operations table: typed parameters,
    request bodies, each answer its typed schema (``schemas/answers/``, closed: no key it does not
    name) and the error's for every failure."""
    from pydantic import BaseModel
    from pydantic.json_schema import models_json_schema

    from narrative.answers import schema as versioned
    from narrative.api import OPERATIONS
    from narrative.model import Node
    from narrative.schemas import answer_schema

    ref = "#/components/schemas/{model}"
    served = [op for op in OPERATIONS if op.served]
    bodies = [op for op in served if op.method != "GET"]
    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (op.params, "validation") for op in bodies]
    models.append((Node, "validation"))
    refs, defs = models_json_schema(models, ref_template=ref)
    components: dict[str, Any] = dict(defs.get("$defs", {}))
    components["Error"] = _component(answer_schema("error"), components)
    failure = {"description": "a narr error", "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Error"}}}}
    answers = {}
    for op in served:  # each answer's typed schema, once (revert answers as event does)
        key = f"{op.name}_answer"
        components[key] = _component(answer_schema(op.answer_name), components)
        answers[op.name] = {"$ref": f"#/components/schemas/{key}"}
    paths: dict[str, Any] = {}
    for op in served:
        entry: dict[str, Any] = {
            "operationId": op.name, "summary": op.summary,
            "responses": {"200": {"description": f"{op.schema}", "content": {
                "application/json": {"schema": answers[op.name]}}},
                "400": failure, "401": {"description": "no or wrong bearer token"},
                "404": failure, "409": failure, "413": failure, "423": failure, "4XX": failure,
                "500": failure, "502": failure, "5XX": failure}}
        if op.name in _TEXT_FORMATS:
            for media, _ in _TEXT_FORMATS[op.name].values():
                entry["responses"]["200"]["content"][media] = {"schema": {"type": "string"}}
        in_path = [name for name in op.params.model_fields if "{" + name + "}" in op.path]
        schema = op.params.model_json_schema(ref_template=ref)
        props = schema.get("properties", {})
        parameters = [{"name": name, "in": "path", "required": True, "schema": props[name]}
                      for name in in_path]
        if op.method == "GET":
            required = set(schema.get("required", []))
            parameters += [{"name": name, "in": "query", "required": name in required,
                            "schema": prop} for name, prop in props.items() if name not in in_path]
            if op.name in _TEXT_FORMATS:
                parameters.append({"name": "format", "in": "query", "required": False, "schema": {
                    "enum": ["json", *_TEXT_FORMATS[op.name]]}})
        else:
            if op.body is not None:
                body_schema: dict[str, Any] = refs[(Node, "validation")]
            else:
                body_schema = refs[(op.params, "validation")]
                if in_path:  # the path's fields are not in the body
                    body_schema = {k: v for k, v in schema.items() if k != "$defs"}
                    body_schema["properties"] = {k: v for k, v in props.items() if k not in in_path}
                    body_schema["required"] = [r for r in schema.get("required", []) if r not in in_path]
            entry["requestBody"] = {"required": True,
                                    "content": {"application/json": {"schema": body_schema}}}
        if parameters:
            entry["parameters"] = parameters
        entry["x-narr-writes"] = op.writes
        paths.setdefault(op.path, {})[op.method.lower()] = entry
    for path, summary, names, name in _STUDIO_READS:
        key = f"{name}_answer"
        components[key] = _component(answer_schema(name), components)
        in_path = [n for n in names if "{" + n + "}" in path]
        paths[path] = {"get": {
            "operationId": path.strip("/").replace("/", "_").replace("{", "").replace("}", ""),
            "summary": summary,
            "parameters": [{"name": n, "in": "path" if n in in_path else "query",
                            "required": n in in_path, "schema": {"type": "string"}} for n in names],
            "responses": {"200": {"description": versioned(name), "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{key}"}}}},
                "4XX": failure, "5XX": failure}}}
    from narrative.serve.studio import WRITES

    for path, model, _ in WRITES:  # the studio's own hand edits: bodies typed as a row's are
        body = model.model_json_schema(ref_template=ref)
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
        paths[path] = {"post": {
            "operationId": path.strip("/").replace("/", "_"),
            "summary": " ".join((model.__doc__ or "").split()),
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}},
            "responses": {"200": {"description": "the hand edit written", "content": {
                "application/json": {"schema": {"type": "object"}}}},
                "4XX": failure, "5XX": failure},
            "x-narr-writes": True}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "narr", "version": "1",
                 "description": "A narr world over HTTP. Send Authorization: Bearer <.git/narr/token>. "
                              f"Request bodies are at most {MAX_BODY} bytes."},
        "components": {"schemas": components,
                       "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": paths,
    }


# The studio's own reads (narrative.serve.studio), not operations of the library: path,
# summary, parameters, answer name.
_STUDIO_READS = (
    ("/api/graph/world", "the world graph cut for drawing (the studio's world view)",
     ("at", "around", "depth", "layer", "kind", "lifecycle", "q", "limit", "draw", "group", "expand"),
     "studio_world"),
    ("/api/graph/events", "the story line (its last `limit` events) with its causal edges, "
     "abandoned chains and branches", ("limit",), "studio_events"),
    ("/api/studio/lines", "the story lines, the set-aside hand edits and a merge in progress",
     (), "studio_lines"),
    ("/api/studio/diffusers", "the diffusers the composer offers, and the default", (), "studio_diffusers"),
    ("/api/studio/node/{node_id}", "a node for the inspector, with the names of the nodes it names",
     ("node_id", "at"), "studio_node"),
    ("/api/studio/names", "the names shown in place of ids (`id`: comma-separated, at most 500)",
     ("id", "at"), "studio_names"),
    ("/api/studio/problems", "narr status's problems placed on their nodes, and the failed events",
     (), "studio_problems"),
    ("/api/studio/where", "where the story stands: HEAD, the story line, digests of the rest",
     (), "studio_where"),
    ("/api/studio/manuscript", "the story line as prose: chapters, scenes, passages with their changes",
     ("limit",), "studio_manuscript"),
    ("/api/studio/mentions/{node_id}", "the passages of the manuscript that name a node",
     ("node_id",), "studio_mentions"),
)

def make_app(server: Server, token: str) -> Starlette:
    from narrative.api import OPERATIONS
    from narrative.serve import studio

    api = _Api(server, token)
    routes: list[BaseRoute] = [
        Route(op.path.replace("{rev}", "{rev:path}"),
              api.endpoint(op) if op.served else _unserved(op), methods=[op.method])
        for op in OPERATIONS]
    # (a server stopping ends the change notices' streams, which would otherwise hold it up)
    api.notices = studio.Notices(server.root, getattr(server, "stopping", None) or threading.Event())
    routes += [*studio.routes(api.read, token, _int, write=api.write, notices=api.notices),
               Route("/api/openapi.json", lambda request: JSONResponse(openapi()))]

    async def narr_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NarrError)
        return _error(exc)

    return Starlette(routes=routes, middleware=[Middleware(_TokenGate, api=api)],
                     exception_handlers={NarrError: narr_error})


def _unserved(op: Operation[Any]) -> Callable[[Request], Any]:
    """The answer to a row no server runs (``init``, ``clone``): why, as a typed error."""
    from narrative.errors import NotFoundError

    async def refuse(request: Request) -> Response:
        return _error(NotFoundError(f"{op.name} is not served: {op.unserved}",
                                    hint=f"run narr {op.cli} where the new world is to be"))

    return refuse


class _TokenGate:
    """Every request but the studio's page needs the world's token (``_Api.authorised``).

    A plain ASGI middleware, not Starlette's ``BaseHTTPMiddleware``: that one hands the route a
    receive channel that never tells of the client hanging up, and a long reading (an audit, a
    chapter's review) must stop when nobody waits for it."""

    def __init__(self, app: Any, api: _Api) -> None:
        self.app = app
        self.api = api

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            request = Request(scope)  # its headers and cookies: nothing of the body is read
            page = request.url.path == "/" and request.method == "GET"  # it checks the token itself
            if not page and not self.api.authorised(request):
                response = JSONResponse(
                    error_json("a bearer token is required (.git/narr/token)", "Unauthorized"),
                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
