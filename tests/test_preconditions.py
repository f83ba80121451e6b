"""What the world contradicts is never written silently: a diffuser's change whose precondition
fails is held back with the fact and the one command (or operation argument) that applies it;
the user's own changes are written with a typed warning; a relation of a node to itself is never
written; two changes to one field in one event are refused, naming both. The same through the
CLI, the library, HTTP and MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, read_node, snapshot

EXPLICIT = ["--diffuser", "explicit"]


def written(rec: dict[str, Any]) -> set[tuple[str, str]]:
    """The fields an event changes, the sample world's bell (which ends with any event) aside."""
    return {(d["target"], d["field"]) for d in rec["diffusions"] if d["target"] != "temple-bell"}


def held_reasons(rec: dict[str, Any]) -> list[str]:
    return [h["reason"] for h in rec["proposal"]["held"]]


# --- a diffuser's change the world contradicts is held back, in both languages ------------------

@pytest.mark.parametrize("text", ["Su Qing gives Old Zhou the jade token.", "苏晴把玉令牌交给了老周。"])
def test_a_give_by_one_who_does_not_hold_the_item_is_held_back(flat_world: Path, text: str) -> None:
    narr = CLI(flat_world)
    rec = narr.json("event", "--dry-run", text)
    assert written(rec) == set()
    [held] = rec["proposal"]["held"]
    assert held["reason"] == ("the world contradicts it: su-qing /relations/holds/jade-token is absent, "
                              "but must be there (giver.relations.holds.{item}); jade-token is elder-mo's")
    assert ("old-zhou", "/relations/holds/jade-token") in {
        (op.get("source"), f"/relations/{op.get('type')}/{op.get('target')}") for op in held["ops"]}
    assert held["apply"] == {"operation": "event", "arguments": {"content": text, "accept": [1]}}
    # applied anyway, the writer's word wins
    done = narr.json("event", "--accept", "1", text)
    assert ("old-zhou", "/relations/holds/jade-token") in written(done)
    assert read_node(flat_world, "jade-token")["state"]["holder"] == "old-zhou"


@pytest.mark.parametrize("text", ["Su Qing tells Lin Yuan the ring's secret.",
                                  "苏晴把黑戒的来历告诉了林远。"])
def test_a_secret_told_by_one_who_does_not_know_it_is_held_back(flat_world: Path, text: str) -> None:
    before = snapshot(flat_world)
    rec = CLI(flat_world).json("event", text)
    assert written(rec) == set()
    assert held_reasons(rec) == ["the world contradicts it: su-qing /relations/knows/ring-origin is "
                                 "absent, but must be there (teller.relations.knows.{secret})"]
    # recorded: the held change is applied by a new event of exactly those changes
    [held] = rec["proposal"]["held"]
    assert held["apply"]["arguments"]["diffuser"] == "explicit"
    assert {op["source"] for op in held["apply"]["arguments"]["ops"]} == {"lin-yuan", "su-qing"}
    assert "knows" not in read_node(flat_world, "lin-yuan")["relations"]
    assert snapshot(flat_world) != before  # the event itself is recorded, with no change of its own


@pytest.mark.parametrize("text", ["Elder Mo walks to the ferry.", "莫长老来到了渡口。"])
def test_the_dead_do_not_act(flat_world: Path, text: str) -> None:
    narr = CLI(flat_world)
    narr("event", "Elder Mo dies in his sleep", *EXPLICIT, "--set", "elder-mo.state.health=dead")
    rec = narr.json("event", "--dry-run", text)
    assert written(rec) == set()
    assert held_reasons(rec) == ['the world contradicts it: elder-mo /state/health is "dead", but must '
                                 'not be "dead" (who.state.health != dead)']


def test_the_check_sees_what_the_words_before_did(flat_world: Path) -> None:
    """Earlier changes of the same event count: the ring passes from hand to hand."""
    narr = CLI(flat_world)
    chain = narr.json("event", "--dry-run",
                      "Lin Yuan gives the black ring to Su Qing, and Su Qing gives it to Old Zhou.")
    assert read_node(flat_world, "black-ring")["state"]["holder"] == "lin-yuan"
    assert {d["new_value"] for d in chain["diffusions"] if d["field"] == "/state/holder"} == {"old-zhou"}
    assert chain["proposal"]["held"] == []
    backwards = narr.json("event", "--dry-run",
                          "Su Qing gives the black ring to Old Zhou, and Lin Yuan gives it to Su Qing.")
    assert {d["new_value"] for d in backwards["diffusions"] if d["field"] == "/state/holder"} == {"su-qing"}
    assert len(backwards["proposal"]["held"]) == 1


def test_an_item_the_event_ended_cannot_be_given(flat_world: Path) -> None:
    rec = CLI(flat_world).json("event", "--dry-run",
                               "Lin Yuan burns the letter, then gives it to Su Qing.")
    assert ("sister-letter", "") in written(rec)
    assert held_reasons(rec) == ["the world contradicts it: sister-letter ended earlier in this event, "
                                 "so it cannot be item here"]


# --- the user's own changes: written, with a typed warning -----------------------------------------

def test_an_explicit_change_the_world_contradicts_is_written_with_a_typed_warning(flat_world: Path) -> None:
    narr = CLI(flat_world)
    result = narr("event", "Su Qing pockets the token", *EXPLICIT, "--relate", "su-qing:holds:jade-token",
                  "--set", "jade-token.state.holder=su-qing")
    assert ("narr: warning: relate su-qing:holds:jade-token: the world contradicts it: elder-mo "
            "/relations/holds/jade-token is {}, but must not be there: jade-token is elder-mo's, and "
            "this event does not take it from elder-mo") in result.stderr.splitlines()
    assert "jade-token" in read_node(flat_world, "su-qing")["relations"]["holds"]
    # the world now names su-qing as its holder: one who takes it from her contradicts nothing
    given = narr.json("event", "--dry-run", "She hands it over", *EXPLICIT,
                      "--relate", "old-zhou:holds:jade-token", "--unrelate", "su-qing:holds:jade-token",
                      "--set", "jade-token.state.holder=old-zhou")
    assert given["contradicted"] == [] and given["warnings"] == []
    grabbed = narr.json("event", "--dry-run", "He grabs it", *EXPLICIT,
                        "--relate", "old-zhou:holds:jade-token")
    assert [(c["node"], c["field"]) for c in grabbed["contradicted"]] == [
        ("su-qing", "/relations/holds/jade-token")]


def test_the_dead_acting_in_explicit_changes_is_a_typed_warning(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Elder Mo dies", *EXPLICIT, "--set", "elder-mo.state.health=dead")
    rec = narr.json("event", "Elder Mo speaks", *EXPLICIT, "--relate", "elder-mo:trusts:su-qing",
                    "--set", "elder-mo.state.location=ferry", "--unrelate", "elder-mo:holds:jade-token")
    assert rec["contradicted"] == [{
        "kind": "contradicted", "where": "op 2 (relate)", "change": "relate elder-mo:trusts:su-qing",
        "node": "elder-mo", "field": "/state/health", "value": "dead",
        "wanted": 'must not be "dead": the dead do not act',
        "fact": 'elder-mo /state/health is "dead", but must not be "dead": the dead do not act'}]
    assert "su-qing" in read_node(flat_world, "elder-mo")["relations"]["trusts"]  # written all the same
    # the body is carried, and what the dead held falls from them: no warning for either


def test_a_death_and_its_enmity_in_one_event_is_no_contradiction(flat_world: Path) -> None:
    rec = CLI(flat_world).json("event", "Su Qing kills Elder Mo", *EXPLICIT, "--dry-run",
                               "--set", "elder-mo.state.health=dead",
                               "--relate", "elder-mo:enemy-of:su-qing")
    assert rec["contradicted"] == [] and rec["warnings"] == []


# --- never written, refused ------------------------------------------------------------------------

def test_a_relation_of_a_node_to_itself_is_never_written(flat_world: Path) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    result = narr("event", "She trusts only herself", *EXPLICIT, "--relate", "su-qing:trusts:su-qing",
                  expect=12)
    assert result.stderr.splitlines()[0] == (
        "narr: error: the event's changes are not valid: op 1 (relate): su-qing trusts su-qing: a node "
        "is never related to itself (a relation joins two nodes)")
    assert snapshot(flat_world) == before
    narr("failed", "drop", "1")
    # the rules never make one either: "Qing" is Su Qing too
    rec = narr.json("event", "--dry-run", "Su Qing trusts Qing.")
    assert written(rec) == set() and rec["proposal"]["held"] == []
    assert any("would relate su-qing to itself" in n for n in rec["proposal"]["notes"])


def test_a_diffusers_relation_to_itself_is_refused(flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.diffusers import base
    from narrative.diffusers.base import Proposal
    from narrative.model import Delta, RelateOp, SetOp

    class Scripted:
        name = "scripted"

        def propose(self, view: Any, request: Any) -> Proposal:
            return Proposal(delta=Delta(ops=[RelateOp(source="lin-yuan", type="trusts", target="lin-yuan"),
                                             SetOp(target="lin-yuan", field="/state/mood", value="calm")]))

    monkeypatch.setitem(base._REGISTRY, "scripted", lambda wr: Scripted())
    rec = CLI(flat_world).json("event", "He trusts himself", "--diffuser", "scripted")
    assert [r["reason"] for r in rec["proposal"]["refused"]] == [
        "lin-yuan trusts lin-yuan: a node is never related to itself (a relation joins two nodes)"]
    assert written(rec) == {("lin-yuan", "/state/mood")}
    assert "trusts" not in read_node(flat_world, "lin-yuan")["relations"]


@pytest.mark.parametrize("flags, first", [
    (["--set", "lin-yuan.state.mood=calm", "--set", "lin-yuan.state.mood=angry"],
     "op 1 (set lin-yuan state.mood) and op 2 (set lin-yuan state.mood) both change lin-yuan "
     "/state/mood"),
    (["--set", "lin-yuan.state.mood=calm", "--unset", "lin-yuan.state.mood"],
     "op 1 (set lin-yuan state.mood) and op 2 (unset lin-yuan state.mood) both change lin-yuan "
     "/state/mood"),
    (["--set", 'lin-yuan.state={"mood": "calm"}', "--set", "lin-yuan.state.goal=rest"],
     "op 1 (set lin-yuan state) and op 2 (set lin-yuan state.goal) both change lin-yuan /state"),
    (["--relate", "lin-yuan:trusts:su-qing", "--unrelate", "lin-yuan:trusts:su-qing"],
     "op 1 (relate lin-yuan:trusts:su-qing) and op 2 (unrelate lin-yuan:trusts:su-qing) both change "
     "lin-yuan /relations/trusts/su-qing"),
])
def test_two_changes_to_one_field_are_refused_naming_both(flat_world: Path, flags: list[str],
                                                          first: str) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    result = narr("event", "Lin Yuan changes his mind", *EXPLICIT, *flags, expect=12)
    assert result.stderr.splitlines()[0] == (
        f"narr: error: the event's changes are not valid: {first}: an event changes a field once; "
        "keep the change you mean")
    narr("failed", "drop", "1")
    assert snapshot(flat_world) == before


def test_two_appends_to_one_list_are_two_changes(flat_world: Path) -> None:
    rec = CLI(flat_world).json("event", "Names", *EXPLICIT, "--dry-run",
                               "--set", "lin-yuan/aliases/-=Little Lin",
                               "--set", "lin-yuan/aliases/-=Ah Yuan")
    assert [d["new_value"] for d in rec["diffusions"] if d["target"] == "lin-yuan"] == [
        ["林远", "Yuan", "the outer disciple", "Little Lin", "Ah Yuan"]]


# --- the same through the library, HTTP and MCP ------------------------------------------------------

def test_the_library_holds_back_and_accepts(flat_world: Path) -> None:
    import narrative as narr
    from narrative.errors import InvalidInputError
    from narrative.model import RelateOp, SetOp

    world = narr.open_world(flat_world)
    held = narr.event(world, "Su Qing gives Old Zhou the jade token.", diffuser="rules", dry_run=True)
    assert held.proposal is not None and [h["n"] for h in held.proposal.held] == [1]
    with pytest.raises(InvalidInputError, match="both change lin-yuan /state/mood"):
        narr.event(world, "Mood", SetOp(target="lin-yuan", field="/state/mood", value="a"),
                   SetOp(target="lin-yuan", field="/state/mood", value="b"), diffuser="explicit")
    done = narr.event(world, "Old Zhou takes it", RelateOp(source="old-zhou", type="holds",
                                                            target="jade-token"), diffuser="explicit")
    assert [c.node for c in done.contradicted] == ["elder-mo"]


def test_http_holds_back_accepts_warns_and_refuses(flat_world: Path) -> None:
    http = HTTP(flat_world)
    text = "Su Qing gives Old Zhou the jade token."
    dry = http.post("/api/events", json={"content": text, "diffuser": "rules", "dry_run": True}).json()
    [held] = dry["proposal"]["held"]
    assert held["apply"] == {"operation": "event", "arguments": {"content": text, "accept": [1]}}
    done = http.post("/api/events", json={**held["apply"]["arguments"], "diffuser": "rules"})
    assert done.status_code == 200, done.text
    assert read_node(flat_world, "jade-token")["state"]["holder"] == "old-zhou"
    warned = http.post("/api/events", json={"content": "Lin Yuan takes it back", "diffuser": "explicit",
                                            "ops": [{"op": "relate", "source": "lin-yuan", "type": "holds",
                                                     "target": "jade-token"}]}).json()
    assert [(c["kind"], c["node"]) for c in warned["contradicted"]] == [("contradicted", "old-zhou")]
    before = snapshot(flat_world)
    twice = http.post("/api/events", json={"content": "Mood", "diffuser": "explicit", "ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "a"},
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "b"}]})
    assert twice.status_code == 400 and "both change lin-yuan /state/mood" in twice.json()["error"]
    itself = http.post("/api/events", json={"content": "Alone", "diffuser": "explicit", "ops": [
        {"op": "relate", "source": "su-qing", "type": "trusts", "target": "su-qing"}]})
    assert itself.status_code == 400 and "never related to itself" in itself.json()["error"]
    assert snapshot(flat_world) == before


def test_mcp_holds_back_accepts_warns_and_refuses(flat_world: Path) -> None:
    pytest.importorskip("mcp")
    from test_mcp import answer, run

    text = "苏晴把玉令牌交给了老周。"
    same = [{"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": v} for v in "ab"]

    async def script(client: Any) -> Any:
        dry = answer(await client.call_tool("event", {"content": text, "diffuser": "rules",
                                                      "dry_run": True}))
        done = answer(await client.call_tool("event", {**dry["proposal"]["held"][0]["apply"]["arguments"],
                                                       "diffuser": "rules"}))
        warned = answer(await client.call_tool("event", {
            "content": "林远拿走了令牌", "diffuser": "explicit",
            "ops": [{"op": "relate", "source": "lin-yuan", "type": "holds", "target": "jade-token"}]}))
        twice = await client.call_tool("event", {"content": "Mood", "diffuser": "explicit", "ops": same})
        return dry, done, warned, twice

    dry, done, warned, twice = run(flat_world, script)
    assert dry["proposal"]["held"][0]["apply"]["arguments"] == {"content": text, "accept": [1]}
    assert ("old-zhou", "/relations/holds/jade-token") in written(done)
    assert [c["node"] for c in warned["contradicted"]] == ["old-zhou"]
    assert twice.is_error and "both change lin-yuan /state/mood" in twice.content[0].text


def test_the_same_change_twice_is_one_change_not_a_clash() -> None:
    """An import that names one edge in two notes proposes it twice: nothing clashes."""
    from narrative.delta.preconditions import same_field
    from narrative.model import RelateOp, SetOp

    twice = [RelateOp(source="a", type="based-at", target="b"),
             RelateOp(source="a", type="based-at", target="b")]
    assert same_field(twice) == []
    clash = [SetOp(target="a", field="/state/mood", value="calm"),
             SetOp(target="a", field="/state/mood", value="angry")]
    assert len(same_field(clash)) == 1
