"""Guard rails for every diffuser: what it may not do is refused, shown, and the rest stands;
the user's explicit changes still fail the whole event when one of them is invalid."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, read_node, snapshot

from narrative.diffusers.base import Proposal
from narrative.model import CreateOp, Delta, ExpireOp, Node, Op, RelateOp, SetOp, UnsetOp

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

TRAITS_REASON = ("lin-yuan /traits/speech: traits are the node's baseline: only the user changes "
                 "them, by editing the file (narr edit lin-yuan); the next event records that edit")


class Scripted:
    """A diffuser that proposes exactly the operations a test gives it, checked or not."""

    name = "scripted"

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops

    def propose(self, view: Any, request: Any) -> Proposal:
        return Proposal(delta=Delta.model_construct(ops=list(self.ops)), notes=["scripted"])


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    from narrative.diffusers import base

    ops: list[Op] = []

    def use(*given: Op) -> None:
        ops[:] = given

    monkeypatch.setitem(base._REGISTRY, "scripted", lambda wr: Scripted(ops))
    yield use


def set_op(target: str, field: str, value: Any) -> SetOp:
    return SetOp(op="set", target=target, field=field, value=value)


def refused(rec: dict[str, Any]) -> list[tuple[int, str]]:
    return [(r["index"], r["reason"]) for r in rec["proposal"]["refused"]]


def test_traits_are_refused_and_the_rest_stands(narr: CLI, world: Path,
                                                scripted: Callable[..., None]) -> None:
    scripted(set_op("lin-yuan", "/traits/speech", "loud"), set_op("lin-yuan", "/state/mood", "calm"),
             UnsetOp(op="unset", target="qingyun-sect", field="/traits/motto"))
    traits = read_node(world, "lin-yuan")["traits"]
    rec = narr.json("event", "He speaks up", "--diffuser", "scripted")
    assert refused(rec) == [
        (1, TRAITS_REASON),
        (3, "qingyun-sect /traits/motto: traits are the node's baseline: only the user changes them, "
            "by editing the file (narr edit qingyun-sect); the next event records that edit")]
    assert rec["proposal"]["refused"][0]["op"] == {
        "op": "set", "target": "lin-yuan", "field": "/traits/speech", "value": "loud"}
    assert rec["proposal"]["refused"][0]["where"] == "proposed op 1 (set lin-yuan /traits/speech)"
    assert [(d["target"], d["field"]) for d in rec["diffusions"]] == [
        ("lin-yuan", "/state/mood"), ("temple-bell", "")]
    assert read_node(world, "lin-yuan")["traits"] == traits
    shown = narr.json("show")
    assert shown["diffuser"] == "scripted"


def test_refusals_are_printed(flat_world: Path, scripted: Callable[..., None]) -> None:
    scripted(set_op("lin-yuan", "/traits/speech", "loud"))
    out = CLI(flat_world)("event", "He speaks up", "--diffuser", "scripted").stdout.splitlines()
    assert out[-3:] == ["scripted:", "  scripted",
                        f"  refused proposed op 1 (set lin-yuan /traits/speech): {TRAITS_REASON}"]


def test_references_to_missing_nodes_are_refused(flat_world: Path,
                                                 scripted: Callable[..., None]) -> None:
    scripted(RelateOp(op="relate", source="lin-yuan", type="knows", target="ghost"),
             set_op("ghost", "/state/mood", "eerie"),
             ExpireOp(op="expire", target="ghost"),
             set_op("lin-yuan", "/relations/fears", {"ghost": {}}),
             set_op("lin-yuan", "/state/mood", "uneasy"))
    rec = CLI(flat_world).json("event", "A ghost story", "--diffuser", "scripted")
    assert refused(rec) == [
        (1, "lin-yuan would point at 'ghost': no such node in the world"),
        (2, "no node 'ghost' in the world"),
        (3, "no node 'ghost' in the world"),
        (4, "lin-yuan would point at 'ghost': no such node in the world"),
    ]
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "uneasy"


def test_unsafe_ids_never_reach_the_file_system(flat_world: Path,
                                                scripted: Callable[..., None]) -> None:
    outside = flat_world.parent / "outside.json"
    scripted(SetOp.model_construct(op="set", target="../../evil", field="/state/x", value=1),
             CreateOp.model_construct(op="create", node=Node.model_construct(
                 id="../outside", name="Evil", layer="item")),
             RelateOp.model_construct(op="relate", source="lin-yuan", type="a/b", target="su-qing",
                                      attrs={}),
             CreateOp.model_construct(op="create", node=Node.model_construct(
                 id="fine", name="Fine", layer="attic")),
             set_op("lin-yuan", "/state/mood", "wary"))
    rec = CLI(flat_world).json("event", "Mischief", "--diffuser", "scripted")
    reasons = refused(rec)
    assert [i for i, _ in reasons] == [1, 2, 3, 4]
    assert reasons[0][1].startswith("not a valid operation: target: ")
    assert "'../../evil' is not a safe slug" in reasons[0][1]
    assert reasons[1][1].startswith("not a valid operation: node/id: ")
    assert reasons[2][1].startswith("not a valid operation: type: ")
    assert reasons[3][1].startswith("not a valid operation: node/layer: ")
    assert not outside.exists() and not (flat_world / "evil").exists()
    assert sorted(p.name for p in (flat_world / "world").iterdir()) == [
        "ambient", "background", "character", "item"]
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "wary"


def test_a_refused_creation_takes_what_points_at_it_along(flat_world: Path,
                                                          scripted: Callable[..., None]) -> None:
    stranger = Node(id="stranger", name="A Stranger", layer="character",
                    relations={"knows": {"ghost": {}}})
    friend = Node(id="friend", name="A Friend", layer="character")
    scripted(RelateOp(op="relate", source="lin-yuan", type="watches", target="stranger"),
             CreateOp(op="create", node=stranger),
             RelateOp(op="relate", source="lin-yuan", type="greets", target="friend"),
             CreateOp(op="create", node=friend))
    rec = CLI(flat_world).json("event", "Two newcomers", "--diffuser", "scripted")
    assert refused(rec) == [
        (1, "no node 'stranger' in the world (its creation was refused)"),
        (2, "stranger would point at 'ghost': no such node in the world"),
    ]
    assert rec["created"] == ["friend"]
    assert read_node(flat_world, "lin-yuan")["relations"]["greets"] == {"friend": {}}


def test_bad_fields_are_refused(flat_world: Path, scripted: Callable[..., None]) -> None:
    scripted(set_op("lin-yuan", "/lifecycle", "forever"), set_op("lin-yuan", "/layer", "item"),
             set_op("lin-yuan", "/id", "someone"), set_op("lin-yuan", "/colour", "red"),
             ExpireOp(op="expire", target="old-zhou"), set_op("old-zhou", "/state/mood", "gone"))
    rec = CLI(flat_world).json("event", "Strange things", "--diffuser", "scripted")
    reasons = dict(refused(rec))
    assert reasons[1].startswith("node lin-yuan: field /lifecycle: Input should be ")
    assert reasons[2].startswith("lin-yuan /layer: a node's layer cannot change through a delta")
    assert reasons[3].startswith("lin-yuan /id: a node's id cannot change")
    assert reasons[4].startswith("lin-yuan /colour: 'colour' is not a node field")
    assert reasons[6] == "node 'old-zhou' is expired by this same event"
    assert 5 not in reasons and rec["expired"]["old-zhou"] == "expired by the event"


def test_the_users_explicit_changes_win_over_a_proposal(flat_world: Path,
                                                        scripted: Callable[..., None]) -> None:
    scripted(ExpireOp(op="expire", target="lin-yuan"),
             CreateOp(op="create", node=Node(id="guard", name="A Guard", layer="character")))
    narr = CLI(flat_world)
    (flat_world.parent / "guard.json").write_text(
        '{"id": "guard", "name": "Gate Guard", "layer": "character"}')
    rec = narr.json("event", "Lin Yuan meets the guard", "--diffuser", "scripted",
                    "--set", "lin-yuan.state.mood=alert", "--create", str(flat_world.parent / "guard.json"))
    assert refused(rec) == [
        (1, "the explicit changes of this event use lin-yuan; they win"),
        (2, "the explicit changes of this event create or expire guard; they win"),
    ]
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "alert"
    assert read_node(flat_world, "guard")["name"] == "Gate Guard"


def test_dry_run_shows_refusals_and_changes_nothing(narr: CLI, world: Path,
                                                    scripted: Callable[..., None]) -> None:
    scripted(set_op("lin-yuan", "/traits/speech", "loud"), set_op("lin-yuan", "/state/mood", "calm"))
    before = snapshot(world)
    rec = narr.json("event", "He speaks up", "--diffuser", "scripted", "--dry-run")
    assert rec["dry_run"] is True and refused(rec) == [(1, TRAITS_REASON)]
    assert rec["diffusions"][0] == {"target": "lin-yuan", "field": "/state/mood",
                                    "old_value": "anxious", "new_value": "calm"}
    assert snapshot(world) == before


def test_an_invalid_explicit_change_fails_everything(narr: CLI, world: Path,
                                                     scripted: Callable[..., None]) -> None:
    scripted(set_op("lin-yuan", "/state/mood", "calm"))
    before = snapshot(world)
    result = narr("event", "Bad", "--diffuser", "scripted", "--relate", "lin-yuan:knows:ghost",
                  expect=12)
    assert result.stderr.splitlines()[0] == (
        "narr: error: the event's changes are not valid: node lin-yuan: relation knows->ghost "
        "points at a node that does not exist")
    assert snapshot(world) == before
    # kept for --retry, with the diffuser it asked for
    failed = narr.json("status")["failed_events"]
    assert [f["content"] for f in failed] == ["Bad"]
