"""What the studio reports after a reset, a refused revert and with its server gone: the names
narr itself gives (a chain's name, an event's short id and title), and one clear notice instead
of an error in every panel.

Each result is confirmed through the library or the CLI, not through the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_studio import browser, narr, studio, world_now
from test_studio_a11y import AXE, _violations
from test_studio_live import _ok, _open, _open_event, _open_node

from narrative.ids import short_event_id

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.slow

HASH = re.compile(r"\b[0-9a-f]{40}\b")


def test_a_reset_names_the_abandoned_chain_as_narr_reset_does(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    genesis = world_now(root, "log")[-1]["commit"]
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_event(page, genesis, "Genesis")
        page.click("#event-reset")
        page.click("#confirm-ok")
        page.wait_for_selector("#compose-out .ok")
        said = page.inner_text("#compose-out")
        chains = world_now(root, "chains")
        assert len(chains) == 1 and [e["commit"] for e in world_now(root, "log")] == [genesis]
        name = chains[0]["name"]
        assert f"the chain {name}" in said and f"narr replay {name}" in said, said
        assert "refs/" not in said and not HASH.search(said), said
        context.close()
    assert errors == []


def test_a_refused_revert_names_the_event_by_its_short_id_and_title(flat_world: Path,
                                                                    browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    _ok(narr(root, "event", "Time passes", "--set", "Lin Yuan.state.location=Library Pavilion"))
    log = world_now(root, "log")
    ferry = log[1]
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_event(page, ferry["commit"], "ferry")
        page.click("#event-revert")
        page.click("#confirm-ok")
        page.wait_for_selector("#compose-out .error")
        said = page.inner_text("#compose-out")
        assert f"event {short_event_id(ferry['id'])} “Lin Yuan walks to the ferry”" in said, said
        assert not HASH.search(said), said
        assert "/state/location" in said
        assert world_now(root, "log") == log  # refused: nothing recorded
        context.close()
    assert errors == []
    # The CLI says it the same way.
    proc = narr(root, "revert", "HEAD~1")
    assert proc.returncode != 0
    assert f"event {short_event_id(ferry['id'])} “Lin Yuan walks to the ferry”" in proc.stderr


def test_a_stopped_server_is_one_notice_with_how_to_start_it(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _ok(narr(root, "serve", "--stop"))
        # Every panel asks the server for something; none of them says a raw error.
        page.click("#node-list button[data-id='lin-yuan']")
        page.wait_for_selector("#offline:not([hidden])")
        page.click("#tab-events")
        page.click("#tab-world")
        notice = page.inner_text("#offline")
        assert "not answering" in notice and f"narr serve --port {info['port']}" in notice, notice
        assert "narr studio" in notice
        if AXE.exists():  # the notice, as a screen reader meets it: nothing serious either
            assert _violations(page, "body") == []
        body = page.inner_text("body")
        assert "Failed to fetch" not in body and "TypeError" not in body
        assert body.count("not answering") <= 2  # the notice, and at most the panel just used
        # Started again on the same port: the notice goes and the page works as before.
        _ok(narr(root, "serve", "--detach", "--port", str(info["port"])))
        page.wait_for_selector("#offline[hidden]", state="attached")
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.fill("#node-fields input[data-path='state.mood']", "steady")
        page.press("#node-fields input[data-path='state.mood']", "Enter")
        page.wait_for_selector("#node-message.ok")
        assert {(e["target"], e["new_value"]) for e in world_now(root, "status")["edits"]} == {
            ("lin-yuan", "steady")}
        context.close()
    assert errors == []
