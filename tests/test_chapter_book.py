"""The book after chapters and merges: ``narr story`` tells a chapter in its own prose and
the events a merge brought where it brought them, ``narr search`` finds those events, the
chapter list holds a merged line's chapters, story time carries across a merge, and the brief
stands for far chapters by their summaries within its budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CLI

from narrative.errors import OutOfTimeError

CHAPTER = """\
# Chapter 1: The Ferry

Lin Yuan walks to the ferry. Su Qing walks to the ferry.

* * *

Lin Yuan gives the black ring to Su Qing.
"""

ENDING = """\
# Chapter 2: Another Ending

Old Zhou walks to the library pavilion. Old Zhou takes the jade token.
"""


@pytest.fixture
def merged(flat_world: Path, tmp_path: Path) -> CLI:
    """Chapter 1 on main; an alternate line with its own chapter and an event at a later
    story time, merged into main."""
    narr = CLI(flat_world)
    (tmp_path / "ch1.md").write_text(CHAPTER, "utf-8")
    (tmp_path / "ch2.md").write_text(ENDING, "utf-8")
    narr("event", "Dawn comes", "--at", "Day 3, dawn", "--set", "old-zhou.state.mood=awake")
    narr("branch", "what-if")
    narr("chapter", str(tmp_path / "ch1.md"), "--accept", "all")
    narr("switch", "what-if")
    narr("chapter", str(tmp_path / "ch2.md"), "--accept", "all")
    narr("event", "Night falls on the pavilion", "--at", "Day 5, night",
         "--set", "elder-mo.state.mood=sleepy")
    narr("switch", "main")
    narr("merge", "what-if")
    return narr


def test_the_book_tells_chapters_in_their_prose_and_a_merged_line_where_it_came(
        merged: CLI) -> None:
    book = merged.json("story")
    assert [(c["number"], c["line"], c["events"]) for c in book["chapters"]] == [
        (1, None, 3), (2, "what-if", 2)]
    lines = [(e["content"], e["line"], e["chapter"]) for e in book["events"]]
    assert lines[0] == ("Dawn comes", None, None)
    assert ("Old Zhou takes the jade token.", "what-if", 2) in lines
    assert lines[-1] == ("Night falls on the pavilion", "what-if", None)
    assert [m["content"] for m in book["merges"]] == ["Merge branch what-if"]
    assert book["skipped"] == []
    md = merged("story").stdout
    assert "## 1. Dawn comes\n\n*Day 3, dawn*\n\n## Chapter 1: The Ferry\n\nLin Yuan walks to" in md
    assert "## Chapter 2: Another Ending *(from what-if)*" in md
    assert "Lin Yuan gives the black ring to Su Qing." in md  # the chapter's own text
    assert "## 1. Dawn comes" in md and "Night falls on the pavilion *(from what-if)*" in md
    assert "## 2. Lin Yuan walks" not in md  # the chapter's events are its prose, not again
    assert md.index("Chapter 2: Another Ending") < md.index("Night falls on the pavilion")


def test_search_and_the_chapter_list_find_what_a_merge_brought(merged: CLI) -> None:
    hits = merged.json("search", "pavilion")["hits"]
    events = [(h["content"], h.get("line")) for h in hits if h["kind"] == "event"]
    assert ("Night falls on the pavilion", "what-if") in events
    assert ("Old Zhou walks to the library pavilion.", "what-if") in events
    assert "[from what-if]" in merged("search", "pavilion").stdout
    listed = merged.json("log", "--chapters")["items"]
    assert [(c["number"], c["line"]) for c in listed] == [(2, "what-if"), (1, None)]
    assert "[from what-if]" in merged("log", "--chapters").stdout
    shown = merged.json("show", "chapter:2")
    assert shown["chapter"]["text"] == ENDING


def test_story_time_carries_across_a_merge(merged: CLI) -> None:
    assert merged.json("status")["story_time"]["value"] == "Day 5, night"
    assert merged.json("show", "HEAD")["timestamp"] == "Day 5, night"
    assert merged.json("brief")["story_time"] == "Day 5, night"
    merged("event", "Morning", "--set", "old-zhou.state.mood=sleepy")
    assert merged.json("story")["events"][-1]["story_time"] == "Day 5, night"


def test_a_merge_keeps_our_time_when_the_merged_line_set_none(flat_world: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Dawn", "--at", "Day 3", "--set", "old-zhou.state.mood=awake")
    narr("branch", "quiet")
    narr("switch", "quiet")
    narr("event", "Rain", "--set", "elder-mo.state.mood=wet")
    narr("switch", "main")
    narr("event", "Dusk", "--at", "Day 4", "--set", "old-zhou.state.mood=tired")
    narr("merge", "quiet")
    assert narr.json("show", "HEAD")["timestamp"] is None
    assert narr.json("status")["story_time"]["value"] == "Day 4"


def test_the_brief_gives_far_chapters_by_their_summaries(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    first = "# Chapter 1\n\nLin Yuan walks to the ferry. He thinks of his sister.\n"
    (tmp_path / "c1.md").write_text(first, "utf-8")
    narr("chapter", str(tmp_path / "c1.md"), "--accept", "all",
         "--set", "2:missing-sister.state.status=progressing")
    for n in range(2, 7):
        (tmp_path / f"c{n}.md").write_text(
            f"# Chapter {n}\n\nOld Zhou walks to the {'gate' if n % 2 else 'ferry'}.\n", "utf-8")
        narr("chapter", str(tmp_path / f"c{n}.md"), "--accept", "all")
    brief = narr.json("brief", "--budget", "1500")
    assert brief["used"] <= 1500
    far = [i for i in brief["items"] if i["section"] == "chapters"]
    assert far and far[0]["chapter"]["number"] == 1  # it set up a thread still open
    assert far[0]["text"] == ("Chapter 1: Lin Yuan goes to Cold River Ferry; The Search for Xue "
                              "is progressing. Left open: The Search for Xue.")
    assert all(i["section"] != "events" or not i["text"].startswith("Chapter")
               for i in brief["items"])  # a chapter's own commit is no recent event
    numbers = [i["chapter"]["number"] for i in far]
    assert 5 not in numbers and 6 not in numbers  # the last chapters are told by their events
    assert "\nchapters:\n  Chapter 1: Lin Yuan goes" in narr("brief", "--budget", "1500").stdout


def test_budgets_stop_a_reading_with_one_clear_error(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    long = "Lin Yuan walks to the ferry. Lin Yuan walks to the gate. " * 400
    err = narr("audit", "-", "--budget", "0.05", input=long, expect=OutOfTimeError.exit_code).stderr
    assert err.startswith("narr: error: the audit ran past its time budget of 0.05 s: it had read ")
    assert "--budget SECONDS" in err
    (tmp_path / "long.md").write_text(long, "utf-8")
    head = narr.json("show")["commit"]
    err = narr("chapter", str(tmp_path / "long.md"), "--accept", "all", "--budget", "0.05",
               expect=OutOfTimeError.exit_code).stderr
    assert "the chapter's review ran past its time budget of 0.05 s" in err
    assert narr.json("show")["commit"] == head
