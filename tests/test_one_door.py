"""Every row of the operations table is one use case with one set of arguments: the command line
takes the row's arguments as its options, and the library, the HTTP API, the MCP tools and the
CLI's ``--json`` give the same answer to the same arguments, for every row (not a sample)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import click
import pytest
from helpers import CLI, HTTP, git
from test_http_api import masked

from narrative.operations import OPERATIONS, Operation

NOT_ON_THE_COMMAND_LINE: dict[str, dict[str, str]] = {
    "event": {"ops": "--delta FILE and --create FILE spell them"},
    "log": {"n": "the old spelling of limit", "cursor": "the command line reads a page with -n"},
    "audit": {"text": "the command line reads it from FILE"},
    "chapter": {"text": "the command line reads it from FILE",
                "added": "--set, --unset, --relate and --unrelate S:... spell them",
                "diffuser": "--diffuser, its option named diffuser_name"},
    "edit_node": {"node": "NODE, as the editor's", "file": "the editor writes it"},
    "chapters": {"cursor": "the command line reads a page with -n"},
}
"""Arguments of a row the command that runs it spells another way, and how."""


def command(row: Operation[Any]) -> click.Command:
    from narrative.cli import main

    ctx = click.Context(main)
    found: click.Command = main
    for word in row.cli.split():
        if not word.startswith("-"):
            assert isinstance(found, click.Group), row.cli
            sub = found.get_command(ctx, word)
            assert sub is not None, f"{row.name}: no command narr {row.cli}"
            found = sub
    return found


def test_every_rows_arguments_are_its_commands_options() -> None:
    """Each argument of a row is an option (or argument) of the same name of the command that
    runs it, and the command has no option that no row of it takes, but its own spellings."""
    by_command: dict[str, set[str]] = {}
    for row in OPERATIONS:
        by_command.setdefault(command(row).name or "", set()).update(row.params.model_fields,
                                                                     row.cli_only)
    for row in OPERATIONS:
        options = {p.name.rstrip("_") for p in command(row).params if p.name} - {"as_json",
                                                                                 "no_pager"}
        missing = set(row.params.model_fields) - options - set(NOT_ON_THE_COMMAND_LINE.get(row.name, {}))
        assert not missing, f"narr {row.cli} lacks {sorted(missing)} of the {row.name} row"
        spare = options - by_command[command(row).name or ""]
        assert not spare, f"narr {row.cli} has {sorted(spare)}, which no row takes"


def _commit_plain(root: Path) -> None:
    node = root / "world/character/lin-yuan.json"
    node.write_text(node.read_text("utf-8").replace('"state": {', '"state": {"hum": 1, ', 1), "utf-8")
    git(root, "commit", "--quiet", "-am", "a plain commit")


def _failed(narr: CLI) -> None:
    narr("event", "x", "--set", "nobody-here.state.mood=1", "--diffuser", "none", expect=12)


def _failed_then_mended(narr: CLI) -> None:
    _failed(narr)
    narr("new", "character", "Nobody Here")


def _set_aside(narr: CLI) -> None:
    narr("event", "Dusk", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    node = narr.root / "world/character/lin-yuan.json"
    node.write_text(node.read_text("utf-8").replace('"state": {', '"state": {"hum": 1, ', 1), "utf-8")
    narr("reset", "HEAD~1")


def _conflict(narr: CLI) -> None:
    narr("switch", "-c", "alt")
    narr("event", "x", "--set", "lin-yuan.state.mood=a", "--diffuser", "none")
    narr("switch", "main")
    narr("event", "y", "--set", "lin-yuan.state.mood=b", "--diffuser", "none")
    narr("merge", "alt", expect=14)


def _ahead(narr: CLI) -> None:
    narr("branch", "alt")
    narr("switch", "alt")
    narr("event", "Rain", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    narr("switch", "main")


def _abandoned(narr: CLI) -> None:
    narr("event", "Rain", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    narr("reset", "HEAD~1")


def _resolved(narr: CLI) -> None:
    _conflict(narr)
    narr("resolve", "lin-yuan", "state.mood", "--theirs")


def _chapter(narr: CLI) -> None:
    chapter = narr.root.parent / "told.md"
    chapter.write_text("# Chapter 1\n\nLin Yuan walks to the gate. Su Qing smiles.\n", "utf-8")
    narr("chapter", str(chapter), "--accept", "all")


def _behind_its_remote(narr: CLI) -> None:
    """The story line one event behind the remote it follows (a bare repository beside it)."""
    remote = narr.root.parent / "shared.git"
    git(narr.root.parent, "init", "--quiet", "--bare", str(remote))
    git(narr.root, "remote", "add", "origin", str(remote))
    narr("event", "Rain", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    narr("push")
    narr("reset", "HEAD~1")


def _a_remote_of_its_own(copy: Path) -> None:
    """Each door's copy pushes to a remote of its own, so each finds it empty."""
    remote = copy.parent / f"{copy.name}-remote.git"
    git(copy.parent, "init", "--quiet", "--bare", str(remote))
    git(copy, "remote", "add", "origin", str(remote))


AFTER_COPY: dict[str, Any] = {"push": _a_remote_of_its_own}
"""What each door's copy of the world needs of its own for a row."""

CHOOSING = {"chapters": ["--chapters"]}
"""Options that pick the row among those its command runs (and are no argument of it)."""


CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "status": (None, {}),
    "list_nodes": (None, {"layer": "character", "limit": 2, "cursor": "1"}),
    "get_node": (None, {"node": "lin-yuan"}),
    "log": (None, {"limit": 2}),
    "show": (None, {"rev": "HEAD"}),
    "why": (None, {"node": "lin-yuan", "field": "state.mood"}),
    "history": (None, {"node": "lin-yuan"}),
    "search": (None, {"q": "ring"}),
    "brief": (None, {"goal": "the ferry", "pov": "su-qing"}),
    "threads": (None, {"all": True}),
    "audit": (None, {"text": "Lin Yuan walks to the gate. Su Qing smiles."}),
    "chapter": (None, {"text": "Lin Yuan walks to the gate. Su Qing smiles.", "dry_run": True}),
    "event": (None, {"content": "Dusk falls", "set": ["lin-yuan.state.mood=wary"],
                     "diffuser": "rules", "story_time": "Day 2"}),
    "failed": (_failed, {"limit": 1}),
    "retry": (_failed_then_mended, {"which": "1"}),
    "drop_failed": (_failed, {"which": "1"}),
    "chains": (_abandoned, {}),
    "reset": (None, {"rev": "HEAD~1"}),
    "revert": (None, {"rev": "HEAD", "content": "Undone"}),
    "replay": (_abandoned, {"chain": "1", "reuse": True}),
    "drop_chain": (_abandoned, {"which": "1", "force": True}),
    "branches": (_ahead, {"limit": 1}),
    "remote_branches": (None, {}),
    "create_branch": (None, {"name": "alt", "rev": "HEAD"}),
    "delete_branch": (_ahead, {"name": "alt"}),
    "switch": (_ahead, {"name": "alt"}),
    "merge": (_ahead, {"branch": "alt"}),
    "continue_merge": (_resolved, {}),
    "abort_merge": (_conflict, {}),
    "conflicts": (_conflict, {}),
    "resolve": (_conflict, {"node": "lin-yuan", "field": "state.mood", "take": "theirs"}),
    "edit_node": (None, {"node": "old-zhou", "file": None}),
    "new_node": (None, {"layer": "character", "name": "Mo Li", "aliases": ["Mo"]}),
    "edits": (_set_aside, {}),
    "restore_edits": (_set_aside, {"which": "1"}),
    "drop_edits": (_set_aside, {"which": "1"}),
    "reflog": (None, {"limit": 3}),
    "check": (None, {"full": True}),
    "adopt": (lambda narr: _commit_plain(narr.root), {}),
    "gc": (None, {}),
    "get_value": (None, {"node": "lin-yuan", "field": "state.mood", "at": "HEAD"}),
    "path": (None, {"node": "mo-li", "layer": "character"}),
    "chapters": (_chapter, {"limit": 1}),
    "story": (None, {"start": "HEAD~1", "end": "HEAD"}),
    "world_graph": (None, {"format": "json", "around": "lin-yuan", "depth": 1}),
    "event_graph": (None, {"format": "mermaid"}),
    "graph_sizes": (None, {}),
    "connect": (None, {"source": "lin-yuan", "target": "su-qing"}),
    "doctor": (None, {"llm_timeout": 5.0}),
    "init": (None, {"directory": "fresh", "layout": "sharded", "rules": "en"}),
    "clone": (None, {"url": "", "directory": "copy"}),
    "push": (None, {}),
    "pull": (_behind_its_remote, {}),
}


def test_every_row_has_a_case() -> None:
    assert set(CASES) == {row.name for row in OPERATIONS}


def cli_args(row: Operation[Any], arguments: dict[str, Any], root: Path) -> list[str]:
    """The command line of ``row`` with ``arguments``, each given as the option of its name."""
    cmd = command(row)
    words = row.cli.split()
    positional: list[str] = []
    options: list[str] = []
    for name, value in arguments.items():
        if row.name == "resolve" and name == "take":
            options.append(f"--{value}")
            continue
        if row.name in ("audit", "chapter") and name == "text":
            chapter = root.parent / f"{root.name}-chapter.md"
            chapter.write_text(value, "utf-8")
            positional.append(str(chapter))
            continue
        param = next(p for p in cmd.params if p.name in (name, f"{name}_"))
        if isinstance(param, click.Argument):
            positional.append(str(value))
            continue
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if value is True:
            options.append(flag)
        elif isinstance(value, list):
            for item in value:
                options += [flag, str(item)]
        else:
            options += [flag, str(value)]
    options += CHOOSING.get(row.name, [])
    return [*words, *positional, *options]  # CASES give the arguments in the command's order


def library_call(row: Operation[Any], wr: Any, arguments: dict[str, Any]) -> Any:
    """The library's function of ``row`` called with ``arguments`` (by keyword; those it takes
    by position, as ``event``'s ops, spread)."""
    import inspect

    import narrative
    import narrative.calls

    function = getattr(narrative.calls, row.name, None) or getattr(narrative, row.name)
    spread = [p.name for p in inspect.signature(function).parameters.values()
              if p.kind is p.VAR_POSITIONAL]
    given = [item for name in spread for item in arguments.get(name, [])]
    return function(wr, *given, **{k: v for k, v in arguments.items() if k not in spread})


def http_answer(row: Operation[Any], arguments: dict[str, Any], root: Path) -> tuple[int, Any]:
    http = HTTP(root)
    path = row.path
    rest = dict(arguments)
    for name in list(rest):
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", quote(str(rest.pop(name)), safe=""))
    if row.method == "GET":
        query = urlencode([(k, str(v).lower() if isinstance(v, bool) else v)
                           for k, v in rest.items()], doseq=True)
        answer = http.get(path + (f"?{query}" if query else ""))
    elif row.method == "PUT":
        answer = http.put(path, json.dumps(rest[row.body or ""]).encode())
    else:
        answer = http.post(path, json=rest)
    return answer.status_code, answer.json()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_row_answers_alike_through_every_door(name: str, flat_world: Path,
                                                    tmp_path: Path) -> None:
    """The library, HTTP, MCP and the CLI's ``--json``, each on its own copy of one world made
    ready for the row, answer the same arguments alike (ids, commits and times aside)."""
    from narrative.operations import operation
    from narrative.serve.mcp import HIDDEN, WorldTools
    from narrative.store import WorldRepo

    row = operation(name)
    setup, arguments = CASES[name]
    CLI(flat_world)("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.mood=calm")
    if setup is not None:
        setup(CLI(flat_world))
    if name == "edit_node":
        node = json.loads((flat_world / "world/character/old-zhou.json").read_text("utf-8"))
        arguments = {**arguments, "file": {**node, "summary": "A ferryman."}}
    if name == "clone":
        arguments = {**arguments, "url": str(flat_world)}
    copies = {}
    for door in ("library", "http", "mcp", "cli"):
        copies[door] = tmp_path / door
        shutil.copytree(flat_world, copies[door], symlinks=True)
        if name in AFTER_COPY:
            AFTER_COPY[name](copies[door])
    answers: dict[str, Any] = {}
    if row.needs_world:
        with WorldRepo.open(copies["library"]) as wr:
            answers["library"] = library_call(row, wr, arguments).answer()
    else:
        answers["library"] = library_call(row, copies["library"], arguments).answer()
    if row.served:
        status, answers["http"] = http_answer(row, arguments, copies["http"])
        assert status == 200, answers["http"]
    if row.served and name not in HIDDEN:
        tools = WorldTools(copies["mcp"])
        try:
            result = tools.call(name, arguments)
        finally:
            tools.close()
        assert not result.is_error, result.content
        answers["mcp"] = result.structured_content
    if name != "edit_node":  # narr edit opens an editor: its file is the hand edit
        answers["cli"] = CLI(copies["cli"]).json(*cli_args(row, arguments, copies["cli"]))
    assert answers["library"]["schema"] == row.schema
    first = masked(_here(answers["library"], copies["library"]))
    for door, answer in answers.items():
        assert masked(_here(answer, copies[door])) == first, door


def _here(answer: Any, copy: Path) -> Any:
    """The answer with its door's own copy of the world named alike (a path init, clone and
    doctor answer)."""
    return json.loads(json.dumps(answer, ensure_ascii=False).replace(str(copy), "HERE"))


@pytest.mark.parametrize("name", sorted(row.name for row in OPERATIONS if not row.served))
def test_a_row_no_server_runs_is_refused_by_the_served_doors(name: str, flat_world: Path) -> None:
    """init and clone make a world where none is: HTTP has no route for them and MCP no tool,
    and asking either is a typed error that writes nothing."""
    from narrative.operations import operation
    from narrative.serve.mcp import WorldTools

    row = operation(name)
    assert row.unserved
    before = sorted(p.name for p in flat_world.iterdir())
    status, error = http_answer(row, {"directory": "fresh"}, flat_world)
    assert (status, error["type"]) == (404, "NotFoundError")
    tools = WorldTools(flat_world)
    try:
        result = tools.call(name, {"directory": "fresh"})
    finally:
        tools.close()
    assert result.is_error and (result.structured_content or {})["type"] == "NotFoundError"
    assert sorted(p.name for p in flat_world.iterdir()) == before


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str, str]] = [
    ("get_value", {"node": "lin-yuan", "field": "state.mood", "colour": "red"},
     "InvalidInputError", "colour"),
    ("world_graph", {"depth": "deep"}, "InvalidInputError", "depth"),
    ("world_graph", {"format": "png"}, "InvalidInputError", "format"),
    ("push", {"edits": "yes"}, "InvalidInputError", "edits"),
    ("doctor", {"llm_timeout": -1}, "InvalidInputError", "llm_timeout"),
    ("get_value", {"node": "nobody-at-all", "field": "state.mood"}, "NotFoundError", "nobody-at-all"),
    ("get_value", {"node": "lin-yuan", "field": "state.no_such_thing"}, "NotFoundError",
     "no_such_thing"),
    ("connect", {"source": "lin-yuan", "target": "nobody-at-all"}, "NotFoundError", "nobody-at-all"),
    ("path", {"node": "nobody-at-all"}, "NotFoundError", "nobody-at-all"),
    ("chapters", {"rev": "no-such-rev"}, "NotFoundError", "no-such-rev"),
]


@pytest.mark.parametrize(("name", "arguments", "kind", "named"), BAD_ARGUMENTS,
                         ids=[f"{b[0]}-{next(iter(b[1].values()))}-{i}" for i, b in enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_are_the_same_typed_error_through_every_door(
        name: str, arguments: dict[str, Any], kind: str, named: str, flat_world: Path) -> None:
    """An unknown argument, a wrong type, an unknown node or field: the library, HTTP and MCP
    give the same typed error naming it (and the CLI, where its options can spell it), and
    nothing is written."""
    import narrative as narr
    from narrative.serve.mcp import WorldTools
    from narrative.store import WorldRepo

    row = narr.operation(name)
    before = git(flat_world, "rev-parse", "HEAD")
    errors: dict[str, dict[str, Any]] = {}
    with WorldRepo.open(flat_world) as wr, pytest.raises(narr.NarrError) as caught:
        row.call(wr, row.parse(arguments))
    errors["library"] = caught.value.to_json()
    status, errors["http"] = http_answer(row, arguments, flat_world)
    assert status >= 400
    tools = WorldTools(flat_world)
    try:
        result = tools.call(name, arguments)
    finally:
        tools.close()
    assert result.is_error
    errors["mcp"] = result.structured_content or {}
    if kind == "NotFoundError":  # the command line's options are typed by click itself
        errors["cli"] = CLI(flat_world).json(*cli_args(row, arguments, flat_world),
                                              expect=errors["library"]["exit_code"])
    for door, error in errors.items():
        assert error["type"] == kind, (door, error)
        assert named in error["error"], (door, error["error"])
        assert error["exit_code"] == errors["library"]["exit_code"], door
    assert git(flat_world, "rev-parse", "HEAD") == before


BAD_OPS: list[Any] = [
    {"op": "set", "target": "lin-yuan"},
    {"op": "nope", "target": "lin-yuan"},
    "set lin-yuan mood",
    {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": 1, "colour": "red"},
    {"op": "set", "target": "lin-yuan", "field": 5, "value": 1},
    {"op": "relate", "source": "lin-yuan", "type": "knows", "target": "su-qing", "attrs": [1]},
]


@pytest.mark.parametrize("bad", BAD_OPS, ids=lambda bad: json.dumps(bad)[:40])
def test_a_malformed_op_is_the_same_typed_error_through_every_door(bad: Any,
                                                                   flat_world: Path) -> None:
    """The library, HTTP and MCP refuse a malformed op alike: an InvalidInputError (exit code
    12) naming the op (``/ops/0``), and nothing written."""
    import narrative as narr
    from narrative.serve.mcp import WorldTools
    from narrative.store import WorldRepo

    before = git(flat_world, "rev-parse", "HEAD")
    arguments = {"content": "Dusk", "ops": [bad]}
    errors: dict[str, dict[str, Any]] = {}
    with WorldRepo.open(flat_world) as wr:
        row = narr.operation("event")
        with pytest.raises(narr.InvalidInputError) as caught:
            row.call(wr, row.parse(arguments))
        errors["library"] = caught.value.to_json()
    status, errors["http"] = http_answer(narr.operation("event"), arguments, flat_world)
    assert status == 400
    tools = WorldTools(flat_world)
    try:
        result = tools.call("event", arguments)
    finally:
        tools.close()
    assert result.is_error
    errors["mcp"] = result.structured_content or {}
    for door, error in errors.items():
        assert (error["type"], error["exit_code"]) == ("InvalidInputError", 12), door
        assert "/ops/0" in error["error"], (door, error["error"])
    assert git(flat_world, "rev-parse", "HEAD") == before


@pytest.mark.parametrize("value", [object(), {1: "one"}, b"bytes", {"deep": [object()]}],
                         ids=["object", "int-key", "bytes", "deep"])
def test_a_value_json_has_no_form_of_is_a_typed_error_not_a_crash(value: Any,
                                                                  flat_world: Path) -> None:
    """A program's op may hold any Python value; one JSON cannot hold is refused as an
    InvalidInputError naming where it is, by every function that takes ops, before anything
    is written (it used to escape as pydantic's serialization error)."""
    import narrative as narr
    from narrative.delta.request import EventRequest
    from narrative.model import Delta

    before = git(flat_world, "rev-parse", "HEAD")
    op = narr.SetOp(target="lin-yuan", field="state.mood", value=value)
    with narr.open_world(flat_world) as wr:
        with pytest.raises(narr.InvalidInputError, match="/ops/0/value"):
            narr.event(wr, "Dusk", op)
        with pytest.raises(narr.InvalidInputError, match="/ops/0/value"):
            narr.event(wr, "Dusk", op, dry_run=True)
        with pytest.raises(narr.InvalidInputError, match="/delta/ops/0/value"):
            narr.run_event(wr, EventRequest(content="Dusk", delta=Delta(ops=[op]),
                                            diffuser="explicit"))
    assert git(flat_world, "rev-parse", "HEAD") == before
