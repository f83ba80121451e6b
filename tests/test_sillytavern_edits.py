"""A book or a card narr exported, edited in SillyTavern, read back: what was changed there comes
home as hand edits of the nodes, never as a new section, and nothing is duplicated.

The edited files are written as SillyTavern writes them (``/api/worldinfo/edit`` saves the book
it holds with ``JSON.stringify(data, null, 4)``; its editor changes an entry's ``content``,
``disable``, ``constant``, ``key`` and, dragged, ``displayIndex`` in place and keeps every other
field, ``extensions`` too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import CLI, new_world, read_node, snapshot, world_nodes

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"




def _lore(tmp_path: Path) -> CLI:
    narr = new_world(tmp_path, "lore")
    narr("import", str(SPEC / "card-v3.json"))
    narr("import", str(SPEC / "worldinfo.json"))
    narr("event", "Qiao ties up at the landing", "--set", "wen-qiao.state.location=old-ferry-landing",
         "--set", "wen-qiao.state.mood=tired", "--relate", "wen-qiao:owes:lantern-guild")
    return narr


def _by_node(book: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["extensions"]["narr"]["node"]["id"]: e for e in book["entries"].values()}


def _as_sillytavern_saves(path: Path, book: dict[str, Any]) -> None:
    path.write_text(json.dumps(book, ensure_ascii=False, indent=4), encoding="utf-8")


def test_edits_made_in_sillytavern_come_home_as_hand_edits(tmp_path: Path) -> None:
    narr = _lore(tmp_path)
    exported = tmp_path / "world.json"
    narr("export", "lorebook", "-o", str(exported))
    book = json.loads(exported.read_text(encoding="utf-8"))
    entries = _by_node(book)
    before = world_nodes(narr.root)

    wen = entries["wen-qiao"]  # the summary, a section and the state, in one text
    summary = before["wen-qiao"]["summary"]
    assert wen["content"].startswith(summary + "\n\n")
    wen["content"] = (wen["content"]
                      .replace(summary, summary.replace("rows the last ferry", "rows the night ferry"))
                      .replace("秘密: 温乔在船底藏着", "秘密: 温乔在床底藏着")
                      .replace("mood: tired", "mood: calm"))
    entries["salt-tax"]["disable"] = True  # switched off
    entries["tone-of-the-harbour"]["constant"] = False  # constant off
    entries["lantern-guild"]["key"].append("the Guild")  # a key added
    entries["su-lan"]["displayIndex"] = 99  # dragged to the end
    _as_sillytavern_saves(exported, book)

    out = narr.json("import", str(exported))
    assert out["created"] == [] and out["related"] == []
    assert sorted((c["target"], c["field"]) for c in out["edits"]) == [
        ("lantern-guild", "/aliases"), ("salt-tax", "/extensions/sillytavern/entries"),
        ("su-lan", "/extensions/sillytavern/entries"), ("tone-of-the-harbour", "/always_in_view"),
        ("wen-qiao", "/sections/秘密"), ("wen-qiao", "/state/mood"), ("wen-qiao", "/summary")]
    after = world_nodes(narr.root)
    assert set(after) == set(before)  # nothing duplicated
    qiao = after["wen-qiao"]
    assert qiao["summary"] == summary.replace("rows the last ferry", "rows the night ferry")
    assert list(qiao["sections"]) == list(before["wen-qiao"]["sections"])  # no new section
    assert qiao["sections"]["秘密"] == "温乔在床底藏着一盏不属于她的青铜灯。"
    assert qiao["state"] == {**before["wen-qiao"]["state"], "mood": "calm"}
    assert qiao["state"]["location"] == "old-ferry-landing"  # written as a name, still the id
    assert after["tone-of-the-harbour"]["always_in_view"] is False
    assert after["lantern-guild"]["aliases"] == [*before["lantern-guild"]["aliases"], "the Guild"]
    for node_id in set(after) - {"wen-qiao", "tone-of-the-harbour", "lantern-guild", "salt-tax", "su-lan"}:
        assert after[node_id] == before[node_id], node_id
    lines = narr("log", "-n", "1").stdout
    assert "Import world.json" in lines
    existing = {e["id"]: e for e in out["existing"]}
    assert existing["wen-qiao"]["how"] == "narr's own export"
    assert "/state/mood (state 'mood')" in existing["wen-qiao"]["added"]

    # the next export says what SillyTavern says now; the same file again adds nothing
    again = _by_node(json.loads(narr("export", "lorebook").stdout))
    assert again["salt-tax"]["disable"] is True and again["tone-of-the-harbour"]["constant"] is False
    assert again["lantern-guild"]["key"] == entries["lantern-guild"]["key"]
    assert again["su-lan"]["displayIndex"] == 99
    assert again["wen-qiao"]["content"] == wen["content"]
    snap = snapshot(narr.root)
    assert narr.json("import", str(exported))["commit"] is None
    assert snapshot(narr.root) == snap


def test_a_field_changed_in_narr_since_the_export_keeps_narrs_value(tmp_path: Path) -> None:
    narr = _lore(tmp_path)
    book = json.loads(narr("export", "lorebook").stdout)
    wen = _by_node(book)["wen-qiao"]
    wen["content"] = wen["content"].replace("mood: tired", "mood: calm")
    path = tmp_path / "book.json"
    _as_sillytavern_saves(path, book)
    narr("event", "Qiao sleeps", "--set", "wen-qiao.state.mood=rested")
    out = narr.json("import", str(path))
    assert out["edits"] == [] and out["commit"] is None
    notes = {e["id"]: e["notes"] for e in out["existing"]}["wen-qiao"]
    assert notes == ['state \'mood\': changed in narr too since the export, so narr\'s "rested" is kept '
                     '(SillyTavern has "calm")']
    assert read_node(narr.root, "wen-qiao")["state"]["mood"] == "rested"


def test_edits_into_a_world_without_the_nodes_make_them_as_edited(tmp_path: Path) -> None:
    narr = _lore(tmp_path)
    book = json.loads(narr("export", "lorebook").stdout)
    entries = _by_node(book)
    entries["tone-of-the-harbour"]["constant"] = False
    entries["salt-tax"]["disable"] = True
    path = tmp_path / "book.json"
    _as_sillytavern_saves(path, book)
    other = new_world(tmp_path, "other")
    other("import", str(path))
    assert read_node(other.root, "tone-of-the-harbour").get("always_in_view") is not True
    out = _by_node(json.loads(other("export", "lorebook").stdout))
    assert out["salt-tax"]["disable"] is True


def test_user_macros_survive_export_import_export(tmp_path: Path) -> None:
    narr = _lore(tmp_path)
    card = json.loads(narr("export", "card", "wen-qiao").stdout)
    assert "{{user}} is the passenger" in card["data"]["description"]
    assert "{{char}}" in card["data"]["description"]
    path = tmp_path / "wen.json"
    _as_sillytavern_saves(path, card)
    copy = new_world(tmp_path, "copy")
    copy("import", str(path))
    assert "{{user}} is the passenger" in read_node(copy.root, "wen-qiao")["summary"]
    again = json.loads(copy("export", "card", "wen-qiao").stdout)
    assert again["data"]["description"] == card["data"]["description"]
    salt = _by_node(json.loads(copy("export", "lorebook").stdout))["salt-tax"]
    assert "{{user}}'s presence" in salt["content"] and "{{char}} likes to quote" in salt["content"]


def test_a_card_edited_in_sillytavern(tmp_path: Path) -> None:
    narr = _lore(tmp_path)
    card = json.loads(narr("export", "card", "wen-qiao").stdout)
    data = card["data"]
    data["description"] = data["description"].replace("rows the last ferry", "rows the night ferry")
    data["personality"] = "Patient and dry."
    data["first_mes"] = "*The ferry bumps the pier.* Fare first, {{user}}."
    data["tags"] = [*data["tags"], "night"]
    habits = next(e for e in data["character_book"]["entries"] if e["comment"] == "秘密")
    habits["content"] = "温乔在床底藏着一盏灯。"
    path = tmp_path / "wen.json"
    _as_sillytavern_saves(path, card)
    out = narr.json("import", str(path))
    assert sorted(c["field"] for c in out["edits"]) == [
        "/extensions/sillytavern/card/data/first_mes", "/sections/秘密", "/summary", "/tags",
        "/traits/personality"]
    wen = read_node(narr.root, "wen-qiao")
    assert "rows the night ferry" in wen["summary"] and wen["traits"]["personality"] == "Patient and dry."
    assert wen["sections"]["秘密"] == "温乔在床底藏着一盏灯。"
    assert wen["extensions"]["sillytavern"]["card"]["data"]["first_mes"] == data["first_mes"]
    assert wen["tags"][-1] == "night"
    assert narr.json("import", str(path))["commit"] is None
