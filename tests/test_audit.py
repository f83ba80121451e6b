"""``narr audit``: a chapter draft checked against the world, sentence by sentence, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, edit_node, read_node, snapshot

from narrative.diffusers.rulefile import Requirement, parse_rule_file
from narrative.errors import ContinuityError, InvalidWorldError

ENGLISH = (
    "Lin Yuan walks to the ferry. Su Qing gives Lin Yuan the black ring.\n"
    "Elder Mo dies in the library. Later, Elder Mo tells Su Qing the ring's secret.\n"
    "Old Zhou leaves the library. Su Qing takes the black ring, and she hands it to Old Zhou.\n"
)
CHINESE = "莫长老死了。莫长老把黑戒的来历告诉苏晴。林远把玉令牌交给老周。林远离开渡口。\n"
CLEAN = (
    "Old Zhou walks to the Qingyun Gate.\n"
    "Su Qing takes the black ring from Lin Yuan. Su Qing gives the black ring to Old Zhou.\n"
    "Lin Yuan walks to the ferry, then leaves the ferry for the gate.\n"
    "Elder Mo tells Su Qing the ring's secret. Su Qing reveals the ring's secret.\n"
    "If Elder Mo dies, Lin Yuan burns the letter. Old Zhou never gives Su Qing the lantern.\n"
    "苏晴离开青云山门，来到藏经阁。\n"
)


def findings(out: dict[str, Any]) -> list[tuple[int, str, str, str, Any]]:
    return [(f["number"], f["rule"] or f["check"], f["node"], f["field"],
             f["value"] if f["present"] else "ABSENT") for f in out["findings"]]


@pytest.fixture
def cli(flat_world: Path) -> CLI:
    return CLI(flat_world)


def test_planted_contradictions_in_english(cli: CLI, flat_world: Path, tmp_path: Path) -> None:
    chapter = tmp_path / "chapter-3.md"
    chapter.write_text(ENGLISH, encoding="utf-8")
    before = snapshot(flat_world)
    result = cli("audit", str(chapter), "--json", expect=ContinuityError.exit_code)
    out = json.loads(result.stdout)
    assert out["sentences"] == 6 and out["ok"] is False and out["at"] is None
    assert findings(out) == [
        (2, "give", "su-qing", "/relations/holds/black-ring", "ABSENT"),
        (2, "give", "lin-yuan", "/relations/holds/black-ring", {"worn": "left middle finger"}),
        (4, "tell", "elder-mo", "/state/health", "dead"),
        (5, "leave", "old-zhou", "/state/location", "ferry"),
        (6, "apart", "lin-yuan", "/state/location", "ferry"),  # she takes it from him at the gate
    ]
    first = out["findings"][0]
    assert first["sentence"] == "Su Qing gives Lin Yuan the black ring."
    assert first["words"] == "Su Qing gives Lin Yuan the black ring"
    assert first["requirement"] == "giver.relations.holds.{item}"
    assert first["source"] == "rules/items.toml"
    assert out["findings"][2]["message"] == 'elder-mo /state/health is "dead", but must not be "dead"'
    assert first["fact"] == "Black Ring is held by Lin Yuan, since the world began"
    assert first["holder"] == {"id": "lin-yuan", "name": "Lin Yuan"}
    assert first["since_event"] == {"kind": "genesis"}
    assert out["findings"][2]["fact"] == ("Elder Mo is dead, since sentence 3 of this chapter "
                                          "('Elder Mo dies in the library.')")
    apart = out["findings"][4]
    assert apart["locations"]["lin-yuan"]["place"] == "ferry"
    assert apart["locations"]["su-qing"] == {"place": "qingyun-gate", "name": "Qingyun Gate",
                                             "since_event": {"kind": "genesis"}}
    assert json.loads(result.stderr)["type"] == "ContinuityError"
    assert snapshot(flat_world) == before  # a dry run: nothing written


def test_planted_contradictions_in_chinese(cli: CLI) -> None:
    out = cli.json("audit", "-", input=CHINESE, expect=ContinuityError.exit_code)
    assert findings(out) == [
        (2, "tell", "elder-mo", "/state/health", "dead"),
        (3, "give", "lin-yuan", "/relations/holds/jade-token", "ABSENT"),
        (4, "leave", "lin-yuan", "/state/location", "qingyun-gate"),
    ]
    assert out["findings"][0]["sentence"] == "莫长老把黑戒的来历告诉苏晴。"


def test_the_text_report_names_sentence_node_field_and_value(cli: CLI) -> None:
    result = cli("audit", "-", input="Elder Mo dies. Elder Mo walks to the ferry.",
                 expect=ContinuityError.exit_code)
    assert result.stdout.splitlines() == [
        "sentence 2: Elder Mo walks to the ferry.",
        "  'Elder Mo walks to the ferry' (rule go, rules/movement.toml) needs who.state.health != dead",
        '  elder-mo /state/health = "dead"',
        "  Elder Mo is dead, since sentence 1 of this chapter ('Elder Mo dies.')",
        f"1 contradiction in 2 sentences, against the world at {result.stdout.split()[-1]}",
    ]
    assert result.stderr == ("narr: error: the chapter contradicts the world 1 time(s); first in "
                             'sentence 2: elder-mo /state/health is "dead", but must not be "dead"\n')


def test_a_clean_chapter_has_no_findings_and_exits_0(cli: CLI, flat_world: Path) -> None:
    before = snapshot(flat_world)
    out = cli.json("audit", "-", input=CLEAN)
    assert out["ok"] is True and out["findings"] == [] and out["sentences"] == 9
    text = cli("audit", "-", input=CLEAN).stdout
    assert text.startswith("ok: 9 sentences, nothing contradicts the world at ")
    assert snapshot(flat_world) == before


def test_at_rev_checks_against_the_world_then(cli: CLI) -> None:
    cli("event", "Elder Mo dies in the library")
    chapter = "Elder Mo walks to the ferry."
    now = cli.json("audit", "-", input=chapter, expect=ContinuityError.exit_code)
    assert findings(now) == [(1, "go", "elder-mo", "/state/health", "dead")]
    then = cli.json("audit", "-", "--at", "HEAD~1", input=chapter)
    assert then["ok"] is True and then["at"] == "HEAD~1"
    cli("audit", "-", "--at", "no-such-rev", input=chapter, expect=11)


def test_hand_edits_count_as_the_world_as_it_stands(cli: CLI, flat_world: Path) -> None:
    node = read_node(flat_world, "su-qing")
    edit_node(flat_world, "su-qing", relations={**node["relations"], "knows": {"ring-origin": {}}})
    assert cli.json("audit", "-", input="Su Qing tells Lin Yuan the ring's secret.")["ok"] is True
    out = cli.json("audit", "-", "--at", "HEAD", input="Su Qing tells Lin Yuan the ring's secret.",
                   expect=ContinuityError.exit_code)
    assert findings(out) == [(1, "tell", "su-qing", "/relations/knows/ring-origin", "ABSENT")]


def test_an_empty_chapter_is_invalid_input(cli: CLI) -> None:
    cli("audit", "-", input="  \n", expect=12)


def test_an_event_holds_back_an_unmet_precondition(cli: CLI) -> None:
    out = cli.json("event", "Su Qing gives Old Zhou the jade token", "--dry-run")
    assert [d for d in out["diffusions"] if d["target"] != "temple-bell"] == []
    [held] = out["proposal"]["held"]
    assert held["reason"] == ("the world contradicts it: su-qing /relations/holds/jade-token is "
                              "absent, but must be there (giver.relations.holds.{item}); "
                              "jade-token is elder-mo's")
    assert held["command"] == "narr event --accept 1 'Su Qing gives Old Zhou the jade token'"


def test_requirement_format() -> None:
    r = Requirement("giver.relations.holds.{item}")
    assert (r.var, r.path, r.op, r.negated, r.names) == (
        "giver", ("relations", "holds", "{item}"), None, False, {"giver", "item"})
    r = Requirement("who.state.location == {place}")
    assert (r.op, r.value_var, r.names) == ("==", "place", {"who", "place"})
    assert Requirement("who.state.health != dead").value == "dead"
    assert Requirement('who.state.age != 3').value == 3
    assert Requirement('!who.state.lit').negated
    for bad in ["who", "who.state.x = 3", "!who.state.x == 1", "who.state.x == a b",
                "Who.state.x", "who..x", "who.state.x == {Bad}"]:
        with pytest.raises(ValueError):
            Requirement(bad)


def test_rule_files_validate_require() -> None:
    base = (b'[[rules]]\nid = "r"\nmatch = ["{who} ~go home"]\n'
            b'do = [{ set = "who.state.home", value = true }]\n')
    parse_rule_file(base + b'require = ["who.state.health != dead"]\n', "rules/ok.toml")
    with pytest.raises(InvalidWorldError, match="require/0"):
        parse_rule_file(base + b'require = ["who.state.health = dead"]\n', "rules/bad.toml")
    with pytest.raises(InvalidWorldError, match="variable 'ghost' is never bound"):
        parse_rule_file(base + b'require = ["ghost.state.health != dead"]\n', "rules/bad.toml")


def test_earlier_sentences_resolve_a_pronoun_and_a_dropped_subject(cli: CLI) -> None:
    chapter = "Elder Mo dies in the library. He walks to the ferry. 林远离开山门，来到藏经阁，又离开了山门。"
    out = cli.json("audit", "-", input=chapter, expect=ContinuityError.exit_code)
    assert findings(out) == [
        (2, "go", "elder-mo", "/state/health", "dead"),
        (3, "leave", "lin-yuan", "/state/location", "library-pavilion"),
    ]
    assert [f["words"] for f in out["findings"]] == ["He walks to the ferry", "又离开了山门"]
