"""The manuscript beside the world: the story line as chapters, scenes and passages, each
passage's prose with the world's names marked and its changes beside it; from a node, the
passages that name it; story time as an axis where it parses. The engine first (chapters from
records, and from the events before there are any), then the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI

from narrative.engine.manuscript import ChapterRecord, chapter_records, manuscript, mentions, time_key
from narrative.store.worldrepo import WorldRepo


@pytest.mark.parametrize(("text", "key"), [
    ("Day 3, dusk", [1, 0, 3, 5]), ("day 3", [1, 0, 3, 0]), ("the third day, at dawn", [1, 0, 3, 1]),
    ("Day 3, night", [1, 0, 3, 6]), ("Year 2, Day 5, morning", [1, 2, 5, 2]),
    ("第三日黄昏", [1, 0, 3, 5]), ("第十二天夜", [1, 0, 12, 6]), ("第二年第三日清晨", [1, 2, 3, 1]),
    ("2024-05-03", [0, 20240503, 0]), ("2024年5月3日 10:30", [0, 20240503, 630]),
    ("Day 4 09:15", [1, 0, 4, 655]), ("evening", None), ("after the storm", None), ("", None),
    (None, None),
])
def test_story_times_that_parse(text: str | None, key: list[int] | None) -> None:
    assert time_key(text) == key


def test_time_keys_order_a_day() -> None:
    times = ["Day 3, night", "Day 3, dawn", "Day 2, dusk", "Day 3, noon", "Day 3, afternoon",
             "Day 3, morning"]
    assert sorted(times, key=lambda t: time_key(t) or []) == [
        "Day 2, dusk", "Day 3, dawn", "Day 3, morning", "Day 3, noon", "Day 3, afternoon", "Day 3, night"]


@pytest.fixture
def told(flat_world: Path) -> tuple[Path, list[str]]:
    """Three events told in prose, the second closing its scene, the last with no prose."""
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry", "--at", "Day 3, dusk", "--text",
         "Rain fell on the river. Lin Yuan walked down from Qingyun Gate; Old Zhou watched him come.")
    narr("event", "苏晴怀疑林远", "--text", "苏晴看着林远，心里起了疑。", "--close-scene")
    narr("event", "Lin Yuan sleeps", "--at", "Day 2, night")
    return flat_world, [e["commit"] for e in reversed(narr.json("log")["items"][:3])]


def _prose(passage: dict[str, Any]) -> str:
    return "".join(text for text, _ in passage["pieces"])


def test_the_events_are_the_manuscript_before_any_chapter_is_recorded(told: tuple[Path, list[str]]) -> None:
    root, commits = told
    with WorldRepo.open(root) as wr:
        book = manuscript(wr)
    assert book["source"] == "events" and book["total"] == book["shown"] == 3
    [chapter] = book["chapters"]
    assert (chapter["number"], chapter["recorded"]) == (1, False)
    scenes = chapter["scenes"]
    assert [[p["commit"] for p in s["passages"]] for s in scenes] == [commits[:2], commits[2:]]
    first, second = scenes[0]["passages"]
    assert _prose(first).startswith("Rain fell on the river.") and first["told"]
    marked = {text: node for text, node in first["pieces"] if node}
    assert marked == {"Lin Yuan": "lin-yuan", "Qingyun Gate": "qingyun-gate", "Old Zhou": "old-zhou"}
    assert {(c["target"], c["field"], c.get("new")) for c in first["changes"]} >= {
        ("lin-yuan", "/state/location", "ferry")}
    assert {n for _, n in second["pieces"] if n} == {"su-qing", "lin-yuan"}
    assert (first["story_time"], first["time_key"]) == ("Day 3, dusk", [1, 0, 3, 5])
    assert second["story_time"] == "Day 3, dusk"  # the time in force
    last = scenes[1]["passages"][0]
    assert (_prose(last), last["told"], last["time_key"]) == ("Lin Yuan sleeps", False, [1, 0, 2, 6])
    assert book["names"]["old-zhou"] == "Old Zhou"


def _the_ferry(commits: list[str]) -> ChapterRecord:
    """Chapter 7, recorded as the first two events, in two scenes."""
    return ChapterRecord(
        number=7, title="The Ferry",
        text="Rain fell. Lin Yuan walks to the ferry.\n\n* * *\n\n苏晴怀疑林远。",
        scenes=["Rain fell. Lin Yuan walks to the ferry.", "苏晴怀疑林远。"],
        first_event=commits[0], last_event=commits[1])


def test_a_recorded_chapter_reads_from_its_record(told: tuple[Path, list[str]]) -> None:
    root, commits = told
    record = _the_ferry(commits)
    with WorldRepo.open(root) as wr:
        book = manuscript(wr, records=[record])
    assert book["source"] == "records"
    chapter, after = book["chapters"]
    assert (chapter["number"], chapter["title"], chapter["recorded"]) == (7, "The Ferry", True)
    one, two = chapter["scenes"]
    assert "".join(t for t, _ in one["pieces"]) == record.scenes[0]
    assert [p["commit"] for p in one["passages"]] == [commits[0]]
    assert [p["commit"] for p in two["passages"]] == [commits[1]]
    assert ("苏晴", "su-qing") in [tuple(p) for p in two["pieces"]]
    # The event told after the chapter keeps its place, in no recorded chapter.
    assert (after["number"], after["title"], after["recorded"]) == (1, None, False)
    assert [[p["commit"] for p in s["passages"]] for s in after["scenes"]] == [commits[2:]]


def test_events_outside_a_recorded_chapter_keep_their_place(told: tuple[Path, list[str]]) -> None:
    root, commits = told
    middle = ChapterRecord(number=2, title="", text="苏晴怀疑林远。", scenes=[],
                           first_event=commits[1], last_event=commits[1])
    elsewhere = ChapterRecord(number=9, title="Gone", text="x", scenes=["x"],
                              first_event="no-such-event", last_event=commits[2])
    with WorldRepo.open(root) as wr:
        book = manuscript(wr, records=[elsewhere, middle])
    shown = [(c["number"], c["recorded"], [p["commit"] for s in c["scenes"] for p in s["passages"]])
             for c in book["chapters"]]
    assert shown == [(1, False, commits[:1]), (2, True, commits[1:2]), (2, False, commits[2:])]
    assert [len(c["scenes"]) for c in book["chapters"]] == [1, 1, 1]
    assert "".join(t for t, _ in book["chapters"][1]["scenes"][0]["pieces"]) == "苏晴怀疑林远。"


FERRY = """\
# Chapter 1: The Ferry

Lin Yuan walks to the ferry. Su Qing walks to the ferry.

* * *

Lin Yuan gives the black ring to Su Qing.
"""


def _recorded(root: Path, tmp_path: Path) -> CLI:
    """The Ferry recorded with ``narr chapter`` (two scenes, three events), then an event told
    after it."""
    narr = CLI(root)
    (tmp_path / "ferry.md").write_text(FERRY, "utf-8")
    narr("chapter", str(tmp_path / "ferry.md"), "--accept", "all")
    narr("event", "Night falls on the river", "--at", "Day 4, night",
         "--text", "Night fell on the river; Old Zhou lit his lamp.")
    return narr


def _shown(book: dict[str, Any]) -> list[tuple[int, str | None, bool, list[list[str]]]]:
    return [(c["number"], c["heading"], c["recorded"],
             [[p["content"] for p in s["passages"]] for s in c["scenes"]]) for c in book["chapters"]]


def test_a_chapter_recorded_with_narr_chapter_is_in_the_manuscript(flat_world: Path, tmp_path: Path) -> None:
    narr = _recorded(flat_world, tmp_path)
    with WorldRepo.open(flat_world) as wr:
        [record] = chapter_records(wr)
        book = manuscript(wr)
    assert (record.number, record.title, record.heading) == (1, *["Chapter 1: The Ferry"] * 2)
    assert record.scenes == ["Lin Yuan walks to the ferry. Su Qing walks to the ferry.",
                             "Lin Yuan gives the black ring to Su Qing."]
    assert record.summary == narr.json("log", "--chapters")["items"][0]["summary"]
    assert book["source"] == "records"
    assert _shown(book) == [
        (1, "Chapter 1: The Ferry", True, [
            ["Lin Yuan walks to the ferry.", "Su Qing walks to the ferry."],
            ["Lin Yuan gives the black ring to Su Qing."]]),
        (1, None, False, [["Night falls on the river"]])]  # told outside a chapter
    ferry = book["chapters"][0]
    assert ["".join(t for t, _ in s["pieces"]) for s in ferry["scenes"]] == record.scenes
    assert [p["sentence"] for s in ferry["scenes"] for p in s["passages"]] == [1, 2, 3]
    assert book["chapters"][1]["scenes"][0]["passages"][0]["sentence"] is None
    gives = ferry["scenes"][1]["passages"][0]["changes"]
    assert any(c["target"] == "black-ring" for c in gives) or any("black-ring" in c["field"] for c in gives)


def test_a_chapter_reset_away_leaves_the_manuscript(flat_world: Path, tmp_path: Path) -> None:
    CLI(flat_world)("event", "Dawn comes", "--at", "Day 3, dawn")
    narr = _recorded(flat_world, tmp_path)
    narr("reset", "--chapter", "1")
    with WorldRepo.open(flat_world) as wr:
        assert chapter_records(wr) == []
        book = manuscript(wr)
    assert book["source"] == "events"
    assert _shown(book) == [(1, None, False, [["Dawn comes"]])]


def test_a_reset_into_a_chapter_keeps_the_events_left(flat_world: Path, tmp_path: Path) -> None:
    narr = _recorded(flat_world, tmp_path)
    log = narr.json("log")["items"]
    second = next(e for e in log if e["content"] == "Su Qing walks to the ferry.")
    narr("reset", second["commit"])
    with WorldRepo.open(flat_world) as wr:
        book = manuscript(wr)
    assert _shown(book) == [(1, "Chapter 1: The Ferry", True, [
        ["Lin Yuan walks to the ferry.", "Su Qing walks to the ferry."]])]  # the scene undone is gone


def test_a_chapter_on_a_merged_branch_is_in_the_manuscript(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    narr("event", "Dawn comes", "--at", "Day 3, dawn", "--set", "old-zhou.state.mood=awake")
    narr("branch", "what-if")
    narr("switch", "what-if")
    (tmp_path / "ferry.md").write_text(FERRY, "utf-8")
    narr("chapter", str(tmp_path / "ferry.md"), "--accept", "all")
    narr("event", "Night falls on the river", "--at", "Day 4, night")
    narr("switch", "main")
    narr("event", "Elder Mo wakes", "--set", "elder-mo.state.mood=awake")
    narr("merge", "what-if")
    with WorldRepo.open(flat_world) as wr:
        [record] = chapter_records(wr)
        book = manuscript(wr)
    assert record.line == "what-if"
    assert [(c["number"], c["recorded"], c["line"]) for c in book["chapters"]] == [
        (1, False, None), (1, True, "what-if"), (2, False, None)]
    before, ferry, after = ([p["content"] for s in c["scenes"] for p in s["passages"]]
                            for c in book["chapters"])
    assert before == ["Dawn comes", "Elder Mo wakes"]
    assert ferry == ["Lin Yuan walks to the ferry.", "Su Qing walks to the ferry.",
                     "Lin Yuan gives the black ring to Su Qing."]
    assert after == ["Night falls on the river"]


def test_the_passages_that_name_a_node(told: tuple[Path, list[str]]) -> None:
    root, commits = told
    with WorldRepo.open(root) as wr:
        found = mentions(wr, "林远")  # by any of its names
        assert found["node"] == "lin-yuan" and [p["commit"] for p in found["passages"]] == commits
        assert ["Lin Yuan", "lin-yuan"] in found["passages"][0]["excerpt"]
        assert [p["commit"] for p in mentions(wr, "old-zhou")["passages"]] == commits[:1]
        assert mentions(wr, "jade-token")["passages"] == []


def test_a_world_with_no_events_has_an_empty_manuscript(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        book = manuscript(wr)
    assert (book["chapters"], book["total"]) == ([], 0)


# --- in the browser ----------------------------------------------------------------------------

from test_studio import browser, studio  # noqa: E402
from test_studio_live import _open, _open_node  # noqa: E402

__all__ = ["browser"]


@pytest.mark.slow
def test_the_manuscript_in_the_page(told: tuple[Path, list[str]], browser: Any) -> None:
    root, commits = told
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        # The story so far, in two scenes, each passage's prose with the changes it made beside it.
        assert page.inner_text("#book h2") == "The story so far"
        assert page.locator("#book .scene").count() == 2
        first = page.locator(f"#passage-{commits[0]}")
        assert first.locator(".prose").inner_text().startswith("Rain fell on the river.")
        assert "Lin Yuan location: Qingyun Gate → Cold River Ferry" in first.locator(".made").inner_text()
        assert "Day 3, dusk" in first.locator(".made").inner_text()
        second = page.locator(f"#passage-{commits[1]}")
        assert "Su Qing suspects → Lin Yuan" in second.locator(".made").inner_text()
        # The world's names are marked in the prose, in both languages; a click opens the node.
        marks = first.locator("button.mark").all_inner_texts()
        assert marks == ["Lin Yuan", "Qingyun Gate", "Old Zhou"]
        assert second.locator("button.mark").all_inner_texts() == ["苏晴", "林远"]
        second.locator("button.mark[data-node='su-qing']").click()
        page.wait_for_function("document.querySelector('#node-title').textContent.includes('Su Qing')")
        assert page.get_attribute("#tab-world", "aria-selected") == "true"
        # From a node, the passages that name it; one opens the manuscript at that passage.
        _open_node(page, "old-zhou", "Old Zhou")
        page.wait_for_function("document.querySelectorAll('#node-mentions button').length === 1")
        assert "Old Zhou" in page.inner_text("#node-mentions")
        page.click("#node-mentions button")
        page.wait_for_function(f"document.activeElement.id === 'passage-{commits[0]}'")
        assert page.get_attribute("#tab-book", "aria-selected") == "true"
        # By story time: Day 2 before Day 3, whatever the order told.
        page.select_option("#book-order", "time")
        times = page.locator("#book h2.time").all_inner_texts()
        assert [t.split(" (")[0] for t in times] == ["Day 2, night", "Day 3, dusk"]
        order = page.eval_on_selector_all("#book .passage", "ps => ps.map(p => p.dataset.commit)")
        assert order == [commits[2], commits[0], commits[1]]
        context.close()
    assert errors == []


@pytest.mark.slow
def test_a_recorded_chapter_in_the_page(told: tuple[Path, list[str]], browser: Any) -> None:
    """The page reads a recorded chapter as the engine gives it: the chapter's own prose, scene
    by scene, each event's changes beside it, and the events told after it in their place."""
    from narrative.serve.studio import typed

    root, commits = told
    record = _the_ferry(commits)
    with WorldRepo.open(root) as wr:
        answer = json.dumps(typed("studio_manuscript", manuscript(wr, records=[record])))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        page.route("**/api/studio/manuscript*", lambda route: route.fulfill(
            status=200, content_type="application/json", body=answer))
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        headings = page.locator("#book h2").all_inner_texts()
        assert headings == ["Chapter 7: The Ferry", "Told outside a chapter"]
        assert "No chapter is recorded yet" not in page.inner_text("#book")
        one, two = page.locator("#chapter-7 .scene").all()
        assert one.locator(":scope > .prose").inner_text() == record.scenes[0]
        assert one.locator(":scope > .prose button.mark").all_inner_texts() == ["Lin Yuan", "the ferry"]
        assert two.locator(":scope > .prose button.mark").all_inner_texts() == ["苏晴", "林远"]
        commits_in = "ps => ps.map(p => p.dataset.commit)"
        assert one.locator(".passage").evaluate_all(commits_in) == commits[:1]
        assert "Lin Yuan location: Qingyun Gate → Cold River Ferry" in one.locator(".made").inner_text()
        assert two.locator(".passage").evaluate_all(commits_in) == commits[1:2]
        assert page.locator("#told-1 .passage").evaluate_all(commits_in) == commits[2:]
        assert page.locator("#book-nav a").all_inner_texts()[0] == "Chapter 7: The Ferry"
        two.locator(":scope > .prose button.mark[data-node='su-qing']").click()
        page.wait_for_function("document.querySelector('#node-title').textContent.includes('Su Qing')")
        context.close()
    assert errors == []


@pytest.mark.slow
def test_a_chapter_recorded_with_narr_chapter_in_the_page(flat_world: Path, tmp_path: Path,
                                                          browser: Any) -> None:
    """A real recorded chapter, through the studio's own route: its prose once, each event
    beside its scene by its sentence and changes, and the event told after it in full."""
    _recorded(flat_world, tmp_path)
    with studio(flat_world) as info:
        context, page, errors = _open(browser, info["url"])
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        headings = page.locator("#book h2").all_inner_texts()
        assert headings == ["Chapter 1: The Ferry", "Told outside a chapter"]
        one, two = page.locator("#chapter-1 .scene").all()
        assert one.locator(":scope > .prose").inner_text() == (
            "Lin Yuan walks to the ferry. Su Qing walks to the ferry.")
        # The chapter's prose is not said again under it: each event is named by its sentence.
        assert page.locator("#chapter-1 .passage .prose").count() == 0
        tags = one.locator(".passage .text .tag").all_inner_texts()
        assert tags == ["Sentence 1: “Lin Yuan walks to the ferry.”",
                        "Sentence 2: “Su Qing walks to the ferry.”"]
        assert "black" in two.locator(".passage .made").inner_text().lower()
        # The event told after the chapter reads in its own prose.
        assert page.locator("#told-1 .passage .prose").inner_text() == (
            "Night fell on the river; Old Zhou lit his lamp.")
        context.close()
    assert errors == []
