"""The story as documents: ``narr story`` (the book) and ``narr export codex`` (the bible), and
``narr graph world --at``, on the sample world after a session with story time, narrative text,
English and Chinese events, a hand edit, a plain git commit, a closed scene and a reset.

Both follow the story line as it stands: a reset takes undone events out of the book, and
``--to`` / ``--at`` read any revision, an undone line's included.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, git

PROSE = "Rain needled the river. Lin Yuan walked down to the ferry, the ring cold on his finger."


def session(narr: CLI, root: Path) -> dict[str, str]:
    """The scripted session; returns the event ids by name (commits for the genesis and the notes)."""
    ids = {"genesis": narr.json("log")["items"][-1]["commit"]}
    ids["walk"] = narr.json("event", "Lin Yuan walks to the ferry", "--story-time", "Day 3, dusk",
                            "--text", PROSE)["id"]
    ids["calm"] = narr.json("event", "Lin Yuan is calm", "--set", "lin-yuan.state.mood=calm")["id"]
    edit_node(root, "black-ring", warmth="warm")  # a hand edit, recorded by the next event
    ids["suspect"] = narr.json("event", "林远拿起黑戒，苏晴怀疑林远")["id"]
    git(root, "commit", "-q", "--allow-empty", "-m", "Notes on chapter two")
    ids["notes"] = git(root, "rev-parse", "HEAD").strip()
    ids["rain"] = narr.json("event", "The last boat leaves and the rain stops", "--close-scene")["id"]
    return ids


@pytest.fixture
def played(flat_world: Path) -> tuple[CLI, Path, dict[str, str]]:
    narr = CLI(flat_world)
    return narr, flat_world, session(narr, flat_world)


BOOK = f"""\
# The Black Ring of Qingyun

## 1. Lin Yuan walks to the ferry

*Day 3, dusk*

{PROSE}

## 2. Lin Yuan is calm

## 3. 林远拿起黑戒，苏晴怀疑林远

## 4. The last boat leaves and the rain stops

* * *
"""


def test_story_as_markdown_and_json(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    assert narr("story").stdout == BOOK
    d = narr.json("story")
    assert d == json.loads(narr("story", "--format", "json").stdout)
    assert (d["world"], d["from"]) == ("The Black Ring of Qingyun", None)
    assert d["to"]["id"] == ids["rain"] and d["to"]["commit"] == narr.json("show")["commit"]
    assert [(e["number"], e["id"], e["content"], e["timestamp"], e["close_scene"]) for e in d["events"]] == [
        (1, ids["walk"], "Lin Yuan walks to the ferry", "Day 3, dusk", False),
        (2, ids["calm"], "Lin Yuan is calm", None, False),
        (3, ids["suspect"], "林远拿起黑戒，苏晴怀疑林远", None, False),
        (4, ids["rain"], "The last boat leaves and the rain stops", None, True)]
    assert d["events"][0]["narrative_text"] == PROSE and d["events"][1]["narrative_text"] is None
    assert [e["commit"] for e in d["events"]] == [narr.json("show", ids[k])["commit"]
                                                for k in ("walk", "calm", "suspect", "rain")]
    assert d["skipped"] == [{"commit": ids["notes"], "content": "Notes on chapter two"}]


def test_story_from_and_to(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    part = narr("story", "--from", ids["walk"], "--to", ids["suspect"]).stdout
    assert part == ("# The Black Ring of Qingyun\n\n*After: Lin Yuan walks to the ferry*\n\n"
                    "## 2. Lin Yuan is calm\n\n*Day 3, dusk*\n\n"  # the time still in force
                    "## 3. 林远拿起黑戒，苏晴怀疑林远\n")
    d = narr.json("story", "--from", "HEAD~2", "--to", "HEAD")
    assert d["from"]["id"] == ids["suspect"]
    assert [e["number"] for e in d["events"]] == [4] and d["skipped"] == [
        {"commit": ids["notes"], "content": "Notes on chapter two"}]
    assert narr.json("story", "--to", "HEAD~1")["events"][-1]["id"] == ids["suspect"]
    assert narr("story", "--from", "HEAD").stdout.endswith("*No events in this part of the story.*\n")
    err = narr("story", "--from", "HEAD", "--to", "HEAD~1", expect=12).stderr
    assert err.startswith("narr: error: HEAD is not on the story line that ends at HEAD~1\n")
    assert "no node" not in narr("story", "--to", "nowhere", expect=11).stderr


def test_story_follows_a_reset(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    old_tip = narr.json("show")["commit"]
    narr("reset", "HEAD~3")  # back to "Lin Yuan is calm"
    angry = narr.json("event", "Lin Yuan grows angry", "--set", "lin-yuan.state.mood=angry")["id"]
    d = narr.json("story")
    assert [(e["number"], e["id"]) for e in d["events"]] == [(1, ids["walk"]), (2, ids["calm"]), (3, angry)]
    assert d["skipped"] == []
    assert "林远" not in narr("story").stdout
    # the undone line is still a revision to read
    assert [e["id"] for e in narr.json("story", "--to", old_tip)["events"]][-2:] == [
        ids["suspect"], ids["rain"]]
    assert narr("story", "--from", ids["suspect"], expect=12).stderr


LIN_YUAN = """\
### Lin Yuan

- id: lin-yuan
- kind: person
- aliases: ["林远", "Yuan", "the outer disciple"]
- lifecycle: permanent
- summary: Outer disciple of the Qingyun Sect, searching for his missing sister.

#### Traits

- hand: left-handed
- pronouns: he
- scar: old scar over the left eyebrow
- speech: short sentences, never exclaims
- temper: patient, suspicious, loyal

#### State

- goal: find Lin Xue
- health: unhurt
- location: ferry
- mood: calm

#### Relations

- distrusts: su-qing (Su Qing)
- holds: black-ring (Black Ring) {"worn": "left middle finger"}
- holds: sister-letter (Xue's Letter)
- member-of: qingyun-sect (Qingyun Sect) {"rank": "outer disciple"}
- sibling-of: lin-xue (Lin Xue) {"note": "older brother"}

#### Incoming relations

- sibling-of: lin-xue (Lin Xue) {"note": "younger sister"}
- suspects: su-qing (Su Qing)
"""


def test_codex_markdown(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    text = narr("export", "codex").stdout
    head = narr.json("show")["commit"]
    assert text.startswith(
        "# The Black Ring of Qingyun: codex\n\n"
        f"- commit: {head}\n- event: The last boat leaves and the rain stops\n"
        "- story time: Day 3, dusk\n"  # in force since the first event's --at
        "- hand edits: none\n- nodes: 18\n\n## Characters\n\n### Elder Mo\n\n- id: elder-mo\n")
    assert "\n" + LIN_YUAN + "\n" in text
    assert re.findall(r"^## (.*)$", text, re.M) == ["Characters", "Items", "Background"]  # no ambient left
    assert "temple-bell" not in text and "paper-lantern" not in text  # ended
    assert "- warmth: warm" in text
    assert text == narr("export", "codex").stdout  # deterministic


def test_codex_json_relations_both_ways(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    d = narr.json("export", "codex")
    assert d == json.loads(narr("export", "codex", "--format", "json").stdout)
    assert (d["hand_edits_included"], d["hand_edits"]) == (True, [])
    by_id = {n["id"]: n for n in d["nodes"]}
    assert [n["layer"] for n in d["nodes"]] == sorted(
        (n["layer"] for n in d["nodes"]), key=["character", "item", "ambient", "background"].index)
    lin = by_id["lin-yuan"]
    assert lin["state"]["mood"] == "calm" and lin["edited"] is None
    assert {"type": "suspects", "source": "su-qing", "name": "Su Qing", "attrs": {}} in lin["incoming"]
    assert {"type": "holds", "target": "black-ring", "name": "Black Ring",
            "attrs": {"worn": "left middle finger"}} in lin["relations"]
    # every outgoing edge is someone's incoming one, with the same attributes
    outs = sorted((n["id"], r["type"], r["target"], json.dumps(r["attrs"]))
                  for n in d["nodes"] for r in n["relations"])
    ins = sorted((r["source"], r["type"], n["id"], json.dumps(r["attrs"]))
                 for n in d["nodes"] for r in n["incoming"])
    graph = json.loads(narr("graph", "world", "--format", "json").stdout)
    relations = [e for e in graph["edges"] if e["kind"] == "relation"]  # the rest: references
    assert outs == ins and len(outs) == len(relations) == 24


def test_codex_hand_edits_and_at(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, ids = played
    edit_node(root, "su-qing", mood="restless")
    d = narr.json("export", "codex")
    su = next(n for n in d["nodes"] if n["id"] == "su-qing")
    assert (su["state"]["mood"], su["edited"], d["hand_edits"]) == (
        "restless", "modified", [{"id": "su-qing", "edit": "modified"}])
    text = narr("export", "codex").stdout
    assert "- hand edits: su-qing (modified)\n" in text and "- hand edit: modified\n" in text
    committed = narr("export", "codex", "--at", "HEAD").stdout
    assert "- hand edits: not included\n" in committed and "- mood: watchful\n" in committed
    genesis = narr.json("export", "codex", "--at", ids["genesis"])
    assert genesis["at"]["content"] == "Genesis: The Black Ring of Qingyun"
    assert len(genesis["nodes"]) == 22 and genesis["hand_edits_included"] is False
    bell = next(n for n in genesis["nodes"] if n["id"] == "temple-bell")
    assert (bell["layer"], bell["lifecycle"]) == ("ambient", "event")
    at_walk = narr("export", "codex", "--at", ids["walk"]).stdout
    assert "- story time: Day 3, dusk\n" in at_walk and "- mood: anxious\n" in at_walk
    assert narr("export", "codex", "--at", "nowhere", expect=11).stderr
    (root / "world" / "character" / "su-qing.json").write_text("{ not json", encoding="utf-8")
    err = narr("export", "codex", expect=13).stderr
    assert "su-qing.json" in err and "--at HEAD" in err
    assert narr("export", "codex", "--at", "HEAD").stdout == committed


def _read_codex(text: str) -> dict[str, dict[str, Any]]:
    """Read the Markdown back (what an importer would do): the layout is the contract."""
    nodes: dict[str, dict[str, Any]] = {}
    node: dict[str, Any] = {}
    section = ""

    def value(raw: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    for line in text.splitlines():
        if line.startswith("### "):
            node = {"name": line[4:], "traits": {}, "state": {}, "relations": {}}
            section = ""
        elif line.startswith("#### "):
            section = line[5:]
        elif line.startswith("- ") and node is not None and "name" in node:
            key, _, raw = line[2:].partition(": ")
            if section in ("Traits", "State"):
                node[section.lower()][key] = value(raw)
            elif section == "Relations":
                target, _, rest = raw.partition(" ")
                attrs = re.search(r" (\{.*\})$", " " + rest)
                node["relations"].setdefault(key, {})[target] = json.loads(attrs.group(1)) if attrs else {}
            elif section == "":
                node[key] = value(raw)
                if key == "id":
                    nodes[raw] = node
    return nodes


def test_codex_markdown_reads_back_as_the_world(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    for at in ("HEAD", ids["genesis"]):
        back = _read_codex(narr("export", "codex", "--at", at).stdout)
        for node in narr.json("export", "codex", "--at", at)["nodes"]:
            real = narr.json("get", node["id"], "--at", at)["node"]
            got = back[node["id"]]
            for key in ("name", "kind", "lifecycle", "summary", "aliases", "traits", "state", "relations"):
                assert got.get(key, real[key]) == real[key], (node["id"], key)


def test_graph_world_at_an_earlier_event(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    assert narr("graph", "world", "--at", "HEAD").stdout == narr("graph", "world").stdout
    now = narr.json("graph", "world", "--format", "json")
    before = narr.json("graph", "world", "--format", "json", "--at", ids["genesis"])
    assert (now["nodes"], before["nodes"]) == (18, 22)
    dot = narr("graph", "world", "--at", ids["calm"], "--around", "paper-lantern").stdout
    assert '"old-zhou" -> "paper-lantern" [label="holds"];' in dot
    assert '"su-qing" -> "lin-yuan"' not in narr("graph", "world", "--at", ids["calm"]).stdout
    suspected = narr("graph", "world", "--at", ids["suspect"]).stdout
    assert '"su-qing" -> "lin-yuan" [label="suspects"];' in suspected
    assert narr("graph", "world", "--at", "nowhere", expect=11).stderr


def test_both_layouts_export_alike(narr: CLI, world: Path) -> None:
    ids = session(narr, world)
    assert narr("story").stdout == BOOK
    assert "\n" + LIN_YUAN + "\n" in narr("export", "codex").stdout
    assert len(narr.json("export", "codex", "--at", ids["genesis"])["nodes"]) == 22
