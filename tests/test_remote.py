"""Two writers, two clones, one bare repository between them: clone, push, pull, chains."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, edit_node, git, narr_subprocess, node_file, read_node, snapshot


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    """A bare repository made as people make them (its HEAD names git's own default)."""
    path = tmp_path / "hub.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=trunk", str(path)],
                   check=True)
    return path


@pytest.fixture
def pair(flat_world: Path, hub: Path, tmp_path: Path) -> tuple[CLI, CLI]:
    """Alice's world pushed to the hub, and Bob's clone of it."""
    alice = CLI(flat_world)
    git(flat_world, "remote", "add", "origin", str(hub))
    out = alice.json("push")
    assert (out["status"], out["upstream_set"]) == ("new", True)
    cloned = CLI(tmp_path).json("clone", str(hub), "bob")
    assert cloned["branch"] == "main" and cloned["events"] >= 1
    return alice, CLI(tmp_path / "bob")


def world_files(root: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(root).items() if k.startswith("world/")}


def both_check(*sides: CLI) -> None:
    for side in sides:
        report = side.json("check")
        assert report["ok"], report["problems"]
        assert side.json("status")["edits"] == []


def test_concurrent_lines_meet_through_the_hub(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    both_check(alice, bob)
    assert world_files(alice.root) == world_files(bob.root)
    alice("event", "Alice's chapter", "--set", "old-zhou.state.mood=sleepy")
    bob("event", "Bob's chapter", "--set", "su-qing.state.mood=calm",
        "--relate", "su-qing:trusts:lin-yuan")
    alice("push")
    bob("push", expect=14)  # behind: the hub has Alice's event
    pulled = bob.json("pull")
    assert pulled["status"] == "merged"
    record = pulled["merge"]["record"]
    assert record["kind"] == "merge" and record["merged"] == "origin/main"
    assert [(d["target"], d["field"], d["side"]) for d in record["diffusions"]] == [
        ("old-zhou", "/state/mood", "theirs")]
    assert bob.json("push")["status"] == "updated"
    assert alice.json("pull")["status"] == "fast-forward"
    assert alice.json("pull")["status"] == "up to date"
    both_check(alice, bob)
    assert world_files(alice.root) == world_files(bob.root)
    assert read_node(alice.root, "su-qing")["relations"]["trusts"] == {"lin-yuan": {}}
    head = git(alice.root, "rev-parse", "HEAD")
    assert head == git(bob.root, "rev-parse", "HEAD")
    git(bob.root, "fsck", "--no-progress")


def test_conflicts_resolved_each_way_and_an_abort(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    alice("event", "Here", "--set", "lin-yuan.state.mood=tired", "--set", "su-qing.state.mood=angry")
    alice("push")
    bob("event", "There", "--set", "lin-yuan.state.mood=elated", "--set", "su-qing.state.mood=calm")
    before = snapshot(bob.root)
    err = json.loads(bob("pull", "--json", expect=14).stderr)
    assert {(c["node"], c["field"], c["ours"], c["theirs"]) for c in err["conflicts"]} == {
        ("lin-yuan", "/state/mood", "elated", "tired"), ("su-qing", "/state/mood", "calm", "angry")}
    fetched = (".git/refs/remotes/", ".git/logs/refs/remotes/", ".git/refs/narr/remotes/")
    assert {k: v for k, v in snapshot(bob.root).items() if not k.startswith(fetched)} == {
        k: v for k, v in before.items() if not k.startswith(fetched)}  # only fetched refs
    bob("push", expect=14)
    assert bob.json("merge", "--abort")["aborted"]
    assert world_files(bob.root) == {k: v for k, v in before.items() if k.startswith("world/")}
    bob("pull", expect=14)  # the same conflicts again, then resolved: one ours, one theirs
    bob("resolve", "lin-yuan", "/state/mood", "--ours")
    bob("resolve", "su-qing", "/state/mood", "--theirs")
    out = bob.json("merge", "--continue")
    assert {d["target"]: d["side"] for d in out["record"]["diffusions"]} == {"su-qing": "resolved"}
    assert read_node(bob.root, "lin-yuan")["state"]["mood"] == "elated"
    assert read_node(bob.root, "su-qing")["state"]["mood"] == "angry"
    bob("push")
    alice("pull")
    both_check(alice, bob)
    assert world_files(alice.root) == world_files(bob.root)


def test_undone_chains_travel_both_ways_without_colliding(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    for side, who in ((alice, "alice"), (bob, "bob")):
        side("event", f"{who} one", "--set", f"lin-yuan.state.{who}=1")
        side("event", f"{who} two", "--set", f"lin-yuan.state.{who}=2")
        edit_node(side.root, "old-zhou", mood=who)
        side("reset", "HEAD~1")  # both now have a chain numbered 1 and set-aside edits
    alice("push")
    bob("pull")
    bob("push")
    alice("pull")
    for side, mine, theirs in ((alice, "alice", "bob"), (bob, "bob", "alice")):
        chains = side.json("chains")["items"]
        assert sorted((c["remote"] or "", c["n"], c["first"]["content"]) for c in chains) == sorted(
            [("", 1, f"{mine} two"), ("origin", 1, f"{theirs} two")])
    edits = bob.json("edits")["items"]
    assert [(e["remote"], e["n"]) for e in edits] == [(None, 1), ("origin", 1)]
    bob("edits", "drop", "origin/1", expect=12)
    bob("edits", "restore", "origin/1")
    assert read_node(bob.root, "old-zhou")["state"]["mood"] == "alice"
    bob("event", "Alice's edit, recorded")
    # Bob replays Alice's chain by its origin number; Alice sees it replayed after a pull
    out = bob.json("replay", "origin/1", "--reuse")
    assert [e["content"] for e in out["events"]] == ["alice two"]
    assert read_node(bob.root, "lin-yuan")["state"]["alice"] == 2
    bob("chains", "drop", "origin/1", expect=12)  # not Bob's to drop
    bob("push")
    alice("pull")
    mine = [c for c in alice.json("chains")["items"] if c["remote"] is None]
    assert mine[0]["replayed"]
    both_check(alice, bob)
    names = git(alice.root, "for-each-ref", "--format=%(refname)", "refs/narr/").split()
    assert not any(n.startswith("refs/narr/remotes/origin/remotes/") for n in names)
    hub_refs = git(alice.root, "ls-remote", "origin", "refs/narr/*").split()
    assert not any("/remotes/" in r for r in hub_refs)  # each keeps their own copies


def test_switch_finds_a_remote_branch(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    alice("switch", "-c", "alt")
    alice("event", "Another way", "--set", "lin-yuan.state.mood=bold")
    alice("push")
    bob("switch", "alt", expect=11)  # not fetched yet
    bob("pull")
    assert "narr switch alt" in bob("switch", "origin/alt", expect=11).stderr
    assert {(b["name"], b["followed_by"]) for b in bob.json("branch", "-r")["items"]} == {
        ("origin/main", "main"), ("origin/alt", None)}
    out = bob.json("switch", "alt")
    assert out["tracking"] == "origin/alt"
    assert read_node(bob.root, "lin-yuan")["state"]["mood"] == "bold"
    assert git(bob.root, "config", "branch.alt.remote").strip() == "origin"
    bob("event", "Bolder", "--set", "lin-yuan.state.mood=bolder")
    assert bob.json("push")["branch"] == "alt"
    alice("pull")
    assert read_node(alice.root, "lin-yuan")["state"]["mood"] == "bolder"
    both_check(alice, bob)


def test_careless_and_hostile_uses(pair: tuple[CLI, CLI], tmp_path: Path, hub: Path) -> None:
    alice, bob = pair
    CLI(tmp_path)("clone", str(hub), "bob", expect=12)  # not an empty directory
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "--quiet")
    (plain / "notes.txt").write_text("hi", "utf-8")
    git(plain, "add", ".")
    git(plain, "commit", "--quiet", "-m", "notes")
    CLI(tmp_path)("clone", str(plain), "copy", expect=10)
    assert not (tmp_path / "copy").exists()
    CLI(tmp_path)("clone", str(tmp_path / "nowhere"), "x", expect=1)
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "--quiet", "--bare", str(empty))
    CLI(tmp_path)("clone", str(empty), "x", expect=11)
    assert not (tmp_path / "x").exists()
    # a remote holding refs no narr made under narr's names: left out, never a crash
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=alice.root, input="x",
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = git(alice.root, "write-tree").strip()
    root = git(alice.root, "commit-tree", tree, "-m", "not a set-aside").strip()
    git(alice.root, "push", "--quiet", str(hub), f"{blob}:refs/narr/abandoned/blob",
        f"{root}:refs/narr/edits/root", f"{root}:refs/narr/abandoned/x/y/z")
    bob("pull")
    chains = bob.json("chains")["items"]
    assert [(c["remote"], c["key"], c["tip"]) for c in chains] == [("origin", "x", root)]
    assert chains[0]["name"] == f"origin/not-set-aside-{root[:4]}"  # the blob is left out
    assert bob.json("edits")["items"] == []
    assert bob.json("check")["ok"]
    bob("push", "elsewhere", expect=11)
    bob("pull", "origin", "no-such-line", expect=11)


def test_plain_git_does_the_same_and_a_subprocess_clone(pair: tuple[CLI, CLI], tmp_path: Path,
                                                        hub: Path) -> None:
    alice, bob = pair
    alice("event", "One", "--set", "lin-yuan.state.x=1")
    alice("event", "Two", "--set", "lin-yuan.state.x=2")
    alice("reset", "HEAD~1")
    git(alice.root, "push", "origin", "main", "refs/narr/abandoned/*:refs/narr/abandoned/*")
    git(bob.root, "fetch", "--quiet", "origin")  # the refspecs narr clone configured
    assert [c["remote"] for c in bob.json("chains")["items"]] == ["origin"]
    proc = narr_subprocess(tmp_path, "clone", f"file://{hub}", "carol", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fetched"]["abandoned"] == 1
    carol = CLI(tmp_path / "carol")
    both_check(carol)
    assert [c["name"].split("/")[0] for c in carol.json("chains")["items"]] == ["origin"]


def test_pull_keeps_hand_edits_the_incoming_events_leave_alone(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    edit_node(bob.root, "old-zhou", mood="grumpy")
    node_file(bob.root, "su-qing").write_text("{ not json", "utf-8")  # kept byte for byte too
    alice("event", "Moves on", "--set", "lin-yuan.state.mood=tired")
    alice("push")
    pulled = bob.json("pull")
    assert (pulled["status"], pulled["merge"]["kept_edits"]) == ("fast-forward", ["old-zhou"])
    assert read_node(bob.root, "lin-yuan")["state"]["mood"] == "tired"
    assert node_file(bob.root, "su-qing").read_text("utf-8") == "{ not json"
    assert sorted(bob.json("status")["problems"])[0].startswith("world/")
    git(bob.root, "checkout", "--", node_file(bob.root, "su-qing").relative_to(bob.root).as_posix())
    assert [(e["target"], e["new_value"]) for e in bob.json("status")["edits"]] == [
        ("old-zhou", "grumpy")]
    # a true merge keeps them as well: the merge event records none of them
    alice("event", "Alice again", "--set", "lin-yuan.state.mood=sleepy")
    alice("push")
    bob("event", "Bob writes", "--set", "su-qing.state.mood=calm")  # records the edit
    edit_node(bob.root, "old-zhou", mood="grumpier")
    assert bob.json("pull")["merge"]["record"]["edits"] == []
    assert [(e["target"], e["new_value"]) for e in bob.json("status")["edits"]] == [
        ("old-zhou", "grumpier")]
    assert bob.json("check")["ok"]
    # incoming events that change the edited node: refused, naming it, nothing moved
    alice("pull")
    alice("event", "Zhou wakes", "--set", "old-zhou.state.place=well")
    alice("push")
    before = snapshot(bob.root)
    err = bob("pull", expect=14).stderr
    assert "uncommitted hand edits to old-zhou" in err and "narr reset --hard HEAD" in err
    fetched = (".git/refs/remotes/", ".git/logs/refs/remotes/", ".git/refs/narr/remotes/")
    assert {k: v for k, v in snapshot(bob.root).items() if not k.startswith(fetched)} == {
        k: v for k, v in before.items() if not k.startswith(fetched)}
    bob("reset", "--hard", "HEAD")  # set aside, pull, put back
    bob("pull")
    bob("edits", "restore", "1")
    assert read_node(bob.root, "old-zhou")["state"]["mood"] == "grumpier"


def _create(side: CLI, content: str, node: dict[str, object], *extra: str) -> None:
    path = side.root.parent / f"{node['id']}.json"
    path.write_text(json.dumps(node), "utf-8")
    side("event", content, "--create", str(path), *extra)
    path.unlink()


def test_a_joined_node_changed_by_its_writer_meanwhile(pair: tuple[CLI, CLI]) -> None:
    alice, bob = pair
    _create(alice, "A lamp here", {"id": "lamp", "name": "Lamp", "layer": "item",
                                   "state": {"lit": False}})
    _create(bob, "A lamp there", {"id": "oil-lamp", "name": "Oil lamp", "aliases": ["lamp"],
                                  "layer": "item", "state": {"fuel": "oil"}},
            "--relate", "su-qing:carries:oil-lamp")
    bob("push")
    assert alice.json("pull")["merge"]["joined"][0]["theirs"] == "oil-lamp"
    alice("push")
    # Bob, who has not taken Alice's merge, goes on with his lamp under its own id
    bob("event", "More oil", "--set", "oil-lamp.state.fuel=whale oil",
        "--relate", "old-zhou:eyes:oil-lamp")
    pulled = bob.json("pull")
    assert pulled["status"] == "merged"
    lamp = read_node(bob.root, "lamp")
    assert (lamp["name"], lamp["aliases"]) == ("Lamp", ["Oil lamp"])
    assert lamp["state"] == {"lit": False, "fuel": "whale oil"}
    assert read_node(bob.root, "old-zhou")["relations"]["eyes"] == {"lamp": {}}
    assert read_node(bob.root, "su-qing")["relations"]["carries"] == {"lamp": {}}
    bob("get", "oil-lamp", expect=11)
    bob("push")
    alice("pull")
    both_check(alice, bob)
    assert world_files(alice.root) == world_files(bob.root)


def _hub_refs(side: CLI, kind: str) -> list[str]:
    return [line.split("\t")[1] for line in
            git(side.root, "ls-remote", "origin", f"refs/narr/{kind}/*").splitlines()]


def test_set_aside_edits_kept_private_and_dropped_refs_deleted_there(pair: tuple[CLI, CLI]
                                                                     ) -> None:
    alice, bob = pair
    alice("event", "One", "--set", "lin-yuan.state.x=1")
    edit_node(alice.root, "old-zhou", mood="secret")
    alice("reset", "HEAD~1")  # one chain, one set-aside
    assert alice.json("push", "--no-edits")["edits"] is False
    assert len(_hub_refs(alice, "abandoned")) == 1 and _hub_refs(alice, "edits") == []
    git(alice.root, "config", "narr.pushEdits", "false")
    alice("push")
    assert _hub_refs(alice, "edits") == []
    assert alice.json("push", "--edits")["narr_refs"] == 1 and len(_hub_refs(alice, "edits")) == 1
    git(alice.root, "config", "narr.pushEdits", "maybe")
    assert "narr.pushEdits" in alice("push", expect=12).stderr
    git(alice.root, "config", "--unset", "narr.pushEdits")
    bob("pull")
    assert [c["remote"] for c in bob.json("chains")["items"]] == ["origin"]
    # Alice drops her pushed chain and edits: not listed as origin's after a pull, deleted
    # on the hub by her next push, and gone from Bob's copies at his next pull
    alice("chains", "drop", "1", "--force")
    kept = alice.json("edits", "drop", "1")["kept_as"]  # the edits were the last to hold its event
    assert kept is not None and alice.json("chains")["items"][0]["ref"] == kept
    alice("chains", "drop", "1", "--force")  # now nothing else holds it: forgotten for good
    alice("pull")
    assert alice.json("chains")["items"] == [] and alice.json("edits")["items"] == []
    assert len(alice.json("push")["deleted"]) == 2
    assert _hub_refs(alice, "abandoned") == [] and _hub_refs(alice, "edits") == []
    assert alice.json("push")["deleted"] == []  # once, and nothing is left to ask about
    assert json.loads((alice.root / ".git" / "narr" / "dropped.json").read_text("utf-8")) == {}
    bob("pull")
    assert bob.json("chains")["items"] == [] and bob.json("edits")["items"] == []
    both_check(alice, bob)
