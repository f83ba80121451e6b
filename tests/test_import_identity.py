"""Identity is exact: the vault of ``tests/data/import/identity/`` (written from Obsidian's rules for
links, aliases and properties) and a book of alike names, imported, each note its own node.

Every test says what node each note became, that no two notes share one, and that every link is
still in the text and is a relation to the note Obsidian would open.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, new_world, read_node, snapshot, world_nodes

IDENTITY = Path(__file__).resolve().parent / "data" / "import" / "identity"
NOTE_NODES = {
    "Spells/Light.md": "light", "Spells/Blight.md": "blight",
    "Monsters/Giant Toad.md": "giant-toad", "Monsters/Giant Ice Toad.md": "giant-ice-toad",
    "Numbers/Name1.md": "name1", "Numbers/Name12.md": "name12",
    "Gods/Tartarus.md": "tartarus", "Gods/Shar.md": "shar",
    "People/Mercy.md": "mercy", "Places/Mercy.md": "mercy-2", "People/Rhea.md": "rhea-vantor",
    "Songs/The Ferry Song.md": "the-ferry-song", "Lore/Tide Table.md": "tide-table",
}
# each link of each note, as written, and the note it opens in Obsidian (None: no such note;
# the note itself: no relation)
LINKS = {
    "Spells/Light.md": {"[[Blight]]": "Spells/Blight.md"},
    "Spells/Blight.md": {"[[Light#Casting|light's casting]]": "Spells/Light.md"},
    "Monsters/Giant Ice Toad.md": {"[[Giant Toad]]": "Monsters/Giant Toad.md"},
    "Numbers/Name12.md": {"[[Name1]]": "Numbers/Name1.md"},
    "Gods/Shar.md": {"[[Tartarus]]": "Gods/Tartarus.md"},
    "People/Rhea.md": {"[[Places/Mercy]]": "Places/Mercy.md",
                       "[[People/Mercy|the healer]]": "People/Mercy.md",
                       "[[Mercy]]": "People/Mercy.md",  # the one beside the linking note
                       "[[The Sunken Library]]": None, "[[Shar]]": "Gods/Shar.md",
                       "[[Tartarus|the pit]]": "Gods/Tartarus.md"},
    "Songs/The Ferry Song.md": {"[[Mercy]]": "People/Mercy.md",  # none beside it: nearest the root, first
                                "[[Rhea\\|Rhea]]": "People/Rhea.md"},
    "Lore/Tide Table.md": {"[[Places/Mercy|Mercy]]": "Places/Mercy.md"},
}


def _text(node: dict[str, Any]) -> str:
    return "\n".join([node["summary"], *(node.get("sections") or {}).values()])


def test_every_note_is_its_own_node_and_every_link_a_relation(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    out = narr.json("import", str(IDENTITY))
    assert {e["source"]: e["node"] for e in out["entries"]} == NOTE_NODES
    assert len(set(NOTE_NODES.values())) == len(NOTE_NODES)  # no two notes share a node
    nodes = world_nodes(narr.root)
    assert set(nodes) == set(NOTE_NODES.values())
    for note, links in LINKS.items():
        node = nodes[NOTE_NODES[note]]
        for written, target in links.items():
            assert written in _text(node), (note, written)  # the link is still in the text
            if target is not None:
                assert NOTE_NODES[target] in node["relations"]["mentions"], (note, written)
        wanted = {NOTE_NODES[t] for t in links.values() if t is not None}
        assert set((node.get("relations") or {}).get("mentions", {})) == wanted, note
    unlinked = set(NOTE_NODES) - set(LINKS)
    assert all(not nodes[NOTE_NODES[n]].get("relations") for n in unlinked)
    # the link written in a code block is text, not a link; an embedded image is a file, not a note
    assert "[[not a link]]" in nodes["the-ferry-song"]["summary"]
    assert out["missing"] == [{"source": "People/Rhea.md", "link": "[[The Sunken Library]]",
                               "target": "The Sunken Library"}]


def test_names_alike_are_reported_and_kept_apart(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    text = narr("import", str(IDENTITY), "--dry-run").stdout
    out = narr.json("import", str(IDENTITY))
    pairs = {frozenset((s["id"], s["other"])) for s in out["similar"]}
    assert pairs == {frozenset(p) for p in [("light", "blight"), ("giant-toad", "giant-ice-toad"),
                                            ("name1", "name12")]}
    assert ("  similar: Giant Ice Toad (giant-ice-toad) is like Giant Toad (giant-toad), kept apart: "
            "'giant toad' within 'giant ice toad'") in text.splitlines()
    nodes = world_nodes(narr.root)
    assert (nodes["light"]["tags"], nodes["blight"]["tags"]) == (["cantrip"], ["necromancy"])
    assert nodes["giant-ice-toad"]["summary"].startswith("A cousin of the [[Giant Toad]]")
    assert nodes["giant-toad"]["summary"] == "A toad the size of a pony that swallows what it can."


def test_a_shared_alias_stays_on_both_and_each_keeps_its_name(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    out = narr.json("import", str(IDENTITY))
    assert {"name": "Darkness", "ids": ["shar", "tartarus"]} in out["ambiguous"]
    assert read_node(narr.root, "tartarus")["aliases"] == ["Darkness"]
    assert read_node(narr.root, "shar")["aliases"] == ["Darkness", "Lady of Loss"]
    assert narr("get", "Tartarus", "name").stdout == "Tartarus\n"
    assert narr("get", "Lady of Loss", "name").stdout == "Shar\n"
    assert "'Darkness' names 2 nodes" in narr("get", "Darkness", expect=12).stderr


def test_one_name_in_two_folders_is_two_nodes_and_a_path_names_one(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    result = narr("import", str(IDENTITY))
    assert ("People/Rhea.md: [[Mercy]] may mean People/Mercy, Places/Mercy: taken as People/Mercy, "
            "the note Obsidian takes; a link with the folder says which") in result.stderr
    person, village = read_node(narr.root, "mercy"), read_node(narr.root, "mercy-2")
    assert (person["name"], person["layer"], person["kind"]) == ("Mercy", "character", "healer")
    assert (village["name"], village["layer"], village["kind"]) == ("Mercy", "background", "village")
    assert person["extensions"]["obsidian"]["path"] == "People/Mercy.md"
    assert village["extensions"]["obsidian"]["path"] == "Places/Mercy.md"
    assert "mercy-2" in read_node(narr.root, "tide-table")["relations"]["mentions"]

    # the same vault again: each note finds its own node by its path, names alike or not
    before = snapshot(narr.root)
    again = narr.json("import", str(IDENTITY))
    assert again["commit"] is None and again["created"] == []
    assert {e["source"]: (e["id"], e["how"]) for e in again["existing"]}["Places/Mercy.md"] == (
        "mercy-2", "the same note")
    assert snapshot(narr.root) == before


def test_a_title_names_the_note_and_markdown_is_kept_byte_for_byte(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    narr("import", str(IDENTITY))
    rhea = read_node(narr.root, "rhea-vantor")
    assert rhea["name"] == "Rhea Vantor"  # the "# Rhea Vantor" its body starts with, not its file name
    source = (IDENTITY / "People/Rhea.md").read_text(encoding="utf-8")
    assert rhea["summary"] == source.split("# Rhea Vantor\n\n", 1)[1].split("\n\n## Debts")[0]
    song = (IDENTITY / "Songs/The Ferry Song.md").read_text(encoding="utf-8")
    node = read_node(narr.root, "the-ferry-song")
    # verse, a table, a quote and code as written: line breaks and all
    assert node["summary"] == song.split("# The Ferry Song\n\n", 1)[1].split("\n\n## Notes")[0]
    assert node["summary"].startswith("The river keeps the [[Mercy]] boats,\nthe tide keeps")
    assert node["sections"] == {"Notes": "Nobody sings the last verse twice."}
    table = (IDENTITY / "Lore/Tide Table.md").read_text(encoding="utf-8").rstrip("\n")
    assert read_node(narr.root, "tide-table")["summary"] == table


def test_stubs_make_the_notes_links_name(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    out = narr.json("import", str(IDENTITY), "--stubs")
    assert out["missing"] == []
    stub = [c for c in out["created"] if c["name"] == "The Sunken Library"]
    assert stub == [{"id": "the-sunken-library", "name": "The Sunken Library", "layer": "background",
                     "source": "People/Rhea.md (a link)"}]
    assert "the-sunken-library" in read_node(narr.root, "rhea-vantor")["relations"]["mentions"]
    assert narr.json("import", str(IDENTITY), "--stubs")["commit"] is None


def test_the_vault_goes_out_to_obsidian_and_back_unchanged(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    narr("import", str(IDENTITY))
    vault = tmp_path / "out"
    narr("export", "vault", str(vault))
    paths = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    assert paths == sorted(NOTE_NODES)  # every note back where the writer had it
    rhea = (vault / "People/Rhea.md").read_text(encoding="utf-8")
    front = rhea.split("---\n")[1]
    assert all(re.match(r"^[\w.-]+: \S", line) or line.startswith("- ") for line in front.splitlines())
    assert "\n## Relations\n\n- mentions:: [[People/Mercy]]\n- mentions:: [[Places/Mercy]]\n" in rhea
    assert "- mentions:: [[Shar]]\n" in rhea  # a file name only one note has needs no folder
    copy = new_world(tmp_path, "copy")
    copy("import", str(vault))
    assert _kept(copy.root) == _kept(narr.root)
    again = tmp_path / "again"
    copy("export", "vault", str(again))
    assert {p.relative_to(again): p.read_bytes() for p in again.rglob("*.md")} == {
        p.relative_to(vault): p.read_bytes() for p in vault.rglob("*.md")}


BOOK = {"entries": {
    "0": {"uid": 0, "key": ["Light"], "comment": "Light", "content": "A cantrip.", "displayIndex": 5},
    "1": {"uid": 1, "key": ["Blight"], "comment": "Blight", "content": "Withering.", "displayIndex": 4},
    "2": {"uid": 2, "key": ["Name1"], "comment": "Name1", "content": "The first warden.", "displayIndex": 3},
    "3": {"uid": 3, "key": ["Name12"], "comment": "Name12", "content": "The twelfth.", "displayIndex": 2},
    "4": {"uid": 4, "key": ["Tartarus", "Darkness"], "comment": "The pit below",
          "content": "Where the old gods are bound.", "displayIndex": 1},
    "5": {"uid": 5, "key": ["Shar", "Darkness", "{{user}}'s patron"], "comment": "Shar",
          "content": "Goddess of loss, patron of {{user}}.", "displayIndex": 0},
}}


def test_a_book_of_alike_names_imports_as_many_nodes_and_goes_out_as_it_came(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    path = tmp_path / "book.json"
    path.write_text(json.dumps(BOOK), encoding="utf-8")
    out = narr.json("import", str(path))
    assert [c["id"] for c in out["created"]] == ["light", "blight", "name1", "name12", "the-pit-below",
                                                 "shar"]
    assert out["ambiguous"] == [{"name": "Darkness", "ids": ["shar", "the-pit-below"]}]
    assert {frozenset((s["id"], s["other"])) for s in out["similar"]} == {
        frozenset(("light", "blight")), frozenset(("name1", "name12"))}
    assert read_node(narr.root, "shar")["summary"] == "Goddess of loss, patron of {{user}}."
    book = json.loads(narr("export", "lorebook").stdout)
    # each entry as it came: its uid, its keys in their order (no title added), where it showed
    assert list(book["entries"]) == ["5", "4", "3", "2", "1", "0"]  # in SillyTavern's order
    for uid, entry in book["entries"].items():
        original = BOOK["entries"][uid]
        assert (entry["uid"], entry["key"], entry["comment"], entry["displayIndex"]) == (
            original["uid"], original["key"], original["comment"], original["displayIndex"])
        assert entry["content"] == original["content"]


@pytest.mark.parametrize("flag", [[], ["--merge-similar"]])
def test_merge_similar_is_the_writers_choice(tmp_path: Path, flag: list[str]) -> None:
    narr = new_world(tmp_path)
    path = tmp_path / "book.json"
    path.write_text(json.dumps(BOOK), encoding="utf-8")
    out = narr.json("import", str(path), *flag)
    merged = bool(flag)
    assert ("blight" in {c["id"] for c in out["created"]}) is not merged
    if merged:
        assert read_node(narr.root, "light")["sections"] == {"Blight": "Withering."}


def _kept(root: Path) -> dict[str, dict[str, Any]]:
    return {i: {k: v for k, v in n.items() if k != "created_by_event"} for i, n in world_nodes(root).items()}


def _vault_bytes(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.md")}


def test_the_sample_world_goes_to_obsidian_and_back_unchanged(flat_world: Path, tmp_path: Path) -> None:
    sample = CLI(flat_world)
    vault = tmp_path / "vault"
    sample("export", "vault", str(vault))
    copy = new_world(tmp_path, "copy")
    copy("import", str(vault))
    assert _kept(copy.root) == _kept(flat_world)
    again = tmp_path / "again"
    copy("export", "vault", str(again))
    assert _vault_bytes(again) == _vault_bytes(vault)


@pytest.mark.slow
def test_a_generated_vault_of_800_notes_goes_out_and_back_with_no_difference(tmp_path: Path) -> None:
    """The benchmark's generated vault, at a size the suite can afford (benchmarks/importing.py
    takes it to 6,000 notes and times it there)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from importing import write_vault

    notes = tmp_path / "notes"
    assert write_vault(notes, 800) == 800
    narr = new_world(tmp_path, "w")
    out = narr.json("import", str(notes))
    assert len(out["created"]) == 800 and len({e["node"] for e in out["entries"]}) == 800
    vault = tmp_path / "vault"
    narr("export", "vault", str(vault))
    copy = new_world(tmp_path, "copy")
    copy("import", str(vault))
    assert _kept(copy.root) == _kept(narr.root)
    again = tmp_path / "again"
    copy("export", "vault", str(again))
    assert _vault_bytes(again) == _vault_bytes(vault)


def test_a_merge_never_relates_a_node_to_itself(tmp_path: Path) -> None:
    """--merge-similar takes Control Weather for the Control Water the world has: its link to
    Control Water would be a relation of that node to itself, so there is none."""
    narr = new_world(tmp_path)
    narr("new", "background", "Control Water", "--summary", "Raise or lower the water.")
    narr("event", "The spell book")
    note = tmp_path / "Control Weather.md"
    note.write_text("Unlike [[Control Water]], this changes the sky.\n", encoding="utf-8")
    out = narr.json("import", str(note), "--merge-similar")
    assert out["created"] == [] and out["related"] == []
    node = read_node(narr.root, "control-water")
    assert "control-water" not in json.dumps(node.get("relations") or {})
    assert node["sections"] == {"Control Weather": "Unlike [[Control Water]], this changes the sky."}


def test_a_thousand_numbered_names_are_a_thousand_nodes(tmp_path: Path) -> None:
    narr = new_world(tmp_path)
    path = tmp_path / "wardens.json"
    entries = {str(i): {"uid": i, "key": [f"Name{i}"], "comment": f"Name{i}", "content": f"Warden {i}."}
               for i in range(1000)}
    path.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    out = narr.json("import", str(path))
    assert len(out["created"]) == 1000 and len({e["node"] for e in out["entries"]}) == 1000
    assert {"name": "Name1", "id": "name1", "similar_to": "Name12", "other": "name12",
            "how": "'name1' is close to 'name12' (0.91)"} in out["similar"]
    assert read_node(narr.root, "name999")["summary"] == "Warden 999."
