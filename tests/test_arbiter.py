"""Arbitration: a node a diffuser wants to create that the world already has becomes a
reference to the existing node, never a second node; the decision is printed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, read_node, rel_path, snapshot, write_node
from hypothesis import given
from hypothesis import strategies as st

from narrative.delta.arbiter import key, likeness
from narrative.diffusers.base import Proposal
from narrative.model import CreateOp, Delta, ExpireOp, Node, Op, RelateOp, SetOp


class Scripted:
    """A diffuser that proposes exactly the operations a test gives it."""

    name = "scripted"

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops

    def propose(self, view: Any, request: Any) -> Proposal:
        return Proposal(delta=Delta.model_construct(ops=list(self.ops)))


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    from narrative.diffusers import base

    ops: list[Op] = []

    def use(*given: Op) -> None:
        ops[:] = given

    monkeypatch.setitem(base._REGISTRY, "scripted", lambda wr: Scripted(ops))
    yield use


def create(node_id: str, name: str, layer: str = "character", **more: Any) -> CreateOp:
    return CreateOp(op="create", node=Node(id=node_id, name=name, layer=layer, **more))  # type: ignore[arg-type]


# --- how names are compared ------------------------------------------------------------------


def test_likeness() -> None:
    assert key("The  Crowd") == "crowd" and key("ＬＩＮ Yuan") == "lin yuan"
    assert likeness("qinyun sect", "qingyun sect") == (pytest.approx(1.957, abs=1e-3),
                                                       "'qinyun sect' is close to 'qingyun sect' (0.96)")
    # a letter off in a short word is another name, not a typo
    for a, b in [("old zhu", "old zhou"), ("lin yun", "lin yuan"), ("su qin", "su qing"),
                 ("lin xu", "lin xue"), ("su qiang", "su qing")]:
        assert likeness(a, b) is None, (a, b)
    assert key("Su-Qing") == key("Su Qing") == key("Su\u2013Qing") == key("Su\u2010Qing")
    for a, b in [("black ring box", "black ring"), ("jade token fragment", "jade token"),
                 ("su qing and lin yuan", "lin yuan"), ("elder mo jr", "elder mo"),
                 ("fake black ring", "black ring"), ("young old zhou", "old zhou")]:
        assert likeness(a, b) is None, (a, b)
    assert likeness("crowd at ferry", "crowd at cold river ferry") == (
        2.0, "'crowd at ferry' within 'crowd at cold river ferry'")
    assert likeness("雨", "雨") == (3.0, "same name '雨'")
    assert likeness("su qing", "su ping") is None  # 0.86: two people
    assert likeness("秋雨", "雨") is None
    assert likeness("lin", "lin xue") is None  # one word inside a name is not the name


# --- the sample rules ------------------------------------------------------------------------


def test_a_crowd_already_there_is_not_created_twice(narr: CLI, world: Path) -> None:
    narr("event", "A first beat")
    before = snapshot(world)
    rec = narr.json("event", "A crowd gathers at the ferry")
    assert rec["diffusions"] == [] and rec["created"] == []
    assert rec["proposal"]["arbitration"] == [{
        "proposed": "crowd-ferry", "name": "Crowd at Cold River Ferry", "decision": "reference",
        "existing": "ferry-crowd", "how": "'crowd at ferry' within 'crowd at cold river ferry'",
        "merged": []}]
    assert rec["proposal"]["ops"] == [
        {"op": "relate", "source": "ferry-crowd", "type": "at", "target": "ferry", "attrs": {}}]
    assert [op["op"] for op in rec["proposal"]["proposed"]] == ["create", "relate"]
    ambient = narr.json("nodes", "--layer", "ambient")["items"]
    assert {n["id"] for n in ambient} == {"autumn-rain", "ferry-crowd"}
    # the event is still recorded; only the history moved
    changed = {k for k in snapshot(world) if snapshot(world)[k] != before.get(k)}
    assert all(k.startswith(".git/") for k in changed)


def test_what_the_proposal_adds_is_merged_into_the_existing_node(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "It starts to rain over the library")
    assert rec["proposal"]["arbitration"] == [{
        "proposed": "rain", "name": "Rain", "decision": "reference", "existing": "autumn-rain",
        "how": "same name 'rain'", "merged": []}]
    assert rec["diffusions"][0] == {"target": "autumn-rain", "field": "/relations/over/library-pavilion",
                                    "new_value": {}}
    out = narr("event", "It starts to rain over the library", "--dry-run").stdout
    assert ("  arbiter: not creating rain ('Rain'): it is autumn-rain ('Autumn Rain'), same name "
            "'rain'; later changes go to autumn-rain") in out.splitlines()


def test_nodes_this_event_ends_are_not_candidates(narr: CLI, world: Path) -> None:
    # the evening bell (an event node from genesis) ends with this event: a new bell rings
    rec = narr.json("event", "The bell rings")
    assert rec["created"] == ["bell"] and rec["proposal"]["arbitration"] == []
    assert rec["expired"] == {"temple-bell": "event lifecycle"}


def test_an_id_taken_by_a_different_node_gets_a_fresh_id(narr: CLI, world: Path) -> None:
    write_node(world, rel_path(world, "rain", "character"), {
        "id": "rain", "name": "Little Rain", "layer": "character", "kind": "person"})
    narr("event", "The next day")  # the autumn rain ends with the scene
    rec = narr.json("event", "It starts to rain")
    assert rec["created"] == ["rain-2"]
    assert rec["proposal"]["arbitration"] == [{
        "proposed": "rain", "name": "Rain", "decision": "renamed", "created_as": "rain-2",
        "how": "the id rain is taken by 'Little Rain' (character layer), a different node"}]
    assert read_node(world, "rain-2")["aliases"] == ["the rain", "雨"]
    assert narr.json("event", "The rain stops")["expired"] == {"rain-2": "expired by the event"}
    assert narr("check").exit_code == 0


# --- any diffuser ----------------------------------------------------------------------------


def test_a_close_spelling_is_the_same_node_and_later_ops_follow(flat_world: Path,
                                                                scripted: Callable[..., None]) -> None:
    narr = CLI(flat_world)
    scripted(create("qinyun-sect", "Qinyun Sect", "background", state={"mood": "wary"},
                    relations={"owes": {"lin-yuan": {}}}),
             SetOp(op="set", target="qinyun-sect", field="/state/standing", value="shaken"),
             RelateOp(op="relate", source="su-qing", type="watches", target="qinyun-sect"))
    rec = narr.json("event", "The sect closes its gates", "--diffuser", "scripted")
    assert rec["proposal"]["arbitration"] == [{
        "proposed": "qinyun-sect", "name": "Qinyun Sect", "decision": "reference",
        "existing": "qingyun-sect", "how": "'qinyun sect' is close to 'qingyun sect' (0.96)",
        "merged": ["/state/mood", "/relations/owes/lin-yuan"]}]
    assert rec["proposal"]["ops"] == [
        {"op": "set", "target": "qingyun-sect", "field": "/state/mood", "value": "wary"},
        {"op": "relate", "source": "qingyun-sect", "type": "owes", "target": "lin-yuan", "attrs": {}},
        {"op": "set", "target": "qingyun-sect", "field": "/state/standing", "value": "shaken"},
        {"op": "relate", "source": "su-qing", "type": "watches", "target": "qingyun-sect",
         "attrs": {}},
    ]
    sect = read_node(flat_world, "qingyun-sect")
    assert sect["state"]["standing"] == "shaken" and sect["state"]["mood"] == "wary"
    assert not (flat_world / "world" / "background" / "qinyun-sect.json").exists()


def test_a_name_a_letter_off_is_another_character(flat_world: Path,
                                                  scripted: Callable[..., None]) -> None:
    narr = CLI(flat_world)
    scripted(create("old-zhu", "Old Zhu", state={"location": "ferry"}))
    rec = narr.json("event", "A stranger arrives", "--diffuser", "scripted")
    assert rec["proposal"]["arbitration"] == []
    assert read_node(flat_world, "old-zhu")["name"] == "Old Zhu"


def test_two_creations_of_one_thing_make_one_node(flat_world: Path,
                                                  scripted: Callable[..., None]) -> None:
    narr = CLI(flat_world)
    scripted(create("last-boat", "The Last Boat", "item", relations={"at": {"ferry": {}}}),
             create("boat", "Last Boat", "item", aliases=["末班船"],
                    relations={"carries": {"old-zhou": {}}}),
             RelateOp(op="relate", source="old-zhou", type="steers", target="boat"))
    rec = narr.json("event", "The last boat", "--diffuser", "scripted")
    assert rec["created"] == ["last-boat"]
    assert rec["proposal"]["arbitration"][0]["existing"] == "last-boat"
    boat = read_node(flat_world, "last-boat")
    assert boat["relations"] == {"at": {"ferry": {}}, "carries": {"old-zhou": {}}}
    assert read_node(flat_world, "old-zhou")["relations"]["steers"] == {"last-boat": {}}


def test_a_node_the_proposal_expires_is_not_a_candidate(flat_world: Path,
                                                        scripted: Callable[..., None]) -> None:
    narr = CLI(flat_world)
    scripted(ExpireOp(op="expire", target="autumn-rain"),
             create("new-rain", "Rain", "ambient", aliases=["雨"], lifecycle="scene"))
    rec = narr.json("event", "The old rain gives way to a new one", "--diffuser", "scripted")
    assert rec["created"] == ["new-rain"] and rec["proposal"]["arbitration"] == []
    assert "autumn-rain" in rec["expired"]


def test_explicit_creations_are_the_users_choice(flat_world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "rain.json"
    spec.write_text(json.dumps({"id": "second-rain", "name": "Autumn Rain", "layer": "ambient"}))
    rec = CLI(flat_world).json("event", "Another rain", "--create", str(spec))
    assert rec["created"] == ["second-rain"]
    assert rec["proposal"]["arbitration"] == []


# --- names are indexed, not compared pair by pair -----------------------------------------------

WORDS = ["lin", "yuan", "qingyun", "qinyun", "qingyan", "sect", "crowd", "at", "cold", "river",
         "ferry", "ferries", "su", "qing", "black", "ring", "mountain", "mountains", "林远", "黑戒指",
         "and"]


@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
                min_size=1, max_size=30),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join))
def test_the_index_offers_every_key_a_name_is_like(keys: list[str], proposed: str) -> None:
    from narrative.delta.arbiter import _NameIndex

    alike = {k for k in keys if likeness(proposed, k) is not None}
    for direct in (1, 0):  # by length, then through rapidfuzz
        index = _NameIndex(direct)
        for i, k in enumerate(keys):
            index.add(k, f"n{i}")
        assert alike <= index.near(proposed)


def test_a_large_import_is_not_weighed_pair_by_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.delta import arbiter
    from narrative.delta.world import DictWorld

    first = ["Lin", "Su", "Mo", "Zhou", "Chen", "Wang", "Murong", "Ouyang", "Shangguan", "Zhuge"]
    given_names = ["Yuan", "Xue", "Qing", "Feng", "Yun", "Hua", "Ming", "Lan", "Jian", "Shuang",
                   "Xuanfeng", "Qiuyue", "Lingxue", "Chunhua", "Hanshan"]
    names = [f"{a} {b}" for a in first for b in given_names]  # 150
    world = DictWorld([{"id": f"n{i}", "name": n, "layer": "character"} for i, n in enumerate(names)])
    calls = 0
    compare = arbiter.Likeness.__call__

    def counted(self: Any, other: str) -> Any:
        nonlocal calls
        calls += 1
        return compare(self, other)

    monkeypatch.setattr(arbiter.Likeness, "__call__", counted)
    proposed = Delta(ops=[create(f"p{i}", f"{n}s" if i % 2 else n) for i, n in enumerate(names)])
    indexed = arbiter.arbitrate(world, proposed)
    indexed_calls, calls = calls, 0
    monkeypatch.setattr(arbiter._NameIndex, "near", lambda self, k: set(self.ids))  # every pair
    assert arbiter.arbitrate(world, proposed) == indexed  # the same decisions, the same delta
    assert len(indexed[1]) > 100 and indexed_calls * 20 < calls
