"""JSON nested a thousand deep in a collaborator's commit (its record, a node file) or typed in:
every command that reads it names the commit or file and goes on; none crashes, and clone and
pull bring such history and say which commit it is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import CLI, git, narr_subprocess, snapshot

DEEP = "[" * 1100 + "]" * 1100


def _deep_commit(root: Path) -> str:
    """A commit made with plain git that carries an event record and a node file nested 1,100
    deep, as a stranger's push would bring them."""
    message = git(root, "log", "-1", "--format=%B")
    record = json.loads(message.partition("narr-event-record v1\n")[2])
    record.update(id="01a231f7-3c54-7119-b0c5-000000000001", parent=record["id"],
                  content="A deep beat",
                  explicit=[{"op": "set", "target": "lin-yuan", "field": "/state/deep",
                             "value": "DEEP"}])
    body = json.dumps(record, indent=1).replace('"DEEP"', DEEP)
    path = root / "world" / "character" / "lin-yuan.json"
    node = json.loads(path.read_text())
    node["state"]["deep"] = "DEEP"
    path.write_text(json.dumps(node, indent=2, sort_keys=True).replace('"DEEP"', DEEP) + "\n")
    git(root, "add", "-A")
    tree = git(root, "write-tree").strip()
    commit = subprocess.run(["git", "commit-tree", tree, "-p", "HEAD", "-F", "-"], cwd=root,
                            input=f"A deep beat\n\nnarr-event-record v1\n{body}\n",
                            capture_output=True, text=True, check=True).stdout.strip()
    git(root, "update-ref", "HEAD", commit)
    return commit


def test_every_reader_of_a_deep_commit_answers(world: Path) -> None:
    narr = CLI(world)
    narr("event", "The bell rings", "--diffuser", "explicit", "--set", "lin-xue.state.x=1")
    commit = _deep_commit(world)
    for args in (["log"], ["status"], ["show"], ["nodes"], ["story"], ["brief"],
                 ["search", "Lin"], ["log", "--json"], ["status", "--json"]):
        narr(*args)  # answers, exit 0
    assert "(a plain git commit, not an event)" in narr("log").stdout
    for args in (["get", "lin-yuan"], ["history", "lin-yuan"], ["get", "lin-yuan", "--at", "HEAD"]):
        result = narr(*args, expect=13)
        assert result.stderr.startswith("narr: error: world/character/lin-yuan.json: values "
                                        "nested more than 200 levels deep"), args
    report = narr.json("check", expect=17)
    assert report["problems"][0]["commit"] == commit
    assert report["problems"][0]["problem"] == (
        "its event record cannot be read (values nested more than 200 levels deep); "
        "narr takes it for a plain git commit")
    proc = narr_subprocess(world, "log")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


def test_clone_and_pull_of_a_deep_commit_name_it(world: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--bare", str(world), str(shared))
    CLI(tmp_path)("clone", str(shared), str(tmp_path / "mine"))
    git(world, "remote", "add", "origin", str(shared))
    CLI(world)("event", "The bell rings", "--diffuser", "explicit", "--set", "lin-xue.state.x=1")
    commit = _deep_commit(world)
    git(world, "push", "-q", "origin", "HEAD:main")

    mine = tmp_path / "mine"
    pulled = CLI(mine).json("pull")
    assert pulled["warnings"] == [f"commit {commit[:10]}: its event record cannot be read "
                                  "(values nested more than 200 levels deep); narr takes it "
                                  "for a plain git commit"]
    proc = narr_subprocess(tmp_path, "clone", str(shared), str(tmp_path / "theirs"))
    assert proc.returncode == 0, proc.stderr
    assert f"narr: warning: commit {commit[:10]}: its event record cannot be read" in proc.stderr


def test_deep_and_huge_values_typed_in_are_refused(world: Path, tmp_path: Path) -> None:
    narr = CLI(world)
    before = snapshot(world)
    result = narr("event", "x", "--diffuser", "explicit", "--set", f"lin-yuan.state.deep={DEEP}",
                  expect=12)
    assert "nested more than 64 levels deep" in result.stderr.splitlines()[0]
    delta = tmp_path / "delta.json"
    delta.write_text('{"changes": [{"op": "set", "target": "lin-yuan", "field": "/state/x", '
                     f'"value": {DEEP}}}]}}')
    result = narr("event", "x", "--diffuser", "explicit", "--delta", str(delta), expect=12)
    assert "Traceback" not in result.stderr
    assert "nested more than" in result.stderr.splitlines()[0]
    path = world / "world" / "character" / "lin-yuan.json"
    node = json.loads(path.read_text())
    node["state"]["big"] = 2 ** 70
    path.write_text(json.dumps(node))
    before = snapshot(world)
    result = narr("event", "x", "--diffuser", "explicit", expect=13)
    assert result.stderr.splitlines()[0] == (
        "narr: error: world/character/lin-yuan.json: an integer beyond 64 bits (71 bits); "
        "a story's numbers fit in 64")
    assert snapshot(world) == before


def test_a_node_file_beyond_the_size_limit_is_refused_unread(world: Path) -> None:
    narr = CLI(world)
    path = world / "world" / "character" / "lin-yuan.json"
    node = json.loads(path.read_text())
    node["summary"] = "x" * (17 * 1024 * 1024)
    path.write_text(json.dumps(node))
    before = snapshot(world)
    result = narr("event", "x", "--diffuser", "explicit", expect=13)
    assert result.stderr.splitlines()[0] == (
        "narr: error: world/character/lin-yuan.json: is 17.0 MB, more than the 16 MB a node "
        "file may hold")
    assert snapshot(world) == before
    assert "more than the 16 MB" in narr.json("status")["problems"][0]
