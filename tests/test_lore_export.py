"""``narr export lorebook``, ``card`` and ``vault``: valid by the specs' required fields, carrying the
story's state, and read back by ``narr import`` with no change to names, aliases, summaries,
traits, relations and flags."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git, snapshot, world_nodes

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"
KEPT = ("name", "layer", "kind", "aliases", "summary", "lifecycle", "traits", "state", "relations",
        "tags", "sections", "always_in_view", "extensions")

# SillyTavern's World Info entry (newWorldInfoEntryDefinition) and the types of its fields
WORLD_INFO_FIELDS: dict[str, type | tuple[type, ...]] = {
    "uid": int, "key": list, "keysecondary": list, "comment": str, "content": str, "constant": bool,
    "vectorized": bool, "selective": bool, "selectiveLogic": int, "addMemo": bool, "order": int,
    "position": int, "disable": bool, "excludeRecursion": bool, "preventRecursion": bool,
    "delayUntilRecursion": (bool, int), "probability": int, "useProbability": bool, "depth": int,
    "group": str, "groupOverride": bool, "groupWeight": int, "automationId": str, "sticky": (int, type(None)),
    "cooldown": (int, type(None)), "delay": (int, type(None)), "displayIndex": int,
}
V2_DATA: dict[str, type] = {  # every field the V2 spec makes mandatory (and SillyTavern's validator checks)
    "name": str, "description": str, "personality": str, "scenario": str, "first_mes": str,
    "mes_example": str, "creator_notes": str, "system_prompt": str, "post_history_instructions": str,
    "alternate_greetings": list, "tags": list, "creator": str, "character_version": str, "extensions": dict,
}
BOOK_ENTRY: dict[str, type] = {"keys": list, "content": str, "extensions": dict, "enabled": bool,
                               "insertion_order": int}


def original_description() -> str:
    return str(json.loads((SPEC / "card-v3.json").read_text(encoding="utf-8"))["data"]["description"]).strip()



def _kept(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i: {k: n.get(k) for k in KEPT} for i, n in nodes.items()}


def _fresh(tmp_path: Path, name: str) -> CLI:
    CLI(tmp_path)("init", str(tmp_path / name))
    return CLI(tmp_path / name)


def check_world_info(book: dict[str, Any]) -> None:
    assert set(book) == {"entries"} and isinstance(book["entries"], dict)
    for uid, entry in book["entries"].items():
        for field, kind in WORLD_INFO_FIELDS.items():
            assert isinstance(entry[field], kind), (uid, field, entry.get(field))
        assert entry["uid"] == int(uid) and all(isinstance(k, str) and k for k in entry["key"])


def check_card(card: dict[str, Any], spec: str) -> None:
    assert (card["spec"], card["spec_version"]) == (
        ("chara_card_v3", "3.0") if spec == "v3" else ("chara_card_v2", "2.0"))
    data = card["data"]
    for field, kind in V2_DATA.items():
        assert isinstance(data[field], kind), field
    if spec == "v3":
        assert isinstance(data["group_only_greetings"], list)
    book = data["character_book"]
    assert isinstance(book["extensions"], dict) and isinstance(book["entries"], list)
    for entry in book["entries"]:
        for field, kind in BOOK_ENTRY.items():
            assert isinstance(entry[field], kind), field
        assert isinstance(entry["use_regex"], bool) and isinstance(entry["constant"], bool)
        assert entry["position"] in ("before_char", "after_char")


@pytest.fixture
def lore(tmp_path: Path) -> CLI:
    """A world of every fixture: a card, a World Info book and a vault, with events on top."""
    narr = _fresh(tmp_path, "lore")
    for source in ("card-v3.json", "worldinfo.json", "vault"):
        narr("import", str(SPEC / source), "--include-disabled")
    narr("event", "Qiao ties up at the landing", "--set", "wen-qiao.state.location=old-ferry-landing",
         "--relate", "wen-qiao:owes:lantern-guild={\"debt\": \"unnamed\"}")
    return narr


def test_the_lorebook_is_world_info_and_reads_back_unchanged(lore: CLI, tmp_path: Path) -> None:
    text = lore("export", "lorebook").stdout
    assert json.loads(lore("export", "lorebook", "--json").stdout) == json.loads(text)
    book = json.loads(text)
    check_world_info(book)
    nodes = world_nodes(lore.root)
    entries = {e["extensions"]["narr"]["node"]["id"]: e for e in book["entries"].values()}
    assert set(entries) == set(nodes)
    wen = entries["wen-qiao"]
    assert wen["key"][:2] == ["Wen Qiao", "Qiao"] and wen["comment"] == "Wen Qiao"
    assert wen["content"].startswith("{{char}} (温乔) rows the last ferry")  # macros as the card had them
    assert "Wen Qiao — relationships: She owes the Lantern Guild" in wen["content"]
    assert "Traits: personality: Patient, dry" in wen["content"]
    assert "Now: location: Old Ferry Landing." in wen["content"]  # an id in the state, as a name
    assert "Relations: mentions Bronze Lantern;" in wen["content"] and "owes Lantern Guild (debt: unnamed)" \
        in wen["content"]
    assert entries["the-river-lan"]["constant"] is True and entries["tone-of-the-harbour"]["constant"] is True
    assert sum(e["constant"] for e in entries.values()) == 2
    assert entries["sealed-chapter-do-not-open"]["disable"] is True
    assert sum(e["disable"] for e in entries.values()) == 2  # and the World Info draft
    duxi = entries["duxi-harbour-town"]  # the behaviour the import kept, given back
    assert (duxi["order"], duxi["position"], duxi["selectiveLogic"]) == (100, 0, 0)
    su = entries["su-lan"]
    assert (su["order"], su["position"], su["depth"], su["probability"], su["group"]) == (
        41, 0, 4, 100, "")  # from the card's book, which named it first
    landing = entries["old-ferry-landing"]
    assert (landing["keysecondary"], landing["selectiveLogic"], landing["caseSensitive"]) == (
        ["night", "夜"], 3, True)
    market = entries["night-market"]
    assert "/night ?market/" in market["key"]  # a pattern key goes back, as World Info writes one

    out = tmp_path / "book.json"
    assert lore("export", "lorebook", "-o", str(out)).stdout == f"Wrote {out}: {len(entries)} entries\n"
    assert json.loads(out.read_text(encoding="utf-8")) == book
    copy = _fresh(tmp_path, "copy")
    copy("import", str(out))
    assert _kept(world_nodes(copy.root)) == _kept(nodes)
    before = snapshot(lore.root)
    again = lore.json("import", str(out))  # into the world it came from: nothing to do
    assert again["commit"] is None and snapshot(lore.root) == before


def test_a_lorebook_after_three_events_carries_the_new_state(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry")
    narr("event", "He gives the letter to Old Zhou", "--relate", "old-zhou:holds:sister-letter",
         "--unrelate", "lin-yuan:holds:sister-letter")
    narr("event", "The rain stops", "--set", "lin-yuan.state.mood=relieved", "--set",
         "autumn-rain.state.falling=false")
    book = json.loads(narr("export", "lorebook").stdout)
    check_world_info(book)
    by_id = {e["extensions"]["narr"]["node"]["id"]: e for e in book["entries"].values()}
    lin = by_id["lin-yuan"]["content"]
    assert "location: Cold River Ferry" in lin and "mood: relieved" in lin
    assert "holds Black Ring (worn: left middle finger)" in lin and "Xue's Letter" not in lin
    assert "holds Xue's Letter" in by_id["old-zhou"]["content"]
    assert "falling: false" in by_id["autumn-rain"]["content"]
    before = json.loads(narr("export", "lorebook", "--at", "HEAD~3").stdout)
    old = {e["extensions"]["narr"]["node"]["id"]: e for e in before["entries"].values()}
    then = old["lin-yuan"]["content"]
    assert "location: Qingyun Gate" in then and "mood: anxious" in then


def test_a_point_of_view_keeps_to_what_the_character_knows(flat_world: Path) -> None:
    narr = CLI(flat_world)
    mine = json.loads(narr("export", "lorebook", "--pov", "林远").stdout)
    ids = {e["extensions"]["narr"]["node"]["id"] for e in mine["entries"].values()}
    assert "lin-yuan" in ids and "black-ring" in ids
    assert "ring-origin" not in ids and "xue-whereabouts" not in ids  # secrets he does not know
    assert "The Ring's Origin" not in json.dumps(mine, ensure_ascii=False).split('"narr"')[0]
    everything = json.loads(narr("export", "lorebook").stdout)
    assert len(everything["entries"]) > len(mine["entries"])
    assert "no node 'nobody'" in narr("export", "lorebook", "--pov", "nobody", expect=11).stderr


@pytest.mark.parametrize("spec", ["v3", "v2"])
def test_a_card_follows_the_spec_and_reads_back_unchanged(lore: CLI, tmp_path: Path, spec: str) -> None:
    card = json.loads(lore("export", "card", "Wen Qiao", "--spec", spec).stdout)
    check_card(card, spec)
    data = card["data"]
    assert (data["name"], data["personality"]) == ("Wen Qiao", "Patient, dry, counts every coin twice; "
                                                               "kind to strangers and hard on friends.")
    assert data["description"] == original_description()
    original = json.loads((SPEC / "card-v3.json").read_text(encoding="utf-8"))["data"]
    for field in ("scenario", "first_mes", "alternate_greetings", "mes_example", "system_prompt",
                  "post_history_instructions", "creator_notes", "nickname"):
        assert data[field] == original[field], field  # the fields the import kept come back
    assert data["tags"] == [*original["tags"], "主角", "protagonist"]  # and the vault's
    assert data["extensions"]["narr_fixture_unknown"] == {"keep": "me", "depth": 4}  # never destroyed
    book = data["character_book"]
    assert book["name"] == "River Lan" and book["scan_depth"] == 4
    comments = [e["comment"] for e in book["entries"]]
    sections = sorted(world_nodes(lore.root)["wen-qiao"]["sections"])
    assert {"Wen Qiao — basics", "Wen Qiao — personality", "Wen Qiao — relationships", "秘密",
            "Habits"} <= set(sections)
    assert comments[:len(sections) + 1] == [*sections, "Wen Qiao — now"]
    assert "Wen Qiao" not in comments  # the character is the card, not an entry of its book
    now = book["entries"][len(sections)]["content"]
    assert "location: Old Ferry Landing" in now and "owes Lantern Guild" in now
    path = tmp_path / f"wen-{spec}.json"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    copy = _fresh(tmp_path, "copy")
    out = copy.json("import", str(path))
    own = {f"wen-{spec}.json#{i}" for i in range(len(sections) + 1)}
    assert {s["source"] for s in out["skipped"]} == own  # its own words, which its record holds
    assert _kept(world_nodes(copy.root)) == _kept(world_nodes(lore.root))
    assert lore.json("import", str(path))["commit"] is None


def test_a_png_card_carries_both_chunks(lore: CLI, tmp_path: Path) -> None:
    image = SPEC / "card-v1.png"  # any PNG: its card chunk is replaced
    out = tmp_path / "wen.png"
    said = lore("export", "card", "wen-qiao", "--png", str(image), "-o", str(out)).stdout
    assert said.startswith(f"Wrote {out}: the card of wen-qiao, ") and said.endswith("(PNG)\n")
    data = out.read_bytes()
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + length
    texts = {b.split(b"\x00", 1)[0]: b.split(b"\x00", 1)[1] for k, b in chunks if k == b"tEXt"}
    assert set(texts) == {b"chara", b"ccv3"}
    check_card(json.loads(base64.b64decode(texts[b"chara"])), "v2")
    check_card(json.loads(base64.b64decode(texts[b"ccv3"])), "v3")
    original = [c for c in _chunks(image.read_bytes()) if c[0] != b"tEXt"]
    assert [c for c in chunks if c[0] != b"tEXt"] == original  # the image itself untouched
    copy = _fresh(tmp_path, "copy")
    copy("import", str(out))
    assert _kept(world_nodes(copy.root)) == _kept(world_nodes(lore.root))
    assert "--png writes a binary file" in lore("export", "card", "wen-qiao", "--png", str(image),
                                                expect=2).stderr
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    assert "bad.png: not a PNG image" in lore("export", "card", "wen-qiao", "--png", str(bad), "-o",
                                              str(tmp_path / "x.png"), expect=12).stderr
    assert not (tmp_path / "x.png").exists()


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        out.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    return out


def test_a_card_of_a_node_narr_made(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    card = json.loads(narr("export", "card", "lin-yuan").stdout)
    check_card(card, "v3")
    assert card["data"]["description"].startswith("Outer disciple of the Qingyun Sect, searching")
    assert card["data"]["personality"] == ""  # his traits are in the book's "now" entry and the record
    assert card["data"]["scenario"] == "" and card["data"]["first_mes"] == ""
    path = tmp_path / "lin.json"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    copy = _fresh(tmp_path, "copy")
    copy("import", str(path))
    assert _kept(world_nodes(copy.root)) == _kept(world_nodes(flat_world))
    assert "no node 'nobody'" in narr("export", "card", "nobody", expect=11).stderr


def test_text_edited_in_sillytavern_comes_home_as_hand_edits(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    before = json.loads((flat_world / "world/character/old-zhou.json").read_text(encoding="utf-8"))
    book = json.loads(narr("export", "lorebook").stdout)
    for entry in book["entries"].values():
        if entry["comment"] == "Old Zhou":
            entry["content"] = entry["content"].replace(before["summary"],
                                                        "Old Zhou has been ferrying ghosts, it turns out.")
            entry["constant"] = True
            entry["key"].append("Grandpa Zhou")  # a key added there is an alias here
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(book, ensure_ascii=False), encoding="utf-8")
    out = narr.json("import", str(path))
    assert [e["id"] for e in out["existing"] if e["added"]] == ["old-zhou"]
    assert out["created"] == [] and out["related"] == []
    zhou = json.loads((flat_world / "world/character/old-zhou.json").read_text(encoding="utf-8"))
    assert zhou["summary"] == "Old Zhou has been ferrying ghosts, it turns out."
    assert zhou.get("sections", {}) == before.get("sections", {})  # no new section
    assert zhou["always_in_view"] is True
    assert zhou["aliases"] == ["老周", "the ferryman", "Grandpa Zhou"]
    assert {(c["target"], c["field"]) for c in out["edits"]} == {
        ("old-zhou", "/summary"), ("old-zhou", "/always_in_view"), ("old-zhou", "/aliases")}


def test_the_vault_reads_back_unchanged(lore: CLI, tmp_path: Path) -> None:
    vault = tmp_path / "out-vault"
    said = lore.json("export", "vault", str(vault))
    nodes = world_nodes(lore.root)
    notes = {note["id"]: note["path"] for note in said["notes"]}
    assert [note["id"] for note in said["notes"]] == sorted(nodes)
    assert notes["bronze-lantern"] == "Items/Bronze Lantern.md"  # back where the vault had it
    assert notes["wen-qiao"] == "Characters/Wen Qiao.md"  # the card made it: a layer folder
    assert notes["duxi-harbour-town"] == "Background/Duxi harbour town.md"
    note = (vault / "Characters/Wen Qiao.md").read_text(encoding="utf-8")
    assert note.startswith("---\nnarr-id: wen-qiao\nlayer: character\nkind: person\n")
    assert '\n## Relations\n\n' in note and '\n- owes:: [[Lantern Guild]] {"debt": "unnamed"}\n' in note
    assert "\n## Habits\n\nCounts coins twice." in note
    copy = _fresh(tmp_path, "copy")
    copy("import", str(vault))
    assert _kept(world_nodes(copy.root)) == _kept(nodes)
    assert lore.json("import", str(vault))["commit"] is None

    lore("event", "Night falls", "--set", "wen-qiao.state.mood=tired")
    assert lore("export", "vault", str(vault)).stdout == f"Wrote {vault}: {len(nodes)} notes\n"
    assert "mood: tired" in (vault / "Characters/Wen Qiao.md").read_text(encoding="utf-8")
    (vault / "Background/Old Heng.md").write_text("My own words.\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file()}
    result = lore("export", "vault", str(vault), expect=14)
    assert "Background/Old Heng.md" in result.stderr and "which it would overwrite" in result.stderr
    assert {p: p.read_bytes() for p in vault.rglob("*") if p.is_file()} == before


def test_a_vault_is_never_written_over_a_folder_of_the_users(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "diary.md").write_text("Private.\n", encoding="utf-8")
    result = narr("export", "vault", str(mine), expect=14)
    assert "the folder is not empty and no narr export wrote it" in result.stderr
    assert [p.name for p in mine.iterdir()] == ["diary.md"]
    empty = tmp_path / "empty"
    empty.mkdir()
    narr("export", "vault", str(empty))
    assert (empty / "Characters" / "Lin Yuan.md").is_file()
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_codex_round_trip_keeps_quoted_keys_and_the_new_fields(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    node = json.loads((flat_world / "world/character/old-zhou.json").read_text(encoding="utf-8"))
    node["state"]['"quoted" key'] = "x"
    node["state"]["a: colon"] = 1
    node["traits"]['"'] = "just a quote"
    node.update(tags=["ferry"], sections={"Past": "He was a soldier.\nThen a ferryman."}, always_in_view=True,
                extensions={"sillytavern": {"entries": [{"source": "x.json#0", "entry": {"order": 5}}]}})
    (flat_world / "world/character/old-zhou.json").write_text(json.dumps(node, ensure_ascii=False),
                                                             encoding="utf-8")
    narr("event", "Old Zhou's past")
    codex = tmp_path / "bible.md"
    codex.write_text(narr("export", "codex").stdout, encoding="utf-8")
    copy = _fresh(tmp_path, "copy")
    copy("import", str(codex))
    assert _kept(world_nodes(copy.root)) == _kept(world_nodes(flat_world))
    assert git(copy.root, "log", "--format=%s").splitlines()[0] == "Import bible.md"


def test_exports_are_made_as_the_users_other_files_are(flat_world: Path, tmp_path: Path) -> None:
    """An export is for other tools to read: 0666 less the umask (not tempfile's 0600), its
    folder 0777 less it; a file written over keeps its own."""
    import os
    import stat

    narr = CLI(flat_world)
    old = os.umask(0o022)
    try:
        book, vault = tmp_path / "book.json", tmp_path / "vault"
        narr("export", "lorebook", "-o", str(book))
        narr("export", "vault", str(vault))
        assert stat.S_IMODE(book.stat().st_mode) == 0o644
        assert stat.S_IMODE(vault.stat().st_mode) == 0o755
        assert {stat.S_IMODE(p.stat().st_mode) for p in vault.rglob("*.md")} == {0o644}
        book.chmod(0o640)
        narr("export", "lorebook", "-o", str(book))
        assert stat.S_IMODE(book.stat().st_mode) == 0o640
    finally:
        os.umask(old)
