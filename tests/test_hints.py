"""Hints name operations, as data, and each door words them: the command line a command, MCP a
tool, HTTP a route. An MCP client is never told of a command it cannot run."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import click
from helpers import CLI, HTTP, git

from narrative.errors import NotFoundError, Step
from narrative.operations import OPERATIONS

PACKAGE = Path(__file__).resolve().parent.parent / "narrative"

STILL_NAMING_COMMANDS = {
    "engine/bible.py": ["init", "init"], "engine/branches.py": ["pull"],
    "engine/chapter.py": ["init"],
    "engine/chapters.py": ["log"], "engine/event.py": ["event", "init"],
    "engine/init.py": ["init"], "engine/log.py": ["log", "log"], "engine/merge.py": ["pull"],
    "engine/naming.py": ["edit"], "engine/nodes.py": ["path"], "engine/proposing.py": ["init"],
    "engine/remote.py": ["push", "push", "push"], "engine/scenes.py": ["chapter"],
    "store/create.py": ["init", "init", "init"], "store/environment.py": ["doctor"],
    "store/outfiles.py": ["import"], "store/remote.py": ["pull", "push", "push"],
    "store/worldrepo.py": ["init", "init"],
}
"""Hints of the engine and the store that still name a command in their words: commands with no
row (init, push, pull, doctor, import, path, log --chapters), the command line's own spellings
(log --node, an event retyped with its flags) and the editor (narr edit, whose row MCP does not
offer). This list only shrinks."""


def _calls(name: str) -> list[tuple[Path, ast.Call]]:
    """Calls of ``name`` in the modules that import it from narrative.errors."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        if not any(isinstance(node, ast.ImportFrom) and node.module == "narrative.errors"
                   and any(a.name == name for a in node.names) for node in ast.walk(tree)):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                found.append((path, node))
    return found


def test_every_step_names_a_row_of_the_table() -> None:
    rows = {row.name for row in OPERATIONS}
    steps = _calls("Step")
    assert len(steps) > 30
    for path, call in steps:
        first = call.args[0]
        assert isinstance(first, ast.Constant), f"{path}:{call.lineno}: a step names its row"
        assert first.value in rows, f"{path}:{call.lineno}: no row {first.value!r}"


def test_the_engines_hints_name_no_command_but_those_known() -> None:
    from narrative.cli import main

    commands = set(main.list_commands(click.Context(main)))
    named: dict[str, list[str]] = {}
    for package in ("engine", "delta", "diffusers", "store"):
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                for keyword in node.keywords:
                    if keyword.arg != "hint":
                        continue
                    text = " ".join(c.value for c in ast.walk(keyword.value)
                                    if isinstance(c, ast.Constant) and isinstance(c.value, str))
                    words = [w for w in re.findall(r"\bnarr ([a-z][a-z-]*)", text) if w in commands]
                    if words:
                        named.setdefault(str(path.relative_to(PACKAGE)), []).extend(words)
    assert {k: Counter(v) for k, v in named.items()} == {
        k: Counter(v) for k, v in STILL_NAMING_COMMANDS.items()}


def test_a_step_is_worded_by_each_door() -> None:
    error = NotFoundError("no node 'x' in the world", hint="{0} lists the nodes",
                          steps=[Step("list_nodes")])
    error.add_hint("{0} tells its story", Step("history", {"node": "lin-yuan"}))
    assert error.hint == "narr nodes lists the nodes; narr history lin-yuan tells its story"
    assert error.hint_for("mcp") == ('the list_nodes tool lists the nodes; the history tool with '
                                     '{"node": "lin-yuan"} tells its story')
    assert error.hint_for("http") == ("GET /api/nodes lists the nodes; GET /api/history/lin-yuan "
                                      "tells its story")
    assert error.to_json("mcp")["hint"] == error.hint_for("mcp")
    retry = Step("retry", {"which": "2", "dry_run": True})
    assert (retry.worded("cli"), retry.worded("http")) == (
        "narr failed retry 2 --dry-run", 'POST /api/failed/retry with {"which": "2", "dry_run": true}')


def test_an_mcp_client_is_told_tools_and_an_http_client_routes(flat_world: Path) -> None:
    """The hints of a kept failed event, a node no one has, a stopped merge and a detached HEAD,
    through MCP and HTTP, name the door's own operations and no ``narr`` command."""
    from narrative.serve.mcp import WorldTools

    narr = CLI(flat_world)
    narr("switch", "-c", "alt")
    narr("event", "x", "--set", "lin-yuan.state.mood=a", "--diffuser", "none")
    narr("switch", "main")
    narr("event", "y", "--set", "lin-yuan.state.mood=b", "--diffuser", "none")
    calls = [("event", {"content": "x", "set": ["nobody.state.mood=1"], "diffuser": "explicit"},
              "the retry tool"),
             ("get_node", {"node": "nobody"}, "the list_nodes tool"),
             ("merge", {"branch": "alt"}, "the continue_merge tool"),
             ("event", {"content": "z", "diffuser": "explicit"}, "the conflicts tool")]
    tools = WorldTools(flat_world)
    try:
        for name, arguments, told in calls:
            result = tools.call(name, arguments)
            assert result.is_error
            hint = (result.structured_content or {})["hint"]
            assert told in hint and "narr " not in hint, (name, hint)
        tools.call("abort_merge", {})
    finally:
        tools.close()
    git(flat_world, "checkout", "--quiet", "--detach")
    http = HTTP(flat_world)
    answer = http.post("/api/events", json={"content": "z", "diffuser": "explicit"})
    hint = answer.json()["hint"]
    assert "POST /api/switch" in hint and "GET /api/branches" in hint and "narr " not in hint, hint
    assert "narr switch BRANCH (narr branch lists them)" in narr("event", "z", expect=12).stderr


def test_what_an_answer_advises_is_worded_by_the_door_that_sends_it(flat_world: Path) -> None:
    """A held-back change's command and a status warning's fix (a plain git commit to adopt)
    name a command on the command line, a tool over MCP and a route over HTTP."""
    from narrative.serve.mcp import WorldTools

    narr = CLI(flat_world)
    words = "Su Qing gives Old Zhou the jade token"
    [held] = narr.json("event", words, "--dry-run")["proposal"]["held"]
    assert held["command"] == f"narr event --accept 1 '{words}'"
    tools = WorldTools(flat_world)
    try:
        dry = tools.call("event", {"content": words, "dry_run": True}).structured_content or {}
        [held] = dry["proposal"]["held"]
        assert held["command"] == f'the event tool with {{"content": "{words}", "accept": [1]}}'
        assert held["apply"] == {"operation": "event",
                                 "arguments": {"content": words, "accept": [1]}}
        node = flat_world / "world/character/lin-yuan.json"
        node.write_text(node.read_text("utf-8").replace('"state": {', '"state": {"hum": 1, ', 1),
                        "utf-8")
        git(flat_world, "commit", "--quiet", "-am", "a plain commit")
        [mcp_warning] = (tools.call("status", {}).structured_content or {})["warnings"]
    finally:
        tools.close()
    [cli_warning] = narr.json("status")["warnings"]
    assert "narr adopt" in cli_warning
    assert f"narr: warning: {cli_warning}" in narr("status").stderr.splitlines()
    assert mcp_warning == cli_warning.replace("narr adopt", "the adopt tool")
    [http_warning] = HTTP(flat_world).get("/api/status").json()["warnings"]
    assert http_warning == cli_warning.replace("narr adopt", "POST /api/adopt")
