"""A client that goes away in the middle of a write, over MCP (stdio) and HTTP: the server
keeps serving (or, over stdio, ends without leaving anything held), and the event is recorded
whole or not at all: never half a commit, a stray hand edit or a lock left behind.

The write is made slow by an exec diffuser that sleeps before it answers, so the client is
surely gone while the event is under way."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git

pytest.importorskip("mcp")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "exec-diffuser.py"
MOVE = "Lin Yuan walks to the ferry"


def slow_diffuser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment that makes ``exec`` a diffuser which sleeps, and the file it touches
    when it starts."""
    started = tmp_path / "diffuser-started"
    prog = tmp_path / "slow-diffuser.py"
    prog.write_text(
        "import pathlib, subprocess, sys, time\n"
        f"pathlib.Path({str(started)!r}).write_text('started')\n"
        "time.sleep(3)\n"
        f"sys.exit(subprocess.run([sys.executable, {str(EXAMPLE)!r}]).returncode)\n", "utf-8")
    env = {"NARR_EXEC_COMMAND": f"{sys.executable} {prog}", "NARR_EXEC_TIMEOUT": "60",
           "NARR_LOCK_TIMEOUT": "1"}
    return env, started


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def assert_whole(root: Path, head_before: str) -> bool:
    """The world is as a finished event or no event left it; True when the event was recorded."""
    narr = CLI(root)
    assert narr.json("check")["ok"] is True
    assert narr.json("status")["edits"] == []  # no half-written node file
    assert git(root, "status", "--porcelain").strip() == ""
    head = git(root, "rev-parse", "HEAD").strip()
    if head == head_before:
        return False
    log = narr.json("log", "-n", "1")["items"]
    assert git(root, "rev-parse", "HEAD~1").strip() == head_before and log[0]["content"] == MOVE
    assert narr.json("get", "lin-yuan", "state.location")["value"] == "ferry"
    return True


def assert_writable(root: Path) -> None:
    """No lock was left held: a writer that will not wait gets through."""
    result = subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), "event", "Dusk",
                             "--set", "lin-yuan.state.mood=calm"], capture_output=True, text=True,
                            env={**os.environ, "NARR_LOCK_TIMEOUT": "0"}, timeout=60)
    assert result.returncode == 0, result.stderr


def rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def reply(proc: subprocess.Popen[bytes], wanted: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server hung up"
        message = json.loads(line)
        if message.get("id") == wanted:
            return message  # type: ignore[no-any-return]


def start_mcp(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(root), "mcp"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, **env})
    rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "a careless client", "version": "0"}}})
    assert "result" in reply(proc, 1)
    rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def finish(proc: subprocess.Popen[bytes]) -> None:
    """Hang up as a client should, and wait for the server to end."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()


def call_event(proc: subprocess.Popen[bytes], call_id: int) -> None:
    rpc(proc, {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {
        "name": "event", "arguments": {"content": MOVE, "diffuser": "exec"}}})


def test_an_mcp_client_that_hangs_up_mid_event_leaves_the_world_whole(flat_world: Path,
                                                                       tmp_path: Path) -> None:
    env, started = slow_diffuser(tmp_path)
    head = git(flat_world, "rev-parse", "HEAD").strip()
    proc = start_mcp(flat_world, env)
    try:
        call_event(proc, 2)
        wait_for(started)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the client dies: its end of both pipes closes
        proc.stdout.close()
        proc.wait(timeout=60)  # the server ends on its own, nothing left waiting
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert assert_whole(flat_world, head)  # the write under way finished, whole
    # and a new client is served by a new server: nothing was left held
    started.unlink()
    again = start_mcp(flat_world, {})
    try:
        rpc(again, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "status", "arguments": {}}})
        answer = reply(again, 2)["result"]
        assert answer["structuredContent"]["schema"] == "narr.status/2" and not answer.get("isError")
    finally:
        finish(again)
    assert_writable(flat_world)


def test_an_mcp_client_that_cancels_mid_event_is_served_on(flat_world: Path, tmp_path: Path) -> None:
    """The protocol's own cancel: the session carries on, the next call is answered."""
    env, started = slow_diffuser(tmp_path)
    head = git(flat_world, "rev-parse", "HEAD").strip()
    proc = start_mcp(flat_world, env)
    try:
        call_event(proc, 2)
        wait_for(started)
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 2, "reason": "the user changed their mind"}})
        rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "log", "arguments": {"n": 1}}})
        answer = reply(proc, 3)["result"]
        assert answer["structuredContent"]["schema"] == "narr.log/2"
        rpc(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                   "params": {"name": "status", "arguments": {}}})
        assert reply(proc, 4)["result"]["structuredContent"]["schema"] == "narr.status/2"
    finally:
        finish(proc)
    assert_whole(flat_world, head)
    assert_writable(flat_world)


def test_an_http_client_that_hangs_up_mid_event_leaves_the_server_serving(flat_world: Path,
                                                                          tmp_path: Path) -> None:
    from test_serve import _http, start, stop

    env, started = slow_diffuser(tmp_path)
    head = git(flat_world, "rev-parse", "HEAD").strip()
    info = start(flat_world, "--port", "0", env=env)
    try:
        port = info["port"]
        token = (flat_world / ".git" / "narr" / "token").read_text("ascii").strip()
        body = json.dumps({"content": MOVE, "diffuser": "exec"}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Authorization: Bearer " + token.encode() + b"\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            wait_for(started)
        # gone mid-call; the server answers the next client at once, and the write lands whole
        code, status = _http(port, "/api/status", token)
        assert code == 200 and status["schema"] == "narr.status/2"
        deadline = time.monotonic() + 60
        while git(flat_world, "rev-parse", "HEAD").strip() == head:
            assert time.monotonic() < deadline, "the event under way never finished"
            time.sleep(0.1)
        code, log = _http(port, "/api/log?n=1", token)
        assert code == 200 and log["items"][0]["content"] == MOVE
    finally:
        stop(flat_world, info["pid"])
    assert assert_whole(flat_world, head)
    assert_writable(flat_world)
