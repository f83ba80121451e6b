"""The event pipeline on a world of dicts: the draft, screening and arbitration, no git involved.

The store's world and :class:`DictWorld` answer the same questions the same way
(checked on the sample world, hand edits included), so what holds here holds
for real worlds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from narrative.delta import overlay
from narrative.delta.arbiter import arbitrate
from narrative.delta.draft import Draft
from narrative.delta.proposal import Proposal
from narrative.delta.request import EventRequest
from narrative.delta.screen import review, screen
from narrative.delta.world import DictWorld
from narrative.ids import LAYERS
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
    Node,
    Op,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
    make_change,
)
from narrative.nodefile import NodeDict

SAMPLE = Path(__file__).resolve().parent.parent / "sample-world" / "world"
EVENT = "0193c7e2-0000-7000-8000-000000000001"


def sample_nodes() -> list[NodeDict]:
    return [json.loads(p.read_text("utf-8")) for p in sorted(SAMPLE.rglob("*.json"))]


def world(**kwargs: Any) -> DictWorld:
    return DictWorld(sample_nodes(), **kwargs)


def node(node_id: str, layer: str = "item", name: str | None = None, **extra: Any) -> Node:
    return Node.model_validate({"id": node_id, "layer": layer, "kind": "thing",
                                "name": name or node_id, "created_by_event": None, **extra})


def set_op(target: str, field: str, value: Any) -> SetOp:
    return SetOp(op="set", target=target, field=field, value=value)


# --- the draft -----------------------------------------------------------------------


def test_a_draft_records_what_it_changed_and_touches_only_that() -> None:
    w = world()
    draft = Draft(w, EVENT)
    draft.apply(Delta(ops=[set_op("lin-yuan", "/state/location", "ferry")]))
    draft.finish(close_scene=False)
    assert draft.problems == []
    changes = {(c.target, c.field, json.dumps(c.new_value)) for c in draft.diffusions()}
    assert ("lin-yuan", "/state/location", '"ferry"') in changes
    # the event-lifecycle bell ends with this event; nothing else is touched
    assert draft.expired == {"temple-bell": "event lifecycle"}
    assert set(draft.nodes) == {"lin-yuan", "temple-bell"}
    assert w.get("lin-yuan")["state"]["location"] == "qingyun-gate"  # the world is not changed


def test_closing_the_scene_ends_scene_nodes_and_the_relations_into_them() -> None:
    draft = Draft(world(), EVENT)
    draft.finish(close_scene=True)
    assert set(draft.expired) == {"autumn-rain", "ferry-crowd", "paper-lantern", "temple-bell"}
    old_zhou = draft.nodes["old-zhou"]
    assert old_zhou is not None and "paper-lantern" not in old_zhou["relations"].get("holds", {})


def test_trial_undoes_everything_a_refused_operation_did() -> None:
    draft = Draft(world(), EVENT)
    before = draft.checkpoint()
    reason = draft.trial(set_op("black-ring", "/aliases/5", "x"), "op 1")
    assert reason is not None and "no element 5" in reason
    after = draft.checkpoint()
    assert after == before
    assert draft.trial(set_op("black-ring", "/state/warmth", "warm"), "op 2") is None
    assert draft.nodes["black-ring"]["state"]["warmth"] == "warm"


def test_trial_with_a_check_rolls_back_when_the_check_objects() -> None:
    draft = Draft(world(), EVENT)
    assert draft.trial(set_op("lin-yuan", "/state/mood", "calm"), "op 1", lambda: "no") == "no"
    assert draft.nodes == {} and draft.changed == {}


def test_finish_names_hand_edited_files_whose_relations_now_dangle() -> None:
    lin = copy.deepcopy(next(n for n in sample_nodes() if n["id"] == "lin-yuan"))
    lin["relations"]["fears"] = {"temple-bell": {}}  # the bell ends with the next event
    w = world(edits={"lin-yuan": lin})
    draft = Draft(w, EVENT)
    draft.finish(close_scene=False)
    # the hand-edited node is not touched by the event, so its edge is the file's fault...
    assert draft.problems == []
    assert draft.edit_problems == []  # ...but expiry drops dangling edges of every source
    assert "temple-bell" not in draft.finals()["lin-yuan"]["relations"].get("fears", {})
    ghost = copy.deepcopy(lin)
    ghost["relations"]["fears"] = {"nobody-at-all": {}}
    draft = Draft(world(edits={"lin-yuan": ghost}), EVENT)
    draft.finish(close_scene=False)
    assert draft.edit_problems and "nobody-at-all" in draft.edit_problems[0]


def test_a_relation_to_a_missing_node_is_a_problem_of_the_delta() -> None:
    draft = Draft(world(), EVENT)
    draft.apply(Delta(ops=[RelateOp(op="relate", source="lin-yuan", type="knows", target="nobody")]))
    draft.finish(close_scene=False)
    assert any("nobody" in p for p in draft.problems)


# --- screening -----------------------------------------------------------------------


def test_a_refused_set_does_not_take_the_expire_after_it_down_too() -> None:
    """The set of a list element that does not exist is refused; the expire after it,
    alone valid, stays (it used to be refused as 'changed by proposed op 1')."""
    ops: list[Op] = [set_op("black-ring", "/aliases/5", "x"),
                     ExpireOp(op="expire", target="black-ring")]
    accepted, refused = screen(world(), ops, [])
    assert [r["index"] for r in refused] == [1]
    assert accepted == [ops[1]]
    alone, none = screen(world(), [ops[1]], [])
    assert alone == [ops[1]] and none == []


def test_screening_refuses_what_the_user_could_not_do_either_and_keeps_the_rest() -> None:
    ops: list[Op] = [
        set_op("lin-yuan", "/traits/speech", "loud"),                           # the baseline
        RelateOp(op="relate", source="lin-yuan", type="knows", target="nobody"),  # no such node
        RelateOp(op="relate", source="su-qing", type="owes", target="new-debt"),  # created later
        CreateOp(op="create", node=node("new-debt", name="A Debt")),
        set_op("old-zhou", "/state/mood", "cheerful"),
    ]
    accepted, refused = screen(world(), ops, [])
    assert [r["index"] for r in refused] == [1, 2]
    assert "traits" in refused[0]["reason"] and "nobody" in refused[1]["reason"]
    assert accepted == ops[2:]


def test_a_relation_waiting_for_a_refused_creation_is_refused_with_it() -> None:
    ops: list[Op] = [
        RelateOp(op="relate", source="su-qing", type="owes", target="new-debt"),
        CreateOp(op="create", node=node("new-debt", relations={"to": {"nobody": {}}})),
    ]
    accepted, refused = screen(world(), ops, [])
    assert accepted == [] and [r["index"] for r in refused] == [1, 2]


def test_expiring_the_target_of_a_relation_proposed_earlier_is_refused() -> None:
    """Found by the property below: the relation was accepted, then the expiry of its
    target, and the event as a whole failed where only the later guess should."""
    ops: list[Op] = [
        RelateOp(op="relate", source="autumn-rain", type="knows", target="ferry-crowd"),
        ExpireOp(op="expire", target="ferry-crowd"),
        ExpireOp(op="expire", target="temple-bell"),
    ]
    w = world()
    accepted, refused = screen(w, ops, [])
    assert accepted == [ops[0], ops[2]] and [r["index"] for r in refused] == [2]
    assert "relates to ferry-crowd" in refused[0]["reason"]
    draft = Draft(w, EVENT)
    draft.apply(Delta(ops=accepted), proposed=len(accepted))
    draft.finish(close_scene=False)
    assert draft.problems == []


def test_the_users_explicit_changes_win_over_the_proposal() -> None:
    explicit: list[Op] = [set_op("black-ring", "/state/warmth", "warm")]
    accepted, refused = screen(world(), [ExpireOp(op="expire", target="black-ring")], explicit)
    assert accepted == [] and "explicit" in refused[0]["reason"]


def test_review_keeps_only_causes_that_are_events_of_the_world() -> None:
    known = "0193c7e2-0000-7000-8000-00000000000a"
    unknown = "0193c7e2-0000-7000-8000-00000000000b"
    proposal = Proposal(delta=Delta(ops=[set_op("lin-yuan", "/state/mood", "calm")],
                                    causes=[known, unknown, "not-an-id"]))
    out = review(world(events=[known]), proposal, EventRequest(content="x"))
    assert out.delta.causes == [known]
    assert any(unknown in n for n in out.notes)


# --- arbitration ----------------------------------------------------------------------


def test_a_node_the_world_has_becomes_a_reference_and_fills_what_it_lacks() -> None:
    proposed = node("dark-ring", name="the Black Ring", state={"weight": "heavy", "colour": "red"})
    delta = Delta(ops=[CreateOp(op="create", node=proposed),
                       set_op("dark-ring", "/state/warmth", "warm")])
    out, decisions = arbitrate(world(), delta)
    assert [d.existing for d in decisions] == ["black-ring"]
    assert out.ops == [set_op("black-ring", "/state/weight", "heavy"),
                       set_op("black-ring", "/state/warmth", "warm")]


def test_a_taken_id_of_a_different_node_gets_the_next_free_one() -> None:
    delta = Delta(ops=[CreateOp(op="create", node=node("ferry", name="Ferry Ticket"))])
    out, decisions = arbitrate(world(), delta)
    assert decisions[0].created_as == "ferry-2"
    assert isinstance(out.ops[0], CreateOp) and out.ops[0].node.id == "ferry-2"


def test_names_made_by_hand_count_and_ending_nodes_do_not() -> None:
    hand = node("moon-pool", "background", "Moon Pool").model_dump(mode="json")
    w = world(edits={"moon-pool": hand})
    _, decisions = arbitrate(w, Delta(ops=[CreateOp(op="create", node=node(
        "pool-of-moon", "background", "The Moon Pool"))]))
    assert decisions[0].existing == "moon-pool"
    # the evening bell ends with this event: "the bell rings again" makes a new one
    _, decisions = arbitrate(w, Delta(ops=[CreateOp(op="create", node=node(
        "bell-2", "ambient", "Evening Bell"))]))
    assert decisions == []


# --- the overlay ----------------------------------------------------------------------


def test_recorded_hand_edits_are_laid_over_the_world_and_checked() -> None:
    w = world()
    change = make_change("lin-yuan", "/state/mood", "anxious", "calm")
    assert overlay.lay(w, [change]) == []
    assert w.get("lin-yuan")["state"]["mood"] == "calm"
    assert w.committed("lin-yuan")["state"]["mood"] == "anxious"
    stale = make_change("lin-yuan", "/state/mood", "furious", "calm")
    assert overlay.lay(world(), [stale])  # the old value does not match: a problem, no change


# --- an invariant of screening --------------------------------------------------------

IDS = [n["id"] for n in sample_nodes()] + ["nobody", "new-a", "new-b"]
ids = st.sampled_from(IDS)
fields = st.sampled_from(["/state/mood", "/state/x", "/traits/speech", "/aliases/0", "/aliases/9",
                          "/name", "/relations/knows/lin-yuan", "/id"])
values = st.one_of(st.text(max_size=5), st.integers(), st.none(), st.just({}))
ops_strategy = st.lists(st.one_of(
    st.builds(lambda t, f, v: SetOp(op="set", target=t, field=f, value=v), ids, fields, values),
    st.builds(lambda t, f: UnsetOp(op="unset", target=t, field=f), ids, fields),
    st.builds(lambda s, d: RelateOp(op="relate", source=s, type="knows", target=d), ids, ids),
    st.builds(lambda s, d: UnrelateOp(op="unrelate", source=s, type="holds", target=d), ids, ids),
    st.builds(lambda t: ExpireOp(op="expire", target=t), ids),
    st.builds(lambda i, layer: CreateOp(op="create", node=node(i, layer)),
              st.sampled_from(["new-a", "new-b", "lin-yuan"]), st.sampled_from(LAYERS)),
), max_size=8)


@given(ops_strategy, st.booleans())
def test_what_screening_accepts_applies_cleanly(ops: list[Op], close_scene: bool) -> None:
    """Whatever a diffuser proposes, the screened operations make a valid event."""
    w = world()
    accepted, refused = screen(w, ops, [])
    assert len(accepted) + len(refused) == len(ops)
    draft = Draft(w, EVENT)
    draft.apply(Delta(ops=accepted), proposed=len(accepted))
    assert draft.problems == []
    draft.finish(close_scene=close_scene)
    assert draft.problems == [] and draft.edit_problems == []


# --- the store's world answers as the dict world does ----------------------------------


def test_the_store_world_and_the_dict_world_agree(tmp_path: Path) -> None:
    from narrative.engine.init import init_world
    from narrative.store import worktree
    from narrative.store.view import WorldView
    from narrative.store.worldrepo import WorldRepo

    root = tmp_path / "w"
    init_world(root, sample=True)
    # hand edits: a rename, a new node, a deletion, a new relation
    lin = json.loads((root / "world/character/lin-yuan.json").read_text("utf-8"))
    lin["name"], lin["aliases"] = "Lin the Wanderer", ["流浪者"]
    lin["relations"]["fears"] = {"temple-bell": {}}
    (root / "world/character/lin-yuan.json").write_text(json.dumps(lin), encoding="utf-8")
    moon = node("moon-pool", "background", "Moon Pool", aliases=["月池"],
                relations={"near": {"ferry": {}}}).model_dump(mode="json")
    (root / "world/background/moon-pool.json").write_text(json.dumps(moon), encoding="utf-8")
    (root / "world/item/jade-token.json").unlink()
    edits: dict[str, NodeDict | None] = {"lin-yuan": lin, "moon-pool": moon, "jade-token": None}

    wr = WorldRepo.open(root)
    try:
        head = wr.head_commit()
        assert head is not None
        real = WorldView(wr, head.tree, worktree.scan(wr, head.tree))
        fake = world(edits=edits)
        assert set(real.edits) == set(fake.edits) == set(edits)
        for layer in LAYERS:
            assert sorted(real.names_in_layer(layer)) == sorted(fake.names_in_layer(layer)), layer
        norms = {"lin yuan", "lin the wanderer", "流浪者", "moon pool", "月池", "jade token", "the ferry",
                 "nobody"}
        assert real.ids_by_name(norms) == fake.ids_by_name(norms)
        for first in "lmj流月tx":
            assert real.name_reach(first) == fake.name_reach(first), first
        targets = {"ferry", "temple-bell", "jade-token", "lin-yuan", "library-pavilion"}
        assert real.incoming(targets) == fake.incoming(targets)
        for lifecycles in ({"event"}, {"event", "scene"}):
            assert real.transient(lifecycles) == fake.transient(lifecycles)
        for node_id in ("lin-yuan", "moon-pool", "jade-token", "ferry", "nobody"):
            assert real.get(node_id) == fake.get(node_id)
            assert real.exists(node_id) == fake.exists(node_id)
            assert real.committed_path(node_id) == fake.committed_path(node_id)
    finally:
        wr.close()
