"""``narr -C DIR``: as if narr was started in DIR, as git's ``-C`` is, so a file named on the
command line is found from DIR; served or not, and from wherever the shell stands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import read_node

LOCAL = {"NARR_NO_SERVER": "1"}
LANTERN = {"id": "brass-lantern", "layer": "item", "name": "Brass lantern", "kind": "lantern",
           "lifecycle": "permanent", "aliases": [], "summary": "A lantern.", "traits": {},
           "state": {}, "relations": {}}


def narr(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "narrative", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture(params=["in process", "served"])
def where(request: pytest.FixtureRequest, flat_world: Path,
          monkeypatch: pytest.MonkeyPatch) -> Any:
    """``flat_world`` with files beside it in ``drafts/``; served: with its server running."""
    drafts = flat_world / "drafts"
    drafts.mkdir()
    (drafts / "ch1.txt").write_text("Lin Yuan walks to the ferry.\n", "utf-8")
    (drafts / "lantern.json").write_text(json.dumps(LANTERN), "utf-8")
    (drafts / "delta.json").write_text(json.dumps({"ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "calm"}]}), "utf-8")
    monkeypatch.setenv("CI", "1")  # no server starts by itself
    if request.param == "in process":
        monkeypatch.setenv("NARR_NO_SERVER", "1")
        yield flat_world
        return
    monkeypatch.delenv("NARR_NO_SERVER", raising=False)
    started = narr(flat_world, "serve", "--detach", "--json")
    assert started.returncode == 0, started.stderr
    try:
        yield flat_world
    finally:
        narr(flat_world, "serve", "--stop")


def test_files_named_after_dash_c_are_found_from_its_directory(where: Path) -> None:
    outside = where.parent
    audit = narr(outside, "-C", where.name, "audit", "drafts/ch1.txt", "--json")
    assert audit.returncode == 0, audit.stderr
    made = narr(outside, "-C", where.name, "event", "A lantern is found",
                "--create", "drafts/lantern.json", "--delta", "drafts/delta.json")
    assert made.returncode == 0, made.stderr
    assert read_node(where, "brass-lantern")["name"] == "Brass lantern"
    assert read_node(where, "lin-yuan")["state"]["mood"] == "calm"


def test_a_path_from_the_shell_s_directory_is_not_dash_c_s(where: Path) -> None:
    """As git: ``-C`` moves where relative paths start; the shell's own directory no longer counts."""
    outside = where.parent
    (outside / "stray.txt").write_text("Lin Yuan waits.\n", "utf-8")
    proc = narr(outside, "-C", where.name, "audit", "stray.txt")
    assert proc.returncode != 0
    assert "stray.txt" in proc.stderr and "Traceback" not in proc.stderr
    absolute = narr(outside, "-C", where.name, "audit", str(outside / "stray.txt"), "--json")
    assert absolute.returncode == 0, absolute.stderr


def test_without_dash_c_files_are_found_from_the_shell_s_directory(where: Path) -> None:
    sub = where / "drafts"
    proc = narr(sub, "audit", "ch1.txt", "--json")
    assert proc.returncode == 0, proc.stderr
