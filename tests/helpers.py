"""Helpers for the tests: the CLI runner, the HTTP app called in-process, snapshots of a world,
real git as the referee."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result


@dataclass
class CLI:
    """The real ``narr`` command, in-process through click's runner."""

    root: Path

    def __call__(self, *args: str, input: str | None = None, expect: int = 0) -> Result:
        from narrative.cli import main

        runner = CliRunner()
        result = runner.invoke(main, ["-C", str(self.root), *args], input=input,
                               catch_exceptions=False)
        assert result.exit_code == expect, (
            f"narr {' '.join(args)} exited {result.exit_code}, expected {expect}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
        return result

    def json(self, *args: str, input: str | None = None, expect: int = 0) -> Any:
        """The answer of ``narr ARGS --json`` (or its error, on stderr), checked against its
        published schema if it has one."""
        result = self(*args, "--json", input=input, expect=expect)
        answer = json.loads(result.stdout or result.stderr)
        check_answer(answer)
        return answer



TOKEN = "t0ken"
"""The world's token the in-process HTTP app is made with."""


class InlineWriter:
    """What the HTTP app needs of a server: the world, and a way to run a write (here, at once)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def submit(self, work: Any) -> Any:
        return work()


class Answer:
    """An HTTP answer: its status and body."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status_code = status
        self.text = body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.text)


class HTTP:
    """The HTTP API's app in-process, called as an HTTP server would hand it a request (ASGI),
    over ``server`` (default: an :class:`InlineWriter` of ``root``); requests carry ``bearer``
    (default: the app's own token)."""

    def __init__(self, root: Path, *, server: Any = None, token: str = TOKEN,
                 bearer: str | None = None) -> None:
        from narrative.serve.http import make_app

        self.app = make_app(server if server is not None else InlineWriter(root), token)
        self.bearer = token if bearer is None else bearer

    def get(self, path: str) -> Answer:
        import asyncio

        return asyncio.run(self.request("GET", path))

    def post(self, path: str, json: Any = None, content: bytes | None = None) -> Answer:
        import asyncio
        import json as _json

        return asyncio.run(self.request("POST", path, content if content is not None
                                        else _json.dumps(json).encode()))

    def put(self, path: str, content: bytes) -> Answer:
        import asyncio

        return asyncio.run(self.request("PUT", path, content))

    async def request(self, method: str, path: str, body: bytes | list[bytes] = b"") -> Answer:
        """One request; ``body`` a list of pieces arrives piece by piece, without a
        Content-Type (the app reads what comes)."""
        import asyncio
        from urllib.parse import unquote, urlsplit

        url = urlsplit(path)
        pieces = list(body) if isinstance(body, list) else [body]
        headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {self.bearer}".encode())]
        if not isinstance(body, list):
            headers.append((b"content-type", b"application/json"))
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": unquote(url.path),
                 "raw_path": url.path.encode(), "query_string": url.query.encode(), "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if pieces:
                return {"type": "http.request", "body": pieces.pop(0), "more_body": bool(pieces)}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return Answer(status, b"".join(chunks))

ANSWER_SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "answers"
_validators: dict[str, Any] = {}


def check_answer(answer: Any) -> None:
    """An operation's answer is valid against ``schemas/answers/NAME.schema.json``: every key it
    has is named there, with its type (some answers only the CLI gives have no schema yet)."""
    import jsonschema

    schema = answer.get("schema") if isinstance(answer, dict) else None
    assert isinstance(schema, str) and schema.startswith("narr."), f"an answer without its schema: {answer}"
    name = schema.removeprefix("narr.").partition("/")[0]
    path = ANSWER_SCHEMAS / f"{name}.schema.json"
    if not path.is_file():
        return
    if schema not in _validators:
        document = json.loads(path.read_text("utf-8"))
        assert document["title"] == schema, f"{path.name} is not {schema}"
        _validators[schema] = jsonschema.Draft202012Validator(document)
    errors = sorted(_validators[schema].iter_errors(answer), key=lambda e: list(e.path))
    assert not errors, f"{schema}: " + "; ".join(
        f"/{'/'.join(map(str, e.path))}: {e.message[:300]}" for e in errors)



def server_not_running(*, stopped: bool = False, pid: int | None = None,
                       off: str | None = None) -> dict[str, Any]:
    """``narr serve --status --json`` (or ``--stop``) when no server runs: every key there, null;
    ``autostart_off`` why none starts by itself (by default: NARR_NO_SERVER, CI, or none)."""
    if off is None:
        off = ("NARR_NO_SERVER is set" if os.environ.get("NARR_NO_SERVER") else
               "CI is set" if os.environ.get("CI", "").strip().lower() not in
               ("", "0", "false", "no", "off") else None)
    return {"schema": "narr.server/3", "running": False, "stopped": stopped, **dict.fromkeys((
        "state", "process", "version", "socket", "root", "git_dir", "port", "host", "started",
        "auto", "started_by", "idle_minutes", "memory_mib", "requests", "active", "idle_s",
        "exits_at", "watcher", "current", "autostart")), "pid": pid, "autostart_off": off}


def snapshot(root: Path) -> dict[str, str]:
    """Everything a command could change: refs, reflogs, index and every working-tree file."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            continue
        if rel.startswith(".git/objects/") or rel.startswith(".git/narr/"):
            continue  # unreachable objects and narr's caches may be written; history may not
        if rel == ".git/index":
            out[rel] = _index_entries(path)  # refreshed stat data is no change; entries are
            continue
        out[rel] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def _index_entries(path: Path) -> str:
    """The index as git sees its content: every entry's path, mode and blob."""
    import pygit2

    index = pygit2.Index(str(path))
    rows = sorted(f"{e.path} {e.mode:o} {e.id}" for e in index)
    return hashlib.sha1("\n".join(rows).encode()).hexdigest()


def git(root: Path, *args: str) -> str:
    """Real git, as the referee."""
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return proc.stdout


def narr_subprocess(root: Path, *args: str, input: str | None = None,
                    env: dict[str, str] | None = None,
                    check: bool = False) -> subprocess.CompletedProcess[str]:
    """The installed CLI as a separate process (``python -m narrative``)."""
    return subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), *args],
                          cwd=root, capture_output=True, text=True, input=input,
                          env={**os.environ, **(env or {})}, check=check)


def write_node(root: Path, rel: str, node: dict[str, Any]) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(node, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def node_file(root: Path, node_id: str) -> Path:
    from narrative.engine.nodes import locate
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(root)
    try:
        return root / locate(wr, node_id)
    finally:
        wr.close()


def new_world(tmp_path: Path, name: str = "w") -> CLI:
    """``narr init`` of an empty world ``tmp_path/name``, and the CLI in it."""
    CLI(tmp_path)("init", str(tmp_path / name))
    return CLI(tmp_path / name)


def world_nodes(root: Path) -> dict[str, dict[str, Any]]:
    """Every node of the world at ``root`` as the library reads it (hand edits included)."""
    import narrative as narr_lib
    from narrative.engine.nodes import get_node

    wr = narr_lib.open_world(root)
    try:  # the node files' whole JSON, defaults included (an answer leaves defaults out)
        return {n["id"]: dict(get_node(wr, n["id"])[1]) for n in narr_lib.list_nodes(wr)}
    finally:
        wr.close()


def read_node(root: Path, node_id: str) -> dict[str, Any]:
    return json.loads(node_file(root, node_id).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def edit_node(root: Path, node_id: str, **changes: Any) -> None:
    """A hand edit: load the file, change ``state`` keys (or top-level keys), write it back."""
    path = node_file(root, node_id)
    node = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key in node and key not in ("state",):
            node[key] = value
        else:
            node["state"][key] = value
    path.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def rel_path(root: Path, node_id: str, layer: str) -> str:
    """Where a node's file lives in this world's layout, whether or not it exists."""
    from narrative.ids import node_path
    from narrative.store.worldrepo import load_config

    return node_path(node_id, layer, load_config(root).layout)  # type: ignore[arg-type]


def kept_events(root: Path) -> list[Any]:
    """The failed events a world keeps for ``narr failed`` / ``--retry``, oldest first."""
    from narrative.engine import failed
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(root)
    try:
        return failed.load_all(wr)
    finally:
        wr.close()


def check_out_again(root: Path) -> None:
    """Every node file checked out afresh by plain git, by the settings git has now."""
    for path in (root / "world").rglob("*.json"):
        path.unlink()
    git(root, "checkout", "--", "world")


def include_from_home(root: Path, name: str) -> Path:
    """``.git/config`` includes ``lines.gitconfig`` beside it (a relative path), which
    includes ``~/NAME`` under a condition every repository meets; that last file is not
    there yet. Returns where it goes."""
    git(root, "config", "include.path", "lines.gitconfig")
    (root / ".git" / "lines.gitconfig").write_text(
        f'[includeIf "gitdir:/"]  # every repository\n\tpath = "~/{name}"\n')
    return Path.home() / name
