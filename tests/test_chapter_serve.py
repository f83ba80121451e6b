"""Chapters for programs: the ``chapter`` operation over MCP (a review, then a recording whose
idempotency key, sent twice, records it once) and over HTTP; and long readings stopped when
their client goes away, leaving no process reading for nobody."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, git, narr_subprocess
from test_disconnects import assert_writable, finish, reply, rpc, start_mcp

pytest.importorskip("mcp")

CHAPTER = """\
# Chapter 1: The Ferry

Lin Yuan walks to the ferry. Su Qing walks to the ferry.

* * *

Lin Yuan gives the black ring to Su Qing.
"""

LONG = "Lin Yuan walks to the ferry. Lin Yuan walks to the gate. " * 6000  # 350k characters


def call(proc: subprocess.Popen[bytes], call_id: int, name: str, arguments: dict[str, Any]
         ) -> dict[str, Any]:
    rpc(proc, {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    return reply(proc, call_id)["result"]  # type: ignore[no-any-return]


def test_the_chapter_tool_reviews_then_records_once_for_a_key_sent_twice(flat_world: Path) -> None:
    proc = start_mcp(flat_world, {})
    try:
        dry = call(proc, 2, "chapter", {"text": CHAPTER, "dry_run": True})["structuredContent"]
        assert dry["schema"] == "narr.chapter/1" and dry["chapter"] is None
        changes = dry["review"]["changes"]
        assert [c["sentence"] for c in changes][:2] == [1, 2]
        keep = [c["n"] for c in changes if c["sentence"] != 2]
        arguments = {"text": CHAPTER, "accept": keep, "key": "chapter-1-take-1"}
        first = call(proc, 3, "chapter", arguments)["structuredContent"]
        again = call(proc, 4, "chapter", arguments)["structuredContent"]  # a retried call
        bad = call(proc, 5, "chapter", {"text": CHAPTER, "accept": [99], "key": "other"})
    finally:
        finish(proc)
    assert first["already"] is False and [e["sentence"] for e in first["events"]] == [1, 3]
    assert again["already"] is True and again["chapter"]["commit"] == first["chapter"]["commit"]
    assert again["head"] == first["head"]
    assert bad["isError"] is True
    narr = CLI(flat_world)
    assert [c["number"] for c in narr.json("log", "--chapters")["items"]] == [1]
    assert narr.json("log", "-n", "1")["items"][0]["commit"] == first["head"]
    assert narr.json("check")["ok"] is True


def test_the_chapter_operation_over_http(flat_world: Path) -> None:
    http = HTTP(flat_world)
    dry = http.post("/api/chapters", {"text": CHAPTER, "dry_run": True})
    assert dry.status_code == 200 and dry.json()["review"]["number"] == 1
    missing = http.post("/api/chapters", {"text": CHAPTER})
    assert missing.status_code == 400 and "/accept" in missing.json()["error"]
    done = http.post("/api/chapters", {"text": CHAPTER, "accept": "all", "key": "k"})
    assert done.status_code == 200 and len(done.json()["events"]) == 3
    twice = http.post("/api/chapters", {"text": CHAPTER, "accept": "all", "key": "k"})
    assert twice.json()["already"] is True


def test_an_mcp_client_that_leaves_mid_audit_leaves_no_process_reading(flat_world: Path) -> None:
    """The client dies while a long audit runs on a reader thread: the server stops it at the
    next sentence and exits, instead of reading on at full speed for nobody."""
    proc = start_mcp(flat_world, {})
    try:
        rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "audit", "arguments": {"text": LONG}}})
        time.sleep(1.5)  # well into the reading (it takes a minute and more)
        assert proc.poll() is None
        assert proc.stdin is not None and proc.stdout is not None
        started = time.monotonic()
        proc.stdin.close()  # the client is gone
        proc.stdout.close()
        proc.wait(timeout=30)
        assert time.monotonic() - started < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail("narr mcp kept running after its client left")
    assert_writable(flat_world)


def test_an_mcp_cancel_stops_a_chapter_review_and_writes_nothing(flat_world: Path) -> None:
    head = git(flat_world, "rev-parse", "HEAD").strip()
    text = "# Chapter 1\n\n" + "Lin Yuan walks to the ferry. Lin Yuan walks to the gate. " * 3000
    proc = start_mcp(flat_world, {})
    try:
        rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "chapter", "arguments": {"text": text, "accept": "all"}}})
        time.sleep(1.5)
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 2, "reason": "changed my mind"}})
        started = time.monotonic()
        status = call(proc, 3, "status", {})  # served once the writer is free again
        assert time.monotonic() - started < 20
        assert status["structuredContent"]["schema"] == "narr.status/2"
    finally:
        finish(proc)
    assert git(flat_world, "rev-parse", "HEAD").strip() == head  # nothing was recorded
    assert not (flat_world / ".git/narr/chapters/pending.json").exists()


def test_an_http_client_that_hangs_up_mid_audit_stops_it(flat_world: Path) -> None:
    from test_serve import _http, start, stop

    info = start(flat_world, "--port", "0")
    try:
        port = info["port"]
        token = (flat_world / ".git" / "narr" / "token").read_text("ascii").strip()
        body = json.dumps({"text": LONG}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /api/audit HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Authorization: Bearer " + token.encode() + b"\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            time.sleep(1.5)
        # the reading stopped: the server is idle again well before the audit could finish
        deadline = time.monotonic() + 20
        while True:
            code, _ = _http(port, "/api/status", token)
            assert code == 200
            busy = narr_subprocess(flat_world, "serve", "--status", "--json")
            state = json.loads(busy.stdout or "{}")
            if state.get("active") == 0:  # the audit's request has ended
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.25)
    finally:
        stop(flat_world, info["pid"])


def test_the_chapter_loop_of_the_agents_page_runs(flat_world: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import re

    text = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text("utf-8")
    code = re.search(r"\*\*A chapter loop\.\*\*.*?```python\n(.*?)```", text, re.S)
    assert code is not None and "from narrative." not in code.group(1)
    monkeypatch.chdir(flat_world.parent)
    (flat_world.parent / "my-world").symlink_to(flat_world)
    exec(compile(code.group(1), "docs/agents.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["Chapter 5: The Crossing 2 events", "True [5]"]


def test_a_served_command_whose_client_is_killed_stops_reading(flat_world: Path,
                                                               tmp_path: Path) -> None:
    """``narr audit`` handed to the world's server, its client killed (Ctrl-C, a closed
    terminal): the server stops reading at the next sentence instead of reading on for nobody."""
    import os
    import signal

    from test_serve import start, stop

    draft = tmp_path / "long.md"
    draft.write_text(LONG[:150_000], "utf-8")
    info = start(flat_world)
    try:
        env = {k: v for k, v in os.environ.items() if k != "NARR_NO_SERVER"}
        client = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "audit",
                                   str(draft)], cwd=flat_world, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(2.0)
        assert client.poll() is None  # handed over, and reading
        client.send_signal(signal.SIGKILL)
        client.wait()
        deadline = time.monotonic() + 20
        while True:
            busy = narr_subprocess(flat_world, "serve", "--status", "--json")
            state = json.loads(busy.stdout)
            assert state["requests"] >= 1  # the audit did run there
            if state["active"] == 0:
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.25)
    finally:
        stop(flat_world, info["pid"])
