"""The HTTP API's query and time-travel endpoints answer what the CLI's ``--json`` prints, and
fail as it fails (same error, kind and exit code, an HTTP status that says the same), changing
nothing when they fail. The app runs in-process, called as ASGI, over a server stub that runs
writes at once (helpers.HTTP); the real server's threads and sockets are tested in test_serve.py."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import CLI, HTTP, git, snapshot

VARYING = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # event ids
                     r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"  # times
                     r"|\b[0-9a-f]{40}\b|\b[0-9a-f]{10}\b"  # commits
                     r"|(?<=-)[0-9a-f]{4}\b")  # the tip's hash in an abandoned chain's name


def client(root: Path) -> HTTP:
    return HTTP(root)


def cli(root: Path, *args: str) -> tuple[int, Any]:
    """``narr ARGS --json`` in-process: (exit code, its JSON answer or its JSON error)."""
    from narrative.cli import main

    result = CliRunner().invoke(main, ["-C", str(root), *args, "--json"], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout if result.exit_code == 0 else result.stderr)


def masked(value: Any) -> Any:
    return json.loads(VARYING.sub("*", json.dumps(value, ensure_ascii=False)))


@pytest.fixture
def story(flat_world: Path) -> Path:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Su Qing grows suspicious", "--relate", "su-qing:suspects:lin-yuan",
         "--set", "black-ring.state.warmth=warm")
    narr("event", "Dusk", "--set", "lin-yuan.state.mood=wary")
    return flat_world


@pytest.fixture
def twins(story: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The story and an identical copy: one moved over HTTP, the other by the CLI."""
    other = tmp_path / "twin"
    shutil.copytree(story, other, symlinks=True)
    yield story, other


def test_query_endpoints_answer_as_the_cli(story: Path) -> None:
    http = client(story)
    narr = CLI(story)
    narr("branch", "side")
    pairs = [
        ("/api/why/black-ring?field=state.warmth", ("why", "black-ring", "state.warmth")),
        ("/api/why/lin-yuan?field=state.mood&at=HEAD~1", ("why", "lin-yuan", "state.mood",
                                                           "--at", "HEAD~1")),
        ("/api/history/lin-yuan", ("history", "lin-yuan")),
        ("/api/history/su-qing?at=HEAD~1", ("history", "su-qing", "--at", "HEAD~1")),
        ("/api/search?q=ferry", ("search", "ferry")),
        ("/api/search?q=ring&limit=1", ("search", "ring", "--limit", "1")),
        ("/api/brief", ("brief",)),
        ("/api/brief?goal=the+ferry&focus=lin-yuan&budget=800&pov=su-qing",
         ("brief", "the ferry", "--focus", "lin-yuan", "--budget", "800", "--pov", "su-qing")),
        ("/api/brief?at=HEAD~1&budget=900", ("brief", "--at", "HEAD~1", "--budget", "900")),
        ("/api/branches", ("branch",)),
    ]
    for path, args in pairs:
        response = http.get(path)
        code, expected = cli(story, *args)
        assert (response.status_code, code) == (200, 0), (path, response.text)
        assert response.json() == expected, path  # the same JSON, schema and all
    names = [b["name"] for b in http.get("/api/branches").json()["items"]]
    assert names == ["main", "side"]
    assert len(http.get("/api/search?q=ring&limit=1").json()["hits"]) == 1
    # names and aliases work as in the CLI
    assert http.get("/api/history/Lin%20Yuan").json() == cli(story, "history", "Lin Yuan")[1]
    md = http.get("/api/brief?goal=the+ferry&format=md")
    assert md.status_code == 200 and md.text.startswith("# Brief: the ferry\n")
    assert md.text == CLI(story)("brief", "the ferry", "--format", "md").stdout
    assert http.get("/api/brief?format=html").status_code == 400


@pytest.mark.parametrize(("path", "args", "status"), [
    ("/api/why/no-such-node?field=state.mood", ("why", "no-such-node", "state.mood"), 404),
    ("/api/why/lin-yuan?field=state.mood&at=nowhere", ("why", "lin-yuan", "state.mood",
                                                       "--at", "nowhere"), 404),
    ("/api/history/no-such-node", ("history", "no-such-node"), 404),
    ("/api/history/lin-yuan?at=nowhere", ("history", "lin-yuan", "--at", "nowhere"), 404),
    ("/api/search?q=%20", ("search", " "), 400),
    ("/api/brief?focus=no-such-node", ("brief", "--focus", "no-such-node"), 404),
    ("/api/brief?pov=no-such-node", ("brief", "--pov", "no-such-node"), 404),
])
def test_query_errors_are_the_cli_errors(story: Path, path: str, args: tuple[str, ...],
                                         status: int) -> None:
    response = client(story).get(path)
    code, expected = cli(story, *args)
    assert code != 0 and expected["exit_code"] == code
    # the CLI names its flag (--focus), the API its parameter (focus)
    expected["error"] = re.sub(r"^--(focus|pov):", r"\1:", expected["error"])
    # and each words the hint's next step its own way: a command, a route
    answer = response.json()
    assert "narr " not in (answer["hint"] or "")
    if expected["hint"] and "narr nodes" in expected["hint"]:
        assert "GET /api/nodes" in answer["hint"]
    answer["hint"] = expected["hint"] = None
    assert (response.status_code, answer) == (status, expected)  # errors as the CLI's


def test_reset_over_http_is_the_cli_reset(twins: tuple[Path, Path]) -> None:
    a, b = twins
    response = client(a).post("/api/reset", json={"rev": "HEAD~2"})
    code, expected = cli(b, "reset", "HEAD~2")
    assert (response.status_code, code) == (200, 0)
    assert masked(response.json()) == masked(expected)
    assert [e["content"] for e in response.json()["undone"]] == ["Dusk", "Su Qing grows suspicious"]
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "log", "-1", "--format=%s").strip() == "Lin Yuan walks to the ferry"
    assert {k: v for k, v in snapshot(a).items() if not k.startswith(".git/")} == {
        k: v for k, v in snapshot(b).items() if not k.startswith(".git/")}


def test_revert_over_http_is_the_cli_revert(twins: tuple[Path, Path]) -> None:
    a, b = twins
    response = client(a).post("/api/revert", json={"rev": "HEAD~1"})
    code, expected = cli(b, "revert", "HEAD~1")
    assert (response.status_code, code) == (200, 0)
    assert masked(response.json()) == masked(expected)
    assert {(d["target"], d["field"]) for d in response.json()["diffusions"]} == {
        ("su-qing", "/relations/suspects/lin-yuan"), ("black-ring", "/state/warmth")}
    assert json.loads((a / "world/item/black-ring.json").read_text("utf-8"))["state"]["warmth"] == "cold"
    assert {k: v for k, v in snapshot(a).items() if k.startswith("world/")} == {
        k: v for k, v in snapshot(b).items() if k.startswith("world/")}


def test_replay_over_http_is_the_cli_replay(twins: tuple[Path, Path]) -> None:
    a, b = twins
    for root in (a, b):
        CLI(root)("reset", "HEAD~2")
    response = client(a).post("/api/replay", json={"chain": "1", "reuse": True})
    code, expected = cli(b, "replay", "1", "--reuse")
    assert (response.status_code, code) == (200, 0)
    assert masked(response.json()) == masked(expected)
    assert git(a, "log", "-1", "--format=%s").strip() == "Dusk"
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")  # fast-forwarded: same commits


@pytest.mark.parametrize(("path", "body", "args", "status"), [
    ("/api/reset", {"rev": "nowhere"}, ("reset", "nowhere"), 404),
    ("/api/reset", {"rev": "HEAD~9"}, ("reset", "HEAD~9"), 404),
    ("/api/reset", {"rev": "HEAD", "before": "lin-yuan"}, ("reset", "HEAD", "--before", "lin-yuan"),
     400),
    ("/api/revert", {"rev": "nowhere"}, ("revert", "nowhere"), 404),
    ("/api/replay", {"chain": "7"}, ("replay", "7"), 404),
])
def test_time_travel_errors_are_the_cli_errors_and_change_nothing(
        story: Path, path: str, body: dict[str, Any], args: tuple[str, ...], status: int) -> None:
    before = snapshot(story)
    response = client(story).post(path, json=body)
    assert snapshot(story) == before
    code, expected = cli(story, *args)
    assert code != 0 and expected["exit_code"] == code
    assert (response.status_code, response.json()) == (status, expected)  # errors as the CLI's


def test_malformed_bodies_are_refused_as_input_errors(story: Path) -> None:
    http = client(story)
    before = snapshot(story)
    for path, content in (("/api/reset", b"[1, 2]"), ("/api/revert", b"{}"),
                          ("/api/replay", b"{not json"), ("/api/revert", b'{"rev": 3}')):
        response = http.post(path, content=content)
        assert response.status_code == 400, (path, content)
        assert (response.json()["type"], response.json()["exit_code"]) == ("InvalidInputError", 12)
    assert http.get("/api/search?q=ring&limit=many").json()["exit_code"] == 12
    assert snapshot(story) == before
