"""Event records read without the model: what reset and the abandoned chains read of a
commit is exactly what the model reads where the record plainly holds, the model's own
reading everywhere else, and a fresh ``narr reset`` never imports pydantic."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI
from hypothesis import given
from hypothesis import strategies as st
from test_cold_path import PROBE, _env

from narrative.errors import InvalidInputError
from narrative.store import records

# Values a hand-made commit might carry in a record's field: every JSON type, near-misses.
ODD = st.sampled_from([
    "", " ", "x", "lin-yuan", "../x", "con", "a" * 81, "Su", "event", "merge", "genesis", "bogus",
    "set", "unset", "relate", "create", "expire", "theirs", "resolved", "/", "/state",
    "/state/mood", "state.mood", "s", "a b", "a:b", "\u00a0", "名", 0, 1, -1, 2.5, True, False,
    None, [], [""], ["a"], ["a", 1], [{}], {}, {"": "x"}, {"k": 1}, {"a": "b"},
    {"id": "x", "name": "X", "layer": "item"}, {"id": "x", "name": "", "layer": "item"},
    {"target": "lin-yuan", "field": "/state/mood"},
])
TOP = st.sampled_from([*records.RECORD_FIELDS, "bogus"])
INNER = st.sampled_from(["target", "field", "old_value", "new_value", "side", "op", "value",
                         "source", "type", "attrs", "node", "bogus"])
WHERE = st.sampled_from(["top", "diffusions", "edits", "explicit"])
EDITS = st.lists(st.tuples(st.sampled_from(["set", "drop"]), WHERE, TOP, INNER, ODD,
                           st.integers(0, 20)), max_size=4)


def _model(data: dict[str, Any]) -> dict[str, Any] | None:
    from narrative.model import EventRecord

    try:
        return EventRecord.model_validate(copy.deepcopy(data)).model_dump(mode="json")
    except ValueError:
        return None


def _raw_records(root: Path) -> list[dict[str, Any]]:
    log = subprocess.run(["git", "log", "--all", "--format=%H"], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    out = []
    for commit in log:
        message = subprocess.run(["git", "cat-file", "commit", commit], cwd=root,
                                 capture_output=True, text=True, check=True).stdout
        raw = records.decode_raw(message.partition("\n\n")[2])
        if raw is not None:
            out.append(raw)
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The records of a history that holds every kind of change and op narr writes."""
    from narrative.engine.init import init_world

    root = tmp_path_factory.mktemp("records") / "w"
    init_world(root, sample=True)
    narr = CLI(root)
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Dusk", "--set", "lin-yuan.state.mood=wary", "--set", "su-qing.state.n=3",
         "--relate", "su-qing:suspects:lin-yuan={\"since\": 2}", "--unset", "lin-yuan.state.goal",
         "--at", "day 2", "--text", "It gets dark.", "--close-scene")
    node = {"id": "river-ghost", "name": "River ghost", "layer": "character", "tags": ["spirit"]}
    (root / "ghost.json").write_text(json.dumps(node), "utf-8")
    narr("event", "A ghost rises", "--create", str(root / "ghost.json"),
         "--unrelate", "su-qing:suspects:lin-yuan", "--diffuser", "explicit")
    narr("event", "The ghost fades", "--expire", "river-ghost", "--diffuser", "explicit")
    path = root / narr("path", "old-zhou").output.strip()
    zhou = json.loads(path.read_text("utf-8"))
    zhou["state"]["mood"] = "grumpy"
    del zhou["summary"]
    path.write_text(json.dumps(zhou, indent=2), "utf-8")
    narr("event", "Old Zhou grumbles", "--set", "old-zhou.state.note=null")
    narr("branch", "side")
    narr("switch", "side")
    narr("event", "Rain", "--set", "ferry.state.weather=rain")
    narr("switch", "main")
    narr("event", "Wind", "--set", "ferry.state.wind=strong")
    narr("merge", "side")
    narr("reset", "HEAD~2")
    return _raw_records(root)


def test_every_record_narr_writes_reads_plainly_as_the_model_reads_it(
        recorded: list[dict[str, Any]]) -> None:
    kinds = {r["kind"] for r in recorded}
    assert kinds == {"genesis", "event", "merge"}
    ops = {op["op"] for r in recorded for op in r["explicit"]}
    assert ops == {"set", "unset", "relate", "unrelate", "create", "expire"}
    assert any(r["edits"] for r in recorded) and any(r["diffusions"] for r in recorded)
    for raw in recorded:
        plain = records.plain_record(copy.deepcopy(raw))
        assert plain is not None, raw
        assert json.dumps(plain) == json.dumps(_model(raw))  # same values, same key order


def _edited(raw: dict[str, Any], edits: list[tuple[str, str, str, str, Any, int]]) -> dict[str, Any]:
    data = copy.deepcopy(raw)
    for kind, where, top, inner, value, n in edits:
        if where == "top":
            if kind == "drop":
                data.pop(top, None)
            else:
                data[top] = copy.deepcopy(value)
            continue
        items = data.get(where)
        if not isinstance(items, list) or not items:
            continue
        item = items[n % len(items)]
        if not isinstance(item, dict):
            continue
        if kind == "drop":
            item.pop(inner, None)
        else:
            item[inner] = copy.deepcopy(value)
    return data


@given(which=st.integers(0, 100), edits=EDITS)
def test_a_plainly_read_record_is_the_models_record(recorded: list[dict[str, Any]], which: int,
                                                    edits: list[tuple[str, str, str, str, Any, int]]
                                                    ) -> None:
    """Whatever a hand-made commit carries, the plain reading agrees with the model exactly or
    leaves the record to the model: it never accepts what the model refuses, or reads it otherwise."""
    data = _edited(recorded[which % len(recorded)], edits)
    if not data.keys() <= records.RECORD_FIELDS.keys():
        return  # decode_raw gives the model only the record's own fields
    data = {key: data.get(key, default) for key, default in records.RECORD_FIELDS.items()}
    plain = records.plain_record(copy.deepcopy(data))
    if plain is not None:
        expected = _model(data)
        assert expected is not None, data
        assert json.dumps(plain) == json.dumps(expected)


@given(which=st.integers(0, 100), edits=EDITS)
def test_a_checked_record_is_the_models_record(recorded: list[dict[str, Any]], which: int,
                                               edits: list[tuple[str, str, str, str, Any, int]]) -> None:
    """What reset reads of a commit message: the model's record (or None where the model
    refuses it), whichever way it was read."""
    data = _edited(recorded[which % len(recorded)], edits)
    message = f"subject\n\n{records.MARKER}\n{json.dumps(data, ensure_ascii=False)}\n"
    expected = None
    raw = records.decode_raw(message)
    if raw is not None:
        expected = _model(raw)
    assert json.dumps(records.decode_checked(message)) == json.dumps(expected)


def test_escaped_surrogates_are_left_to_the_model(recorded: list[dict[str, Any]]) -> None:
    """Text UTF-8 cannot encode, spelled as an escape, is read as the model reads it, and a
    record the model cannot give back as JSON is no readable record (not a traceback)."""
    data = copy.deepcopy(recorded[-1])
    data["content"] = "\ud800"
    message = f"subject\n\n{records.MARKER}\n{json.dumps(data)}\n"
    assert "\\ud800" in message
    assert records.decode_checked(message) == _model(data)
    data["edits"] = [{"target": "lin-yuan", "field": "/state/x", "new_value": {"\ud800": 1}}]
    assert records.decode_checked(f"subject\n\n{records.MARKER}\n{json.dumps(data)}\n") is None


def test_a_fresh_reset_and_chains_do_not_import_networkx(world: Path, narr: CLI) -> None:
    for k in range(3):
        narr("event", f"Rest {k}", "--set", f"lin-yuan.state.mood=calm {k}")
    for args in (["reset", "HEAD~2"], ["reset", "HEAD~1", "--json"], ["chains"],
                 ["chains", "--json"]):
        out = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=world, capture_output=True,
                             text=True, env=_env())
        assert out.returncode == 0, (args, out.stderr)
        assert "networkx" not in out.stderr.strip().splitlines()[-1], (args, out.stderr)
    assert "(genesis)" in narr("log", "-n", "1").output  # the two resets moved the story
    assert [c["length"] for c in narr.json("chains")["items"]] == [3]


BAD_RECORDS = [
    {"created_at": None},  # a required field missing
    {"kind": "bogus"},
    {"edits": [{"target": "../etc", "field": "/state/mood", "new_value": 1}]},
    {"explicit": [{"op": "set", "target": "lin-yuan", "field": "state/mood", "value": 1}]},
    {"edits": [{"target": "lin-yuan", "field": "/state/x", "new_value": {"\ud800": 1}}]},
]


@pytest.mark.parametrize("bad", BAD_RECORDS, ids=["created_at", "kind", "edits",
                                                     "explicit", "surrogate"])
def test_a_hand_made_commit_with_a_bad_record_is_no_event_to_reset_to(
        world: Path, narr: CLI, bad: dict[str, Any]) -> None:
    """A stranger's commit whose record the model refuses: reset says it is not an event (one
    message, exit code of bad input, no traceback), and passing it by still works."""
    narr("event", "Rest", "--set", "lin-yuan.state.mood=calm")
    head = subprocess.run(["git", "cat-file", "commit", "HEAD"], cwd=world, capture_output=True,
                          text=True, check=True).stdout
    body = head.partition("\n\n")[2]
    data = records.decode_raw(body)
    assert data is not None
    data.update(bad)
    message = f"A forged event\n\n{records.MARKER}\n{json.dumps(data)}\n"
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=world, check=True)
    narr("event", "Later", "--set", "lin-yuan.state.mood=tired")
    out = subprocess.run([sys.executable, "-m", "narrative", "reset", "HEAD~1"], cwd=world,
                         capture_output=True, text=True, env=_env())
    assert out.returncode == InvalidInputError.exit_code, out.stderr
    assert "is not a narr event; reset to an event" in out.stderr
    assert "Traceback" not in out.stderr
    moved = narr.json("reset", "HEAD~2")
    assert moved["undone"][1] == {"commit": moved["undone"][1]["commit"], "id": None,
                                  "content": "A forged event"}
