"""Build the derived card fixtures from the hand-written ones, with the standard library only.

The hand-written sources are `card-v3.json` (a Character Card V3) and `card-v1.json`. From them
this script writes, byte for byte the same on every run:

- `card-v2.json`: the V3 card as a V2 editor would save it (V3-only fields dropped, entry ids made
  numbers, `use_regex` gone);
- `card-v2.png`: a PNG with one `chara` tEXt chunk holding `card-v2.json`, base64 of UTF-8 JSON;
- `card-v3.png`: a PNG with a `chara` chunk (a V2 backfill carrying the V3 spec's warning in
  `creator_notes`) and a `ccv3` chunk holding `card-v3.json`, as V3 writers do;
- `card-v1.png`: a PNG with a `chara` chunk holding the V1 card;
- `card-v3.charx`: a zip with `card.json` (the V3 card, its icon asset pointing into the zip),
  the icon under `assets/icon/images/`, and an application file at the root that readers ignore.

Run it from anywhere: `python tests/data/import/spec/make_fixtures.py`. A test checks that the
committed files equal what it writes.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

V3_ONLY_CARD_FIELDS = (
    "nickname",
    "creator_notes_multilingual",
    "source",
    "group_only_greetings",
    "creation_date",
    "modification_date",
    "assets",
)
BACKFILL_WARNING = (
    "This character card is Character Card V3, but it is loaded as a Character Card V2. "
    "Please use a Character Card V3 compatible application to use this character card properly."
)
ZIP_TIME = (2024, 5, 1, 0, 0, 0)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def v2_from_v3(card: dict[str, Any]) -> dict[str, Any]:
    """The V2 spec's shape of a V3 card: only V2 fields, numeric entry ids."""
    v2 = copy.deepcopy(card)
    v2["spec"] = "chara_card_v2"
    v2["spec_version"] = "2.0"
    data = v2["data"]
    for field in V3_ONLY_CARD_FIELDS:
        data.pop(field, None)
    for index, entry in enumerate(data["character_book"]["entries"]):
        entry.pop("use_regex", None)
        if not isinstance(entry.get("id"), int):
            entry["id"] = index
    return v2


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC-32 over type and data (PNG spec, section 5.3)."""
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def tiny_png(text_chunks: list[tuple[str, str]]) -> bytes:
    """An 8x8 RGB image (a river-blue square) with the given tEXt chunks before IEND."""
    width = height = 8
    row = b"\x00" + bytes((40, 90, 140)) * width
    idat = zlib.compress(row * height, 9)
    out = [
        b"\x89PNG\r\n\x1a\n",
        png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)),
        png_chunk(b"IDAT", idat),
    ]
    for keyword, text in text_chunks:
        payload = keyword.encode("latin-1") + b"\x00" + text.encode("latin-1")
        out.append(png_chunk(b"tEXt", payload))
    out.append(png_chunk(b"IEND", b""))
    return b"".join(out)


def b64_json(value: Any) -> str:
    return base64.b64encode(json.dumps(value, ensure_ascii=False).encode("utf-8")).decode("ascii")


def charx(card: dict[str, Any], icon: bytes) -> bytes:
    card = copy.deepcopy(card)
    card["data"]["assets"] = [
        {"type": "icon", "uri": "embeded://assets/icon/images/main.png", "name": "main", "ext": "png"}
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, payload in (
            ("card.json", _dump(card).encode("utf-8")),
            ("assets/icon/images/main.png", icon),
            ("x_narr_fixture_app.json", b'{"note": "application data beside the card"}\n'),
        ):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, payload)
    return buffer.getvalue()


def build() -> dict[str, bytes]:
    """Every derived fixture's name and bytes."""
    v3 = json.loads((HERE / "card-v3.json").read_text(encoding="utf-8"))
    v1 = json.loads((HERE / "card-v1.json").read_text(encoding="utf-8"))
    v2 = v2_from_v3(v3)
    backfill = copy.deepcopy(v2)
    backfill["data"]["creator_notes"] = BACKFILL_WARNING + "\n\n" + backfill["data"]["creator_notes"]
    plain = tiny_png([])
    return {
        "card-v2.json": _dump(v2).encode("utf-8"),
        "card-v2.png": tiny_png([("chara", b64_json(v2))]),
        "card-v3.png": tiny_png([("chara", b64_json(backfill)), ("ccv3", b64_json(v3))]),
        "card-v1.png": tiny_png([("chara", b64_json(v1))]),
        "card-v3.charx": charx(v3, plain),
    }


def main() -> int:
    for name, payload in build().items():
        (HERE / name).write_bytes(payload)
        print(f"wrote {name} ({len(payload)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
