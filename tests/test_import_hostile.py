"""``narr import`` of files a careless or hostile stranger made: one clear error naming the file (and
the entry), or a report; never a traceback, never a file read through a link out of the folder,
and on error nothing written (HEAD, refs, the index and the working tree as they were)."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from helpers import CLI, git, snapshot

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"
SECRET = "the launch code is 0000"


def _world(tmp_path: Path) -> CLI:
    CLI(tmp_path)("init", str(tmp_path / "w"))
    narr = CLI(tmp_path / "w")
    narr("new", "character", "Lin Yuan")
    narr("event", "The cast")
    return narr


def _refused(narr: CLI, source: Path, *expected: str, code: int = 12) -> str:
    """Import ``source``: refused with ``code`` and a message holding each of ``expected``,
    the world untouched."""
    before = snapshot(narr.root)
    head = git(narr.root, "rev-parse", "HEAD")
    result = narr("import", str(source), expect=code)
    assert result.stderr.startswith("narr: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    assert snapshot(narr.root) == before
    assert git(narr.root, "rev-parse", "HEAD") == head
    return result.stderr


# -- links out of the folder ----------------------------------------------------------


def test_a_symlink_out_of_the_folder_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "passwd.md").write_text(f"{SECRET}\n", encoding="utf-8")
    (outside / "notes").mkdir()
    (outside / "notes" / "Hidden.md").write_text(f"{SECRET}\n", encoding="utf-8")
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Real.md").write_text("A real note.\n", encoding="utf-8")
    (vault / "passwd.md").symlink_to(outside / "passwd.md")
    (vault / "linked").symlink_to(outside / "notes", target_is_directory=True)
    narr = _world(tmp_path)
    out = narr.json("import", str(vault))
    assert [c["name"] for c in out["created"]] == ["Real"]
    skipped = {s["source"]: s["reason"] for s in out["skipped"]}
    assert skipped["passwd.md"].startswith(f"a symbolic link (to {outside / 'passwd.md'}): not followed")
    assert skipped["linked/"] == f"a symbolic link (to {outside / 'notes'}): not followed"
    assert SECRET not in json.dumps(out) and SECRET not in git(narr.root, "log", "-p")
    text = narr("import", str(vault), "--dry-run").stdout
    assert "left out passwd.md: a symbolic link (to " in text


def test_etc_passwd_linked_into_a_vault(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "passwd.md").symlink_to("/etc/passwd")
    narr = _world(tmp_path)
    out = narr.json("import", str(vault))
    assert out["created"] == [] and out["commit"] is None
    assert out["skipped"][0]["source"] == "passwd.md"
    assert "root:" not in git(narr.root, "log", "-p")


# -- YAML, numbers, JSON beyond bounds --------------------------------------------------


def _laughs(levels: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghijk"[:levels]:
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
        prev = name
    return "---\n" + "\n".join(lines) + "\n---\nA note.\n"


def test_a_yaml_bomb_in_a_note_fails_fast(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    note = tmp_path / "Bomb.md"
    note.write_text(_laughs(8), encoding="utf-8")
    assert len(note.read_bytes()) < 2048
    _refused(narr, note, "Bomb.md: the front matter's YAML aliases expand to more than 10,000 values")
    smaller = tmp_path / "Smaller.md"  # 531,441 values once expanded: no node of that size either
    smaller.write_text(_laughs(5), encoding="utf-8")
    _refused(narr, smaller, "Smaller.md: the front matter's YAML aliases expand")
    cycle = tmp_path / "Cycle.md"
    cycle.write_text("---\na: &a [*a]\n---\n", encoding="utf-8")
    _refused(narr, cycle, "Cycle.md: the front matter has a YAML alias that contains itself")
    fine = tmp_path / "Fine.md"  # an alias within the budget is only YAML
    fine.write_text("---\nstate: &s {mood: calm}\ntraits: *s\n---\nFine.\n", encoding="utf-8")
    narr("import", str(fine))


def test_a_5000_digit_integer(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    note = tmp_path / "Big.md"
    note.write_text("---\nstate:\n  coins: " + "9" * 5000 + "\n---\n", encoding="utf-8")
    _refused(narr, note, "Big.md: the front matter holds a value narr cannot read")
    book = tmp_path / "big.json"
    book.write_text('{"entries": {"0": {"key": ["x"], "content": "x", "order": ' + "9" * 5000 + "}}}",
                    encoding="utf-8")
    _refused(narr, book, "big.json: not JSON narr can read")
    huge = tmp_path / "huge.md"  # within the digit limit of Python, beyond 64 bits
    huge.write_text("---\nstate:\n  coins: " + "9" * 40 + "\n---\n", encoding="utf-8")
    _refused(narr, huge, "huge.md (front matter): an integer beyond 64 bits")


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def test_absurdly_deep_json_in_a_lorebook_a_card_and_a_codex(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    book = tmp_path / "deep.json"
    book.write_text('{"entries": {"0": {"key": ["x"], "content": "x", "extensions": ' + _deep(1100) + "}}}",
                    encoding="utf-8")
    _refused(narr, book, "deep.json: values nested more than 48 levels deep")
    shallow = tmp_path / "shallow.json"  # parses, but a node could not hold it
    shallow.write_text('{"entries": {"0": {"key": ["x"], "content": "x", "extensions": ' + _deep(60) + "}}}",
                       encoding="utf-8")
    _refused(narr, shallow, "shallow.json: values nested more than 48 levels deep")
    codex = tmp_path / "deep.md"
    codex.write_text("# W: codex\n\n## Characters\n\n### A\n\n- id: a\n\n#### State\n\n- x: " + _deep(1100)
                     + "\n", encoding="utf-8")
    _refused(narr, codex, "deep.md:11: a value nested too deep to read")


def test_entries_that_are_not_entries(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    cases = {
        "five.json": ('{"entries": 5}', 'five.json: "entries" is a number: neither an object of entries'),
        "text.json": ('"a card"', "text.json: the JSON is a string, not an object"),
        "array.json": ("[1, 2]", "array.json#0: the entry is a number, not an object"),
        "data.json": ('{"spec": "chara_card_v2", "data": 5}', "data.json: the card's \"data\" is a number"),
        "keys.json": ('{"entries": {"0": {"key": {"a": 1}, "content": "x"}}}',
                      "keys.json#0: key is an object, not a list of words"),
        "content.json": ('{"entries": [{"keys": ["x"], "content": ["x"]}]}',
                         "content.json#0: the content is a list, not text"),
        "nan.json": ('{"entries": {"0": {"key": ["x"], "content": "x", "order": NaN}}}',
                     "nan.json: not JSON narr can read (NaN is not a number JSON allows)"),
        "broken.json": ('{"entries": {', "broken.json: not JSON (line 1, column 14"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        _refused(narr, path, message)


def test_an_entry_with_10000_keys_and_a_10_mb_lorebook(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    keys = tmp_path / "keys.json"
    many = [f"k{i}" for i in range(10_000)]
    keys.write_text(json.dumps({"entries": {"7": {"comment": "Everyone", "key": many, "content": "x"}}}),
                    encoding="utf-8")
    _refused(narr, keys, "keys.json#7 (Everyone): 10,000 keys, more than the 1,000 narr reads for one entry")
    big = tmp_path / "big.json"  # refused by its size, before a byte of it is parsed
    big.write_bytes(b'{"entries": {}' + b" " * (65 * 1024 * 1024) + b"}")
    _refused(narr, big, "big.json: the file is 65.", "more than the 64.0 MB narr imports")
    note = tmp_path / "big.md"
    note.write_bytes(b"A note. " * (9 * 1024 * 1024 // 8))
    _refused(narr, note, "big.md: the file is 9.0 MB, more than the 8.0 MB narr imports")
    long = tmp_path / "long.json"
    text = "y" * 1_100_000
    long.write_text(json.dumps({"entries": {"3": {"comment": "Long", "key": ["x"], "content": text}}}),
                    encoding="utf-8")
    _refused(narr, long, "long.json#3 (Long): the entry's content is 1.0 MB, more than the 1.0 MB")


# -- cards that are not cards ----------------------------------------------------------


def _png(chunks: list[tuple[bytes, bytes]], *, crc_ok: bool = True) -> bytes:
    out = [b"\x89PNG\r\n\x1a\n"]
    for kind, body in chunks:
        crc = zlib.crc32(kind + body) if crc_ok else 0
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc))
    return b"".join(out)


IHDR = (b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
IDAT = (b"IDAT", zlib.compress(b"\x00\x00\x00\x00"))
IEND = (b"IEND", b"")


def test_pngs_that_hold_no_card(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    plain = tmp_path / "plain.png"
    plain.write_bytes(_png([IHDR, IDAT, IEND]))
    _refused(narr, plain, "plain.png: a PNG with no character card in it (no chara or ccv3 text chunk)")
    card = (SPEC / "card-v2.png").read_bytes()
    cut = tmp_path / "cut.png"
    cut.write_bytes(card[: len(card) // 2])
    _refused(narr, cut, "cut.png: PNG chunk 3 (tEXt) runs past the end of the file (the file is truncated)")
    damaged = tmp_path / "damaged.png"
    damaged.write_bytes(_png([IHDR, IDAT, (b"tEXt", b"chara\x00" + base64.b64encode(b"{}")), IEND],
                             crc_ok=False))
    _refused(narr, damaged, "damaged.png: PNG chunk 1 (IHDR) fails its CRC check (the file is damaged)")
    huge = tmp_path / "huge.png"
    huge.write_bytes(_png([IHDR]) + struct.pack(">I", 9 * 1024 * 1024) + b"tEXtchara\x00")
    _refused(narr, huge, "huge.png: PNG chunk 2 (tEXt) is 9,437,184 bytes, more than the 8,388,608")
    not64 = tmp_path / "not64.png"
    not64.write_bytes(_png([IHDR, (b"tEXt", b"chara\x00not base64!"), IEND]))
    _refused(narr, not64, "not64.png: the PNG's chara chunk is not base64")
    array = tmp_path / "array.png"
    array.write_bytes(_png([IHDR, (b"tEXt", b"chara\x00" + base64.b64encode(b"[1, 2]")), IEND]))
    _refused(narr, array, "array.png: the embedded JSON is not a character card")
    notjson = tmp_path / "notjson.png"
    notjson.write_bytes(_png([IHDR, (b"tEXt", b"ccv3\x00" + base64.b64encode(b"{oops")), IEND]))
    _refused(narr, notjson, "notjson.png (ccv3 chunk): not JSON")


def test_an_image_in_a_folder_is_left_out_with_a_report(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Note.md").write_text("A note.\n", encoding="utf-8")
    (vault / "portrait.png").write_bytes(_png([IHDR, IDAT, IEND]))
    narr = _world(tmp_path)
    out = narr.json("import", str(vault))
    assert [c["name"] for c in out["created"]] == ["Note"]
    assert out["skipped"] == [{"source": "portrait.png", "title": "", "reason": "an image, not a card "
                               "(portrait.png: a PNG with no character card in it (no chara or ccv3 text "
                               "chunk))"}]


def test_charx_files_that_are_not_cards(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    whole = (SPEC / "card-v3.charx").read_bytes()
    cut = tmp_path / "cut.charx"
    cut.write_bytes(whole[: len(whole) // 2])
    _refused(narr, cut, "cut.charx: not a CHARX (zip) file, or a damaged one")
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("assets/icon.png", b"x")
    none = tmp_path / "none.charx"
    none.write_bytes(empty.getvalue())
    _refused(narr, none, "none.charx: the CHARX has no card.json at its root")
    bad = io.BytesIO()
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("card.json", "[1]")
    notcard = tmp_path / "notcard.charx"
    notcard.write_bytes(bad.getvalue())
    _refused(narr, notcard, "notcard.charx: the embedded JSON is not a character card")
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", b" " * (9 * 1024 * 1024))
    big = tmp_path / "bomb.charx"
    big.write_bytes(bomb.getvalue())
    assert big.stat().st_size < 100_000
    _refused(narr, big, "bomb.charx (card.json): the file is 9.0 MB, more than the 8.0 MB")


def test_links_that_loop_and_a_note_linking_to_itself(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Ann.md").write_text("Ann knows [[Bo]] and [[Ann]] and [[Ann|herself]].\n", encoding="utf-8")
    (vault / "Bo.md").write_text("Bo knows [[Cy]].\n", encoding="utf-8")
    (vault / "Cy.md").write_text("Cy knows [[Ann]] and [[Bo#x]].\n", encoding="utf-8")
    narr = _world(tmp_path)
    result = narr("import", str(vault))
    assert "Ann.md: [[Ann]] links the note to itself; no relation" in result.stderr
    out = narr.json("import", str(vault))
    assert out["commit"] is None
    nodes = {n: json.loads((narr.root / f"world/background/{n}.json").read_text(encoding="utf-8"))
             for n in ("ann", "bo", "cy")}
    assert {n: sorted(v["relations"]["mentions"]) for n, v in nodes.items()} == {
        "ann": ["bo"], "bo": ["cy"], "cy": ["ann", "bo"]}
    assert nodes["ann"]["summary"] == "Ann knows [[Bo]] and [[Ann]] and [[Ann|herself]]."  # as written


@pytest.mark.parametrize("text", ["---\n- a list\n---\n", "---\nlayer: heaven\n---\n",
                                  "---\ntraits: [1]\n---\n", "---\nalways_in_view: maybe\n---\n",
                                  "---\nkey: [unclosed\n---\n"])
def test_front_matter_that_is_wrong(tmp_path: Path, text: str) -> None:
    narr = _world(tmp_path)
    note = tmp_path / "N.md"
    note.write_text(text, encoding="utf-8")
    _refused(narr, note, "N.md: ")


# -- a folder with bad files, odd names, a book one entry too long -------------------------


def _hundred(vault: Path) -> None:
    vault.mkdir()
    for i in range(100):
        (vault / f"Note {i:03}.md").write_text(f"Note {i} links [[Note {(i + 1) % 100:03}]].\n",
                                               encoding="utf-8")


def test_a_non_utf8_note_among_a_hundred_good_ones(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    _hundred(vault)
    (vault / "Latin-1.md").write_bytes("Caf\u00e9 au lait.\n".encode("latin-1"))
    (vault / "Broken.md").write_text("---\nkey: [unclosed\n---\nText.\n", encoding="utf-8")
    narr = _world(tmp_path)
    said = _refused(narr, vault, "v: 2 files cannot be imported; nothing was imported",
                    "\n  Broken.md: the front matter is not YAML", "\n  Latin-1.md: not UTF-8 text (byte 3)",
                    "hint: mend them, or add --skip-bad")
    assert said.index("Broken.md") < said.index("Latin-1.md")  # every bad file at once, in order
    out = narr.json("import", str(vault), "--skip-bad")
    assert len(out["created"]) == 100
    skipped = {s["source"]: s["reason"] for s in out["skipped"]}
    assert skipped["Latin-1.md"] == "cannot be imported: not UTF-8 text (byte 3)"
    assert skipped["Broken.md"].startswith("cannot be imported: the front matter is not YAML")
    assert narr.json("import", str(vault), "--skip-bad")["commit"] is None


def test_a_name_of_punctuation_only_and_a_name_of_nothing(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "???.md").write_text("A mystery that has no name yet.\n", encoding="utf-8")
    (vault / "—.md").write_text("A dash.\n", encoding="utf-8")
    narr = _world(tmp_path)
    result = narr("import", str(vault))
    assert "???.md: the name '???' has no letter or digit: its id is node" in result.stderr
    assert "—.md: the name '—' has no letter or digit: its id is node-2" in result.stderr
    assert narr("get", "???", "summary").stdout == "A mystery that has no name yet.\n"
    blank = tmp_path / "b"
    blank.mkdir()
    (blank / "Blank.md").write_text("---\nname: \"\u3000\"\n---\nText.\n", encoding="utf-8")
    _refused(narr, blank, "Blank.md: the note has no name (its name is blank) (give it one: name: ... "
                          "in its front matter)")


def test_a_book_of_20001_entries_is_refused_whole(tmp_path: Path) -> None:
    narr = _world(tmp_path)
    book = tmp_path / "huge.json"
    entries = {str(i): {"uid": i, "key": [f"k{i}"], "content": "x"} for i in range(20_001)}
    book.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    _refused(narr, book, "huge.json: 20,001 entries, more than the 20,000 narr imports from one book",
             "hint: split the book")
    vault = tmp_path / "v"
    _hundred(vault)
    (vault / "huge.json").write_bytes(book.read_bytes())
    _refused(narr, vault, "v: 1 file cannot be imported",
             "huge.json: 20,001 entries, more than the 20,000 narr imports from one book")
