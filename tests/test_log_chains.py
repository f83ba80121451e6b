"""``narr log A..B`` and ``narr log NODE``; chains with numbers and names, dropped, replayed in
part; one time format (ISO 8601 UTC in JSON, local time in text) and short event ids."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import CLI, git

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

CONFLICT = 14
INPUT = 12
NOT_FOUND = 11
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
LOCAL = r"\d{4}-\d\d-\d\d \d\d:\d\d"


def contents(entries: list[dict[str, object]]) -> list[object]:
    return [e["content"] for e in entries]


def test_log_range_stops_where_the_left_side_reaches(narr: CLI, world: Path) -> None:
    e1 = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("event", "E3", "--set", "lin-yuan.state.mood=c")
    assert contents(narr.json("log", "HEAD~2..HEAD")["items"]) == ["E3", "E2"]
    assert contents(narr.json("log", "HEAD~2..")["items"]) == ["E3", "E2"]
    assert contents(narr.json("log", f"{e1['id']}..HEAD~1")["items"]) == ["E2"]
    assert contents(narr.json("log", "HEAD..HEAD~1")["items"]) == []
    assert contents(narr.json("log", "HEAD~3..", "-n", "1")["items"]) == ["E3"]
    assert narr("log", "HEAD~2..HEAD").stdout.splitlines()[0].endswith("E3  (1 change)")
    git_line = git(world, "log", "--first-parent", "--format=%s", "HEAD~2..HEAD").split()
    assert git_line == ["E3", "E2"]  # git agrees


def test_log_of_a_node_lists_the_events_that_touched_it(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "black-ring.state.warmth=warm")
    narr("event", "E3", "--relate", "su-qing:suspects:lin-yuan")
    narr("event", "Lin Yuan sleeps")  # names the node, changes nothing: not listed
    assert contents(narr.json("log", "lin-yuan")["items"]) == ["E3", "E1"]
    assert contents(narr.json("log", "Lin Yuan", "-n", "1")["items"]) == ["E3"]
    assert contents(narr.json("log", "--node", "black-ring")["items"]) == ["E2"]
    out = narr("log", "lin-yuan").stdout.splitlines()
    assert len(out) == 2 and out[0].endswith(" E3  (1 change)")


def test_log_of_a_hand_edited_node(narr: CLI, world: Path) -> None:
    from helpers import edit_node

    edit_node(world, "old-zhou", mood="grim")
    narr("event", "E1")
    assert contents(narr.json("log", "old-zhou")["items"]) == ["E1"]


def test_log_argument_that_is_a_revision_and_a_node_is_refused(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    git(world, "branch", "lin-yuan")
    result = narr("log", "lin-yuan", expect=INPUT)
    assert result.stderr.startswith("narr: error: 'lin-yuan' is both a revision (")
    assert "and a node (lin-yuan)" in result.stderr
    assert contents(narr.json("log", "lin-yuan^0")["items"]) == [
        "E1", narr.json("log")["items"][1]["content"]]
    assert contents(narr.json("log", "--node", "lin-yuan")["items"]) == ["E1"]
    result = narr("log", "nobody-at-all", expect=NOT_FOUND)
    assert result.stderr.startswith(
        "narr: error: 'nobody-at-all' is neither a revision nor a node of this story")


def _two_chains(narr: CLI) -> None:
    narr("event", "The rain stops.", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    narr("reset", "HEAD~2")
    narr("event", "A boat comes", "--set", "su-qing.state.mood=calm")
    narr("reset", "HEAD~1")


def test_chains_have_stable_numbers_and_readable_names(narr: CLI, world: Path) -> None:
    narr("event", "The rain stops.", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    out = narr("reset", "HEAD~2").stdout
    first = narr.json("chains")["items"]
    assert [(c["n"], c["length"], c["replayed"]) for c in first] == [(1, 2, False)]
    name = first[0]["name"]
    assert re.fullmatch(r"rain-stops-[0-9a-f]{4}", name)
    assert name == "rain-stops-" + first[0]["tip"][:4]
    assert f"the undone chain is kept as {name} (narr chains; narr replay {name})" in out
    narr("event", "A boat comes", "--set", "su-qing.state.mood=calm")
    narr("reset", "HEAD~1")
    chains = narr.json("chains")["items"]
    assert [(c["n"], c["name"][:-5]) for c in chains] == [(2, "boat-comes"), (1, "rain-stops")]
    assert chains[1]["name"] == name  # the older chain kept its number and its name
    assert ISO_UTC.match(chains[0]["abandoned_at"])
    text = narr("chains").stdout.splitlines()
    assert re.fullmatch(rf"  2  boat-comes-[0-9a-f]{{4}}  1 event\(s\), abandoned {LOCAL}", text[0])
    first_id = chains[1]["first"]["id"].replace("-", "")[-8:]
    assert text[2:5] == [f"  1  {name}  2 event(s), abandoned {text[2].split('abandoned ')[1]}",
                         f"       first: {first_id} The rain stops.",
                         f"       last:  {chains[1]['last']['id'].replace('-', '')[-8:]} E2"]
    out = narr.json("replay", "rain", "--reuse")
    assert out["chain"] == name and [e["content"] for e in out["events"]] == ["The rain stops.", "E2"]
    after = {c["name"]: c for c in narr.json("chains")["items"]}
    assert after[name]["replayed"] is True and after[name]["n"] == 1
    assert not after[chains[0]["name"]]["replayed"]
    assert narr("chains").stdout.splitlines()[0].endswith("(replayed)") is False
    assert any(line.endswith("(back on the story line)  (replayed)")
               for line in narr("chains").stdout.splitlines())


def test_old_uuid_chain_names_still_work(narr: CLI, world: Path) -> None:
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("reset", "HEAD~1")
    chain = narr.json("chains")["items"][0]
    old = "refs/narr/abandoned/01a22743-dfc5-7729-a439-3b21ad311d30-main"
    git(world, "update-ref", old, chain["tip"])
    git(world, "update-ref", "-d", chain["ref"])
    listed = narr.json("chains")["items"]
    assert [(c["n"], c["name"], c["key"]) for c in listed] == [
        (1, "e1-" + chain["tip"][:4], "01a22743-dfc5-7729-a439-3b21ad311d30-main")]
    assert listed[0]["abandoned_at"] == "2026-11-30T10:45:00Z" or ISO_UTC.match(
        listed[0]["abandoned_at"])
    narr("replay", "01a22743-dfc5-7729-a439-3b21ad311d30-main", "--reuse")
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "E1"
    narr("reset", "HEAD~1")  # the same tip: kept already by the old ref
    narr("event", "E9", "--set", "lin-yuan.state.mood=z")
    narr("reset", "HEAD~1")
    assert [c["n"] for c in narr.json("chains")["items"]] == [2, 1]  # the new one after the old


def test_drop_refuses_to_lose_events_unless_forced(narr: CLI, world: Path) -> None:
    _two_chains(narr)
    chains = narr.json("chains")["items"]
    boat, rain = chains[0]["name"], chains[1]["name"]
    result = narr("chains", "drop", boat, expect=CONFLICT)
    assert result.stderr.splitlines()[0] == (
        f"narr: error: chain {boat} holds 1 event(s) no other ref keeps; dropping it loses them")
    assert len(narr.json("chains")["items"]) == 2
    narr("branch", "keep-rain", chains[1]["tip"])
    assert narr.json("chains", "drop", "1") == {"schema": "narr.chain_dropped/1", "dropped": rain,
                                                "ref": chains[1]["ref"], "tip": chains[1]["tip"],
                                                "lost": []}
    out = narr.json("chains", "drop", boat, "--force")
    assert [e["content"] for e in out["lost"]] == ["A boat comes"]
    assert narr.json("chains")["items"] == []
    assert narr("chains", "drop", "1", expect=NOT_FOUND).stderr.startswith(
        "narr: error: no abandoned chain '1' (there are none")
    assert "refs/narr/abandoned/" not in git(world, "for-each-ref")


def test_replay_part_of_a_chain(narr: CLI, world: Path) -> None:
    ids = [narr.json("event", f"E{i}", "--set", f"lin-yuan.state.n={i}")["id"] for i in range(1, 4)]
    narr("reset", "HEAD~3")
    narr("event", "Meanwhile", "--set", "su-qing.state.mood=bored")
    out = narr.json("replay", "1", "--reuse", "--to", ids[1].replace("-", "")[-8:])
    assert [e["content"] for e in out["events"]] == ["E1", "E2"] and out["total"] == 2
    assert contents(narr.json("log", "-n", "3")["items"]) == ["E2", "E1", "Meanwhile"]
    assert narr.json("chains")["items"][0]["replayed"] is True
    result = narr("replay", "1", "--to", "ffffffff", expect=NOT_FOUND)
    assert result.stderr.startswith("narr: error: --to 'ffffffff': no such event in chain e1-")


def test_replay_of_many_events_prints_what_came_out_different(narr: CLI, world: Path) -> None:
    narr("event", "Start")  # the evening bell (an event node) ends here, not in the chain
    for i in range(7):
        narr("event", f"Beat {i}", "--set", f"lin-yuan.state.n={i}")
    narr("reset", "HEAD~7")
    narr("event", "Meanwhile", "--set", "su-qing.state.mood=bored")
    out = narr("replay", "1", "--diffuser", "explicit").stdout.splitlines()
    assert out[0].startswith("Replayed 7 of 7 event(s) from chain beat-0-")
    assert out[1:] == ["Every event made the same changes as the original."]


def test_replay_differences_in_json(narr: CLI, world: Path) -> None:
    narr("event", "Start")
    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("reset", "HEAD~1")
    narr("event", "Meanwhile", "--set", "lin-yuan.state.mood=a")
    out = narr.json("replay", "1", "--diffuser", "explicit")
    assert [(d["content"], d["original_changes"], d["changes"]) for d in out["different"]] == [
        ("E1", 1, 0)]
    text = narr.json("log", "-n", "1")["items"]
    assert text[0]["replay_of"]


def test_event_ids_by_their_last_digits(narr: CLI, world: Path) -> None:
    e1 = narr.json("event", "E1", "--set", "lin-yuan.state.mood=a")
    narr("event", "E2", "--set", "lin-yuan.state.mood=b")
    tail = e1["id"].replace("-", "")[-8:]
    assert narr.json("show", tail)["content"] == "E1"
    narr("reset", tail)
    assert narr.json("log", "-n", "1")["items"][0]["content"] == "E1"


def test_times_are_iso_utc_in_json_and_local_in_text(narr: CLI, world: Path) -> None:
    from helpers import edit_node

    narr("event", "E1", "--set", "lin-yuan.state.mood=a")
    edit_node(world, "old-zhou", mood="grim")
    narr("reset", "HEAD~1")
    assert ISO_UTC.match(narr.json("show")["created_at"])
    assert ISO_UTC.match(narr.json("edits")["items"][0]["created_at"])
    assert all(ISO_UTC.match(e["when"]) for e in narr.json("reflog")["items"])
    assert ISO_UTC.match(narr.json("chains")["items"][0]["abandoned_at"])
    assert re.search(rf"^at     {LOCAL}$", narr("show").stdout, re.M)
    assert re.match(rf"^  1  {LOCAL}  reset to HEAD~1", narr("edits").stdout)
    assert re.match(rf"^HEAD@\{{0\}} [0-9a-f]{{10}} {LOCAL}  ", narr("reflog").stdout)
