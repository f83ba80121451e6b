"""``narr brief --pov X`` keeps to what X could know, and never names a secret X does not know.

The property: for random worlds and histories (people moving between places, learning,
telling and revealing secrets), no string that names a secret X does not know (its id,
name, aliases, summary, the words of an event that revealed it) appears in X's brief,
as text, Markdown or JSON. Then the exact brief of a secret learned off screen and on screen.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI
from hypothesis import given, settings
from hypothesis import strategies as st

PEOPLE = ["Ada Lane", "Tom Reed", "Mayor Hale"]
PLACES = ["town hall", "saloon", "old mill"]
SECRETS = [  # words found nowhere else in the world or the story
    {"name": "the Vermilion Ledger", "alias": "the ledger", "summary": "Hale skims the grain tax"},
    {"name": "the Widow's Letter", "alias": "Rowe's note", "summary": "Rowe names her true heir"},
]


def _id(name: str) -> str:
    return name.lower().replace("'", "-").replace(" ", "-")


def _town(root: Path) -> CLI:
    """A world of PEOPLE and PLACES, nothing yet recorded."""
    CLI(root.parent)("init", str(root), "--rules", "en")
    narr = CLI(root)
    for name in PEOPLE:
        narr("new", "character", name)
    for name in PLACES:
        narr("new", "background", name, "--kind", "place")
    return narr


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pov") / "w"
    narr = _town(root)
    for s in SECRETS:
        narr("new", "background", s["name"], "--kind", "secret", "--alias", s["alias"],
             "--summary", s["summary"])
    narr("event", "The day begins.")
    return root


person = st.sampled_from(PEOPLE)
secret = st.sampled_from([s["name"] for s in SECRETS])
step = st.one_of(
    st.tuples(st.just("go"), person, st.sampled_from(PLACES)),
    st.tuples(st.just("learn"), person, secret),
    st.tuples(st.just("tell"), person, person, secret),
    st.tuples(st.just("reveal"), secret),
)


def _sentence(s: tuple[Any, ...]) -> str:
    if s[0] == "go":
        return f"{s[1]} walks to the {s[2]}."
    if s[0] == "learn":
        return f"{s[1]} learns {s[2]}."
    if s[0] == "tell":
        return f"{s[1]} tells {s[2]} {s[3]}."
    return f"{s[1]} is revealed."


def forbidden(narr: CLI, pov: str) -> list[str]:
    """What names the secrets ``pov`` does not know, worked out from the world and the log alone."""
    me = json.loads(narr("get", pov).stdout)
    out: list[str] = []
    records = narr.json("log")["items"]
    for s in SECRETS:
        sid = _id(s["name"])
        node = json.loads(narr("get", sid).stdout)
        if sid in (me.get("relations") or {}).get("knows", {}) or node["state"].get("known_widely"):
            continue
        out += [sid, s["name"], s["alias"], s["summary"]]
        for rec in records:
            if any(d["target"] == sid or d["field"] == f"/relations/knows/{sid}"
                   for d in rec.get("diffusions", [])):
                out.append(rec["content"])
    return out


@settings(max_examples=20)
@given(steps=st.lists(step, min_size=1, max_size=6), who=person)
def test_a_point_of_view_never_names_a_secret_it_does_not_know(
        base: Path, tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]],
        who: str) -> None:
    root = tmp_path_factory.mktemp("story") / "w"
    shutil.copytree(base, root)
    narr = CLI(root)
    for s in steps:
        narr("event", _sentence(s))
    pov = _id(who)
    outputs = [narr("brief", "--pov", pov, "--budget", "100000").stdout,
               narr("brief", "--pov", pov, "--budget", "100000", "--format", "md").stdout,
               narr("brief", "--pov", pov, "--budget", "100000", "--json").stdout]
    outputs[2] = json.dumps(json.loads(outputs[2]), ensure_ascii=False)
    for text in forbidden(narr, pov):
        for out in outputs:
            assert text.casefold() not in out.casefold(), (text, out)


@pytest.fixture
def town(tmp_path: Path) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", "en")
    narr = CLI(root)
    for name in PEOPLE:
        narr("new", "character", name)
    for name in PLACES[:2]:
        narr("new", "background", name, "--kind", "place")
    narr("new", "background", "the Mayor's affair", "--kind", "secret",
         "--summary", "Hale meets the widow Rowe at night")
    narr("event", "Mayor Hale walks to the town hall.", "--relate", "Mayor Hale:knows:the Mayor's affair")
    narr("event", "Tom Reed walks to the town hall.")
    narr("event", "Ada Lane walks to the saloon.")
    return narr


def test_a_secret_learned_off_screen(town: CLI) -> None:
    narr = town
    narr("event", "Ada Lane learns the Mayor's affair.")  # at the saloon: Tom is at the town hall
    narr("event", "Ada Lane walks to the town hall.")
    head = narr.json("log", "-n", "1")["items"][0]["commit"][:10]
    assert narr("brief", "--pov", "Tom Reed").stdout.splitlines() == [
        f"Story at {head} Ada Lane walks to the town hall.; point of view: tom-reed",
        "",
        "focus:",
        "  Ada Lane (ada-lane, character). state: location=town-hall.",
        "    (changed by the recent event 'Ada Lane walks to the town hall.')",
        "  Tom Reed (tom-reed, character). state: location=town-hall.",
        "    (the point of view)",
        "  Mayor Hale (mayor-hale, character). state: location=town-hall.",
        "    (at town hall, where tom-reed is)",
        "",
        "events:",
        "  Ada Lane walks to the town hall.",
        "    (one of the last events tom-reed knows of)",
        "  Tom Reed walks to the town hall.",
        "    (one of the last events tom-reed knows of)",
        "",
        "continuity:",
        "  Ada Lane is at town hall",
        "    (continuity: where everyone is)",
        "  Tom Reed is at town hall",
        "    (continuity: where everyone is)",
        "  Mayor Hale is at town hall",
        "    (continuity: where everyone is)",
        "",
        "neighbourhood:",
        "  town hall (town-hall, background/place).",
        "    (1 relation from the focus)",
        "",
        "356 of 4000 characters",
    ]
    # the mayor knows his secret, but not that Ada learned it where he was not
    mayor = narr.json("brief", "--pov", "Mayor Hale", "--budget", "100000")
    facts = [i["text"] for i in mayor["items"] if i["section"] == "continuity"]
    assert "Mayor Hale knows the Mayor's affair" in facts
    assert not any("Ada Lane knows" in f for f in facts)
    assert "Ada Lane learns the Mayor's affair." not in json.dumps(mayor)
    # the writer's own brief has it all
    assert "Ada Lane knows the Mayor's affair" in narr("brief", "--focus", "Ada Lane").stdout


def test_a_secret_learned_on_screen(town: CLI) -> None:
    narr = town
    narr("event", "Ada Lane walks to the town hall.")
    narr("event", "Ada Lane learns the Mayor's affair.")  # Tom stands beside her
    log = narr.json("log", "-n", "2")["items"]
    learnt, walked = log[0]["commit"][:10], log[1]["commit"][:10]
    tom = narr("brief", "--pov", "Tom Reed", "--format", "md").stdout
    assert tom.splitlines()[:2] == [
        "# Brief: where the story stands", "",
    ]
    assert tom.splitlines()[2] == (
        f"Story at {learnt} (words withheld); point of view: tom-reed; focus: ada-lane, "
        "tom-reed, mayor-hale.")
    events = [line for line in tom.splitlines() if line.startswith("- ") and "knows of" in line]
    assert events == [
        f"- {learnt} (words withheld): nothing tom-reed could see changed *(one of the last events "
        "tom-reed knows of: its words would tell tom-reed what tom-reed does not know)*",
        "- Ada Lane walks to the town hall. *(one of the last events tom-reed knows of)*",
        "- Tom Reed walks to the town hall. *(one of the last events tom-reed knows of)*",
    ]
    assert "affair" not in tom.casefold() and "rowe" not in tom.casefold()
    # the mayor saw her learn it: he knows she knows
    mayor = narr.json("brief", "--pov", "Mayor Hale", "--budget", "100000")
    assert "Ada Lane knows the Mayor's affair" in [i["text"] for i in mayor["items"]]
    # then Ada tells Tom: now he knows the secret, and that she knows it
    narr("event", "Ada Lane tells Tom Reed the Mayor's affair.")
    told = narr.json("brief", "--pov", "Tom Reed", "--budget", "100000")
    facts = [i["text"] for i in told["items"] if i["section"] == "continuity"]
    assert {"Tom Reed knows the Mayor's affair", "Ada Lane knows the Mayor's affair"} <= set(facts)
    assert not any(f.startswith("Mayor Hale knows") for f in facts)  # he never saw the mayor learn it
    assert told["head"]["content"] == "Ada Lane tells Tom Reed the Mayor's affair."
    assert f"{walked} " not in json.dumps(told)  # no event is given by its commit alone now


# --- what a point of view witnesses, and how much of others it sees ----------------------------
#
# The user's story: Lin Yuan goes to the ferry; at the gate Su Qing swears to expose him and
# walks on to the Library Pavilion with a plan. None of it reaches him.

def _lin_yuan_at_the_ferry(world: Path) -> CLI:
    narr = CLI(world)
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "At the gate, Su Qing swears she will expose Lin Yuan.")
    narr("event", "Su Qing walks to the Library Pavilion", "--set",
         "su-qing.state.plan=search Lin Yuan's room")
    return narr


def _items(b: dict[str, Any], section: str | None = None) -> list[str]:
    return [i["text"] for i in b["items"] if section is None or i["section"] == section]


def _line(b: dict[str, Any], node: str) -> str:
    lines = [i["text"] for i in b["items"] if i.get("node") == node and i["section"] in (
        "focus", "neighbourhood", "always in view")]
    assert len(lines) == 1, (node, lines)
    return lines[0]


def test_being_named_is_not_witnessing(flat_world: Path) -> None:
    narr = _lin_yuan_at_the_ferry(flat_world)
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    told = json.dumps(b, ensure_ascii=False)
    assert "swears" not in told and "expose" not in told
    assert [i["event"]["content"] for i in b["items"] if "event" in i] == [
        "Lin Yuan walks to the ferry"]
    # Su Qing stood at the gate: whoever stood there with her saw her swear it
    assert "swears" not in json.dumps(narr.json("brief", "--pov", "elder-mo", "--budget", "100000"))
    narr("event", "Elder Mo walks to the gate", "--set", "elder-mo.state.location=qingyun-gate")
    narr("event", "Su Qing walks to the gate", "--set", "su-qing.state.location=qingyun-gate")
    narr("event", "At the gate, Su Qing swears again she will expose Lin Yuan.")
    mo = narr.json("brief", "--pov", "elder-mo", "--budget", "100000")
    assert "At the gate, Su Qing swears again she will expose Lin Yuan." in _items(mo, "events")
    lin = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    assert "swears" not in json.dumps(lin, ensure_ascii=False)


def test_knowing_someone_is_not_seeing_where_they_are(flat_world: Path) -> None:
    narr = _lin_yuan_at_the_ferry(flat_world)
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    told = json.dumps(b, ensure_ascii=False)
    assert "Library Pavilion" not in told and "search Lin Yuan" not in told
    assert not any(t.startswith("Su Qing is at") for t in _items(b))
    su = _line(b, "su-qing")  # he knows her: who she is, not where she is or what she plans
    assert su.startswith("Su Qing (su-qing, character/person): Inner disciple")
    assert "state:" not in su and "watchful" not in su
    assert "distrusts Su Qing" in _line(b, "lin-yuan")
    assert not any(t.startswith("Lin Xue is at") for t in _items(b))  # nor where his sister is


def test_a_bystander_sees_no_inner_state(flat_world: Path) -> None:
    narr = _lin_yuan_at_the_ferry(flat_world)
    narr("event", "Su Qing comes down to the ferry", "--set", "su-qing.state.location=ferry")
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    zhou, su, me = _line(b, "old-zhou"), _line(b, "su-qing"), _line(b, "lin-yuan")
    assert "location=ferry" in zhou and "health=unhurt" in zhou and "tired" not in zhou
    assert "location=ferry" in su and "plan" not in su and "watchful" not in su
    assert "goal" not in su and "find who is stealing" not in json.dumps(b)
    assert "Su Qing is at Cold River Ferry" in _items(b, "continuity")
    assert "mood=impatient" in _line(b, "ferry-crowd")  # a crowd's mood is there for all to see
    # his own inner life is his to know
    assert "goal=find Lin Xue" in me and "mood=anxious" in me
    # she sees his mood no more than he sees hers
    theirs = narr.json("brief", "--pov", "su-qing", "--budget", "100000")
    assert "anxious" not in _line(theirs, "lin-yuan") and "plan=search" in _line(theirs, "su-qing")


def test_what_a_world_calls_inner_or_outward(flat_world: Path) -> None:
    narr = _lin_yuan_at_the_ferry(flat_world)
    with (flat_world / "narr.toml").open("a", encoding="utf-8") as f:
        f.write('\n[pov]\ninner = ["state.health", "relations.works-at", "crowd:state.mood"]\n'
                'outward = ["state.mood", "person:state.goal"]\nhidden = ["state.buried"]\n')
    narr("event", "Evening", "--set", "paper-lantern.state.buried=true")
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    zhou = _line(b, "old-zhou")
    assert "mood=tired" in zhou and "health" not in zhou and "works-at" not in zhou
    assert "Paper Lantern" not in json.dumps(b)
    assert "impatient" not in _line(b, "ferry-crowd") and "size=large" in _line(b, "ferry-crowd")
    narr("event", "Su Qing comes down to the ferry", "--set", "su-qing.state.location=ferry")
    su = _line(narr.json("brief", "--pov", "lin-yuan", "--budget", "100000"), "su-qing")
    assert "goal=find who is stealing" in su and "plan=" not in su  # a person's goal shows here
    text = (flat_world / "narr.toml").read_text("utf-8")
    (flat_world / "narr.toml").write_text(text.replace('["state.health", ', '["health", '), "utf-8")
    err = narr("brief", "--pov", "lin-yuan", expect=13).stderr  # one clear message, naming the entry
    assert "narr.toml" in err and "pov.inner" in err and "'health'" in err
    (flat_world / "narr.toml").write_text(text.replace('["state.health", ', '[":state.health", '), "utf-8")
    assert "':state.health'" in narr("brief", "--pov", "lin-yuan", expect=13).stderr


def test_a_hidden_thing_is_not_at_the_place(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("new", "item", "Silver Purse", "--summary", "Old Zhou's savings")
    narr("new", "item", "River Chest", "--summary", "A chest nailed under the jetty")
    narr("event", "Old Zhou hides his purse under the floorboards", "--set",
         'silver-purse.state.location=ferry', "--set", 'silver-purse.state.hidden=under the floorboards',
         "--set", "river-chest.state.location=ferry", "--set", "river-chest.state.hidden=true")
    narr("event", "Old Zhou puts the lantern in the chest", "--relate", "river-chest:holds:paper-lantern",
         "--unrelate", "old-zhou:holds:paper-lantern", "--set", "paper-lantern.state.holder=river-chest")
    narr("event", "Lin Yuan walks to the ferry")
    lin = json.dumps(narr.json("brief", "--pov", "lin-yuan", "--budget", "100000"), ensure_ascii=False)
    assert "Silver Purse" not in lin and "River Chest" not in lin and "Paper Lantern" not in lin
    # Old Zhou hid them: he saw it done (and the flag itself is not something he wears)
    zhou = narr.json("brief", "--pov", "old-zhou", "--budget", "100000")
    assert "Silver Purse" in json.dumps(zhou) and "River Chest" in json.dumps(zhou)
    # the writer's own brief has them where they are
    assert "Silver Purse" in json.dumps(narr.json("brief", "--focus", "ferry", "--budget", "100000"))


# --- the property: a pov brief holds only what its character witnessed, and all of it ----------

@pytest.fixture(scope="module")
def village(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("village") / "w"
    narr = _town(root)
    narr("new", "background", SECRETS[0]["name"], "--kind", "secret", "--alias", SECRETS[0]["alias"])
    narr("event", "The day begins.", *(a for i, p in enumerate(PEOPLE) for a in (
        "--set", f"{_id(p)}.state.location={_id(PLACES[i % 2])}")), "--diffuser", "explicit")
    return root


PLANS = ["burn the mill", "marry for money", "leave at dawn"]
deed = st.one_of(
    st.tuples(st.just("go"), person, st.sampled_from(PLACES)),
    st.tuples(st.just("plan"), person, st.sampled_from(PLANS)),
    st.tuples(st.just("swear"), person, person),  # words only: the first name is who acts
    st.tuples(st.just("learn"), person, st.just("")),
)
LEDGER = _id(SECRETS[0]["name"])


def _told(narr: CLI, deeds: list[tuple[str, str, str]]) -> list[tuple[str, str, set[str]]]:
    """Tell the deeds; for each, its words, its actor and who witnessed it, worked out from
    where everyone stood before and after (the test's own account, not narr's)."""
    where = {_id(p): _id(PLACES[i % 2]) for i, p in enumerate(PEOPLE)}
    out = []
    for n, (what, who, arg) in enumerate(deeds):
        actor = _id(who)
        before = dict(where)
        if what == "go":
            words, flags = f"{who} walks to the {arg} ({n}).", ["--set", f"{actor}.state.location={_id(arg)}"]
            where[actor] = _id(arg)
        elif what == "plan":
            words, flags = f"{who} broods ({n}).", ["--set", f"{actor}.state.plan={arg}"]
        elif what == "learn":
            words = f"{who} learns {SECRETS[0]['alias']} ({n})."
            flags = ["--relate", f"{actor}:knows:{LEDGER}"]
        else:
            words, flags = f"{who} swears to ruin {arg} ({n}).", []
        narr("event", words, *flags, "--diffuser", "explicit")
        there = {before[actor], where[actor]}
        seen = {p for p in where if p == actor or {before[p], where[p]} & there}
        out.append((words, actor, seen))
    return out


@settings(max_examples=40, deadline=None)
@given(deeds=st.lists(deed, min_size=1, max_size=6), who=person)
def test_a_point_of_view_holds_what_it_witnessed_and_no_more(
        village: Path, tmp_path_factory: pytest.TempPathFactory,
        deeds: list[tuple[str, str, str]], who: str) -> None:
    root = tmp_path_factory.mktemp("story") / "w"
    shutil.copytree(village, root)
    narr = CLI(root)
    told = _told(narr, deeds)
    pov = _id(who)
    b = narr.json("brief", "--pov", pov, "--budget", "100000")
    text = json.dumps(b, ensure_ascii=False)
    commit = {e["content"]: e["commit"] for e in narr.json("log")["items"]}
    witnessed = ["The day begins.", *(words for words, _, seen in told if pov in seen)]
    shown = [i["event"]["commit"] for i in b["items"] if "event" in i]
    # the last five it witnessed, newest first (those naming a secret it does not know by
    # what it could see, without their words)
    assert shown == [commit[w] for w in reversed(witnessed)][:5]
    for words, _, seen in told:
        if pov not in seen:
            assert words not in text
    knows = any(what == "learn" and _id(who_) == pov for what, who_, _ in deeds)
    assert (SECRETS[0]["name"] in text) is knows  # what it knows, and only that
    world = {p: json.loads(narr("get", p).stdout) for p in map(_id, PEOPLE)}
    here = world[pov]["state"]["location"]
    me = _line(b, pov)
    for key, value in world[pov]["state"].items():  # its own state, all of it
        assert f"{key}={value}" in me
    for other, node in world.items():
        plan = node["state"].get("plan")
        if other != pov and plan and plan != world[pov]["state"].get("plan"):
            assert plan not in text  # nobody's plan but its own
        if other != pov and node["state"]["location"] == here:
            assert f"location={here}" in _line(b, other)  # those beside it, where they stand
            assert f"{node['name']} is at " in " ".join(_items(b, "continuity"))
        elif other != pov:
            assert f"{node['name']} is at " not in text


def test_the_brief_operation_keeps_the_same_point_of_view(flat_world: Path) -> None:
    import narrative as narr_lib

    narr = _lin_yuan_at_the_ferry(flat_world)
    cli = narr.json("brief", "--pov", "Lin Yuan", "--budget", "100000")
    op = narr_lib.operation("brief")
    with narr_lib.open_world(flat_world) as world:
        answer = op.call(world, op.parse({"pov": "lin-yuan", "budget": 100000}))
    assert answer == cli
    assert "swears" not in json.dumps(answer) and "search Lin Yuan" not in json.dumps(answer)


def test_the_manual_lists_the_inner_fields_narr_keeps() -> None:
    from narrative.engine.pov import INNER

    text = (Path(__file__).resolve().parent.parent / "docs" / "asking.md").read_text("utf-8")
    para = text[text.index("The inner fields are"):text.index("[pov]\ninner")]
    words = {w.strip("`.,;:") for w in para.replace("\n", " ").split()}
    for entry in INNER:
        assert entry.split(".", 1)[1] in words, entry


def test_a_lorebook_from_a_point_of_view_keeps_to_the_same_sight(flat_world: Path) -> None:
    narr = _lin_yuan_at_the_ferry(flat_world)
    book = json.loads(narr("export", "lorebook", "--pov", "lin-yuan").stdout)
    by_id = {e["extensions"]["narr"]["node"]["id"]: e for e in book["entries"].values()}
    told = json.dumps(book, ensure_ascii=False)
    assert "search Lin Yuan" not in told and "watchful" not in told and "tired" not in told
    assert "location" not in by_id["su-qing"]["content"]
    assert "location: Cold River Ferry" in by_id["old-zhou"]["content"]
    assert "mood: anxious" in by_id["lin-yuan"]["content"]


def test_words_that_tell_an_inner_value_are_withheld(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Su Qing comes down to the ferry", "--set", "su-qing.state.location=ferry")
    narr("event", "Su Qing, beside him, resolves to search Lin Yuan's room", "--set",
         "su-qing.state.plan=search Lin Yuan's room", "--set", "su-qing.state.cloak=grey")
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    events = _items(b, "events")
    assert "Su Qing comes down to the ferry" in events  # he saw her come
    withheld = [t for t in events if "(words withheld)" in t]
    assert len(withheld) == 1 and 'Su Qing state.cloak = "grey"' in withheld[0]
    assert "search Lin Yuan" not in json.dumps(b, ensure_ascii=False)
    narr("event", "Su Qing says nothing", "--set", "su-qing.state.doubt=no")  # "no" is not in "nothing"
    assert "Su Qing says nothing" in _items(narr.json("brief", "--pov", "lin-yuan"), "events")
    # a hand edit is shown only where the character could see it
    path = flat_world / "world/character/su-qing.json"
    node = json.loads(path.read_text("utf-8"))
    node["state"]["mood"] = "furious"
    node["state"]["cloak"] = "black"
    node.setdefault("relations", {}).setdefault("knows", {})["ring-origin"] = {}
    path.write_text(json.dumps(node), "utf-8")
    b = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    edits = _items(b, "hand edits")
    assert edits == ['su-qing /state/cloak: "grey" → "black"'], edits
    assert "ring-origin" not in json.dumps(b) and "furious" not in json.dumps(b)


def test_who_acts_in_words_only_took_part_wherever_they_stand(
        base: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("nowhere") / "w"
    shutil.copytree(base, root)
    narr = CLI(root)  # nobody stands anywhere: only taking part tells
    narr("event", "Tom Reed sighs at Ada Lane.", "--diffuser", "explicit")
    tom = narr.json("brief", "--pov", "Tom Reed", "--budget", "100000")
    ada = narr.json("brief", "--pov", "Ada Lane", "--budget", "100000")
    assert "Tom Reed sighs at Ada Lane." in _items(tom, "events")
    assert "sighs" not in json.dumps(ada)
