"""The studio: the browser front end served at ``/`` by ``narr serve --port``, and its reads.

The page and its scripts are files in ``narrative/serve/static`` (plain HTML, CSS
and JavaScript, no build step; the graph library is vendored under ``vendor/``,
so nothing is fetched from the network). The world's token is needed here as
everywhere: ``/?token=TOKEN`` (the address ``narr studio`` opens) exchanges it
for a cookie that only this origin sends (``HttpOnly``, ``SameSite=Strict``) and
redirects to ``/``, so the token leaves the address bar. Requests that change
the world and are authorised by that cookie must also carry ``X-Narr-Studio``,
a header no other site's page can send without asking first.

The page stays true to the world: ``/api/studio/changes`` is a stream of
server-sent events, one whenever HEAD, the story line, the hand edits, the kept
set-aside edits and chains or the failed events change, whoever changed them
(one poller per server, running only while a page listens). Every write the
page makes carries the HEAD it last saw as ``If-Match`` (and its story line as
``X-Narr-Branch``); a write whose HEAD moved meanwhile is refused with 412 and
changes nothing (:func:`guard`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

    def stamp(self) -> dict[str, Any]:
        from narrative.engine.studio import world_stamp
        from narrative.store import WorldRepo

        with WorldRepo.open(self.root) as wr:
            return notice(world_stamp(wr))

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


def _text(body: dict[str, Any], key: str, what: str) -> str:
    from narrative.errors import InvalidInputError

    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"\"{key}\" must be {what}, as text")
    return value


def _invalid(message: str) -> Exception:
    from narrative.errors import InvalidInputError

    return InvalidInputError(message)


def _opt(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _invalid(f"\"{key}\" must be text")
    return value.strip()


def _strings(body: dict[str, Any], key: str) -> list[str]:
    """A list of texts; a string is split at commas (a form's one field)."""
    value = body.get(key)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(f"\"{key}\" must be a list of texts")
    return [v.strip() for v in value if v.strip()]


def compose(wr: WorldRepo, body: dict[str, Any]) -> Any:
    """An event from the composer: the words, and everything ``narr event`` takes beside them
    (``set``, ``unset``, ``relate``, ``unrelate``, ``expire`` in the flags' own forms, story
    time ``at``, narrative ``text``, a ``diffuser``, ``close_scene``, held-back changes to
    ``accept``), run as the CLI runs it."""
    from narrative.delta import flags
    from narrative.delta.request import EventRequest
    from narrative.diffusers.base import default_name, get_diffuser
    from narrative.engine.event import names_then_event, run_event
    from narrative.engine.naming import Names

    content = _opt(body, "content")
    if not content:
        raise _invalid("say what happens: \"content\" is the event's text")
    lists = {k: _strings(body, k) for k in ("set", "unset", "relate", "unrelate", "expire")}
    accept = body.get("accept") or []
    if not isinstance(accept, list) or not all(type(n) is int for n in accept):
        raise _invalid("\"accept\" must be a list of the held-back changes' numbers")
    name = _opt(body, "diffuser") or default_name(wr)
    diffuser = get_diffuser(name, wr)
    with names_then_event(wr, diffuser):
        names = Names(wr) if any(lists.values()) else None
        delta = flags.build_delta(sets=lists["set"], unsets=lists["unset"], relates=lists["relate"],
                                  unrelates=lists["unrelate"], expires=lists["expire"], names=names,
                                  references=set(wr.config.reference_labels))
        request = EventRequest(content=content, delta=delta, diffuser=name,
                               timestamp=_opt(body, "at") or None,
                               narrative_text=_opt(body, "text") or None,
                               close_scene=bool(body.get("close_scene")), accept=accept)
        return run_event(wr, request, dry_run=bool(body.get("dry_run")), diffuser=diffuser).to_json()


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
    """The studio's page, its files and the API calls only it makes."""

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
        from narrative.engine.studio import world_stamp

        return read(lambda wr: typed("studio_where", notice(world_stamp(wr))))

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

    def writing(work: Callable[[WorldRepo, dict[str, Any]], Any]) -> Callable[[Request], Any]:
        """A write of the studio's own: the JSON body read, then ``work`` on the writer thread."""
        async def handler(request: Request) -> Response:
            if write is None:
                return Response(status_code=404)
            try:
                body = await _json_body(request)
            except NarrError as exc:
                return JSONResponse(exc.to_json(), status_code=exc.http_status)
            # on the thread pool: the writer thread's wait must not hold up the event loop
            return await run_in_threadpool(write, lambda wr: work(wr, body), request)
        return handler

    def retry_failed(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.event import retry

        return retry(wr, _text(body, "key", "the failed event's key"),
                     dry_run=bool(body.get("dry_run"))).to_json()

    def drop_failed(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.failed import drop

        return drop(wr, _text(body, "key", "the failed event's key")).to_json()

    def create(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.new import new_node

        return new_node(wr, _text(body, "layer", "the node's layer"),
                        _text(body, "name", "the node's name"),
                        kind=_opt(body, "kind"), aliases=_strings(body, "aliases"),
                        lifecycle=_opt(body, "lifecycle") or "permanent",
                        summary=_opt(body, "summary"),
                        pronouns=_opt(body, "pronouns") or None).to_json()

    def relation(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.handedit import edit_relation

        was = body.get("replaces")
        replaces = None
        if was is not None:
            if not (isinstance(was, dict) and isinstance(was.get("type"), str)
                    and isinstance(was.get("target"), str)):
                raise _invalid("\"replaces\" must be {\"type\": ..., \"target\": ...}")
            replaces = (was["type"], was["target"])
        attrs = body.get("attrs")
        if attrs is not None and not isinstance(attrs, dict):
            raise _invalid("a relation's attributes must be a JSON object, e.g. {\"since\": \"spring\"}")
        return edit_relation(wr, _text(body, "node", "the node"),
                               _text(body, "type", "the relation's type"),
                               _text(body, "target", "the relation's target (a name, an alias or an id)"),
                               attrs=attrs, remove=bool(body.get("remove")), replaces=replaces)

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

    def fields_(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine import nodeform

        node = _text(body, "node", "the node")
        force = body.get("force") or []
        if not isinstance(force, list) or not all(isinstance(f, str) for f in force):
            raise _invalid("\"force\" must be a list of fields (JSON pointers)")
        if "changes" in body:
            changes = nodeform.parse_changes(body["changes"])
        else:  # a whole node edited as text: its changes are those from the node as loaded
            base, edited = body.get("base"), body.get("edited")
            if not isinstance(base, dict) or not isinstance(edited, dict):
                raise _invalid("give \"changes\", or the node as loaded (\"base\") and as edited "
                               "(\"edited\")")
            changes = nodeform.changes_between(node, base, edited)
            if not changes:
                raise _invalid("nothing changed: the edited node is the node as loaded")
        return nodeform.patch_node(wr, node, changes, force=force)

    def names(request: Request) -> Response:
        from narrative.engine.studio import names_of

        ids = _list(request, "id")[:500]
        at = request.query_params.get("at") or None
        return read(lambda wr: typed("studio_names", {"names": names_of(wr, ids, at)}))

    def diffusers(request: Request) -> Response:
        from narrative.diffusers.base import default_name
        from narrative.diffusers.base import names as known
        from narrative.errors import NarrError

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

    def switch(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.branches import switch

        return switch(wr, _text(body, "name", "the story line's name"), set_aside=bool(body.get("set_aside")),
                      create=bool(body.get("create"))).to_json()

    def branch(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.branches import create_branch

        return create_branch(wr, _text(body, "name", "the story line's name"),
                             _opt(body, "rev") or None).to_json()

    def merge(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.merge import merge

        return merge(wr, _text(body, "branch", "the story line to merge")).to_json()

    def resolve(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.merge import resolve

        take = body.get("take")
        if take is not None and take not in ("ours", "theirs"):
            raise _invalid("\"take\" is ours or theirs (or give a \"value\")")
        if take is None and "value" not in body:
            raise _invalid("say which: \"take\": ours or theirs, or a \"value\"")
        field_ = body.get("field")
        if not isinstance(field_, str):
            raise _invalid("\"field\" must be the conflict's field (\"\" for the whole node)")
        if take is not None:
            return resolve(wr, _text(body, "node", "the conflict's node"), field_, take=take).to_json()
        return resolve(wr, _text(body, "node", "the conflict's node"), field_,
                       value=body["value"]).to_json()

    def merge_continue(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.merge import continue_merge

        return continue_merge(wr).to_json()

    def merge_abort(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.merge import abort

        return abort(wr).to_json()

    def restore(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.setaside import restore

        which = _text(body, "which", "the set-aside edits' ref")
        return restore(wr, which, force=bool(body.get("force"))).to_json()

    def drop_edits(wr: WorldRepo, body: dict[str, Any]) -> Any:
        from narrative.engine.setaside import drop_set_aside

        return drop_set_aside(wr, _text(body, "which", "the set-aside edits' ref")).to_json()

    async def save(request: Request) -> Response:
        from narrative.serve.http import read_raw

        node_id = request.path_params["node_id"]
        try:
            data = await read_raw(request)
        except NarrError as exc:
            return JSONResponse(exc.to_json(), status_code=exc.http_status)
        was = request.headers.get("x-narr-file-was")
        if write is None:
            return Response(status_code=404)
        return await run_in_threadpool(write, lambda wr: save_node_file(wr, node_id, data, was),
                                       request)

    def save_node_file(wr: WorldRepo, node_id: str, data: bytes, was: str | None) -> Any:
        from narrative.engine.handedit import write_hand_edit

        edit = write_hand_edit(wr, data, node_id=node_id, was=was)
        return {"path": edit.path, "node": edit.node, "file": edit.file}

    world = hashlib.sha1(str(notices.root if notices else "").encode()).hexdigest()[:12]
    return [
        Route("/", index(token, world)),
        Route("/api/studio/save/{node_id}", save, methods=["PUT"]),
        Route("/api/studio/lines", lines),
        Route("/api/studio/switch", writing(switch), methods=["POST"]),
        Route("/api/studio/branch", writing(branch), methods=["POST"]),
        Route("/api/studio/merge", writing(merge), methods=["POST"]),
        Route("/api/studio/merge/resolve", writing(resolve), methods=["POST"]),
        Route("/api/studio/merge/continue", writing(merge_continue), methods=["POST"]),
        Route("/api/studio/merge/abort", writing(merge_abort), methods=["POST"]),
        Route("/api/studio/edits/restore", writing(restore), methods=["POST"]),
        Route("/api/studio/edits/drop", writing(drop_edits), methods=["POST"]),
        Route("/api/studio/diffusers", diffusers),
        Route("/api/studio/node/{node_id}", node),
        Route("/api/studio/names", names),
        Route("/api/studio/fields", writing(fields_), methods=["POST"]),
        Route("/api/studio/manuscript", manuscript),
        Route("/api/studio/mentions/{node_id}", mentions),
        Route("/api/studio/nodes", writing(create), methods=["POST"]),
        Route("/api/studio/relation", writing(relation), methods=["POST"]),
        Route("/api/studio/compose", writing(compose), methods=["POST"]),
        Route("/api/studio/problems", problems),
        Route("/api/studio/failed/retry", writing(retry_failed), methods=["POST"]),
        Route("/api/studio/failed/drop", writing(drop_failed), methods=["POST"]),
        Route("/api/studio/where", where),
        Route("/api/studio/changes", changes),
        Route("/api/graph/world", graph_world),
        Route("/api/graph/events", graph_events),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
