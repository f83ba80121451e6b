"""Real git as the referee: plain git reads a narr world as the story it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, git, node_file, read_node, rel_path, write_node

from narrative.store.records import MARKER

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

EXPLICIT = ["--diffuser", "explicit"]  # exactly the changes a test spells out


def hand_edit(world: Path, node_id: str, **state: object) -> None:
    path = node_file(world, node_id)
    node = json.loads(path.read_text(encoding="utf-8"))
    node["state"].update(state)
    path.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def git_clean(world: Path) -> None:
    assert git(world, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(world, "diff", "--cached", "--name-only") == ""
    assert git(world, "diff", "--name-only") == ""


def story(narr: CLI, world: Path, tmp_path: Path) -> list[str]:
    """A few chapters touching every kind of change; git must be clean after each event."""
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "last-boat", "name": "The Last Boat", "layer": "item",
                                "lifecycle": "scene", "relations": {"at": {"ferry": {}}}}),
                    encoding="utf-8")
    contents = []

    def event(content: str, *args: str) -> None:
        narr("event", content, *EXPLICIT, *args)
        contents.append(content)
        git_clean(world)

    event("Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry")
    hand_edit(world, "black-ring", colour="jade")
    event("Su Qing notices the ring", "--relate", "su-qing:suspects:lin-yuan")
    event("The last boat arrives", "--create", str(spec))
    node_file(world, "sister-letter").unlink()
    write_node(world, rel_path(world, "peddler", "character"),
               {"id": "peddler", "name": "Peddler", "layer": "character"})
    event("The letter is lost; a peddler appears", "--set", "old-zhou.state.mood=wary")
    event("The boat leaves", "--close-scene")
    event("Night falls")
    return contents


def test_git_log_oneline_reads_as_the_story(narr: CLI, world: Path, tmp_path: Path) -> None:
    contents = story(narr, world, tmp_path)
    lines = git(world, "log", "--oneline", "--no-decorate").splitlines()
    genesis = narr.json("show", "HEAD~6")["content"]
    assert [line.split(" ", 1)[1] for line in lines] == [*reversed(contents), genesis]
    assert [line.split(" ", 1)[0] for line in lines] == [
        e["commit"][: len(line.split(" ", 1)[0])]
        for e, line in zip(narr.json("log")["items"], lines, strict=True)]
    # the first-parent chain is narr's story line
    assert git(world, "rev-list", "--first-parent", "HEAD").split() == [
        e["commit"] for e in narr.json("log")["items"]]


@pytest.mark.parametrize("layout", ["flat"])
def test_subject_is_the_content_on_one_line(narr: CLI, world: Path) -> None:
    narr("event", "He runs.\n\n  He   falls.", *EXPLICIT)
    assert git(world, "log", "-1", "--format=%s") == "He runs. He falls.\n"
    long = "word " * 100
    narr("event", long, *EXPLICIT)
    subject = git(world, "log", "-1", "--format=%s").rstrip("\n")
    assert len(subject) == 200 and subject.endswith("…") and long.startswith(subject[:-1])
    assert narr.json("show")["content"] == long  # the record keeps every word


def test_git_show_carries_the_record(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "Lin Yuan walks to the ferry", *EXPLICIT,
                    "--set", "lin-yuan.state.location=ferry", "--at", "Day 3")
    body = git(world, "log", "-1", "--format=%B")
    head, _, payload = body.partition(f"\n\n{MARKER}\n")
    assert head == "Lin Yuan walks to the ferry"
    record = json.loads(payload)
    assert record == {k: v for k, v in rec.items() if k in record}
    assert record["id"] == rec["id"] and record["timestamp"] == "Day 3"


def test_git_show_shows_exactly_the_node_files_the_event_touched(narr: CLI, world: Path,
                                                                 tmp_path: Path) -> None:
    narr("event", "A first beat", *EXPLICIT)  # ends the genesis' event-lifecycle bell
    spec = tmp_path / "boat.json"
    spec.write_text(json.dumps({"id": "last-boat", "name": "The Last Boat", "layer": "item"}),
                    encoding="utf-8")
    hand_edit(world, "jade-token", cracked=True)
    node_file(world, "sister-letter").unlink()  # held by lin-yuan: that relation goes too
    write_node(world, rel_path(world, "peddler", "character"),
               {"id": "peddler", "name": "Peddler", "layer": "character"})
    rec = narr.json("event", "Many things at once", *EXPLICIT, "--set", "old-zhou.state.mood=wary",
                    "--create", str(spec), "--expire", "paper-lantern")
    touched = {c["target"] for c in rec["edits"] + rec["diffusions"]}
    assert touched == {"jade-token", "sister-letter", "peddler", "old-zhou", "last-boat",
                       "paper-lantern", "lin-yuan"}
    shown = {path: status for status, path in (
        line.split("\t") for line in git(world, "show", "--name-status", "--format=", "HEAD").splitlines())}
    assert shown == {
        rel_path(world, "jade-token", "item"): "M",
        rel_path(world, "sister-letter", "item"): "D",
        rel_path(world, "peddler", "character"): "A",
        rel_path(world, "old-zhou", "character"): "M",
        rel_path(world, "last-boat", "item"): "A",
        rel_path(world, "paper-lantern", "item"): "D",
        rel_path(world, "lin-yuan", "character"): "M",
    }
    # a story beat touches nothing at all
    narr("event", "Nothing happens", *EXPLICIT)
    assert git(world, "show", "--name-only", "--format=", "HEAD") == ""


def test_git_show_diff_is_field_by_field(narr: CLI, world: Path) -> None:
    narr("event", "He walks", *EXPLICIT, "--set", "lin-yuan.state.location=ferry")
    diff = git(world, "show", "--format=", "--unified=0", "HEAD", "--",
               rel_path(world, "lin-yuan", "character"))
    changed = [line for line in diff.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ['-    "location": "qingyun-gate",', '+    "location": "ferry",']


def test_git_blame_attributes_a_field_to_its_event(narr: CLI, world: Path) -> None:
    path = rel_path(world, "black-ring", "item")
    e1 = narr.json("event", "The ring turns jade", *EXPLICIT, "--set", "black-ring.state.colour=jade")
    narr("event", "Lin Yuan frowns", *EXPLICIT, "--set", "lin-yuan.state.mood=grim")
    hand_edit(world, "black-ring", warmth="hot")
    e3 = narr.json("event", "The ring burns", *EXPLICIT)
    narr("event", "Rain", *EXPLICIT, "--set", "autumn-rain.state.intensity=heavy")
    genesis = git(world, "rev-list", "--max-parents=0", "HEAD").strip()

    blame = git(world, "blame", "--line-porcelain", "--", path)
    owner = {}
    commit = ""
    for line in blame.splitlines():
        if line.startswith("\t"):
            owner[line[1:].strip()] = commit
        elif len(line) > 40 and line[40] == " ":
            commit = line[:40]
    assert owner['"colour": "jade",'] == e1["commit"]
    assert owner['"warmth": "hot"'] == e3["commit"]  # the hand edit's line: the event that recorded it
    assert owner['"holder": "lin-yuan",'] == genesis
    assert read_node(world, "black-ring")["state"] == {"colour": "jade", "holder": "lin-yuan",
                                                       "warmth": "hot"}


def test_git_fsck_is_clean(narr: CLI, world: Path, tmp_path: Path) -> None:
    story(narr, world, tmp_path)
    out = git(world, "fsck", "--strict", "--no-progress", "--no-dangling")
    assert out == ""
    git(world, "fsck", "--strict", "--no-progress")  # exits 0: nothing broken, dangling or not
    assert narr("check").exit_code == 0


def test_refused_event_leaves_git_clean(narr: CLI, world: Path) -> None:
    narr("event", "No such node", *EXPLICIT, "--set", "nobody.state.a=1", expect=12)
    git_clean(world)
    hand_edit(world, "lin-yuan", mood="edited")
    narr("event", "No such node", *EXPLICIT, "--set", "nobody.state.a=1", expect=12)
    assert git(world, "status", "--porcelain").split() == ["M", rel_path(world, "lin-yuan", "character")]
    assert git(world, "diff", "--cached", "--name-only") == ""
