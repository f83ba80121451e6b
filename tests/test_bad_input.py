"""Every bad input a careless or hostile user can cause: one clear message, the exact
exit code, and nothing changed (HEAD, index, working tree, every file identical)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest
from click.testing import Result
from helpers import CLI, git, node_file, read_node, rel_path, snapshot, write_node

from narrative.ids import MAX_ID_LENGTH, id_problem

INVALID_WORLD = 13
INVALID_INPUT = 12
NOT_FOUND = 11
NOT_A_WORLD = 10
USAGE = 2

BEAT = "A beat"  # names no node, so no diffuser proposes anything for it
EXPLICIT = ["--diffuser", "explicit"]  # exactly the changes a test spells out

# What does not depend on where node files sit is tested on a flat world only.
FLAT_ONLY = pytest.mark.parametrize("layout", ["flat"])


def head_of(root: Path) -> str | None:
    if pygit2.discover_repository(str(root)) is None:
        return None
    repo = pygit2.Repository(str(root))
    try:
        return None if repo.head_is_unborn else str(repo.head.target)
    finally:
        repo.free()


def refused(narr: CLI, root: Path, *args: str, code: int, first: str | None = None,
            startswith: str | None = None, input: str | None = None) -> Result:
    """Run ``narr ARGS``; it must exit ``code`` with one error message and change nothing."""
    before, head = snapshot(root), head_of(root)
    result = narr(*args, expect=code, input=input)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines, "no message at all"
    if first is not None:
        assert lines[0] == first
    if startswith is not None:
        assert lines[0].startswith(startswith), lines[0]
    if code == USAGE:  # click's own usage error: its message is the last line
        assert lines[-1].startswith("Error: ")
    else:
        assert sum(line.startswith("narr: error:") for line in lines) == 1
    assert "Traceback" not in result.stderr
    assert head_of(root) == head
    assert snapshot(root) == before
    return result


def event_refused(narr: CLI, root: Path, *args: str, code: int, first: str | None = None,
                  startswith: str | None = None, input: str | None = None) -> Result:
    return refused(narr, root, "event", *args, *EXPLICIT, code=code, first=first,
                   startswith=startswith, input=input)


def canonical_text(node: dict[str, Any]) -> str:
    return json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in text")


# --- hand edits that are not valid node files ---------------------------------------------


def test_node_file_that_is_not_json_names_line_and_column(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    path.write_text('{\n  "id": "black-ring",\n  "name": "x"\n  "layer": "item"\n}\n', encoding="utf-8")
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: line 4, column 3: Expecting ',' delimiter")


GARBAGE_NODES = [
    (b"", "line 1, column 1: Expecting value"),
    (b"   \n", "line 2, column 1: Expecting value"),
    (b'{"id": "black-ring",', "line 1, column 21: Expecting property name enclosed in double quotes"),
    (b'{"id": "black-ring", "state": {"x": NaN}}', "NaN is not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8 text (byte 0)"),
]


@FLAT_ONLY
def test_node_file_garbage(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    for content, message in GARBAGE_NODES:
        path.write_bytes(content)
        event_refused(narr, world, BEAT, code=INVALID_WORLD, first=f"narr: error: {rel}: {message}")


def test_not_a_valid_node_names_field_and_line(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    node = read_node(world, "black-ring")
    node["lifecycle"] = "forever"
    text = canonical_text(node)
    path.write_text(text, encoding="utf-8")
    line = line_of(text, '"lifecycle"')
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: line {line}, field /lifecycle: "
                        "Input should be 'permanent', 'scene' or 'event'")


@FLAT_ONLY
def test_every_invalid_field_is_listed(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    node = read_node(world, "black-ring")
    node["lifecycle"] = "forever"
    node["state"] = 5
    text = canonical_text(node)
    path.write_text(text, encoding="utf-8")
    lifecycle_line, state_line = line_of(text, '"lifecycle"'), line_of(text, '"state"')
    result = event_refused(narr, world, BEAT, code=INVALID_WORLD,
                           startswith=f"narr: error: {rel}: line {lifecycle_line}, field /lifecycle:")
    assert result.stderr.splitlines()[0].endswith("(and 1 more)")
    assert (f"  {rel}: line {state_line}, field /state: "
            "Input should be a valid dictionary") in result.stderr.splitlines()


@FLAT_ONLY
@pytest.mark.parametrize(("change", "field", "message", "has_line"), [
    ({"name": None}, "/name", "Field required", False),
    ({"colour": "red"}, "/colour", "Extra inputs are not permitted", True),
    ({"aliases": "ring"}, "/aliases", "Input should be a valid list", True),
    ({"relations": {"bad type": {"lin-yuan": {}}}}, "/relations/bad type/[key]", None, True),
    ({"relations": {"holds": {"Lin-Yuan": {}}}}, "/relations/holds/Lin-Yuan/[key]", None, True),
])
def test_schema_violations_name_the_field(narr: CLI, world: Path, change: dict[str, Any],
                                          field: str, message: str | None, has_line: bool) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    node = read_node(world, "black-ring")
    for key, value in change.items():
        if value is None:
            del node[key]
        else:
            node[key] = value
    path.write_text(canonical_text(node), encoding="utf-8")
    result = event_refused(narr, world, BEAT, code=INVALID_WORLD, startswith=f"narr: error: {rel}: ")
    first = result.stderr.splitlines()[0]
    assert f"field {field}: " in first
    if message is not None:
        assert first.endswith(f"field {field}: {message}")
    assert (", field" in first) == has_line


@FLAT_ONLY
def test_node_file_that_is_a_json_array(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    path.write_text("[1, 2]\n", encoding="utf-8")
    rel = path.relative_to(world).as_posix()
    result = event_refused(narr, world, BEAT, code=INVALID_WORLD, startswith=f"narr: error: {rel}: ")
    assert "valid dictionary" in result.stderr.splitlines()[0]


def test_duplicate_keys(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    text = canonical_text(read_node(world, "black-ring")).replace(
        '  "kind": "ring",\n', '  "kind": "ring",\n  "kind": "band",\n')
    path.write_text(text, encoding="utf-8")
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: line {line_of(text, 'band')}: key 'kind' appears twice")


@FLAT_ONLY
def test_duplicate_keys_nested(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    text = canonical_text(read_node(world, "black-ring")).replace(
        '    "colour": "black",\n', '    "colour": "black",\n    "colour": "white",\n')
    path.write_text(text, encoding="utf-8")
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: line {line_of(text, 'white')}: key 'colour' appears twice")


def test_id_not_matching_file_name(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    node = read_node(world, "black-ring")
    node["id"] = "white-ring"
    path.write_text(canonical_text(node), encoding="utf-8")
    event_refused(
        narr, world, BEAT, code=INVALID_WORLD,
        first=f"narr: error: {rel}: field /id is 'white-ring' but the file is named for 'black-ring'")


def test_layer_field_not_matching_directory(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    node = read_node(world, "black-ring")
    node["layer"] = "character"
    path.write_text(canonical_text(node), encoding="utf-8")
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: field /layer is 'character' but the file is under world/item/")


def test_new_node_in_the_wrong_layer_directory(narr: CLI, world: Path) -> None:
    rel = rel_path(world, "stone-bench", "character")
    write_node(world, rel, {"id": "stone-bench", "name": "Stone Bench", "layer": "item"})
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: field /layer is 'item' but the file is under world/character/")


def test_node_file_in_the_wrong_place_for_the_layout(narr: CLI, world: Path, layout: str) -> None:
    node = {"id": "stone-bench", "name": "Stone Bench", "layer": "item"}
    if layout == "flat":
        rel = "world/item/ab/stone-bench.json"
        message = f"{rel}: node files sit directly in world/item/ in a flat world"
    else:
        rel = "world/item/stone-bench.json"
        message = (f"{rel}: in a sharded world this node's file belongs at "
                   f"{rel_path(world, 'stone-bench', 'item')}")
    write_node(world, rel, node)
    event_refused(narr, world, BEAT, code=INVALID_WORLD, first=f"narr: error: {message}")


@FLAT_ONLY
def test_non_node_file_under_world(narr: CLI, world: Path) -> None:
    for rel in ("world/notes.txt", "world/item/notes.md", "world/weather/rain.json", "world/item.json"):
        (world / rel).parent.mkdir(parents=True, exist_ok=True)
        (world / rel).write_text("a note to self\n", encoding="utf-8")
        event_refused(narr, world, BEAT, code=INVALID_WORLD,
                      first=f"narr: error: {rel}: not a node file (node files are "
                            "world/<layer>/<id>.json with layer one of character, item, ambient, "
                            "background)")
        (world / rel).unlink()


def test_node_file_named_with_an_unsafe_id(narr: CLI, world: Path, layout: str) -> None:
    rel = "world/item/Black-Ring.json" if layout == "flat" else "world/item/00/Black-Ring.json"
    write_node(world, rel, {"id": "Black-Ring", "name": "x", "layer": "item"})
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: {id_problem('Black-Ring')}")


def test_node_file_that_is_a_symlink(narr: CLI, world: Path, tmp_path: Path) -> None:
    path = node_file(world, "black-ring")
    rel = path.relative_to(world).as_posix()
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: is a symbolic link; node files must be regular files")


def test_hand_created_node_with_an_id_used_in_another_layer(narr: CLI, world: Path) -> None:
    used = node_file(world, "black-ring").relative_to(world).as_posix()
    rel = rel_path(world, "black-ring", "background")
    write_node(world, rel, {"id": "black-ring", "name": "The Ring Legend", "layer": "background"})
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: node id 'black-ring' is already used by {used} "
                        "(ids are unique across layers)")


def _dangling_hand_edit(world: Path) -> str:
    node = read_node(world, "black-ring")
    node["relations"]["haunts"] = {"nobody": {}}
    path = node_file(world, "black-ring")
    path.write_text(canonical_text(node), encoding="utf-8")
    return path.relative_to(world).as_posix()


def test_hand_edit_adding_a_relation_to_a_missing_node_is_refused(narr: CLI, world: Path) -> None:
    rel = _dangling_hand_edit(world)
    result = event_refused(narr, world, BEAT, code=INVALID_WORLD, startswith="narr: error: ")
    assert result.stderr.splitlines()[0].endswith(
        f"{rel}: field /relations/haunts/nobody: points at a node that does not exist")
    # status and check name it before the next event trips over it
    assert narr.json("status")["problems"] == [
        f"{rel}: field /relations/haunts/nobody: points at a node that does not exist"]
    check = narr("check", expect=17)
    assert check.stderr.splitlines()[0] == (
        f"narr: error: check failed: working tree: {rel}: field /relations/haunts/nobody: "
        "points at a node that does not exist")


def test_hand_edit_adding_a_relation_to_a_missing_node_is_an_invalid_world(narr: CLI, world: Path) -> None:
    rel = _dangling_hand_edit(world)
    event_refused(narr, world, BEAT, code=INVALID_WORLD,
                  first=f"narr: error: {rel}: field /relations/haunts/nobody: "
                        "points at a node that does not exist")


def test_relation_to_a_node_deleted_by_hand_is_dropped_not_refused(narr: CLI, world: Path) -> None:
    node_file(world, "sister-letter").unlink()  # lin-yuan holds it
    assert narr.json("status")["problems"] == []
    narr("event", BEAT, *EXPLICIT)
    assert "sister-letter" not in read_node(world, "lin-yuan")["relations"].get("holds", {})


@FLAT_ONLY
def test_every_problem_is_listed_and_the_hand_edits_survive(narr: CLI, world: Path) -> None:
    bad = node_file(world, "black-ring")
    bad.write_text("{", encoding="utf-8")
    good = node_file(world, "lin-yuan")
    node = read_node(world, "lin-yuan")
    node["state"]["mood"] = "furious"
    good.write_text(canonical_text(node), encoding="utf-8")
    (world / "world/notes.txt").write_text("x", encoding="utf-8")
    result = event_refused(narr, world, BEAT, code=INVALID_WORLD, startswith="narr: error: ")
    assert result.stderr.splitlines()[0].endswith("(and 1 more)")
    assert len(narr.json("status")["problems"]) == 2
    assert read_node(world, "lin-yuan")["state"]["mood"] == "furious"


# --- unsafe ids, wherever they can be typed ------------------------------------------------

UNSAFE = ["../x", "a/b", "", "x" * (MAX_ID_LENGTH + 1), "y" * 5000, "Lin-Yuan", "con", ".hidden",
          "a b", "lin_yuan\n", "ünï", "a\\b", "x.json"]
# In ID.FIELD specs the first '.' or '/' ends the id, so ids holding one are tested separately.
UNSAFE_IN_SPECS = [u for u in UNSAFE if "." not in u and "/" not in u]


# Node arguments take names too; these name no node (case aside "Lin-Yuan" is lin-yuan's id,
# and "lin_yuan\n" is an id once the typed newline is stripped).
NAMING_NOTHING = [u for u in UNSAFE if u not in ("Lin-Yuan", "lin_yuan\n")]


def test_every_unsafe_id_is_unsafe() -> None:
    for bad in UNSAFE:
        assert id_problem(bad) is not None, bad


def _unsafe(bad: str) -> str:
    problem = id_problem(bad)
    assert problem is not None
    return problem


@FLAT_ONLY
def test_unsafe_id_in_get_path_and_edit(narr: CLI, world: Path, tmp_path: Path) -> None:
    marker = tmp_path / "editor-ran"
    script = tmp_path / "ed.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    os.environ["EDITOR"] = f"{sys.executable} {script}"
    try:
        for bad in NAMING_NOTHING:  # not an id, so a name: and no node is called that
            first = f"narr: error: no node named {bad!r} in the world"
            refused(narr, world, "get", "--", bad, code=NOT_FOUND, first=first)
            refused(narr, world, "get", "--at", "HEAD", "--", bad, "state", code=NOT_FOUND,
                    first=first)
            refused(narr, world, "path", "--", bad, code=NOT_FOUND, first=first)
            refused(narr, world, "path", "--layer", "item", "--", bad, code=NOT_FOUND, first=first)
            refused(narr, world, "edit", "--layer", "item", "--", bad, code=NOT_FOUND, first=first)
    finally:
        del os.environ["EDITOR"]
    assert not marker.exists()


@FLAT_ONLY
def test_unsafe_id_in_set_unset_and_expire(narr: CLI, world: Path) -> None:
    for bad in (u for u in UNSAFE_IN_SPECS if u in NAMING_NOTHING):
        for flag, spec in (("--set", f"{bad}.state.a=1"), ("--unset", f"{bad}.state.a")):
            shown = repr(spec.partition("=")[0])
            if not bad:
                event_refused(narr, world, BEAT, flag, spec, code=INVALID_INPUT,
                              first=f"narr: error: {flag} {shown}: expected NODE.field.path: it must "
                                    "start with a node's id or name (e.g. lin-yuan.state.mood)")
                continue
            event_refused(narr, world, BEAT, flag, spec, code=NOT_FOUND,
                          first=f"narr: error: {flag} {shown}: no node named {bad!r} in the world")
    for bad in NAMING_NOTHING:
        event_refused(narr, world, BEAT, "--expire", bad, code=NOT_FOUND,
                      first=f"narr: error: --expire {bad!r}: no node named {bad.strip()!r} in the world")


@FLAT_ONLY
def test_path_like_set_specs_are_refused(narr: CLI, world: Path) -> None:
    for spec in ("../x.state.a=1", "../x/state/a=1", "/state/a=1", ".state.a=1", "..=1",
                 "../../etc/passwd.state.a=1"):
        result = event_refused(narr, world, BEAT, "--set", spec, code=INVALID_INPUT,
                               startswith="narr: error: ")
        assert repr(spec.partition("=")[0]) in result.stderr.splitlines()[0]
    assert sorted(p.name for p in world.parent.iterdir()) == ["world"]


@FLAT_ONLY
def test_unsafe_id_in_relate_and_unrelate(narr: CLI, world: Path) -> None:
    for bad in (u for u in NAMING_NOTHING if u and ":" not in u and "=" not in u):
        shown = bad.strip()
        for flag in ("--relate", "--unrelate"):
            spec = f"lin-yuan:knows:{bad}"
            event_refused(narr, world, BEAT, flag, spec, code=NOT_FOUND,
                          first=f"narr: error: target of {flag} {spec!r}: no node named {shown!r} "
                                "in the world")
            spec = f"{bad}:knows:lin-yuan"
            event_refused(narr, world, BEAT, flag, spec, code=NOT_FOUND,
                          first=f"narr: error: source of {flag} {spec!r}: no node named {shown!r} "
                                "in the world")
    event_refused(narr, world, BEAT, "--relate", "lin-yuan:b:../c", code=NOT_FOUND,
                  first="narr: error: target of --relate 'lin-yuan:b:../c': no node named '../c' "
                        "in the world")


@FLAT_ONLY
def test_malformed_relation_specs(narr: CLI, world: Path) -> None:
    for spec in ("lin-yuan:knows", "lin-yuan::su-qing", "a:b:c:d", ":knows:su-qing",
                 "lin-yuan:knows:su-qing=[1]", "lin-yuan:kno ws:su-qing"):
        result = event_refused(narr, world, BEAT, "--relate", spec, code=INVALID_INPUT,
                               startswith="narr: error: ")
        assert f"--relate {spec!r}" in result.stderr.splitlines()[0]


@FLAT_ONLY
def test_unsafe_id_in_a_create_file(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "node.json"
    for bad in UNSAFE:
        spec.write_text(json.dumps({"id": bad, "name": "Evil", "layer": "item"}), encoding="utf-8")
        event_refused(narr, world, BEAT, "--create", str(spec), code=INVALID_INPUT,
                      startswith=f"narr: error: {spec}: field /id: ")


OP_WITH_ID: dict[str, Callable[[str], dict[str, Any]]] = {
    "/ops/0/set/target": lambda bad: {"op": "set", "target": bad, "field": "/state/a", "value": 1},
    "/ops/0/unset/target": lambda bad: {"op": "unset", "target": bad, "field": "/state/a"},
    "/ops/0/relate/source": lambda bad: {"op": "relate", "source": bad, "type": "knows",
                                         "target": "lin-yuan"},
    "/ops/0/relate/target": lambda bad: {"op": "relate", "source": "lin-yuan", "type": "knows",
                                         "target": bad},
    "/ops/0/unrelate/target": lambda bad: {"op": "unrelate", "source": "lin-yuan", "type": "knows",
                                           "target": bad},
    "/ops/0/create/node/id": lambda bad: {"op": "create", "node": {"id": bad, "name": "E",
                                                                   "layer": "item"}},
    "/ops/0/expire/target": lambda bad: {"op": "expire", "target": bad},
}


@FLAT_ONLY
def test_unsafe_id_in_a_delta(narr: CLI, world: Path, tmp_path: Path) -> None:
    f = tmp_path / "delta.json"
    for where, make in OP_WITH_ID.items():
        for bad in ("../x", "a/b", "", "z" * 200, "UP", "x\n"):
            delta = json.dumps({"ops": [make(bad)]})
            event_refused(narr, world, BEAT, "--delta", "-", input=delta, code=INVALID_INPUT,
                          startswith=f"narr: error: <stdin>: {where}: ")
            f.write_text(delta, encoding="utf-8")
            event_refused(narr, world, BEAT, "--delta", str(f), code=INVALID_INPUT,
                          startswith=f"narr: error: {f}: {where}: ")


def test_unsafe_ids_reach_no_file_even_through_the_library(world: Path) -> None:
    """Bypassing the CLI's parsing and the model's validation, the engine still refuses."""
    from narrative.delta.request import EventRequest
    from narrative.engine.event import run_event
    from narrative.errors import InvalidInputError
    from narrative.model import Delta, ExpireOp, SetOp
    from narrative.store.worldrepo import WorldRepo

    before = snapshot(world)
    wr = WorldRepo.open(world)
    try:
        for op in (SetOp.model_construct(op="set", target="../../x", field="/state/a", value=1),
                   ExpireOp.model_construct(op="expire", target="../x")):
            delta = Delta.model_construct(ops=[op])
            with pytest.raises(InvalidInputError, match="not a safe slug"):
                run_event(wr, EventRequest.model_construct(content=BEAT, delta=delta),
                          keep_failed=False)
    finally:
        wr.close()
    assert snapshot(world) == before


# --- deltas the engine must refuse as a whole ----------------------------------------------

NOT_VALID = "narr: error: the event's changes are not valid: "


@FLAT_ONLY
def test_unknown_node(narr: CLI, world: Path) -> None:
    refused(narr, world, "get", "nobody", code=NOT_FOUND, first="narr: error: no node 'nobody' in the world")
    refused(narr, world, "get", "nobody", "--at", "HEAD", code=NOT_FOUND,
            first="narr: error: no node 'nobody' in the world at HEAD")
    refused(narr, world, "get", "lin-yuan", "state.nope", code=NOT_FOUND,
            first="narr: error: lin-yuan has no field /state/nope")
    refused(narr, world, "path", "nobody", code=NOT_FOUND, first="narr: error: no node 'nobody' in the world")
    refused(narr, world, "show", "nowhere", code=NOT_FOUND,
            first="narr: error: 'nowhere' is neither a git revision nor an event id of this world")
    missing = "narr: error: the event's changes are not valid: op 1 ({}): no node 'nobody' in the world"
    event_refused(narr, world, BEAT, "--set", "nobody.state.a=1", code=INVALID_INPUT,
                  first=missing.format("set"))
    event_refused(narr, world, BEAT, "--unset", "nobody.state.a", code=INVALID_INPUT,
                  first=missing.format("unset"))
    event_refused(narr, world, BEAT, "--relate", "nobody:knows:lin-yuan", code=INVALID_INPUT,
                  first=missing.format("relate"))
    event_refused(narr, world, BEAT, "--unrelate", "nobody:knows:lin-yuan", code=INVALID_INPUT,
                  first=missing.format("unrelate"))


@FLAT_ONLY
def test_expiring_an_unknown_node(narr: CLI, world: Path) -> None:
    event_refused(narr, world, BEAT, "--expire", "nobody", code=INVALID_INPUT,
                  first=NOT_VALID + "op 1 (expire): no node 'nobody' in the world")


def test_a_node_deleted_by_hand_is_unknown_to_the_event(narr: CLI, world: Path) -> None:
    path = node_file(world, "jade-token")
    rel = path.relative_to(world).as_posix()
    path.unlink()
    event_refused(narr, world, BEAT, "--set", "jade-token.state.a=1", code=INVALID_INPUT,
                  first=NOT_VALID + f"op 1 (set): no node 'jade-token' in the world "
                                    f"(its file {rel} was deleted by hand)")


ILLEGAL = [
    ("--set", "lin-yuan.traits.speech=loud",
     "op 1 (set): lin-yuan /traits/speech: traits are the node's baseline: only the user changes "
     "them, by editing the file (narr edit lin-yuan); the next event records that edit"),
    ("--set", 'lin-yuan.traits={"x": 1}',
     "op 1 (set): lin-yuan /traits: traits are the node's baseline: only the user changes "
     "them, by editing the file (narr edit lin-yuan); the next event records that edit"),
    ("--unset", "lin-yuan.traits.speech",
     "op 1 (unset): lin-yuan /traits/speech: traits are the node's baseline: only the user changes "
     "them, by editing the file (narr edit lin-yuan); the next event records that edit"),
    ("--set", "lin-yuan.id=lin-yuan-2",
     "op 1 (set): lin-yuan /id: a node's id cannot change (it is the file name); "
     "create a new node instead"),
    ("--unset", "lin-yuan.id",
     "op 1 (unset): lin-yuan /id: a node's id cannot change (it is the file name); "
     "create a new node instead"),
    ("--set", "lin-yuan.layer=item",
     "op 1 (set): lin-yuan /layer: a node's layer cannot change through a delta; "
     "move the file by hand if you must"),
    ("--set", "lin-yuan.created_by_event=x",
     "op 1 (set): lin-yuan /created_by_event: created_by_event is set by narr"),
    ("--set", "lin-yuan.bogus=1",
     "op 1 (set): lin-yuan /bogus: 'bogus' is not a node field (a delta may change name, kind, "
     "aliases, summary, lifecycle, state, relations, tags, sections, always_in_view, extensions)"),
    ("--unset", "lin-yuan.bogus",
     "op 1 (unset): lin-yuan /bogus: 'bogus' is not a node field (a delta may change name, kind, "
     "aliases, summary, lifecycle, state, relations, tags, sections, always_in_view, extensions)"),
    ("--set", "lin-yuan.state=5", "node lin-yuan: field /state: Input should be a valid dictionary"),
    ("--set", "lin-yuan.lifecycle=forever",
     "node lin-yuan: field /lifecycle: Input should be 'permanent', 'scene' or 'event'"),
    ("--set", "lin-yuan.name=", "node lin-yuan: field /name: String should have at least 1 character"),
    ("--set", "lin-yuan.name=null", "node lin-yuan: field /name: Input should be a valid string"),
    ("--unset", "lin-yuan.name", "node lin-yuan: field /name: Field required"),
    ("--set", "lin-yuan.aliases.7=x", "op 1 (set): lin-yuan /aliases/7: no element 7 in the list "
                                      "(use '-' to append)"),
    ("--set", "lin-yuan.state.goal.x=1",
     "op 1 (set): lin-yuan /state/goal/x: /state/goal is not an object"),
    ("--relate", "lin-yuan:knows:nobody",
     "node lin-yuan: relation knows->nobody points at a node that does not exist"),
]


@FLAT_ONLY
def test_illegal_changes(narr: CLI, world: Path) -> None:
    for flag, spec, message in ILLEGAL:
        event_refused(narr, world, BEAT, flag, spec, code=INVALID_INPUT, first=NOT_VALID + message)
    kept = narr.json("status")["failed_events"]
    assert len(kept) == len(ILLEGAL)  # each one kept for --retry
    assert kept[0]["error"] == NOT_VALID.removeprefix("narr: error: ") + ILLEGAL[0][2]


@FLAT_ONLY
def test_the_same_rules_hold_for_a_delta(narr: CLI, world: Path) -> None:
    delta = {"ops": [{"op": "set", "target": "lin-yuan", "field": "/traits/speech", "value": "loud"},
                     {"op": "relate", "source": "su-qing", "type": "knows", "target": "nobody"},
                     {"op": "expire", "target": "nobody"}]}
    result = event_refused(narr, world, BEAT, "--delta", "-", input=json.dumps(delta),
                           code=INVALID_INPUT, startswith=NOT_VALID + "op 1 (set): lin-yuan /traits")
    # every problem at once, so a user or a model fixes them in one go
    assert result.stderr.splitlines()[0].endswith("(and 1 more)")
    assert "  op 3 (expire): no node 'nobody' in the world" in result.stderr.splitlines()


@FLAT_ONLY
def test_relation_to_a_node_the_event_expires(narr: CLI, world: Path) -> None:
    event_refused(narr, world, BEAT, "--relate", "lin-yuan:visits:ferry", "--expire", "ferry",
                  code=INVALID_INPUT,
                  first=NOT_VALID + "op 1 (relate): lin-yuan visits->ferry: points at a node "
                                    "this event expires")


@FLAT_ONLY
def test_relation_to_a_missing_node_from_a_node_the_event_expires(narr: CLI, world: Path) -> None:
    # temple-bell's lifecycle is 'event': the first event ends it
    event_refused(narr, world, BEAT, "--relate", "temple-bell:holds:nobody", code=INVALID_INPUT,
                  first=NOT_VALID + "op 1 (relate): temple-bell holds->nobody: points at a node "
                                    "that does not exist")


def test_creating_an_existing_id(narr: CLI, world: Path, tmp_path: Path) -> None:
    used = node_file(world, "lin-yuan").relative_to(world).as_posix()
    for layer in ("character", "item"):
        spec = tmp_path / f"{layer}.json"
        spec.write_text(json.dumps({"id": "lin-yuan", "name": "Another", "layer": layer}),
                        encoding="utf-8")
        event_refused(narr, world, BEAT, "--create", str(spec), code=INVALID_INPUT,
                      first=NOT_VALID + f"op 1 (create): node 'lin-yuan' already exists ({used})")


def test_creating_an_id_created_by_hand(narr: CLI, world: Path, tmp_path: Path) -> None:
    rel = rel_path(world, "peddler", "character")
    write_node(world, rel, {"id": "peddler", "name": "Peddler", "layer": "character"})
    spec = tmp_path / "peddler.json"
    spec.write_text(json.dumps({"id": "peddler", "name": "Peddler", "layer": "character"}),
                    encoding="utf-8")
    event_refused(narr, world, BEAT, "--create", str(spec), code=INVALID_INPUT,
                  first=NOT_VALID + f"op 1 (create): node 'peddler' already exists ({rel})")


@FLAT_ONLY
def test_creating_the_same_id_twice(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "boat", "name": "Boat", "layer": "item"}), encoding="utf-8")
    event_refused(narr, world, BEAT, "--create", str(spec), "--create", str(spec), code=INVALID_INPUT,
                  first=NOT_VALID + "op 2 (create): node 'boat' is created twice in this event")


@FLAT_ONLY
def test_create_file_that_is_not_a_node(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "boat", "layer": "boat"}), encoding="utf-8")
    result = event_refused(narr, world, BEAT, "--create", str(spec), code=INVALID_INPUT,
                           startswith=f"narr: error: {spec}: field /name: Field required")
    assert f"  {spec}: field /layer: Input should be 'character', 'item', 'ambient' or 'background'" \
        in result.stderr.splitlines()
    event_refused(narr, world, BEAT, "--create", str(tmp_path / "missing.json"), code=INVALID_INPUT,
                  first=f"narr: error: --create {tmp_path / 'missing.json'}: cannot read "
                        "(No such file or directory)")


# --- garbage and schema-violating deltas --------------------------------------------------


SCHEMA_VIOLATIONS = [
    ('{"ops": [{"op": "set"}]}', "/ops/0/set/target: Field required (and 2 more)"),
    ('{"ops": [{"op": "explode"}]}', "/ops/0: Input tag 'explode' found using 'op' does not match "
                                      "any of the expected tags: 'set', 'unset', 'relate', 'unrelate', "
                                      "'create', 'expire'"),
    ('{"ops": [{"target": "lin-yuan"}]}', "/ops/0: Unable to extract tag using discriminator 'op'"),
    ('{"ops": [], "extra": 1}', "/extra: Extra inputs are not permitted"),
    ('{"ops": {"op": "set"}}', "/ops: Input should be a valid list"),
    ('[]', "/: Input should be a valid dictionary or instance of Delta"),
    ('"ops"', "/: Input should be a valid dictionary or instance of Delta"),
    ('{"ops": [{"op": "set", "target": "lin-yuan", "field": "state/mood", "value": 1}]}',
     "/ops/0/set/field: Value error, field 'state/mood' is not a JSON pointer (it must start with '/')"),
    ('{"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": 1, "x": 2}]}',
     "/ops/0/set/x: Extra inputs are not permitted"),
    ('{"ops": [{"op": "relate", "source": "lin-yuan", "type": "a b", "target": "su-qing"}]}',
     "/ops/0/relate/type: "),
]


@FLAT_ONLY
def test_schema_violating_delta(narr: CLI, world: Path, tmp_path: Path) -> None:
    f = tmp_path / "delta.json"
    for delta, message in SCHEMA_VIOLATIONS:
        event_refused(narr, world, BEAT, "--delta", "-", input=delta, code=INVALID_INPUT,
                      startswith=f"narr: error: <stdin>: {message}")
        f.write_text(delta, encoding="utf-8")
        event_refused(narr, world, BEAT, "--delta", str(f), code=INVALID_INPUT,
                      startswith=f"narr: error: {f}: {message}")


GARBAGE = [
    pytest.param("garbage", "line 1, column 1: Expecting value", id="word"),
    pytest.param("", "line 1, column 1: Expecting value", id="empty"),
    pytest.param('{"ops": [', "line 1, column 10: Expecting value", id="truncated"),
    pytest.param('{"ops": [], "ops": []}', "line 1: key 'ops' appears twice", id="duplicate"),
]


@FLAT_ONLY
def test_garbage_delta_is_refused_naming_line_and_column(world: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from narrative.cli import main

    f = tmp_path / "delta.json"
    for param in GARBAGE:
        delta, message = param.values
        assert isinstance(delta, str)
        f.write_text(delta, encoding="utf-8")
        ways = (("<stdin>", ["--delta", "-"], delta), (str(f), ["--delta", str(f)], None))
        for source, args, stdin in ways:
            before, head = snapshot(world), head_of(world)
            result = CliRunner().invoke(main, ["-C", str(world), "event", BEAT, *args], input=stdin)
            assert result.exit_code == INVALID_INPUT
            assert result.stdout == ""
            assert result.stderr.splitlines()[0] == f"narr: error: {source}: {message}"
            assert snapshot(world) == before and head_of(world) == head


@FLAT_ONLY
@pytest.mark.parametrize(("delta", "message"), GARBAGE)
def test_garbage_delta_is_invalid_input(narr: CLI, world: Path, delta: str, message: str) -> None:
    event_refused(narr, world, BEAT, "--delta", "-", input=delta, code=INVALID_INPUT,
                  first=f"narr: error: <stdin>: {message}")


@FLAT_ONLY
def test_garbage_create_file_is_invalid_input(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "node.json"
    spec.write_text("{oops", encoding="utf-8")
    event_refused(narr, world, BEAT, "--create", str(spec), code=INVALID_INPUT,
                  first=f"narr: error: {spec}: line 1, column 2: Expecting property name enclosed "
                        "in double quotes")


@FLAT_ONLY
def test_delta_file_that_cannot_be_read(narr: CLI, world: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    event_refused(narr, world, BEAT, "--delta", str(missing), code=INVALID_INPUT,
                  first=f"narr: error: --delta {missing}: cannot read (No such file or directory)")
    event_refused(narr, world, BEAT, "--delta", str(tmp_path), code=INVALID_INPUT,
                  first=f"narr: error: --delta {tmp_path}: cannot read (Is a directory)")


# --- empty content, not a world, detached HEAD ----------------------------------------------


@FLAT_ONLY
def test_empty_content(narr: CLI, world: Path) -> None:
    result = refused(narr, world, "event", code=USAGE)
    assert result.stderr.splitlines()[-1] == (
        'Error: say what happens: narr event "Lin Yuan walks to the ferry"')
    result = refused(narr, world, "event", "", "--set", "lin-yuan.state.mood=x", code=USAGE)
    assert result.stderr.splitlines()[-1].startswith("Error: say what happens")
    for blank in ("   ", "\n\t"):
        event_refused(narr, world, blank, "--set", "lin-yuan.state.mood=x", code=INVALID_INPUT,
                      first="narr: error: an event needs content: say what happens")


@pytest.mark.parametrize("args", [["status"], ["event", BEAT], ["check"], ["log"], ["get", "lin-yuan"],
                                  ["nodes"], ["show"], ["path", "lin-yuan"], ["event", "--retry"]])
def test_not_a_world(tmp_path: Path, args: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused(CLI(plain), plain, *args, code=NOT_A_WORLD,
            first=f"narr: error: not a narr world: no git repository at {plain.resolve()} or above")
    repo = tmp_path / "just-git"
    pygit2.init_repository(str(repo))
    refused(CLI(repo), repo, *args, code=NOT_A_WORLD,
            first=f"narr: error: not a narr world: {repo.resolve()} is a git repository without narr.toml")
    bare = tmp_path / "bare.git"
    pygit2.init_repository(str(bare), bare=True)
    refused(CLI(bare), bare, *args, code=NOT_A_WORLD, startswith="narr: error: not a narr world: ")


def test_not_a_world_as_a_subprocess(tmp_path: Path) -> None:
    from helpers import narr_subprocess

    proc = narr_subprocess(tmp_path, "event", BEAT)
    assert proc.returncode == NOT_A_WORLD
    assert proc.stdout == ""
    assert proc.stderr.splitlines()[0] == (
        f"narr: error: not a narr world: no git repository at {tmp_path.resolve()} or above")


def test_head_detached(narr: CLI, world: Path) -> None:
    git(world, "checkout", "--quiet", "--detach", "HEAD")
    node = read_node(world, "lin-yuan")
    node["state"]["mood"] = "lost"
    node_file(world, "lin-yuan").write_text(canonical_text(node), encoding="utf-8")
    event_refused(narr, world, BEAT, "--set", "su-qing.state.mood=calm", code=INVALID_INPUT,
                  first="narr: error: HEAD is detached: narr only moves story branches")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "lost"


# --- failed events are kept and retried -------------------------------------------------------


def test_failed_event_is_kept_and_retried_after_the_fix(narr: CLI, world: Path) -> None:
    path = node_file(world, "black-ring")
    good = path.read_text(encoding="utf-8")
    fixed = json.loads(good)
    fixed["state"]["colour"] = "grey"
    path.write_text(canonical_text(fixed).replace('"colour": "grey"', '"colour": "grey",,'),
                    encoding="utf-8")
    result = narr("event", "Lin Yuan rubs the ring", *EXPLICIT, "--set", "lin-yuan.state.mood=calm",
                  "--story-time", "Day 4", expect=INVALID_WORLD)
    assert result.stderr.splitlines()[-1].endswith(
        "the event is kept: fix the problem and run narr event --retry")
    kept = narr.json("status")["failed_events"]
    assert [k["content"] for k in kept] == ["Lin Yuan rubs the ring"]
    assert "Failed events kept" in narr("status").stdout

    # retrying before the fix fails the same way and keeps the event once
    narr("event", "--retry", expect=INVALID_WORLD)
    assert len(narr.json("status")["failed_events"]) == 1

    path.write_text(canonical_text(fixed), encoding="utf-8")  # the user fixes the file
    rec = narr.json("event", "--retry")
    assert rec["content"] == "Lin Yuan rubs the ring" and rec["timestamp"] == "Day 4"
    assert {"target": "lin-yuan", "field": "/state/mood", "old_value": "anxious",
            "new_value": "calm"} in rec["diffusions"]
    assert rec["edits"] == [{"target": "black-ring", "field": "/state/colour", "old_value": "black",
                             "new_value": "grey"}]
    assert narr.json("status")["failed_events"] == []
    assert narr.json("show", "HEAD")["id"] == rec["id"]
    narr("event", "--retry", expect=16)
    assert narr("check").exit_code == 0


def test_retry_after_the_world_gains_the_missing_node(narr: CLI, world: Path) -> None:
    event_refused(narr, world, "Lin Yuan meets a stranger", "--relate", "lin-yuan:met:stranger",
                  code=INVALID_INPUT, startswith=NOT_VALID)
    event_refused(narr, world, "Later", "--set", "nobody.state.a=1", code=INVALID_INPUT,
                  startswith=NOT_VALID)
    assert [k["content"] for k in narr.json("status")["failed_events"]] == [
        "Lin Yuan meets a stranger", "Later"]
    # --retry runs the newest: it still fails, and both stay kept
    narr("event", "--retry", expect=INVALID_INPUT)
    assert len(narr.json("status")["failed_events"]) == 2
    # drop the newest by making it succeed: create 'nobody' by hand
    write_node(world, rel_path(world, "nobody", "character"),
               {"id": "nobody", "name": "Nobody", "layer": "character"})
    assert narr.json("event", "--retry")["content"] == "Later"
    assert [k["content"] for k in narr.json("status")["failed_events"]] == ["Lin Yuan meets a stranger"]
    write_node(world, rel_path(world, "stranger", "character"),
               {"id": "stranger", "name": "Stranger", "layer": "character"})
    rec = narr.json("event", "--retry")
    assert rec["content"] == "Lin Yuan meets a stranger"
    assert rec["edits"][0]["target"] == "stranger"
    assert read_node(world, "lin-yuan")["relations"]["met"] == {"stranger": {}}
    assert narr.json("status")["failed_events"] == []
    assert narr("check").exit_code == 0


@FLAT_ONLY
def test_retry_with_changes_is_a_usage_error(narr: CLI, world: Path) -> None:
    result = refused(narr, world, "event", "--retry", "Something", code=USAGE)
    assert result.stderr.splitlines()[-1] == (
        "Error: --retry takes no content, changes, --story-time, --text, --close-scene, --render, "
        "--accept or --large: it reruns the kept event as it was asked")
    for flag in (["--story-time", "Day 1"], ["--text", "prose"], ["--close-scene"], ["--render"]):
        refused(narr, world, "event", "--retry", *flag, code=USAGE)


def test_reads_change_nothing(narr: CLI, world: Path) -> None:
    node = read_node(world, "lin-yuan")
    node["state"]["mood"] = "edited"
    node_file(world, "lin-yuan").write_text(canonical_text(node), encoding="utf-8")
    before = snapshot(world)
    for args in (["status"], ["log"], ["show"], ["get", "lin-yuan"], ["nodes"], ["check"],
                 ["path", "lin-yuan"], ["status", "--json"], ["event", BEAT, "--dry-run"]):
        narr(*args)
    assert snapshot(world) == before


def test_huge_counts_on_the_command_line_are_no_traceback(flat_world: Path) -> None:
    narr = CLI(flat_world)
    huge = "99999999999999999999"
    assert narr.json("search", "Lin", "--limit", huge)["hits"]
    refused(narr, flat_world, "event", BEAT, *EXPLICIT, "--accept", huge, code=USAGE)
