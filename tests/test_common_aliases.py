"""A character whose alias is a common word ("Crane", "Bell") is named only where it is used as a name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative.delta.request import EventRequest
from narrative.delta.world import DictWorld
from narrative.diffusers.context import find_mentions
from narrative.diffusers.rules import RulesDiffuser
from narrative.model import SetOp

SAMPLE = Path(__file__).resolve().parent.parent / "sample-world"


def character(node_id: str, name: str, aliases: list[str], **traits: Any) -> dict[str, Any]:
    return {"id": node_id, "layer": "character", "kind": "person", "name": name, "aliases": aliases,
            "traits": traits, "state": {"location": "qingyun-gate"}, "relations": {}}


@pytest.fixture(scope="module")
def world() -> DictWorld:
    nodes = [json.loads(p.read_text(encoding="utf-8")) for p in (SAMPLE / "world").rglob("*.json")]
    nodes += [character("crane", "Master Crane", ["Crane"]),
              character("bell", "Sister Bell", ["Bell", "the bell-ringer"], name_words=["Bell"]),
              character("yuan-lu", "Yuan Lu", ["Lu"])]
    return DictWorld(nodes)


def moves(world: DictWorld, text: str) -> dict[str, Any]:
    proposal = RulesDiffuser(SAMPLE).propose(world, EventRequest(content=text, diffuser="rules"))
    return {op.target: op.value for op in proposal.delta.ops
            if isinstance(op, SetOp) and op.field == "/state/location"}


@pytest.mark.parametrize(("text", "expected"), [
    # the common word, not the character
    ("A crane walks to the ferry.", {}),
    ("At dusk a crane flies to the ferry.", {}),
    ("The bell rings as Su Qing walks to the ferry.", {"su-qing": "ferry"}),
    ("Cranes fly to the ferry.", {}),
    # sentence start: capitalised anyway, so only a declared name word counts
    ("Crane walks to the ferry.", {}),
    ("Bell walks to the ferry.", {"bell": "ferry"}),
    # capitalised inside a sentence: a name
    ("At dusk, Crane walks to the ferry.", {"crane": "ferry"}),
    ("Lin Yuan watches a crane while Crane goes to the library.", {"crane": "library-pavilion"}),
    ("Soaked, Bell hurries to the library.", {"bell": "library-pavilion"}),
    # declared, but lowercase is still the common word
    ("In the rain the bell walks to the library.", {}),
    # names of several words, and aliases written with an article, fire as written
    ("master crane walks to the ferry.", {"crane": "ferry"}),
    ("the bell-ringer walks to the ferry.", {"bell": "ferry"}),
    ("The ferryman walks to the library.", {"old-zhou": "library-pavilion"}),
    ("Then the elder goes to the ferry.", {"elder-mo": "ferry"}),
    # one-word aliases that are no English word are names wherever they stand
    ("Qing walks to the ferry.", {"su-qing": "ferry"}),
    ("Lu walks to the ferry.", {"yuan-lu": "ferry"}),
])
def test_common_word_aliases(world: DictWorld, text: str, expected: dict[str, str]) -> None:
    assert moves(world, text) == expected


def test_mentions_keep_other_layers_and_chinese(world: DictWorld) -> None:
    found = {m.text: m.ids for m in find_mentions(world, "the bell rings over the lantern; 钟声响起")}
    assert found["the bell"] == ("temple-bell",)
    assert found["the lantern"] == ("paper-lantern",)
    assert found["钟声"] == ("temple-bell",)
