"""Where people stand and who holds what are edges of the world graph, wherever it is used.

``state.location`` and ``state.holder`` (and the reference fields a world declares in
``narr.toml``) hold node ids; graph exports draw them ("at", "held by"), ``graph connect``
walks them, ``--around`` and the brief's neighbourhood reach through them.
"""

from __future__ import annotations

import io
from pathlib import Path

import networkx as nx
import pytest
from helpers import CLI, snapshot

INVALID_WORLD = 13


@pytest.fixture
def valley(tmp_path: Path) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", "zh")
    narr = CLI(root)
    narr("new", "character", "玄冥老祖")
    narr("new", "character", "白霜")
    narr("new", "background", "万妖谷", "--kind", "place")
    narr("new", "item", "寒冰剑")
    narr("event", "玄冥老祖来到万妖谷")
    narr("event", "白霜来到万妖谷")
    narr("event", "白霜拿起寒冰剑")
    return narr


def test_connect_finds_the_path_through_a_shared_place(valley: CLI) -> None:
    narr = valley
    assert narr("graph", "connect", "玄冥老祖", "白霜").stdout == (
        "xuan-ming-lao-zu -at-> wan-yao-gu <-at- bai-shuang\n")
    c = narr.json("graph", "connect", "玄冥老祖", "白霜")
    assert c["length"] == 2 and c["paths"] == [[
        {"from": "xuan-ming-lao-zu", "to": "wan-yao-gu",
         "relations": [{"type": "at", "direction": "forward", "field": "/state/location"}]},
        {"from": "wan-yao-gu", "to": "bai-shuang",
         "relations": [{"type": "at", "direction": "backward", "field": "/state/location"}]}]]
    sword = narr.json("graph", "connect", "寒冰剑", "白霜")["paths"][0]
    assert [(r["type"], r["direction"]) for h in sword for r in h["relations"]] == [
        ("held by", "forward"), ("holds", "backward")]


def test_dot_and_graphml_carry_location_and_holder_edges(valley: CLI) -> None:
    narr = valley
    dot = narr("graph", "world").stdout
    assert '"xuan-ming-lao-zu" -> "wan-yao-gu" [label="at"];' in dot
    assert '"bai-shuang" -> "wan-yao-gu" [label="at"];' in dot
    assert '"han-bing-jian" -> "bai-shuang" [label="held by"];' in dot
    assert '"bai-shuang" -> "han-bing-jian" [label="holds"];' in dot
    g = nx.read_graphml(io.BytesIO(narr("graph", "world", "--format", "graphml").stdout.encode()))
    edges = {(a, b, d["label"], d["kind"], d.get("field")) for a, b, d in g.edges(data=True)}
    assert ("xuan-ming-lao-zu", "wan-yao-gu", "at", "reference", "/state/location") in edges
    assert ("han-bing-jian", "bai-shuang", "held by", "reference", "/state/holder") in edges
    assert ("bai-shuang", "han-bing-jian", "holds", "relation", None) in edges
    assert narr.json("graph")["world"] == {"nodes": 4, "edges": 4}
    past = narr("graph", "world", "--at", "HEAD~1").stdout  # before she took the sword
    assert '"bai-shuang" -> "wan-yao-gu" [label="at"];' in past and "held by" not in past


def test_around_and_the_brief_reach_through_a_place(valley: CLI) -> None:
    narr = valley
    near = narr("graph", "world", "--around", "玄冥老祖", "--depth", "2", "--format", "mermaid").stdout
    assert "白霜" in near and "寒冰剑" not in near  # three steps away: the place, her, her sword
    assert "白霜" not in narr("graph", "world", "--around", "玄冥老祖", "--depth", "1",
                             "--format", "mermaid").stdout
    b = narr.json("brief", "--focus", "玄冥老祖", "--budget", "100000")
    around = {i["node"]: i["reason"] for i in b["items"] if i["section"] == "neighbourhood"}
    assert around["wan-yao-gu"].startswith("1 relation from the focus")
    assert around["bai-shuang"].startswith("2 relations from the focus")


def test_a_world_declares_its_own_reference_fields(valley: CLI) -> None:
    narr = valley
    toml = narr.root / "narr.toml"
    toml.write_text(toml.read_text("utf-8") + '\n[references]\n"state.home" = "lives at"\n', "utf-8")
    narr("event", "家", "--set", "白霜.state.home=万妖谷")
    assert narr("get", "白霜", "state.home").stdout == "wan-yao-gu\n"  # the name became the id
    assert '"bai-shuang" -> "wan-yao-gu" [label="lives at"];' in narr("graph", "world").stdout
    assert [r["type"] for r in narr.json("graph", "connect", "白霜", "万妖谷")["paths"][0][0][
        "relations"]] == ["lives at", "at"]
    assert "warning" not in narr("status").stderr  # a known table, not a misspelt key


@pytest.mark.parametrize(("table", "message"), [
    ('[references]\n"name" = "x"\n', "references: 'name' must be a field under state or traits"),
    ('[references]\n"state.home" = ""\n', "references: 'state.home': the label must be a line"),
    ('[references]\n"state.home" = 3\n', "references: 'state.home': the label must be a line"),
    ('[references]\n"traits." = "x"\n', "references: 'traits.' must be a field under state"),
])
def test_a_bad_reference_table_is_named(valley: CLI, table: str, message: str) -> None:
    narr = valley
    toml = narr.root / "narr.toml"
    toml.write_text(toml.read_text("utf-8") + "\n" + table, "utf-8")
    before = snapshot(narr.root)
    err = narr("graph", "world", expect=INVALID_WORLD).stderr
    assert err.startswith(f"narr: error: narr.toml: {message}")
    assert snapshot(narr.root) == before
