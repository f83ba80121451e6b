"""A new user's first session: a world from nothing, nodes by name, events that name them.

Built only with ``narr init --rules`` and ``narr new`` (never the sample), so the
generic rules and the name resolver are tested on a world nobody prepared.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import CLI, git, read_node, snapshot

NOT_FOUND, INVALID_INPUT, INVALID_WORLD = 11, 12, 13


def _new_world(tmp_path: Path, rules: str) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", rules)
    return CLI(root)


def test_a_chinese_world_from_nothing(tmp_path: Path) -> None:
    narr = _new_world(tmp_path, "zh")
    root = narr.root
    assert sorted(p.name for p in (root / "rules").iterdir())[:2] == ["health.toml", "items.toml"]
    made = narr.json("new", "character", "林远", "--alias", "Lin Yuan")
    assert made == {"schema": "narr.new/1", "id": "lin-yuan", "path": "world/character/lin-yuan.json",
                    "name": "林远", "layer": "character", "kind": "", "aliases": ["Lin Yuan"], "warnings": []}
    assert narr("new", "character", "林园").stdout == "lin-yuan-2 world/character/lin-yuan-2.json\n"
    narr("new", "character", "苏青", "--alias", "Su Qing")
    narr("new", "background", "渡口", "--kind", "place", "--alias", "the ferry")
    narr("new", "item", "黑戒", "--alias", "Black Ring")
    narr("new", "background", "身世之谜", "--kind", "secret")

    narr("event", "林远来到渡口")
    narr("event", "林远拿起黑戒")
    narr("event", "苏青发现了身世之谜")
    assert read_node(root, "lin-yuan")["state"]["location"] == "du-kou"
    assert read_node(root, "lin-yuan")["relations"]["holds"] == {"hei-jie": {}}
    assert read_node(root, "hei-jie")["state"]["holder"] == "lin-yuan"
    assert read_node(root, "su-qing")["relations"]["knows"] == {"shen-shi-zhi-mi": {}}

    before = snapshot(root)
    narr("event", "苏青会来到渡口吗？")
    narr("event", "如果林园来到渡口，苏青就走。")
    assert read_node(root, "su-qing")["state"].get("location") is None
    assert read_node(root, "lin-yuan-2")["state"].get("location") is None
    after = snapshot(root)
    assert {k: v for k, v in before.items() if k.startswith("world/")} == {
        k: v for k, v in after.items() if k.startswith("world/")}

    # flags and reads name nodes by name, alias, case aside
    narr("event", "心情", "--set", "lin yuan.state.mood=calm", "--relate", "苏青:trusts:林远",
         "--set", "BLACK RING.state.glow=faint")
    assert narr("get", "林远", "state.mood").stdout == "calm\n"
    assert json.loads(narr("get", "Su Qing", "relations").stdout)["trusts"] == {"lin-yuan": {}}
    assert narr("path", "the ferry").stdout == "world/background/du-kou.json\n"
    assert narr.json("why", "Lin Yuan", "state.mood")["node"] == "lin-yuan"
    assert narr("check").stdout.startswith("ok: ")
    _edit_by_name(narr, tmp_path)
    _bring_in_what_the_writer_has(narr, tmp_path)


def _edit_by_name(narr: CLI, tmp_path: Path) -> None:
    """``narr edit`` by an alias opens the node's file; the next event records the edit."""
    script = tmp_path / "ed.py"
    script.write_text("import json, sys\nnode = json.load(open(sys.argv[1]))\n"
                      "node['summary'] = '外门弟子，寻找失踪的妹妹。'\n"
                      "json.dump(node, open(sys.argv[1], 'w'), ensure_ascii=False)\n", "utf-8")
    os.environ["EDITOR"] = f"{sys.executable} {script}"
    try:
        narr("edit", "lin yuan")
    finally:
        del os.environ["EDITOR"]
    assert narr("status").stdout.splitlines()[1:] == [
        "", "Hand edits (the next event records them):",
        '  lin-yuan /summary: "" → "外门弟子，寻找失踪的妹妹。"', "",
        "The next event rewrites these files in narr's canonical layout:",
        "  world/character/lin-yuan.json"]


WORLD_INFO = {"entries": {
    "0": {"uid": 0, "key": ["青云门", "Qingyun Sect"], "comment": "青云门",
          "content": "守着古道的山门。", "disable": False},
    "1": {"uid": 1, "key": ["the ferry"], "comment": "渡口", "content": "进山前的最后一个渡口。",
          "disable": False}}}
NOTES = Path(__file__).resolve().parent / "data" / "import" / "notes"


def _bring_in_what_the_writer_has(narr: CLI, tmp_path: Path) -> None:
    """A World Info file, a folder of notes, then the codex out and back in, twice over."""
    root = narr.root
    lorebook = tmp_path / "世界书.json"
    lorebook.write_text(json.dumps(WORLD_INFO, ensure_ascii=False), "utf-8")
    out = narr("import", str(lorebook)).stdout
    assert out == (
        f"[main {_head(root)}] Import 世界书.json: 世界书.json (lorebook, 2 entries)\n"
        "  hand edit  lin-yuan /summary: \"\" → \"外门弟子，寻找失踪的妹妹。\"\n"
        "  created qing-yun-men (background, 青云门) from 世界书.json#0\n"
        "  already there: 渡口 from 世界书.json#1 is du-kou (same name 'the ferry'); added /summary, "
        "/extensions/sillytavern\n")
    assert narr("get", "Qingyun Sect", "summary").stdout == "守着古道的山门。\n"
    assert narr("get", "the ferry", "summary").stdout == "进山前的最后一个渡口。\n"  # it had none

    out = narr("import", str(NOTES)).stdout
    assert out == (
        f"[main {_head(root)}] Import notes: Lin Yuan.md (note, 1 entry), Su Qing.md (note, 1 entry), "
        "places/Temple.md (note, 1 entry)\n"
        "  created temple-of-the-bell (background, Temple of the Bell) from places/Temple.md\n"
        "  related lin-yuan -distrusts-> su-qing\n"
        "  related lin-yuan -mentions-> hei-jie\n"
        "  already there: Lin Yuan from Lin Yuan.md is lin-yuan (same name 'lin yuan'); "
        "added /aliases (\"Young Lin\"), /sections/Lin Yuan, /sections/Later, /tags (\"main\")\n"
        "    note: its summary differs from the node's (which stays): kept as the section 'Lin Yuan'\n"
        "    note: its section 'Later': kept as the section 'Later'\n"
        "  already there: Su Qing from Su Qing.md is su-qing (same name 'su qing'); "
        "added /aliases (\"苏晴\"), /summary\n"
        "  Lin Yuan.md (Lin Yuan) is the section 'Lin Yuan' of lin-yuan\n"
        "  left out .obsidian/: a hidden file or folder\n")
    lin = read_node(root, "lin-yuan")
    assert (lin["aliases"], lin["summary"]) == (["Lin Yuan", "Young Lin"], "外门弟子，寻找失踪的妹妹。")
    assert narr("path", "Young Lin").stdout == "world/character/lin-yuan.json\n"
    before = snapshot(root)
    assert narr("import", str(NOTES)).stdout.startswith("Nothing to import: the world has everything")
    assert snapshot(root) == before

    codex = tmp_path / "codex.md"
    codex.write_text(narr("export", "codex").stdout, "utf-8")
    out = narr("import", str(codex)).stdout.splitlines()
    assert out[0] == "Nothing to import: the world has everything in codex.md (codex, 8 entries)"
    assert len(out) == 9 and all(line.endswith("(same id)") for line in out[1:])
    assert snapshot(root) == before

    # into a world of its own: the same bible comes out, names, aliases, summaries,
    # state and relations alike
    other = CLI(tmp_path / "copy")
    CLI(tmp_path)("init", str(other.root))
    other("import", str(codex))
    again = other("export", "codex").stdout
    assert _bible(again) == _bible(codex.read_text("utf-8"))
    assert other("get", "林远", "state.location").stdout == "du-kou\n"


def _head(root: Path) -> str:
    return git(root, "rev-parse", "--short=10", "HEAD").strip()


def _bible(codex: str) -> list[str]:
    """A codex without what says where and when it was written."""
    return [line for line in codex.splitlines()[5:] if not line.startswith("- created_by_event:")]


def test_an_english_world_from_nothing(tmp_path: Path) -> None:
    narr = _new_world(tmp_path, "en")
    root = narr.root
    for args in (("character", "Lin Yuan"), ("character", "Su Qing"),
                 ("background", "The Old Ferry", "--kind", "place"),
                 ("item", "Black Ring"), ("background", "The Sister's Fate", "--kind", "secret")):
        narr("new", *args)
    assert sorted(p.stem for p in (root / "world").rglob("*.json")) == [
        "black-ring", "lin-yuan", "su-qing", "the-old-ferry", "the-sister-s-fate"]
    narr("event", "Lin Yuan walks to The Old Ferry")
    narr("event", "Lin Yuan picks up Black Ring")
    narr("event", "Su Qing learns The Sister's Fate")
    narr("event", "Will Su Qing walk to The Old Ferry?")
    narr("event", "If Su Qing picks up Black Ring, she is lost.")
    assert read_node(root, "lin-yuan")["state"]["location"] == "the-old-ferry"
    assert read_node(root, "black-ring")["state"]["holder"] == "lin-yuan"
    assert read_node(root, "su-qing")["relations"]["knows"] == {"the-sister-s-fate": {}}
    assert "location" not in read_node(root, "su-qing")["state"]
    assert read_node(root, "black-ring")["state"]["holder"] == "lin-yuan"


@pytest.fixture
def two_lins(tmp_path: Path) -> CLI:
    narr = _new_world(tmp_path, "both")
    narr("new", "character", "林远", "--alias", "Lin")
    narr("new", "character", "Lin Xue")
    narr("new", "background", "Dr. Wu's House", "--kind", "place")
    narr("event", "begin")
    # a hand edit gives Lin Xue the same alias: the resolver sees it before any event does
    path = narr.root / "world/character/lin-xue.json"
    node = json.loads(path.read_text("utf-8"))
    node["aliases"] = ["lin"]
    path.write_text(json.dumps(node, ensure_ascii=False, indent=2), "utf-8")
    return narr


def test_an_ambiguous_name_lists_the_candidates_and_changes_nothing(two_lins: CLI) -> None:
    narr, root = two_lins, two_lins.root
    before = snapshot(root)
    result = narr("event", "x", "--diffuser", "explicit", "--set", "LIN.state.mood=calm",
                  expect=INVALID_INPUT)
    assert result.stderr.splitlines() == [
        "narr: error: --set 'LIN.state.mood': 'LIN' names 2 nodes: lin-xue (Lin Xue), lin-yuan (林远)",
        "hint: use the id of the one you mean; to tell them apart by name for good, change the name or "
        "alias one of them shares: narr edit lin-xue (its name and aliases fields; the next event "
        "records the edit)"]
    assert narr("get", "lin", expect=INVALID_INPUT).stderr.splitlines()[0] == (
        "narr: error: 'lin' names 2 nodes: lin-xue (Lin Xue), lin-yuan (林远)")
    assert snapshot(root) == before
    # an id always wins over a name
    assert json.loads(narr("get", "lin-xue").stdout)["name"] == "Lin Xue"


def test_an_unknown_name_suggests_the_nearest_and_changes_nothing(two_lins: CLI) -> None:
    narr, root = two_lins, two_lins.root
    before = snapshot(root)
    result = narr("event", "x", "--diffuser", "explicit", "--relate", "Lin Xeu:trusts:林远",
                  expect=NOT_FOUND)
    assert result.stderr.splitlines() == [
        "narr: error: source of --relate 'Lin Xeu:trusts:林远': no node named 'Lin Xeu' in the world",
        "hint: did you mean Lin Xue (lin-xue) or 林远 (lin-yuan)? narr nodes lists the nodes"]
    assert narr("path", "林源", expect=NOT_FOUND).stderr.splitlines() == [
        "narr: error: no node named '林源' in the world",
        "hint: did you mean 林远 (lin-yuan)? narr nodes lists the nodes"]
    narr("get", "zzz", expect=NOT_FOUND)
    assert snapshot(root) == before


def test_a_name_with_dots_and_spaces_in_set(two_lins: CLI) -> None:
    narr = two_lins
    narr("event", "x", "--diffuser", "explicit", "--set", "Dr. Wu's House.state.lit=true",
         "--set", "林远/state/mood=wary")
    assert read_node(narr.root, "dr-wu-s-house")["state"]["lit"] is True
    assert read_node(narr.root, "lin-yuan")["state"]["mood"] == "wary"


def test_new_refuses_a_name_in_use(two_lins: CLI) -> None:
    before = snapshot(two_lins.root)
    result = two_lins("new", "item", "lin xue", expect=INVALID_INPUT)
    assert result.stderr.splitlines() == [
        "narr: error: the name 'lin xue' is already used by lin-xue (Lin Xue)",
        "hint: to mean that node, use it (narr get lin-xue); for a different one, give another "
        "name, or tell them apart with --alias"]
    assert snapshot(two_lins.root) == before


def test_edit_says_what_is_broken(two_lins: CLI, tmp_path: Path) -> None:
    script = tmp_path / "ed.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('{\\n  \"id\": \"lin-yuan\",\\n')\n",
                      encoding="utf-8")
    os.environ["EDITOR"] = f"{sys.executable} {script}"
    try:
        result = two_lins("edit", "林远", expect=INVALID_WORLD)
    finally:
        del os.environ["EDITOR"]
    lines = result.stderr.splitlines()
    assert lines[0].startswith("narr: error: world/character/lin-yuan.json: line 3, column 1: ")
    assert lines[-1].startswith("hint: the file is kept as you left it")


def test_init_here_on_a_repository_with_history(tmp_path: Path) -> None:
    root = tmp_path / "book"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "notes.md").write_text("chapter one\n", "utf-8")
    git(root, "add", "notes.md")
    git(root, "commit", "-qm", "first notes")
    narr = CLI(root)
    narr("init", "--here", "--rules", "en")
    assert git(root, "log", "--format=%s").splitlines()[1] == "first notes"
    narr("new", "character", "Ann")
    narr("new", "background", "Mill", "--kind", "place")
    narr("event", "Ann walks to Mill")
    assert read_node(root, "ann")["state"]["location"] == "mill"
    assert narr("check").stdout == "ok: 1 event on the story line, 2 nodes valid\n"
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "trunk"
    narr("init", "--here", expect=INVALID_INPUT)


def test_reference_fields_take_a_name_and_store_the_id(two_lins: CLI, tmp_path: Path) -> None:
    narr, root = two_lins, two_lins.root
    narr("new", "item", "Jade Token")
    hut = tmp_path / "hut.json"
    hut.write_text(json.dumps({"id": "hut", "name": "Hut", "layer": "background", "kind": "place"}),
                   "utf-8")
    narr("event", "x", "--diffuser", "explicit", "--set", "Lin Xue.state.location=dr. wu's house",
         "--set", "jade token.state.holder=林远", "--set", "林远.state.location=hut",
         "--create", str(hut), "--set", "林远.state.mood=Lin Xue")
    assert read_node(root, "lin-xue")["state"]["location"] == "dr-wu-s-house"
    assert read_node(root, "jade-token")["state"]["holder"] == "lin-yuan"
    assert read_node(root, "lin-yuan")["state"]["location"] == "hut"  # made by the same event
    assert read_node(root, "lin-yuan")["state"]["mood"] == "Lin Xue"  # not a reference: as typed

    before = snapshot(root)
    result = narr("event", "x", "--diffuser", "explicit", "--set", "林远.state.location=LIN",
                  expect=INVALID_INPUT)
    assert result.stderr.splitlines()[0] == (
        "narr: error: --set '林远.state.location=LIN': 'LIN' names 2 nodes: "
        "lin-xue (Lin Xue), lin-yuan (林远)")
    result = narr("event", "x", "--diffuser", "explicit", "--set", "林远.state.location=Dr Wus",
                  expect=NOT_FOUND)
    assert result.stderr.splitlines() == [
        "narr: error: --set '林远.state.location=Dr Wus': no node named 'Dr Wus' in the world "
        "(state.location holds a node's id)",
        "hint: did you mean Dr. Wu's House (dr-wu-s-house)? narr nodes lists the nodes; to store "
        "'Dr Wus' as text, give it as a JSON string: --set '林远.state.location=\"Dr Wus\"'"]
    assert snapshot(root) == before
    narr("event", "x", "--diffuser", "explicit", "--set", '林远.state.location="Dr Wus"')
    assert read_node(root, "lin-yuan")["state"]["location"] == "Dr Wus"
