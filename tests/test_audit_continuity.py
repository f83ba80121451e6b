"""``narr audit`` out of the box: worlds made with ``narr init --rules en|zh`` and ``narr new``.

A chapter holding each kind of contradiction (a dead man walking in and speaking, a
dialogue tag and a pronoun of his, a secret told by one who does not know it, a gift
of something somebody else holds, a gift between two people in different places, an
eaten or burnt thing used again, a secret learnt twice as a note) is flagged, exit 20,
each finding with its fact in words and as data; a clean chapter whose actions change
the world in order passes; bad input gets one clear message and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, read_node, snapshot

CONTINUITY, INVALID_INPUT = 20, 12


def _world(tmp_path: Path, rules: str) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", rules)
    return CLI(root)


def _commit(narr: CLI, content: str) -> str:
    return next(e["commit"] for e in narr.json("log")["items"] if e["content"] == content)[:10]


@pytest.fixture
def western(tmp_path: Path) -> CLI:
    narr = _world(tmp_path, "en")
    narr("new", "character", "Mayor Hale", "--alias", "the Mayor")
    for name in ("Ada Lane", "Tom Reed", "Old Rowe"):
        narr("new", "character", name)
    narr("new", "background", "town hall", "--kind", "place")
    narr("new", "background", "saloon", "--kind", "place")
    narr("new", "item", "revolver")
    narr("new", "item", "sealed letter", "--alias", "the letter")
    narr("new", "item", "silver coin")
    narr("new", "background", "the Mayor's affair", "--kind", "secret")
    rowe = read_node(narr.root, "old-rowe")
    edit_node(narr.root, "old-rowe", traits={**rowe["traits"], "pronouns": "he"})
    for text in ("Mayor Hale walks to the town hall.", "Ada Lane walks to the town hall.",
                 "Tom Reed walks to the saloon.", "Tom Reed takes the revolver.",
                 "Ada Lane takes the sealed letter.", "Ada Lane burns the letter.",
                 "Mayor Hale takes the silver coin.", "Old Rowe walks to the saloon.",
                 "Old Rowe dies.", "Mayor Hale learns the Mayor's affair."):
        narr("event", text)
    return narr


WEST = """\
Old Rowe walks into the saloon. Old Rowe says nothing.
"Leave," said Old Rowe. He sighs.
Ada Lane tells Tom Reed the Mayor's affair.
Ada Lane gives the revolver to Mayor Hale.
Mayor Hale gives Tom Reed the silver coin.
Ada Lane picks up the letter.
Mayor Hale learns the Mayor's affair.
"""


def _kinds(out: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(f["number"], f["check"] if f["check"] != "require" else f"rule {f['rule']}", f["node"])
            for f in out["findings"]]


def test_an_english_chapter_holding_every_kind_of_contradiction(western: CLI) -> None:
    narr = western
    before = snapshot(narr.root)
    result = narr("audit", "-", input=WEST, expect=CONTINUITY)
    out = narr.json("audit", "-", input=WEST, expect=CONTINUITY)
    assert _kinds(out) == [
        (1, "rule go", "old-rowe"), (2, "dead", "old-rowe"), (3, "dead", "old-rowe"),
        (4, "dead", "old-rowe"), (5, "rule tell", "ada-lane"), (6, "rule give", "ada-lane"),
        (7, "apart", "mayor-hale"), (8, "ended", "sealed-letter")]
    c = {k: _commit(narr, k) for k in ("Old Rowe dies.", "Tom Reed takes the revolver.",
                                        "Ada Lane burns the letter.", "Tom Reed walks to the saloon.",
                                        "Mayor Hale walks to the town hall.",
                                        "Mayor Hale learns the Mayor's affair.")}
    facts = [f["fact"] for f in out["findings"]]
    dead = f"Old Rowe is dead, since 'Old Rowe dies.' (event {c['Old Rowe dies.']})"
    assert facts == [
        dead, dead, dead, dead,
        "Ada Lane does not know the Mayor's affair; those who know it: Mayor Hale",
        f"revolver is held by Tom Reed, since 'Tom Reed takes the revolver.' "
        f"(event {c['Tom Reed takes the revolver.']})",
        f"Mayor Hale is at town hall, since 'Mayor Hale walks to the town hall.' (event "
        f"{c['Mayor Hale walks to the town hall.']}); Tom Reed is at saloon, since 'Tom Reed walks "
        f"to the saloon.' (event {c['Tom Reed walks to the saloon.']})",
        f"sealed letter ended in 'Ada Lane burns the letter.' (event "
        f"{c['Ada Lane burns the letter.']}, expired)",
    ]
    assert [f["words"] for f in out["findings"][1:4]] == ["Old Rowe says", "said Old Rowe", "He sighs"]
    give, apart, ended = out["findings"][5:8]
    assert give["holder"] == {"id": "tom-reed", "name": "Tom Reed"}
    assert give["since_event"]["content"] == "Tom Reed takes the revolver."
    assert {k: v["place"] for k, v in apart["locations"].items()} == {
        "mayor-hale": "town-hall", "tom-reed": "saloon"}
    assert apart["locations"]["tom-reed"]["since_event"]["content"] == "Tom Reed walks to the saloon."
    assert ended["ended_by"]["content"] == "Ada Lane burns the letter." and ended["ended_by"][
        "reason"] == "expired"
    assert [(n["number"], n["check"], n["node"]) for n in out["notes"]] == [
        (9, "known", "mayor-hale")]
    assert result.stdout.splitlines()[-2] == (
        "note: sentence 9: Mayor Hale learns the Mayor's affair again: Mayor Hale knows the Mayor's "
        f"affair already, since \"Mayor Hale learns the Mayor's affair.\" (event "
        f"{c['Mayor Hale learns the Mayor' + chr(39) + 's affair.']})")
    assert "  'He sighs' (a dead character acts)" in result.stdout.splitlines()
    assert snapshot(narr.root) == before  # a dry run: nothing written


def test_an_english_chapter_that_changes_the_world_in_order_passes(western: CLI) -> None:
    narr = western
    clean = ("Ada Lane walks to the saloon. Tom Reed gives Ada Lane the revolver. "
             "Ada Lane walks to the town hall. Ada Lane gives the Mayor the revolver.\n"
             "The Mayor tells Ada Lane the Mayor's affair. Ada Lane tells Tom Reed the Mayor's "
             "affair. Old Rowe lies dead in the saloon. Tom Reed remembers the letter.\n"
             "If Old Rowe walks in, Tom Reed runs. Nobody knows whether Old Rowe said anything.\n"
             "Old Rowe is lying by the door. Old Rowe had always hated the rain. Did Old Rowe "
             "speak? Old Rowe does not move.\n")
    out = narr.json("audit", "-", input=clean)
    assert out["ok"] is True and out["findings"] == [] and out["notes"] == []
    assert narr("audit", "-", input=clean).stdout.startswith("ok: 14 sentences, nothing contradicts")


@pytest.fixture
def sect(tmp_path: Path) -> CLI:
    narr = _world(tmp_path, "zh")
    for name in ("陆青云", "莫长老", "苏晴"):
        narr("new", "character", name)
    narr("new", "background", "藏经阁", "--kind", "place")
    narr("new", "background", "渡口", "--kind", "place")
    for name in ("筑基丹", "玉令牌", "寒冰剑"):
        narr("new", "item", name)
    narr("new", "background", "掌门的秘密", "--kind", "secret")
    narr("new", "background", "身世之谜", "--kind", "secret")
    mo = read_node(narr.root, "mo-zhang-lao")
    edit_node(narr.root, "mo-zhang-lao", traits={**mo["traits"], "pronouns": "he"})
    for text in ("陆青云来到藏经阁。", "苏晴来到渡口。", "莫长老来到藏经阁。", "莫长老拿起寒冰剑。",
                 "苏晴拿起玉令牌。", "陆青云拿起筑基丹。", "陆青云吃下筑基丹。", "莫长老死了。",
                 "苏晴得知身世之谜。"):
        narr("event", text)
    return narr


EAST = "莫长老走进藏经阁。莫长老说：“走吧。”他道：“快走。”\n苏晴把掌门的秘密告诉陆青云。\n" \
       "陆青云把寒冰剑交给苏晴。\n苏晴把玉令牌交给陆青云。\n陆青云又吃下筑基丹。\n苏晴得知身世之谜。\n"


def test_a_chinese_chapter_holding_every_kind_of_contradiction(sect: CLI) -> None:
    narr = sect
    before = snapshot(narr.root)
    out = narr.json("audit", "-", input=EAST, expect=CONTINUITY)
    assert _kinds(out) == [
        (1, "rule go", "mo-zhang-lao"), (2, "dead", "mo-zhang-lao"), (3, "dead", "mo-zhang-lao"),
        (4, "rule tell", "su-qing"), (5, "rule give", "lu-qing-yun"), (6, "apart", "su-qing"),
        (7, "ended", "zhu-ji-dan")]
    c = {k: _commit(narr, k) for k in ("莫长老死了。", "莫长老拿起寒冰剑。", "苏晴来到渡口。",
                                        "陆青云来到藏经阁。", "陆青云吃下筑基丹。")}
    dead = f"莫长老 is dead, since '莫长老死了。' (event {c['莫长老死了。']})"
    assert [f["fact"] for f in out["findings"]] == [
        dead, dead, dead,
        "苏晴 does not know 掌门的秘密; nobody knows it",
        f"寒冰剑 is held by 莫长老, since '莫长老拿起寒冰剑。' (event {c['莫长老拿起寒冰剑。']})",
        f"苏晴 is at 渡口, since '苏晴来到渡口。' (event {c['苏晴来到渡口。']}); 陆青云 is at 藏经阁, "
        f"since '陆青云来到藏经阁。' (event {c['陆青云来到藏经阁。']})",
        f"筑基丹 ended in '陆青云吃下筑基丹。' (event {c['陆青云吃下筑基丹。']}, expired)",
    ]
    assert [f["words"] for f in out["findings"][1:3]] == ["莫长老说", "他道"]
    assert [(n["number"], n["check"], n["node"]) for n in out["notes"]] == [(8, "known", "su-qing")]
    assert snapshot(narr.root) == before


def test_a_chinese_chapter_that_changes_the_world_in_order_passes(sect: CLI) -> None:
    narr = sect
    clean = ("苏晴来到藏经阁。苏晴把玉令牌交给陆青云。陆青云把玉令牌交给苏晴。苏晴得知掌门的秘密。"
             "苏晴把掌门的秘密告诉陆青云。莫长老的尸体躺在藏经阁。陆青云想起筑基丹。如果莫长老走进来，苏晴就走。\n")
    out = narr.json("audit", "-", input=clean)
    assert out["ok"] is True and out["findings"] == [] and out["notes"] == []


def test_bad_input_gets_a_clear_message_and_writes_nothing(western: CLI, tmp_path: Path) -> None:
    narr = western
    before = snapshot(narr.root)
    binary = tmp_path / "chapter.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    err = json.loads(narr("audit", str(binary), "--json", expect=INVALID_INPUT).stderr)
    assert err["error"] == f"{binary} is not text (it holds NUL bytes: a binary file?)"
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("Ada Lane walks to the café.".encode("latin-1"))
    assert narr("audit", str(latin), expect=INVALID_INPUT).stderr.startswith(
        f"narr: error: {latin} is not UTF-8 text (byte 25:")
    assert narr("audit", "-", input="", expect=INVALID_INPUT).stderr == (
        "narr: error: the chapter is empty\nhint: give a file of prose, or - for stdin\n")
    huge = tmp_path / "huge.md"
    huge.write_text("Ada Lane walks to the saloon. " * 180_000, "utf-8")  # 5.4 MB
    assert narr("audit", str(huge), expect=INVALID_INPUT).stderr.startswith(
        "narr: error: the chapter is 5400000 characters; audit takes at most 1000000\n")
    thai = narr.json("audit", "-", input="สวัสดีครับ วันนี้อากาศดี\nПривет, мир. Ничего не случилось.\n")
    assert thai["ok"] is True and thai["sentences"] == 3 and thai["findings"] == []
    assert thai["warnings"] == ["no sentence names a node of this world: is the chapter in the "
                                "world's language, and are its people and places nodes?"]
    assert narr("audit", str(tmp_path / "missing.md"), expect=2).stderr  # click: no such file
    assert snapshot(narr.root) == before
