"""Docs the tests keep honest: every command explains itself, and data comes as JSON too."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import CLI

from narrative.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# Commands whose output is not data a program would parse, and why.
NO_JSON = {
    "edit": "opens an editor on the node's file",
    "completion": "prints a shell script",
    "schema": "prints a JSON Schema: JSON already",
    "mcp": "speaks the Model Context Protocol (JSON-RPC) on stdin and stdout",
    "export": "a group: each of its subcommands prints the data and takes --json",
}


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name in sorted(group.commands):
        cmd = group.commands[name]
        yield (*path, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))


def command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


ALL = [pytest.param(p, id=" ".join(p)) for p in commands()]


def test_there_are_commands() -> None:
    names = {p[0] for p in commands()}
    assert {"init", "event", "status", "log", "show", "get", "nodes", "path", "edit", "check"} <= names


@pytest.mark.parametrize("path", ALL)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], prog_name="narr", catch_exceptions=False)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Usage: narr {' '.join(path)} ")
    first = lines[2].strip()  # the help text's first line, after the usage and a blank line
    assert first and first[0].isupper(), f"narr {' '.join(path)} has no help text"
    cmd = command(path)
    assert cmd.get_short_help_str(200) and cmd.get_short_help_str(200)[0] == first[0]
    for param in cmd.params:
        if isinstance(param, click.Option):
            assert param.help, f"narr {' '.join(path)} {param.opts[0]} has no help text"


@pytest.mark.parametrize("path", [pytest.param((), id="narr"), *ALL])
def test_every_command_shows_an_example(path: tuple[str, ...]) -> None:
    """Each --help ends its description with "Example:" or "Examples:" and lines that run
    the command itself (not some other one), indented under it."""
    result = CliRunner().invoke(main, [*path, "--help"], prog_name="narr", catch_exceptions=False)
    block = re.search(r"^  Examples?:\n((?:    \S.*\n)+)", result.stdout, flags=re.MULTILINE)
    assert block is not None, f"narr {' '.join(path)} --help shows no example"
    examples = [line.strip() for line in block.group(1).splitlines()]
    command_line = " ".join(("narr", *path))
    assert all(f"{command_line} " in f"{e} " for e in examples), examples


def test_main_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"], prog_name="narr", catch_exceptions=False)
    assert result.exit_code == 0
    section = result.stdout.split("\nCommands:\n", 1)[1]
    listed = set(re.findall(r"^  (\w+)\s", section, flags=re.MULTILINE))
    assert listed == set(main.commands)


def _json_param(path: tuple[str, ...]) -> object:
    return pytest.param(path, id=" ".join(path))


@pytest.mark.parametrize("path", [_json_param(p) for p in commands() if p[-1] not in NO_JSON])
def test_every_command_that_prints_data_has_json(path: tuple[str, ...]) -> None:
    cmd = command(path)
    assert any("--json" in p.opts for p in cmd.params), f"narr {' '.join(path)} has no --json"


def test_every_command_is_in_the_manual_overview() -> None:
    """The hand-written table of docs/commands.md names every command (the generated reference
    has them all by construction; this is the page a reader scans first)."""
    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    missing = [name for name in main.commands if f"narr {name}" not in text]
    assert missing == []


@pytest.mark.parametrize("layout", ["flat"])
def test_json_output_is_json(narr: CLI, world: Path, tmp_path: Path) -> None:
    """--json is real: each data command's output parses, names its shape and version, and
    carries the fields the text shows; a list comes as the answer's items."""
    rec = narr.json("event", "A beat", "--set", "lin-yuan.state.mood=calm")
    assert rec["schema"] == "narr.event/3"
    assert rec["content"] == "A beat" and rec["commit"]
    assert narr.json("show")["id"] == rec["id"]
    log = narr.json("log")
    assert log["schema"] == "narr.log/2" and set(log) == {"schema", "items"}
    assert log["items"][0]["id"] == rec["id"]
    assert narr.json("get", "lin-yuan", "state.mood") == {
        "schema": "narr.get_value/1", "node": "lin-yuan", "field": "state.mood", "value": "calm"}
    got = narr.json("get", "lin-yuan")
    assert got["schema"] == "narr.get_node/1" and got["node"]["id"] == "lin-yuan"
    assert got["path"] == narr("path", "lin-yuan").stdout.strip()
    nodes = narr.json("nodes", "--layer", "character")
    assert nodes["schema"] == "narr.list_nodes/2"
    assert {n["id"] for n in nodes["items"]} >= {"lin-yuan", "su-qing"}
    assert narr.json("path", "lin-yuan") == {"schema": "narr.path/1", "id": "lin-yuan",
                                             "path": narr("path", "lin-yuan").stdout.strip()}
    assert narr.json("status")["edits"] == []
    assert narr.json("check")["ok"] is True
    named = {"branch": "narr.branches/2", "chains": "narr.chains/2", "reflog": "narr.reflog/1",
             "edits": "narr.edits/1", "failed": "narr.failed/2", "status": "narr.status/2",
             "check": "narr.check/1", "threads": "narr.threads/1", "brief": "narr.brief/2",
             "graph": "narr.graph_sizes/1"}
    for name, schema in named.items():
        assert narr.json(name)["schema"] == schema, name
    new = tmp_path / "another"
    made = CLI(tmp_path).json("init", str(new))
    assert made["schema"] == "narr.init/1"
    assert made["root"] == str(new.resolve()) and made["nodes"] == 0


def test_every_answer_name_has_a_version() -> None:
    """The CLI's answers and the operations' share one table of names and versions."""
    from narrative.answers import VERSIONS, schema
    from narrative.api import OPERATIONS

    assert {op.schema for op in OPERATIONS} <= {schema(n) for n in VERSIONS}
    assert all(isinstance(v, int) and v >= 1 for v in VERSIONS.values())


@pytest.mark.parametrize("layout", ["flat"])
def test_errors_as_json(narr: CLI, world: Path) -> None:
    result = narr("get", "nobody", "--json", expect=11)
    assert result.stdout == ""
    err = json.loads(result.stderr)
    assert err == {"schema": "narr.error/1", "error": "no node 'nobody' in the world",
                   "type": "NotFoundError", "exit_code": 11, "details": [],
                   "hint": "narr nodes lists the nodes"}


def test_the_manual_library_example_runs(flat_world: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / "library.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    assert "from narrative." not in code.group(1)  # the supported surface only: narrative.api
    monkeypatch.chdir(flat_world.parent)
    (flat_world.parent / "my-world").symlink_to(flat_world)
    exec(compile(code.group(1), "docs/library.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == ["ferry", "qingyun-gate"]
    assert out[3].startswith("[") and "Genesis" in out[3]
    assert out[4] == "[] True"


def test_the_lazy_command_table_names_every_command_and_its_module() -> None:
    import importlib
    import pkgutil

    import narrative.cli
    from narrative.cli import COMMAND_MODULES

    found = {}
    for info in pkgutil.iter_modules(narrative.cli.__path__):
        module = importlib.import_module(f"narrative.cli.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            found[command.name] = info.name
    assert found == COMMAND_MODULES
    assert sorted(main.commands) == sorted(found)
