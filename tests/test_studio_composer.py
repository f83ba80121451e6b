"""The composer in full: explicit changes by name, story time, narrative text, a diffuser, closing
the scene (unticked once recorded), and held-back changes applied. Each result is confirmed
through the library or the CLI, not through the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_studio import browser, narr_json, studio, world_now
from test_studio_live import _events, _open

__all__ = ["browser"]

pytestmark = pytest.mark.slow


def _add(page: Any, kind: str, spec: str) -> None:
    page.select_option("#change-kind", kind)
    page.fill("#change-spec", spec)
    page.click("#change-add")


def test_an_event_with_everything_narr_event_takes(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        page.fill("#compose-text", "Lin Yuan rests at the gate")
        page.click("#compose-more summary")
        page.wait_for_function("document.querySelectorAll('#compose-diffuser option').length > 2")
        _add(page, "set", "Lin Yuan.state.mood=calm")
        _add(page, "relate", "苏晴:suspects:林远")
        _add(page, "unrelate", "Lin Yuan:distrusts:Su Qing")
        _add(page, "expire", "Old Zhou")
        _add(page, "set", "Old Zhou.state.mood=gone")
        page.click("#compose-changes li:last-child button")  # changed my mind about that one
        assert page.locator("#compose-changes li").count() == 4
        page.fill("#compose-at", "day 3, dusk")
        page.fill("#compose-prose", "He sat by the gate and let the rain pass.")
        page.select_option("#compose-diffuser", "explicit")
        page.check("#compose-close")
        page.click("#compose-record")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 2")
        record = narr_json(root, "show", "HEAD")
        assert record["content"] == "Lin Yuan rests at the gate"
        assert (record["timestamp"], record["narrative_text"], record["diffuser"], record["close_scene"]) == (
            "day 3, dusk", "He sat by the gate and let the rain pass.", "explicit", True)
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["mood"] == "calm"
        assert "suspects" in narr_json(root, "get", "su-qing")["node"]["relations"]
        assert "distrusts" not in narr_json(root, "get", "lin-yuan")["node"]["relations"]
        assert "old-zhou" not in {n["id"] for n in narr_json(root, "nodes")["items"]}
        # Recorded: the composer starts blank, "closes the scene" unticked.
        assert not page.is_checked("#compose-close")
        assert page.locator("#compose-changes li").count() == 0
        assert page.input_value("#compose-at") == page.input_value("#compose-prose") == ""
        # A change naming nobody: refused with the CLI's message, nothing recorded.
        page.fill("#compose-text", "A ghost sighs")
        _add(page, "set", "Nobody At All.state.mood=sad")
        page.click("#compose-record")
        page.wait_for_function("document.querySelector('#compose-out .error')")
        assert "Nobody At All" in page.inner_text("#compose-out")
        assert len(world_now(root, "log")) == 2
        context.close()
    assert errors == []


def test_held_back_changes_are_applied_when_asked(flat_world: Path, browser: Any) -> None:
    root = flat_world
    text = "Old Zhou grunted that Su Qing had walked to the ferry."
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        page.fill("#compose-text", text)
        page.click("#compose-dry")
        page.wait_for_selector("#compose-out .held input.accept")
        assert "Su Qing had walked to the ferry" in page.inner_text("#compose-out")
        page.check("#compose-out .held input.accept[value='1']")
        page.click("#compose-dry")
        page.wait_for_function("document.querySelector('#compose-out').textContent.includes('dry run')")
        assert len(world_now(root, "log")) == 1
        page.click("#compose-record")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 2")
        assert narr_json(root, "get", "su-qing")["node"]["state"]["location"] == "ferry"
        # Recorded without it, then applied afterwards as an event of its own.
        page.fill("#compose-text", "Old Zhou grunted that Lin Yuan had walked to the Library Pavilion.")
        page.click("#compose-record")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 3")
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["location"] != "library-pavilion"
        page.wait_for_selector("#compose-out .held button.apply")
        page.click("#compose-out .held button.apply")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 4")
        log = world_now(root, "log")
        assert (log[0]["content"], log[0]["diffuser"]) == ("Lin Yuan had walked to the Library Pavilion",
                                                           "explicit")
        assert narr_json(root, "get", "lin-yuan")["node"]["state"]["location"] == "library-pavilion"
        context.close()
    assert errors == []
