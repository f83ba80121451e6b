#!/usr/bin/env python3
"""Hold narr's declared dependency floors true: install every floor at once and use narr with them.

A floor in ``pyproject.toml`` (``pygit2>=1.19.2``) is a promise that narr works with
that version, and pip keeps an older install that satisfies it rather than upgrade.
A floor nobody runs drifts: narr starts using a newer API and the promise breaks
for exactly the users who cannot upgrade. So CI makes a second environment with
every runtime dependency pinned to its floor, installs narr into it, and runs a
smoke session that touches each dependency the way a writer would (an event with
hand edits under CRLF line endings for pygit2's filters, ``graph`` for networkx,
``search`` for SQLite's FTS5 trigram tokenizer, ``import`` for PyYAML, an llm event
against a loopback server for tenacity, ``serve`` for uvicorn, starlette and
watchfiles...). A wrong floor fails the step.

    python tools/floors.py constraints            # name==floor, one a line
    python tools/floors.py check DIR              # venv in DIR at the floors, narr in it, the smoke run
    python tools/floors.py check DIR --pin pygit2==1.19.1   # one pin moved, even below its floor
    python tools/floors.py smoke                  # the smoke session with this interpreter's narr

It lives in ``tools/`` beside the other scripts that maintain the repository rather
than in ``benchmarks/`` (it measures nothing) or in the package (a user never runs it).
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.request
import venv
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*$")


# --- constraints ----------------------------------------------------------------------------------


def floors(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """Each runtime dependency's declared floor; a dependency without one is refused.

    Only the plain ``name>=X`` form is accepted: a cap, an extra or a marker would make
    "the floor" mean something this script cannot install in one environment.
    """
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = {}
    for requirement in project["dependencies"]:
        match = FLOOR.match(requirement)
        if match is None:
            raise SystemExit(f"{pyproject}: {requirement!r} is not of the form name>=VERSION")
        found[match[1].lower()] = match[2]
    return found


def constraints(pins: Sequence[str] = ()) -> str:
    """The pip constraints file: every floor pinned, ``pins`` (``name==version``) taking precedence."""
    pinned = floors()
    for pin in pins:
        name, sep, version = pin.partition("==")
        if not sep or name.lower() not in pinned:
            raise SystemExit(f"--pin {pin!r}: expected NAME==VERSION for a declared dependency")
        pinned[name.lower()] = version
    return "".join(f"{name}=={version}\n" for name, version in sorted(pinned.items()))


# --- the floor environment ------------------------------------------------------------------------


def check(where: Path, pins: Sequence[str] = ()) -> int:
    """Make a fresh venv at ``where`` with every floor, install narr from this checkout, run the smoke."""
    if where.exists():
        shutil.rmtree(where)
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    pins_file = where / "floors.txt"
    pins_file.write_text(constraints(pins), encoding="utf-8")
    started = time.monotonic()
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if pins:  # a pin below a declared floor: pip would refuse narr, so narr goes in without its deps
        subprocess.run([*pip, "-r", pins_file], check=True)
        subprocess.run([*pip, "--no-deps", str(ROOT)], check=True)
    else:
        subprocess.run([*pip, "-c", pins_file, str(ROOT)], check=True)
    installed = _installed(python)
    wrong = [f"{name} {installed.get(name)} (wanted {want})" for name, want in
             (line.split("==") for line in pins_file.read_text(encoding="utf-8").split())
             if _same(installed.get(name), want) is False]
    if wrong:  # a floor pip quietly moved would prove nothing
        print("floors: installed versions differ from the pins: " + ", ".join(wrong), file=sys.stderr)
        return 1
    print(f"floors: installed in {time.monotonic() - started:.0f}s: "
          + " ".join(f"{n}=={v}" for n, v in sorted(installed.items()) if n in floors()), flush=True)
    return subprocess.run([python, str(Path(__file__).resolve()), "smoke"], check=False).returncode


def _same(got: str | None, want: str) -> bool:
    """Whether two release numbers are equal as PEP 440 compares them (``1.15`` == ``1.15.0``)."""
    def parts(v: str) -> list[str]:
        p = v.split(".")
        while len(p) > 1 and p[-1] == "0":
            p.pop()
        return p
    return got is not None and parts(got) == parts(want)


def _installed(python: Path) -> dict[str, str]:
    out = subprocess.run([python, "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
                         check=True, capture_output=True, text=True).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


# --- the smoke session ----------------------------------------------------------------------------


class SmokeFailed(Exception):
    pass


class Narr:
    """``narr`` run as a user runs it: a subprocess of the installed package, output checked."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.env = env

    def __call__(self, *args: str, code: int = 0, stdin: str | None = None) -> str:
        proc = subprocess.run([sys.executable, "-m", "narrative", "--no-pager", *args], cwd=self.cwd,
                              env=self.env, input=stdin, capture_output=True, text=True, timeout=120,
                              check=False)
        if proc.returncode != code:
            raise SmokeFailed(f"narr {' '.join(args)}: exit {proc.returncode} (expected {code})\n"
                              f"--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}")
        return proc.stdout + proc.stderr if code else proc.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json"))


def _expect(what: str, ok: bool) -> None:
    if not ok:
        raise SmokeFailed(what)


@contextmanager
def _llm_server(ops: list[dict[str, Any]]) -> Iterator[str]:
    """A loopback server speaking chat completions that answers every request with ``ops``."""
    calls: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            calls.append(1)
            if len(calls) == 1:  # a rate limit first: tenacity's retry loop runs
                self.send_response(429)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            content = json.dumps({"ops": ops})
            body = json.dumps({"id": "x", "object": "chat.completion", "model": "smoke", "choices": [
                {"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def smoke(keep: Path | None = None) -> int:
    """Run the smoke session; print each step; 0 when every step did what it should."""
    base = Path(tempfile.mkdtemp(prefix="narr-smoke-")) if keep is None else keep
    base.mkdir(parents=True, exist_ok=True)
    home = base / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Smoke\n\temail = smoke@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "NARR_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), GIT_CONFIG_NOSYSTEM="1",
               NARR_LOCK_TIMEOUT="5", LC_ALL="C.UTF-8")
    started = time.monotonic()
    try:
        for step in _steps(base, env):
            print(f"  ok  {step}", flush=True)
    except SmokeFailed as exc:
        print(f"smoke: FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    import narrative  # the interpreter's narr, for the record

    print(f"smoke: passed in {time.monotonic() - started:.1f}s with narr {narrative.__version__} "
          f"from {Path(narrative.__file__).parent}")
    return 0


def _steps(base: Path, env: dict[str, str]) -> Iterator[str]:
    outside = Narr(base, env)
    out = outside("--version")
    _expect(f"--version printed {out!r}", out.startswith("narr "))
    yield "narr --version"

    outside("init", "w", "--sample")
    world = base / "w"
    narr = Narr(world, env)
    yield "init --sample"
    _expect("doctor says the world is healthy", narr.json("doctor")["ok"])
    yield "doctor"

    out = narr("event", "Lin Yuan walks to the ferry")
    _expect(f"the rules moved Lin Yuan: {out}", '"ferry"' in out)
    yield "event (rules)"

    # CRLF line endings: every write goes through git's filters (pygit2's filter lists)
    subprocess.run(["git", "config", "core.autocrlf", "true"], cwd=world, env=env, check=True)
    for path in (world / "world").rglob("*.json"):
        path.unlink()
    subprocess.run(["git", "checkout", "--", "world"], cwd=world, env=env, check=True)
    ring = next((world / "world").rglob("black-ring.json"))
    _expect("git checked out CRLF", b"\r\n" in ring.read_bytes())
    ring.write_bytes(ring.read_bytes().replace(b'"cold"', b'"warm"'))
    status = narr.json("status")
    _expect(f"status sees one hand edit: {status}", len(status["edits"]) == 1)
    record = narr.json("event", "苏晴怀疑林远", "--at", "Day 3, dusk")
    _expect(f"the hand edit was recorded: {record}", [e["target"] for e in record["edits"]] == ["black-ring"])
    porcelain = subprocess.run(["git", "status", "--porcelain"], cwd=world, env=env,
                               capture_output=True, text=True, check=True).stdout
    _expect(f"narr wrote what git would; git status says: {porcelain!r}", porcelain == "")
    yield "hand edit under CRLF, event, git status clean"
    _expect("the Chinese names were read with the shipped word table, writing no cache",
            not (Path(env["XDG_CACHE_HOME"])).exists())
    yield "no cache written (the word tables ship in the package)"

    narr("event", "The last boat leaves and the rain stops", "--close-scene")
    narr("new", "character", "白雪", "--alias", "Bai Xue")  # the id comes from pypinyin
    _expect("pypinyin made the id", (world / "world" / "character" / "bai-xue.json").is_file())
    out = narr("get", "Lin Yaun", code=11)  # a typo: rapidfuzz names the nearest
    _expect(f"a typo got a suggestion: {out}", "Lin Yuan" in out)
    yield "new (pypinyin), a typo's suggestion (rapidfuzz)"

    narr("reset", "HEAD~2")
    name = narr.json("chains")["items"][0]["name"]
    replayed = narr.json("replay", name, "--reuse")
    _expect(f"replay brought 2 events back: {replayed}", len(narr.json("log")["items"]) >= 4)
    narr("revert", "HEAD")
    _expect("check passes", narr.json("check")["ok"])
    yield "reset, chains, replay, revert, check"

    graph = json.loads(narr("graph", "world", "--format", "json"))
    _expect("the world graph has nodes and edges", len(graph["nodes"]) > 10 and len(graph["edges"]) > 10)
    _expect("graph --format dot is the world graph", narr("graph", "--format", "dot").startswith("digraph"))
    narr("graph", "events", "--format", "json")
    why = narr.json("why", "lin-yuan", "state.location")
    _expect(f"why names an event: {why}", bool(why))
    yield "graph world/events (networkx), why"

    found = narr.json("search", "ferry")
    _expect(f"search finds the ferry: {found}", any(h.get("id") == "ferry" for h in found["hits"]))
    found = narr.json("search", "苏晴怀疑")
    _expect(f"a Chinese search (trigram): {found}", found["mode"] == "ranked" and bool(found["hits"]))
    narr("brief")
    yield "search (FTS5 trigram), brief"

    notes = base / "notes"
    notes.mkdir()
    (notes / "Wu Tong.md").write_text("---\nlayer: character\naliases: [Tong]\n---\nA ferryman's son.\n",
                                      encoding="utf-8")
    narr("import", str(notes))
    _expect("import read the front matter (PyYAML)",
            narr.json("get", "wu-tong")["node"]["aliases"] == ["Tong"])
    yield "import of a notes folder (PyYAML)"

    ops = [{"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "wary"}]
    with _llm_server(ops) as url:
        llm_env = {**env, "NARR_LLM_BASE_URL": url, "NARR_LLM_MODEL": "smoke", "NARR_LLM_TIMEOUT": "20"}
        Narr(world, llm_env)("event", "Lin Yuan grows wary", "--diffuser", "llm")
    _expect("the llm's change landed", narr.json("get", "lin-yuan")["node"]["state"]["mood"] == "wary")
    yield "llm event through a rate limit (tenacity)"

    narr("serve", "--detach", "--port", "0")
    try:
        status = narr.json("serve", "--status")
        port = status.get("port")
        _expect(f"the server listens on a port: {status}", bool(port))
        ring.write_bytes(ring.read_bytes().replace(b'"warm"', b'"hot"'))
        time.sleep(0.5)
        seen = narr.json("status")  # through the server, its watcher (watchfiles) noting the edit
        _expect(f"the server saw the hand edit: {seen}", len(seen["edits"]) == 1)
        token = (world / ".git" / "narr" / "token").read_text(encoding="utf-8").strip()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                         headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as resp:  # starlette under uvicorn
            answer = json.loads(resp.read())
        _expect(f"the HTTP API answered: {answer}", "edits" in answer)
    finally:
        narr("serve", "--stop")
    yield "serve --detach --port 0: status through the server, HTTP API"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("constraints", help="print the floors as pip constraints")
    run = sub.add_parser("check", help="a venv at the floors, narr installed, the smoke session")
    run.add_argument("where", type=Path)
    run.add_argument("--pin", action="append", default=[], metavar="NAME==VERSION")
    sm = sub.add_parser("smoke", help="the smoke session with this interpreter's narr")
    sm.add_argument("--keep", type=Path, help="run in this directory and leave it")
    args = parser.parse_args(argv)
    if args.command == "constraints":
        sys.stdout.write(constraints())
        return 0
    if args.command == "check":
        return check(args.where, args.pin)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return smoke(args.keep)


if __name__ == "__main__":
    sys.exit(main())
