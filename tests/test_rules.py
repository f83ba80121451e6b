"""The ``rules`` diffuser: patterns, rule files, the ``--diffuser`` and ``--dry-run`` options,
and every way a rule file can be wrong."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import CLI, edit_node, read_node, snapshot

from narrative.diffusers import patterns

# --- patterns, without a world ---------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def spans(text: str, *names: str) -> list[Span]:
    out = []
    for name in names:
        i = text.index(name)
        out.append(Span(i, i + len(name)))
    return out


def find(pattern: str, text: str, names: dict[str, list[str]], unless: tuple[str, ...] = ()
         ) -> list[tuple[str, dict[str, str], str | None]]:
    """Match ``pattern``; ``names`` gives, per slot, the names in the text that may fill it."""
    every = [n for ns in names.values() for n in ns]
    mentions = spans(text, *every)
    allowed = {slot: {every.index(n) for n in ns} for slot, ns in names.items()}
    found = patterns.find(patterns.parse(pattern), text, mentions, allowed, unless)
    return [(text[m.start:m.end], {s: every[k] for s, k in m.slots.items()}, m.blocked_by)
            for m in found]


def test_english_words_match_whole_words_only() -> None:
    pat = "{who} walks to {place}"
    assert find(pat, "Lin Yuan walks to the ferry", {"who": ["Lin Yuan"], "place": ["the ferry"]}) == [
        ("Lin Yuan walks to the ferry", {"who": "Lin Yuan", "place": "the ferry"}, None)]
    assert find(pat, "Lin Yuan sidewalks to the ferry", {"who": ["Lin Yuan"], "place": ["the ferry"]}) == []
    assert find(pat, "Lin Yuan WALKS TO the ferry", {"who": ["Lin Yuan"], "place": ["the ferry"]})


def test_a_star_takes_any_ending() -> None:
    names = {"who": ["Lin Yuan"], "place": ["the ferry"]}
    assert find("{who} walk* to {place}", "Lin Yuan walked to the ferry", names)
    assert find("{who} walk* to {place}", "Lin Yuan walking to the ferry", names)
    assert not find("{who} walks to {place}", "Lin Yuan walked to the ferry", names)


def test_a_tilde_verb_takes_every_inflection_irregular_ones_included() -> None:
    names = {"who": ["Lin Yuan"], "place": ["the ferry"]}
    for text in ("Lin Yuan goes to the ferry", "Lin Yuan went to the ferry", "Lin Yuan has gone to the ferry",
                 "Lin Yuan is going to the ferry"):
        assert find("{who} (~go|~walk) to {place}", text, names), text
    assert not find("{who} ~go to {place}", "Lin Yuan goest to the ferry", names)
    items = {"who": ["Su Qing"], "item": ["the ring"]}
    for text in ("Su Qing took the ring", "Su Qing has taken the ring", "Su Qing picked up the ring"):
        assert find("{who} (~take|~pick up) {item}", text, items), text
    assert patterns.parse("{who} ~burn {item}").parts[1].words == (
        "burn", "burns", "burned", "burnt", "burning")


def test_a_tilde_verb_is_checked_when_the_rule_is_read() -> None:
    for bad, why in [("{who} ~went {x}", "base form (~go)"), ("{who} ~walk* {x}", "do not go together"),
                     ("{who} a~b {x}", "may only start a word"), ("{who} ~走 {x}", "English verb")]:
        with pytest.raises(ValueError, match=re.escape(why)):
            patterns.parse(bad)


def test_chinese_matches_without_spaces_and_with_words_between() -> None:
    names = {"who": ["林远"], "place": ["渡口"]}
    assert find("{who}(来到|走到){place}", "林远来到渡口", names) == [
        ("林远来到渡口", {"who": "林远", "place": "渡口"}, None)]
    assert find("{who}(来到|走到){place}", "林远冒着雨来到渡口", names)[0][0] == "林远冒着雨来到渡口"


def test_the_tightest_match_wins() -> None:
    text = "Su Qing watches Lin Yuan walk to the ferry"
    got = find("{who} walk to {place}", text, {"who": ["Su Qing", "Lin Yuan"], "place": ["the ferry"]})
    assert got == [("Lin Yuan walk to the ferry", {"who": "Lin Yuan", "place": "the ferry"}, None)]


def test_a_match_does_not_cross_a_sentence_end() -> None:
    text = "Lin Yuan waits. Then someone walks to the ferry"
    assert find("{who} walks to {place}", text, {"who": ["Lin Yuan"], "place": ["the ferry"]}) == []
    assert find("{who}(来到){place}", "林远等着。苏晴来到渡口",
                {"who": ["林远", "苏晴"], "place": ["渡口"]})[0][1] == {"who": "苏晴", "place": "渡口"}


def test_unless_words_inside_the_match_block_it() -> None:
    names = {"who": ["Lin Yuan"], "place": ["the ferry"]}
    got = find("{who} (go|goes) to {place}", "Lin Yuan does not go to the ferry", names, ("not",))
    assert got == [("Lin Yuan does not go to the ferry", {"who": "Lin Yuan", "place": "the ferry"}, "not")]
    # a whole word: "nothing" is not "not"
    got = find("{who} (go|goes) to {place}", "Lin Yuan, nothing said, goes to the ferry", names, ("not",))
    assert got[0][2] is None


def test_several_matches_in_one_text() -> None:
    text = "Lin Yuan goes to the ferry. Su Qing goes to the gate."
    got = find("{who} goes to {place}", text, {"who": ["Lin Yuan", "Su Qing"],
                                                 "place": ["the ferry", "the gate"]})
    assert [g[1] for g in got] == [{"who": "Lin Yuan", "place": "the ferry"},
                                  {"who": "Su Qing", "place": "the gate"}]


@pytest.mark.parametrize(("pattern", "message"), [
    ("{who} (walks|(runs)) to {place}", "brackets cannot nest"),
    ("{who walks", "is never closed"),
    ("{who} {place}", "needs at least one word"),
    ("{who} meets {who}", "a slot appears twice"),
    ("{Who} walks", "is not a variable name"),
    ("{who} (walks||runs)", "empty alternative"),
    ("{who} wa*lks", "'*' may only end a word"),
    ("{who} walks) to", "unexpected ')'"),
])
def test_bad_patterns_say_what_is_wrong(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        patterns.parse(pattern)


# --- the diffuser on the sample world ------------------------------------------------------


def ops_of(rec: dict[str, object]) -> list[object]:
    proposal = rec["proposal"]
    assert isinstance(proposal, dict)
    return list(proposal["ops"])


def test_two_people_and_two_sentences(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "Lin Yuan and Su Qing walk to the ferry. Old Zhou goes to the library.")
    assert ops_of(rec) == [
        {"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"},
        {"op": "set", "target": "su-qing", "field": "/state/location", "value": "ferry"},
        {"op": "set", "target": "old-zhou", "field": "/state/location", "value": "library-pavilion"},
    ]


def test_a_name_shared_by_two_nodes_is_not_guessed(flat_world: Path) -> None:
    narr = CLI(flat_world)
    edit_node(flat_world, "lin-xue", aliases=["林雪", "Xue", "Yuan"])
    before = read_node(flat_world, "lin-yuan")["state"]
    rec = narr.json("event", "At dusk, Yuan walks to the ferry")
    assert rec["proposal"]["notes"] == [
        "rule go (rules/movement.toml) not applied to 'Yuan walks to the ferry': "
        "'Yuan' could be lin-xue or lin-yuan",
        "no rule applied to 'At dusk, Yuan walks to the ferry'"]
    assert read_node(flat_world, "lin-yuan")["state"] == before


def test_the_longest_match_of_a_group_wins(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "Elder Mo reveals the ring's secret to Su Qing")
    assert [n.split(":")[0] for n in rec["proposal"]["notes"]] == ["rule tell (rules/secrets.toml)"]
    assert read_node(flat_world, "ring-origin")["state"]["known_widely"] is False
    rec = narr.json("event", "Elder Mo reveals the ring's secret")
    assert {"target": "ring-origin", "field": "/state/known_widely", "old_value": False,
            "new_value": True} in rec["diffusions"]


def test_no_longer_has_rules_of_its_own(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Su Qing suspects Lin Yuan")
    rec = narr.json("event", "Su Qing no longer suspects Lin Yuan")
    assert rec["diffusions"] == [{"target": "su-qing", "field": "/relations/suspects/lin-yuan",
                                  "old_value": {}}]
    assert rec["proposal"]["notes"] == [
        "rule clear-suspicion (rules/relations.toml): 'Su Qing no longer suspects Lin Yuan' "
        "(a=su-qing, b=lin-yuan)"]
    rec = narr.json("event", "Su Qing does not suspect Lin Yuan")
    assert rec["proposal"]["notes"] == [
        "rule suspect (rules/relations.toml) not applied: 'not' in 'Su Qing does not suspect Lin Yuan'",
        "no rule applied to 'Su Qing does not suspect Lin Yuan'"]


def test_taking_removes_every_previous_holder(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "苏晴拿走了黑戒")
    assert ops_of(rec) == [
        {"op": "unrelate", "source": "lin-yuan", "type": "holds", "target": "black-ring"},
        {"op": "relate", "source": "su-qing", "type": "holds", "target": "black-ring", "attrs": {}},
        {"op": "set", "target": "black-ring", "field": "/state/holder", "value": "su-qing"},
    ]  # the ring lies nowhere, so there is no location to remove


def test_taking_what_you_hold_already_keeps_how_you_hold_it(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "林远拿起黑戒")
    assert ops_of(rec) == [
        {"op": "relate", "source": "lin-yuan", "type": "holds", "target": "black-ring", "attrs": {}},
        {"op": "set", "target": "black-ring", "field": "/state/holder", "value": "lin-yuan"},
    ]
    # both already true: nothing changes but the evening bell's end; "worn" stays
    assert [c["target"] for c in rec["diffusions"]] == ["temple-bell"]
    assert read_node(flat_world, "lin-yuan")["relations"]["holds"]["black-ring"] == {
        "worn": "left middle finger"}


def test_explicit_changes_win_on_the_same_field(flat_world: Path) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "Lin Yuan walks to the ferry",
                    "--set", "lin-yuan.state.location=library-pavilion")
    assert rec["diffusions"][0] == {"target": "lin-yuan", "field": "/state/location",
                                    "old_value": "qingyun-gate", "new_value": "library-pavilion"}


def test_rain_comes_back_after_the_scene(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "The next day")
    rec = narr.json("event", "下起了雨")
    assert rec["created"] == ["rain"] and rec["proposal"]["arbitration"] == []
    rec = narr.json("event", "雨停了")
    assert rec["expired"] == {"rain": "expired by the event"}


def test_a_world_without_rules_records_story_beats(tmp_path: Path) -> None:
    from narrative.engine.init import init_world

    init_world(tmp_path / "bare")
    narr = CLI(tmp_path / "bare")
    out = narr("event", "Lin Yuan walks to the ferry").stdout
    assert "no rules in this world (rules/*.toml)" in out
    assert narr.json("log", "-n", "1")["items"][0]["diffuser"] == "rules"


def test_json_rule_files_work_too(flat_world: Path) -> None:
    (flat_world / "rules" / "extra.json").write_text(json.dumps({"rules": [{
        "id": "sing", "match": ["{who} sings"], "vars": {"who": {"layer": "character"}},
        "do": [{"set": "who.state.mood", "value": "singing"}]}]}), encoding="utf-8")
    rec = CLI(flat_world).json("event", "Old Zhou sings")
    assert rec["diffusions"] == [
        {"target": "old-zhou", "field": "/state/mood", "old_value": "tired", "new_value": "singing"},
        *[d for d in rec["diffusions"] if d["target"] == "temple-bell"]]


# --- --diffuser and narr.toml ----------------------------------------------------------------


def test_diffuser_explicit_proposes_nothing(narr: CLI, world: Path) -> None:
    rec = narr.json("event", "Lin Yuan walks to the ferry", "--diffuser", "explicit",
                    "--set", "lin-yuan.state.mood=calm")
    assert [(d["target"], d["field"]) for d in rec["diffusions"]] == [
        ("lin-yuan", "/state/mood"), ("temple-bell", "")]
    assert rec["proposal"] == {"diffuser": "explicit", "ops": [], "notes": [], "held": [],
                               "proposed": [], "arbitration": [], "refused": []}
    assert narr.json("show")["diffuser"] == "explicit"


def test_unknown_diffuser_changes_nothing(narr: CLI, world: Path) -> None:
    before = snapshot(world)
    result = narr("event", "Lin Yuan walks to the ferry", "--diffuser", "oracle", expect=12)
    assert result.stderr.splitlines()[0].startswith("narr: error: unknown diffuser 'oracle'; known: ")
    assert "explicit" in result.stderr and "rules" in result.stderr
    assert snapshot(world) == before


def test_default_diffuser_comes_from_narr_toml(flat_world: Path) -> None:
    narr = CLI(flat_world)
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text().replace('default = "rules"', 'default = "explicit"'))
    rec = narr.json("event", "Lin Yuan walks to the ferry")
    assert rec["proposal"]["diffuser"] == "explicit"
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "qingyun-gate"
    rec = narr.json("event", "Lin Yuan walks to the ferry", "--diffuser", "rules")
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"


# --- --dry-run -------------------------------------------------------------------------------


def test_dry_run_prints_the_proposal_and_changes_nothing(narr: CLI, world: Path) -> None:
    before = snapshot(world)
    out = narr("event", "A crowd gathers at the ferry; Lin Yuan walks to the ferry", "--dry-run").stdout
    assert out.splitlines() == [
        "[dry run: nothing recorded] A crowd gathers at the ferry; Lin Yuan walks to the ferry",
        '  lin-yuan /state/location: "qingyun-gate" → "ferry"',
        "  temple-bell: expired (event lifecycle)",
        "rules:",
        "  rule crowd-gathers (rules/scene.toml): 'A crowd gathers at the ferry' "
        "(place=ferry, crowd=crowd-ferry)",
        "  rule go (rules/movement.toml): 'Lin Yuan walks to the ferry' (who=lin-yuan, place=ferry)",
        "  arbiter: not creating crowd-ferry ('Crowd at Cold River Ferry'): it is ferry-crowd "
        "('Crowd at the Ferry'), 'crowd at ferry' within 'crowd at cold river ferry'; "
        "later changes go to ferry-crowd",
    ]
    rec = narr.json("event", "Lin Yuan walks to the ferry", "--dry-run")
    assert rec["dry_run"] is True and rec["commit"] is None
    assert rec["proposal"]["ops"] == [
        {"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}]
    assert snapshot(world) == before
    assert narr.json("status")["failed_events"] == []


# --- failures: nothing changes, the message says why ----------------------------------------


def write_rules(world: Path, text: str, name: str = "bad.toml") -> None:
    (world / "rules" / name).write_text(text, encoding="utf-8")


BAD_RULE_FILES = [
    ('[[rules]]\nid = "x"\nmatch = ["{who} sings"]\ndo = [{ set = "who.traits.voice", value = 1 }]\n',
     "narr: error: rules/bad.toml: rule 'x' /do/0/set/set: Value error, 'who.traits.voice': a rule may "
     "change name, kind, aliases, summary, lifecycle, state, relations, tags, sections, always_in_view, "
     "extensions of a node; not 'traits' "
     "(traits are the user's baseline, id/layer/created_by_event are narr's)"),
    ('[[rules]]\nid = "x"\nmatch = ["{who} sings"]\ndo = [{ set = "someone.state.mood", value = 1 }]\n',
     "narr: error: rules/bad.toml: rule 'x' /do/0: variable 'someone' is never bound (not a slot of "
     "any pattern, not a fixed id or derived in vars, not created with 'as')"),
    ('[[rules]]\nid = "x"\nmatch = ["{who} (sings"]\ndo = [{ expire = "who" }]\n',
     "narr: error: rules/bad.toml: rule 'x' /match: Value error, pattern '{who} (sings': '(' is "
     "never closed"),
    ('[[rules]]\nid = "x"\nmatch = ["{who} sings"]\ndo = [{ explode = "who" }]\n',
     "narr: error: rules/bad.toml: rule 'x' /do/0: an action has one of the keys set, unset, relate, "
     "unrelate, create, expire, close_scene"),
    ('[[rules]]\nid = "x"\nmatch = ["{who} sings"]\n'
     'do = [{ create = { id = "../{who}", name = "N", layer = "item" } }]\n',
     "narr: error: rules/bad.toml: rule 'x' /do/0/create/create/id: Value error, id template "
     "'../{who}' would not give a safe id (lowercase ASCII letters, digits, '-' and '_')"),
    ('[[rules]]\nid = "go"\nmatch = ["{who} sings"]\ndo = [{ expire = "who" }]\n',
     "narr: error: rules/movement.toml: rule 'go' is also defined in rules/bad.toml"),
    ("[[rules]\nid = 1\n", "narr: error: rules/bad.toml: "),
]


@pytest.mark.parametrize(("text", "message"), BAD_RULE_FILES)
def test_a_bad_rule_file_fails_the_event_and_changes_nothing(flat_world: Path, text: str,
                                                             message: str) -> None:
    narr = CLI(flat_world)
    write_rules(flat_world, text)
    before = snapshot(flat_world)
    result = narr("event", "Old Zhou sings", expect=13)
    assert result.stderr.splitlines()[0].startswith(message)
    assert result.stderr.splitlines()[-1].endswith(
        "the event is kept: fix the problem and run narr event --retry")
    assert snapshot(flat_world) == before
    # the typed event is kept; fixing the rules and retrying records it
    assert [f["content"] for f in narr.json("status")["failed_events"]] == ["Old Zhou sings"]
    (flat_world / "rules" / "bad.toml").unlink()
    rec = narr.json("event", "--retry")
    assert rec["content"] == "Old Zhou sings" and rec["proposal"]["diffuser"] == "rules"
    assert narr.json("status")["failed_events"] == []


def test_an_invalid_explicit_change_still_fails_the_whole_event(narr: CLI, world: Path) -> None:
    before = snapshot(world)
    result = narr("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.traits.speech=loud",
                  expect=12)
    assert result.stderr.splitlines()[0] == (
        "narr: error: the event's changes are not valid: op 2 (set): lin-yuan /traits/speech: "
        "traits are the node's baseline: only the user changes them, by editing the file "
        "(narr edit lin-yuan); the next event records that edit")
    assert snapshot(world) == before
    assert read_node(world, "lin-yuan")["state"]["location"] == "qingyun-gate"


def test_retry_can_pick_another_diffuser(flat_world: Path) -> None:
    narr = CLI(flat_world)
    write_rules(flat_world, "not toml at all [")
    narr("event", "Lin Yuan walks to the ferry", expect=13)
    (flat_world / "rules" / "bad.toml").unlink()
    rec = narr.json("event", "--retry", "--diffuser", "explicit")
    assert rec["content"] == "Lin Yuan walks to the ferry" and rec["proposal"]["diffuser"] == "explicit"
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "qingyun-gate"


def test_the_rules_readme_example_is_a_valid_rule_file() -> None:
    from narrative.diffusers.rulefile import parse_rule_file

    readme = (Path(__file__).resolve().parent.parent / "sample-world" / "rules" / "README.md").read_text()
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    parsed = parse_rule_file(example.encode(), "README.md")
    assert [r.id for r in parsed.rules] == ["go"] and set(parsed.vars) == {"who", "place", "owner", "sect"}


def test_a_rule_that_matches_in_exponential_time_is_stopped(flat_world: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.diffusers import rules

    monkeypatch.setattr(rules, "MATCH_BUDGET", 0.3)
    write_rules(flat_world, '[[rules]]\nid = "slow"\n'
                            'match = ["(a|a a) (a|a a) (a|a a) (a|a a) (a|a a) (a|a a) b"]\n'
                            'do = [{ close_scene = true }]\n')
    before = snapshot(flat_world)
    # every word of the pattern is there, but never in its order: the gaps try every way
    result = CLI(flat_world)("event", "b " + "a " * 200, expect=18)
    assert result.stderr.startswith("narr: error: rule slow (rules/")
    assert "took more than 0.3s to match this event's text" in result.stderr
    assert snapshot(flat_world) == before


def test_a_long_text_finds_every_firing(flat_world: Path) -> None:
    text = "Lin Yuan walks to the Qingyun Gate. Lin Yuan walks to the ferry. " * 300
    rec = CLI(flat_world).json("event", text, "--dry-run")
    go = [n for n in rec["proposal"]["notes"] if n.startswith("rule go ")]
    assert len(go) == 600
    [moved] = [d for d in rec["diffusions"] if d["target"] == "lin-yuan"]
    assert moved["new_value"] == "ferry"  # the last one wins


def test_parts_of_a_pattern_stay_within_a_clause(flat_world: Path) -> None:
    far = "Lin Yuan, " + "soaked and shivering in the rain by the old stone wall, " * 2 + "walks to the ferry"
    rec = CLI(flat_world).json("event", far, "--dry-run")
    assert not any(d["target"] == "lin-yuan" for d in rec["diffusions"])
    near = "Lin Yuan, soaked and shivering, walks to the ferry"
    rec = CLI(flat_world).json("event", near, "--dry-run")
    assert any(d["target"] == "lin-yuan" for d in rec["diffusions"])


@pytest.mark.parametrize("text, blocked_by", [
    ("林远不去藏经阁", "不"), ("林远没去藏经阁", "没"), ("老周没受伤", "没"), ("苏晴从不怀疑林远", "不"),
    ("苏晴未曾怀疑林远", "未"), ("林远不敢去渡口", "不"), ("林远没把黑戒交给老周", "没"),
])
def test_a_chinese_negation_before_the_verb_blocks_the_rule(flat_world: Path, text: str,
                                                            blocked_by: str) -> None:
    rec = CLI(flat_world).json("event", text, "--dry-run")
    assert [d for d in rec["diffusions"] if d["field"] != ""] == []
    assert any(f"not applied: {blocked_by!r} in" in n for n in rec["proposal"]["notes"])


@pytest.mark.parametrize("text, target, field", [
    ("林远不得不去藏经阁", "lin-yuan", "/state/location"),  # a double negative: he has to go
    ("莫长老来到渡口", "elder-mo", "/state/location"),  # 莫 is a name here
    ("苏晴不信任林远", "su-qing", "/relations/distrusts/lin-yuan"),  # 不 inside the rule's own word
])
def test_negation_characters_that_do_not_negate(flat_world: Path, text: str, target: str,
                                                field: str) -> None:
    rec = CLI(flat_world).json("event", text, "--dry-run")
    assert any(d["target"] == target and d["field"] == field for d in rec["diffusions"]), rec["diffusions"]


def test_a_node_added_by_hand_is_named_in_the_same_event(flat_world: Path) -> None:
    node = {"id": "zhang-san", "name": "Zhang San", "layer": "character", "kind": "person",
            "aliases": ["张三"], "state": {"location": "qingyun-gate"}}
    (flat_world / "world" / "character" / "zhang-san.json").write_text(json.dumps(node), encoding="utf-8")
    rec = CLI(flat_world).json("event", "Zhang San walks to the ferry. 张三来到渡口")
    moved = [d for d in rec["diffusions"] if d["target"] == "zhang-san" and d["field"] == "/state/location"]
    assert moved and moved[0]["new_value"] == "ferry"
