"""Time travel as a user runs it: reset, set-aside edits, chains, replay, revert, branches, reflog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, edit_node, git, node_file, read_node, rel_path, snapshot, write_node

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


def world_files(root: Path) -> dict[str, str]:
    """Every file under world/ as text: what the user sees of the world."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted((root / "world").rglob("*.json"))}


def seed_6_4(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "black-ring.state.colour=value1")
    edit_node(world, "black-ring", colour="value2")
    narr("event", "E2", "--set", "black-ring.state.colour=value3")


def colour(world: Path) -> str:
    return str(read_node(world, "black-ring")["state"]["colour"])


def test_seed_6_4_step_by_step(narr: CLI, world: Path) -> None:
    seed_6_4(narr, world)
    out = narr.json("reset", "HEAD~1")
    assert colour(world) == "value2"  # undo E2: the user's edit is back
    assert out["restored_edits"] == [{"target": "black-ring", "field": "/state/colour",
                                      "old_value": "value1", "new_value": "value2"}]
    assert narr.json("status")["edits"][0]["new_value"] == "value2"
    assert git(world, "status", "--porcelain").strip() == \
        f"M {node_file(world, 'black-ring').relative_to(world).as_posix()}"
    narr("reset", "HEAD~1")
    assert colour(world) == "black"  # undo E1 too: the edit is gone from the world...
    assert narr.json("status")["edits"] == []
    assert narr.json("edits")["items"] == []  # ...it was recorded by E2, so it is not set aside again
    chain = narr.json("chains")["items"][0]
    assert chain["length"] == 2 and chain["last"]["content"] == "E2"
    abandoned_e2 = narr.json("show", chain["tip"])
    assert abandoned_e2["edits"][0]["new_value"] == "value2"  # ...and recoverable
    narr("replay", "1", "--reuse")
    assert colour(world) == "value3"
    assert narr("check").exit_code == 0


def test_reset_is_path_independent(tmp_path: Path, world: Path, narr: CLI) -> None:
    import shutil

    seed_6_4(narr, world)
    narr("event", "E3", "--set", "lin-yuan.state.mood=tired", "--unset", "lin-yuan.state.goal")
    twin = tmp_path / "twin"
    shutil.copytree(world, twin)
    narr("reset", "HEAD~1")
    narr("reset", "HEAD~1")
    CLI(twin)("reset", "HEAD~2")
    assert world_files(world) == world_files(twin)
    assert git(world, "rev-parse", "HEAD") == git(twin, "rev-parse", "HEAD")
    assert git(world, "status", "--porcelain") == git(twin, "status", "--porcelain")
    assert colour(world) == "value2"


def test_reset_by_event_id_and_prefix(narr: CLI, world: Path) -> None:
    first = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    narr("event", "E3", "--set", "lin-yuan.state.mood=c")
    narr("reset", first["id"])
    assert narr.json("log", "-n", "1")["items"][0]["id"] == first["id"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "a"
    narr("replay", "1", "--reuse")
    narr("reset", first["id"][:18])
    assert read_node(world, "lin-yuan")["state"]["mood"] == "a"


def test_reset_before_a_node_created_by_an_event(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "last-boat", "name": "The Last Boat", "layer": "item",
                                "relations": {"at": {"ferry": {}}}}), encoding="utf-8")
    narr("event", "Before the boat", "--set", "lin-yuan.state.mood=waiting")
    created = narr.json("event", "The last boat arrives", "--create", str(spec),
                        "--relate", "old-zhou:steers:last-boat")
    narr("event", "After the boat", "--set", "lin-yuan.state.mood=aboard")
    out = narr.json("reset", "--before", "last-boat")
    assert [u["id"] for u in out["undone"]][-1] == created["id"]
    assert "last-boat" not in {n["id"] for n in narr.json("nodes")["items"]}
    assert "steers" not in read_node(world, "old-zhou")["relations"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "waiting"
    assert narr("check").exit_code == 0


def test_reset_before_a_node_created_by_hand(narr: CLI, world: Path) -> None:
    narr("event", "E1")
    rel = rel_path(world, "peddler", "character")
    write_node(world, rel, {"id": "peddler", "name": "Peddler", "layer": "character"})
    narr("event", "A peddler appears")
    narr("event", "E3")
    narr("reset", "--before", "peddler")
    # just before the event that picked it up, the node was an uncommitted hand edit
    assert (world / rel).is_file()
    assert [e["target"] for e in narr.json("status")["edits"]] == ["peddler"]


def test_reset_before_a_node_named_by_its_name_through_every_door(world: Path, narr: CLI) -> None:
    """``before`` names a node as every argument does (its id, a name or an alias) through the
    operation too, not only on the command line."""
    from narrative.serve.mcp import WorldTools

    narr("event", "E1")
    write_node(world, rel_path(world, "peddler", "character"),
               {"id": "peddler", "name": "The Peddler", "layer": "character"})
    appears = narr.json("event", "A peddler appears")
    narr("event", "E3")
    tools = WorldTools(world)
    try:
        result = tools.call("reset", {"before": "The Peddler"})
    finally:
        tools.close()
    assert not result.is_error, result.content
    assert (result.structured_content or {})["undone"][-1]["id"] == appears["id"]


def test_reset_before_a_genesis_node_is_refused(narr: CLI, world: Path) -> None:
    narr("event", "E1")
    before = snapshot(world)
    err = narr("reset", "--before", "lin-yuan", expect=12).stderr
    assert "from its genesis" in err
    assert snapshot(world) == before


def test_reset_across_an_event_lifecycle_expiry_brings_the_node_back(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "E1")
    assert "temple-bell" in rec["expired"]
    assert "temple-bell" not in {n["id"] for n in narr.json("nodes")["items"]}
    narr("reset", "HEAD~1")
    assert read_node(world, "temple-bell")["lifecycle"] == "event"
    assert git(world, "status", "--porcelain") == ""


def test_reset_across_scene_close_brings_relations_back(narr: CLI, world: Path) -> None:
    narr("event", "He takes the lantern", "--relate", "lin-yuan:carries:paper-lantern")
    rec = narr.json("event", "The scene ends", "--close-scene")
    assert {"target": "lin-yuan", "field": "/relations/carries/paper-lantern",
            "old_value": {}} in rec["diffusions"]
    assert "carries" not in read_node(world, "lin-yuan")["relations"]
    narr("reset", "HEAD~1")
    assert read_node(world, "lin-yuan")["relations"]["carries"] == {"paper-lantern": {}}
    assert read_node(world, "autumn-rain")["relations"]["over"] == {"ferry": {}, "qingyun-gate": {}}
    assert narr("check").exit_code == 0


def test_uncommitted_edits_are_set_aside_and_restored(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    edit_node(world, "old-zhou", mood="suspicious")
    node_file(world, "jade-token").write_text("{ not json", encoding="utf-8")
    out = narr.json("reset", "HEAD~1")
    assert out["set_aside"]
    assert read_node(world, "old-zhou")["state"]["mood"] == "tired"
    assert read_node(world, "jade-token")["name"] == "Jade Token"
    items = narr.json("edits")["items"]
    assert len(items) == 1
    assert items[0]["changes"] == [{"target": "old-zhou", "field": "/state/mood",
                                    "old_value": "tired", "new_value": "suspicious"}]
    assert items[0]["raw_files"] == [node_file(world, "jade-token").relative_to(world).as_posix()]
    narr("edits", "restore", "1")
    assert read_node(world, "old-zhou")["state"]["mood"] == "suspicious"
    assert node_file(world, "jade-token").read_text(encoding="utf-8") == "{ not json"
    assert narr.json("edits")["items"][0]["restored_at"]


def test_restore_refuses_collisions_unless_forced(narr: CLI, world: Path) -> None:
    narr("event", "E1")
    edit_node(world, "old-zhou", mood="suspicious")
    narr("reset", "HEAD", "--hard")
    assert read_node(world, "old-zhou")["state"]["mood"] == "tired"
    edit_node(world, "old-zhou", mood="asleep")
    before = snapshot(world)
    result = narr("edits", "restore", "1", expect=14)
    assert "changed since these edits were set aside" in result.stderr
    assert snapshot(world) == before
    out = narr.json("edits", "restore", "1", "--force")
    assert out["set_aside"]  # "asleep" was set aside before being overwritten
    assert read_node(world, "old-zhou")["state"]["mood"] == "suspicious"
    kept = narr.json("edits")["items"]
    assert {c["new_value"] for i in kept for c in i["changes"]} == {"suspicious", "asleep"}


def test_keep_edits_carries_them_over_and_lists_collisions(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    edit_node(world, "lin-yuan", mood="mine")
    edit_node(world, "old-zhou", mood="curious")
    out = narr.json("reset", "HEAD~1", "--keep-edits")
    assert out["set_aside"] is None
    assert read_node(world, "lin-yuan")["state"]["mood"] == "mine"
    assert read_node(world, "old-zhou")["state"]["mood"] == "curious"
    assert out["collisions"] == [{"target": "lin-yuan", "field": "/state/mood", "base": "b",
                                  "current": "a", "yours": "mine"}]


def test_hard_reset_gives_exactly_the_committed_world(narr: CLI, world: Path) -> None:
    seed_6_4(narr, world)
    out = narr.json("reset", "HEAD~1", "--hard")
    assert out["restored_edits"] == []
    assert colour(world) == "value1"
    assert git(world, "status", "--porcelain") == ""


def test_abandoned_chain_survives_gc(narr: CLI, world: Path) -> None:
    tip = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")["commit"]
    narr("reset", "HEAD~1")
    refs = git(world, "for-each-ref", "--format=%(refname) %(objectname)", "refs/narr/abandoned/")
    assert tip in refs
    git(world, "reflog", "expire", "--expire=now", "--all")
    git(world, "gc", "--prune=now", "--quiet")
    git(world, "cat-file", "-e", tip)
    git(world, "fsck", "--strict")


def test_a_chain_kept_already_is_not_kept_twice(narr: CLI, world: Path) -> None:
    """Back on an abandoned chain (git moved HEAD there) and undoing again: the chain that
    holds those events is the one kept, not a second ref naming them."""
    first = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")["commit"]
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    narr("event", "E3", "--set", "lin-yuan.state.mood=c")
    narr("reset", "HEAD~3")
    kept = git(world, "for-each-ref", "--format=%(refname)", "refs/narr/abandoned/").split()
    assert len(kept) == 1
    git(world, "reset", "-q", "--hard", first)  # E1, two events below the kept tip
    out = narr.json("reset", "HEAD~1")
    assert out["abandoned"] is None
    assert git(world, "for-each-ref", "--format=%(refname)", "refs/narr/abandoned/").split() == kept
    narr("event", "E4", "--set", "lin-yuan.state.mood=d")
    assert narr.json("reset", "HEAD~1")["abandoned"] is not None  # a new event: a new chain
    assert narr("check").exit_code == 0


def test_replay_onto_a_moved_story_line(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a", "--relate", "lin-yuan:trusts:old-zhou")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("reset", "HEAD~2")
    narr("event", "Meanwhile", "--set", "su-qing.state.mood=bored")
    out = narr.json("replay", "1", "--reuse")
    assert out["fast_forward"] is False
    assert [e["content"] for e in out["events"]] == ["E1", "E2"]
    assert all(e["replay_of"] for e in out["events"])
    assert read_node(world, "lin-yuan")["state"]["mood"] == "a"
    assert read_node(world, "lin-yuan")["relations"]["trusts"] == {"old-zhou": {}}
    assert read_node(world, "su-qing")["state"]["mood"] == "bored"
    assert [e["content"] for e in narr.json("log")["items"]][:3] == ["E2", "E1", "Meanwhile"]
    assert narr("check").exit_code == 0


def test_replay_stops_at_the_first_conflict_with_three_values(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("event", "E3", "--set", "lin-yuan.state.health=hurt")
    narr("reset", "HEAD~3")
    narr("event", "Meanwhile", "--set", "black-ring.state.warmth=hot")
    result = narr("replay", "1", "--reuse", "--json", expect=14)
    data = json.loads(result.stdout)
    assert [e["content"] for e in data["events"]] == ["E1"]  # replayed before the conflict
    assert data["conflict"]["conflicts"] == [{
        "event": data["conflict"]["conflicts"][0]["event"], "content": "E2", "kind": "diffusion",
        "target": "black-ring", "field": "/state/warmth", "recorded_old": "cold",
        "recorded_new": "warm", "current": "hot"}]
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "E1"
    again = narr.json("replay", "1", "--reuse", expect=14)  # E1 is told already: not twice
    assert [e["content"] for e in again["events"]] == [] and "E2" in again["conflict"]["message"]
    assert [e["content"] for e in narr.json("log")["items"]][:2] == ["E1", "Meanwhile"]
    narr("reset", "HEAD~1")  # past the half replay: the chain may be told again
    text = narr("replay", "1", "--reuse", expect=14).stderr
    assert 'black-ring /state/warmth: recorded "cold" → "warm", now "hot"' in text


def test_a_chain_the_story_holds_a_replay_of_is_not_told_twice(narr: CLI, world: Path) -> None:
    """Replay, reset one event, replay the same chain number: its first event would be in
    the story twice. narr tells only what the story lacks, says so, and --again insists."""
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("reset", "HEAD~2")
    narr("replay", "1")
    narr("reset", "HEAD~1")
    out = narr.json("replay", "1")
    assert [e["content"] for e in out["events"]] == ["E2"]
    assert out["skipped"] == [] and any("'E1' is in the story already" in w for w in out["warnings"])
    contents = [e["content"] for e in narr.json("log")["items"]]
    assert contents.count("E1") == 1 and contents[:2] == ["E2", "E1"]
    before = narr.json("log")["items"]
    refused = narr.json("replay", "1", expect=16)  # all of it is told: nothing to do
    assert refused["type"] == "NothingToDoError" and "--again" in refused["hint"]
    assert narr.json("log")["items"] == before  # nothing written
    narr("reset", "HEAD~2")  # past the replay altogether: the chain may be told again
    assert [e["content"] for e in narr.json("replay", "1")["events"]] == ["E1", "E2"]
    narr("replay", "1", "--again")  # insisted on: told twice, as asked
    assert [e["content"] for e in narr.json("log")["items"]].count("E1") == 2
    assert narr("check").exit_code == 0


def test_a_replay_to_an_event_then_of_the_rest(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("reset", "HEAD~2")
    first = narr.json("chains")["items"][0]["first"]["id"]
    narr("replay", "1", "--to", first[-8:])
    assert [e["content"] for e in narr.json("replay", "1")["events"]] == ["E2"]
    contents = [e["content"] for e in narr.json("log")["items"]]
    assert contents[:2] == ["E2", "E1"] and contents.count("E1") == 1



def test_replay_through_the_diffuser_reruns_explicit_changes(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("reset", "HEAD~1")
    narr("event", "Meanwhile", "--set", "su-qing.state.mood=bored")
    out = narr.json("replay", "1", "--diffuser", "explicit")
    assert out["events"][0]["diffusions"] == [{"target": "lin-yuan", "field": "/state/mood",
                                               "old_value": "anxious", "new_value": "a"}]


def test_revert_undoes_one_event(narr: CLI, world: Path) -> None:
    target = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a", "--expire", "sister-letter")
    narr("event", "E2", "--set", "old-zhou.state.mood=happy")
    rec = narr.json("revert", target["id"])
    assert rec["reverts"] == target["id"] and rec["content"] == "Revert: E1"
    assert read_node(world, "lin-yuan")["state"]["mood"] == "anxious"
    assert read_node(world, "lin-yuan")["relations"]["holds"]["sister-letter"] == {}
    assert read_node(world, "sister-letter")["name"] == "Xue's Letter"
    assert read_node(world, "old-zhou")["state"]["mood"] == "happy"
    assert len(narr.json("log")["items"]) == 4  # genesis, E1, E2, the revert
    assert narr("check").exit_code == 0


def test_revert_refuses_when_a_field_changed_since(narr: CLI, world: Path) -> None:
    target = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    before = snapshot(world)
    result = narr("revert", target["id"], "--json", expect=14)
    err = json.loads(result.stderr)
    assert err["conflicts"] == [{"target": "lin-yuan", "field": "/state/mood", "event_wrote": "a",
                                 "current": "b"}]
    assert snapshot(world) == before


def test_branches_switch_and_set_aside(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("branch", "draft-b")
    narr("switch", "draft-b")
    narr("event", "On b", "--set", "lin-yuan.state.mood=b")
    assert {b["name"]: b["current"] for b in narr.json("branch")["items"]} == {"draft-b": True, "main": False}
    edit_node(world, "old-zhou", mood="grumpy")
    before = snapshot(world)
    err = narr("switch", "main", expect=14).stderr
    assert "uncommitted hand edits" in err and snapshot(world) == before
    out = narr.json("switch", "main", "--set-aside")
    assert out["set_aside"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "a"
    assert read_node(world, "old-zhou")["state"]["mood"] == "tired"
    narr("reset", "HEAD~1")  # a reset on main leaves draft-b alone
    narr("switch", "draft-b")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "b"
    narr("reset", "HEAD~1")  # reset on a non-default branch
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "E1"
    assert git(world, "rev-parse", "--abbrev-ref", "HEAD").strip() == "draft-b"
    assert narr("check").exit_code == 0


def test_deleting_a_branch_keeps_its_events(narr: CLI, world: Path) -> None:
    narr("switch", "-c", "side")
    tip = narr.json("event", "Side story", "--set", "lin-yuan.state.mood=odd")["commit"]
    narr("switch", "main")
    out = narr.json("branch", "-d", "side")
    assert out["kept_as"] and narr.json("chains")["items"][0]["tip"] == tip


def test_reflog_is_readable(narr: CLI, world: Path) -> None:
    narr("event", "E1")
    narr("reset", "HEAD~1")
    narr("switch", "-c", "b2")
    messages = [e["message"] for e in narr.json("reflog")["items"]]
    assert messages[0] == "checkout: moving from main to b2"
    assert messages[1].startswith("narr reset: moving to HEAD~1 (Genesis")
    assert messages[2] == "narr event: E1"
    assert "narr reset: moving to HEAD~1" in git(world, "reflog")


@pytest.mark.parametrize("args", [
    ["reset", "no-such-rev"],
    ["reset", "HEAD~5"],
    ["replay", "7"],
    ["revert", "HEAD~9"],
    ["switch", "nowhere"],
])
def test_bad_references_change_nothing(narr: CLI, world: Path, args: list[str]) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    edit_node(world, "old-zhou", mood="x")
    before = snapshot(world)
    result = narr(*args, expect=11)
    assert result.stderr.startswith("narr: error: ")
    assert snapshot(world) == before


def test_reset_past_genesis_says_so(narr: CLI, world: Path) -> None:
    narr("event", "E1")
    err = narr("reset", "HEAD~2", expect=11).stderr
    assert "only 1 event before HEAD" in err and "genesis cannot be undone" in err


def test_reset_while_another_process_writes(narr: CLI, world: Path) -> None:
    from narrative.store.worldrepo import WorldRepo

    narr("event", "E1")
    before = snapshot(world)
    wr = WorldRepo.open(world)
    with wr.lock:
        err = narr("reset", "HEAD~1", expect=15).stderr
        assert "another narr process" in err
    wr.close()
    assert snapshot(world) == before
