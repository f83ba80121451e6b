"""The story clock carries forward: an event without ``--story-time`` happens under the time in force.

``status``, ``brief``, ``story`` and ``export codex`` show the last ``--at`` on the story
line, not only the time the head event itself recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI


@pytest.fixture
def clock(flat_world: Path) -> tuple[CLI, list[str]]:
    narr = CLI(flat_world)
    assert narr.json("status")["story_time"] is None  # no event set one yet
    narr("event", "Lin Yuan walks to the ferry", "--story-time", "Day 3, dusk")
    narr("event", "Lin Yuan is calm", "--set", "lin-yuan.state.mood=calm")
    narr("event", "Lin Yuan grows angry", "--set", "lin-yuan.state.mood=angry")
    return narr, [e["commit"] for e in narr.json("log", "-n", "3")["items"]]


def test_status_shows_the_time_in_force(clock: tuple[CLI, list[str]]) -> None:
    narr, (angry, _, walk) = clock
    lines = narr("status").stdout.splitlines()
    assert lines[:2] == [f"On branch main, at {angry[:10]} Lin Yuan grows angry",
                         f"Story time: Day 3, dusk (since {walk[:10]} Lin Yuan walks to the ferry)"]
    st = narr.json("status")["story_time"]
    assert st["value"] == "Day 3, dusk" and st["since"]["commit"] == walk
    narr("event", "Night falls", "--story-time", "Day 3, night")
    assert narr("status").stdout.splitlines()[1] == "Story time: Day 3, night"


def test_brief_shows_it_for_the_head_and_each_event(clock: tuple[CLI, list[str]]) -> None:
    narr, (angry, _, _) = clock
    b = narr.json("brief", "--budget", "100000")
    assert b["story_time"] == "Day 3, dusk" and b["head"]["timestamp"] is None
    assert [i["text"] for i in b["items"] if i["section"] == "events"] == [
        "Lin Yuan grows angry [Day 3, dusk]", "Lin Yuan is calm [Day 3, dusk]",
        "Lin Yuan walks to the ferry [Day 3, dusk]"]
    assert narr("brief").stdout.startswith(f"Story at {angry[:10]} Lin Yuan grows angry [Day 3, dusk]\n")
    assert f"Story at {angry[:10]} Lin Yuan grows angry [Day 3, dusk]; focus:" in narr(
        "brief", "--format", "md").stdout
    assert narr.json("brief", "--at", "HEAD~3")["story_time"] is None  # before any was set


def test_the_book_keeps_each_event_under_the_time_in_force(clock: tuple[CLI, list[str]]) -> None:
    narr, _ = clock
    book = narr.json("story")
    assert [(e["timestamp"], e["story_time"]) for e in book["events"]] == [
        ("Day 3, dusk", "Day 3, dusk"), (None, "Day 3, dusk"), (None, "Day 3, dusk")]
    md = narr("story").stdout
    assert md.count("*Day 3, dusk*") == 1
    part = narr("story", "--from", "HEAD~1").stdout  # a part of the book starts under its time
    assert "## 3. Lin Yuan grows angry\n\n*Day 3, dusk*" in part


def test_the_codex_names_the_time_in_force(clock: tuple[CLI, list[str]]) -> None:
    narr, _ = clock
    md = narr("export", "codex").stdout
    assert "- story time: Day 3, dusk\n" in md
    d = json.loads(narr("export", "codex", "--format", "json").stdout)
    assert (d["at"]["timestamp"], d["at"]["story_time"]) == (None, "Day 3, dusk")
    assert "story time" not in narr("export", "codex", "--at", "HEAD~3").stdout


def test_a_chapter_begins_at_its_story_time_and_at_is_its_old_spelling(flat_world: Path,
                                                                      tmp_path: Path) -> None:
    """``narr chapter --story-time`` sets when the chapter begins; ``--at`` (a revision everywhere
    else) still works for it, with a notice, and the two together are refused."""
    narr = CLI(flat_world)
    chapter = tmp_path / "chapter.md"
    chapter.write_text("# Chapter 1\n\nLin Yuan walks to the gate.\n", "utf-8")
    both = narr("chapter", str(chapter), "--story-time", "Day 8", "--at", "Day 9", "--dry-run",
                expect=2)
    assert "--at is the old spelling of --story-time" in both.stderr
    old = narr("chapter", str(chapter), "--at", "Day 9", "--dry-run")
    assert "narr chapter --at is now --story-time" in old.stderr
    narr("chapter", str(chapter), "--story-time", "Day 9", "--accept", "all")
    told = narr.json("story")["chapters"]
    assert [c["story_time"] for c in told] == ["Day 9"]
