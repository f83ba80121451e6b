"""The rules diffuser's time budget: a world's rules and cue words cannot hang an event, on the
main thread (the CLI) or any other (a server's writer), and a stopped event changes nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, snapshot

from narrative.errors import DiffuserError

SLOW_RULE = ('[[rules]]\nid = "slow"\n'
             'match = ["(a|a a) (a|a a) (a|a a) (a|a a) (a|a a) (a|a a) b"]\n'
             'do = [{ close_scene = true }]\n')
# Each {x} takes one to three words: 48 of them before a word that never comes try up to
# 3^48 ways (``re`` tries them all; ``regex`` prunes many, and still takes seconds a sentence).
SLOW_CUE = '[cues.negated]\nforward = ["a ' + "{x} " * 48 + 'b"]\n'


@pytest.fixture
def short_budget(monkeypatch: pytest.MonkeyPatch) -> float:
    from narrative.diffusers import rules

    monkeypatch.setattr(rules, "MATCH_BUDGET", 0.3)
    return 0.3


def _event_off_the_main_thread(root: Path, text: str) -> BaseException | None:
    """Run an event through the library on a thread of its own; what it raised."""
    from narrative.api import EventRequest, open_world, run_event
    from narrative.diffusers.base import get_diffuser

    raised: list[BaseException | None] = []

    def work() -> None:
        wr = open_world(root)
        try:
            run_event(wr, EventRequest(content=text, diffuser="rules"), diffuser=get_diffuser("rules", wr))
            raised.append(None)
        except BaseException as exc:
            raised.append(exc)
        finally:
            wr.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the event is still matching: the budget did not stop it"
    return raised[0]


@pytest.mark.usefixtures("short_budget")
def test_a_pattern_that_backtracks_exponentially_is_stopped_off_the_main_thread(flat_world: Path) -> None:
    (flat_world / "rules" / "slow.toml").write_text(SLOW_RULE, "utf-8")
    before = snapshot(flat_world)
    exc = _event_off_the_main_thread(flat_world, "a " * 200)
    assert isinstance(exc, DiffuserError)
    assert exc.message == "rule slow (rules/slow.toml) took more than 0.3s to match this event's text"
    assert snapshot(flat_world) == before


@pytest.mark.usefixtures("short_budget")
def test_a_crafted_cue_term_is_stopped(flat_world: Path) -> None:
    (flat_world / "rules" / "cues.toml").write_text(SLOW_CUE, "utf-8")
    before = snapshot(flat_world)
    exc = _event_off_the_main_thread(flat_world, "a " * 400)
    assert isinstance(exc, DiffuserError)
    assert exc.message == ("the cue words of rules/cues.toml took more than 0.3s to match this "
                           "event's text")
    assert exc.hint is not None and "[cues]" in exc.hint
    # The CLI, on the main thread, says the same.
    result = CLI(flat_world)("event", "a " * 400, expect=18)
    assert result.stderr.startswith("narr: error: the cue words of rules/cues.toml took more than 0.3s")
    assert snapshot(flat_world) == before


def test_within_the_budget_a_world_of_rules_and_cues_still_matches(flat_world: Path,
                                                                   short_budget: float) -> None:
    """The budget stops only what runs too long: the sample's rules, with a cue table of the
    world's own, still move Lin Yuan and still read the world's cue word."""
    (flat_world / "rules" / "cues.toml").write_text('[cues.negated]\nforward = ["nary"]\n', "utf-8")
    narr = CLI(flat_world)
    rec: Any = narr.json("event", "Lin Yuan walks to the ferry", "--dry-run")
    assert any(d["target"] == "lin-yuan" and d["new_value"] == "ferry" for d in rec["diffusions"])
    rec = narr.json("event", "Lin Yuan nary walks to the ferry", "--dry-run")
    assert not any(d["target"] == "lin-yuan" for d in rec["diffusions"])
    assert any("negated ('nary')" in n for n in rec["proposal"]["notes"])


def test_a_letter_whose_lower_case_is_two_letters_is_read(flat_world: Path) -> None:
    """"İ" is "i" and a combining dot in lower case: the cue words starting with "i" are
    tried there, and nothing fails."""
    rec = CLI(flat_world).json("event", "İf the gate falls, Lin Yuan walks to the ferry", "--dry-run")
    assert rec["proposal"]["notes"]
