"""Reliability under hostile conditions: git settings, crafted private state, a
read-only or full disk, a damaged repository, odd files, and ports without ``fcntl``.

Every failure is one clear message and an exit code, never a traceback, and
leaves the world and its history as they were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git, node_file, read_node, rel_path, snapshot

EXPLICIT = ["--diffuser", "explicit"]
ONE_LAYOUT = pytest.mark.parametrize("layout", ["flat"])


def _recheckout(root: Path) -> None:
    """Remove the node files and let git check them out again under its current settings."""
    for path in (root / "world").rglob("*.json"):
        path.unlink()
    git(root, "checkout", "--", "world")


# --- line endings -------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["autocrlf", "gitattributes"])
def test_line_ending_conversion_keeps_every_event(world: Path, narr: CLI, setting: str) -> None:
    if setting == "autocrlf":
        git(world, "config", "core.autocrlf", "true")
    else:
        (world / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
        git(world, "add", ".gitattributes")
        git(world, "commit", "-q", "-m", "line endings")
    _recheckout(world)
    assert b"\r\n" in node_file(world, "lin-yuan").read_bytes()

    result = narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert "changed while the event" not in result.stderr
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"
    # what git itself would have checked out: git sees nothing to commit
    assert b"\r\n" in node_file(world, "lin-yuan").read_bytes()
    assert git(world, "status", "--porcelain") == ""

    # a hand edit keeps its line endings and is recorded as what it is
    path = node_file(world, "lin-yuan")
    path.write_bytes(path.read_bytes().replace(b'"calm"', b'"wary"'))
    log = narr.json("event", "a beat", *EXPLICIT)
    assert [(e["target"], e["new_value"]) for e in log["edits"]] == [("lin-yuan", "wary")]
    narr("event", "undo nothing", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert git(world, "status", "--porcelain") == ""
    assert narr.json("check")["ok"]
    last = narr.json("show", "HEAD")
    assert last["edits"] == []
    narr("reset", "HEAD~1")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"
    assert git(world, "status", "--porcelain") == ""


# --- a crafted journal ----------------------------------------------------------------


def _crafted_journal(root: Path, path: str) -> dict[str, Any]:
    head = git(root, "rev-parse", "HEAD").strip()
    blob = git(root, "rev-parse", f"HEAD:{rel_path(root, 'lin-yuan', 'character')}").strip()
    return {"ref": "refs/heads/main", "old": head, "new": head, "message": "crafted",
            "updates": [{"path": path, "before": None, "after": blob, "index": None}]}


@ONE_LAYOUT
@pytest.mark.parametrize("path", ["../../x", "world/../../x", "/tmp/x", "world/character/../../x",
                                  ".git/config", "world\\..\\..\\x", "narr.toml"])
def test_a_crafted_journal_is_set_aside_not_executed(world: Path, narr: CLI, path: str) -> None:
    narr_dir = world / ".git" / "narr"
    (narr_dir / "journal.json").write_text(json.dumps(_crafted_journal(world, path)))
    before = snapshot(world)
    result = narr("status")
    assert "journal narr did not write" in result.stderr
    assert ".git/narr/journal.rejected.json" in result.stderr
    assert not (world.parent.parent / "x").exists() and not (world.parent / "x").exists()
    assert snapshot(world) == before
    assert not (narr_dir / "journal.json").exists()
    assert (narr_dir / "journal.rejected.json").exists()
    narr("event", "on we go", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert narr.json("check")["ok"]


@ONE_LAYOUT
@pytest.mark.parametrize("payload", ["[]", '{"ref": 1}', "not json", '{"ref": "refs/heads/main", '
                                     '"old": null, "new": "x", "message": "", "updates": [1]}'])
def test_a_malformed_journal_is_set_aside(world: Path, narr: CLI, payload: str) -> None:
    (world / ".git" / "narr" / "journal.json").write_text(payload)
    result = narr("event", "on we go", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert "journal narr did not write" in result.stderr
    assert (world / ".git" / "narr" / "journal.rejected.json").read_text() == payload
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"
