"""``narr import``: lorebooks, character cards, Markdown notes and narr's own codex become nodes.

Each format is read from a small file in ``tests/data/import/``; the state is checked
through the library, and a second import of the same file must add nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, git, read_node, snapshot, world_nodes

import narrative as narr_lib

DATA = Path(__file__).resolve().parent / "data" / "import"


def _empty_world(tmp_path: Path, name: str = "w") -> CLI:
    CLI(tmp_path)("init", str(tmp_path / name))
    return CLI(tmp_path / name)



def test_a_lorebook_becomes_background_nodes_in_one_event(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    out = narr.json("import", str(DATA / "lorebook.json"))
    assert out["sources"] == [{"path": "lorebook.json", "format": "lorebook", "entries": 3}]
    assert [c["id"] for c in out["created"]] == ["qingyun-sect", "cold-river-ferry", "hei-jie"]
    assert out["content"] == "Import lorebook.json" and out["commit"]
    ferry = read_node(narr.root, "cold-river-ferry")
    assert ferry["layer"] == "background"
    assert ferry["aliases"] == ["the ferry"]  # the name itself and the regular expression are left out
    assert ferry["summary"] == "The last crossing before the mountains."
    assert read_node(narr.root, "hei-jie")["name"] == "黑戒"  # no title: the first key names it
    assert read_node(narr.root, "qingyun-sect")["aliases"] == ["青云门"]
    assert git(narr.root, "log", "--format=%s").splitlines()[0] == "Import lorebook.json"
    assert len(git(narr.root, "log", "--format=%H").split()) == 2  # genesis and the one import

    before = snapshot(narr.root)
    again = narr("import", str(DATA / "lorebook.json"))
    assert again.stdout.startswith("Nothing to import: the world has everything in lorebook.json")
    assert "already there: Qingyun Sect from lorebook.json#0 is qingyun-sect" in again.stdout
    assert snapshot(narr.root) == before


def test_the_array_form_and_the_layer_option(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    out = narr.json("import", str(DATA / "lorebook-array.json"), "--layer", "ambient")
    assert [(c["id"], c["layer"]) for c in out["created"]] == [("autumn-rain", "ambient"),
                                                               ("old-zhou", "ambient")]
    assert read_node(narr.root, "autumn-rain")["aliases"] == ["the rain"]


def test_a_character_card_becomes_a_character(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    out = narr.json("import", str(DATA / "card.json"))
    assert out["sources"][0]["format"] == "character card"
    node = read_node(narr.root, "su-qing")
    assert (node["name"], node["layer"], node["kind"]) == ("苏晴", "character", "person")
    assert node["summary"] == "A disciple of the Qingyun Sect who trusts no one."
    assert node["traits"] == {"personality": "wary, loyal"}
    assert narr.json("import", str(DATA / "card.json"))["created"] == []


def test_a_folder_of_notes_with_front_matter(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    narr("import", str(DATA / "card.json"))
    out = narr.json("import", str(DATA / "notes"))
    assert [s["path"] for s in out["sources"]] == ["Lin Yuan.md", "Su Qing.md", "places/Temple.md"]
    assert [c["id"] for c in out["created"]] == ["lin-yuan", "temple-of-the-bell"]
    # the note "Su Qing" has the alias 苏晴, the card's character: the same node
    assert [(e["name"], e["id"]) for e in out["existing"]] == [("Su Qing", "su-qing")]
    lin = read_node(narr.root, "lin-yuan")
    assert (lin["layer"], lin["kind"], lin["aliases"]) == ("character", "person", ["林远", "Young Lin"])
    # the leading "# Lin Yuan" is its title; the text as written, line break and link kept
    assert lin["summary"] == ("A fisherman's son who found the [[Black Ring|ring]] in the river.\n"
                              "He does not know what it is.")
    assert lin["relations"] == {"distrusts": {"su-qing": {}}}
    temple = read_node(narr.root, "temple-of-the-bell")
    assert (temple["name"], temple["summary"]) == ("Temple of the Bell", "Where the evening bell rings.")
    assert narr.json("import", str(DATA / "notes"))["commit"] is None


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    before = snapshot(narr.root)
    out = narr.json("import", str(DATA / "notes"), "--dry-run")
    assert out["dry_run"] is True and out["commit"] is None
    assert [c["id"] for c in out["created"]] == ["lin-yuan", "su-qing", "temple-of-the-bell"]
    assert narr("import", str(DATA / "notes"), "--dry-run").stdout.startswith(
        "[dry run: nothing recorded] Import notes: ")
    assert snapshot(narr.root) == before


def test_a_codex_round_trip_into_an_empty_world(flat_world: Path, tmp_path: Path) -> None:
    sample = CLI(flat_world)
    # a rumour named like Lin Xue's alias, in another layer (made by hand: narr new
    # refuses a name in use): a codex keeps the two apart
    rumour = {"id": "xue-rumour", "layer": "background", "name": "Xue", "kind": "rumour",
              "lifecycle": "permanent", "aliases": [], "summary": "", "traits": {}, "state": {},
              "relations": {}, "created_by_event": None}
    (flat_world / "world/background/xue-rumour.json").write_text(json.dumps(rumour), encoding="utf-8")
    sample("event", "Lin Yuan trusts Su Qing", "--relate", "lin-yuan:trusts:su-qing={\"since\": \"day 2\"}")
    codex = tmp_path / "bible.md"
    codex.write_text(sample("export", "codex").stdout, encoding="utf-8")
    narr = _empty_world(tmp_path, "x")
    out = narr.json("import", str(codex))
    assert out["sources"][0]["format"] == "codex"
    original, copy = world_nodes(flat_world), world_nodes(narr.root)
    assert set(copy) == set(original)
    keep = ("name", "layer", "kind", "aliases", "summary", "lifecycle", "traits", "state", "relations")
    for node_id, node in original.items():
        assert {k: copy[node_id][k] for k in keep} == {k: node[k] for k in keep}, node_id
    assert copy["lin-yuan"]["relations"]["trusts"] == {"su-qing": {"since": "day 2"}}
    assert narr.json("import", str(codex))["commit"] is None


def test_errors_name_the_file(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}), encoding="utf-8")
    result = narr("import", str(bad), expect=12)
    assert result.stderr.startswith("narr: error: bad.json: not a lorebook or a character card\n")
    note = tmp_path / "n.md"
    note.write_text("---\nlayer: heaven\n---\nHi.\n", encoding="utf-8")
    assert "n.md: unknown layer 'heaven'" in narr("import", str(note), expect=12).stderr
    assert narr("import", str(tmp_path / "missing.json"), expect=11).stderr.startswith("narr: error: ")


@pytest.mark.parametrize("name", ["lorebook.json", "card.json"])
def test_the_library_call(tmp_path: Path, name: str) -> None:
    _empty_world(tmp_path)
    wr = narr_lib.open_world(tmp_path / "w")
    try:
        result = narr_lib.import_bible(wr, DATA / name, dry_run=True)
    finally:
        wr.close()
    assert isinstance(result, narr_lib.ImportResult) and result.created and result.event is not None


def test_a_name_in_another_layer_is_the_same_node(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    narr("new", "item", "黑戒", "--alias", "Black Ring")
    out = narr.json("import", str(DATA / "lorebook.json"))  # 黑戒 comes as a background entry
    assert [c["id"] for c in out["created"]] == ["qingyun-sect", "cold-river-ferry"]
    assert [(e["name"], e["id"], e["how"], e["added"]) for e in out["existing"]] == [
        ("黑戒", "hei-jie", "same name '黑戒', in the item layer", ["/summary", "/extensions/sillytavern"])]
    assert out["ambiguous"] == []
    assert narr("get", "黑戒", "layer").stdout == "item\n"  # one node: the name is not ambiguous
    assert narr("get", "Black Ring", "summary").stdout == "A black ring that grows warm near danger.\n"
    assert not list(narr.root.glob("world/*/hei-jie-2.json"))

    # a note that names its layer: the node stays where it is, and the import says so; its
    # other summary is kept as a section, not lost
    note = tmp_path / "Black Ring.md"
    note.write_text("---\nlayer: background\n---\nA black ring.\n", encoding="utf-8")
    assert narr("import", str(note)).stdout.splitlines()[1:] == [
        "  already there: Black Ring from Black Ring.md is hei-jie (same name 'black ring', "
        "in the item layer); added /sections/Black Ring",
        "    note: its summary differs from the node's (which stays): kept as the section 'Black Ring'",
        "    note: the source puts it in the background layer; it stays in the item layer",
        "  Black Ring.md (Black Ring) is the section 'Black Ring' of hei-jie"]
    assert read_node(narr.root, "hei-jie")["sections"] == {"Black Ring": "A black ring."}
    before = snapshot(narr.root)
    assert narr("import", str(note)).stdout.splitlines() == [
        "Nothing to import: the world has everything in Black Ring.md (note, 1 entry)",
        "  already there: Black Ring from Black Ring.md is hei-jie (same name 'black ring', "
        "in the item layer)",
        "    note: the source puts it in the background layer; it stays in the item layer",
        "  Black Ring.md (Black Ring) is the section 'Black Ring' of hei-jie"]
    assert snapshot(narr.root) == before


def test_an_import_adds_the_aliases_and_the_summary_a_node_lacks(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    narr("new", "character", "Lin Yuan", "--summary", "The writer's own words.")
    narr("new", "character", "苏晴")  # no summary yet
    narr("new", "character", "林远山", "--alias", "林远")  # another man, whom 林远 already names
    narr("event", "The cast")
    before = snapshot(narr.root)
    dry = narr.json("import", str(DATA / "notes"), "--dry-run")
    assert [(e["id"], e["added"], e["notes"]) for e in dry["existing"]] == [
        ("lin-yuan", ['/aliases ("Young Lin")', "/sections/Lin Yuan.md", "/sections/Later", '/tags ("main")'],
         ["the alias '林远' is not added: it names lin-yuan-shan",
          "its summary differs from the node's (which stays): kept as the section 'Lin Yuan.md'",
          "its section 'Later': kept as the section 'Later'"]),
        ("su-qing", ['/aliases ("Su Qing")', "/summary"], [])]
    assert snapshot(narr.root) == before

    out = narr("import", str(DATA / "notes")).stdout
    assert ("  already there: Lin Yuan from Lin Yuan.md is lin-yuan (same name 'lin yuan'); "
            "added /aliases (\"Young Lin\"), /sections/Lin Yuan.md, /sections/Later, /tags (\"main\")"
            ) in out.splitlines()
    lin, su = read_node(narr.root, "lin-yuan"), read_node(narr.root, "su-qing")
    assert (lin["aliases"], lin["summary"]) == (["Young Lin"], "The writer's own words.")
    assert lin["sections"] == {"Lin Yuan.md": "A fisherman's son who found the [[Black Ring|ring]] in "
                                              "the river.\nHe does not know what it is.",
                               "Later": "Nothing yet."}
    assert (su["aliases"], su["summary"]) == (["Su Qing"], "A disciple who trusts no one.")
    assert narr("get", "young lin", "name").stdout == "Lin Yuan\n"
    assert narr("get", "林远", "name").stdout == "林远山\n"
    after = snapshot(narr.root)
    again = narr.json("import", str(DATA / "notes"))
    assert again["commit"] is None and [e["added"] for e in again["existing"]] == [[], [], []]
    assert snapshot(narr.root) == after


def test_two_entries_for_one_node_add_both_their_aliases(tmp_path: Path) -> None:
    narr = _empty_world(tmp_path)
    narr("new", "background", "Qingyun Sect")
    book = tmp_path / "book.json"
    book.write_text(json.dumps({"entries": [
        {"comment": "Qingyun Sect", "key": ["青云门"], "content": "A sect."},
        {"comment": "青云门", "key": ["the Sect", "Qingyun Sect"], "content": "A sect."},
        {"comment": "the Sect", "key": [], "content": ""}]}), encoding="utf-8")
    out = narr.json("import", str(book))
    assert out["created"] == [] and out["ambiguous"] == []
    assert read_node(narr.root, "qingyun-sect")["aliases"] == ["青云门", "the Sect"]
    assert narr.json("import", str(book))["commit"] is None


def test_a_name_left_on_two_nodes_is_reported(tmp_path: Path) -> None:
    # "An" is an English article to the arbiter, so it tells Li An from Xu An by nothing
    narr = _empty_world(tmp_path)
    narr("new", "character", "Li An", "--alias", "An")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Xu An.md").write_text("---\nlayer: character\naliases: [An]\n---\n", encoding="utf-8")
    dry = narr.json("import", str(notes), "--dry-run")
    assert dry["ambiguous"] == [{"name": "An", "ids": ["li-an", "xu-an"]}]
    out = narr("import", str(notes)).stdout.splitlines()
    assert out[1:] == ["  hand edit  li-an: created (character, Li An)",
                       "  created xu-an (character, Xu An) from Xu An.md",
                       "  ambiguous: 'An' now names li-an, xu-an; name them by id"]
    assert "'An' names 2 nodes" in narr("get", "An", expect=12).stderr


def test_an_entry_that_shares_only_an_alias_is_another_node(tmp_path: Path) -> None:
    """Tove Greaves and Tove Dunmore are both "Tove": two people, the alias on both, reported."""
    narr = _empty_world(tmp_path)
    narr("new", "character", "Tove Dunmore", "--alias", "Tove")
    note = tmp_path / "Tove Greaves.md"
    note.write_text("---\nlayer: character\naliases: [Tove, Greaves]\n---\nA ferryman.\n", encoding="utf-8")
    out = narr.json("import", str(note))
    assert [c["id"] for c in out["created"]] == ["tove-greaves"] and out["existing"] == []
    assert out["ambiguous"] == [{"name": "Tove", "ids": ["tove-dunmore", "tove-greaves"]}]
    assert read_node(narr.root, "tove-dunmore")["aliases"] == ["Tove"]
    greaves = read_node(narr.root, "tove-greaves")
    assert (greaves["aliases"], greaves["summary"]) == (["Tove", "Greaves"], "A ferryman.")
    assert narr("get", "Tove Greaves", "name").stdout == "Tove Greaves\n"


def test_a_codex_round_trip_with_a_state_key_starting_with_a_quote(flat_world: Path, tmp_path: Path) -> None:
    sample = CLI(flat_world)
    sample("event", "A quoted key", "--set", 'lin-yuan.state."said"=yes', "--set", 'lin-yuan.state.a"b=1')
    codex = tmp_path / "bible.md"
    codex.write_text(sample("export", "codex").stdout, encoding="utf-8")
    assert '- "\\"said\\"": yes' in codex.read_text(encoding="utf-8")
    narr = _empty_world(tmp_path, "x")
    narr("import", str(codex))
    assert world_nodes(narr.root)["lin-yuan"]["state"] == world_nodes(flat_world)["lin-yuan"]["state"]


def test_a_close_spelling_is_reported_and_kept_apart(tmp_path: Path) -> None:
    """"Qinyun Sect" may be a slip for the Qingyun Sect, or another sect: two nodes, reported;
    --merge-similar takes them as one (its text becomes a section, its flag and tags join)."""
    narr = _empty_world(tmp_path)
    book = tmp_path / "book.json"
    book.write_text(json.dumps({"entries": [
        {"comment": "Qingyun Sect", "keys": ["Qingyun Sect"], "content": "A mountain sect."},
        {"comment": "Qinyun Sect", "keys": ["Qinyun Sect"], "content": "Its gate faces east.",
         "constant": True}]}), encoding="utf-8")
    out = narr.json("import", str(book), "--dry-run")
    assert [c["id"] for c in out["created"]] == ["qingyun-sect", "qinyun-sect"]
    assert out["similar"] == [{"name": "Qingyun Sect", "id": "qingyun-sect", "similar_to": "Qinyun Sect",
                               "other": "qinyun-sect",
                               "how": "'qingyun sect' is close to 'qinyun sect' (0.96)"}]
    said = narr("import", str(book), "--dry-run").stdout.splitlines()
    assert ("  similar: Qingyun Sect (qingyun-sect) is like Qinyun Sect (qinyun-sect), kept apart: "
            "'qingyun sect' is close to 'qinyun sect' (0.96)") in said

    out = narr.json("import", str(book), "--merge-similar")
    assert [c["id"] for c in out["created"]] == ["qingyun-sect"] and out["similar"] == []
    node = read_node(narr.root, "qingyun-sect")
    assert node["summary"] == "A mountain sect."
    assert node["sections"] == {"Qinyun Sect": "Its gate faces east."}
    assert node["always_in_view"] is True
    assert [(e["source"], e["node"], e["section"]) for e in out["entries"]] == [
        ("book.json#0", "qingyun-sect", None), ("book.json#1", "qingyun-sect", "Qinyun Sect")]
    assert narr.json("import", str(book), "--merge-similar")["commit"] is None
