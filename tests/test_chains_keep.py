"""A chain is never dropped while it alone keeps events, and dropping set-aside edits never drops
the last ref of events: "alone" is judged against the refs narr keeps for ever (the story lines
and the abandoned chains), not against set-aside edits or other incidental refs. A chain
replayed in part says how much of it was."""

from __future__ import annotations

from pathlib import Path

from helpers import CLI, edit_node, git

CONFLICT = 14


def _kept_events(world: Path) -> set[str]:
    """Every event commit the story lines and the abandoned chains hold."""
    keepers = [line.split()[0] for line in git(world, "for-each-ref", "--format=%(objectname) %(refname)",
                                               "refs/heads/", "refs/narr/abandoned/").splitlines()]
    out = git(world, "log", "--format=%H %s", *keepers).splitlines() if keepers else []
    return {line.split()[0] for line in out}


def _chapter(narr: CLI, n: int) -> list[str]:
    return [narr.json("event", f"Beat {i}", "--set", f"lin-yuan.state.n={i}")["commit"] for i in range(n)]


def test_a_chain_kept_only_besides_by_set_aside_edits_is_not_dropped(narr: CLI, world: Path) -> None:
    commits = _chapter(narr, 4)
    edit_node(world, "old-zhou", mood="pending")  # a hand edit: the reset sets it aside
    narr("reset", "HEAD~2")
    assert len(narr.json("edits")["items"]) == 1
    result = narr("chains", "drop", "1", expect=CONFLICT)
    assert "holds 2 event(s) no other ref keeps" in result.stderr
    narr("edits", "drop", "1")
    assert set(commits) <= _kept_events(world)
    out = narr.json("replay", "1", "--reuse")
    assert [e["content"] for e in out["events"]] == ["Beat 2", "Beat 3"]


def test_dropping_set_aside_edits_that_alone_keep_events_keeps_them_as_a_chain(narr: CLI,
                                                                                world: Path) -> None:
    commits = _chapter(narr, 3)
    edit_node(world, "old-zhou", mood="pending")
    narr("reset", "HEAD~2")
    narr("chains", "drop", "1", "--force")  # the writer forgets the chain; the edits still hold it
    out = narr.json("edits", "drop", "1")
    assert out["kept_as"] is not None
    assert set(commits) <= _kept_events(world)
    chains = narr.json("chains")["items"]
    assert [c["length"] for c in chains] == [2] and chains[0]["ref"] == out["kept_as"]
    text = narr("edits", "drop", "1", expect=11)  # gone
    assert "no set-aside edits" in text.stderr


def test_dropping_set_aside_edits_whose_events_are_kept_keeps_no_chain(narr: CLI, world: Path) -> None:
    _chapter(narr, 3)
    edit_node(world, "old-zhou", mood="pending")
    narr("reset", "HEAD~2")
    out = narr.json("edits", "drop", "1")
    assert out["kept_as"] is None and len(narr.json("chains")["items"]) == 1
    assert narr("edits", "drop", "1", expect=11)


def test_a_chain_replayed_in_part_says_how_much(narr: CLI, world: Path) -> None:
    ids = [narr.json("event", f"E{i}", "--set", f"lin-yuan.state.n={i}")["id"] for i in range(1, 6)]
    narr("reset", "HEAD~5")
    narr("event", "Meanwhile", "--set", "su-qing.state.mood=bored")
    narr("replay", "1", "--reuse", "--to", ids[1])
    chain = narr.json("chains")["items"][0]
    assert (chain["replayed"], chain["replayed_events"], chain["length"]) == (True, 2, 5)
    assert narr("chains").stdout.splitlines()[0].endswith("(replayed 2 of 5)")
    narr("replay", "1", "--reuse")
    chain = narr.json("chains")["items"][0]
    assert (chain["replayed"], chain["replayed_events"]) == (True, 5)
    assert narr("chains").stdout.splitlines()[0].endswith("(replayed)")


def test_a_chain_never_replayed_says_nothing(narr: CLI, world: Path) -> None:
    _chapter(narr, 2)
    narr("reset", "HEAD~2")
    chain = narr.json("chains")["items"][0]
    assert (chain["replayed"], chain["replayed_events"]) == (False, 0)
    assert "replayed" not in narr("chains").stdout
