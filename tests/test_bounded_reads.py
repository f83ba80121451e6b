"""Bounded inputs: a PNG card is read for its card chunks only, within one budget for the whole
file (inflated text and number of chunks), and every file narr reads whole (``--png`` images,
``--delta`` and ``--create`` files, a chapter to audit, ``narr.toml``, a rules file, standard
input) is refused from its size, before it is read, with the bound in the message."""

from __future__ import annotations

import base64
import json
import os
import struct
import threading
import tracemalloc
import zlib
from pathlib import Path

import pytest
from helpers import CLI, snapshot

from narrative.errors import InvalidInputError
from narrative.lore import png

SPEC = Path(__file__).resolve().parent / "data" / "import" / "spec"
INVALID, INVALID_WORLD = 12, 13
MB = 1024 * 1024


def _png(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = [png.SIGNATURE]
    for kind, body in chunks:
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    return b"".join(out)


IHDR = (b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
IDAT = (b"IDAT", zlib.compress(b"\x00\x00\x00\x00"))
IEND = (b"IEND", b"")


def _ztxt(keyword: bytes, inflated: int) -> tuple[bytes, bytes]:
    return b"zTXt", keyword + b"\x00\x00" + zlib.compress(b"\x00" * inflated, 9)


def _card_chunk(keyword: bytes = b"chara") -> tuple[bytes, bytes]:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bomb", "description": "x"}}
    return b"tEXt", keyword + b"\x00" + base64.b64encode(json.dumps(card).encode())


def test_compressed_chunks_that_hold_no_card_are_never_inflated() -> None:
    data = _png([IHDR, *(_ztxt(f"comment{i}".encode(), 8 * MB) for i in range(12)), _card_chunk(), IDAT,
                 IEND])
    assert len(data) < 200_000  # each inflates a thousandfold
    tracemalloc.start()
    try:
        texts = png.text_chunks("bomb.png", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert set(texts) == {"chara"}
    assert peak < 4 * MB, f"{peak / MB:.0f} MB held while reading a {len(data) // 1024} KB card"


def test_the_card_text_of_a_file_has_one_budget() -> None:
    data = _png([IHDR, _ztxt(b"chara", 7 * MB), (b"iTXt", b"ccv3\x00\x01\x00\x00\x00"
                                                  + zlib.compress(b"A" * 7 * MB, 9)), IEND])
    with pytest.raises(InvalidInputError, match=r"bomb\.png: the PNG's card chunks hold more than "
                                                 r"12,582,912 bytes of text in all"):
        png.text_chunks("bomb.png", data)


def test_a_png_of_too_many_chunks_is_refused() -> None:
    tiny = (b"teXt", b"")  # an ancillary chunk of no data: 12 bytes
    data = _png([IHDR, *([tiny] * 100_001), IEND])
    with pytest.raises(InvalidInputError, match=r"many\.png: the PNG has more than 100,000 chunks"):
        png.text_chunks("many.png", data)


def test_a_card_import_through_the_cli_is_bounded(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png([IHDR, _ztxt(b"chara", 9 * MB), IEND]))
    before = snapshot(flat_world)
    result = narr("import", str(bomb), expect=INVALID)
    assert "inflates to more than 8,388,608 bytes" in result.stderr
    assert snapshot(flat_world) == before


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def test_a_png_image_to_embed_is_size_checked_before_it_is_read(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    big = _sparse(tmp_path / "big.png", 65 * MB)  # sparse: no memory, no disk
    result = narr("export", "card", "lin-yuan", "--png", str(big), "-o", str(tmp_path / "out.png"),
                  expect=INVALID)
    assert result.stderr.splitlines()[0] == (
        f"narr: error: --png {big}: the image is 65.0 MB, more than the 64.0 MB narr reads from one")
    assert not (tmp_path / "out.png").exists()


def test_a_png_image_from_a_pipe_that_never_ends_is_refused(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)

    def feed() -> None:
        block = b"\x00" * MB
        try:
            with open(fifo, "wb") as fh:
                for _ in range(70):
                    fh.write(block)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = narr("export", "card", "lin-yuan", "--png", str(fifo), "-o", str(tmp_path / "out.png"),
                  expect=INVALID)
    writer.join(30)
    assert "the image goes on past 64.0 MB, more than the 64.0 MB narr reads from one" in result.stderr


def test_a_missing_png_image_is_one_clear_error(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    result = narr("export", "card", "lin-yuan", "--png", "nowhere.png", "-o", str(tmp_path / "o.png"),
                  expect=INVALID)
    assert result.stderr.splitlines()[0] == ("narr: error: --png nowhere.png: cannot read "
                                             "(No such file or directory)")


def test_delta_create_and_chapter_files_are_size_checked(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    big = _sparse(tmp_path / "big.json", 9 * MB)
    before = snapshot(flat_world)
    out = narr("event", "A beat", "--delta", str(big), expect=INVALID).stderr
    assert f"--delta {big}: the file is 9.0 MB, more than the 8.0 MB narr reads from one" in out
    out = narr("event", "A beat", "--create", str(_sparse(tmp_path / "node.json", 17 * MB)),
               expect=INVALID).stderr
    assert "the file is 17.0 MB, more than the 16.0 MB narr reads from one" in out
    out = narr("audit", str(_sparse(tmp_path / "chapter.md", 9 * MB)), expect=INVALID).stderr
    assert "the chapter goes on past 8.0 MB, more than the 8.0 MB narr reads from one" in out
    assert snapshot(flat_world) == before


def test_standard_input_is_bounded(flat_world: Path) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    out = narr("event", "-", input="x" * (8 * MB + 1), expect=INVALID).stderr
    assert "<stdin>: the input goes on past 8.0 MB, more than the 8.0 MB narr reads from one" in out
    assert snapshot(flat_world) == before


def test_world_settings_and_rules_are_size_checked(tmp_path: Path, flat_world: Path) -> None:
    narr = CLI(flat_world)
    rules = flat_world / "rules"
    rules.mkdir(exist_ok=True)
    _sparse(rules / "huge.toml", 9 * MB)
    out = narr("event", "A beat", "--diffuser", "rules", expect=INVALID_WORLD).stderr
    assert "rules/huge.toml: the file is 9.0 MB, more than the 8.0 MB narr reads from one" in out
    (rules / "huge.toml").unlink()
    config = flat_world / "narr.toml"
    with open(config, "ab") as fh:
        fh.truncate(2 * MB)
    out = narr("status", expect=INVALID_WORLD).stderr
    assert "narr.toml: the file is 2.0 MB, more than the 1.0 MB narr reads from one" in out
