"""Every rule narr ships says what must be true for its words to make sense, or why nothing must.

``narr audit`` checks a rule's ``require`` lines before its actions; a rule without
any is only as good as its reason, so each shipped rule that changes the world has
preconditions or a ``# no require:`` comment in its block saying why none applies.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from helpers import CLI

from narrative.diffusers.rulefile import parse_rule_file

GENERIC = Path(__file__).resolve().parent.parent / "narrative" / "rules_generic"
SETS = ("en", "zh", "both")
NO_REQUIRE = re.compile(r"^#\s*no require:\s*\S", re.MULTILINE)


def rule_blocks(text: str) -> dict[str, str]:
    """Rule id -> the text of its ``[[rules]]`` block, comments included."""
    out = {}
    for block in text.split("[[rules]]")[1:]:
        found = re.search(r'^id = "([^"]+)"', block, re.MULTILINE)
        assert found, block
        out[found.group(1)] = block
    return out


def unexplained(text: str, source: str) -> list[str]:
    """The rules of a file that change the world with no precondition and no reason why none."""
    parsed = parse_rule_file(text.encode(), source)
    blocks = rule_blocks(text)
    return [r.id for r in parsed.rules if r.do and not r.require and not NO_REQUIRE.search(blocks[r.id])]


@pytest.mark.parametrize("which", SETS)
def test_every_shipped_rule_has_a_precondition_or_says_why_not(which: str) -> None:
    files = sorted((GENERIC / which).glob("*.toml"))
    assert len(files) == 6
    for path in files:
        assert unexplained(path.read_text("utf-8"), f"rules/{path.name}") == [], path


def test_the_check_fails_when_a_precondition_goes_missing() -> None:
    text = (GENERIC / "en" / "items.toml").read_text("utf-8")
    assert unexplained(text, "rules/items.toml") == []
    without = re.sub(r'^require = \["who.state.health != dead"\]\n', "", text, count=1,
                     flags=re.MULTILINE)
    assert without != text
    assert unexplained(without, "rules/items.toml") == ["take"]
    scene = (GENERIC / "en" / "scene.toml").read_text("utf-8")
    assert unexplained(scene.replace("# no require: time passing", "# time passing"),
                       "rules/scene.toml") == ["time-passes"]


def _requires(which: str) -> dict[str, list[str]]:
    out = {}
    for path in sorted((GENERIC / which).glob("*.toml")):
        for rule in tomllib.loads(path.read_text("utf-8"))["rules"]:
            out[rule["id"]] = rule.get("require", [])
    return out


def test_the_three_sets_require_the_same() -> None:
    en = _requires("en")
    assert _requires("zh") == en and _requires("both") == en
    alive = {r for r, reqs in en.items() if any(q.endswith(".state.health != dead") for q in reqs)}
    assert {"go", "give", "take", "tell", "enemies", "heal", "wound", "die"} <= alive
    assert "giver.relations.holds.{item}" in en["give"]
    assert "teller.relations.knows.{secret}" in en["tell"]
    assert "who.state.health != dead" in en["die"]  # the dead are not killed again


@pytest.mark.parametrize(("rules", "setup", "chapter", "rule", "node"), [
    ("en", ["Tom Reed dies."], "Tom Reed walks to the saloon.", "go", "tom-reed"),
    ("en", ["Tom Reed dies."], "Ada Lane kills Tom Reed.", "die", "tom-reed"),
    ("en", ["Ada Lane walks to the saloon."], "Ada Lane gives Tom Reed the revolver.", "give",
     "ada-lane"),
    ("zh", ["张三死了。"], "张三来到酒馆。", "go", "zhang-san"),
    ("zh", ["李四来到酒馆。"], "李四把手枪交给张三。", "give", "li-si"),
])
def test_a_world_from_init_rules_checks_its_preconditions(tmp_path: Path, rules: str, setup: list[str],
                                                          chapter: str, rule: str, node: str) -> None:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", rules)
    narr = CLI(root)
    if rules == "en":
        narr("new", "character", "Tom Reed")
        narr("new", "character", "Ada Lane")
        narr("new", "item", "revolver")
        narr("new", "background", "saloon", "--kind", "place")
    else:
        narr("new", "character", "张三")
        narr("new", "character", "李四")
        narr("new", "item", "手枪")
        narr("new", "background", "酒馆", "--kind", "place")
    for text in setup:
        narr("event", text)
    out = narr.json("audit", "-", input=chapter, expect=20)
    assert (out["findings"][0]["rule"], out["findings"][0]["node"]) == (rule, node)
