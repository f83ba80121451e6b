"""Merging story lines: three-way per node and per JSON field, conflicts, abort, fast-forward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, git, node_file, read_node, snapshot
from hypothesis import given
from hypothesis import strategies as st

from narrative import fields
from narrative.engine.merge import merge_node

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


def two_lines(narr: CLI, world: Path) -> None:
    """main and 'alt' from a common base, each with its own events."""
    narr("branch", "alt")
    narr("event", "Lin Yuan tires", "--set", "lin-yuan.state.mood=tired",
         "--relate", "lin-yuan:knows:old-zhou")
    narr("switch", "alt")
    (world / "lamp.json").write_text(json.dumps(
        {"id": "lamp", "name": "Lamp", "layer": "item", "summary": "An oil lamp."}), "utf-8")
    narr("event", "Su Qing lights a lamp", "--set", "su-qing.state.mood=calm",
         "--relate", "lin-yuan:owes:su-qing", "--create", str(world / "lamp.json"))
    (world / "lamp.json").unlink()
    narr("switch", "main")


def test_merge_without_conflicts(narr: CLI, world: Path) -> None:
    two_lines(narr, world)
    head = git(world, "rev-parse", "HEAD").strip()
    alt = git(world, "rev-parse", "alt").strip()
    out = narr.json("merge", "alt")
    assert not out["fast_forward"]
    record = out["record"]
    assert record["kind"] == "merge" and record["merged"] == "alt"
    assert {d["side"] for d in record["diffusions"]} == {"theirs"}
    assert {(d["target"], d["field"]) for d in record["diffusions"]} == {
        ("su-qing", "/state/mood"), ("lin-yuan", "/relations/owes/su-qing"), ("lamp", "")}
    parents = git(world, "rev-list", "--parents", "-n1", "HEAD").split()
    assert parents[1:] == [head, alt]  # HEAD first, the branch's tip second
    lin = read_node(world, "lin-yuan")
    assert lin["state"]["mood"] == "tired"  # ours
    assert "old-zhou" in lin["relations"]["knows"] and "su-qing" in lin["relations"]["owes"]
    assert read_node(world, "su-qing")["state"]["mood"] == "calm"  # theirs
    assert read_node(world, "lamp")["name"] == "Lamp"  # created on theirs
    report = narr.json("check")
    assert report["ok"], report["problems"]
    assert narr.json("status")["edits"] == []
    git(world, "fsck", "--no-progress")
    assert narr.json("show", "HEAD")["kind"] == "merge"
    narr("log")
    narr("event", "Afterwards", "--set", "lamp.state.lit=true")  # the story goes on
    assert narr.json("check")["ok"]
    narr("reset", "HEAD~2")  # undoing the merge goes back along the first parent
    assert git(world, "rev-parse", "HEAD").strip() == head
    assert narr.json("check")["ok"]


def test_merge_same_change_on_both_sides_is_no_conflict(narr: CLI, world: Path) -> None:
    narr("branch", "alt")
    narr("event", "Tired here", "--set", "lin-yuan.state.mood=tired")
    narr("switch", "alt")
    narr("event", "Tired there", "--set", "lin-yuan.state.mood=tired",
         "--set", "lin-yuan.state.goal=sleep")
    narr("switch", "main")
    out = narr.json("merge", "alt")
    assert [(d["field"], d["new_value"]) for d in out["record"]["diffusions"]] == [
        ("/state/goal", "sleep")]
    assert narr.json("check")["ok"]


def conflicting(narr: CLI) -> None:
    narr("branch", "alt")
    narr("event", "Here", "--set", "lin-yuan.state.mood=tired",
         "--set", "su-qing.state.mood=angry", "--set", "black-ring.state.colour=red")
    narr("switch", "alt")
    narr("event", "There", "--set", "lin-yuan.state.mood=elated",
         "--set", "su-qing.state.mood=calm", "--set", "black-ring.state.colour=blue",
         "--set", "old-zhou.state.mood=sleepy")
    narr("switch", "main")


def test_conflicts_resolved_with_ours_theirs_and_value(narr: CLI, world: Path) -> None:
    conflicting(narr)
    before = snapshot(world)
    err = json.loads(narr("merge", "alt", "--json", expect=14).stderr)
    assert err["type"] == "ConflictError"
    assert {(c["node"], c["field"], c["ours"], c["theirs"]) for c in err["conflicts"]} == {
        ("lin-yuan", "/state/mood", "tired", "elated"), ("su-qing", "/state/mood", "angry", "calm"),
        ("black-ring", "/state/colour", "red", "blue")}
    assert snapshot(world) == before  # nothing committed, the world untouched
    state = json.loads((world / ".git" / "narr" / "merge.json").read_text("utf-8"))
    assert state["branch"] == "alt" and len(state["conflicts"]) == 3
    narr("event", "Meanwhile", "--set", "lin-yuan.state.x=1", expect=14)  # refused mid-merge
    narr("switch", "alt", expect=14)
    assert any("narr merge is in progress" in w for w in narr.json("status")["warnings"])
    narr("merge", "--continue", expect=14)  # not all resolved
    listed = narr.json("conflicts")
    assert listed["unresolved"] == 3
    narr("resolve", "lin-yuan", "/state/mood", "--ours")
    narr("resolve", "su-qing", "/state/mood", "--theirs")
    narr("resolve", "nobody", "/state/mood", "--ours", expect=11)
    assert narr.json("resolve", "black-ring", "/state/colour", "--value", '"purple"')["unresolved"] == 0
    out = narr.json("merge", "--continue")
    sides = {(d["target"], d["field"]): d["side"] for d in out["record"]["diffusions"]}
    assert sides == {("su-qing", "/state/mood"): "resolved",
                     ("black-ring", "/state/colour"): "resolved",
                     ("old-zhou", "/state/mood"): "theirs"}
    assert read_node(world, "lin-yuan")["state"]["mood"] == "tired"
    assert read_node(world, "su-qing")["state"]["mood"] == "calm"
    assert read_node(world, "black-ring")["state"]["colour"] == "purple"
    assert read_node(world, "old-zhou")["state"]["mood"] == "sleepy"
    assert not (world / ".git" / "narr" / "merge.json").exists()
    assert narr.json("check")["ok"]
    narr("conflicts", expect=16)


def test_abort_leaves_everything_as_before(narr: CLI, world: Path) -> None:
    conflicting(narr)
    before = snapshot(world)
    narr("merge", "alt", expect=14)
    narr("merge", "alt", expect=14)  # one merge at a time
    assert narr.json("merge", "--abort")["aborted"]
    assert snapshot(world) == before
    assert not (world / ".git" / "narr" / "merge.json").exists()
    narr("merge", "--abort", expect=16)
    narr("event", "Free again", "--set", "lin-yuan.state.x=1")


def test_expired_on_one_side_changed_on_the_other(narr: CLI, world: Path) -> None:
    narr("branch", "alt")
    narr("event", "The lantern goes out for good", "--expire", "paper-lantern")
    narr("switch", "alt")
    narr("event", "The lantern flickers", "--set", "paper-lantern.state.lit=true")
    narr("switch", "main")
    err = json.loads(narr("merge", "alt", "--json", expect=14).stderr)
    assert [(c["node"], c["field"], "ours" in c) for c in err["conflicts"]] == [
        ("paper-lantern", "", False)]
    narr("resolve", "paper-lantern", "", "--ours")
    narr("merge", "--continue")
    assert narr.json("check")["ok"]


def test_fast_forward(narr: CLI, world: Path) -> None:
    narr("branch", "alt")
    narr("switch", "alt")
    narr("event", "Ahead", "--set", "lin-yuan.state.mood=tired")
    narr("switch", "main")
    out = narr.json("merge", "alt")
    assert out["fast_forward"]
    assert git(world, "rev-parse", "HEAD").strip() == git(world, "rev-parse", "alt").strip()
    assert read_node(world, "lin-yuan")["state"]["mood"] == "tired"
    assert narr.json("status")["edits"] == []
    narr("merge", "alt", expect=16)  # already up to date


def test_hand_edits_to_nodes_the_merge_changes_are_refused(narr: CLI, world: Path) -> None:
    two_lines(narr, world)
    edit_node(world, "su-qing", mood="wary")  # alt changes su-qing
    edit_node(world, "old-zhou", mood="grumpy")  # nobody else does
    before = snapshot(world)
    result = narr("merge", "alt", expect=14)
    assert "uncommitted hand edits to su-qing: merging alt changes that node" in result.stderr
    assert "old-zhou" not in result.stderr.splitlines()[0]
    assert "record them with an event" in result.stderr
    assert snapshot(world) == before
    # edits made while a merge is stopped are judged again at --continue
    narr("event", "Moods", "--set", "su-qing.state.mood=calmer")
    narr("merge", "alt", expect=14)  # a conflict on su-qing's mood: stopped
    narr("resolve", "su-qing", "/state/mood", "--ours")
    edit_node(world, "lin-yuan", mood="restless")
    assert "hand edits to lin-yuan" in narr("merge", "--continue", expect=14).stderr
    git(world, "checkout", "--", ".")
    edit_node(world, "old-zhou", mood="grumpier")
    assert "your hand edits to old-zhou stay uncommitted" in narr("merge", "--continue").stdout
    assert [e["target"] for e in narr.json("status")["edits"]] == ["old-zhou"]
    assert narr.json("check")["ok"]


# --- the property: different fields merge to base + both sides ---------------------------

BASE: dict[str, Any] = {"id": "n", "name": "N", "layer": "item", "state": {"a": 1, "b": {"c": 2}},
                        "relations": {"holds": {"x": {}}}}
FIELDS = ["/state/a", "/state/b/c", "/state/d", "/summary", "/relations/holds/y",
          "/relations/knows/z", "/relations/holds/x"]
VALUES = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.booleans(), st.none(),
                   st.just(fields.ABSENT))


def _applied(node: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(node))
    for ptr, value in changes.items():
        if ptr.startswith("/relations/"):
            value = {} if value is not fields.ABSENT else value
        if value is fields.ABSENT:
            fields.drop(out, ptr)
        else:
            fields.put(out, ptr, value)
    return out


@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=3),
       st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=3))
def test_merge_of_different_fields_is_base_plus_both(ours_set: dict[str, Any],
                                                    theirs_set: dict[str, Any]) -> None:
    theirs_set = {k: v for k, v in theirs_set.items() if k not in ours_set}
    ours, theirs = _applied(BASE, ours_set), _applied(BASE, theirs_set)
    merged, conflicts = merge_node("n", BASE, ours, theirs)  # type: ignore[arg-type]
    assert conflicts == []
    assert fields.same(merged, _applied(BASE, {**ours_set, **theirs_set}))


@pytest.mark.parametrize("equal", [True, False])
def test_created_on_both_sides(equal: bool) -> None:
    a = {"id": "n", "name": "N", "layer": "item", "created_by_event": "e1", "summary": "s"}
    b = {**a, "created_by_event": "e2", "summary": "s" if equal else "t"}
    merged, conflicts = merge_node("n", None, a, b)  # type: ignore[arg-type]
    assert merged == a
    assert [(c.field, c.ours, c.theirs) for c in conflicts] == ([] if equal else [("/summary", "s", "t")])


# --- a plain git merge, explained and turned into a merge event --------------------------


@pytest.mark.parametrize("events_after", [0, 1])
def test_check_explains_a_plain_git_merge_and_its_fix_works(flat_world: Path,
                                                            events_after: int) -> None:
    import shlex

    narr = CLI(flat_world)
    two_lines(narr, flat_world)
    git(flat_world, "merge", "--quiet", "--no-edit", "alt")  # a line merge: no event explains it
    merged_by_git = {k: v for k, v in snapshot(flat_world).items() if k.startswith("world/")}
    if events_after:
        narr("event", "After the merge", "--set", "lamp.state.lit=true")
    report = json.loads(narr("check", "--json", expect=17).stdout)
    [problem] = report["problems"]
    assert "plain git merge of alt" in problem["problem"]
    assert problem["fix"][1] == "narr merge alt" and len(problem["fix"]) == 2 + events_after
    assert "narr reset" in narr("check", expect=17).stderr  # the hint gives the commands
    for command in problem["fix"]:
        narr(*shlex.split(command)[1:])
    assert narr.json("check")["ok"]
    assert narr.json("show", "HEAD~" + str(events_after))["kind"] == "merge"
    now = {k: v for k, v in snapshot(flat_world).items() if k.startswith("world/")}
    if events_after:
        assert read_node(flat_world, "lamp")["state"]["lit"] is True
    else:
        assert now == merged_by_git  # the same world, now explained
    assert narr.json("status")["edits"] == []


# --- nodes both lines created -------------------------------------------------------------


def _create(narr: CLI, world: Path, content: str, node: dict[str, Any], *extra: str) -> None:
    path = world.parent / f"{node['id']}.json"
    path.write_text(json.dumps(node), "utf-8")
    narr("event", content, "--create", str(path), *extra)
    path.unlink()


def test_one_name_created_on_both_sides_is_one_node(narr: CLI, world: Path) -> None:
    narr("branch", "alt")
    _create(narr, world, "A lamp here", {
        "id": "lamp", "name": "Lamp", "layer": "item", "state": {"lit": False},
        "relations": {"near": {"lin-yuan": {}}, "lights": {"ferry": {"how": "dimly"}}}})
    narr("switch", "alt")
    _create(narr, world, "A lamp there", {
        "id": "oil-lamp", "name": "Oil lamp", "aliases": ["lamp"], "layer": "item",
        "state": {"fuel": "oil"},
        "relations": {"near": {"su-qing": {}}, "lights": {"ferry": {"how": "brightly"}}}},
        "--relate", "su-qing:carries:oil-lamp")
    narr("switch", "main")
    err = json.loads(narr("merge", "alt", "--json", expect=14).stderr)
    assert [(c["node"], c["field"], "base" in c, c["ours"], c["theirs"]) for c in err["conflicts"]] == [
        ("lamp", "/relations/lights/ferry", False, {"how": "dimly"}, {"how": "brightly"})]
    narr("resolve", "lamp", "/relations/lights/ferry", "--theirs")
    out = narr.json("merge", "--continue")
    assert out["joined"] == [{"theirs": "oil-lamp", "ours": "lamp", "name": "Lamp"}]
    lamp = read_node(world, "lamp")
    assert lamp["name"] == "Lamp" and lamp["aliases"] == ["Oil lamp"]  # ours; theirs an alias
    assert lamp["state"] == {"lit": False, "fuel": "oil"}
    assert lamp["relations"] == {"near": {"lin-yuan": {}, "su-qing": {}},
                                 "lights": {"ferry": {"how": "brightly"}}}
    assert read_node(world, "su-qing")["relations"]["carries"] == {"lamp": {}}  # rewritten
    narr("get", "oil-lamp", expect=11)
    assert narr.json("check")["ok"]
    assert out["record"]["joined"] == {"oil-lamp": "lamp"}  # kept for the merges to come
    # alt, which never took the merge, changes its lamp again under its own id: a second
    # merge brings those changes to ours field by field, relations to it included
    narr("event", "Lit", "--set", "lamp.state.lit=true")
    narr("switch", "alt")
    narr("event", "More oil", "--set", "oil-lamp.state.fuel=whale oil", "--set",
         "oil-lamp.aliases=[\"lamp\", \"lantern\"]", "--relate", "old-zhou:eyes:oil-lamp")
    narr("switch", "main")
    again = narr.json("merge", "alt")
    assert again["joined"] == [] and "joined" not in again["record"]
    lamp = read_node(world, "lamp")
    assert lamp["state"] == {"lit": True, "fuel": "whale oil"}
    assert lamp["aliases"] == ["Oil lamp", "lantern"]
    assert read_node(world, "old-zhou")["relations"]["eyes"] == {"lamp": {}}
    narr("get", "oil-lamp", expect=11)
    assert narr.json("check")["ok"]


def test_created_on_both_sides_merges_edge_by_edge() -> None:
    a = {"id": "n", "name": "N", "layer": "item", "state": {"x": 1},
         "relations": {"knows": {"a": {}}, "trusts": {"c": {"since": 1}}}}
    b = {"id": "n", "name": "N", "layer": "item", "state": {"y": 2},
         "relations": {"knows": {"b": {}}, "trusts": {"c": {"since": 2}}}}
    merged, conflicts = merge_node("n", None, a, b)  # type: ignore[arg-type]
    assert [(c.field, c.base, c.ours, c.theirs) for c in conflicts] == [
        ("/relations/trusts/c", fields.ABSENT, {"since": 1}, {"since": 2})]
    assert merged is not None
    assert merged["state"] == {"x": 1, "y": 2}
    assert merged["relations"]["knows"] == {"a": {}, "b": {}}


# --- a merge in the history: why, history, revert, reset ------------------------------------


def test_why_history_revert_and_reset_of_a_merge(narr: CLI, world: Path) -> None:
    two_lines(narr, world)
    before = {k: v for k, v in snapshot(world).items() if k.startswith("world/")}
    merge = narr.json("merge", "alt")["record"]
    why = narr.json("why", "su-qing", "state.mood")
    assert (why["event"]["kind"], why["new_value"]) == ("merge", "calm")
    assert why["merged_from"]["content"] == "Su Qing lights a lamp"
    ours = narr.json("why", "lin-yuan", "state.mood")
    assert ours["event"]["content"] == "Lin Yuan tires" and ours["merged_from"] is None
    history = narr.json("history", "su-qing")["events"]
    assert [(e["kind"], [c["field"] for c in e["changes"]]) for e in history] == [
        ("merge", ["/state/mood", "/relations/owes/su-qing"])]
    reverted = narr.json("revert", "HEAD")  # undoes what the merge brought, as git revert -m 1
    assert reverted["reverts"] == merge["id"]
    assert {(d["target"], d["field"]) for d in reverted["diffusions"]} == {
        (d["target"], d["field"]) for d in merge["diffusions"]}
    assert {k: v for k, v in snapshot(world).items() if k.startswith("world/")} == before
    assert narr.json("check")["ok"]
    narr("merge", "alt", expect=16)  # its events are in the story line already
    narr("revert", "HEAD~1", expect=16)  # the merge is undone already
    narr("reset", "HEAD~1")  # back across the revert: the merged world again
    assert read_node(world, "su-qing")["state"]["mood"] == "calm"
    narr("reset", "HEAD~1")  # back across the merge: the first parent
    assert {k: v for k, v in snapshot(world).items() if k.startswith("world/")} == before
    assert narr.json("check")["ok"]
    assert len(narr.json("chains")["items"]) == 1  # the merge and its revert are kept


def test_a_name_two_nodes_carry_is_not_joined() -> None:
    from narrative.engine.merge import _joins

    def lamp(node_id: str, name: str) -> dict[str, Any]:
        return {"id": node_id, "name": name, "layer": "item"}

    worlds: dict[str, dict[str, Any]] = {
        "base": {}, "ours": {"lamp": lamp("lamp", "Lamp"), "cup": lamp("cup", "Cup")},
        "theirs": {"oil-lamp": lamp("oil-lamp", "the lamp"), "lantern": lamp("lantern", "LAMP"),
                   "mug": lamp("mug", "cup")}}

    def node(which: str, node_id: str) -> Any:
        return worlds[which].get(node_id)

    assert _joins({"lamp", "cup"}, {"oil-lamp", "lantern", "mug"}, node) == {"mug": "cup"}


CREATED: dict[str, Any] = {"id": "n", "name": "N", "layer": "item", "state": {}, "relations": {}}
CREATED_FIELDS = ["/state/a", "/state/d", "/summary", "/relations/holds/y", "/relations/knows/z",
                  "/kind"]


@given(st.dictionaries(st.sampled_from(CREATED_FIELDS), VALUES, max_size=3),
       st.dictionaries(st.sampled_from(CREATED_FIELDS), VALUES, max_size=3))
def test_created_on_both_sides_with_different_fields_is_both(ours_set: dict[str, Any],
                                                            theirs_set: dict[str, Any]) -> None:
    theirs_set = {k: v for k, v in theirs_set.items() if k not in ours_set}
    ours, theirs = _applied(CREATED, ours_set), _applied(CREATED, theirs_set)
    merged, conflicts = merge_node("n", None, ours, theirs)  # type: ignore[arg-type]
    assert conflicts == []
    assert fields.same(merged, _applied(CREATED, {**ours_set, **theirs_set}))


def test_one_id_created_on_both_sides_conflicts_edge_by_edge(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("branch", "alt")
    _create(narr, flat_world, "A lamp here", {
        "id": "lamp", "name": "Lamp", "layer": "item",
        "relations": {"near": {"lin-yuan": {}}, "lights": {"ferry": {"how": "dimly"}}}})
    narr("switch", "alt")
    _create(narr, flat_world, "A lamp there", {
        "id": "lamp", "name": "Lamp", "layer": "item",
        "relations": {"near": {"su-qing": {}}, "lights": {"ferry": {"how": "brightly"}}}})
    narr("switch", "main")
    err = json.loads(narr("merge", "alt", "--json", expect=14).stderr)
    assert err["conflicts"] == [{"node": "lamp", "field": "/relations/lights/ferry",
                                 "ours": {"how": "dimly"}, "theirs": {"how": "brightly"}}]
    narr("resolve", "lamp", "/relations/lights/ferry", "--value", '{"how": "warmly"}')
    out = narr.json("merge", "--continue")
    assert out["joined"] == []
    assert read_node(flat_world, "lamp")["relations"] == {
        "near": {"lin-yuan": {}, "su-qing": {}}, "lights": {"ferry": {"how": "warmly"}}}
    assert narr.json("check")["ok"]


def test_hand_edits_that_would_dangle_after_a_fast_forward_are_refused(narr: CLI,
                                                                         world: Path) -> None:
    narr("branch", "alt")
    narr("switch", "alt")
    narr("event", "Old Zhou leaves for good", "--expire", "old-zhou")
    narr("switch", "main")
    su = read_node(world, "su-qing")
    su["relations"]["watches"] = {"old-zhou": {}}  # an edit to a node alt leaves alone...
    node_file(world, "su-qing").write_text(json.dumps(su), "utf-8")
    before = snapshot(world)
    err = narr("merge", "alt", expect=14).stderr  # ...pointing at the node alt ends
    assert "hand edits to su-qing" in err
    assert snapshot(world) == before
