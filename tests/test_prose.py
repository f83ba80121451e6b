"""The rules on prose they were not written for, in English and Chinese: what a sentence
asserts by its structure, clause and sentence boundaries, whole-word names, verb classes,
pronouns across events, and changes held back under a structure narr does not know.

The world is a frontier town made here (not the sample world, not the evaluation sets),
with narr's generic rules for both languages; no sentence below is in a rule file, a cue
list or an evaluation set.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from narrative.delta.request import EventRequest
from narrative.delta.world import DictWorld
from narrative.diffusers.rules import RulesDiffuser

GENERIC = Path(__file__).resolve().parent.parent / "narrative" / "rules_generic" / "both"


def node(node_id: str, name: str, layer: str, kind: str, aliases: list[str], **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "name": name, "layer": layer, "kind": kind, "aliases": aliases,
            "summary": "", "lifecycle": extra.pop("lifecycle", "permanent"), "created_by_event": None,
            "traits": extra.pop("traits", {}), "state": extra.pop("state", {}),
            "relations": extra.pop("relations", {}), **extra}


def town() -> list[dict[str, Any]]:
    return [
        node("nell", "Nell Harper", "character", "person", ["Nell", "奈尔"],
             traits={"pronouns": "she"}, state={"location": "saloon", "health": "unhurt"},
             relations={"holds": {"deed": {}}}),
        node("tom", "Tom Reyes", "character", "person", ["Tom", "汤姆"],
             traits={"pronouns": "he"}, state={"location": "livery", "health": "unhurt"},
             relations={"holds": {"rifle": {}}}),
        node("quinn", "Father Quinn", "character", "person", ["Quinn", "奎因神父"],
             traits={"pronouns": "he"}, state={"location": "church", "health": "wounded"}),
        node("miner", "Jed Miner", "character", "person", ["Miner", "矿工杰德"],
             state={"location": "mine", "health": "unhurt"}),
        node("tie", "老铁", "character", "person", ["Old Tie"],
             state={"location": "saloon", "health": "unhurt"}, relations={"holds": {"watch": {}}}),
        node("xiu", "阿秀", "character", "person", ["Ah Xiu"], traits={"pronouns": "she"},
             state={"location": "church", "health": "unhurt"}),
        node("ma", "马掌柜", "character", "person", ["Shopkeeper Ma"],
             state={"location": "store", "health": "unhurt"}),
        node("bai", "小白", "character", "person", ["Xiao Bai"],
             state={"location": "livery", "health": "unhurt"}),
        node("saloon", "Silver Creek Saloon", "background", "place", ["the saloon", "银溪酒馆", "酒馆"]),
        node("livery", "Livery Stable", "background", "place", ["the livery", "马厩"]),
        node("church", "Mission Church", "background", "place", ["the church", "教堂"]),
        node("mine", "Dry Gulch Mine", "background", "place", ["the mine", "矿井"]),
        node("store", "General Store", "background", "place", ["the store", "杂货铺"]),
        node("deed", "land deed", "item", "deed", ["the deed", "地契"], state={"holder": "nell"}),
        node("rifle", "Winchester rifle", "item", "weapon", ["the rifle", "步枪"],
             state={"holder": "tom"}),
        node("watch", "pocket watch", "item", "watch", ["the watch", "怀表"], state={"holder": "tie"}),
        node("candle", "tallow candle", "item", "candle", ["the candle", "蜡烛"],
             state={"location": "church", "lit": True}),
        node("lamp", "hurricane lamp", "item", "lamp", ["the lamp", "马灯"],
             state={"location": "livery", "lit": False}),
        node("fraud", "Claim Fraud", "background", "secret", ["the claim fraud", "矿权骗局"],
             state={"known_widely": False}),
        node("dust", "Dust Storm", "ambient", "weather", ["the dust storm", "沙暴"], lifecycle="scene"),
    ]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("town")
    shutil.copytree(GENERIC, where / "rules")
    return where


def changes(root: Path, text: str, before: list[str] = (), **kwargs: Any  # type: ignore[assignment]
            ) -> set[tuple[str, str, Any]]:
    """What the event would change, as the engine records it: (target, field, new value as
    JSON, or None when the field or edge goes); an expiry is ``(id, "", None)``."""
    from narrative.delta.draft import Draft

    world = DictWorld(town(), root=root, recent=[{"content": b} for b in reversed(before)])
    proposal = RulesDiffuser(root).propose(world, EventRequest(content=text, **kwargs))
    draft = Draft(world, "test")
    draft.apply(proposal.delta, proposed=len(proposal.delta.ops))
    draft.finish(close_scene=proposal.delta.close_scene)
    assert draft.problems == []
    out = set()
    for c in draft.diffusions():
        if c.field == "":
            out.add((c.target, "", None))
        else:
            out.add((c.target, c.field, json.dumps(c.new_value) if c.has_new else None))
    return out


def propose(root: Path, text: str, before: list[str] = (), **kwargs: Any):  # type: ignore[no-untyped-def, assignment]
    world = DictWorld(town(), root=root, recent=[{"content": b} for b in reversed(before)])
    return RulesDiffuser(root).propose(world, EventRequest(content=text, **kwargs))


def moved(root: Path, text: str, before: list[str] = ()) -> dict[str, str]:  # type: ignore[assignment]
    return {t: json.loads(v) for t, f, v in changes(root, text, before) if f == "/state/location"}


# --- assertion by structure ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    # belief, certainty, fear: the complement did not (yet) happen
    "Nell was dead sure Tom had ridden out to the mine.",
    "Tom reckoned that Quinn had gone back to the church hours ago.",
    "Quinn was afraid the miner had taken the rifle from Tom.",
    "老铁一心以为阿秀已经去了矿井。",
    "马掌柜断定汤姆偷走了地契。",
    "阿秀生怕老铁把怀表交给了马掌柜。",
    # denial
    "Tom swore up and down that he never set foot in the saloon.",
    "Nell denied having given the deed to Tom.",
    "老铁死不承认去过杂货铺。",
    # gossip and hearsay
    "Rumor had it that Miner shot Tom behind the livery.",
    "The word around town was that Nell had burned the deed.",
    "镇上都在传汤姆打死了矿工杰德。",
    # habitual
    "Most evenings Tom walked over to the saloon for a whiskey.",
    "Nell always lit the lamp before the sermon.",
    "阿秀每天傍晚都去教堂。",
    "老铁向来把怀表交给马掌柜保管。",
    # future and intention
    "Tomorrow Nell rides to the mine.",
    "Tom meant to give the rifle to Quinn.",
    "明天汤姆去矿井。",
    "马掌柜打算把地契卖给老铁。",
    # negative subjects and adverbials
    "Nobody went to the church that night.",
    "Not once did Tom enter the saloon.",
    "谁也没去过矿井。",
    "汤姆从未踏进过酒馆。",
    # frames: a story, a song, a dream inside the story
    "In the dime novel everyone was reading, Tom guns down Jed Miner at the livery.",
    "In the ballad they sang at the saloon, Nell burns the deed.",
    "评书里，汤姆一枪打死了矿工杰德。",
    "老铁梦见阿秀拿走了怀表。",
    # conditions and questions
    "If Tom goes to the mine, Nell will follow.",
    "Should the dust storm pass, Quinn would light the lamp.",
    "Did Nell give the deed to Tom?",
    "要是汤姆去了矿井，奈尔就跟着去。",
    "阿秀把怀表交给老铁了吗？",
    # reported speech
    "“Tom took the rifle,” Nell told the sheriff.",
    "According to the barkeep, Quinn had gone to the mine.",
    "据马掌柜说，老铁去了矿井。",
])
def test_what_a_sentence_does_not_assert_changes_nothing(root: Path, text: str) -> None:
    assert changes(root, text) == set()


@pytest.mark.parametrize("text, who, where", [
    # a factive verb keeps its complement asserted
    ("Nell saw Tom walk into the church.", "tom", "church"),
    ("Quinn noticed that Tom had gone to the mine.", "tom", "mine"),
    ("阿秀看见汤姆走进了教堂。", "tom", "church"),
    # the main clause beside what is only believed or planned
    ("Tom, who believed Nell had gone to the mine, rode to the church.", "tom", "church"),
    ("Nell thought Tom was at the mine, and went to the store.", "nell", "store"),
    ("老铁以为阿秀去了矿井，便去了杂货铺。", "tie", "store"),
    # an implicative verb: the action is done
    ("Tom managed to reach the church before dark.", "tom", "church"),
])
def test_what_a_sentence_asserts_is_applied(root: Path, text: str, who: str, where: str) -> None:
    assert moved(root, text) == {who: where}


def test_a_purpose_infinitive_is_not_done(root: Path) -> None:
    assert moved(root, "Tom rode to the saloon to give the rifle to Nell.") == {"tom": "saloon"}
    assert not any(f == "/state/holder" for _, f, _ in
                   changes(root, "Tom rode to the saloon to give the rifle to Nell."))


# --- boundaries ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("If Dr. Vance goes to the church, Tom rides to the mine.", {}),
    ("Nell met Mr. T. J. Harlan at the store, and Tom went to the church.", {"tom": "church"}),
    ("Tom waited at the livery, and Nell walked to the church.", {"nell": "church"}),
    ("Nell stayed at the saloon; Tom went on to the mine.", {"tom": "mine"}),
    ("奈尔在酒馆里等着，汤姆却去了矿井。", {"tom": "mine"}),
    ("汤姆留在马厩；老铁则去了教堂。", {"tie": "church"}),  # Tom is at the livery already
])
def test_no_pattern_binds_across_a_clause_boundary(root: Path, text: str, expected: dict[str, str]) -> None:
    assert moved(root, text) == expected


def test_sentences_know_titles_initials_and_abbreviations() -> None:
    from narrative.diffusers import clauses

    text = "If Dr. Vance rides to St. Louis at 6 p.m. sharp, J. R. Cole will follow. He did not."
    assert [text[a:b].strip() for a, b in clauses.sentences(text)] == [
        "If Dr. Vance rides to St. Louis at 6 p.m. sharp, J. R. Cole will follow.", "He did not."]
    assert len(clauses.sentences("“你去吗？”她问。他点点头。")) == 3
    # a quote after a line break opens the next line: it is no closing quote of the one before
    text = 'Cole says nothing.\n"Leave," said Cole. He sighs.'
    assert [text[a:b].strip() for a, b in clauses.sentences(text) if text[a:b].strip()] == [
        "Cole says nothing.", '"Leave," said Cole.', "He sighs."]


# --- whole-word names ------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The miner from Red Hill walked into the saloon.", {}),  # a common word, not Jed Miner
    ("Miner walked into the saloon.", {"miner": "saloon"}),  # a name: a verb follows it
    ("At noon, Miner walked into the saloon.", {"miner": "saloon"}),
    ("一筐小白菜被送进了杂货铺。", {}),  # bok choy (小白菜), not 小白
    ("小白去了杂货铺。", {"bai": "store"}),
])
def test_a_name_is_a_whole_word(root: Path, text: str, expected: dict[str, str]) -> None:
    assert moved(root, text) == expected


def test_a_cue_inside_a_name_is_no_cue(tmp_path: Path) -> None:
    shutil.copytree(GENERIC, tmp_path / "rules")
    nodes = [*town(), node("never", "Never Reyes", "character", "person", ["Never"],
                            state={"location": "livery"})]
    world = DictWorld(nodes, root=tmp_path)
    proposal = RulesDiffuser(tmp_path).propose(world, EventRequest(content="Never Reyes rode to the mine."))
    assert [(op.target, op.value) for op in proposal.delta.ops] == [("never", "mine")]


# --- verb classes ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Tom trudged all the way up to the mine.", {("tom", "/state/location", '"mine"')}),
    ("Nell hailed a cab to the church.", {("nell", "/state/location", '"church"')}),
    ("Tom handed the rifle over to Quinn.", {("tom", "/relations/holds/rifle", None),
                                             ("quinn", "/relations/holds/rifle", "{}"),
                                             ("rifle", "/state/holder", '"quinn"')}),
    ("Nell ripped the deed to shreds.", {("nell", "/relations/holds/deed", None), ("deed", "", None)}),
    ("Quinn snuffed out the candle.", {("candle", "/state/lit", "false")}),
    ("Nell patched Quinn up.", {("quinn", "/state/health", '"unhurt"')}),
    ("Tom and Miner made it up after the dance.", {("tom", "/relations/allied-with/miner", "{}"),
                                                   ("miner", "/relations/allied-with/tom", "{}")}),
    ("汤姆踱进了教堂。", {("tom", "/state/location", '"church"')}),
    ("阿秀把怀表揣进了怀里。", {("tie", "/relations/holds/watch", None),
                             ("xiu", "/relations/holds/watch", "{}"),
                             ("watch", "/state/holder", '"xiu"')}),
    ("阿秀一把火烧了地契。", {("deed", "", None), ("nell", "/relations/holds/deed", None)}),
    ("汤姆和矿工杰德握手言和。", {("tom", "/relations/allied-with/miner", "{}"),
                                 ("miner", "/relations/allied-with/tom", "{}")}),
    ("马掌柜一刀捅死了老铁。", {("tie", "/state/health", '"dead"'), ("ma", "/relations/enemy-of/tie", "{}"),
                             ("tie", "/relations/enemy-of/ma", "{}")}),
])
def test_a_class_holds_the_verbs_and_idioms_of_its_family(root: Path, text: str,
                                                           expected: set[tuple[str, str, Any]]) -> None:
    assert changes(root, text) == expected


def test_a_world_adds_to_a_class(tmp_path: Path) -> None:
    shutil.copytree(GENERIC, tmp_path / "rules")
    world = DictWorld(town(), root=tmp_path)
    text = "Tom skedaddled to the church."
    assert RulesDiffuser(tmp_path).propose(world, EventRequest(content=text)).delta.ops == []
    (tmp_path / "rules" / "words.toml").write_text('[classes]\ngo = ["skedaddle", "溜达"]\n', "utf-8")
    ops = RulesDiffuser(tmp_path).propose(world, EventRequest(content=text)).delta.ops
    assert [(op.target, op.value) for op in ops] == [("tom", "church")]  # type: ignore[union-attr]
    ops = RulesDiffuser(tmp_path).propose(world, EventRequest(content="汤姆溜达到教堂。")).delta.ops
    assert [(op.target, op.value) for op in ops] == [("tom", "church")]  # type: ignore[union-attr]


@pytest.mark.parametrize("entry, message", [
    ('go = ["{who} saunters"]', "rules/words.toml:2: class 'go': class entry '{who} saunters'"),
    ('go = ["~strolled off"]', "rules/words.toml:2: class 'go': class entry '~strolled off': '~strolled'"),
    ('go = ["溜达 to"]', "rules/words.toml:2: class 'go': class entry '溜达 to': mixes Chinese and Latin"),
    ('[classes.go]\nverbs = ["mosey"]', "rules/words.toml:2: class 'go': unknown key(s) verbs"),
    ('"Go!" = ["mosey"]', "rules/words.toml:2: class name 'Go!'"),
])
def test_a_malformed_class_entry_is_refused_by_name_and_line(tmp_path: Path, entry: str,
                                                             message: str) -> None:
    from narrative.errors import InvalidWorldError

    shutil.copytree(GENERIC, tmp_path / "rules")
    body = entry if entry.startswith("[") else f"[classes]\n{entry}\n"
    if entry.startswith("[classes.go]"):
        body = f"# words\n{entry}\n"
    (tmp_path / "rules" / "words.toml").write_text(body, "utf-8")
    world = DictWorld(town(), root=tmp_path)
    with pytest.raises(InvalidWorldError) as err:
        RulesDiffuser(tmp_path).propose(world, EventRequest(content="Tom went to the church."))
    assert err.value.message.startswith(message), err.value.message


def test_a_pattern_naming_no_class_is_refused(tmp_path: Path) -> None:
    from narrative.errors import InvalidWorldError

    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "x.toml").write_text(
        '[[rules]]\nid = "x"\nmatch = ["{who} @gallivant {place}"]\ndo = [{ close_scene = true }]\n',
        "utf-8")
    with pytest.raises(InvalidWorldError, match=r"rules/x.toml: rule 'x' /match/0: no class @gallivant"):
        RulesDiffuser(tmp_path).propose(DictWorld(town(), root=tmp_path),
                                        EventRequest(content="Tom gallivants to the church."))


# --- pronouns across events ------------------------------------------------------------------

def test_a_pronoun_binds_the_one_character_named_in_the_last_events(root: Path) -> None:
    before = ["Nell counted the takings behind the bar."]
    assert moved(root, "She locked up and walked to the church.", before) == {"nell": "church"}
    before = ["阿秀在教堂里点完了蜡烛。"]
    assert moved(root, "她随后去了杂货铺。", before) == {"xiu": "store"}
    # named in this event after the pronoun, as its object: not the antecedent
    before = ["Tom cleaned the rifle on the porch."]
    got = changes(root, "He suspected Quinn of lying.", before)
    assert got == {("tom", "/relations/suspects/quinn", "{}")}


def test_two_candidates_bind_nobody_and_the_note_says_so(root: Path) -> None:
    before = ["Tom and Father Quinn argued on the church steps."]
    proposal = propose(root, "He walked to the mine.", before)
    assert proposal.delta.ops == []
    assert "'He' bound to nobody: it could be Father Quinn or Tom Reyes" in proposal.notes


# --- unsure means ask ------------------------------------------------------------------------

def test_a_change_under_a_verb_narr_does_not_know_is_held_back_and_can_be_accepted(root: Path) -> None:
    text = "Nell hollered that Tom had ridden to the mine."
    proposal = propose(root, text)
    assert proposal.delta.ops == []
    [held] = proposal.held
    assert (held.n, held.rule, held.words) == (1, "go", "Tom had ridden to the mine")
    assert "under 'hollered'" in held.reason
    assert [(op.target, op.value) for op in held.ops] == [("tom", "mine")]  # type: ignore[union-attr]
    accepted = propose(root, text, accept=[1])
    assert [(op.target, op.value) for op in accepted.delta.ops] == [("tom", "mine")]  # type: ignore[union-attr]
    assert accepted.held == []


def test_a_bare_complement_of_an_unknown_verb_is_held_back(root: Path) -> None:
    proposal = propose(root, "Nell begrudged Tom take the deed.")
    assert proposal.delta.ops == [] and len(proposal.held) == 1
    assert changes(root, "Nell watched Tom take the deed.") == {
        ("nell", "/relations/holds/deed", None), ("tom", "/relations/holds/deed", "{}"),
        ("deed", "/state/holder", '"tom"')}


# --- a second batch, written after the mechanisms above, as a user would write ----------------

def L(who: str, place: str) -> tuple[str, str, str]:
    return (who, "/state/location", json.dumps(place))


SECOND_BATCH = [
    ("Tom limped back to the livery after the fight.", set()),  # he is there already
    ("Nell made her way to the general store.", {L("nell", "store")}),
    ("Father Quinn slipped into the saloon by the back door.", {L("quinn", "saloon")}),
    ("Jed Miner rode out to the mine at first light.", set()),  # he is there already
    ("Tom gave Nell the rifle.", {("tom", "/relations/holds/rifle", None),
                                  ("nell", "/relations/holds/rifle", "{}"),
                                  ("rifle", "/state/holder", '"nell"')}),
    ("Nell tossed the deed into the stove.", {("deed", "", None), ("nell", "/relations/holds/deed", None)}),
    ("Old Tie pocketed the candle.", {("tie", "/relations/holds/candle", "{}"),
                                      ("candle", "/state/holder", '"tie"'),
                                      ("candle", "/state/location", None)}),
    ("Quinn blew out the candle.", {("candle", "/state/lit", "false")}),
    ("Tom shot Jed Miner dead outside the church.", {("miner", "/state/health", '"dead"'),
                                                     ("tom", "/relations/enemy-of/miner", "{}"),
                                                     ("miner", "/relations/enemy-of/tom", "{}")}),
    ("Nell nursed Father Quinn back to health.", {("quinn", "/state/health", '"unhurt"')}),
    ("Tom found out about the claim fraud.", {("tom", "/relations/knows/fraud", "{}")}),
    ("The claim fraud was soon the talk of the town.", {("fraud", "/state/known_widely", "true")}),
    ("Nell and Tom fell out over the deed.", {("nell", "/relations/enemy-of/tom", "{}"),
                                              ("tom", "/relations/enemy-of/nell", "{}")}),
    ("Jed Miner double-crossed Tom.", {("tom", "/relations/enemy-of/miner", "{}"),
                                       ("tom", "/relations/distrusts/miner", "{}")}),
    # beginning to is doing: he distrusts him now
    ("Tom began to distrust Jed Miner.", {("tom", "/relations/distrusts/miner", "{}")}),
    ("The dust storm finally blew over.", {("dust", "", None)}),
    ("Nell suspected that Tom had hidden the deed.", set()),
    ("Tom hoped Nell would ride to the mine.", set()),
    ("Quinn insisted that he had never touched the rifle.", set()),
    ("Everyone said Jed Miner had killed Tom.", set()),
    ("Nell used to walk to the church every morning.", set()),
    ("Tom will go to the saloon tonight.", set()),
    ("No one gave the deed to Tom.", set()),
    ("In Nell's dream, Tom burned the deed.", set()),
    ("If Quinn learns of the claim fraud, he will tell everyone.", set()),
    ("Was it Tom who went to the mine?", set()),
    ("Tom watched Nell walk into the church.", {L("nell", "church")}),
    ("Nell knew that Tom had gone to the mine.", {L("tom", "mine")}),
    ("She walked to the church.", {L("nell", "church")}),
    ("汤姆骑马去了矿井。", {L("tom", "mine")}),
    ("奈尔把地契交给了汤姆。", {("nell", "/relations/holds/deed", None),
                            ("tom", "/relations/holds/deed", "{}"),
                            ("deed", "/state/holder", '"tom"')}),
    ("老铁把怀表扔进了炉子。", {("watch", "", None), ("tie", "/relations/holds/watch", None)}),
    ("汤姆开枪打死了矿工杰德。", {("miner", "/state/health", '"dead"'),
                             ("tom", "/relations/enemy-of/miner", "{}"),
                             ("miner", "/relations/enemy-of/tom", "{}")}),
    ("阿秀发现了矿权骗局。", {("xiu", "/relations/knows/fraud", "{}")}),
    ("阿秀以为汤姆拿走了地契。", set()),
    ("汤姆常常去酒馆喝酒。", set()),
    ("谁都没有去教堂。", set()),
    ("戏里，汤姆烧了地契。", set()),
    ("阿秀看见老铁走进了杂货铺。", {L("tie", "store")}),
    ("沙暴终于停了。", {("dust", "", None)}),
]


@pytest.mark.parametrize(("text", "expected"), SECOND_BATCH)
def test_a_second_batch_of_prose(root: Path, text: str, expected: set[tuple[str, str, Any]]) -> None:
    before = ["Nell counted the takings."] if text.startswith("She") else []
    assert changes(root, text, before) == expected


THIRD_BATCH = [
    # what is only possible, allowed or ordered
    ("Tom can ride to the church.", set()),
    ("Tom is able to walk to the store.", set()),
    ("小白可以去教堂。", set()),
    ("小白能去矿井。", set()),
    ("Let Nell go to the church.", set()),
    ("Nell, go to the church!", set()),
    ("Nell, tired of the noise, walked to the church.", {L("nell", "church")}),
    ("老铁，快去教堂！", set()),
    ("Tom told Nell he had ridden to the mine.", set()),
    # going past, toward or away is not arriving
    ("Tom rode past the church.", set()),
    ("Tom walked towards the store.", set()),
    ("Tom headed for the mine.", set()),
    ("Tom ran from the church.", set()),
    ("小白走向教堂。", set()),
    ("Tom rode away from the livery.", {("tom", "/state/location", None)}),
    ("Nell left the saloon.", {("nell", "/state/location", None)}),
    ("Nell left the church.", set()),  # she is not there: held back
    ("老铁离开了酒馆。", {("tie", "/state/location", None)}),
    # figures of speech and what is not yet so
    ("Nell was dying to see the mine.", set()),
    ("Father Quinn is dying.", set()),
    ("Tom died laughing at the sheriff.", set()),
    ("阿秀笑死了。", set()),
    ("马掌柜累死了。", set()),
    ("Tom died in the night.", {("tom", "/state/health", '"dead"')}),
    # a negation inside the phrase
    ("Nell learned nothing about the claim fraud.", set()),
    ("Nell learned about the claim fraud.", {("nell", "/relations/knows/fraud", "{}")}),
    ("Tom hardly trusts Father Quinn.", set()),
    ("Tom rode to neither the church nor the mine.", set()),
    # items: another of its kind, a part of it, what another holds, a list
    ("Tom took a lamp from the shelf.", set()),
    ("Tom took the lamp's chimney.", set()),
    ("Tom lost the deed.", set()),  # Nell holds it: held back
    ("Tom took the lamp and the candle.", {("tom", "/relations/holds/lamp", "{}"),
                                           ("lamp", "/state/holder", '"tom"'),
                                           ("lamp", "/state/location", None),
                                           ("tom", "/relations/holds/candle", "{}"),
                                           ("candle", "/state/holder", '"tom"'),
                                           ("candle", "/state/location", None)}),
    ("The rifle was handed to Nell.", {("tom", "/relations/holds/rifle", None),
                                       ("nell", "/relations/holds/rifle", "{}"),
                                       ("rifle", "/state/holder", '"nell"')}),
    ("Nell rode to the mine with Tom.", {L("nell", "mine"), L("tom", "mine")}),
    ("Jed Miner was killed by Tom.", {("miner", "/state/health", '"dead"'),
                                      ("tom", "/relations/enemy-of/miner", "{}"),
                                      ("miner", "/relations/enemy-of/tom", "{}")}),
]


@pytest.mark.parametrize(("text", "expected"), THIRD_BATCH)
def test_a_third_batch_of_prose(root: Path, text: str, expected: set[tuple[str, str, Any]]) -> None:
    assert changes(root, text) == expected



# A leave and an arrival in one sentence end at the arrival, however the second clause starts
LEAVE_THEN_ARRIVE = [
    ("老铁离开酒馆，沿着大街一直走到了教堂。", {L("tie", "church")}),
    ("老铁跑出了酒馆，顺着小路跑到了马厩。", {L("tie", "livery")}),
    ("老铁跑出酒馆，一口气跑到了杂货铺。", {L("tie", "store")}),
    ("老铁离开了酒馆，穿过大街走进了教堂。", {L("tie", "church")}),
    ("老铁离开酒馆，一溜烟跑到了矿井。", {L("tie", "mine")}),
    ("Nell left the saloon and, after a long walk, reached the church.", {L("nell", "church")}),
    ("Nell walked out of the saloon and across the street to the store.", {L("nell", "store")}),
    # the leave alone still takes the location away; the arrival alone still arrives
    ("老铁离开酒馆，沿着大街一直走。", {("tie", "/state/location", None)}),
    ("老铁沿着大街一直走到了教堂。", {L("tie", "church")}),
    # an idiom of manner holding 不 (望不到头, "no end in sight") negates nothing
    ("老铁离开酒馆，沿着那条望不到头的大街一直走到了教堂。", {L("tie", "church")}),
]


def test_a_leave_is_held_back_when_the_arrival_after_it_cannot_be_read(root: Path) -> None:
    """The arrival is kept out by a negation inside its words (没有路灯, "with no street
    lamps"), whether a cue or the rule's own ``unless`` words find it: the sentence still says
    where he went, so his location is not taken away; the leave is held back for the writer to
    accept."""
    for text in ("老铁离开酒馆，沿着那条没有路灯的大街一直走到了教堂。",
                 "老铁离开酒馆，沿着那条没人走的大街一直走到了教堂。"):
        assert changes(root, text) == set()
        held = propose(root, text).held
        assert [(h.rule, h.words) for h in held] == [("leave", "老铁离开酒馆")]
        assert "走到了教堂" in held[0].reason
    # a leave the sentence does not go on from still takes the location away
    assert changes(root, "老铁离开了酒馆，没去教堂。") == {("tie", "/state/location", None)}


@pytest.mark.parametrize(("text", "expected"), LEAVE_THEN_ARRIVE)
def test_a_leave_then_an_arrival_ends_at_the_arrival(root: Path, text: str,
                                                     expected: set[tuple[str, str, Any]]) -> None:
    assert changes(root, text) == expected


# Setting off for a place, heading to it, being on the way there is not arriving
SETTING_OFF = [
    ("Nell set off for the church.", set()),
    ("Nell set out for the church before dawn.", set()),
    ("Nell sets off for the store at first light.", set()),
    ("Tom headed to the church.", set()),
    ("Tom was headed to the store with a sack of flour.", set()),
    ("Tom started for the mine.", set()),
    ("汤姆出发去教堂。", set()),
    ("汤姆动身前往杂货铺。", set()),
    ("汤姆动身去矿井。", set()),
    ("汤姆在去教堂的路上。", set()),
    ("汤姆在回酒馆的路上遇见了阿秀。", set()),
    # getting there is arriving
    ("Nell set off at dawn and walked to the church.", {L("nell", "church")}),
    ("汤姆出发了，骑马去了教堂。", {L("tom", "church")}),
    ("Tom went back to the saloon.", {L("tom", "saloon")}),
]


@pytest.mark.parametrize(("text", "expected"), SETTING_OFF)
def test_setting_off_for_a_place_is_not_arriving(root: Path, text: str,
                                                 expected: set[tuple[str, str, Any]]) -> None:
    assert changes(root, text) == expected


# --- through the narr command ----------------------------------------------------------------

def test_narr_event_lists_a_held_back_change_with_the_command_that_applies_it(flat_world: Path) -> None:
    from helpers import CLI, snapshot

    narr = CLI(flat_world)
    text = "Old Zhou grunted that Su Qing had walked to the ferry."
    out = narr("event", "--dry-run", text).stdout
    assert "held back (not written: narr is not sure the words say so, or the world contradicts them):" in out
    assert "  1. 'Su Qing had walked to the ferry': under 'grunted'" in out
    assert f"     apply it: narr event --accept 1 '{text}'" in out
    rec = narr.json("event", "--dry-run", text)
    assert rec["diffusions"] == [{"target": "temple-bell", "field": "", "old_value": rec["diffusions"][0]
                                  ["old_value"]}]
    [held] = rec["proposal"]["held"]
    assert held["flags"] == ["--set", 'su-qing/state/location="ferry"']
    before = snapshot(flat_world)
    recorded = narr.json("event", text)  # recorded without the held-back change
    assert not any(d["target"] == "su-qing" for d in recorded["diffusions"])
    assert recorded["proposal"]["held"][0]["command"] == (
        "narr event 'Su Qing had walked to the ferry' --diffuser explicit "
        "--set 'su-qing/state/location=\"ferry\"'")
    assert snapshot(flat_world) != before
    accepted = narr.json("event", "--accept", "1", text)
    assert [d["new_value"] for d in accepted["diffusions"] if d["target"] == "su-qing"] == ["ferry"]


def test_the_printed_command_applies_the_held_back_change(flat_world: Path) -> None:
    import shlex

    from helpers import CLI

    narr = CLI(flat_world)
    rec = narr.json("event", "Old Zhou grunted that Su Qing had walked to the ferry.")
    args = shlex.split(rec["proposal"]["held"][0]["command"])
    assert args[:2] == ["narr", "event"]
    narr(*args[1:])
    assert narr.json("get", "su-qing")["node"]["state"]["location"] == "ferry"


def test_after_a_recorded_event_no_hint_records_the_same_words_again(flat_world: Path) -> None:
    """Once the event is recorded, '--accept 1' with its words would record them a second time:
    the only command shown is the one applying the held-back change alone."""
    import shlex

    from helpers import CLI

    narr = CLI(flat_world)
    text = "Old Zhou grunted that Su Qing had walked to the ferry."
    out = narr("event", text).stdout
    assert "--accept" not in out
    assert "(held-back change 1)" in out
    [command] = [line.split("apply it: ", 1)[1] for line in out.splitlines() if "apply it: " in line]
    assert command == ("narr event 'Su Qing had walked to the ferry' --diffuser explicit "
                       "--set 'su-qing/state/location=\"ferry\"'")
    narr(*shlex.split(command)[1:])
    log = narr.json("log")["items"]
    assert [e["content"] for e in log[:2]] == ["Su Qing had walked to the ferry", text]
    assert narr.json("get", "su-qing")["node"]["state"]["location"] == "ferry"


def test_a_held_back_node_to_create_is_applied_as_a_delta_not_the_same_words(flat_world: Path) -> None:
    """A new node has no flag: once the event is recorded the command pipes the held-back
    changes in as a delta, and never repeats the recorded words."""
    import shlex

    from helpers import CLI

    narr = CLI(flat_world)
    text = "Old Zhou snorted that it began to rain."
    [held] = narr.json("event", text)["proposal"]["held"]
    command = held["command"]
    echo, _, rest = command.partition(" | ")
    assert shlex.split(rest) == ["narr", "event", "it began to rain", "--diffuser", "explicit",
                                 "--delta", "-"]
    [word, delta] = shlex.split(echo)
    assert word == "echo" and text not in command
    narr(*shlex.split(rest)[1:], input=delta)
    assert narr.json("get", "rain")["node"]["kind"] == "weather"
    assert [e["content"] for e in narr.json("log")["items"][:2]] == ["it began to rain", text]


def test_losing_what_another_holds_is_held_back(flat_world: Path) -> None:
    """The drop rule's guard: Old Zhou holds the lantern, so Lin Yuan cannot lose it."""
    from helpers import CLI

    narr = CLI(flat_world)
    assert narr.json("get", "paper-lantern")["node"]["state"]["holder"] == "old-zhou"
    rec = narr.json("event", "--dry-run", "Lin Yuan lost the lantern.")
    assert [d for d in rec["diffusions"] if d["target"] != "temple-bell"] == []
    [held] = rec["proposal"]["held"]
    assert "the world contradicts it: lin-yuan /relations/holds/paper-lantern is absent" in held["reason"]
    owner = narr.json("event", "--dry-run", "Old Zhou lost the lantern.")
    assert {(d["target"], d["field"]) for d in owner["diffusions"]} >= {
        ("old-zhou", "/relations/holds/paper-lantern"), ("paper-lantern", "/state/holder")}
    assert owner["proposal"]["held"] == []


def test_content_beyond_the_size_limit_needs_large(flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import CLI, snapshot

    from narrative.diffusers import rules

    monkeypatch.setattr(rules, "MAX_CONTENT", 2048)
    narr = CLI(flat_world)
    text = "Lin Yuan walks to the ferry. " * 100
    before = snapshot(flat_world)
    result = narr("event", text, expect=12)
    assert "narr: error: the event's content is 2 KB; the rules read at most 2 KB at once" in result.stderr
    assert "pass --large to read it whole" in result.stderr
    assert [f["content"] for f in narr.json("failed")["items"]] == [text]  # kept, as any failure
    narr("failed", "drop", "1")
    assert snapshot(flat_world) == before
    rec = narr.json("event", "--large", "--dry-run", text)
    assert any(d["target"] == "lin-yuan" for d in rec["diffusions"])


def test_audit_counts_sentences_as_the_rules_read_them(flat_world: Path) -> None:
    from helpers import CLI

    rep = CLI(flat_world).json("audit", "-", input="If Dr. Mo goes to the gate, Lin Yuan walks to "
                                                   "the ferry at 6 p.m. sharp. Then he waits.")
    assert rep["sentences"] == 2


def test_without_a_chinese_dictionary_names_match_as_written(root: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.diffusers import zhwords

    monkeypatch.setattr(zhwords, "_load", lambda: None)
    zhwords.dictionary.cache_clear()
    try:
        assert moved(root, "小白去了杂货铺。") == {"bai": "store"}
        assert moved(root, "一筐小白菜被送进了杂货铺。") == {"bai": "store"}  # the old behaviour
    finally:
        zhwords.dictionary.cache_clear()


def test_the_gap_between_the_parts_of_a_pattern_counts_the_words_in_it(root: Path) -> None:
    """A word found once stands for its whole length: "walks" repeated between a name and
    "to the church" does not bring them within one clause's reach."""
    assert moved(root, "Tom " + "walks on and on " * 8 + "to the church") == {}
    assert moved(root, "Tom walks on and on to the church") == {"tom": "church"}


def test_a_world_cue_term_is_bounded(tmp_path: Path) -> None:
    """Cue words are a stranger's data too: a term with many wildcards is refused, not run."""
    from narrative.errors import InvalidWorldError

    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "cues.toml").write_text(
        '[cues.reported]\nforward = ["{x} {x} {x} {x} said"]\n', "utf-8")
    with pytest.raises(InvalidWorldError, match=r"more than 2 '\{x\}'"):
        RulesDiffuser(tmp_path).propose(DictWorld(town(), root=tmp_path),
                                        EventRequest(content="Tom went to the church."))
