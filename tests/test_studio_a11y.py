"""Keyboard and screen readers in the studio: every action reachable by keyboard with visible
focus, focus moved to the inspector after picking a node, the time slider announcing its event,
tabs answering arrow keys (the ARIA tabs pattern); and axe-core (from npm, ``npm install`` in
tests/a11y) finding no serious or critical violation on any view, in the light theme and the dark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_studio import browser, narr, studio, world_now
from test_studio_live import _events, _ok, _open, _open_node

__all__ = ["browser"]

pytestmark = pytest.mark.slow
AXE = Path(__file__).resolve().parent / "a11y" / "node_modules" / "axe-core" / "axe.min.js"


def _violations(page: Any, where: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings in ``where``, with the rule that a control's
    accessible name holds the words it shows (label-content-name-mismatch, off by default)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(f"axe.run(document.querySelector({json.dumps(where)}) || document,"
                          " {rules: {'label-content-name-mismatch': {enabled: true}}})"
                          ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
                          " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})))")
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_nothing_serious(flat_world: Path, browser: Any, theme: str) -> None:
    """Every view, in both themes: the world with a node's form open (and the fields its kind
    offers), the event view with an event open, the composer with its held-back changes, the
    manuscript, and the dialogs."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed (cd tests/a11y && npm install)")
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry", "--text",
             "Lin Yuan walked down to the ferry; Old Zhou watched him."))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        page.select_option("#theme", theme)
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.evaluate("document.querySelectorAll('#inspector details').forEach(d => d.open = true)")
        assert _violations(page, "body") == []
        page.click("#node-end")
        page.wait_for_selector("#end-node[open]")
        assert _violations(page, "#end-node") == []
        page.click("#end-node-cancel")
        page.click("#new-node-open")
        page.wait_for_selector("#new-node[open]")
        assert _violations(page, "#new-node") == []
        page.click("#new-node-cancel")
        _events(page)
        page.click("#timeline li:first-child button")
        page.wait_for_function("document.querySelector('#event-title').textContent.includes('ferry')")
        page.click("#compose-more summary")
        page.fill("#compose-text", "Old Zhou grunted that Su Qing had walked to the ferry.")
        page.click("#compose-dry")
        page.wait_for_selector("#compose-out .held")
        assert _violations(page, "#event-view") == []
        assert _violations(page, "header") == []
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        assert _violations(page, "#book-view") == []
        page.select_option("#book-order", "time")
        assert _violations(page, "#book-view") == []
        context.close()
    assert errors == []
    assert len(world_now(root, "log")) == 2


def _active(page: Any) -> str:
    return str(page.evaluate("document.activeElement.id || document.activeElement.tagName"))


def test_the_timeline_keeps_the_keyboard_where_it_was_when_it_is_drawn_again(
        flat_world: Path, browser: Any) -> None:
    """An event recorded elsewhere redraws the timeline under a keyboard user: the focus stays
    on the same event's button, not lost to the page."""
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        first = page.get_attribute("#timeline li:first-child button", "data-commit")
        page.focus(f"#timeline button[data-commit='{first}']")
        drawn = page.get_attribute("body", "data-events-ready")
        _ok(narr(root, "event", "Su Qing rests"))
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 3")
        page.wait_for_function(f"document.body.dataset.eventsReady !== '{drawn}'")
        assert page.evaluate("document.activeElement.dataset.commit") == first
        context.close()
    assert errors == []


def test_a_session_by_keyboard(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    log = world_now(root, "log")
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        # Tabs: arrow keys move between them and show them; one tab stop.
        page.focus("#tab-world")
        page.keyboard.press("ArrowRight")
        assert _active(page) == "tab-events"
        assert page.get_attribute("#tab-events", "aria-selected") == "true"
        assert page.locator("#event-view").is_visible() and page.locator("#world-view").is_hidden()
        assert page.get_attribute("#tab-world", "tabindex") == "-1"
        page.keyboard.press("Home")
        assert _active(page) == "tab-world" and page.locator("#world-view").is_visible()
        # Enter on a list entry: the node opens and focus moves to it, visibly.
        page.focus("#node-list button[data-id='lin-yuan']")
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        page.keyboard.press("Enter")
        page.wait_for_function("document.activeElement.id === 'node-title'")
        assert "Lin Yuan" in page.inner_text("#node-title")
        page.keyboard.press("Tab")
        assert _active(page) != "BODY"
        # A field changed by keyboard: a hand edit, as narr status says.
        page.focus("#node-fields input[data-path='state.mood']")
        page.keyboard.press("Control+A")
        page.keyboard.type("resolved")
        page.keyboard.press("Enter")
        page.wait_for_selector("#node-message.ok")
        assert [(e["target"], e["field"], e["new_value"]) for e in world_now(root, "status")["edits"]] == [
            ("lin-yuan", "/state/mood", "resolved")]
        # The slider says which event it stands at, in words.
        page.focus("#time-slider")
        assert "after event" in (page.get_attribute("#time-slider", "aria-valuetext") or "")
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("document.querySelector('#time-slider').getAttribute('aria-valuetext')"
                               ".startsWith('event ')")
        said = page.get_attribute("#time-slider", "aria-valuetext") or ""
        assert log[1]["content"] in said and "of 1" in said, said  # the genesis, of the line's events
        page.keyboard.press("End")
        page.wait_for_function("document.querySelector('#time-label').textContent === 'now'")
        # An event recorded by keyboard, then opened from the timeline by Enter.
        page.focus("#tab-world")
        page.keyboard.press("ArrowRight")
        page.wait_for_selector("body[data-events-ready]")
        page.focus("#compose-text")
        page.keyboard.type("Lin Yuan sleeps at the ferry")
        page.focus("#compose-record")
        page.keyboard.press("Enter")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 3")
        assert world_now(root, "log")[0]["content"] == "Lin Yuan sleeps at the ferry"
        page.focus("#timeline li:first-child button")
        page.keyboard.press("Enter")
        page.wait_for_function("document.activeElement.id === 'event-title'")
        assert "sleeps" in page.inner_text("#event-title")
        context.close()
    assert outline not in ("none", "")
    assert errors == []


ACTIONS = """(root) => [...document.querySelector(root).querySelectorAll(
    'button, input, select, textarea, summary, a[href], [tabindex="0"]')]
  .filter((e) => !e.disabled && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden'
    && e.tabIndex >= 0 && !e.closest('dialog:not([open]), details:not([open]) > :not(summary)'))
  .map(KEY)"""
KEY = ("((e) => e.id || (e.dataset.id && `${e.closest('[id]').id}:${e.dataset.id}`)"
       " || (e.dataset.commit && `event:${e.dataset.commit}`)"
       " || (e.dataset.path && `field:${e.dataset.path}`)"
       " || `${e.closest('[id]').id}:${e.tagName}:"
       "${e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40)}`)")


def _tab_through(page: Any, root: str) -> tuple[set[str], list[str]]:
    """Tab from the top of the page to its end: what took focus, and any that showed no focus."""
    wanted = page.evaluate(ACTIONS.replace("KEY", KEY), root)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.focus("body")
    reached: set[str] = set()
    unseen: list[str] = []
    for _ in range(len(wanted) + 40):
        page.keyboard.press("Tab")
        if _active(page) == "BODY":  # past the last control, before the first again
            continue
        key, ring = page.evaluate(f"[{KEY}(document.activeElement), "
                                  "getComputedStyle(document.activeElement).outlineStyle]")
        if key in reached:
            continue
        reached.add(key)
        if ring in ("none", ""):
            unseen.append(key)
    return set(wanted) - reached, unseen


def test_tab_reaches_every_action_with_visible_focus(flat_world: Path, browser: Any) -> None:
    """Every control of the world view (a node open), the event view (an event open) and the
    composer (all its parts shown) is reached by Tab, each with a visible focus ring; the graphs
    too, where arrow keys and Enter pick a node or an event as a click does."""
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    from narrative.api import get_node
    from narrative.store.worldrepo import WorldRepo

    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        missed, unseen = _tab_through(page, "#world-view")
        assert missed == set() and unseen == []
        assert len(page.evaluate(ACTIONS.replace("KEY", KEY), "#world-view")) > 40  # the list, the inspector
        # The relation network by keyboard: the cursor names a node; Enter opens it in the inspector.
        page.focus("#world-graph")
        page.keyboard.press("ArrowRight")
        said = page.inner_text("#world-graph-cursor")
        picked = page.evaluate("window.narrStudio.worldCy.nodes('.cursor').id()")
        assert picked and picked != "lin-yuan"
        page.keyboard.press("Enter")
        page.wait_for_function("document.activeElement.id === 'node-title'")
        with WorldRepo.open(root) as wr:
            name = get_node(wr, picked).node.name
        assert said.startswith(name) and page.inner_text("#node-title").startswith(name)
        # The events view, opened by keyboard, an event opened, the composer's extras shown.
        page.focus("#tab-world")
        page.keyboard.press("ArrowRight")
        page.wait_for_selector("body[data-events-ready]")
        page.click("#compose-more summary")
        page.focus("#event-graph")
        page.keyboard.press("Home")
        assert "Genesis" in page.inner_text("#event-graph-cursor")
        page.keyboard.press("Enter")
        page.wait_for_function("document.activeElement.id === 'event-title'")
        genesis = world_now(root, "log")[-1]
        assert genesis["content"] in page.inner_text("#event-title")
        missed, unseen = _tab_through(page, "#event-view")
        assert missed == set() and unseen == []
        # The manuscript: its order, its chapters and scenes, every name marked in the prose.
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        missed, unseen = _tab_through(page, "#book-view")
        assert missed == set() and unseen == []
        context.close()
    assert errors == []
