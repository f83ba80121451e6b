"""The field helpers every command shares: one field parser, one conflict type."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from narrative import fields
from narrative.fields import (
    ABSENT,
    MERGE_SPELLING,
    REPLAY_SPELLING,
    REVERT_SPELLING,
    SET_ASIDE_SPELLING,
    FieldConflict,
)
from tests.helpers import CLI

SPELLINGS = [MERGE_SPELLING, REPLAY_SPELLING, REVERT_SPELLING, SET_ASIDE_SPELLING]


def test_one_conflict_spelt_as_each_command_always_has() -> None:
    c = FieldConflict("lin-yuan", "/state/mood", base="a", ours="b", theirs="c", event="e1",
                      content="E1", kind="diffusion")
    assert c.to_json(MERGE_SPELLING) == {"node": "lin-yuan", "field": "/state/mood", "base": "a",
                                         "ours": "b", "theirs": "c"}
    assert c.to_json(REPLAY_SPELLING) == {
        "event": "e1", "content": "E1", "kind": "diffusion", "target": "lin-yuan",
        "field": "/state/mood", "recorded_old": "a", "recorded_new": "c", "current": "b"}
    assert c.to_json(REVERT_SPELLING) == {"target": "lin-yuan", "field": "/state/mood",
                                          "event_wrote": "a", "current": "b"}
    assert c.to_json(SET_ASIDE_SPELLING) == {"target": "lin-yuan", "field": "/state/mood",
                                             "base": "a", "current": "b", "yours": "c"}
    assert list(c.to_json(REPLAY_SPELLING)) == [k for k, _ in REPLAY_SPELLING.keys]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_absent_values_are_left_out_and_come_back_absent(spelling: fields.Spelling) -> None:
    c = FieldConflict("n", "", base=ABSENT, ours=None, theirs={"id": "n"})
    data = c.to_json(spelling)
    assert all(key not in data for key, attr in spelling.keys if attr == "base")
    back = FieldConflict.from_json(spelling, data)
    assert back.base is ABSENT and back.node == "n" and back.field == ""
    assert "(whole node)" in back.line(spelling)


def test_the_lines_name_the_three_values() -> None:
    c = FieldConflict("black-ring", "/state/warmth", base="cold", ours="hot", theirs="warm")
    assert c.line(REPLAY_SPELLING) == 'black-ring /state/warmth: recorded "cold" → "warm", now "hot"'
    assert c.line(MERGE_SPELLING) == ('black-ring /state/warmth: base "cold", ours "hot", '
                                      'theirs "warm"')
    assert c.line(REVERT_SPELLING) == 'black-ring /state/warmth: the event wrote "cold", now "hot"'


@pytest.mark.parametrize(("typed", "pointer"), [
    ("state.mood", "/state/mood"), ("/state/mood", "/state/mood"), ("", ""),
    ("relations.holds.black-ring", "/relations/holds/black-ring"), ("state.a/b", "/state/a~1b"),
])
def test_one_field_parser(typed: str, pointer: str) -> None:
    assert fields.parse_field(typed) == pointer


@pytest.mark.parametrize("typed", ["state..mood", "/state/", "state.", ".state"])
def test_an_empty_field_name_is_refused(typed: str) -> None:
    from narrative.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="empty field name"):
        fields.parse_field(typed)


def test_every_command_takes_the_dotted_field(narr: CLI, world: Path) -> None:
    """``narr resolve su-qing state.mood`` resolves the conflict on ``/state/mood``, as get,
    why and --set take either spelling."""
    narr("branch", "alt")
    narr("event", "Here", "--set", "su-qing.state.mood=angry", "--set", "lin-yuan.state.mood=a")
    narr("switch", "alt")
    narr("event", "There", "--set", "su-qing/state/mood=calm", "--set", "lin-yuan.state.mood=b")
    narr("switch", "main")
    narr("merge", "alt", expect=14)
    left = narr.json("resolve", "su-qing", "state.mood", "--theirs")["unresolved"]
    assert left == 1
    assert narr.json("resolve", "lin-yuan", "/state/mood", "--ours")["unresolved"] == 0
    narr("resolve", "su-qing", "state..mood", "--ours", expect=12)
    narr("merge", "--continue")
    assert (narr.json("get", "su-qing", "state.mood")["value"]
            == narr.json("get", "su-qing", "/state/mood")["value"])
    assert narr.json("why", "su-qing", "state.mood")["value"] == "calm"
    assert narr.json("why", "su-qing", "/state/mood")["value"] == "calm"


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.text(max_size=5), st.sampled_from([0, 1, 0.0, -0.0, 1.0, True, False, ""]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@given(_VALUES, _VALUES)
def test_two_values_are_the_same_exactly_when_their_json_is(a: object, b: object) -> None:
    """True is not 1, nor -0.0 0.0, in a story's history: JSON keeps them apart."""
    assert fields.same(a, b) == (fields.canonical(a) == fields.canonical(b))
    assert fields.same(a, a)
    assert not fields.same(True, 1) and not fields.same(-0.0, 0.0) and not fields.same(0, 0.0)
