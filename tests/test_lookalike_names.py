"""A new node whose name only looks like a name the world has (Unicode's confusables: a Cyrillic
і in "Lіn Yuan", a Greek Ο in "Οld Mill", a zero-width space) is refused as a near duplicate is,
naming the characters that differ; ``--force`` makes it anyway, with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CLI, snapshot

from narrative.engine.lookalike import skeleton

INVALID = 12


@pytest.mark.parametrize(("name", "differs"), [
    ("L\u0456n Yuan", "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"),
    ("Lin Yu\u0430n", "U+0430 CYRILLIC SMALL LETTER A"),
    ("L\u0456n Y\u057dan",
     "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, U+057D ARMENIAN SMALL LETTER SEH"),
    ("Lin\u200b Yuan", "U+200B ZERO WIDTH SPACE"),
])
def test_a_homoglyph_twin_is_refused_unless_forced(narr: CLI, world: Path, name: str, differs: str) -> None:
    before = snapshot(world)
    result = narr("new", "character", name, expect=INVALID)
    assert result.stderr.splitlines()[0] == (
        f"narr: error: {name!r} looks like 'Lin Yuan', the name of lin-yuan: they differ only in "
        f"characters that look alike ({differs})")
    assert "to make a second node anyway, add --force" in result.stderr
    assert snapshot(world) == before
    made = narr.json("new", "character", name, "--force")
    assert any("looks like 'Lin Yuan'" in w and "made anyway (--force)" in w for w in made["warnings"])
    assert narr.json("get", made["id"])["node"]["name"] == name


def test_an_alias_that_looks_like_another_nodes_name_is_refused(narr: CLI) -> None:
    result = narr("new", "character", "Old Zhou's nephew", "--alias", "Su Q\u0456ng", expect=INVALID)
    assert "'Su Q\u0456ng' looks like 'Su Qing', the name of su-qing" in result.stderr


def test_a_name_that_looks_like_another_nodes_alias_is_refused(narr: CLI) -> None:
    narr("new", "item", "Jade Seal", "--alias", "The Old Seal")
    result = narr("new", "item", "The \u039fld Seal", expect=INVALID)  # a Greek capital omicron
    assert "looks like 'The Old Seal', the name of jade-seal" in result.stderr


def test_a_latin_name_beside_a_cyrillic_twin_is_refused_too(narr: CLI) -> None:
    narr("new", "character", "\u0410nna", "--kind", "person")  # a Cyrillic А
    result = narr("new", "character", "Anna", expect=INVALID)
    assert "'Anna' looks like '\u0410nna'" in result.stderr
    assert "U+0041 LATIN CAPITAL LETTER A" in result.stderr


def test_names_that_differ_are_made(narr: CLI) -> None:
    for name in ("Lin Yue", "Lin Yuan the Younger", "Lin Yu-an"):
        assert narr.json("new", "character", name)["warnings"] == []


def test_the_skeleton_is_unicodes() -> None:
    assert skeleton("Lin Yuan") == skeleton("L\u0456n Yuan") == skeleton("LIN  YUAN")
    assert skeleton("modern") == skeleton("rnodern")  # UTS 39: m looks like rn
    assert skeleton("Lin Yuan") != skeleton("Lin Yue")
    assert skeleton("Caf\u00e9") == skeleton("Cafe\u0301")
