"""The studio asks a use case the operations table has of the row's own route, with the row's
arguments, as any program does; its own routes are its views and the hand edits no row takes.
Through its cookie, a write still needs the studio's header and the HEAD the page saw, and bad
input is the table's typed error naming the field, with nothing written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, TOKEN, Answer, InlineWriter, read_node, snapshot

from narrative.operations import OPERATIONS
from narrative.serve.studio import STATIC

OWN_WRITES = {("POST", "/api/studio/relation"), ("POST", "/api/studio/fields"),
              ("PUT", "/api/studio/save/{node_id}")}
"""The studio's writes that are not rows: hand edits in a shape no row takes."""


def _unplaced(text: str) -> str:
    """A template literal's path with its ``${...}`` filled: a query string dropped, any other
    value one path segment."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("${", i):
            depth, j = 1, i + 2
            while depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            inner = text[i + 2:j - 1]
            out.append("" if inner.startswith("query(") else "x")
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def page_calls() -> set[tuple[str, str]]:
    """``(method, path)`` of every call the page's scripts make to the server."""
    calls = set()
    for script in STATIC.glob("*.js"):
        source = script.read_text("utf-8")
        for match in re.finditer(r'(api|EventSource)\(\s*(["`])(/api/.*?)\2(.{0,60})', source):
            method = re.match(r'\s*,\s*\{\s*method:\s*"(\w+)"', match[4])
            calls.add((method[1] if method else "GET", _unplaced(match[3])))
    return calls


def app(root: Path) -> Any:
    from narrative.serve.http import make_app

    return make_app(InlineWriter(root), TOKEN)


def route_of(application: Any, method: str, path: str) -> str | None:
    from starlette.routing import Route

    for route in application.routes:
        if isinstance(route, Route) and route.path_regex.match(path) \
                and (route.methods is None or method in route.methods):
            return str(route.path)
    return None


def test_the_page_asks_the_rows_for_what_the_table_has(flat_world: Path) -> None:
    """Every call the page's scripts make reaches a route of the server, and every change it
    makes is a row's route but for the studio's own hand edits."""
    calls = page_calls()
    assert ("POST", "/api/events") in calls and ("POST", "/api/failed/retry") in calls  # it reads them
    application = app(flat_world)
    rows = {(op.method, op.path) for op in OPERATIONS}
    for method, path in sorted(calls):
        route = route_of(application, method, path)
        assert route is not None, f"the page calls {method} {path}, which no route serves"
        if method != "GET":
            assert (method, route) in rows | OWN_WRITES, f"{method} {route} is not a row's route"
    writes = {(m, str(r.path)) for r in application.routes
              if str(getattr(r, "path", "")).startswith("/api/studio")
              for m in (getattr(r, "methods", None) or ()) if m not in ("GET", "HEAD")}
    assert writes == OWN_WRITES


class Page(HTTP):
    """Requests as the studio's page sends them: the token's cookie, not the bearer token, and
    the studio's header on a write unless told otherwise."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.extra: list[tuple[bytes, bytes]] = []
        inner = self.app

        async def as_the_page(scope: Any, receive: Any, send: Any) -> None:
            headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
            headers += [(b"cookie", f"narr_token={TOKEN}".encode()), *self.extra]
            await inner({**scope, "headers": headers}, receive, send)
        self.app = as_the_page

    def send(self, method: str, path: str, body: Any, *, studio: bool = True,
             head: str | None = None) -> Answer:
        self.extra = [(b"x-narr-studio", b"1")] if studio else []
        if head is not None:
            self.extra.append((b"if-match", f'"{head}"'.encode()))
        assert method == "POST"
        return self.post(path, json=body)


def test_the_composer_is_the_event_row_behind_the_studios_guards(flat_world: Path) -> None:
    page = Page(flat_world)
    head = CLI(flat_world).json("log", "-n", "1")["items"][0]["commit"]
    words = {"content": "Lin Yuan rests", "set": ["Lin Yuan.state.mood=rested"],
             "story_time": "Day 3, dusk", "text": None, "diffuser": "explicit", "accept": [],
             "close_scene": False, "dry_run": False}
    before = snapshot(flat_world)
    # The cookie alone is not enough to write, nor a HEAD the page saw that is no longer HEAD.
    assert page.send("POST", "/api/events", words, studio=False).status_code == 401
    assert page.send("POST", "/api/events", words, head="0" * 40).status_code == 412
    # The studio's old spelling of story time is an unknown argument, named.
    wrong = page.send("POST", "/api/events", {**words, "story_time": None, "at": "Day 3"}, head=head)
    assert wrong.status_code == 400, wrong.text
    assert (wrong.json()["type"], wrong.json()["error"]) == (
        "InvalidInputError", "the request body: /at: unknown field")
    assert snapshot(flat_world) == before
    done = page.send("POST", "/api/events", words, head=head)
    assert done.status_code == 200, done.text
    assert done.json()["schema"].startswith("narr.event/")
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "rested"
    assert CLI(flat_world).json("log", "-n", "1")["items"][0]["timestamp"] == "Day 3, dusk"


def test_a_failed_event_is_retried_and_dropped_by_its_key_as_the_row_takes_it(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "x", "--set", "nobody-here.state.mood=1", "--diffuser", "none", expect=12)
    key = narr.json("failed")["items"][0]["key"]
    page = Page(flat_world)
    old = page.send("POST", "/api/failed/drop", {"key": key})
    assert old.status_code == 400 and "the request body: /key: unknown field" in old.json()["details"]
    retried = page.send("POST", "/api/failed/retry", {"which": key, "dry_run": True})
    assert retried.status_code == 400, retried.text  # the node is still missing: it stays kept
    assert "no node 'nobody-here'" in retried.json()["error"]
    assert narr.json("failed")["items"][0]["key"] == key
    dropped = page.send("POST", "/api/failed/drop", {"which": key})
    assert dropped.status_code == 200, dropped.text
    assert dropped.json()["dropped"]["key"] == key and narr.json("failed")["items"] == []


@pytest.mark.parametrize(("path", "body", "said"), [
    ("/api/studio/relation", {"node": "lin-yuan", "type": "knows", "target": "su-qing", "remove": "yes"},
     "the request body: /remove: Input should be a valid boolean"),
    ("/api/studio/relation", {"node": "lin-yuan", "type": "knows", "target": "su-qing", "colour": 1},
     "the request body: /colour: unknown field"),
    ("/api/studio/relation", {"node": "lin-yuan", "target": "su-qing"},
     "the request body: /type: Field required"),
    ("/api/studio/relation", {"node": "lin-yuan", "type": "knows", "target": "su-qing",
                              "replaces": {"type": "knows"}},
     "the request body: /replaces/target: Field required"),
    ("/api/studio/relation", {"node": "lin-yuan", "type": "knows", "target": "su-qing", "attrs": [1]},
     "the request body: /attrs: Input should be a valid dictionary"),
    ("/api/studio/fields", {"node": "lin-yuan"}, "the request body: /changes: give"),
    ("/api/studio/fields", {"node": "lin-yuan", "changes": [], "force": "all"},
     "the request body: /force: Input should be a valid list"),
    ("/api/studio/fields", {"node": "", "changes": [{"field": "/state/mood", "new": 1}]},
     "the request body: /node: String should have at least 1 character"),
])
def test_bad_input_to_the_studios_own_writes_is_the_tables_typed_error(
        flat_world: Path, path: str, body: dict[str, Any], said: str) -> None:
    before = snapshot(flat_world)
    answer = Page(flat_world).send("POST", path, body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == "InvalidInputError"
    assert answer.json()["error"].startswith(said)
    assert snapshot(flat_world) == before


def test_the_studios_own_writes_still_write(flat_world: Path) -> None:
    page = Page(flat_world)
    assert page.send("POST", "/api/studio/relation", {"node": "lin-yuan", "type": "owes",
                                                      "target": "Su Qing"}, studio=False).status_code == 401
    made = page.send("POST", "/api/studio/relation", {"node": "Lin Yuan", "type": "owes",
                                                      "target": "Su Qing", "attrs": {"since": "spring"}})
    assert made.status_code == 200, made.text
    assert read_node(flat_world, "lin-yuan")["relations"]["owes"] == {"su-qing": {"since": "spring"}}
    saved = page.send("POST", "/api/studio/fields", {"node": "lin-yuan", "changes": [
        {"field": "/state/mood", "old": read_node(flat_world, "lin-yuan")["state"].get("mood"),
         "new": "torn"}]})
    assert saved.status_code == 200, saved.text
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "torn"
