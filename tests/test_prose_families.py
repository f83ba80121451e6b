"""The rule families on sentences of this file's own, outside every labelled set: the same act in
English and in Chinese gives the same changes (wound, heal, death, destruction, giving and taking,
distrust), and the structures around a rule's words decide whether it happened (participles,
"the wounded X", frames, the future, orders, idioms, dialogue tags, dropped objects, names inside
names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI

Change = tuple[str, str, str]


@pytest.fixture(scope="module")
def inn(tmp_path_factory: pytest.TempPathFactory, isolated_git: Path) -> Path:
    """Three people at an inn, with the generic rules of both languages: Ada holds the lamp, Bo
    the knife; a map lies on a shelf; Cy is wounded."""
    base = tmp_path_factory.mktemp("families")
    CLI(base)("init", "inn", "--rules", "both")
    narr = CLI(base / "inn")
    for args in (["character", "Ada Wren", "--alias", "艾达", "--pronouns", "she"],
                 ["character", "Bo Hale", "--alias", "阿博", "--pronouns", "he"],
                 ["character", "Cy Marsh", "--alias", "阿赛", "--pronouns", "he"],
                 ["background", "The Red Inn", "--kind", "place", "--alias", "红店"],
                 ["background", "The Ford", "--kind", "place", "--alias", "渡口"],
                 ["item", "Copper Lamp", "--kind", "lamp", "--alias", "the lamp", "--alias", "铜灯"],
                 ["item", "Silver Knife", "--kind", "knife", "--alias", "the knife", "--alias", "银刀"],
                 ["item", "Old Map", "--kind", "map", "--alias", "the map", "--alias", "旧地图"]):
        narr("new", *args)
    narr("event", "Evening at the inn", "--diffuser", "explicit",
         "--set", "ada-wren.state.location=the-red-inn", "--set", "bo-hale.state.location=the-red-inn",
         "--set", "cy-marsh.state.location=the-ford", "--set", "ada-wren.state.health=unhurt",
         "--set", "bo-hale.state.health=unhurt", "--set", "cy-marsh.state.health=wounded",
         "--relate", "ada-wren:holds:copper-lamp", "--set", "copper-lamp.state.holder=ada-wren",
         "--relate", "bo-hale:holds:silver-knife", "--set", "silver-knife.state.holder=bo-hale",
         "--set", "old-map.state.location=the-red-inn", "--relate", "ada-wren:trusts:bo-hale")
    return base / "inn"


def changes(world: Path, text: str) -> set[Change]:
    rec = CLI(world).json("event", "--dry-run", text)
    return {(d["target"], d["field"], json.dumps(d.get("new_value"), ensure_ascii=False))
            for d in rec["diffusions"]}


def held(world: Path, text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = CLI(world).json("event", "--dry-run", text)["proposal"]["held"]
    return out


# Cy is wounded already: a blow more makes only the enmity
STABBED_BY_BO = {("cy-marsh", "/relations/enemy-of/bo-hale", "{}"),
                 ("bo-hale", "/relations/enemy-of/cy-marsh", "{}")}

FAMILIES = [
    # wound: told by what it did to the body, by someone named or by nobody
    ("wound", "Bo Hale slashed Ada Wren's arm.", "阿博划伤了艾达的胳膊。",
     {("ada-wren", "/state/health", '"wounded"'), ("ada-wren", "/relations/enemy-of/bo-hale", "{}"),
      ("bo-hale", "/relations/enemy-of/ada-wren", "{}"), ("ada-wren", "/relations/trusts/bo-hale", "null")}),
    ("wound", "Ada Wren slipped on the stairs and broke her wrist.", "艾达在楼梯上滑了一跤，摔断了手腕。",
     {("ada-wren", "/state/health", '"wounded"')}),
    # heal: told by the healer, or by the wound
    ("heal", "Ada Wren healed Cy Marsh.", "艾达治好了阿赛。", {("cy-marsh", "/state/health", '"unhurt"')}),
    ("heal", "Cy Marsh's leg mended.", "阿赛腿上的伤长好了。", {("cy-marsh", "/state/health", '"unhurt"')}),
    # death: a euphemism is a death; a death after a wound is the death
    ("death", "Cy Marsh breathed his last.", "阿赛咽了气。", {("cy-marsh", "/state/health", '"dead"')}),
    ("death", "Bo Hale strangled Cy Marsh.", "阿博勒死了阿赛。",
     {("cy-marsh", "/state/health", '"dead"'), ("cy-marsh", "/relations/enemy-of/bo-hale", "{}"),
      ("bo-hale", "/relations/enemy-of/cy-marsh", "{}")}),
    # destruction: the item ends, and its holder's edge with it
    ("destroy", "Bo Hale dashed the lamp against the wall.", "阿博把铜灯摔得粉碎。",
     {("copper-lamp", "", "null"), ("ada-wren", "/relations/holds/copper-lamp", "null")}),
    # giving into someone's hand, taking from it
    ("give", "Ada Wren pressed the lamp into Bo Hale's hand.", "艾达把铜灯塞到了阿博手里。",
     {("ada-wren", "/relations/holds/copper-lamp", "null"), ("bo-hale", "/relations/holds/copper-lamp", "{}"),
      ("copper-lamp", "/state/holder", '"bo-hale"')}),
    ("take", "Bo Hale snatched the lamp from Ada Wren.", "阿博从艾达手里抢过了铜灯。",
     {("ada-wren", "/relations/holds/copper-lamp", "null"), ("bo-hale", "/relations/holds/copper-lamp", "{}"),
      ("copper-lamp", "/state/holder", '"bo-hale"')}),
    # carrying someone somewhere in person: the one who carries goes too
    ("carry", "Ada Wren carried Bo Hale to the Ford.", "艾达把阿博背到了渡口。",
     {("ada-wren", "/state/location", '"the-ford"'), ("bo-hale", "/state/location", '"the-ford"')}),
    # distrust is distrusts in both languages
    ("distrust", "Ada Wren distrusted Bo Hale.", "艾达不信任阿博。",
     {("ada-wren", "/relations/distrusts/bo-hale", "{}"), ("ada-wren", "/relations/trusts/bo-hale", "null")}),
]


@pytest.mark.parametrize("family, en, zh, expected", FAMILIES, ids=[f"{f[0]}:{f[1]}" for f in FAMILIES])
def test_the_same_act_gives_the_same_changes_in_both_languages(inn: Path, family: str, en: str, zh: str,
                                                               expected: set[Change]) -> None:
    assert changes(inn, en) == expected
    assert changes(inn, zh) == expected


def test_every_family_has_a_parity_case() -> None:
    assert {"wound", "heal", "death", "destroy", "give", "take", "carry"} <= {f[0] for f in FAMILIES}


STRUCTURES = [
    # a participle of perception: what is seen happened; the onlooker did nothing
    ("Watching Bo Hale stab Cy Marsh, Ada Wren said nothing.", STABBED_BY_BO),
    # a participle's subject is the next clause's subject
    ("Having given the lamp to Bo Hale, Ada Wren went to the Ford.",
     {("ada-wren", "/relations/holds/copper-lamp", "null"), ("bo-hale", "/relations/holds/copper-lamp", "{}"),
      ("copper-lamp", "/state/holder", '"bo-hale"'), ("ada-wren", "/state/location", '"the-ford"')}),
    # "the wounded X" is a state (Ada, who carries him, is at the inn already)
    ("Ada Wren dragged the wounded Cy Marsh into the Red Inn.",
     {("cy-marsh", "/state/location", '"the-red-inn"')}),
    ("艾达把受伤的阿赛背进了红店。", {("cy-marsh", "/state/location", '"the-red-inn"')}),
    # one who sends or helps along: who goes is told by the verb
    ("Ada Wren sent Bo Hale to the Ford.", {("bo-hale", "/state/location", '"the-ford"')}),
    ("艾达扶着阿博去了渡口。",
     {("ada-wren", "/state/location", '"the-ford"'), ("bo-hale", "/state/location", '"the-ford"')}),
    ("艾达没有把阿博背到渡口。", set()),
    # a dream covers what continues it, until one wakes
    ("艾达梦见阿博把铜灯摔得粉碎，又把银刀扔进了河里。", set()),
    ("艾达做了个噩梦，醒来后去了渡口。", {("ada-wren", "/state/location", '"the-ford"')}),
    ("艾达盘算着：先把铜灯交给阿博，然后去渡口。", set()),
    # the future
    ("等天亮了，阿博就去渡口。", set()),
    ("Once the rain stops, Bo Hale will go to the Ford.", set()),
    # an order moves nobody
    ("艾达命阿博去渡口。", set()),
    # an idiom of manner holds no negation
    ("阿博头也不回地走进了渡口。", {("bo-hale", "/state/location", '"the-ford"')}),
    ("阿博不慌不忙地把银刀交给了艾达。",
     {("bo-hale", "/relations/holds/silver-knife", "null"),
      ("ada-wren", "/relations/holds/silver-knife", "{}"), ("silver-knife", "/state/holder", '"ada-wren"')}),
    # an action after a dialogue tag is told
    ('"Take it," said Ada Wren, and she gave Bo Hale the lamp.',
     {("ada-wren", "/relations/holds/copper-lamp", "null"), ("bo-hale", "/relations/holds/copper-lamp", "{}"),
      ("copper-lamp", "/state/holder", '"bo-hale"')}),
    ("“拿着，”艾达说着，把铜灯塞到了阿博手里。",
     {("ada-wren", "/relations/holds/copper-lamp", "null"), ("bo-hale", "/relations/holds/copper-lamp", "{}"),
      ("copper-lamp", "/state/holder", '"bo-hale"')}),
    # a dropped object: what the clause before took is what this one gives
    ("艾达从架子上取下旧地图，转身交给了阿博。",
     {("bo-hale", "/relations/holds/old-map", "{}"), ("old-map", "/state/holder", '"bo-hale"'),
      ("old-map", "/state/location", "null")}),
    # a death told in the clause after the wound
    ("阿赛挨了阿博一刀，没撑到天亮就断了气。",
     {("cy-marsh", "/state/health", '"dead"'), ("cy-marsh", "/relations/enemy-of/bo-hale", "{}"),
      ("bo-hale", "/relations/enemy-of/cy-marsh", "{}")}),
    # a name at the start of someone else's longer name is not that person
    ("阿博文抱着一箱酒去了渡口。", set()),
]


@pytest.mark.parametrize("text, expected", STRUCTURES, ids=[s[0][:30] for s in STRUCTURES])
def test_structure_decides_what_happened(inn: Path, text: str, expected: set[Change]) -> None:
    assert changes(inn, text) == expected


@pytest.mark.parametrize("text", ["Cy Marsh gave the lamp to Bo Hale.", "阿赛把铜灯交给了阿博。"])
def test_a_give_by_one_who_does_not_hold_it_is_held_back(inn: Path, text: str) -> None:
    assert changes(inn, text) == set()
    [one] = held(inn, text)
    assert "cy-marsh /relations/holds/copper-lamp is absent" in one["reason"]
    assert one["reason"].endswith("; copper-lamp is ada-wren's")  # who holds it, in the message
