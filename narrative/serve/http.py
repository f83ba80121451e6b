"""The JSON API of ``narr serve --port N``: the library's calls over HTTP on loopback, under ``/api/``.

Every request needs ``Authorization: Bearer TOKEN``, the world's token in
``.git/narr/token`` (mode 0600, made by the first server): loopback is shared
by every user and program on the machine, so listening there is not enough.
Answers are the ``--json`` output of the matching command; errors are the
CLI's ``--json`` errors (``error``, ``type``, ``exit_code``, ``details``,
``hint``) with an HTTP status that says the same. Reads run at once on the
server's thread pool; writes go to the server's writer thread, one at a time,
as the CLI's writers do. Each call opens the world afresh. The same app serves
the studio at ``/`` (:mod:`narrative.serve.studio`), whose page carries the
token in a cookie instead of the header.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from narrative.cli import error_json
from narrative.errors import (
    BusyError,
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    MovedError,
    NarrError,
    NotAWorldError,
    NotFoundError,
    NothingToDoError,
)

if TYPE_CHECKING:
    from narrative.serve.server import Server
    from narrative.store.worldrepo import WorldRepo

_STATUS = {MovedError: 412, NotFoundError: 404, InvalidInputError: 400, InvalidWorldError: 422,
           ConflictError: 409,
           BusyError: 423, NothingToDoError: 409, NotAWorldError: 500}


def _http_status(exc: NarrError) -> int:
    for cls, code in _STATUS.items():
        if isinstance(exc, cls):
            return code
    return 400


class _Api:
    def __init__(self, server: Server, token: str) -> None:
        self.server = server
        self.token = token
        self.notices: Any = None

    # --- plumbing ---------------------------------------------------------------------

    def _with_world(self, work: Callable[[WorldRepo], Any]) -> Any:
        from narrative.store.worldrepo import WorldRepo

        with WorldRepo.open(self.server.root) as wr:
            return work(wr)

    def read(self, work: Callable[[WorldRepo], Any]) -> Response:
        try:
            return JSONResponse(self._with_world(work))
        except NarrError as exc:
            return JSONResponse(error_json(exc), status_code=_http_status(exc))

    def write(self, work: Callable[[WorldRepo], Any], request: Request | None = None) -> Response:
        """Run ``work`` on the writer thread; with the studio's ``If-Match`` only on the HEAD the
        caller saw (:func:`narrative.serve.studio.guard`). The answer's ``ETag`` is HEAD after it."""
        from narrative.serve import studio

        guarded = studio.guard(request, work)
        after: list[str] = []

        def run(wr: WorldRepo) -> Any:
            try:
                return guarded(wr)
            finally:
                after.append(f'"{wr.head_id() or "none"}"')
        try:
            response = JSONResponse(self.server.submit(lambda: self._with_world(run)))
        except NarrError as exc:
            response = JSONResponse(error_json(exc), status_code=_http_status(exc))
        if after:
            response.headers["ETag"] = after[0]
        if self.notices is not None:
            self.notices.poke()
        return response

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

    # --- reads ------------------------------------------------------------------------

    def status(self, request: Request) -> Response:
        from narrative.engine.status import status

        return self.read(lambda wr: status(wr).to_json())

    def nodes(self, request: Request) -> Response:
        from narrative.engine.nodes import list_nodes

        layer = request.query_params.get("layer")
        return self.read(lambda wr: list_nodes(wr, layer))

    def node(self, request: Request) -> Response:
        from narrative.engine.nodes import get_node

        node_id = request.path_params["node_id"]
        at = request.query_params.get("at")
        return self.read(lambda wr: get_node(wr, _node(wr, node_id, must_exist=False), at)[1])

    def log(self, request: Request) -> Response:
        from narrative.engine.log import log

        limit = _int(request.query_params.get("n"), "n")
        rev = request.query_params.get("rev", "HEAD")
        return self.read(lambda wr: [e.to_json() for e in log(wr, limit, rev)])

    def show(self, request: Request) -> Response:
        from narrative.engine.log import show

        rev = request.path_params["rev"]
        return self.read(lambda wr: show(wr, rev).to_json())

    def branches(self, request: Request) -> Response:
        from narrative.engine.branches import list_branches

        return self.read(list_branches)

    def why(self, request: Request) -> Response:
        from narrative.engine.why import why

        node_id, field = request.path_params["node_id"], request.query_params.get("field", "")
        at = request.query_params.get("at")
        return self.read(lambda wr: why(wr, _node(wr, node_id, must_exist=False), field, at).to_json())

    def history(self, request: Request) -> Response:
        from narrative.engine.history_of import history_of

        node_id, at = request.path_params["node_id"], request.query_params.get("at")
        return self.read(lambda wr: history_of(wr, _node(wr, node_id, must_exist=False), at).to_json())

    def search(self, request: Request) -> Response:
        from narrative.engine.search import search

        query = request.query_params.get("q", "")
        limit = _int(request.query_params.get("limit"), "limit") or 20
        return self.read(lambda wr: search(wr, query, limit).to_json())

    def brief(self, request: Request) -> Response:
        from narrative.engine.brief import DEFAULT_BUDGET, brief

        params = request.query_params
        goal = params.get("goal")
        focus = tuple(params.getlist("focus"))
        budget = _int(params.get("budget"), "budget") or DEFAULT_BUDGET
        pov = params.get("pov")
        at = params.get("at")
        fmt = params.get("format", "json")
        if fmt not in ("json", "md"):
            return _invalid(f"format must be json or md, not {fmt!r}")

        def work(wr: WorldRepo) -> Any:
            result = brief(wr, goal, [_node(wr, f, context="focus") for f in focus], budget,
                           _node(wr, pov, context="pov") if pov is not None else None, at=at)
            return result.to_json() if fmt == "json" else result.to_markdown()

        if fmt == "json":
            return self.read(work)
        try:
            return PlainTextResponse(self._with_world(work), media_type="text/markdown")
        except NarrError as exc:
            return JSONResponse(error_json(exc), status_code=_http_status(exc))

    def threads(self, request: Request) -> Response:
        from narrative.engine.threads import threads

        params = request.query_params
        every = params.get("all", "").lower() in ("1", "true", "yes")
        at = params.get("at")
        return self.read(lambda wr: threads(wr, at, include_resolved=every).to_json())

    # --- writes -----------------------------------------------------------------------

    async def put_node(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        data = await request.body()
        return self.write(lambda wr: _hand_edit(wr, node_id, data), request)

    async def events(self, request: Request) -> Response:
        body = await _body(request)
        return self.write(lambda wr: _event(wr, body), request)

    async def reset(self, request: Request) -> Response:
        from narrative.engine.reset import reset

        body = await _body(request)
        return self.write(lambda wr: reset(
            wr, body.get("rev"), before=body.get("before"), keep_edits=bool(body.get("keep_edits")),
            hard=bool(body.get("hard"))).to_json(), request)

    async def revert(self, request: Request) -> Response:
        from narrative.engine.revert import revert

        body = await _body(request)
        rev = body.get("rev")
        if not isinstance(rev, str):
            return _invalid("revert needs \"rev\": the event to undo")
        return self.write(lambda wr: revert(wr, rev, content=body.get("content")).to_json(), request)

    async def replay(self, request: Request) -> Response:
        from narrative.engine.replay import replay

        body = await _body(request)
        which = body.get("chain", "")
        return self.write(lambda wr: replay(wr, str(which), reuse=bool(body.get("reuse")),
                                            diffuser_name=body.get("diffuser")).to_json(),
                          request)


def _node(wr: WorldRepo, text: str, *, must_exist: bool = True, context: str | None = None) -> str:
    """The id of the node ``text`` names (its id, a name or an alias), as the CLI takes it."""
    from narrative.engine.naming import Names

    return Names(wr).resolve(text, must_exist=must_exist, context=context)


def _int(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidInputError(f"{name} must be a whole number, not {value!r}") from None


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    from narrative.delta.parse import parse_input

    body = parse_input(raw, "the request body")
    if not isinstance(body, dict):
        raise InvalidInputError("the request body must be a JSON object")
    return body


def _invalid(message: str) -> Response:
    exc = InvalidInputError(message)
    return JSONResponse(error_json(exc), status_code=400)


def _hand_edit(wr: WorldRepo, node_id: str, data: bytes) -> dict[str, Any]:
    """Write a node's file as a hand edit, refused (and nothing written) when it is not a valid node."""
    from narrative.engine.studio import save_node_file

    return save_node_file(wr, node_id, data)


def _event(wr: WorldRepo, body: dict[str, Any]) -> dict[str, Any]:
    from narrative.delta.parse import read_delta
    from narrative.delta.request import EventRequest
    from narrative.diffusers.base import default_name, get_diffuser
    from narrative.engine.event import run_event

    content = body.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("say what happens: \"content\" is the event's text")
    delta = read_delta("ops", json.dumps({"ops": body.get("ops", [])}).encode())
    name = body.get("diffuser") or default_name(wr)
    request = EventRequest(content=content.strip(), delta=delta, diffuser=name,
                           timestamp=body.get("at"), narrative_text=body.get("text"),
                           close_scene=bool(body.get("close_scene")))
    result = run_event(wr, request, dry_run=bool(body.get("dry_run")), diffuser=get_diffuser(name, wr))
    return result.to_json()


def openapi() -> dict[str, Any]:
    """The API described for tools (hand-written: the handlers above are the truth)."""
    def op(summary: str, *params: str, body: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": summary, "responses": {
            "200": {"description": "the matching narr command's --json output"},
            "401": {"description": "no or wrong bearer token"},
            "4XX": {"description": "a narr error: error, type, exit_code, details, hint"}}}
        if params:
            out["parameters"] = [{"name": p, "in": "path" if p in ("node_id", "rev") else "query",
                                  "required": p in ("node_id", "rev"), "schema": {"type": "string"}}
                                 for p in params]
        if body:
            out["requestBody"] = {"content": {"application/json": {"schema": {
                "type": "object", "description": body}}}}
        return out

    return {
        "openapi": "3.1.0",
        "info": {"title": "narr", "version": "1",
                 "description": "A narr world over HTTP. Send Authorization: Bearer <.git/narr/token>."},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": {
            "/api/status": {"get": op("narr status")},
            "/api/nodes": {"get": op("narr nodes", "layer")},
            "/api/nodes/{node_id}": {
                "get": op("narr get: the node", "node_id", "at"),
                "put": op("a hand edit: write the node's file (validated first)", "node_id",
                          body="the node, as in its file")},
            "/api/events": {"post": op("narr event", body="content, ops, diffuser, dry_run, at, "
                                                           "text, close_scene")},
            "/api/log": {"get": op("narr log", "n", "rev")},
            "/api/show/{rev}": {"get": op("narr show", "rev")},
            "/api/reset": {"post": op("narr reset", body="rev or before, keep_edits, hard")},
            "/api/revert": {"post": op("narr revert", body="rev, content")},
            "/api/replay": {"post": op("narr replay", body="chain, reuse, diffuser")},
            "/api/branches": {"get": op("narr branch")},
            "/api/why/{node_id}": {"get": op("narr why", "node_id", "field", "at")},
            "/api/history/{node_id}": {"get": op("narr history", "node_id", "at")},
            "/api/search": {"get": op("narr search", "q", "limit")},
            "/api/brief": {"get": op("narr brief", "goal", "focus", "budget", "pov", "at", "format")},
            "/api/graph/world": {"get": op("the world graph cut for drawing (the studio's world view)",
                                           "at", "around", "depth", "layer", "kind", "lifecycle",
                                           "q", "limit", "draw")},
            "/api/graph/events": {"get": op("the story line (its last `limit` events) with its causal "
                                            "edges, abandoned chains and branches", "limit")},
            "/api/chains": {"get": op("narr chains")},
            "/api/threads": {"get": op("narr threads", "all", "at")},
        },
    }


def make_app(server: Server, token: str) -> Starlette:
    from narrative.serve import studio

    api = _Api(server, token)
    # (a server stopping ends the change notices' streams, which would otherwise hold it up)
    api.notices = studio.Notices(server.root, getattr(server, "stopping", None) or threading.Event())
    routes = [*studio.routes(api.read, token, _int, write=api.write, notices=api.notices),
        Route("/api/status", api.status),
        Route("/api/nodes", api.nodes),
        Route("/api/nodes/{node_id}", api.node, methods=["GET"]),
        Route("/api/nodes/{node_id}", api.put_node, methods=["PUT"]),
        Route("/api/events", api.events, methods=["POST"]),
        Route("/api/log", api.log),
        Route("/api/show/{rev:path}", api.show),
        Route("/api/reset", api.reset, methods=["POST"]),
        Route("/api/revert", api.revert, methods=["POST"]),
        Route("/api/replay", api.replay, methods=["POST"]),
        Route("/api/branches", api.branches),
        Route("/api/why/{node_id}", api.why),
        Route("/api/history/{node_id}", api.history),
        Route("/api/search", api.search),
        Route("/api/brief", api.brief),
        Route("/api/threads", api.threads),
        Route("/api/openapi.json", lambda request: JSONResponse(openapi())),
    ]

    async def require_token(request: Request, call_next: Any) -> Any:
        if request.url.path == "/" and request.method == "GET":
            return await call_next(request)  # the studio's page checks the token itself
        if not api.authorised(request):
            return JSONResponse({"error": "a bearer token is required (.git/narr/token)",
                                 "type": "Unauthorized", "exit_code": None},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    async def narr_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NarrError)
        return JSONResponse(error_json(exc), status_code=_http_status(exc))

    return Starlette(routes=routes,
                     middleware=[Middleware(BaseHTTPMiddleware, dispatch=require_token)],
                     exception_handlers={NarrError: narr_error})
