"""The studio: the browser front end served at ``/`` by ``narr serve --port``, and its reads.

The page and its scripts are files in ``narrative/serve/static`` (plain HTML, CSS
and JavaScript, no build step; the graph library is vendored under ``vendor/``,
so nothing is fetched from the network). The world's token is needed here as
everywhere: ``/?token=TOKEN`` (the address ``narr studio`` opens) exchanges it
for a cookie that only this origin sends (``HttpOnly``, ``SameSite=Strict``) and
redirects to ``/``, so the token leaves the address bar. Requests that change
the world and are authorised by that cookie must also carry ``X-Narr-Studio``,
a header no other site's page can send without asking first.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from narrative.store.worldrepo import WorldRepo

STATIC = Path(__file__).resolve().parent / "static"
# The page runs only its own files and talks only to its own server, whatever a node's text holds;
# no other site may frame it (its buttons change the world).
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
COOKIE = "narr_token"
HEADER = "x-narr-studio"

REFUSED_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>narr studio</title>
</head><body><h1>narr studio</h1><p>This page needs the world's token. Open it with
<code>narr studio</code>, or visit the address <code>narr studio --url</code> prints.</p></body></html>
"""


def warm(root: Path) -> None:
    """Read the world once as the studio will (for a server that just started), so the first
    page opens as fast as the next; a failure here is the first request's to report."""
    from narrative.engine.studio import world_view
    from narrative.store.worldrepo import WorldRepo

    try:
        with WorldRepo.open(root) as wr:
            world_view(wr, limit=0, draw=0)
    except Exception:  # nothing to report to: the requests will say it
        return


def cookie_token(request: Request) -> str:
    return request.cookies.get(COOKIE, "")


def same(given: str, token: str) -> bool:
    return bool(given) and secrets.compare_digest(given.encode(), token.encode())


def page_html() -> str:
    """The page, carrying narr's own vocabulary (layers, lifecycles) for its script to read:
    one definition (:mod:`narrative.ids`), never a copy in the JavaScript."""
    from html import escape

    from narrative.ids import LAYERS, LIFECYCLES

    words = (f'<body data-layers="{escape(" ".join(LAYERS))}" '
             f'data-lifecycles="{escape(" ".join(LIFECYCLES))}">')
    return (STATIC / "index.html").read_text("utf-8").replace("<body>", words, 1)


def index(token: str) -> Callable[[Request], Response]:
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
        response = HTMLResponse(page_html())
        response.headers["Cache-Control"] = "no-store"
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response
    return page


def _list(request: Request, name: str) -> list[str]:
    values: list[str] = []
    for value in request.query_params.getlist(name):
        values.extend(v for v in value.split(",") if v)
    return values


def routes(read: Callable[[Callable[[WorldRepo], Any]], Response], token: str,
           number: Callable[[str | None, str], int | None]) -> list[BaseRoute]:
    """The studio's page, its files and the API calls only it makes (all reads)."""

    def graph_world(request: Request) -> Response:
        from narrative.engine.studio import DRAW_LIMIT, LIST_LIMIT, world_view

        params = request.query_params
        depth = number(params.get("depth"), "depth")
        limit = number(params.get("limit"), "limit")
        draw = number(params.get("draw"), "draw")
        return read(lambda wr: world_view(
            wr, at=params.get("at") or None, around=params.get("around") or None,
            depth=1 if depth is None else depth, layers=_list(request, "layer"),
            kinds=_list(request, "kind"), lifecycles=_list(request, "lifecycle"),
            query=params.get("q"), limit=LIST_LIMIT if limit is None else limit,
            draw=DRAW_LIMIT if draw is None else draw).to_json())

    def graph_events(request: Request) -> Response:
        from narrative.engine.studio import EVENT_LIMIT, event_view

        limit = number(request.query_params.get("limit"), "limit")
        return read(lambda wr: event_view(wr, EVENT_LIMIT if limit is None else limit).to_json())

    def chains(request: Request) -> Response:
        from narrative.engine.replay import list_chains

        return read(list_chains)

    return [
        Route("/", index(token)),
        Route("/api/graph/world", graph_world),
        Route("/api/graph/events", graph_events),
        Route("/api/chains", chains),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
