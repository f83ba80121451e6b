"""PNG text chunks, read and written with the standard library (struct, zlib): where cards live.

A PNG is an 8-byte signature and chunks: a 4-byte big-endian length, a 4-byte type, the data and
a CRC-32 of type and data (PNG specification, section 5). A character card is a text chunk whose
keyword is ``chara`` (V1/V2) or ``ccv3`` (V3) and whose text is base64 of the card's UTF-8 JSON.
``tEXt`` is what the card specifications name; ``iTXt`` and ``zTXt`` carry the same keyword in
some tools, so they are read too.

Only the card chunks are read: every other chunk (an image's pixels, a comment, a thousand
compressed text chunks someone added) is walked past without being copied or inflated. What a
file can cost is bounded as a whole, not chunk by chunk: at most :data:`MAX_PNG_CHUNKS` chunks,
at most ``MAX_CHUNK`` bytes in one card chunk, and at most :data:`MAX_PNG_TEXT` of card text in
all once inflated (a small zTXt chunk can inflate a thousandfold).

Every check gives one clear error: not a PNG, a chunk running past the end of the file (a
truncated download), a CRC that does not match (a damaged one), a card chunk or the file's card
text beyond its bound, too many chunks.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Final

from narrative.errors import InvalidInputError
from narrative.lore.limits import MAX_CHUNK, MAX_PNG_CHUNKS, MAX_PNG_TEXT

SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
TEXT_TYPES: Final = (b"tEXt", b"iTXt", b"zTXt")
CARD_KEYWORDS: Final = ("chara", "ccv3")
_KEYWORD_MAX: Final = 79  # PNG specification, 11.3.4.2


def is_png(data: bytes) -> bool:
    return data.startswith(SIGNATURE)


def _keyword(data: bytes, start: int, end: int) -> str:
    """A text chunk's keyword (lower case) from its first bytes, without copying the rest."""
    head = data[start:min(end, start + _KEYWORD_MAX + 1)]
    return head.partition(b"\x00")[0].decode("latin-1").lower()


def chunks(label: str, data: bytes) -> Iterator[tuple[bytes, int, int, bool]]:
    """``(type, start, end, card)`` of every chunk up to IEND, checked: the chunk's data is
    ``data[start:end]``; ``card`` says whether it is a text chunk with a card's keyword."""
    if not is_png(data):
        raise InvalidInputError(f"{label}: not a PNG image")
    pos = len(SIGNATURE)
    number = 0
    while True:
        number += 1
        if number > MAX_PNG_CHUNKS:
            raise InvalidInputError(f"{label}: the PNG has more than {MAX_PNG_CHUNKS:,} chunks, more "
                                    "than narr reads from an image")
        if pos + 8 > len(data):
            raise InvalidInputError(f"{label}: the PNG ends in the middle of chunk {number} "
                                    "(the file is truncated)")
        (length,) = struct.unpack_from(">I", data, pos)
        kind = data[pos + 4:pos + 8]
        name = kind.decode("latin-1")
        if not kind.isalpha():
            raise InvalidInputError(f"{label}: PNG chunk {number} has no valid type (the file is damaged)")
        start, end = pos + 8, pos + 8 + length
        card = kind in TEXT_TYPES and _keyword(data, start, end) in CARD_KEYWORDS
        if card and length > MAX_CHUNK:
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) is {length:,} bytes, more "
                                    f"than the {MAX_CHUNK:,} narr reads from a text chunk")
        if end + 4 > len(data):
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) runs past the end of the "
                                    "file (the file is truncated)")
        (crc,) = struct.unpack_from(">I", data, end)
        if zlib.crc32(memoryview(data)[start:end], zlib.crc32(kind)) != crc:
            raise InvalidInputError(f"{label}: PNG chunk {number} ({name}) fails its CRC check "
                                    "(the file is damaged)")
        yield kind, start, end, card
        pos = end + 4
        if kind == b"IEND":
            return


def text_chunks(label: str, data: bytes) -> dict[str, str]:
    """Keyword (lower case) -> text of the PNG's card chunks (``chara``, ``ccv3``); the first of
    each keyword wins; every other chunk is left unread."""
    out: dict[str, str] = {}
    budget = [MAX_PNG_TEXT]
    for kind, start, end, card in chunks(label, data):
        if not card:
            continue
        keyword, sep, rest = data[start:end].partition(b"\x00")
        if not sep:
            raise InvalidInputError(f"{label}: a PNG {kind.decode()} chunk has no keyword")
        key = keyword.decode("latin-1").lower()
        if key in out:
            continue
        out[key] = _chunk_text(label, kind, key, rest, budget)
    return out


def _spend(label: str, budget: list[int], size: int) -> None:
    budget[0] -= size
    if budget[0] < 0:
        raise InvalidInputError(f"{label}: the PNG's card chunks hold more than {MAX_PNG_TEXT:,} bytes "
                                "of text in all, more than narr reads from one image")


def _chunk_text(label: str, kind: bytes, key: str, rest: bytes, budget: list[int]) -> str:
    if kind == b"tEXt":
        _spend(label, budget, len(rest))
        return rest.decode("latin-1")
    if kind == b"zTXt":
        return _inflate(label, key, rest[1:], budget).decode("latin-1")
    # iTXt: compression flag, method, language tag NUL, translated keyword NUL, text (UTF-8)
    if len(rest) < 2:
        raise InvalidInputError(f"{label}: the PNG iTXt chunk {key!r} is cut short")
    compressed = rest[0] == 1
    _, _, tail = rest[2:].partition(b"\x00")
    _, _, text = tail.partition(b"\x00")
    if compressed:
        text = _inflate(label, key, text, budget)
    else:
        _spend(label, budget, len(text))
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{label}: the PNG iTXt chunk {key!r} is not UTF-8") from None


def _inflate(label: str, key: str, data: bytes, budget: list[int]) -> bytes:
    """The chunk's text inflated, no further than what is left of the file's budget (and
    ``MAX_CHUNK`` for one chunk): a bomb stops at the bound, not at its end."""
    bound = min(MAX_CHUNK, budget[0])
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, bound + 1)
    except zlib.error as exc:
        raise InvalidInputError(f"{label}: the PNG chunk {key!r} does not inflate ({exc})") from None
    if len(out) > MAX_CHUNK:
        raise InvalidInputError(f"{label}: the PNG chunk {key!r} inflates to more than {MAX_CHUNK:,} bytes")
    _spend(label, budget, len(out))
    return out


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def with_text(label: str, image: bytes, texts: list[tuple[str, str]]) -> bytes:
    """``image`` with its card chunks (``chara``, ``ccv3``) replaced by ``texts`` (keyword, ASCII
    text), put just before IEND, as SillyTavern writes cards."""
    parts = [SIGNATURE]
    for kind, start, end, card in chunks(label, image):
        if card:
            continue
        if kind == b"IEND":
            parts.extend(chunk(b"tEXt", k.encode("latin-1") + b"\x00" + t.encode("ascii")) for k, t in texts)
        parts.append(image[start - 8:end + 4])
    return b"".join(parts)
