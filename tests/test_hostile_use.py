"""What careless and hostile users did to narr, each turned into a test: one message, nothing lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, git, node_file, read_node, snapshot
from test_bad_input import event_refused, refused

INPUT, WORLD, CONFLICT, BUSY, CHECK = 12, 13, 14, 15, 17


def test_an_event_after_a_plain_git_commit_keeps_the_history_whole(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan walks to the ferry")
    (world / "notes.md").write_text("ideas for chapter 3\n", encoding="utf-8")
    git(world, "add", "notes.md")
    git(world, "commit", "-qm", "notes")
    rec = narr.json("event", "The rain stops", "--close-scene")
    assert rec["parent"] == narr.json("show", "HEAD~2")["id"]
    assert "ok:" in narr("check").stdout


def test_keep_edits_never_drops_an_edit_to_a_node_the_target_lacks(narr: CLI, world: Path,
                                                                   tmp_path: Path) -> None:
    spec = tmp_path / "key.json"
    spec.write_text(json.dumps({"id": "silver-key", "name": "Silver Key", "layer": "item"}))
    narr("event", "A silver key appears", "--create", str(spec))
    narr("event", "Time passes")
    path = node_file(world, "silver-key")
    node = json.loads(path.read_text(encoding="utf-8"))
    node["state"]["shine"] = "bright"
    path.write_text(json.dumps(node), encoding="utf-8")
    out = narr("reset", "--before", "silver-key", "--keep-edits").stdout
    assert "not carried over (the node no longer exists there): silver-key /state/shine" in out
    kept = narr.json("edits")["items"]
    assert [(c["target"], c["new_value"]) for c in kept[0]["changes"]] == [("silver-key", "bright")]
    refused(narr, world, "edits", "restore", "1", "--force", code=CONFLICT,
            startswith="narr: error: 1 set-aside change(s) are to nodes that no longer exist")
    narr("reset", "HEAD@{1}")  # forward again: the key exists, the edit comes back
    narr("edits", "restore", "1")
    assert read_node(world, "silver-key")["state"]["shine"] == "bright"


def test_a_reset_through_a_merge_lists_only_what_it_undid(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan walks to the ferry")
    narr("switch", "-c", "side")
    narr("event", "Su Qing waits", "--set", "su-qing.state.mood=patient")
    narr("event", "Su Qing sighs", "--set", "su-qing.state.mood=tired")
    narr("switch", "main")
    narr("event", "The rain stops", "--close-scene")
    git(world, "merge", "-q", "--no-edit", "side")
    narr("event", "Old Zhou sings", "--set", "old-zhou.state.mood=merry")
    undone = [u["content"] for u in narr.json("reset", "side~1")["undone"]]
    assert undone[0] == "Old Zhou sings"
    assert "Lin Yuan walks to the ferry" not in undone
    assert not any(u.startswith("Genesis") for u in undone)


def test_a_leftover_git_index_lock_is_reported_not_a_traceback(narr: CLI, world: Path) -> None:
    (world / ".git" / "index.lock").write_text("", encoding="utf-8")
    for path in (world / "world").rglob("*.json"):
        path.touch()  # a stale stat cache: the scan would want to write the index
    assert "Nothing to record" in narr("status").stdout
    event_refused(narr, world, "Lin Yuan walks to the ferry", code=BUSY,
                  first="narr: error: .git/index.lock exists: another git process is writing this "
                        "repository, or one was killed")
    (world / ".git" / "index.lock").unlink()
    narr("event", "Lin Yuan walks to the ferry")


def test_a_layout_edited_in_narr_toml_is_refused(narr: CLI, world: Path, layout: str) -> None:
    other = "sharded" if layout == "flat" else "flat"
    toml = world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(f'"{layout}"', f'"{other}"'),
                    encoding="utf-8")
    for args in (["status"], ["event", "Lin Yuan walks to the ferry"], ["get", "lin-yuan"]):
        refused(narr, world, *args, code=WORLD,
                startswith=f"narr: error: narr.toml: layout is '{other}', but this world's node files "
                           f"are laid out '{layout}'")


def test_an_explicit_change_to_a_node_the_event_expires_is_refused(narr: CLI, world: Path) -> None:
    event_refused(narr, world, "Su Qing leaves", "--set", "su-qing.state.mood=sad",
                  "--expire", "su-qing", code=INPUT,
                  startswith="narr: error: the event's changes are not valid: op 2 (expire): node "
                             "'su-qing' is changed by op 1 (set) and expired in the same event")


def test_a_change_to_a_node_whose_lifecycle_ends_is_dropped_aloud(narr: CLI, world: Path) -> None:
    result = narr("event", "The rain stops", "--close-scene", "--set", "autumn-rain.state.x=1")
    assert ("set autumn-rain state.x: dropped, autumn-rain ends with this event (scene closed)"
            in result.stderr)
    assert "autumn-rain: expired" in result.stdout


def test_a_diffuser_change_to_a_node_the_user_expires_is_dropped(narr: CLI, world: Path) -> None:
    result = narr("event", "Old Zhou lights the lantern", "--expire", "paper-lantern")
    assert "dropped, paper-lantern is expired by" in result.stderr
    narr("get", "paper-lantern", expect=11)


@pytest.mark.parametrize("value, problem", [
    ("1e999", "a number too large for JSON"),
    ("-1e999", "a number too large for JSON"),
])
def test_numbers_json_cannot_hold_are_refused(narr: CLI, world: Path, value: str, problem: str) -> None:
    event_refused(narr, world, "x", "--set", f"lin-yuan.state.x={value}", code=INPUT,
                  first=f"narr: error: value {value!r}: {problem} (it would be stored as null)")


@pytest.mark.parametrize("value, problem", [
    ('"\\ud800"', "is not valid Unicode"),
    ("[" * 70 + "]" * 70, "values nested more than 64 levels deep"),
    ("[" * 5000 + "]" * 5000, "values nested more than 64 levels deep"),
    ("1e999", "a number too large for JSON"),
])
def test_delta_values_narr_cannot_store_are_refused(narr: CLI, world: Path, tmp_path: Path,
                                                    value: str, problem: str) -> None:
    f = tmp_path / "d.json"
    f.write_text('{"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/x", "value": '
                 + value + "}]}", encoding="utf-8")
    result = event_refused(narr, world, "x", "--delta", str(f), code=INPUT)
    assert problem in result.stderr


@pytest.mark.parametrize("value, problem", [
    ('"\\ud800"', "is not valid Unicode"),
    ("[" * 100 + "]" * 100, "values nested more than 64 levels deep"),
    ("1e999", "a number too large for JSON"),
])
def test_hand_edits_narr_cannot_store_name_the_file(narr: CLI, world: Path, value: str,
                                                    problem: str) -> None:
    path = node_file(world, "lin-yuan")
    path.write_text(path.read_text(encoding="utf-8").replace('"anxious"', value), encoding="utf-8")
    rel = path.relative_to(world).as_posix()
    assert f"{rel}: " in narr("status").stdout and problem in narr("status").stdout
    refused(narr, world, "event", "x", code=WORLD, startswith=f"narr: error: {rel}: ")
    assert problem in narr("check", expect=CHECK).stdout


@pytest.mark.parametrize("spec", ["lin-yuan.relations.x=1", "lin-yuan.relations.holds=1",
                                  "lin-yuan.relations=[]"])
def test_relations_that_are_not_relations_are_refused(narr: CLI, world: Path, spec: str) -> None:
    event_refused(narr, world, "x", "--set", spec, code=INPUT,
                  startswith="narr: error: the event's changes are not valid: node lin-yuan: field "
                             "/relations")


@pytest.mark.parametrize("name, code, message", [
    ("HEAD", INPUT, "'HEAD' reads like one of git's own names"),
    ("ORIG_HEAD", INPUT, "'ORIG_HEAD' reads like one of git's own names"),
    ("@", INPUT, "'@' reads like one of git's own names"),
    ("deadbeef", INPUT, "'deadbeef' reads like a commit hash or an event id"),
    ("734ee01", INPUT, "'734ee01' reads like a commit hash or an event id"),
    ("01a227cd-baa9-72f0-ba8f-96ff2f8fd396", INPUT, "reads like a commit hash or an event id"),
    ("main", CONFLICT, "a branch named 'main' already exists"),
    ("story/alt", CONFLICT, "branch 'story/alt' cannot exist beside branch 'story'"),
])
def test_branch_names_that_cannot_work_are_refused(narr: CLI, world: Path, name: str, code: int,
                                                   message: str) -> None:
    narr("branch", "story")
    for args in (["branch", name], ["switch", "-c", name]):
        result = refused(narr, world, *args, code=code)
        assert message in result.stderr
    narr("branch", "dead")  # a word that happens to be hex is a fine name


def test_ambiguous_prefixes_are_refused(narr: CLI, world: Path) -> None:
    for i in range(2):
        narr("event", f"Beat {i}", "--set", f"lin-yuan.state.n={i}")
        edit = node_file(world, "su-qing")
        node = json.loads(edit.read_text(encoding="utf-8"))
        node["state"]["mood"] = f"mood {i}"
        edit.write_text(json.dumps(node), encoding="utf-8")
        narr("reset", "HEAD~1")
    names = [i["ref"].rsplit("/", 1)[-1] for i in narr.json("edits")["items"]]
    assert len(names) == 2 and names[0][:4] == names[1][:4]
    refused(narr, world, "edits", "drop", names[0][:4], code=INPUT,
            startswith=f"narr: error: '{names[0][:4]}' matches 2 set-aside edits")
    refused(narr, world, "edits", "drop", "0", code=11)
    chains = [c["name"] for c in narr.json("chains")["items"]]
    assert len(chains) == 2
    refused(narr, world, "replay", chains[0][:4], code=INPUT,
            startswith=f"narr: error: '{chains[0][:4]}' matches 2 abandoned chains")


def test_nodes_marks_a_file_that_no_longer_parses(narr: CLI, world: Path) -> None:
    node_file(world, "su-qing").write_text("{", encoding="utf-8")
    before = snapshot(world)
    result = narr("nodes")
    assert any(line.startswith("su-qing") and line.endswith("[invalid]")
               for line in result.stdout.splitlines())
    assert "narr status says why" in result.stderr
    assert {r["id"]: r["edited"] for r in narr.json("nodes")["items"]}["su-qing"] == "invalid"
    assert snapshot(world) == before


def test_show_says_why_a_node_ended(narr: CLI, world: Path) -> None:
    narr("event", "The rain stops", "--close-scene")
    out = narr("show", "HEAD").stdout
    assert "temple-bell: expired (event lifecycle)" in out
    assert "ferry-crowd: expired (scene closed)" in out


def test_content_from_standard_input(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "-", input="Lin Yuan walking to the ferry\n")
    assert rec["content"] == "Lin Yuan walking to the ferry"
    assert any(c["target"] == "lin-yuan" and c["field"] == "/state/location" for c in rec["diffusions"])
    refused(narr, world, "event", "-", "--delta", "-", input="x", code=2)


def test_an_empty_story_time_is_a_usage_error(narr: CLI, world: Path) -> None:
    refused(narr, world, "event", "Lin Yuan waits", "--story-time", " ", code=2)


def test_render_with_a_diffuser_that_writes_no_prose_says_so(narr: CLI, world: Path) -> None:
    result = narr("event", "Lin Yuan walks to the ferry", "--render")
    assert "the rules diffuser writes no narrative text" in result.stderr


def test_an_unknown_default_diffuser_in_narr_toml_names_the_file(narr: CLI, world: Path) -> None:
    toml = world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('default = "rules"', 'default = "nope"'),
                    encoding="utf-8")
    refused(narr, world, "event", "Lin Yuan waits", code=WORLD,
            startswith="narr: error: narr.toml: [diffuser] default is 'nope', which is not a diffuser")


def test_log_names_the_genesis_and_plain_git_commits(narr: CLI, world: Path) -> None:
    (world / "notes.md").write_text("x\n", encoding="utf-8")
    git(world, "add", "notes.md")
    git(world, "commit", "-qm", "notes")
    lines = narr("log").stdout.splitlines()
    assert lines[0].endswith("notes  (a plain git commit, not an event)")
    assert lines[-1].endswith("(genesis)")


def test_init_without_the_sample_makes_the_layer_folders(tmp_path: Path) -> None:
    CLI(tmp_path)("init", str(tmp_path / "empty"))
    assert sorted(p.name for p in (tmp_path / "empty" / "world").iterdir()) == [
        "ambient", "background", "character", "item"]


def test_an_executable_bit_is_never_staged(narr: CLI, world: Path) -> None:
    path = node_file(world, "su-qing")
    path.chmod(0o755)
    narr("event", "Lin Yuan walks to the ferry")
    staged = git(world, "diff", "--cached", "--name-only").split()
    assert staged == []
    assert "Nothing to record" in narr("status").stdout
    assert "ok:" in narr("check").stdout


def test_narr_will_not_move_the_story_under_a_git_merge(narr: CLI, world: Path) -> None:
    narr("switch", "-c", "side")
    narr("event", "Lin Yuan frowns", "--set", "lin-yuan.state.mood=grim")
    narr("switch", "main")
    narr("event", "Lin Yuan smiles", "--set", "lin-yuan.state.mood=glad")
    subprocess.run(["git", "merge", "side"], cwd=world, capture_output=True, check=False)
    assert (world / ".git" / "MERGE_HEAD").exists()
    for args in (["reset", "HEAD~1"], ["switch", "side"], ["event", "Su Qing waits"]):
        result = refused(narr, world, *args, code=CONFLICT)
        assert "a git merge is in progress" in result.stderr
    assert "a git merge is in progress" in narr("status").stderr
    assert [f["content"] for f in narr.json("failed")["items"]] == ["Su Qing waits"]  # kept, not lost


def test_replay_names_the_plain_git_commits_it_leaves_out(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan walks to the ferry")
    (world / "notes.md").write_text("x\n", encoding="utf-8")
    git(world, "add", "notes.md")
    git(world, "commit", "-qm", "my notes")
    narr("event", "The rain stops", "--close-scene")
    narr("reset", "HEAD~2")
    narr("event", "Su Qing waits", "--set", "su-qing.state.mood=patient")
    result = narr("replay", "1", "--reuse")
    assert "Not replayed: commits made with plain git" in result.stdout
    assert result.stdout.rstrip().endswith("my notes")
