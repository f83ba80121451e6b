"""Story lines in the studio: create and switch (hand edits set aside, as the CLI does), restore
and drop set-aside edits, merge with the conflicts shown side by side and resolved in the page,
replay a chain afresh or as recorded. Each result is confirmed through the library or the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import edit_node
from test_studio import browser, narr, narr_json, studio, world_now
from test_studio_live import _events, _ok, _open, _where

__all__ = ["browser"]

pytestmark = pytest.mark.slow
OUT = "document.querySelector('#lines-out').textContent"


def _lines(page: Any) -> None:
    _events(page)
    page.wait_for_selector("body[data-lines-ready]")


def _settled(page: Any) -> None:
    page.wait_for_function("document.querySelector('#lines-out').textContent !== ''")


def _confirm(page: Any) -> str:
    page.wait_for_selector("#confirm[open]")
    said = str(page.inner_text("#confirm-text"))
    page.click("#confirm-ok")
    return said


def test_create_switch_and_set_aside_edits(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _lines(page)
        page.fill("#branch-new", "alt")
        page.click("#branch-create")
        page.wait_for_function(f"{OUT}.includes('Now on alt')")
        assert _where(root)[0] == "alt"
        _ok(narr(root, "event", "Lin Yuan grows wary", "--set", "lin-yuan.state.mood=wary",
                 "--diffuser", "explicit"))
        # The page has seen the event land (a look taken while it was being written shows
        # its file as a hand edit for a moment, on the HEAD before it).
        page.wait_for_function(f"document.body.dataset.head === '{_where(root)[1]}'")
        # A hand edit, then back to main from the page: the edit is set aside, as the CLI does.
        edit_node(root, "su-qing", mood="curious")
        page.wait_for_function("document.querySelector('#world-status').textContent.includes('1 hand edit')")
        page.click("#branches li[data-branch='main'] button.switch")
        assert "set aside" in _confirm(page)
        page.wait_for_function(f"{OUT}.includes('Now on main')")
        assert _where(root)[0] == "main"
        assert world_now(root, "status")["edits"] == []
        kept = narr_json(root, "edits")["items"]
        assert len(kept) == 1 and kept[0]["changes"][0]["target"] == "su-qing"
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["mood"] != "wary"  # main's world
        # Restored on main, then dropped.
        page.wait_for_selector(f"#set-asides li[data-ref='{kept[0]['ref']}'] button.restore")
        page.click(f"#set-asides li[data-ref='{kept[0]['ref']}'] button.restore")
        page.wait_for_function(f"{OUT}.includes('Restored 1 change')")
        assert [(e["target"], e["new_value"]) for e in world_now(root, "status")["edits"]] == [
            ("su-qing", "curious")]
        page.click(f"#set-asides li[data-ref='{kept[0]['ref']}'] button.drop")
        _confirm(page)
        page.wait_for_function(f"{OUT}.includes('Dropped')")
        assert narr_json(root, "edits")["items"] == []
        # A new line without switching; a name git refuses is refused with a clear message.
        # The next name is typed while the page still refreshes after the answer (its
        # timeline held back here): what was typed stays.
        held: list[Any] = []
        def hold(route: Any) -> None:
            held.append(route)

        page.route("**/api/graph/events", hold)
        page.uncheck("#branch-switch")
        page.fill("#branch-new", "side-story")
        page.click("#branch-create")
        page.wait_for_function(f"{OUT}.includes('side-story')")
        assert {b["name"] for b in narr_json(root, "branch")["items"]} == {"main", "alt", "side-story"}
        assert _where(root)[0] == "main"
        page.fill("#branch-new", "bad..name")
        assert held  # the refresh is still waiting
        page.unroute("**/api/graph/events", hold)  # lets the held requests go on
        page.wait_for_function("!document.querySelector('#branch-create').disabled")
        assert page.input_value("#branch-new") == "bad..name"
        page.click("#branch-create")
        page.wait_for_selector("#lines-out.error")
        assert {b["name"] for b in narr_json(root, "branch")["items"]} == {"main", "alt", "side-story"}
        context.close()
    assert errors == []


def test_a_merge_resolved_in_the_page(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "branch", "alt"))
    _ok(narr(root, "switch", "alt"))
    _ok(narr(root, "event", "Lin Yuan grows wary", "--set", "lin-yuan.state.mood=wary",
             "--set", "lin-yuan.state.goal=leave", "--diffuser", "explicit"))
    _ok(narr(root, "switch", "main"))
    _ok(narr(root, "event", "Lin Yuan calms down", "--set", "lin-yuan.state.mood=calm",
             "--set", "lin-yuan.state.goal=stay", "--diffuser", "explicit"))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _lines(page)
        page.click("#branches li[data-branch='alt'] button.merge")
        _confirm(page)
        page.wait_for_selector("#merge-panel:not([hidden])")
        assert "stopped on 2 conflicts" in page.inner_text("#lines-out")
        mood = "#merge-conflicts tr[data-field='/state/mood']"
        row = page.inner_text(mood)
        assert "calm" in row and "wary" in row  # ours and theirs side by side
        page.click(f"{mood} button.take-theirs")
        page.wait_for_function(f"document.querySelector(\"{mood}\").classList.contains('resolved')")
        goal = "#merge-conflicts tr[data-field='/state/goal']"
        page.fill(f"{goal} input", "wander")
        page.click(f"{goal} button.take-value")
        page.wait_for_function(f"document.querySelector(\"{goal}\").classList.contains('resolved')")
        assert narr_json(root, "conflicts")["unresolved"] == 0
        page.click("#merge-continue")
        page.wait_for_selector("#merge-panel[hidden]", state="attached")
        log = world_now(root, "log")
        assert log[0]["kind"] == "merge"
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["mood"] == "wary"
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["goal"] == "wander"
        context.close()
    assert errors == []


def test_replay_afresh_or_as_recorded(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    first = world_now(root, "log")[0]
    genesis = world_now(root, "log")[-1]["commit"]
    _ok(narr(root, "reset", genesis))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _lines(page)
        page.click("#chains button[data-chain-reuse='1']")
        assert "no diffuser runs" in _confirm(page)
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 2")
        # As recorded, right on the event it left: the very event comes back (afresh makes a new one).
        assert world_now(root, "log")[0]["commit"] == first["commit"]
        context.close()
    assert errors == []
