"""``narr mcp`` over stdio answers every line and lets a client go cleanly: what is not JSON gets
-32700, what is not a JSON-RPC request -32600, a tool call holding text that is not valid Unicode
its tool's typed input error naming the argument (nothing written); a client that hangs up
mid-call costs one line of log, no traceback, and its long call stops."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import snapshot

pytest.importorskip("mcp")


class Raw:
    """``narr mcp`` in a child process, spoken to line by line as a client would (or would not)."""

    def __init__(self, root: Path) -> None:
        env = {**os.environ, "NARR_NO_SERVER": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(root), "mcp"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        assert self.receive(120)["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> Any:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer"
        return json.loads(self.proc.stdout.readline())

    def ask(self, message: Any) -> Any:
        self.send(message)
        return self.receive()

    def close(self) -> str:
        """Close the input as a client leaving does; the server's log."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(60)
        try:
            return self.proc.stderr.read().decode()
        finally:
            self.proc.stderr.close()
            if self.proc.stdout is not None:
                self.proc.stdout.close()


def _error(answer: Any, code: int, request_id: Any) -> str:
    assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id and "result" not in answer, answer
    assert answer["error"]["code"] == code, answer
    return str(answer["error"]["message"])


def test_every_line_gets_an_answer(flat_world: Path) -> None:
    raw = Raw(flat_world)
    try:
        assert _error(raw.ask(b"not json"), -32700, None).startswith("Parse error: not JSON")
        assert _error(raw.ask(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"'), -32700, None)
        assert _error(raw.ask(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"q": "\xff"}}'),
                      -32700, None) == "Parse error: not UTF-8 text (byte 60)"
        assert "batch" in _error(raw.ask(b"[]"), -32600, None)
        assert _error(raw.ask(b"42"), -32600, None)
        assert _error(raw.ask(b'"tools/list"'), -32600, None)
        assert _error(raw.ask(b"{}"), -32600, None)
        assert "no method" in _error(raw.ask({"jsonrpc": "2.0", "id": 7}), -32600, 7)
        assert '"2.0"' in _error(raw.ask({"jsonrpc": "1.0", "id": 8, "method": "tools/list"}), -32600, 8)
        assert _error(raw.ask({"id": "nine", "method": "tools/list"}), -32600, "nine")
        assert "id" in _error(raw.ask({"jsonrpc": "2.0", "id": True, "method": "tools/list"}), -32600, None)
        assert _error(raw.ask({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}), -32600, None)
        assert _error(raw.ask({"jsonrpc": "2.0", "id": 10, "method": 5}), -32600, 10)
        assert _error(raw.ask({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": [1]}),
                      -32600, 11)
        # and it still serves
        tools = raw.ask({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})
        assert tools["id"] == 12 and any(t["name"] == "status" for t in tools["result"]["tools"])
    finally:
        log = raw.close()
    assert raw.proc.returncode == 0 and log == ""


def _call(raw: Raw, request_id: int, name: str, arguments_json: str) -> Any:
    line = (f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
            f'"params": {{"name": "{name}", "arguments": {arguments_json}}}}}').encode()
    answer = raw.ask(line)
    assert answer["id"] == request_id and "error" not in answer, answer
    return answer["result"]


def test_text_that_is_not_unicode_is_a_typed_error_naming_the_argument(flat_world: Path) -> None:
    before = snapshot(flat_world)
    raw = Raw(flat_world)
    try:
        result = _call(raw, 1, "search", '{"q": "Lin \\ud800 Yuan"}')
        assert result["isError"] is True
        error = result["structuredContent"]
        assert error["type"] == "InvalidInputError" and error["exit_code"] == 12
        assert error["error"].startswith("the arguments: /q: text ")
        assert "not valid Unicode" in error["error"]
        assert json.loads(result["content"][0]["text"]) == error
        result = _call(raw, 2, "event", '{"content": "A beat \\udfff", "dry_run": false}')
        assert result["structuredContent"]["error"].startswith("the arguments: /content: ")
        result = _call(raw, 3, "event", '{"content": "A beat", "ops": [{"op": "set", "target": '
                                        '"lin-yuan", "field": "/state/mood", "value": "\\ud83d"}]}')
        assert result["structuredContent"]["error"].startswith("the arguments: /ops: ")
        answer = raw.ask(b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", '
                         b'"params": {"name": "no\\ud800tool", "arguments": {}}}')
        assert _error(answer, -32602, 4).startswith("Invalid params: /params/name: ")
        answer = raw.ask(b'{"jsonrpc": "2.0", "id": 5, "method": "resources/read", '
                         b'"params": {"uri": "narr://node/\\ud800"}}')
        assert _error(answer, -32602, 5) == ("Invalid params: /params/uri: text that is not valid Unicode "
                                             "(a lone surrogate)")
        assert _error(raw.ask(b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}'), -32600, None)
        raw.send(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\ud800"}}')
        assert raw.ask({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})["id"] == 6
    finally:
        log = raw.close()
    assert raw.proc.returncode == 0 and "Traceback" not in log
    assert log.count("\n") == 1 and "dropped a message with text that is not valid Unicode" in log
    assert snapshot(flat_world) == before


LONG = ("Lin Yuan walks to the ferry with the black ring. Su Qing waits at the gate. " * 13_000)[:999_000]


def _hang_up_mid_audit(root: Path, how: str) -> tuple[str, int]:
    raw = Raw(root)
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "audit", "arguments": {"text": LONG}}})
    time.sleep(1.5)  # the audit is under way (alone it runs for minutes)
    assert raw.proc.stdin is not None and raw.proc.stdout is not None and raw.proc.stderr is not None
    if how in ("kill", "input"):
        raw.proc.stdin.close()
    if how in ("kill", "output"):
        raw.proc.stdout.close()
    try:
        raw.proc.wait(45)
    except subprocess.TimeoutExpired:
        raw.proc.kill()
        raw.proc.wait()
        pytest.fail(f"narr mcp ran on for 45 s after its client hung up ({how})")
    log = raw.proc.stderr.read().decode()
    for stream in (raw.proc.stdin, raw.proc.stdout, raw.proc.stderr):
        stream.close()
    return log, raw.proc.returncode


@pytest.mark.parametrize("how", ["kill", "input", "output"])
def test_a_client_that_hangs_up_mid_call_costs_one_line_and_stops_the_call(flat_world: Path,
                                                                           how: str) -> None:
    log, code = _hang_up_mid_audit(flat_world, how)
    assert code == 0
    assert "Traceback" not in log and "ExceptionGroup" not in log
    assert log.count("\n") == 1 and log.startswith("narr mcp: the client hung up ("), log
    assert "1 call(s) under way called off" in log
