"""Light reads stay light: one-line listings (log, status, branches, chains) read the
catalog's summary of each event and never parse a record they do not print, so a bulk
event among them (tens of megabytes at scale) costs them nothing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git, write_node

from narrative.store import records
from narrative.store.history import LARGE_COMMIT

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

BULK = 60


def _bulk_world(root: Path, narr: CLI) -> str:
    """Events around one that absorbs BULK nodes made by hand; the bulk commit's id."""
    narr("event", "Before", "--set", "lin-yuan.state.mood=calm")
    for i in range(BULK):
        write_node(root, f"world/item/crate-{i}.json", {
            "id": f"crate-{i}", "layer": "item", "name": f"Crate {i}", "kind": "crate",
            "lifecycle": "permanent", "aliases": [], "summary": "x" * 200,
            "traits": {}, "state": {"n": i}, "relations": {}})
    bulk = narr.json("event", "The caravan unloads")["commit"]
    assert int(git(root, "cat-file", "-s", bulk)) > LARGE_COMMIT  # a record worth not parsing
    narr("event", "After", "--set", "lin-yuan.state.mood=tired")
    narr("event", "Later", "--set", "lin-yuan.state.mood=wary", "--set",
         "black-ring.state.warmth=warm")
    return str(bulk)


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The subjects of every record parsed (raw or into the model) while the test runs."""
    seen: list[str] = []
    raw, full = records.decode_raw, records.decode

    def counting_raw(message: str) -> Any:
        seen.append(message.split("\n", 1)[0])
        return raw(message)

    def counting(message: str) -> Any:
        seen.append(message.split("\n", 1)[0])
        return full(message)

    monkeypatch.setattr(records, "decode_raw", counting_raw)
    monkeypatch.setattr(records, "decode", counting)
    yield seen


def test_log_counts_come_from_the_catalog_not_the_records(
        flat_world: Path, parsed: list[str]) -> None:
    narr = CLI(flat_world)
    _bulk_world(flat_world, narr)
    git(flat_world, "commit", "--allow-empty", "-q", "-m", "a plain note\n\nwith a body")
    parsed.clear()
    lines = narr("log", "-n", "20").stdout.splitlines()
    # small records are read at once; the bulk one narr summarised as it made it
    assert "The caravan unloads" not in parsed and "Later" in parsed
    assert lines[0].endswith("a plain note …  (a plain git commit, not an event)")
    assert lines[1].endswith(" Later  (2 changes)")
    assert lines[3].endswith(f" The caravan unloads  ({BULK} hand edits)")
    # the same lines as the records say (the JSON log parses them: it prints them)
    for line, e in zip(lines, narr.json("log", "-n", "20")["items"], strict=True):
        assert line.startswith(e["commit"][:10])
        if e["kind"] == "event":
            n = len(e["diffusions"])
            assert (f"{n} change" in line) == (n > 0)
            assert (f"{len(e['edits'])} hand edit" in line) == bool(e["edits"])


def test_a_lost_catalog_costs_the_bulk_record_one_parse_then_none(
        flat_world: Path, parsed: list[str]) -> None:
    narr = CLI(flat_world)
    _bulk_world(flat_world, narr)
    before = narr("log").stdout
    shutil.rmtree(flat_world / ".git" / "narr" / "catalog.sqlite", ignore_errors=True)
    (flat_world / ".git" / "narr" / "catalog.sqlite").unlink(missing_ok=True)
    parsed.clear()
    assert narr("log").stdout == before
    assert parsed.count("The caravan unloads") == 1
    parsed.clear()
    assert narr("log").stdout == before
    assert "The caravan unloads" not in parsed


def test_status_branches_and_chains_leave_a_bulk_record_unparsed(
        flat_world: Path, parsed: list[str]) -> None:
    narr = CLI(flat_world)
    _bulk_world(flat_world, narr)
    narr("reset", "HEAD~2")  # the bulk event is HEAD; After and Later form a chain
    narr("branch", "side")
    parsed.clear()
    status = narr("status").stdout
    branches = narr("branch").stdout
    chains = narr("chains").stdout
    assert "The caravan unloads" not in parsed
    assert status.splitlines()[0].endswith("The caravan unloads")
    assert "The caravan unloads" in branches and "side" in branches
    assert "After" in chains and "Later" in chains
    head = narr.json("status")["head"]  # the JSON prints the record: parsing it is its job
    assert len(head["edits"]) == BULK


def test_events_after_a_bulk_event_leave_its_record_unparsed(
        flat_world: Path, parsed: list[str]) -> None:
    narr = CLI(flat_world)
    _bulk_world(flat_world, narr)
    parsed.clear()
    # the rules diffuser looks back at the last events' words for "he" and "she"
    narr("event", "He walks to the ferry")
    assert "The caravan unloads" not in parsed
    assert narr.json("show")["content"] == "He walks to the ferry"


STATUS_IMPORTS = """
import sys
from narrative.cli import main
try:
    main(["status", "--json"])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith("narrative.store.catalog")), file=sys.stderr)
"""


def test_status_with_a_story_time_imports_no_catalog(world: Path, narr: CLI) -> None:
    """The time in force is among the last commits' summaries: narr status finds it there
    and never loads the catalog's modules (the event graph's rows among them)."""
    import subprocess
    import sys

    narr("event", "Lin Yuan waits at the gate", "--story-time", "Day 3, dusk")
    out = subprocess.run([sys.executable, "-c", STATUS_IMPORTS], cwd=world, capture_output=True,
                         text=True, check=True)
    assert '"value": "Day 3, dusk"' in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[]"
