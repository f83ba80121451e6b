"""Failed events: kept with their error, listed, run again by number, forgotten when done."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import CLI, read_node, snapshot

from narrative.delta.request import EventRequest
from narrative.engine.event import run_event
from narrative.engine.failed import load_all
from narrative.store.worldrepo import WorldRepo


def test_failed_events_are_listed_newest_first(narr: CLI) -> None:
    narr("event", "A ghost appears", "--set", "ghost.state.seen=true", expect=12)
    narr("event", "Lin Yuan changes", "--set", "lin-yuan.traits.speech=loud", expect=12)
    items = narr.json("failed")["items"]
    assert [(i["n"], i["content"]) for i in items] == [(1, "Lin Yuan changes"), (2, "A ghost appears")]
    assert "no node 'ghost'" in items[1]["error"]
    text = narr("failed").stdout
    assert "'A ghost appears'" in text and "traits" in text


def test_the_same_event_failing_again_is_kept_once(narr: CLI) -> None:
    for _ in range(3):
        narr("event", "A ghost appears", "--set", "ghost.state.seen=true", expect=12)
    assert len(narr.json("failed")["items"]) == 1


def test_retry_by_number_runs_that_one_and_forgets_it(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm",
         "--set", "ghost.state.seen=true", expect=12)
    narr("event", "A ghost appears", "--set", "ghost.state.seen=true", expect=12)
    before = snapshot(world)
    narr("failed", "retry", "2", "--dry-run", expect=12)  # still invalid: nothing changes
    assert snapshot(world) == before
    narr("failed", "retry", "1", "--diffuser", "explicit", expect=12)
    assert len(narr.json("failed")["items"]) == 2
    narr("failed", "drop", "1")
    assert [i["content"] for i in narr.json("failed")["items"]] == ["Lin Yuan rests"]
    narr("failed", "drop", "9", expect=11)
    narr("failed", "retry", "x-no-such-key", expect=11)


def test_recording_the_same_event_later_forgets_the_kept_copy(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm", "--set", "ghost.state.x=1",
         expect=12)
    # the same words through another diffuser ask for something else: kept apart
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm", "--set", "ghost.state.x=1",
         "--diffuser", "explicit", expect=12)
    assert len(narr.json("failed")["items"]) == 2
    narr("failed", "drop", "1")
    # another event with other words: the kept one stays
    narr("event", "Lin Yuan wakes", "--set", "lin-yuan.state.mood=calm")
    assert len(narr.json("failed")["items"]) == 1
    # a ghost node appears by hand; the kept event, typed again, is recorded and forgotten
    ghost = {"id": "ghost", "name": "Ghost", "layer": "ambient", "kind": "spirit"}
    narr("event", "A ghost is born", "--create", _write(world.parent / "ghost.json", ghost))
    result = narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm",
                  "--set", "ghost.state.x=1")
    assert "is forgotten" in result.stderr
    assert narr.json("failed")["items"] == []
    assert "No failed events kept." in narr("failed").stdout


def test_failed_retry_records_and_forgets(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan sulks", "--set", "lin-yuan.state.mood=sulky", "--set", "ghost.state.x=1",
         expect=12)
    narr("event", "Su Qing waits", "--set", "su-qing.state.mood=patient")
    ghost = {"id": "ghost", "name": "Ghost", "layer": "ambient", "kind": "spirit"}
    narr("event", "A ghost is born", "--create", _write(world.parent / "ghost.json", ghost))
    rec = narr.json("failed", "retry")
    assert rec["content"] == "Lin Yuan sulks"
    assert read_node(world, "lin-yuan")["state"]["mood"] == "sulky"
    assert narr.json("failed")["items"] == []


def test_a_request_runs_the_diffuser_it_names(world: Path) -> None:
    wr = WorldRepo.open(world)
    plain = run_event(wr, EventRequest(content="Lin Yuan walks to the ferry"))
    assert plain.record.diffuser is None
    assert all(c.target != "lin-yuan" for c in plain.record.diffusions)
    ruled = run_event(wr, EventRequest(content="Su Qing walks to the ferry", diffuser="rules"))
    assert ruled.record.diffuser == "rules"
    assert any(c.target == "su-qing" and c.field == "/state/location" for c in ruled.record.diffusions)
    assert load_all(wr) == []


def _write(path: Path, node: dict[str, object]) -> str:
    path.write_text(json.dumps(node), encoding="utf-8")
    return str(path)


def test_an_event_whose_delta_file_cannot_be_read_is_kept(world: Path, tmp_path: Path) -> None:
    narr = CLI(world)
    missing = tmp_path / "missing.json"
    before = snapshot(world)
    result = narr("event", "Lin Yuan finds the map", "--diffuser", "explicit",
                  "--set", "lin-yuan.state.map=true", "--delta", str(missing), expect=12)
    assert result.stderr.startswith(f"narr: error: --delta {missing}: cannot read")
    assert "the event's words are kept (narr failed)" in result.stderr
    assert snapshot(world) == before
    kept = narr.json("failed")["items"]
    assert [k["content"] for k in kept] == ["Lin Yuan finds the map"]
    assert kept[0]["unread"] == ["--set", "lin-yuan.state.map=true", "--delta", str(missing)]
    # a retry cannot run it as asked: it says what to type again, and changes nothing
    retried = narr("event", "--retry", expect=12)
    assert "narr event 'Lin Yuan finds the map' --set lin-yuan.state.map=true --delta" \
        in retried.stderr
    assert snapshot(world) == before
    # a delta that is there but not JSON is kept the same way; once typed right, both go
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    narr("event", "Lin Yuan finds the map", "--diffuser", "explicit", "--delta", str(bad),
         expect=12)
    assert len(narr.json("failed")["items"]) == 2
    narr("event", "Lin Yuan finds the map", "--diffuser", "explicit",
         "--set", "lin-yuan.state.map=true")
    assert narr.json("failed")["items"] == []


def test_a_failed_event_fixed_and_typed_again_is_no_longer_listed(narr: CLI) -> None:
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm", "--set", "ghost.state.x=1",
         expect=12)
    narr("event", "Su Qing waits", "--set", "su-qing.state.mood=patient", "--set", "gohst.state.y=2",
         expect=12)
    assert len(narr.json("failed")["items"]) == 2
    # the writer fixes the typo and types the event again, as the error told them to
    result = narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=calm")
    assert "the failed event kept with these words is recorded now (its changes fixed)" in result.stderr
    assert [item["content"] for item in narr.json("failed")["items"]] == ["Su Qing waits"]
    narr("event", "  Su Qing waits ", "--set", "su-qing.state.mood=patient")  # spaces aside
    assert narr.json("failed")["items"] == []
