"""PNG text chunks, read and written with the standard library (struct, zlib): where cards live.

A PNG is an 8-byte signature and chunks: a 4-byte big-endian length, a 4-byte type, the data and
a CRC-32 of type and data (PNG specification, section 5). A character card is a text chunk whose
keyword is ``chara`` (V1/V2) or ``ccv3`` (V3) and whose text is base64 of the card's UTF-8 JSON.
``tEXt`` is what the card specifications name; ``iTXt`` and ``zTXt`` carry the same keyword in
some tools, so they are read too (inflated within a bound).

Every check gives one clear error: not a PNG, a chunk running past the end of the file (a
truncated download), a CRC that does not match (a damaged one), a text chunk beyond ``MAX_CHUNK``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from narrative.errors import InvalidInputError
from narrative.lore.limits import MAX_CHUNK

SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
TEXT_TYPES: Final = (b"tEXt", b"iTXt", b"zTXt")
CARD_KEYWORDS: Final = ("chara", "ccv3")


def is_png(data: bytes) -> bool:
    return data.startswith(SIGNATURE)


def chunks(label: str, data: bytes) -> list[tuple[bytes, bytes]]:
    """``(type, data)`` of every chunk up to IEND, checked."""
    if not is_png(data):
        raise InvalidInputError(f"{label}: not a PNG image")
    out: list[tuple[bytes, bytes]] = []
    pos = len(SIGNATURE)
    number = 0
    while True:
        number += 1
        if pos + 8 > len(data):
            raise InvalidInputError(f"{label}: the PNG ends in the middle of chunk {number} "
                                    "(the file is truncated)")
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        name = kind.decode("latin-1")
        if not kind.isalpha():
            raise InvalidInputError(f"{label}: PNG chunk {number} has no valid type (the file is damaged)")
        if kind in TEXT_TYPES and length > MAX_CHUNK:
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) is {length:,} bytes, more "
                                    f"than the {MAX_CHUNK:,} narr reads from a text chunk")
        end = pos + 8 + length
        if end + 4 > len(data):
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) runs past the end of the "
                                    "file (the file is truncated)")
        body = data[pos + 8:end]
        (crc,) = struct.unpack(">I", data[end:end + 4])
        if zlib.crc32(kind + body) != crc:
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) fails its CRC check "
                                    "(the file is damaged)")
        out.append((kind, body))
        pos = end + 4
        if kind == b"IEND":
            return out


def text_chunks(label: str, data: bytes) -> dict[str, str]:
    """Keyword (lower case) -> text of the PNG's text chunks; the first of each keyword wins."""
    out: dict[str, str] = {}
    for kind, body in chunks(label, data):
        if kind not in TEXT_TYPES:
            continue
        keyword, sep, rest = body.partition(b"\x00")
        if not sep:
            raise InvalidInputError(f"{label}: a PNG {kind.decode()} chunk has no keyword")
        key = keyword.decode("latin-1").lower()
        if key in out:
            continue
        out[key] = _chunk_text(label, kind, key, rest)
    return out


def _chunk_text(label: str, kind: bytes, key: str, rest: bytes) -> str:
    if kind == b"tEXt":
        return rest.decode("latin-1")
    if kind == b"zTXt":
        return _inflate(label, key, rest[1:]).decode("latin-1")
    # iTXt: compression flag, method, language tag NUL, translated keyword NUL, text (UTF-8)
    if len(rest) < 2:
        raise InvalidInputError(f"{label}: the PNG iTXt chunk {key!r} is cut short")
    compressed = rest[0] == 1
    _, _, tail = rest[2:].partition(b"\x00")
    _, _, text = tail.partition(b"\x00")
    if compressed:
        text = _inflate(label, key, text)
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{label}: the PNG iTXt chunk {key!r} is not UTF-8") from None


def _inflate(label: str, key: str, data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_CHUNK + 1)
    except zlib.error as exc:
        raise InvalidInputError(f"{label}: the PNG chunk {key!r} does not inflate ({exc})") from None
    if len(out) > MAX_CHUNK:
        raise InvalidInputError(f"{label}: the PNG chunk {key!r} inflates to more than {MAX_CHUNK:,} bytes")
    return out


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def with_text(label: str, image: bytes, texts: list[tuple[str, str]]) -> bytes:
    """``image`` with its card chunks (``chara``, ``ccv3``) replaced by ``texts`` (keyword, ASCII
    text), put just before IEND, as SillyTavern writes cards."""
    parts = [SIGNATURE]
    for kind, body in chunks(label, image):
        if kind in TEXT_TYPES and body.partition(b"\x00")[0].decode("latin-1").lower() in CARD_KEYWORDS:
            continue
        if kind == b"IEND":
            parts.extend(chunk(b"tEXt", k.encode("latin-1") + b"\x00" + t.encode("ascii")) for k, t in texts)
        parts.append(chunk(kind, body))
    return b"".join(parts)
