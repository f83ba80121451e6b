"""Names that only look alike: ``Lіn Yuan`` (a Cyrillic і) beside ``Lin Yuan``.

Two names are confusable when their *skeletons* are equal, as Unicode's Technical Standard #39
defines them: each character replaced by the prototype it is visually confused with (Cyrillic
``і`` -> ``i``, Greek ``ο`` -> ``o``, ``m`` -> ``rn``), after the text is decomposed; here also
after narr's own comparison of names (:func:`narrative.ids.normalize_name`: NFKC, case folded,
spaces collapsed) and with the characters that show nothing (zero-width spaces and joiners,
direction marks) left out, so a name cannot hide a difference in them either.

The table is Unicode's ``confusables.txt`` as ``confusable-homoglyphs`` ships it (a package kept
up with Unicode's releases), where each character lists the ones it is confused with, both ways.
A source character lists exactly one, its prototype, and a prototype lists its sources (or is a
sequence, as ``rn``), so the direction of each pair can be read back; where a prototype has a
single source the two list each other, and the one with the lower code point stands for both.
Only equality of skeletons is used, which that choice does not change.
"""

from __future__ import annotations

import threading
import unicodedata
from functools import lru_cache

from narrative.ids import normalize_name

_lock = threading.Lock()
_table: dict[int, str] | None = None


def _prototypes() -> dict[int, str]:
    """Code point -> the text it stands for in a skeleton (only those that change), as
    :meth:`str.translate` takes it."""
    global _table
    with _lock:
        if _table is None:
            from confusable_homoglyphs.confusables import confusables_data

            data: dict[str, list[dict[str, str]]] = confusables_data
            table: dict[int, str] = {}
            for char, glyphs in data.items():
                if len(char) != 1 or len(glyphs) != 1:
                    continue  # a sequence, or a prototype listing its sources
                other = glyphs[0]["c"]
                if other == char:
                    continue
                back = data.get(other, [])
                if len(other) == 1 and len(back) == 1 and back[0]["c"] == char and other > char:
                    continue  # two that name only each other: the lower one stands for both
                table[ord(char)] = other
            _table = table
        return _table


@lru_cache(maxsize=65_536)  # a served world's names, computed once
def skeleton(name: str) -> str:
    """``name`` as it looks: its UTS #39 skeleton, compared as narr compares names."""
    text = normalize_name(name)
    if not text.isascii():  # decomposed, and without what shows nothing (ASCII has neither)
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Cf")
    mapped = text.translate(_prototypes())
    if not mapped.isascii():
        mapped = unicodedata.normalize("NFD", mapped)
    return " ".join(mapped.split())


def differences(name: str, other: str) -> list[str]:
    """The characters of ``name`` that ``other`` does not have, named (``U+0456 CYRILLIC SMALL
    LETTER BYELORUSSIAN-UKRAINIAN I``): what makes the two differ though they look alike."""
    theirs = set(other)
    out = []
    for c in dict.fromkeys(name):
        if c not in theirs and not c.isspace():
            out.append(f"U+{ord(c):04X} {unicodedata.name(c, 'a character with no name')}")
    return out
