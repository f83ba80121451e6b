"""Reliability under hostile conditions: git settings, crafted private state, a
read-only or full disk, a damaged repository, odd files, and ports without ``fcntl``.

Every failure is one clear message and an exit code, never a traceback, and
leaves the world and its history as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CLI, git, node_file, read_node

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
