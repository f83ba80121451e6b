"""Work the studio once lost or misplaced, each shown in the browser: a stale save that wrote
back another tab's field, a field form that carried its path to the next node, an ending that
hid what it recorded and then said it failed, a ``__proto__`` path that said "Saved", a name
with no limit in the editor, the story-line status left naming an old HEAD, labels cut at the
event graph's edges. Each result is confirmed through the library, not through the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import edit_node, node_file, read_node
from test_studio import browser, fetch, studio, world_now
from test_studio_live import _advanced, _events, _ok, _open, _open_event, _open_node

__all__ = ["browser"]

pytestmark = pytest.mark.slow


def _message(page: Any, kind: str) -> str:
    page.wait_for_selector(f"#node-message.{kind}")
    return str(page.inner_text("#node-message"))


def test_a_stale_save_keeps_the_other_tabs_field(flat_world: Path, browser: Any) -> None:
    """Tab two saves the mood; tab one, loaded before, saves its own change to another field of
    the same node from the file editor and, told the file changed, goes ahead: the mood tab two
    wrote is still there."""
    root = flat_world
    with studio(root) as info:
        one_ctx, one, errors = _open(browser, info["url"])
        two_ctx, two, errors2 = _open(browser, info["url"])
        for page in (one, two):
            _open_node(page, "lin-yuan", "Lin Yuan")
        node = json.loads(one.input_value("#node-editor"))
        node["state"]["health"] = "a cut on the hand"
        for page in (one, two):
            _advanced(page)
        one.fill("#node-editor", json.dumps(node, ensure_ascii=False, indent=2))
        edit = json.loads(two.input_value("#node-editor"))
        edit["state"]["mood"] = "resolved"
        two.fill("#node-editor", json.dumps(edit, ensure_ascii=False, indent=2))
        two.click("#node-save")
        two.wait_for_selector("#node-message.ok")
        one.click("#node-save")
        one.wait_for_selector("#confirm[open]")
        one.click("#confirm-ok")
        one.wait_for_selector("#node-message.ok")
        state = read_node(root, "lin-yuan")["state"]
        assert state["health"] == "a cut on the hand"
        assert state["mood"] == "resolved"  # tab two's, not written back by tab one
        one_ctx.close()
        two_ctx.close()
    assert errors == errors2 == []


def test_the_field_form_starts_empty_on_the_next_node(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.fill("#field-path", "state.wounds")
        page.fill("#field-value", "a cut on the hand")
        page.click("#field-set")
        _message(page, "ok")
        assert read_node(root, "lin-yuan")["state"]["wounds"] == "a cut on the hand"
        assert page.eval_on_selector_all("#field-form input", "is => is.map(i => i.value)") == ["", ""]
        page.fill("#field-path", "state.scars")  # typed, never set
        page.fill("#field-value", "none")
        _open_node(page, "su-qing", "Su Qing")
        assert page.eval_on_selector_all("#field-form input", "is => is.map(i => i.value)") == ["", ""]
        context.close()
    assert errors == []
    assert "wounds" not in read_node(root, "su-qing")["state"]


@pytest.mark.parametrize("path", ["__proto__.polluted", "constructor.prototype.polluted",
                                  "state.__proto__"])
def test_a_prototype_path_is_refused(served_world: Path, browser: Any, path: str) -> None:
    root = served_world
    file = node_file(root, "lin-yuan")
    before = file.read_bytes()
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.fill("#field-path", path)
        page.fill("#field-value", '"yes"')
        page.click("#field-set")
        said = _message(page, "error")
        assert "__proto__" in said or "constructor" in said, said
        assert page.evaluate("({}).polluted === undefined && Object.prototype.polluted === undefined")
        context.close()
    assert errors == []
    assert file.read_bytes() == before
    assert world_now(root, "status")["edits"] == []


def test_ending_a_node_says_what_it_records_and_stays_said(flat_world: Path, browser: Any) -> None:
    """The dialog names the hand edits of other nodes the event will record with it; once
    recorded, the page says so and goes on saying it (no error about the node just ended)."""
    root = flat_world
    edit_node(root, "su-qing", mood="wary")
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "old-zhou", "Old Zhou")
        page.click("#node-end")
        page.wait_for_selector("#end-node[open]")
        said = page.inner_text("#end-node")
        assert "Su Qing" in said and "mood" in said, said
        page.fill("#end-content", "Old Zhou leaves the ferry for good")
        page.click("#end-node-ok")
        page.wait_for_function("document.body.dataset.ended === 'old-zhou'")
        page.wait_for_timeout(1200)  # the refreshes that follow an event have come and gone
        shown = page.inner_text("#inspector")
        assert "Old Zhou leaves the ferry for good" in shown
        assert not page.query_selector("#inspector .error"), shown
        log = world_now(root, "log")
        assert log[0]["content"] == "Old Zhou leaves the ferry for good"
        assert {e["target"] for e in log[0]["edits"]} == {"su-qing"}
        context.close()
    assert errors == []


def test_one_limit_for_names_in_the_editor_and_the_api(served_world: Path, browser: Any) -> None:
    root = served_world
    file = node_file(root, "lin-yuan")
    before = file.read_bytes()
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        node = json.loads(page.input_value("#node-editor"))
        node["name"] = "x" * 10_000
        _advanced(page)
        page.fill("#node-editor", json.dumps(node))
        page.click("#node-save")
        assert "at most 200" in _message(page, "error")
        assert file.read_bytes() == before
        token = (root / ".git" / "narr" / "token").read_text().strip()
        status, body, _ = fetch(f"http://127.0.0.1:{info['port']}/api/nodes/lin-yuan", method="PUT",
                                body=json.dumps(node).encode(),
                                headers={"Authorization": f"Bearer {token}"})
        assert status == 422 and b"at most 200" in body, body  # not a valid node: the editor's words
        assert file.read_bytes() == before
        context.close()
    assert errors == []


def test_after_a_reset_the_story_line_status_is_not_stale(flat_world: Path, browser: Any) -> None:
    root = flat_world
    from test_studio import narr

    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    _ok(narr(root, "branch", "alt"))
    _ok(narr(root, "event", "Su Qing rests at the gate"))
    genesis = world_now(root, "log")[-1]["commit"]
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        page.click("#branches li[data-branch='alt'] button.switch")
        page.wait_for_function("document.querySelector('#lines-out').textContent.includes('Now on alt')")
        page.click("#branches li[data-branch='main'] button.switch")
        page.wait_for_function("document.querySelector('#lines-out').textContent.includes('Now on main')")
        assert "Su Qing rests" in page.inner_text("#lines-out")
        _open_event(page, genesis, "Genesis")
        page.click("#event-reset")
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 1")
        page.wait_for_timeout(500)
        assert "Su Qing rests" not in page.inner_text("#lines-out")  # no longer on the line
        context.close()
    assert errors == []


def test_event_labels_are_not_cut_at_the_graphs_edges(flat_world: Path, browser: Any) -> None:
    root = flat_world
    from test_studio import narr

    for n in range(9):
        _ok(narr(root, "event", f"Lin Yuan counts the boats at the ferry, the {n + 1}th time",
                 "--diffuser", "none"))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        boxes = page.evaluate("""() => { const cy = window.narrStudio.eventCy;
          const w = cy.width(), h = cy.height();
          return cy.nodes().filter(n => n.visible() && n.style('label') && parseFloat(n.style('font-size'))
                                   * cy.zoom() >= parseFloat(n.style('min-zoomed-font-size')))
            .map(n => { const b = n.renderedBoundingBox({includeNodes: false, includeLabels: true});
                        return [n.id(), b.x1, b.y1, b.x2, b.y2, w, h]; }); }""")
        assert boxes
        for ident, x1, y1, x2, y2, w, h in boxes:
            inside = x1 >= -0.5 and y1 >= -0.5 and x2 <= w + 0.5 and y2 <= h + 0.5
            outside = x2 <= 0 or y2 <= 0 or x1 >= w or y1 >= h
            assert inside or outside, (ident, x1, y1, x2, y2, w, h)
        context.close()
    assert errors == []
