"""Clause analysis before rules match: what a clause asserts, who "he" and a dropped subject are,
and which names are set aside. The rules diffuser is driven over a world of dicts (no git)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative.delta.request import EventRequest
from narrative.delta.world import DictWorld
from narrative.diffusers import clauses
from narrative.diffusers.rules import RulesDiffuser

SAMPLE = Path(__file__).resolve().parent.parent / "sample-world"


def sample_nodes() -> list[dict[str, Any]]:
    return [json.loads(p.read_text("utf-8")) for p in sorted((SAMPLE / "world").rglob("*.json"))]


def propose(text: str, root: Path = SAMPLE, **kwargs: Any) -> tuple[list[dict[str, Any]], list[str]]:
    world = DictWorld(sample_nodes(), root=root, **kwargs)
    proposal = RulesDiffuser(root).propose(world, EventRequest(content=text))
    return [op.model_dump(mode="json") for op in proposal.delta.ops], proposal.notes


def kinds(text: str) -> list[tuple[str, str]]:
    return [(c.kind, c.term) for c in clauses.lexicon().analyse(text).cues]


# --- the analysis, without rules -------------------------------------------------------------

def test_a_cue_has_a_direction_and_a_scope() -> None:
    text = "Lin Yuan did not hesitate and walked to the gate"
    got = clauses.lexicon().analyse(text)
    neg = next(c for c in got.cues if c.kind == "negated")
    assert text[neg.scope_start:neg.scope_end] == " hesitate "  # ends at "and"
    walked = text.index("walked")
    assert got.blocking([(walked, walked + 6)]) is None


@pytest.mark.parametrize("text, kind", [
    ("Will Lin Yuan hand over the token?", "question"),
    ("林远去渡口了吗？", "question"),
    ("Su Qing was killed, Old Zhou claims.", "reported"),
    ("If the gate falls, Lin Yuan runs to the library", "hypothetical"),
    ("Lin Yuan runs to the library if the gate falls", "hypothetical"),
    ("Elder Mo tells Lin Yuan to go to the gate", "ordered"),
    ("苏晴打算去藏经阁", "intended"),
    ("林远梦见苏晴来到渡口", "imagined"),
    ("林远差点丢了黑戒", "almost"),
])
def test_the_cue_governing_the_verb_is_found(text: str, kind: str) -> None:
    verbs = ("runs", "go", "去", "来到", "丢", "hand", "killed")
    got = clauses.lexicon().analyse(text)
    verb = next(v for v in verbs if v in text)
    at = text.index(verb)
    cue = got.blocking([(at, at + len(verb))])
    assert cue is not None and cue.kind == kind, got.cues


def test_pseudo_terms_are_not_cues() -> None:
    assert kinds("林远不得不去藏经阁") == []
    assert kinds("林远毫不犹豫地走进了藏经阁") == []
    assert kinds("Lin Yuan walks to the gate as if he owned it")[0] == ("hypothetical", "as if")
    # "even if" makes only its own clause a condition: the walk still happens
    text = "Lin Yuan walks to the ferry even if it rains"
    assert kinds(text) == [("hypothetical", "even if")]
    assert clauses.lexicon().analyse(text).blocking([(9, 14)]) is None


def test_a_long_text_is_analysed_in_linear_time() -> None:
    text = "If the gate falls, Lin Yuan runs to the library. " * 2000
    got = clauses.lexicon().analyse(text)
    assert len(got.cues) == 2000 and len(got.sentences) == 2000


# --- through the rules diffuser --------------------------------------------------------------

def test_a_clause_that_asserts_nothing_changes_nothing_and_says_why() -> None:
    ops, notes = propose("Old Zhou claims Su Qing was killed")
    assert ops == []
    assert notes == [
        "rule die (rules/health.toml) not applied to 'Su Qing was killed': reported by Old Zhou ('claims')",
        "no rule applied to 'Old Zhou claims Su Qing was killed'"]
    ops, notes = propose("Will Lin Yuan walk to the ferry?")
    assert ops == [] and notes[0].endswith("question ('Will')")


def test_a_cue_that_does_not_govern_the_rule_does_not_block_it() -> None:
    ops, _ = propose("Lin Yuan did not hesitate and walked to the library. Su Qing wanted to stay, "
                     "but walked to the ferry.")
    assert [(o["target"], o["value"]) for o in ops] == [("lin-yuan", "library-pavilion"),
                                                         ("su-qing", "ferry")]


def test_a_rule_that_changes_nothing_says_already_so() -> None:
    _, notes = propose("Old Zhou waits at the ferry")
    assert notes == ["rule go (rules/movement.toml): 'Old Zhou waits at the ferry' "
                     "(who=old-zhou, place=ferry); already so"]


def test_a_world_adds_its_own_cues(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    for f in (SAMPLE / "rules").glob("*.toml"):
        (tmp_path / "rules" / f.name).write_text(f.read_text("utf-8"), encoding="utf-8")
    text = "Old Zhou snorts that Lin Yuan walked to the ferry"
    # a "that"-clause under a verb narr does not know: held back, not written
    world = DictWorld(sample_nodes(), root=tmp_path)
    proposal = RulesDiffuser(tmp_path).propose(world, EventRequest(content=text))
    assert proposal.delta.ops == []
    assert [(h.n, h.rule, h.words) for h in proposal.held] == [
        (1, "go", "Lin Yuan walked to the ferry")]
    assert "under 'snorts'" in proposal.held[0].reason
    (tmp_path / "rules" / "cues.toml").write_text('[cues.reported]\nforward = ["snorts that"]\n',
                                                   encoding="utf-8")
    ops, notes = propose(text, tmp_path)
    assert ops == [] and "reported by Old Zhou ('snorts that')" in notes[0]


def test_a_pronoun_binds_the_one_character_it_can_be() -> None:
    ops, _ = propose("Su Qing reaches the ferry. She lights the lantern.")
    assert {"op": "set", "target": "paper-lantern", "field": "/state/lit", "value": True} in ops
    ops, _ = propose("Lin Yuan meets Old Zhou. He walks to the library.")
    assert ops == []  # two men: nobody is guessed


def test_a_pronoun_of_an_event_naming_nobody_looks_at_the_last_events() -> None:
    ops, _ = propose("He walks to the library.", recent=[{"content": "Old Zhou sighs."}])
    assert ops == [{"op": "set", "target": "old-zhou", "field": "/state/location",
                    "value": "library-pavilion"}]
    ops, _ = propose("He walks to the library.", recent=[{"content": "Old Zhou and Lin Yuan sigh."}])
    assert ops == []


def test_a_dropped_subject_is_the_sentence_subject_only_right_before_its_verb() -> None:
    ops, _ = propose("林远来到渡口，随即拿起了灯笼。")
    assert {"op": "set", "target": "paper-lantern", "field": "/state/holder", "value": "lin-yuan"} in ops
    assert propose("有人拿走了黑戒。")[0] == []
    ops, _ = propose("Su Qing watches Lin Yuan for a while and walks to the library.")
    assert ops == [{"op": "set", "target": "su-qing", "field": "/state/location",
                    "value": "library-pavilion"}]


@pytest.mark.parametrize("text, who", [
    ("Lin Yuan, not Su Qing, walks to the ferry", "lin-yuan"),
    ("不是苏晴，而是林远来到了渡口", "lin-yuan"),
    ("是老周而不是林远回到了藏经阁", "old-zhou"),
    ("Lin Yuan's sister goes to the ferry", None),
    ("林远的妹妹来到渡口", None),
    ("Old Zhou, who never trusted Su Qing, walks to the gate", "old-zhou"),
])
def test_contrast_possessives_and_relative_clauses_bind_the_right_subject(text: str,
                                                                          who: str | None) -> None:
    ops, _ = propose(text)
    assert [o["target"] for o in ops] == ([who] if who else [])
