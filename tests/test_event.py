"""``narr event`` as a user runs it: explicit changes, hand edits, lifecycles, records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, edit_node, git, node_file, read_node, rel_path, write_node


def test_seed_example_6_4(narr: CLI, world: Path) -> None:
    """E1 sets N.field to value1; the user edits it to value2; E2 sets value3."""
    narr("event", "E1", "--set", "black-ring.state.colour=value1")
    edit_node(world, "black-ring", colour="value2")
    e2 = narr.json("event", "E2", "--set", "black-ring.state.colour=value3")
    assert e2["diffusions"] == [{"target": "black-ring", "field": "/state/colour",
                                 "old_value": "value2", "new_value": "value3"}]
    assert e2["edits"] == [{"target": "black-ring", "field": "/state/colour",
                            "old_value": "value1", "new_value": "value2"}]
    assert read_node(world, "black-ring")["state"]["colour"] == "value3"
    assert narr.json("show", "HEAD")["edits"] == e2["edits"]
    assert narr("check").stdout.startswith("ok: 2 events")


def test_issue_walkthrough(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry")
    edit_node(world, "black-ring", colour="jade")
    status = narr("status").stdout
    assert 'black-ring /state/colour: "black" → "jade"' in status
    assert narr.json("status")["edits"] == [{
        "target": "black-ring", "field": "/state/colour", "old_value": "black",
        "new_value": "jade", "path": node_file(world, "black-ring").relative_to(world).as_posix()}]
    rec = narr.json("event", "Su Qing notices the ring", "--relate", "su-qing:suspects:lin-yuan")
    assert rec["diffusions"] == [{"target": "su-qing", "field": "/relations/suspects/lin-yuan",
                                  "new_value": {}}]
    assert narr.json("status")["edits"] == []
    log = narr.json("log")["items"]
    assert [e["content"] for e in log] == [
        "Su Qing notices the ring", "Lin Yuan walks to the ferry",
        "Genesis: The Black Ring of Qingyun"]
    assert log[0]["commit"] == git(world, "rev-parse", "HEAD").strip()
    shown = narr.json("show", "HEAD")
    assert set(shown) >= {"commit", "id", "parent", "content", "diffusions", "edits",
                          "narrative_text", "timestamp", "created_at"}
    assert shown["parent"] == log[1]["id"]
    assert narr("get", "black-ring", "state.colour").stdout == "jade\n"
    assert narr.json("get", "black-ring", "/state/colour", "--at", "HEAD~1")["value"] == "black"
    assert git(world, "log", "--format=%s").splitlines() == [e["content"] for e in log]
    ring = node_file(world, "black-ring").relative_to(world).as_posix()
    blame = git(world, "blame", "--porcelain", "--", ring)
    head = git(world, "rev-parse", "HEAD").strip()
    assert any(line.startswith(head) for line in blame.splitlines())
    assert narr("check").exit_code == 0
    git(world, "fsck", "--strict")


def test_git_show_names_exactly_the_touched_files(narr: CLI, world: Path) -> None:
    narr("event", "Heavy rain", "--set", "autumn-rain.state.intensity=heavy",
         "--set", "lin-yuan.state.mood=wet")
    shown = set(git(world, "show", "--name-only", "--format=", "HEAD").split())
    # the evening bell (an event-lifecycle node) ended with this event, in the same commit
    assert shown == {rel_path(world, "autumn-rain", "ambient"), rel_path(world, "lin-yuan", "character"),
                     rel_path(world, "temple-bell", "ambient")}


def test_values_parse_as_json_or_text(narr: CLI, world: Path) -> None:
    narr("event", "Numbers", "--set", "lin-yuan.state.age=24", "--set", "lin-yuan.state.armed=true",
         "--set", 'lin-yuan.state.title="24"', "--set", "lin-yuan.state.note=hello world",
         "--set", "lin-yuan.state.tags=[1, 2]", "--set", "lin-yuan.state.none=null",
         "--set", "lin-yuan/state/a.b=dotted key")
    state = read_node(world, "lin-yuan")["state"]
    assert state["age"] == 24 and state["armed"] is True and state["title"] == "24"
    assert state["note"] == "hello world" and state["tags"] == [1, 2] and state["none"] is None
    assert state["a.b"] == "dotted key"


def test_nested_set_creates_objects_and_records_shallowest_change(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "Wounded", "--set", "lin-yuan.state.wounds.left_arm=deep cut")
    assert rec["diffusions"][0] == {"target": "lin-yuan", "field": "/state/wounds",
                                    "new_value": {"left_arm": "deep cut"}}


def test_unset_and_unrelate(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "He forgets his goal", "--unset", "lin-yuan.state.goal",
                    "--unrelate", "lin-yuan:distrusts:su-qing")
    assert {"target": "lin-yuan", "field": "/state/goal", "old_value": "find Lin Xue"} in rec["diffusions"]
    assert {"target": "lin-yuan", "field": "/relations/distrusts/su-qing",
            "old_value": {}} in rec["diffusions"]
    node = read_node(world, "lin-yuan")
    assert "goal" not in node["state"] and "distrusts" not in node["relations"]


def test_unset_of_absent_field_is_a_warning_not_an_error(narr: CLI) -> None:
    rec = narr.json("event", "Nothing", "--unset", "lin-yuan.state.nope")
    assert any("already absent" in w for w in rec["warnings"])


def test_relate_with_attributes(narr: CLI, world: Path) -> None:
    narr("event", "An alliance", "--relate", 'su-qing:allied-with:lin-yuan={"since": "the ferry"}')
    assert read_node(world, "su-qing")["relations"]["allied-with"] == {"lin-yuan": {"since": "the ferry"}}


def test_create_node_from_file(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "last-boat", "name": "The Last Boat", "layer": "item",
                                "kind": "boat", "aliases": ["末班船"], "lifecycle": "scene",
                                "relations": {"at": {"ferry": {}}}}), encoding="utf-8")
    rec = narr.json("event", "The last boat arrives", "--create", str(spec))
    node = read_node(world, "last-boat")
    assert node["created_by_event"] == rec["id"]
    assert rec["created"] == ["last-boat"]
    assert rec["diffusions"][0]["field"] == "" and "old_value" not in rec["diffusions"][0]
    assert rec["diffusions"][0]["new_value"] == node
    assert narr.json("get", "last-boat", "aliases")["value"] == ["末班船"]


def test_expire_removes_incoming_relations_as_diffusions(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "The ferry burns", "--expire", "ferry")
    assert rec["expired"]["ferry"] == "expired by the event"
    fields = {(d["target"], d["field"]) for d in rec["diffusions"]}
    assert ("ferry", "") in fields
    assert ("old-zhou", "/relations/works-at/ferry") in fields
    assert ("autumn-rain", "/relations/over/ferry") in fields
    assert "works-at" not in read_node(world, "old-zhou")["relations"]
    assert not node_file(world, "autumn-rain").read_text().count('"ferry"')
    assert narr("check").exit_code == 0


def test_event_lifecycle_expires_at_the_next_event(narr: CLI, world: Path, tmp_path: Path) -> None:
    spec = tmp_path / "shout.json"
    spec.write_text(json.dumps({"id": "a-shout", "name": "A Shout", "layer": "ambient",
                                "lifecycle": "event"}), encoding="utf-8")
    first = narr.json("event", "Someone shouts", "--create", str(spec))
    assert "temple-bell" in first["expired"]  # genesis' event node ends with the first event
    assert "a-shout" not in first["expired"]  # the new one lives until the next
    second = narr.json("event", "Silence")
    assert second["expired"] == {"a-shout": "event lifecycle"}
    assert narr.json("nodes", "--layer", "ambient")["items"] == [
        n for n in narr.json("nodes", "--layer", "ambient")["items"] if n["id"] != "a-shout"]


def test_close_scene_expires_scene_nodes(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "The boat leaves; the rain stops", "--close-scene",
                    "--diffuser", "explicit")
    assert rec["close_scene"] is True
    assert set(rec["expired"]) == {"autumn-rain", "ferry-crowd", "paper-lantern", "temple-bell"}
    assert all(rec["expired"][n] == "scene closed" for n in ("autumn-rain", "ferry-crowd"))
    ids = {n["id"] for n in narr.json("nodes")["items"]}
    assert not ids & {"autumn-rain", "ferry-crowd", "paper-lantern"}
    # what the scene did to other nodes stays
    assert narr("check").exit_code == 0


def test_lifecycle_changed_by_hand_is_respected(narr: CLI, world: Path) -> None:
    edit_node(world, "temple-bell", lifecycle="permanent")
    rec = narr.json("event", "The bell keeps ringing")
    assert "temple-bell" not in rec["expired"]


def test_text_at_and_delta_from_stdin(narr: CLI, world: Path) -> None:
    delta = {"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "grim"},
                     {"op": "relate", "source": "lin-yuan", "type": "owes", "target": "old-zhou",
                      "attrs": {"what": "a fare"}}],
             "causes": []}
    rec = narr.json("event", "He pays nothing", "--delta", "-", "--text", "Rain fell.",
                    "--story-time", "Day 3, dusk", input=json.dumps(delta))
    assert rec["narrative_text"] == "Rain fell." and rec["timestamp"] == "Day 3, dusk"
    assert read_node(world, "lin-yuan")["relations"]["owes"] == {"old-zhou": {"what": "a fare"}}
    text = narr("show").stdout
    assert "story time: Day 3, dusk" in text and "Rain fell." in text


def test_delta_file(narr: CLI, world: Path, tmp_path: Path) -> None:
    f = tmp_path / "d.json"
    f.write_text(json.dumps({"ops": [{"op": "expire", "target": "paper-lantern"}],
                             "close_scene": False}), encoding="utf-8")
    rec = narr.json("event", "The lantern goes out", "--delta", str(f))
    assert "paper-lantern" in rec["expired"]


def test_event_with_no_change_is_still_recorded(narr: CLI, world: Path) -> None:
    narr("event", "A first beat")  # expires the bell
    out = narr("event", "Nothing happens for a while").stdout
    assert "no change to the world" in out
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "Nothing happens for a while"


def test_dry_run_changes_nothing(narr: CLI, world: Path) -> None:
    from helpers import snapshot

    before = snapshot(world)
    rec = narr.json("event", "Maybe", "--set", "lin-yuan.state.mood=calm", "--dry-run")
    assert rec["commit"] is None and rec["dry_run"] is True
    assert rec["diffusions"][0]["new_value"] == "calm"
    assert snapshot(world) == before


def test_hand_created_and_deleted_nodes_are_edits(narr: CLI, world: Path) -> None:
    rel = narr("path", "peddler", "--layer", "character").stdout.strip()
    assert rel == rel_path(world, "peddler", "character")
    write_node(world, rel, {"id": "peddler", "name": "Peddler", "layer": "character",
                            "lifecycle": "scene"})
    node_file(world, "sister-letter").unlink()
    rec = narr.json("event", "A peddler appears; the letter is gone")
    edits = {(e["target"], e["field"]): e for e in rec["edits"]}
    assert "old_value" not in edits[("peddler", "")]
    assert edits[("peddler", "")]["new_value"]["name"] == "Peddler"
    assert "new_value" not in edits[("sister-letter", "")]
    # the letter was held by Lin Yuan: the dangling relation goes, recorded as a diffusion
    assert {"target": "lin-yuan", "field": "/relations/holds/sister-letter",
            "old_value": {}} in rec["diffusions"]
    # the hand-made file is rewritten in canonical form
    assert read_node(world, "peddler")["aliases"] == []
    assert narr("check").exit_code == 0


def test_edit_moves_node_between_layers_by_hand(flat_world: Path) -> None:
    narr = CLI(flat_world)
    node = read_node(flat_world, "paper-lantern")
    (flat_world / "world/item/paper-lantern.json").unlink()
    node["layer"] = "ambient"
    write_node(flat_world, "world/ambient/paper-lantern.json", node)
    rec = narr.json("event", "The lantern is just light now")
    assert rec["edits"] == [{"target": "paper-lantern", "field": "/layer",
                             "old_value": "item", "new_value": "ambient"}]
    assert narr("check").exit_code == 0


def test_noncanonical_hand_edit_is_reformatted(narr: CLI, world: Path) -> None:
    path = node_file(world, "old-zhou")
    node = json.loads(path.read_text())
    node["state"]["mood"] = "cheerful"
    path.write_text(json.dumps(node, ensure_ascii=False), encoding="utf-8")  # one line
    assert narr.json("status")["reformat"] == [path.relative_to(world).as_posix()]
    narr("event", "Zhou hums")
    assert path.read_text().count("\n") > 10
    assert git(world, "status", "--porcelain") == ""


def test_show_by_event_id_and_prefix(narr: CLI) -> None:
    rec = narr.json("event", "Find me", "--set", "lin-yuan.state.mood=found")
    narr("event", "Later")
    assert narr.json("show", rec["id"])["content"] == "Find me"
    assert narr.json("show", rec["id"][:13])["content"] == "Find me"
    assert narr.json("show", rec["commit"][:8])["id"] == rec["id"]


def test_log_limits_and_text(narr: CLI) -> None:
    for i in range(3):
        narr("event", f"Beat {i}")
    assert [e["content"] for e in narr.json("log", "-n", "2")["items"]] == ["Beat 2", "Beat 1"]
    lines = narr("log").stdout.splitlines()
    assert len(lines) == 4 and "Genesis" in lines[-1]


def test_nodes_filters_and_marks_hand_edits(narr: CLI, world: Path) -> None:
    assert len(narr.json("nodes")["items"]) == 22  # with the three threads
    assert {n["id"] for n in narr.json("nodes", "--layer", "item")["items"]} == {
        "black-ring", "jade-token", "sister-letter", "paper-lantern"}
    edit_node(world, "jade-token", condition="cracked")
    marked = {n["id"]: n["edited"] for n in narr.json("nodes")["items"]}
    assert marked["jade-token"] == "modified" and marked["black-ring"] is None


def test_path_and_edit(narr: CLI, world: Path, tmp_path: Path, monkeypatch: object) -> None:
    import os

    rel = narr("path", "lin-yuan").stdout.strip()
    assert (world / rel).is_file() and rel.endswith("/lin-yuan.json")
    script = tmp_path / "ed.py"
    script.write_text(
        "import sys, json\np = sys.argv[1]\nd = json.load(open(p))\n"
        "d['state']['mood'] = 'edited'\njson.dump(d, open(p, 'w'), indent=2)\n")
    os.environ["EDITOR"] = f"python3 {script}"
    try:
        narr("edit", "lin-yuan")
        narr("edit", "new-guard", "--layer", "character")
    finally:
        del os.environ["EDITOR"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "edited"
    st = narr.json("status")
    assert {(e["target"], e["field"]) for e in st["edits"]} == {
        ("lin-yuan", "/state/mood"), ("new-guard", "")}


def test_relate_merges_attributes_into_an_existing_edge(narr: CLI, world: Path) -> None:
    narr("event", "He takes the ring again", "--diffuser", "explicit",
         "--relate", 'lin-yuan:holds:black-ring={"since": "childhood"}')
    assert read_node(world, "lin-yuan")["relations"]["holds"]["black-ring"] == {
        "worn": "left middle finger", "since": "childhood"}
    rec = narr.json("event", "Nothing new", "--diffuser", "explicit",
                    "--relate", "lin-yuan:holds:black-ring")
    assert rec["diffusions"] == []


def test_an_event_refused_as_busy_is_kept(narr: CLI, world: Path) -> None:
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(world)
    with wr.lock:
        err = narr("event", "Typed while another narr was writing", expect=15).stderr
    wr.close()
    assert "narr event --retry" in err
    assert [f["content"] for f in narr.json("status")["failed_events"]] == [
        "Typed while another narr was writing"]
    narr("event", "--retry")
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "Typed while another narr was writing"
    assert narr.json("status")["failed_events"] == []


def test_an_event_that_names_a_node_walks_the_world_once(narr: CLI, world: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving "Lin Yuan" needs the world as edited, and so does the event: one scan serves
    both, and the hand edit it found is still recorded."""
    from narrative.store import worktree

    scans = []
    real = worktree.scan
    monkeypatch.setattr(worktree, "scan", lambda wr, tree: scans.append(1) or real(wr, tree))
    edit_node(world, "lin-xue", state={"mood": "edited by hand"})
    rec = narr.json("event", "Dusk", "--diffuser", "explicit", "--set", "Lin Yuan.state.mood=wary")
    assert len(scans) == 1
    assert {c["target"] for c in rec["edits"]} == {"lin-xue"}
    assert "edited by hand" in json.dumps(rec["edits"])
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"
    assert narr.json("status")["edits"] == []


def test_the_studios_composer_walks_the_world_once_too(world: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The studio's composer sends the event row its words and flags (``POST /api/events``)."""
    from narrative.operations import operation
    from narrative.store import worktree
    from narrative.store.worldrepo import WorldRepo

    scans = []
    real = worktree.scan
    monkeypatch.setattr(worktree, "scan", lambda wr, tree: scans.append(1) or real(wr, tree))
    with WorldRepo.open(world) as wr:
        row = operation("event")
        answer = row.call(wr, row.parse({"content": "Dusk", "diffuser": "explicit",
                                         "set": ["Lin Yuan.state.mood=wary"]}))
    assert len(scans) == 1 and answer["commit"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"


def test_a_scan_is_the_events_only_under_the_same_hold_of_the_lock(world: Path) -> None:
    """Between two holds another narr may write, and a rewritten index says something moved:
    either way the event scans again and finds the edit made meanwhile."""
    from narrative.store import worktree
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(world)
    try:
        tree = wr.head_commit().tree
        with wr.lock:
            assert worktree.scan_for_reader(wr, tree).edits == {}
        edit_node(world, "lin-xue", state={"mood": "between two holds"})
        with wr.lock:
            assert set(worktree.scan_for_event(wr, tree).edits) == {"lin-xue"}

        with wr.lock:
            worktree.scan_for_reader(wr, tree)
            edit_node(world, "lin-yuan", state={"mood": "added to the index"})
            git(world, "add", "-A")
            assert set(worktree.scan_for_event(wr, tree).edits) == {"lin-xue", "lin-yuan"}
            assert wr.kept_scan is None
    finally:
        wr.close()


def test_an_event_naming_a_node_beside_a_busy_writer_is_kept(narr: CLI, world: Path) -> None:
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(world)
    with wr.lock:
        narr("event", "Dusk", "--set", "Lin Yuan.state.mood=wary", expect=15)
    wr.close()
    narr("event", "--retry")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"
