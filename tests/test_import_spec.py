"""``narr import`` of the fixtures written from the card specs, World Info and an Obsidian vault.

Each test says where every entry's text went (which node, which section) and checks that no text
of the fixture is missing from the world; ``tests/data/import/spec/README.md`` says which spec
field each fixture exercises.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, read_node, snapshot, world_nodes

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"
V3 = json.loads((SPEC / "card-v3.json").read_text(encoding="utf-8"))
WI = json.loads((SPEC / "worldinfo.json").read_text(encoding="utf-8"))


def _world(tmp_path: Path, name: str = "w") -> CLI:
    CLI(tmp_path)("init", str(tmp_path / name))
    return CLI(tmp_path / name)



def _macros(text: str, user: str) -> str:
    return re.sub(r"\{\{\s*user\s*\}\}|<user>", user, text, flags=re.IGNORECASE)


def _texts(node: dict[str, Any]) -> list[str]:
    return [node.get("summary", ""), *(node.get("sections") or {}).values(),
            *(v for v in (node.get("traits") or {}).values() if isinstance(v, str))]


def _where(out: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {e["source"]: (e["node"], e["section"]) for e in out["entries"]}


def test_the_derived_fixtures_are_what_the_script_makes() -> None:
    spec = importlib.util.spec_from_file_location("make_fixtures", SPEC / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, payload in module.build().items():
        assert (SPEC / name).read_bytes() == payload, f"{name}: run make_fixtures.py"


V3_PLACES = {
    "#0": ("wen-qiao", "Wen Qiao — basics"), "#1": ("wen-qiao", "Wen Qiao — personality"),
    "#2": ("wen-qiao", "Wen Qiao — relationships"), "#3": ("wen-qiao", "秘密"),
    "#4": ("lantern-guild", None), "#5": ("old-ferry-landing", None), "#6": ("the-river-lan", None),
    "#8": ("old-heng", None), "#9": ("su-lan", None), "#10": ("night-market", None),
}


@pytest.mark.parametrize("fixture", ["card-v3.json", "card-v3.png", "card-v3.charx"])
def test_a_v3_card_every_entry_lands_and_none_is_lost(tmp_path: Path, fixture: str) -> None:
    narr = _world(tmp_path)
    out = narr.json("import", str(SPEC / fixture))
    assert out["sources"][0]["path"] == fixture and out["sources"][0]["entries"] == 12
    assert _where(out) == {fixture: ("wen-qiao", None),
                           **{fixture + k: v for k, v in V3_PLACES.items()}}
    assert out["skipped"] == [{"source": f"{fixture}#7", "title": "Sealed chapter — do not open",
                               "reason": "a disabled entry (--include-disabled imports it)"}]
    nodes = world_nodes(narr.root)
    assert set(nodes) == {node for node, _ in V3_PLACES.values()}
    data = V3["data"]
    for i, raw in enumerate(data["character_book"]["entries"]):  # no entry's text is missing
        if raw["enabled"]:
            node = nodes[V3_PLACES[f"#{i}"][0]]
            assert raw["content"].strip() in _texts(node), i  # as written, macros and all

    wen = nodes["wen-qiao"]
    # the macros stay as the card has them, so that SillyTavern reads them again; the
    # description is the summary
    assert wen["summary"] == data["description"].strip()
    assert wen["summary"].startswith("{{char}} (温乔) rows") and "{{user}} is the passenger" in wen["summary"]
    assert (wen["layer"], wen["kind"], wen["traits"]) == ("character", "person",
                                                          {"personality": data["personality"]})
    assert wen["aliases"] == ["Qiao", "温乔", "ferry-woman"]
    assert wen["tags"] == ["river", "ferry", "渡口", "slow burn"]
    assert list(wen["sections"]) == ["Wen Qiao — basics", "Wen Qiao — personality",
                                     "Wen Qiao — relationships", "秘密"]
    assert "{{user}} reminds her of someone who drowned" in wen["sections"]["Wen Qiao — relationships"]
    card = wen["extensions"]["sillytavern"]["card"]
    assert (card["spec"], card["spec_version"]) == ("chara_card_v3", "3.0")
    for field in ("scenario", "first_mes", "mes_example", "alternate_greetings", "group_only_greetings",
                  "system_prompt", "post_history_instructions", "creator_notes",
                  "creator_notes_multilingual", "creator", "character_version", "nickname", "source",
                  "creation_date", "modification_date", "extensions"):
        assert card["data"][field] == data[field], field  # kept as written, macros and all
    assert not card["data"]["creator_notes"].startswith("This character card is Character Card V3")
    assert card["character_book"] == {k: v for k, v in data["character_book"].items() if k != "entries"}
    records = wen["extensions"]["sillytavern"]["entries"]
    assert [(r["source"], r["section"]) for r in records] == [
        (f"{fixture}#{i}", V3_PLACES[f"#{i}"][1]) for i in range(4)]
    relationships = records[2]["entry"]
    assert (relationships["selective"], relationships["secondary_keys"],
            relationships["extensions"]["selectiveLogic"]) == (True, ["Lantern Guild", "灯会", "Old Heng"], 0)
    assert "content" not in relationships  # that is in the section

    guild = nodes["lantern-guild"]  # titled 组织设定, a memo: named by its first key
    assert (guild["name"], guild["aliases"]) == ("Lantern Guild", ["灯会"])
    assert out["entries"][5]["named_by"] == "first key (the title reads as a memo)"
    assert (nodes["old-heng"]["name"], nodes["su-lan"]["name"]) == ("Old Heng", "Su Lan")  # 人物设定 twice
    assert "Old Heng" not in wen["aliases"]  # a secondary key is no name
    landing = nodes["old-ferry-landing"]  # the entry's "name" field titles it
    assert landing["aliases"] == ["old landing", "旧渡口"]
    assert nodes["night-market"]["aliases"] == ["夜市"]  # use_regex: "night ?market" is a pattern
    river = nodes["the-river-lan"]
    assert river["always_in_view"] is True  # constant
    assert not any(n.get("always_in_view") for i, n in nodes.items() if i != "the-river-lan")
    assert "Spoiler" not in json.dumps(nodes, ensure_ascii=False)  # the disabled entry is left out

    before = snapshot(narr.root)
    again = narr.json("import", str(SPEC / fixture))
    assert again["commit"] is None and _where(again) == _where(out)
    assert snapshot(narr.root) == before


@pytest.mark.parametrize("fixture", ["card-v2.json", "card-v2.png"])
def test_a_v2_card_has_no_nickname(tmp_path: Path, fixture: str) -> None:
    narr = _world(tmp_path)
    out = narr.json("import", str(SPEC / fixture))
    assert _where(out)[fixture + "#3"] == ("wen-qiao", "秘密")
    wen = read_node(narr.root, "wen-qiao")
    assert wen["summary"].startswith("{{char}} (温乔) rows")
    assert wen["aliases"] == ["温乔", "ferry-woman", "Qiao"]
    card = wen["extensions"]["sillytavern"]["card"]
    assert (card["spec"], card["spec_version"]) == ("chara_card_v2", "2.0")
    assert "nickname" not in card["data"]


def test_a_png_with_both_chunks_is_read_from_ccv3(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    out = narr.json("import", str(SPEC / "card-v3.png"))
    assert out["sources"] == [{"path": "card-v3.png", "format": "character card (PNG)", "entries": 12}]
    card = read_node(narr.root, "wen-qiao")["extensions"]["sillytavern"]["card"]
    assert card["spec"] == "chara_card_v3"  # the chara chunk holds the V2 backfill with its warning


def test_include_disabled_keeps_the_flag(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    out = narr.json("import", str(SPEC / "card-v3.json"), "--include-disabled")
    assert out["skipped"] == []
    assert _where(out)["card-v3.json#7"] == ("sealed-chapter-do-not-open", None)
    node = read_node(narr.root, "sealed-chapter-do-not-open")
    assert node["summary"].startswith("Spoiler for the last act")
    assert node["extensions"]["sillytavern"]["entries"][0]["entry"]["enabled"] is False
    book = json.loads(narr("export", "lorebook").stdout)
    sealed = [e for e in book["entries"].values() if e["comment"] == node["name"]]
    assert [e["disable"] for e in sealed] == [True]  # and it goes back out disabled


def test_the_user_name_is_configurable(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    narr("import", str(SPEC / "card-v3.json"), "--user", "Mei")
    summary = read_node(narr.root, "wen-qiao")["summary"]
    assert summary == _macros(V3["data"]["description"], "Mei").strip()
    assert "Mei is the passenger" in summary and "{{char}} (温乔)" in summary  # {{char}} stays
    other = _world(tmp_path, "x")
    toml = other.root / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[import]\nuser = "阿梅"\n', encoding="utf-8")
    other("import", str(SPEC / "card-v3.json"))
    assert "阿梅 is the passenger" in read_node(other.root, "wen-qiao")["summary"]
    assert "warning" not in other("status").stderr  # [import] user is a known setting


@pytest.mark.parametrize("fixture", ["card-v1.json", "card-v1.png"])
def test_a_v1_card_and_every_macro_spelling(tmp_path: Path, fixture: str) -> None:
    narr = _world(tmp_path)
    out = narr.json("import", str(SPEC / fixture))
    assert _where(out) == {fixture: ("old-heng", None)}
    heng = read_node(narr.root, "old-heng")
    v1 = json.loads((SPEC / "card-v1.json").read_text(encoding="utf-8"))
    assert heng["layer"] == "character"
    assert heng["summary"] == v1["description"].strip()  # every spelling as written
    assert heng["summary"].startswith("<BOT> has rowed") and 'calls <user> "young master"' in heng["summary"]
    assert heng["traits"] == {"personality": v1["personality"]}
    record = heng["extensions"]["sillytavern"]["card"]
    assert "spec" not in record and record["data"] == {k: v1[k] for k in ("scenario", "first_mes",
                                                                           "mes_example")}


def test_a_card_in_a_folder_after_a_book_about_it_is_still_a_character(tmp_path: Path) -> None:
    """Files are read in name order: the book (a-book.json) made its background node first."""
    folder = tmp_path / "bible"
    folder.mkdir()
    (folder / "a-book.json").write_text(json.dumps({"entries": {"0": {
        "uid": 0, "key": ["Old Heng"], "comment": "Old Heng", "content": "A rival ferryman."}}}),
        encoding="utf-8")
    (folder / "card.json").write_text((SPEC / "card-v1.json").read_text(encoding="utf-8"), encoding="utf-8")
    narr = _world(tmp_path)
    out = narr.json("import", str(folder))
    assert [c["id"] for c in out["created"]] == ["old-heng"]
    heng = read_node(narr.root, "old-heng")
    assert heng["layer"] == "character"
    assert heng["sections"] == {"Old Heng": "A rival ferryman."}
    assert _where(out) == {"card.json": ("old-heng", None), "a-book.json#0": ("old-heng", "Old Heng")}


WI_PLACES = {"#0": ("duxi-harbour-town", None), "#1": ("duxi-harbour-town", "Duxi — customs"),
             "#2": ("su-lan", None), "#3": ("tone-of-the-harbour", None), "#7": ("salt-tax", None),
             "#8": ("duxi-harbour-8", None)}


def test_a_world_info_file(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    result = narr("import", str(SPEC / "worldinfo.json"))
    assert result.stderr == ""
    out = narr.json("import", str(SPEC / "worldinfo.json"), "--dry-run")  # the same report, nothing to do
    assert out["commit"] is None
    assert _where(out) == {f"worldinfo.json{k}": v for k, v in WI_PLACES.items()}
    assert out["skipped"] == [{"source": "worldinfo.json#4", "title": "Draft — unused",
                               "reason": "a disabled entry (--include-disabled imports it)"}]
    nodes = world_nodes(narr.root)
    for uid, raw in WI["entries"].items():
        if not raw["disable"]:
            node = nodes[WI_PLACES[f"#{uid}"][0]]
            assert raw["content"].strip() in _texts(node), uid
    duxi = nodes["duxi-harbour-town"]
    assert (duxi["name"], duxi["aliases"]) == ("Duxi harbour town", ["Duxi", "渡西"])
    su = nodes["su-lan"]  # legacy comma keys, split; the memo title gives way to the first key
    assert (su["name"], su["aliases"]) == ("Su Lan", ["苏岚", "the clerk"])
    record = su["extensions"]["sillytavern"]["entries"][0]
    assert record["shape"] == "world info" and record["book"] == "Duxi Harbour"
    assert {k: record["entry"][k] for k in ("keysecondary", "selectiveLogic", "position", "depth", "role",
                                            "probability", "group")} == {
        "keysecondary": "ledger, 账本", "selectiveLogic": 1, "position": 4, "depth": 2, "role": 0,
        "probability": 80, "group": "guild people"}
    assert nodes["tone-of-the-harbour"]["always_in_view"] is True
    assert nodes["salt-tax"]["summary"] == WI["entries"]["7"]["content"]
    assert nodes["duxi-harbour-8"]["name"] == "Duxi Harbour #8"  # no title, no key
    assert "duxi-customs" not in nodes and "smugglers-cove" not in nodes


VAULT_NODES = {
    "wen-qiao": ("Wen Qiao", "character", "person"), "old-heng": ("Old Heng", "character", "ferryman"),
    "old-landing": ("Old Landing", "background", "place"),
    "lantern-guild": ("Lantern Guild", "background", "faction"),
    "bronze-lantern": ("Bronze Lantern", "item", "lamp"), "river-fog": ("River Fog", "ambient", "weather"),
    "su-lan": ("Su Lan", "background", ""), "tide-table": ("Tide Table", "background", ""),
}


def test_an_obsidian_vault(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    result = narr("import", str(SPEC / "vault"))
    assert "People/Wen Qiao.md: [[Wen Qiao]] links the note to itself; no relation" in result.stderr
    assert "  missing: Items/Bronze Lantern.md links [[The Lost Ledger]], a note that is not there" \
        in result.stdout.splitlines()
    out = narr.json("import", str(SPEC / "vault"), "--dry-run")
    assert out["commit"] is None  # everything is there: the loops and the self-link make no trouble
    assert out["missing"] == [{"source": "Items/Bronze Lantern.md", "link": "[[The Lost Ledger]]",
                               "target": "The Lost Ledger"}]
    assert [(s["source"], s["reason"]) for s in out["skipped"]] == [
        (".obsidian/", "a hidden file or folder"), (".trash/", "a hidden file or folder"),
        ("Drafts/", "listed in .narrignore"),
        ("Journal/", "the daily notes folder (.obsidian/daily-notes.json)"),
        ("Templates/", "a templates folder")]
    nodes = world_nodes(narr.root)
    assert {i: (n["name"], n["layer"], n["kind"]) for i, n in nodes.items()} == VAULT_NODES
    assert {e["source"]: e["node"] for e in out["entries"]} == {
        "People/Wen Qiao.md": "wen-qiao", "People/Old Heng.md": "old-heng",
        "Places/Old Landing.md": "old-landing", "Factions/Lantern Guild.md": "lantern-guild",
        "Items/Bronze Lantern.md": "bronze-lantern", "Ambient/River Fog.md": "river-fog",
        "Notes/Su Lan.md": "su-lan", "Notes/Tide Table.md": "tide-table"}
    relations = {i: {t: sorted(d) for t, d in n["relations"].items()} for i, n in nodes.items()
                 if n["relations"]}
    assert relations == {
        "wen-qiao": {"mentions": ["bronze-lantern", "lantern-guild", "old-heng", "old-landing"]},
        "old-heng": {"rival": ["wen-qiao"]},  # the front matter names the type; no second "mentions"
        "old-landing": {"mentions": ["lantern-guild", "wen-qiao"]},
        "lantern-guild": {"members": ["su-lan"], "mentions": ["bronze-lantern"]},
        "bronze-lantern": {"mentions": ["lantern-guild"]},
        "river-fog": {"mentions": ["old-landing"]}}
    wen = nodes["wen-qiao"]
    assert (wen["aliases"], wen["tags"]) == (["温乔", "Qiao"], ["ferry", "主角", "protagonist"])
    assert wen["summary"] == (  # as written: line breaks, links and tags
        "Wen Qiao rows the last ferry across the River Lan and keeps her fares in an old tea tin. "
        "#protagonist\n\nShe owes the [[Lantern Guild]] a debt, learned to row from [[Old Heng|the old "
        "ferryman]],\nand ties up at [[Old Landing#History|the old landing]]. Her own name in her own "
        "note: [[Wen Qiao]].")
    assert wen["sections"] == {"Habits": "Counts coins twice. Hums when the fog is thick. "
                                         "![[Bronze Lantern]]"}
    assert nodes["old-heng"]["aliases"] == ["老衡"] and nodes["old-heng"]["tags"] == ["ferry", "老人"]
    landing = nodes["old-landing"]
    assert (landing["aliases"], landing["tags"]) == (["旧渡口"], ["place", "river", "地点"])
    assert landing["sections"] == {"History": "Built by the [[Lantern Guild]] the year the bridge fell.",
                                   "Today": "Only [[Wen Qiao]] still ties up here."}
    assert nodes["lantern-guild"]["aliases"] == ["灯会"] and nodes["lantern-guild"]["tags"] == ["faction"]
    assert nodes["su-lan"]["tags"] == ["clerk", "guild/accounts"]
    assert "tags" not in nodes["tide-table"]  # "#1" and a URL's "#top" are no tags
    assert wen["extensions"] == {"obsidian": {"path": "People/Wen Qiao.md"}}
    text = json.dumps(nodes, ensure_ascii=False)
    for left_out in ("deleted draft", "half-written", "{{title}}", "Nothing written", "needs a reason"):
        assert left_out not in text


def test_narrignore_takes_a_default_back_and_names_files(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "Templates").mkdir(parents=True)
    (vault / "Notes").mkdir()
    (vault / "Templates" / "Hero.md").write_text("A template that is a real note here.\n", encoding="utf-8")
    (vault / "Notes" / "Keep.md").write_text("Kept.\n", encoding="utf-8")
    (vault / "Notes" / "old.excalidraw.md").write_text("A drawing.\n", encoding="utf-8")
    (vault / "2024-05-03.md").write_text("A daily note at the root.\n", encoding="utf-8")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "daily-notes.json").write_text('{"format": "YYYY-MM-DD"}', encoding="utf-8")
    (vault / ".narrignore").write_text("!Templates\n*.excalidraw.md\n", encoding="utf-8")
    narr = _world(tmp_path)
    out = narr.json("import", str(vault))
    assert sorted(c["name"] for c in out["created"]) == ["Hero", "Keep"]
    assert {s["source"]: s["reason"] for s in out["skipped"]} == {
        ".obsidian/": "a hidden file or folder", "2024-05-03.md": "a daily note (.obsidian/daily-notes.json)",
        "Notes/old.excalidraw.md": "listed in .narrignore"}


def test_the_brief_always_includes_nodes_always_in_view(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    narr("import", str(SPEC / "card-v3.json"))
    brief = narr.json("brief", "--focus", "old-heng")
    seen = [(i["section"], i.get("node")) for i in brief["items"]]
    assert ("always in view", "the-river-lan") in seen
    assert seen.index(("always in view", "the-river-lan")) < seen.index(("focus", "old-heng"))
    # the flag is the writer's too: set by hand, the next brief has the node
    node = read_node(narr.root, "night-market")
    node["always_in_view"] = True
    (narr.root / "world/background/night-market.json").write_text(json.dumps(node, ensure_ascii=False),
                                                                   encoding="utf-8")
    seen = [(i["section"], i.get("node")) for i in narr.json("brief", "--focus", "old-heng")["items"]]
    assert ("always in view", "night-market") in seen
    narr("event", "The market opens")  # recorded as a hand edit, and still in view after
    seen = [(i["section"], i.get("node")) for i in narr.json("brief", "--focus", "old-heng")["items"]]
    assert ("always in view", "night-market") in seen
    assert "\nalways in view:\n  Night market (night-market" in narr("brief", "--focus", "old-heng").stdout


def test_an_always_in_view_secret_stays_out_of_a_point_of_view(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    narr("new", "character", "Lin Yuan")
    narr("new", "background", "The Drowned Bell", "--kind", "secret")
    narr("new", "background", "Flood Law")
    for node_id in ("the-drowned-bell", "flood-law"):
        path = narr.root / f"world/background/{node_id}.json"
        node = json.loads(path.read_text(encoding="utf-8"))
        node["always_in_view"] = True
        path.write_text(json.dumps(node), encoding="utf-8")
    narr("event", "The cast")
    items = narr.json("brief", "--pov", "lin-yuan")["items"]
    in_view = [i["node"] for i in items if i["section"] == "always in view"]
    assert in_view == ["flood-law"]  # a rule of the world, not a secret Lin Yuan does not know
    items = narr.json("brief", "--focus", "lin-yuan")["items"]
    assert [i["node"] for i in items if i["section"] == "always in view"] == ["flood-law", "the-drowned-bell"]
