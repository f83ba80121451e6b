"""``narr check`` verifies what changed since the last check that passed; ``--full`` all.

The remembered tip lives in the catalog, keyed by commit. These tests make the
histories a user (or a stranger) would: new events, a reset, history rewritten with
plain git under the remembered tip, a catalog that vouches for a broken history.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, git, node_file

from narrative.store.catalog import Verified
from narrative.store.worldrepo import WorldRepo


def gitx(root: Path, *args: str, input: str | None = None,
         env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          input=input, env={**os.environ, **(env or {})}).stdout


def event(narr: CLI, text: str, location: str) -> None:
    narr("event", text, "--set", f'lin-yuan.state.location="{location}"')


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def test_a_second_check_walks_only_the_new_events(narr: CLI, world: Path) -> None:
    event(narr, "Lin Yuan goes to the gate", "gate")
    event(narr, "Lin Yuan goes to the ferry", "ferry")
    first = narr.json("check")
    assert first["ok"] and first["since"] is None and first["checked_events"] == first["events"]
    verified = head(world)
    event(narr, "Lin Yuan goes home", "home")
    second = narr.json("check")
    assert second["ok"] and second["since"] == verified
    assert second["checked_events"] == 1 and second["events"] == first["events"] + 1
    assert second["commits"] == first["commits"] + 1
    again = narr.json("check")
    assert again["since"] == head(world) and again["checked_events"] == 0
    assert again["events"] == second["events"]
    full = narr.json("check", "--full")
    assert full["since"] is None and full["checked_events"] == full["events"] == again["events"]
    assert narr("check").stdout.startswith(f"ok: {full['events']} events on the story line, ")


def test_after_a_reset_the_shorter_line_is_already_verified(narr: CLI, world: Path) -> None:
    event(narr, "Lin Yuan goes to the gate", "gate")
    event(narr, "Lin Yuan goes to the ferry", "ferry")
    before = narr.json("check")
    narr("reset", "HEAD~1")
    after = narr.json("check")
    assert after["ok"] and after["since"] == head(world) and after["checked_events"] == 0
    assert (after["events"], after["commits"]) == (before["events"] - 1, before["commits"] - 1)
    assert after["events"] == narr.json("check", "--full")["events"]


def _rewrite_under(root: Path, back: int, node_id: str, tampered: dict[str, object]) -> None:
    """Rewrite the commit ``back`` events below HEAD with a node file changed, and the
    commits above it again on top, as a stranger's history (or a rebase) would be."""
    commits = gitx(root, "rev-list", "--first-parent", f"-{back + 1}", "HEAD").split()[::-1]
    target = commits[0]
    rel = node_file(root, node_id).relative_to(root).as_posix()
    node = json.loads(gitx(root, "show", f"{target}:{rel}"))
    node["state"] = {**node["state"], **tampered}
    blob = gitx(root, "hash-object", "-w", "--stdin", input=json.dumps(node, indent=2) + "\n")
    index = root / ".git" / "tampered-index"
    env = {"GIT_INDEX_FILE": str(index)}
    gitx(root, "read-tree", target, env=env)
    gitx(root, "update-index", "--cacheinfo", f"100644,{blob.strip()},{rel}", env=env)
    tree = gitx(root, "write-tree", env=env).strip()
    parent = gitx(root, "rev-parse", f"{target}~1").strip()
    new = gitx(root, "commit-tree", tree, "-p", parent, "-F", "-",
              input=gitx(root, "log", "-1", "--format=%B", target)).strip()
    for c in commits[1:]:
        new = gitx(root, "commit-tree", f"{c}^{{tree}}", "-p", new, "-F", "-",
                  input=gitx(root, "log", "-1", "--format=%B", c)).strip()
    gitx(root, "update-ref", "refs/heads/main", new)
    gitx(root, "reset", "-q", "--hard", new)


def test_an_old_commit_rewritten_under_a_verified_tip_is_caught(narr: CLI, world: Path) -> None:
    for place in ("gate", "ferry", "market", "home"):
        event(narr, f"Lin Yuan goes to the {place}", place)
    assert narr.json("check")["ok"]
    _rewrite_under(world, 3, "lin-yuan", {"mood": "forged"})
    report = narr.json("check", expect=17)
    assert report["since"] is None  # the remembered tip is no longer on the line: all of it
    assert any("lin-yuan" in p["problem"] and "does not match the record" in p["problem"]
               for p in report["problems"])
    assert narr.json("check", "--full", expect=17)["problems"] == report["problems"]


def test_full_walks_what_a_catalog_vouches_for(narr: CLI, world: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog copied from elsewhere (or edited) may vouch for a broken history: --full
    does not believe it."""
    event(narr, "Lin Yuan goes to the gate", "gate")
    node = node_file(world, "lin-yuan")
    node.write_text(node.read_text("utf-8").replace('"gate"', '"nowhere"'), "utf-8")
    git(world, "commit", "-qam", "a plain commit under world/")
    with monkeypatch.context() as m:  # an event on top of it, as narr recorded before it refused
        m.setattr("narrative.engine.adopt.unadopted", lambda wr, head: None)
        event(narr, "Lin Yuan goes to the ferry", "ferry")
    assert not narr.json("check", expect=17)["ok"]
    with WorldRepo.open(world) as wr:
        wr.catalog.remember_verified(Verified(head(world), 2, 4))
    assert narr.json("check")["ok"]  # it trusts the catalog ...
    full = narr.json("check", "--full", expect=17)  # ... --full does not
    assert any("is not a narr event" in p["problem"] for p in full["problems"])


def test_a_failing_check_remembers_nothing(narr: CLI, world: Path) -> None:
    event(narr, "Lin Yuan goes to the gate", "gate")
    node = node_file(world, "lin-yuan")
    node.write_text(node.read_text("utf-8").replace('"gate"', '"nowhere"'), "utf-8")
    git(world, "commit", "-qam", "a plain commit under world/")
    for _ in range(2):
        report = narr.json("check", expect=17)
        assert report["since"] is None and not report["ok"]


def test_a_relation_left_pointing_at_a_gone_node_is_found_after_a_verified_tip(
        narr: CLI, world: Path) -> None:
    """A stranger's event whose record explains a node's removal but leaves another node's
    relation to it: the events check passes, only the world check can tell. The check since
    a verified tip must tell as well as a full one."""
    from narrative.store import records

    narr("event", "Su Qing holds the ring", "--relate", "su-qing:holds:black-ring")
    assert narr.json("check")["ok"]
    narr("event", "The ring is lost", "--expire", "black-ring")
    real = head(world)
    message = gitx(world, "log", "-1", "--format=%B", real)
    raw = records.decode_raw(message)
    assert raw is not None
    kept = [d for d in raw["diffusions"] if d["target"] == "black-ring"]
    assert len(kept) < len(raw["diffusions"])  # the engine also cut su-qing's relation
    record = records.decode(message)
    assert record is not None
    forged = records.encode(record.model_copy(update={
        "diffusions": [d for d in record.diffusions if d.target == "black-ring"]}))
    holders = sorted({d.target for d in record.diffusions if d.target != "black-ring"})
    assert "su-qing" in holders
    paths = [node_file(world, h).relative_to(world).as_posix() for h in holders]
    index = world / ".git" / "forged-index"
    env = {"GIT_INDEX_FILE": str(index)}
    gitx(world, "read-tree", real, env=env)
    for path in paths:  # as they were before: still relating to the ring
        old = gitx(world, "rev-parse", f"{real}~1:{path}").strip()
        gitx(world, "update-index", "--cacheinfo", f"100644,{old},{path}", env=env)
    tree = gitx(world, "write-tree", env=env).strip()
    commit = gitx(world, "commit-tree", tree, "-p", f"{real}~1", "-F", "-", input=forged).strip()
    gitx(world, "update-ref", "refs/heads/main", commit)
    gitx(world, "reset", "-q", "--hard", commit)
    since = narr.json("check", expect=17)
    assert since["since"] is not None and since["checked_events"] == 1
    dangling = sorted(p["problem"] for p in since["problems"])
    assert len(dangling) == len(paths)
    assert [p for p in dangling if p.startswith(paths[holders.index("su-qing")])] == [
        f"{paths[holders.index('su-qing')]}: relation holds->black-ring points at a node that "
        "does not exist"]
    assert all("points at a node that does not exist" in p for p in dangling)
    full = narr.json("check", "--full", expect=17)
    assert sorted(p["problem"] for p in full["problems"]) == dangling
