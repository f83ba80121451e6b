"""``narr mcp`` driven by the ``mcp`` SDK's own client over stdio, as an agent host runs it: the
tools and resources it lists, reads and writes compared with the CLI's ``--json``, and bad calls
(unknown tool, a bad op, missing, extra and wrongly typed arguments, a huge string, a busy world)
answered with a typed error while the server keeps serving and nothing is written."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import CLI, check_answer, git, snapshot
from test_http_api import masked

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


@asynccontextmanager
async def session(root: Path, env: dict[str, str] | None = None,
                  log: Path | None = None) -> AsyncIterator[ClientSession]:
    """A client of ``narr mcp`` in ``root``; the server's stderr (its log) into ``log``."""
    # a writer that finds the world locked waits a second, not the default, before it is busy
    params = StdioServerParameters(command=sys.executable, args=["-m", "narrative", "-C", str(root), "mcp"],
                                   env={**os.environ, "NARR_LOCK_TIMEOUT": "1", **(env or {})},
                                   cwd=str(root))
    with open(log or os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as client:
            await client.initialize()
            yield client


def run(root: Path, script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with session(root) as client:
            return await script(client)

    return anyio.run(main)


def answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert data == json.loads(result.content[0].text)  # the text for clients that read only that
    return data  # type: ignore[no-any-return]


def cli_json(root: Path, *args: str, code: int = 0) -> Any:
    from click.testing import CliRunner

    from narrative.cli import main

    result = CliRunner().invoke(main, ["-C", str(root), *args, "--json"], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout if code == 0 else result.stderr)


def test_tools_and_resources_are_listed_with_their_schemas(flat_world: Path) -> None:
    async def script(client: ClientSession) -> Any:
        return (await client.list_tools(), await client.list_resources(),
                await client.list_resource_templates())

    tools, resources, templates = run(flat_world, script)
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) >= {"brief", "get_node", "list_nodes", "search", "why", "history", "threads",
                            "log", "status", "event", "reset", "revert", "replay", "audit"}
    event = by_name["event"]
    assert event.input_schema["properties"]["dry_run"]["type"] == "boolean"
    assert event.input_schema["required"] == ["content"]
    assert event.annotations.read_only_hint is False and event.annotations.destructive_hint is False
    assert by_name["reset"].annotations.destructive_hint is True
    assert by_name["brief"].annotations.read_only_hint is True
    why = by_name["why"].output_schema
    assert why["properties"]["schema"] == {"const": "narr.why/2", "type": "string"}
    assert why["additionalProperties"] is False and "value" in why["properties"]  # the typed answer
    assert [r.uri for r in resources.resources] == ["narr://brief"]
    assert [t.uri_template for t in templates.resource_templates] == ["narr://node/{id}"]


def test_reads_and_writes_answer_as_the_cli(flat_world: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(flat_world, twin, symlinks=True)
    ops = [{"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]

    async def script(client: ClientSession) -> Any:
        out = {}
        out["status"] = answer(await client.call_tool("status", {}))
        out["dry"] = answer(await client.call_tool("event", {"content": "Lin Yuan walks to the ferry",
                                                             "ops": ops, "dry_run": True}))
        out["dry_log"] = answer(await client.call_tool("log", {}))
        out["event"] = answer(await client.call_tool("event", {"content": "Lin Yuan walks to the ferry",
                                                               "ops": ops}))
        out["why"] = answer(await client.call_tool("why", {"node": "Lin Yuan", "field": "state.location"}))
        out["node"] = answer(await client.call_tool("get_node", {"node": "lin-yuan"}))
        out["brief"] = answer(await client.call_tool("brief", {"focus": ["lin-yuan"], "budget": 800}))
        node = await client.read_resource("narr://node/lin-yuan")
        brief = await client.read_resource("narr://brief")
        out["resource"] = (json.loads(node.contents[0].text), brief.contents[0].text)
        out["reset"] = answer(await client.call_tool("reset", {"rev": "HEAD~1"}))
        return out

    got = run(flat_world, script)
    narr = CLI(twin)
    assert got["status"] == cli_json(twin, "status")  # the same JSON, schema and all
    assert got["dry_log"] == cli_json(twin, "log")  # the dry run recorded nothing
    dry = got["dry"]
    assert dry["schema"] == "narr.event/3" and dry["commit"] is None
    assert dry["diffusions"] == cli_json(
        twin, "event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry",
        "--dry-run")["diffusions"]
    event = got["event"]
    expected = cli_json(twin, "event", "Lin Yuan walks to the ferry", "--set",
                        "lin-yuan.state.location=ferry")
    assert event["schema"] == expected["schema"] == "narr.event/3"
    assert event["diffusions"] == expected["diffusions"] and event["content"] == expected["content"]
    assert got["why"]["value"] == cli_json(twin, "why", "lin-yuan", "state.location")["value"] == "ferry"
    assert got["node"] == cli_json(twin, "get", "lin-yuan")
    assert got["resource"][0] == cli_json(twin, "get", "lin-yuan")["node"]
    commits = re.compile(r"\b[0-9a-f]{10}\b")
    assert commits.sub("*", got["resource"][1]) == commits.sub("*", narr("brief", "--format", "md").stdout)
    assert masked(got["brief"]) == masked(cli_json(twin, "brief", "--focus", "lin-yuan", "--budget", "800"))
    reset = got["reset"]
    assert reset["schema"] == "narr.reset/1"
    assert [e["content"] for e in reset["undone"]] == ["Lin Yuan walks to the ferry"]
    assert git(flat_world, "log", "--format=%s") == git(twin, "log", "--skip=1", "--format=%s")


def test_bad_calls_are_typed_errors_and_the_server_keeps_serving(flat_world: Path) -> None:
    from narrative.store.worldrepo import WorldRepo

    before = snapshot(flat_world)
    calls: list[tuple[str, dict[str, Any] | None]] = [
        ("no_such_tool", {}),
        ("get_node", {"node": "no-such-node"}),
        ("get_node", {}),
        ("event", {"content": "x", "ops": [{"op": "set", "target": "lin-yuan"}]}),
        ("event", {"content": "x", "dry_run": "false"}),
        ("event", {"content": "x", "colour": "red"}),
        ("event", {"content": "x" * 300_000}),
        ("search", {"q": "ring", "limit": "many"}),
        ("reset", {"rev": ["HEAD"]}),
        ("why", None),
    ]

    async def script(client: ClientSession) -> Any:
        errors = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, args)
            errors.append(json.loads(result.content[0].text))
        # a busy world: another writer holds the lock
        with WorldRepo.open(flat_world) as wr, wr.lock:
            busy = await client.call_tool("event", {"content": "Lin Yuan waits",
                                                    "ops": [{"op": "set", "target": "lin-yuan",
                                                             "field": "/state/mood", "value": "x"}]})
        errors.append(json.loads(busy.content[0].text))
        errors.append(answer(await client.call_tool("status", {})))  # still serving
        return errors

    errors = run(flat_world, script)
    kinds = [(e["type"], e.get("exit_code")) for e in errors[:-2]]
    assert kinds[0] == ("NotFoundError", 11) and "no tool 'no_such_tool'" in errors[0]["error"]
    assert kinds[1] == ("NotFoundError", 11)
    assert all(kind == ("InvalidInputError", 12) for kind in kinds[2:])
    named = ["/node", "/ops/0", "/dry_run", "/colour: unknown field", "/content", "/limit", "/rev", "/node"]
    for error, field in zip(errors[2:-2], named, strict=True):
        assert error["error"].startswith("the arguments: ") and field in error["error"], error
    assert errors[-2]["type"] in ("BusyError",), errors[-2]
    assert errors[-1]["schema"] == "narr.status/2"
    assert snapshot(flat_world) == before


def test_the_http_transport_wants_the_token_and_serves_the_tools(flat_world: Path) -> None:
    import subprocess
    import urllib.error
    import urllib.request

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "mcp", "--port", "0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert found, line
        url = found.group(0)
        token = (flat_world / ".git/narr/token").read_text("ascii").strip()
        request = urllib.request.Request(url, data=b"{}", method="POST",
                                         headers={"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        check_answer(json.loads(refused.value.read()))  # the keys of every other error
        refused.value.close()

        async def main() -> Any:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
                    streamable_http_client(url, http_client=http) as (read, write), \
                    ClientSession(read, write) as client:
                await client.initialize()
                return answer(await client.call_tool("status", {}))

        status = anyio.run(main)
        assert status == cli_json(flat_world, "status")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def _cancelled_midway(root: Path, env: dict[str, str], log: Path,
                      when: Callable[[], Awaitable[None]], *, lands: bool,
                      then: Callable[[], Awaitable[None]] | None = None) -> dict[str, Any]:
    """Call the event tool, cancel the call (the SDK sends the protocol's
    ``notifications/cancelled``) once ``when`` returns, then ask ``status`` (the session goes
    on); when the event ``lands``, ask ``log`` until it shows it (the SDK's client ends the
    server a moment after it hangs up)."""
    from test_disconnects import MOVE

    async def script(client: ClientSession) -> Any:
        async with anyio.create_task_group() as calls:
            async def call() -> None:
                await client.call_tool("event", {"content": MOVE, "diffuser": "exec"})
                raise AssertionError("a cancelled call was answered")

            calls.start_soon(call)
            await when()
            calls.cancel_scope.cancel()
        if then is not None:
            await then()
        status = answer(await client.call_tool("status", {}))
        with anyio.fail_after(60):
            while lands and answer(await client.call_tool("log", {"n": 1}))["items"][0][
                    "content"] != MOVE:
                await anyio.sleep(0.1)
        return status

    async def main() -> Any:
        async with session(root, env, log) as client:
            return await script(client)

    return anyio.run(main)  # type: ignore[no-any-return]


def test_a_write_cancelled_once_it_began_completes_whole_and_the_log_says_so(
        flat_world: Path, tmp_path: Path) -> None:
    """Cancelled while its diffuser runs under the world's lock: half an event is never an
    option, so it completes; no answer may go to a cancelled call, so the server's log names
    what was written, and the library sees it."""
    from test_disconnects import MOVE, slow_diffuser, wait_for

    import narrative as narr

    env, started = slow_diffuser(tmp_path)
    log = tmp_path / "server.log"
    before = git(flat_world, "rev-parse", "HEAD").strip()

    async def when() -> None:
        await anyio.to_thread.run_sync(wait_for, started)

    status = _cancelled_midway(flat_world, env, log, when, lands=True)
    assert status["schema"] == "narr.status/2"
    with narr.open_world(flat_world) as world:
        recorded = narr.log(world, limit=1)[0].to_json()
        assert recorded["content"] == MOVE and recorded["commit"] != before
        assert narr.get_value(world, "lin-yuan", "state.location") == "ferry"
        assert narr.check(world).ok
    text = log.read_text("utf-8")
    assert "event (request" in text and "was cancelled after it began; it completed" in text
    assert recorded["commit"] in text and recorded["id"] in text
    assert git(flat_world, "status", "--porcelain").strip() == ""


def test_a_write_cancelled_while_it_waits_for_the_world_writes_nothing(
        flat_world: Path, tmp_path: Path) -> None:
    """Cancelled while another writer holds the world's lock: the write is called off, not
    run once the lock comes free; nothing is written, nothing kept as a failed event."""
    from test_disconnects import slow_diffuser

    import narrative as narr
    from narrative.store.worldrepo import WorldRepo

    env, started = slow_diffuser(tmp_path)
    log = tmp_path / "server.log"
    before = snapshot(flat_world)
    holder = WorldRepo.open(flat_world)
    holder.lock.acquire()  # another writer, for longer than the cancel takes to arrive
    try:
        async def when() -> None:
            await anyio.sleep(2)

        async def then() -> None:  # the other writer is done: a write still waiting would run now
            await anyio.sleep(0.5)  # (the cancellation on its way to the server first)
            holder.lock.release()
            with anyio.move_on_after(3):
                while not started.exists():
                    await anyio.sleep(0.05)

        status = _cancelled_midway(flat_world, {**env, "NARR_LOCK_TIMEOUT": "60"}, log, when,
                                   lands=False, then=then)
    finally:
        holder.lock.release()
        holder.close()
    assert status["schema"] == "narr.status/2"
    assert not started.exists()  # the diffuser never ran
    assert "was cancelled while it waited for the world's lock; nothing was written" in log.read_text()
    assert snapshot(flat_world) == before
    with narr.open_world(flat_world) as world:
        assert narr.failed_events(world) == []


def test_a_write_cancelled_while_queued_behind_another_never_runs(flat_world: Path,
                                                                  tmp_path: Path) -> None:
    """Writes run one at a time: a second one cancelled while the first is under way is
    dropped from the queue; the first completes and is answered."""
    from test_disconnects import MOVE, slow_diffuser, wait_for

    import narrative as narr

    env, started = slow_diffuser(tmp_path)
    log = tmp_path / "server.log"
    before = git(flat_world, "rev-parse", "HEAD").strip()
    second = {"content": "Su Qing leaves", "ops": [
        {"op": "set", "target": "su-qing", "field": "/state/mood", "value": "gone"}]}

    async def script(client: ClientSession) -> Any:
        first: dict[str, Any] = {}

        async def call_first() -> None:
            first.update(answer(await client.call_tool("event", {"content": MOVE, "diffuser": "exec"})))

        async with anyio.create_task_group() as outer:
            outer.start_soon(call_first)
            await anyio.to_thread.run_sync(wait_for, started)
            async with anyio.create_task_group() as queued:
                async def call_second() -> None:
                    await client.call_tool("event", second)
                    raise AssertionError("a cancelled call was answered")

                queued.start_soon(call_second)
                await anyio.sleep(0.5)
                queued.cancel_scope.cancel()
        return first

    async def main() -> Any:
        async with session(flat_world, env, log) as client:
            return await script(client)

    first = anyio.run(main)
    assert first["content"] == MOVE and first["commit"]
    assert git(flat_world, "rev-parse", "HEAD~1").strip() == before  # one event, the first
    with narr.open_world(flat_world) as world:
        assert narr.log(world, limit=1)[0].to_json()["content"] == MOVE
        assert narr.get_value(world, "su-qing", "state.mood") != "gone"
        assert narr.failed_events(world) == []
    assert "event (request 3) was cancelled before it began; nothing was written" in log.read_text()
