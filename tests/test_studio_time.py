"""The time slider in the page: every event it moves to for the first time shows what the library
reports at that event (names, the nodes listed and drawn, every edge), in the overview and around
a focus, confirmed against the library in this process, not against the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_studio import browser, narr, studio
from test_studio_live import _ok, _open

__all__ = ["browser"]

pytestmark = pytest.mark.slow

SHOWN = """() => ({
  listed: [...document.querySelectorAll('#node-list button[data-id]')].map(b => b.dataset.id),
  names: [...document.querySelectorAll('#node-list button[data-id]')]
    .map(b => [b.dataset.id, b.querySelector('.name').textContent]),
  drawn: window.narrStudio.worldCy.nodes().map(n => n.id()).sort(),
  edges: window.narrStudio.worldCy.edges().map(e => [e.data('source'), e.data('type'), e.data('target')]),
})"""


def _library(root: Path, commit: str | None, focus: str | None) -> dict[str, Any]:
    from narrative.api import world_view
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(root) as wr:
        view = world_view(wr, at=commit, around=focus, depth=2 if focus else 1).to_json()
    return {"listed": [n["id"] for n in view["nodes"]],
            "names": {n["id"]: n["name"] for n in view["nodes"]},
            "drawn": sorted(n["id"] for n in view["graph"]["nodes"]),
            "edges": sorted([e["source"], e["type"], e["target"]] for e in view["graph"]["edges"])}


def _shown(page: Any) -> dict[str, Any]:
    got = page.evaluate(SHOWN)
    got["edges"] = sorted(got["edges"])
    return got


def _same(page: Any, expected: dict[str, Any]) -> None:
    got = _shown(page)
    assert sorted(got["listed"]) == sorted(expected["listed"])  # (in the order of the names shown)
    assert dict(got["names"]) == expected["names"]  # each by its name as the library has it then
    assert got["drawn"] == expected["drawn"]
    assert got["edges"] == expected["edges"]


def test_each_unseen_event_shows_the_world_the_library_reports_then(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "new", "character", "Wei Lan", "--alias", "魏兰", "--kind", "person"))
    _ok(narr(root, "event", "Wei Lan meets Old Zhou", "--relate", "Wei Lan:knows:Old Zhou",
             "--diffuser", "explicit"))
    _ok(narr(root, "event", "Su Qing takes the ring", "--set", "black-ring.state.holder=su-qing",
             "--relate", "Su Qing:suspects:Elder Mo", "--diffuser", "explicit"))
    _ok(narr(root, "event", "Old Zhou is gone", "--expire", "old-zhou", "--diffuser", "explicit"))
    _ok(narr(root, "event", "Lin Yuan no longer knows the ring's origin",
             "--unrelate", "lin-yuan:knows:ring-origin", "--diffuser", "explicit"))
    from narrative.engine.studio import event_view
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(root) as wr:
        story = [e["commit"] for e in event_view(wr).to_json()["events"]][::-1]  # oldest first
    assert len(story) == 5  # the genesis and four events (the new node rides with the first)
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _same(page, _library(root, None, None))
        # the story line comes after the world view: the slider spans it once it has come
        page.wait_for_function(f"document.querySelector('#time-slider').max === '{len(story) - 1}'")
        page.focus("#time-slider")
        for i in range(len(story) - 2, -1, -1):  # back through the story, each event new to the server
            ticket = page.get_attribute("body", "data-world-ready")
            page.keyboard.press("ArrowLeft")
            page.wait_for_function(f"document.body.dataset.worldReady !== '{ticket}'")
            _same(page, _library(root, story[i], None))
        # Around a node, forward again: the neighbourhood as the library draws it then.
        page.click("#node-list button[data-id='su-qing']")
        page.wait_for_function("document.querySelector('#world-graph').dataset.focus === 'su-qing'")
        _same(page, _library(root, story[0], "su-qing"))
        page.focus("#time-slider")
        for i in range(1, len(story) - 1):
            ticket = page.get_attribute("body", "data-world-ready")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"document.body.dataset.worldReady !== '{ticket}'")
            _same(page, _library(root, story[i], "su-qing"))
        assert errors == []
        context.close()
