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
    assert made == {"id": "lin-yuan", "path": "world/character/lin-yuan.json", "name": "林远",
                    "layer": "character", "kind": "", "aliases": ["Lin Yuan"]}
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
        "hint: use the id of the one you mean (narr new --alias gives a node a name of its own)"]
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
