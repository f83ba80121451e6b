"""Pronouns as writers expect: given when a character is made (narr new --pronouns, the studio),
read from its summary in either language when no trait says, never bound to another name of
their own clause; a value narr does not know is refused, naming the node, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, node_file, read_node, snapshot


@pytest.fixture
def inn(tmp_path: Path) -> CLI:
    """A world of its own with the generic rules of both languages: two men and a woman at an inn."""
    CLI(tmp_path)("init", "inn", "--rules", "both")
    narr = CLI(tmp_path / "inn")
    narr("new", "background", "The Red Inn", "--kind", "place", "--alias", "红店")
    narr("new", "background", "The Ford", "--kind", "place", "--alias", "渡口")
    narr("new", "item", "Copper Lamp", "--kind", "lamp", "--alias", "the lamp", "--alias", "铜灯")
    narr("event", "The inn opens", "--diffuser", "explicit")
    return narr


def holds(narr: CLI, who: str, what: str) -> bool:
    return what in read_node(narr.root, who).get("relations", {}).get("holds", {})


def written(rec: dict[str, Any]) -> set[tuple[str, str, Any]]:
    return {(d["target"], d["field"], json.dumps(d.get("new_value"))) for d in rec["diffusions"]}


def test_new_gives_a_character_its_pronouns(inn: CLI) -> None:
    made = inn.json("new", "character", "Ada Wren", "--pronouns", "she")
    assert made["id"] == "ada-wren"
    assert read_node(inn.root, "ada-wren")["traits"] == {"pronouns": "she"}
    inn("new", "character", "Bo Hale", "--pronouns", "HE")
    assert read_node(inn.root, "bo-hale")["traits"] == {"pronouns": "he"}
    inn("event", "They arrive", "--diffuser", "explicit")
    rec = inn.json("event", "--dry-run", "Ada Wren and Bo Hale walked to the Ford. She lit the lamp.")
    assert ("copper-lamp", "/state/lit", "true") in written(rec)
    assert not any("'She' bound to nobody" in n for n in rec["proposal"]["notes"])


@pytest.mark.parametrize("args, message", [
    (["new", "character", "Ada Wren", "--pronouns", "xe"],
     "narr: error: Ada Wren: pronouns 'xe' is not one narr knows: she, he, they, it "
     "(or she/her, he/him ...)"),
    (["new", "background", "The Mill", "--kind", "place", "--pronouns", "it"],
     "narr: error: The Mill: pronouns are a character's; this is a node of the background layer"),
])
def test_an_unknown_pronoun_is_refused_naming_the_node(inn: CLI, args: list[str], message: str) -> None:
    before = snapshot(inn.root)
    result = inn(*args, expect=12)
    assert result.stderr.splitlines()[0] == message
    assert snapshot(inn.root) == before


def test_a_node_file_with_an_unknown_pronoun_is_refused_naming_it(inn: CLI) -> None:
    inn("new", "character", "Ada Wren")
    path = node_file(inn.root, "ada-wren")
    node = json.loads(path.read_text("utf-8"))
    node["traits"] = {"pronouns": "zie"}
    path.write_text(json.dumps(node, indent=2), "utf-8")
    head = inn("log", "-n", "1").stdout
    result = inn("event", "Ada walks to the Ford", expect=13)
    assert result.stderr.splitlines()[0].startswith(
        "narr: error: world/character/ada-wren.json: ")
    assert "pronouns 'zie' is not one narr knows" in result.stderr.splitlines()[0]
    assert inn("log", "-n", "1").stdout == head  # nothing recorded
    assert json.loads(path.read_text("utf-8"))["traits"] == {"pronouns": "zie"}  # the file kept as typed
    for fine in ("she/her", "They", "it"):
        node["traits"] = {"pronouns": fine}
        path.write_text(json.dumps(node, indent=2), "utf-8")
        inn("event", "--dry-run", "Ada waits", "--diffuser", "explicit")


def test_a_created_node_with_an_unknown_pronoun_is_refused(inn: CLI, tmp_path: Path) -> None:
    f = tmp_path / "ada.json"
    f.write_text(json.dumps({"id": "ada", "name": "Ada", "layer": "character",
                             "traits": {"pronouns": 3}}), "utf-8")
    result = inn("event", "Ada comes", "--diffuser", "explicit", "--create", str(f), expect=12)
    assert "pronouns 3 is not one narr knows" in result.stderr


def test_the_studio_gives_pronouns_and_refuses_unknown_ones(inn: CLI) -> None:
    http = HTTP(inn.root)
    made = http.post("/api/nodes", json={"layer": "character", "name": "Ada Wren",
                                                 "pronouns": "she"})
    assert made.status_code == 200, made.text
    assert read_node(inn.root, "ada-wren")["traits"] == {"pronouns": "she"}
    before = snapshot(inn.root)
    bad = http.post("/api/nodes", json={"layer": "character", "name": "Bo Hale", "pronouns": "hi"})
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("Bo Hale: pronouns 'hi' is not one narr knows")
    assert snapshot(inn.root) == before


@pytest.mark.parametrize("summary, text, lamp_holder", [
    ("She keeps the ford's lamp.", "Ada Wren and Bo Hale walked to the Ford. She took the lamp.", "ada-wren"),
    ("她是渡口的摆渡人。", "Ada Wren and Bo Hale walked to the Ford. She took the lamp.", "ada-wren"),
    ("渡口摆渡人的女儿，十六岁。", "艾达和阿博去了渡口。她拿起了铜灯。", "ada-wren"),
    ("He keeps the ford's lamp.", "Ada Wren and Bo Hale walked to the Ford. He took the lamp.", "bo-hale"),
])
def test_pronouns_are_read_from_a_summary_in_either_language(inn: CLI, summary: str, text: str,
                                                             lamp_holder: str) -> None:
    # the one the summary tells of, and the other, whose pronouns are the other's
    told, other = ("Ada Wren", "Bo Hale") if lamp_holder == "ada-wren" else ("Bo Hale", "Ada Wren")
    inn("new", "character", told, "--summary", summary, "--alias", "艾达" if told == "Ada Wren" else "阿博")
    inn("new", "character", other, "--alias", "阿博" if other == "Bo Hale" else "艾达",
        "--pronouns", "he" if lamp_holder == "ada-wren" else "she")
    inn("event", "They come", "--diffuser", "explicit")
    rec = inn.json("event", "--dry-run", text)
    assert (lamp_holder, "/relations/holds/copper-lamp", "{}") in written(rec)


@pytest.mark.parametrize("text", ["He struck Bo Hale on the arm.", "他一刀砍在了阿博的胳膊上。"])
def test_a_pronoun_is_none_of_the_others_its_clause_names(inn: CLI, text: str) -> None:
    inn("new", "character", "Cy Marsh", "--pronouns", "he", "--alias", "阿赛")
    inn("new", "character", "Bo Hale", "--pronouns", "he", "--alias", "阿博")
    inn("event", "Cy Marsh and Bo Hale met at the Red Inn", "--diffuser", "explicit")
    rec = inn.json("event", "--dry-run", text)
    assert ("bo-hale", "/state/health", '"wounded"') in written(rec)
    assert ("bo-hale", "/relations/enemy-of/cy-marsh", "{}") in written(rec)


@pytest.mark.parametrize("text", ["Cy Marsh trusted him.", "阿赛信任他。"])
def test_an_object_pronoun_is_not_its_subject(inn: CLI, text: str) -> None:
    inn("new", "character", "Cy Marsh", "--pronouns", "he", "--alias", "阿赛")
    inn("new", "character", "Bo Hale", "--pronouns", "he", "--alias", "阿博")
    inn("event", "Bo Hale came to the Red Inn", "--diffuser", "explicit")
    rec = inn.json("event", "--dry-run", text)
    assert ("cy-marsh", "/relations/trusts/bo-hale", "{}") in written(rec)
    assert not any(t == "cy-marsh" and f == "/relations/trusts/cy-marsh" for t, f, _ in written(rec))


def test_two_candidates_of_one_gender_bind_nobody(inn: CLI) -> None:
    inn("new", "character", "Cy Marsh", "--pronouns", "he")
    inn("new", "character", "Bo Hale", "--pronouns", "he")
    inn("event", "Cy Marsh and Bo Hale walked to the Ford", "--diffuser", "explicit")
    rec = inn.json("event", "--dry-run", "He took the lamp.")
    assert not any(t in ("cy-marsh", "bo-hale") for t, _, _ in written(rec))
    assert any(n.startswith("'He' bound to nobody: it could be") for n in rec["proposal"]["notes"])
