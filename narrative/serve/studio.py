"""The studio: the browser front end served at ``/`` by ``narr serve --port``, its views and
its own writes.

The page and its scripts are files in ``narrative/serve/static`` (plain HTML, CSS
and JavaScript, no build step; the graph library is vendored under ``vendor/``,
so nothing is fetched from the network). The world's token is needed here as
everywhere: ``/?token=TOKEN`` (the address ``narr studio`` opens) exchanges it
for a cookie that only this origin sends (``HttpOnly``, ``SameSite=Strict``) and
redirects to ``/``, so the token leaves the address bar. Requests that change
the world and are authorised by that cookie must also carry ``X-Narr-Studio``,
a header no other site's page can send without asking first.

A use case the operations table has is asked of its row's route, with the row's arguments,
as any program asks it: the composer is ``POST /api/events``, a failed event's Retry and Drop
are ``/api/failed/retry`` and ``/api/failed/drop``, a new node ``POST /api/nodes``, the story
lines ``/api/switch``, ``/api/branches``, ``/api/merge`` (``/resolve``, ``/continue``,
``/abort``) and the set-aside edits ``/api/edits/restore`` and ``/api/edits/drop``. What stays
here is what only a page needs:

- views, each a cut of the world for drawing or a digest for staying current: the graphs of
  the world and the events, ``where`` and ``changes`` (the stamp and its stream), ``problems``
  (status's problems placed on nodes), the node for the inspector with the names it names,
  ``names`` (ids to names), the manuscript and a node's mentions in it, the diffusers the
  composer offers and the story lines panel. A program has rows for the facts behind them
  (``status``, ``failed``, ``get_node``, ``log``, ``show``, ``branches``, ``edits``,
  ``conflicts``, ``search``), so none is a row;
- hand edits in a shape no row takes (:data:`WRITES`: one relation named by its target's
  name; the fields a form changed, each checked against the value the page loaded) and the
  node file saved as the editor's text with the file it was loaded from (``save/ID``). They
  share the rows' checks: one hand-edit write, bodies validated by a parameters model.

The page stays true to the world: ``/api/studio/changes`` is a stream of
server-sent events, one whenever HEAD, the story line, the hand edits, the kept
set-aside edits and chains or the failed events change, whoever changed them
(one poller per server, running only while a page listens). Every write the
page makes, a row's or its own, carries the HEAD it last saw as ``If-Match`` (and its
story line as ``X-Narr-Branch``); a write whose HEAD moved meanwhile is refused with 412
and changes nothing (:func:`guard`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from narrative.errors import NarrError
from narrative.operations import MAX_STRING, NodeName, Params, Short, parse_params

if TYPE_CHECKING:
    from narrative.store import WorldRepo

STATIC = Path(__file__).resolve().parent / "static"
# The page runs only its own files and talks only to its own server, whatever a node's text holds;
# no other site may frame it (its buttons change the world).
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
COOKIE = "narr_token"
HEADER = "x-narr-studio"
BRANCH_HEADER = "x-narr-branch"
POLL_SECONDS = 0.25

REFUSED_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>narr studio</title>
</head><body><h1>narr studio</h1><p>This page needs the world's token. Open it with
<code>narr studio</code>, or visit the address <code>narr studio --url</code> prints.</p></body></html>
"""


def warm(root: Path) -> None:
    """Read the world once as the studio will (for a server that just started), so the first
    page opens as fast as the next; a failure here is the first request's to report."""
    from narrative.engine.studio import world_view
    from narrative.store import WorldRepo

    try:
        with WorldRepo.open(root) as wr:
            world_view(wr, limit=0, draw=0)
    except Exception:  # nothing to report to: the requests will say it
        return


def cookie_token(request: Request) -> str:
    return request.cookies.get(COOKIE, "")


def same(given: str, token: str) -> bool:
    return bool(given) and secrets.compare_digest(given.encode(), token.encode())


def page_html(world: str = "") -> str:
    """The page, carrying narr's own vocabulary (layers, lifecycles, the longest name) for its
    script to read: one definition (:mod:`narrative.ids`), never a copy in the JavaScript; and
    a name for the world (a digest of its path) under which the browser keeps the graph's
    positions."""
    from html import escape

    from narrative.ids import LAYERS, LIFECYCLES, MAX_NAME

    words = (f'<body data-layers="{escape(" ".join(LAYERS))}" '
             f'data-lifecycles="{escape(" ".join(LIFECYCLES))}" data-max-name="{MAX_NAME}" '
             f'data-world="{escape(world)}">')
    return (STATIC / "index.html").read_text("utf-8").replace("<body>", words, 1)


def index(token: str, world: str = "") -> Callable[[Request], Response]:
    def page(request: Request) -> Response:
        given = request.query_params.get("token", "")
        if given:
            if not same(given, token):
                return HTMLResponse(REFUSED_PAGE, status_code=401)
            response: Response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
            return response
        if not same(cookie_token(request), token):
            return HTMLResponse(REFUSED_PAGE, status_code=401)
        response = HTMLResponse(page_html(world))
        response.headers["Cache-Control"] = "no-store"
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response
    return page


def notice(stamp: dict[str, Any]) -> dict[str, Any]:
    """A stamp as the page gets it: HEAD and the story line as they are, the rest as digests
    (the page only needs to know that they changed, and a world may have thousands of edits)."""
    def digest(value: Any) -> str:
        return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]

    return {"head": stamp["head"], "branch": stamp["branch"], "edits": digest(stamp["edits"]),
            "kept": digest(stamp["kept"]), "failed": digest(stamp["failed"]),
            "edited": len(stamp["edits"])}


class Notices:
    """Tells every listening page when the world's stamp changes; polls only while one listens.

    Polling (not only the server's own writes) is what sees a terminal's ``narr switch``, an
    editor saving a node file or another server's work: the stamp is cheap (refs, and the files
    that differ from HEAD, which the server's file watcher narrows to the touched ones).
    """

    def __init__(self, root: Path, stopping: threading.Event) -> None:
        self.root = root
        self.stopping = stopping
        self.last: dict[str, Any] | None = None
        self._listeners: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] = {}
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def stamp(self) -> dict[str, Any] | None:
        """The world's stamp as a page gets it; None while a writer is at work (the next look
        tells, once its write is whole)."""
        from narrative.engine.studio import settled_stamp
        from narrative.store import WorldRepo

        with WorldRepo.open(self.root) as wr:
            found = settled_stamp(wr)
        return notice(found) if found is not None else None

    def listen(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        with self._mutex:
            self._listeners[id(queue)] = (asyncio.get_running_loop(), queue)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._poll, name="narr-notices", daemon=True)
                self._thread.start()
        return queue

    def leave(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        with self._mutex:
            self._listeners.pop(id(queue), None)

    def poke(self) -> None:
        """Look again now (after one of the server's own writes), not at the next tick."""
        self._wake.set()

    def _poll(self) -> None:
        while not self.stopping.is_set():
            with self._mutex:
                if not self._listeners:
                    self._thread = None
                    return
                listeners = list(self._listeners.values())
            try:
                now = self.stamp()
            except Exception:  # a world mid-change or broken: the next look will tell
                now = None
            if now is not None and now != self.last:
                self.last = now
                for loop, queue in listeners:
                    loop.call_soon_threadsafe(queue.put_nowait, now)
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()


def guard(request: Request | None, work: Callable[[WorldRepo], Any]) -> Callable[[WorldRepo], Any]:
    """``work``, refused (412, nothing written) when the request's ``If-Match`` names another
    HEAD than the world's, or its ``X-Narr-Branch`` another story line. The check and the write
    hold the world's lock together, so no other process moves HEAD between them."""
    expected = request.headers.get("if-match") if request is not None else None
    branch = request.headers.get(BRANCH_HEADER) if request is not None else None
    if expected is None and branch is None:
        return work

    def guarded(wr: WorldRepo) -> Any:
        from narrative.engine.guard import check_head

        with wr.lock:
            check_head(wr, expected or "*", branch)
            return work(wr)
    return guarded


async def _json_body(request: Request) -> dict[str, Any]:
    """The JSON object a studio write sends, read as every route reads one (no further than
    the server's body cap: 413 beyond it)."""
    from narrative.errors import InvalidInputError
    from narrative.serve.http import read_body

    body = await read_body(request)
    if not isinstance(body, dict):
        raise InvalidInputError("the request body must be a JSON object")
    return body


class RelationRef(Params):
    type: Annotated[str, Field(min_length=1, max_length=MAX_STRING)]
    target: NodeName


class RelationParams(Params):
    """One relation of a node added, changed or removed by hand: a hand edit of its file."""

    node: NodeName
    type: Annotated[str, Field(min_length=1, max_length=MAX_STRING, description="the relation's type")]
    target: NodeName = Field(description="the relation's target: a name, an alias or an id")
    attrs: dict[str, Any] | None = Field(None, description='its attributes, e.g. {"since": "spring"}')
    remove: bool = Field(False, description="remove the relation instead")
    replaces: RelationRef | None = Field(None, description="the relation this one takes the place of")


class FieldsParams(Params):
    """A node's form saved: only the fields the writer changed, each with the value it had when
    the page loaded it, or the node as loaded and as edited."""

    node: NodeName
    changes: list[Any] | None = Field(None, description=(
        '[{"field": "/state/mood", "old": ..., "new": ...}]: a key left out is absent'))
    base: dict[str, Any] | None = Field(None, description="the node as loaded (with edited)")
    edited: dict[str, Any] | None = Field(None, description="the node as edited (with base)")
    force: Annotated[list[Short], Field(max_length=10_000)] = Field(
        default_factory=list, description="fields (JSON pointers) written over a change made meanwhile")


def save_relation(wr: WorldRepo, p: RelationParams) -> Any:
    from narrative.engine.handedit import edit_relation

    replaces = (p.replaces.type, p.replaces.target) if p.replaces is not None else None
    return edit_relation(wr, p.node, p.type, p.target, attrs=p.attrs, remove=p.remove,
                         replaces=replaces)


def save_fields(wr: WorldRepo, p: FieldsParams) -> Any:
    from narrative.engine import nodeform
    from narrative.errors import InvalidInputError

    if "changes" in p.model_fields_set:
        changes = nodeform.parse_changes(p.changes)
    else:  # a whole node edited as text: its changes are those from the node as loaded
        if p.base is None or p.edited is None:
            raise InvalidInputError("the request body: /changes: give \"changes\", or the node as "
                                    "loaded (\"base\") and as edited (\"edited\")")
        changes = nodeform.changes_between(p.node, p.base, p.edited)
        if not changes:
            raise InvalidInputError("the request body: /edited: nothing changed: the edited node "
                                    "is the node as loaded")
    return nodeform.patch_node(wr, p.node, changes, force=p.force)


def save_node_file(wr: WorldRepo, node_id: str, data: bytes, was: str | None) -> Any:
    from narrative.engine.handedit import write_hand_edit

    edit = write_hand_edit(wr, data, node_id=node_id, was=was)
    return {"path": edit.path, "node": edit.node, "file": edit.file}


WRITES: tuple[tuple[str, type[Params], Callable[[WorldRepo, Any], Any]], ...] = (
    ("/api/studio/relation", RelationParams, save_relation),
    ("/api/studio/fields", FieldsParams, save_fields),
)
"""The studio's own writes: hand edits no row of the table takes in this shape (one relation by
name; the fields a form changed, each checked against the value the page loaded). Their bodies
are validated by their parameters' models as a row's are, so bad input is the same typed error."""


def typed(name: str, value: Any) -> dict[str, Any]:
    """A read's answer named by its schema (``narr.studio_X/1``), as every answer of the API is."""
    from narrative.answers import answer, schema

    return answer(schema(name), value)


def _list(request: Request, name: str) -> list[str]:
    values: list[str] = []
    for value in request.query_params.getlist(name):
        values.extend(v for v in value.split(",") if v)
    return values


def routes(read: Callable[[Callable[[WorldRepo], Any]], Response], token: str,
           number: Callable[[str | None, str], int | None], *,
           write: Callable[[Callable[[WorldRepo], Any], Request], Response] | None = None,
           notices: Notices | None = None) -> list[BaseRoute]:
    """The studio's page, its files, its views and its own writes (:data:`WRITES`, the raw
    file's save). Every other change the page makes is a row's route of the HTTP API."""

    def graph_world(request: Request) -> Response:
        from narrative.engine.studio import DRAW_LIMIT, LIST_LIMIT, world_view

        params = request.query_params
        depth = number(params.get("depth"), "depth")
        limit = number(params.get("limit"), "limit")
        draw = number(params.get("draw"), "draw")
        return read(lambda wr: typed("studio_world", world_view(
            wr, at=params.get("at") or None, around=params.get("around") or None,
            depth=1 if depth is None else depth, layers=_list(request, "layer"),
            kinds=_list(request, "kind"), lifecycles=_list(request, "lifecycle"),
            query=params.get("q"), limit=LIST_LIMIT if limit is None else limit,
            draw=DRAW_LIMIT if draw is None else draw, group=params.get("group") or None,
            expand=_list(request, "expand"))))

    def graph_events(request: Request) -> Response:
        from narrative.engine.studio import EVENT_LIMIT, event_view

        limit = number(request.query_params.get("limit"), "limit")
        shown = EVENT_LIMIT if limit is None else limit
        return read(lambda wr: typed("studio_events", event_view(wr, shown)))

    def where(request: Request) -> Response:
        from narrative.engine.studio import settled_stamp, world_stamp

        def look(wr: Any) -> Any:
            # a writer at work: wait (a little) for its write to be whole, then look
            found = settled_stamp(wr, wait=2.0)
            return typed("studio_where", notice(found if found is not None else world_stamp(wr)))

        return read(look)

    async def changes(request: Request) -> Response:
        if notices is None:
            return Response(status_code=404)
        hub = notices

        async def stream() -> AsyncIterator[str]:
            queue = hub.listen()
            try:
                # The page's reconnection delay, then the stamp as it is now.
                yield "retry: 1000\n\n"
                current = await asyncio.to_thread(hub.stamp)
                if current is not None:  # (a writer at work: the poll sends it once whole)
                    yield f"event: stamp\ndata: {json.dumps(current)}\n\n"
                quiet = 0.0
                while not hub.stopping.is_set():
                    try:
                        stamp = await asyncio.wait_for(queue.get(), 1.0)
                    except TimeoutError:
                        quiet += 1.0
                        if quiet >= 15:  # a comment keeps proxies and the page's timer content
                            quiet = 0.0
                            yield ": still here\n\n"
                        continue
                    quiet = 0.0
                    if stamp != current:
                        current = stamp
                        yield f"event: stamp\ndata: {json.dumps(stamp)}\n\n"
            finally:
                hub.leave(queue)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    def problems(request: Request) -> Response:
        from narrative.engine.studio import problems_view

        return read(lambda wr: typed("studio_problems", problems_view(wr)))

    def writing(model: type[Params], work: Callable[[WorldRepo, Any], Any]) -> Callable[[Request], Any]:
        """A write of the studio's own: the JSON body read and validated by ``model`` (the
        table's typed error naming the field), then ``work`` on the writer thread."""
        async def handler(request: Request) -> Response:
            if write is None:
                return Response(status_code=404)
            try:
                params = parse_params(model, await _json_body(request), source="the request body")
            except NarrError as exc:
                return JSONResponse(exc.to_json("http"), status_code=exc.http_status)
            # on the thread pool: the writer thread's wait must not hold up the event loop
            return await run_in_threadpool(write, lambda wr: work(wr, params), request)
        return handler

    def node(request: Request) -> Response:
        from narrative.engine.naming import Names
        from narrative.engine.studio import node_view

        at = request.query_params.get("at") or None
        text = request.path_params["node_id"]
        return read(lambda wr: typed("studio_node",
                                     node_view(wr, Names(wr).resolve(text, must_exist=False), at)))

    def manuscript(request: Request) -> Response:
        from narrative.engine.manuscript import PASSAGE_LIMIT, manuscript

        limit = number(request.query_params.get("limit"), "limit")
        return read(lambda wr: typed("studio_manuscript",
                                     manuscript(wr, PASSAGE_LIMIT if limit is None else limit)))

    def mentions(request: Request) -> Response:
        from narrative.engine.manuscript import mentions

        return read(lambda wr: typed("studio_mentions", mentions(wr, request.path_params["node_id"])))

    def names(request: Request) -> Response:
        from narrative.engine.studio import names_of

        ids = _list(request, "id")[:500]
        at = request.query_params.get("at") or None
        return read(lambda wr: typed("studio_names", {"names": names_of(wr, ids, at)}))

    def diffusers(request: Request) -> Response:
        from narrative.diffusers.base import default_name
        from narrative.diffusers.base import names as known

        def work(wr: WorldRepo) -> Any:
            try:
                default: str | None = default_name(wr)
                problem = None
            except NarrError as exc:  # the page still lists them, and says why there is no default
                default, problem = None, exc.message
            return typed("studio_diffusers", {"names": known(), "default": default, "problem": problem})
        return read(work)

    def lines(request: Request) -> Response:
        from narrative.engine.studio import story_lines

        return read(lambda wr: typed("studio_lines", story_lines(wr)))

    async def save(request: Request) -> Response:
        """The node's file as the editor holds it, sent as its text (not JSON of JSON), so its
        own mistakes are told by line and column; ``X-Narr-File-Was`` is the file as the page
        loaded it: a save never writes over a change the page did not see."""
        from narrative.serve.http import read_raw

        node_id = request.path_params["node_id"]
        try:
            data = await read_raw(request)
        except NarrError as exc:
            return JSONResponse(exc.to_json("http"), status_code=exc.http_status)
        was = request.headers.get("x-narr-file-was")
        if write is None:
            return Response(status_code=404)
        return await run_in_threadpool(write, lambda wr: save_node_file(wr, node_id, data, was),
                                       request)

    world = hashlib.sha1(str(notices.root if notices else "").encode()).hexdigest()[:12]
    return [
        Route("/", index(token, world)),
        Route("/api/studio/save/{node_id}", save, methods=["PUT"]),
        *(Route(path, writing(model, work), methods=["POST"]) for path, model, work in WRITES),
        Route("/api/studio/lines", lines),
        Route("/api/studio/diffusers", diffusers),
        Route("/api/studio/node/{node_id}", node),
        Route("/api/studio/names", names),
        Route("/api/studio/manuscript", manuscript),
        Route("/api/studio/mentions/{node_id}", mentions),
        Route("/api/studio/problems", problems),
        Route("/api/studio/where", where),
        Route("/api/studio/changes", changes),
        Route("/api/graph/world", graph_world),
        Route("/api/graph/events", graph_events),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
