"""Lore through every door: an import given its document (a program over HTTP or MCP has no
file here), a path read over HTTP and MCP only inside the world, exports answered as the
documents themselves, and bad input refused alike everywhere with nothing written."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, check_answer, git
from test_http_api import masked
from test_one_door import LOREBOOK

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"


def _library(root: Path, arguments: dict[str, Any], name: str = "import_lore") -> dict[str, Any]:
    """The row's answer through the library, or its error's JSON."""
    import narrative as narr
    from narrative.errors import NarrError

    row = narr.operation(name)
    with narr.open_world(root) as wr:
        try:
            return row.call(wr, row.parse(arguments))
        except NarrError as exc:
            return exc.to_json()


def _http(root: Path, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    answer = HTTP(root).post("/api/import", json=arguments)
    return answer.status_code, answer.json()


def _mcp(root: Path, arguments: dict[str, Any], name: str = "import_lore") -> tuple[bool, dict[str, Any]]:
    from narrative.serve.mcp import WorldTools

    tools = WorldTools(root)
    try:
        result = tools.call(name, arguments)
    finally:
        tools.close()
    return result.is_error, result.structured_content or {}


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "unknown argument": ({"content": LOREBOOK, "name": "book.json", "colour": "red"}, "/colour"),
    "wrong type": ({"content": 5, "name": "book.json"}, "/content"),
    "too large": ({"content": "x" * (4 * 1024 * 1024 + 1), "name": "note.md"}, "/content"),
    "malformed lorebook": ({"content": '{"entries": {"0": {"key": ["Mo"]', "name": "book.json"},
                           "book.json: not JSON"),
    "a lorebook beyond its bounds": ({"content": json.dumps({"entries": {"0": {
        "key": ["Mo"], "content": "a" * 10, "order": 10 ** 40}}}), "name": "book.json"},
        "book.json"),
    "neither source nor content": ({"name": "book.json"}, "source"),
    "content with no name": ({"content": LOREBOOK}, "/name"),
    "a name that climbs": ({"content": LOREBOOK, "name": "../book.json"}, "/name"),
    "not base64": ({"content": "not base64!", "name": "card.png", "base64": True}, "not base64"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_import_is_the_same_typed_error_through_every_door(case: str, flat_world: Path) -> None:
    arguments, said = BAD[case]
    before = git(flat_world, "rev-parse", "HEAD")
    errors = {"library": _library(flat_world, arguments)}
    status, errors["http"] = _http(flat_world, arguments)
    assert status == 400, errors["http"]
    is_error, errors["mcp"] = _mcp(flat_world, arguments)
    assert is_error
    for door, error in errors.items():
        assert (error.get("type"), error.get("exit_code")) == ("InvalidInputError", 12), (door, error)
        assert said in error["error"], (door, error["error"])
    # the same words, but for where the door read the arguments (the arguments, the request body)
    assert len({error["error"].split(": ", 1)[1] for error in errors.values()}) == 1, errors
    assert git(flat_world, "rev-parse", "HEAD") == before
    assert git(flat_world, "status", "--porcelain") == ""


def test_a_malformed_lorebook_file_is_the_same_error_on_the_command_line(flat_world: Path,
                                                                          tmp_path: Path) -> None:
    book = tmp_path / "book.json"
    book.write_text(BAD["malformed lorebook"][0]["content"], "utf-8")
    error = CLI(flat_world).json("import", str(book), expect=12)
    served = _library(flat_world, {"content": book.read_text("utf-8"), "name": "book.json"})
    assert (error["type"], error["error"]) == (served["type"], served["error"])


def test_over_http_and_mcp_a_source_is_read_only_inside_the_world(flat_world: Path,
                                                                  tmp_path: Path) -> None:
    """A caller over a socket may not read the user's other files into the world (and out of
    it again); the library and the command line, run by the user, may."""
    outside = tmp_path / "secret-book.json"
    outside.write_text(LOREBOOK, "utf-8")
    lore = flat_world / "lore"
    lore.mkdir()
    (lore / "link.json").symlink_to(outside)
    shutil.copy(outside, lore / "harbour.json")
    before = git(flat_world, "rev-parse", "HEAD")
    for source, said in [(str(outside), "not inside the world's folder"),
                         ("../secret-book.json", "not inside the world's folder"),
                         ("lore/link.json", "not inside the world's folder"),
                         (".git/config", "inside the world's own"),
                         ("world/character", "inside the world's own"),
                         (".", "not inside the world's folder")]:
        arguments = {"source": source, "dry_run": True}
        status, refused = _http(flat_world, arguments)
        assert status == 400 and "/source" in refused["error"] and said in refused["error"], refused
        is_error, refused_mcp = _mcp(flat_world, arguments)
        assert is_error and refused_mcp == refused, refused_mcp
    mine = _library(flat_world, {"source": str(outside), "dry_run": True})
    assert mine["schema"] == "narr.import/2" and mine["sources"][0]["path"] == "secret-book.json"
    inside = {"source": "lore/harbour.json", "dry_run": True}
    status, served = _http(flat_world, inside)
    assert status == 200 and served["created"], served
    is_error, served_mcp = _mcp(flat_world, inside)
    assert not is_error and masked(served_mcp) == masked(served)
    assert masked(_library(flat_world, {"source": str(lore / "harbour.json"), "dry_run": True})) \
        == masked(served)
    assert git(flat_world, "rev-parse", "HEAD") == before


@pytest.mark.parametrize("card", ["card-v3.png", "card-v3.charx"])
def test_a_card_given_as_base64_imports_as_its_file_does(card: str, flat_world: Path,
                                                         tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(flat_world, twin, symlinks=True)
    data = (SPEC / card).read_bytes()
    sent = {"content": base64.b64encode(data).decode("ascii"), "name": card, "base64": True}
    status, served = _http(flat_world, sent)
    assert status == 200, served
    check_answer(served)
    from_file = CLI(twin).json("import", str(SPEC / card))
    assert served["sources"][0]["format"].startswith("character card (")
    assert masked(served) == masked(from_file)
    nodes = [CLI(root).json("get", answer["created"][0]["id"])["node"]
             for root, answer in ((flat_world, served), (twin, from_file))]
    assert {**nodes[0], "created_by_event": None} == {**nodes[1], "created_by_event": None}


def test_exports_over_http_are_the_documents_the_command_line_writes(flat_world: Path,
                                                                      tmp_path: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.mood=calm")
    http = HTTP(flat_world)
    md = http.get("/api/export/codex?format=md")
    assert md.status_code == 200
    assert md.text == narr("export", "codex").stdout
    book = http.get("/api/export/lorebook").json()
    narr("export", "lorebook", "-o", str(tmp_path / "book.json"))
    assert (tmp_path / "book.json").read_text("utf-8") == \
        json.dumps(book["lorebook"], ensure_ascii=False, indent=2) + "\n"
    card = http.get("/api/export/card/Lin%20Yuan?spec=v3").json()
    assert card["node"] == "lin-yuan" and card["card"]["spec"] == "chara_card_v3"
    assert card["card"] == json.loads(narr("export", "card", "lin-yuan").stdout)
    vault = http.get("/api/export/vault").json()
    narr("export", "vault", str(tmp_path / "vault"))
    on_disk = {p.relative_to(tmp_path / "vault").as_posix(): p.read_text("utf-8")
               for p in (tmp_path / "vault").rglob("*.md")}
    assert {n["path"]: n["text"] for n in vault["notes"]} == on_disk


def test_an_exported_book_sent_back_as_content_adds_nothing(flat_world: Path) -> None:
    """What an agent reads out (a lorebook) it can send back in: the world has it all."""
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.mood=calm")
    book = _library(flat_world, {}, "export_lorebook")["lorebook"]
    head = git(flat_world, "rev-parse", "HEAD")
    is_error, back = _mcp(flat_world, {"content": json.dumps(book), "name": "world.json"})
    assert not is_error, back
    assert back["commit"] is None and back["created"] == [] and back["edits"] == []
    assert git(flat_world, "rev-parse", "HEAD") == head


def test_an_export_over_mcp_is_a_read_that_writes_nothing(flat_world: Path, tmp_path: Path) -> None:
    before = sorted(os.listdir(tmp_path))
    for name, arguments in [("export_notes", {}), ("export_card", {"node": "su-qing"}),
                            ("export_codex", {}), ("export_lorebook", {"pov": "Su Qing"})]:
        is_error, answer = _mcp(flat_world, arguments, name)
        assert not is_error, answer
        check_answer(answer)
        assert answer == _library(flat_world, arguments, name)
    assert sorted(os.listdir(tmp_path)) == before
    assert git(flat_world, "status", "--porcelain") == ""
    is_error, missing = _mcp(flat_world, {"node": "nobody-here"}, "export_card")
    assert is_error and missing["type"] == "NotFoundError"
