"""narr's generic rules: ``en`` and ``zh`` are ``both`` split by language, and every rule set
loads and fires on every shipped world.

``python tests/test_generic_rules.py --write`` rewrites ``en/`` and ``zh/`` from ``both/``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

GENERIC = Path(__file__).resolve().parent.parent / "narrative" / "rules_generic"
_CJK = re.compile(r"[\u3400-\u9fff]|\}[@(]|[)a-z]\{")  # Chinese, or parts with no space between
_ITEM = re.compile(r'^\s*"(?:[^"\\]|\\.)*",?\s*(?:#.*)?$')


def split(text: str, lang: str) -> str:
    """A ``both`` rule file with only the patterns and unless words of one language.

    A rule left without patterns is dropped whole. Items of a multi-line array are
    sorted by script; single-line arrays and everything else are kept as they are.
    """
    out: list[str] = []
    in_array = False
    for line in text.replace("narr's generic rules (both)", f"narr's generic rules ({lang})").splitlines():
        if re.match(r"^\s*(match|unless) = \[\s*$", line):
            in_array = True
        elif in_array and line.strip() == "]":
            in_array = False
        elif in_array and _ITEM.match(line) and bool(_CJK.search(line)) != (lang == "zh"):
            continue
        out.append(line)
    body = "\n".join(out) + "\n"
    # a rule whose match list is now empty goes, with its table
    blocks = re.split(r"(?m)^(?=\[\[rules\]\])", body)
    kept = [b for b in blocks if not re.search(r"(?m)^match = \[\s*\n\]", b)]
    body = "".join(kept)
    return re.sub(r"(?m)^unless = \[\s*\n\]\n", "unless = []\n", body)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_language_sets_are_the_two_language_set_split(lang: str) -> None:
    for both in sorted((GENERIC / "both").glob("*.toml")):
        got = (GENERIC / lang / both.name).read_text(encoding="utf-8")
        assert got == split(both.read_text(encoding="utf-8"), lang), (
            f"{lang}/{both.name} differs: run python tests/test_generic_rules.py --write")


@pytest.mark.parametrize("lang", ["en", "zh", "both"])
def test_every_generic_rule_set_loads(lang: str, tmp_path: Path) -> None:
    from narrative.diffusers.rulefile import load_rules_and_classes

    (tmp_path / "rules").mkdir()
    for f in (GENERIC / lang).glob("*.toml"):
        (tmp_path / "rules" / f.name).write_bytes(f.read_bytes())
    rules, _, _ = load_rules_and_classes(tmp_path)
    assert len(rules) > 20


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    for both in sorted((GENERIC / "both").glob("*.toml")):
        for lang in ("en", "zh"):
            (GENERIC / lang / both.name).write_text(split(both.read_text(encoding="utf-8"), lang),
                                                    encoding="utf-8")
    print("en/ and zh/ rewritten from both/")
