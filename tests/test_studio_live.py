"""The studio stays true to the world: change notices from any process, writes only on the HEAD
the page saw (412 otherwise, nothing moved), and unsaved editor text never dropped or saved unasked.

Each result is confirmed through the library or the CLI, not through the page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import edit_node, node_file
from test_studio import TIMEOUT_MS, browser, fetch, narr, narr_json, studio, world_now

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.slow


def _open(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1400, "height": 850}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector("body[data-world-ready]")
    page.wait_for_function("window.narrStudio.state.live")
    return context, page, errors


def slow_double_click(page: Any, selector: str, answered: str) -> int:
    """A double click as a loaded machine delivers it: the first click's write has answered
    (``answered``, a condition in the page) before the second click (detail 2) lands at the
    same spot. Returns how many of the second press's events (down, up, click) reached the
    page's own handlers."""
    target = page.locator(selector)
    target.click(trial=True)  # visible, still and enabled: where the press will land
    box = target.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.click(x, y)
    page.wait_for_function(answered)
    page.evaluate("""() => { window.laterClicks = 0;
        for (const type of ["mousedown", "mouseup", "click"])
          document.addEventListener(type, () => { window.laterClicks += 1; }); }""")
    page.mouse.move(x, y)
    page.mouse.down(click_count=2)
    page.mouse.up(click_count=2)
    return int(page.evaluate("window.laterClicks"))


def _open_node(page: Any, node: str, name: str) -> None:
    """The node picked in the list, once the inspector shows ``name`` and the graph its
    neighbourhood."""
    page.click(f"#node-list button[data-id='{node}']")
    page.wait_for_function(f"document.querySelector('#node-title').textContent.includes({json.dumps(name)})")
    page.wait_for_function(f"document.querySelector('#world-graph').dataset.focus === {json.dumps(node)}")


def _advanced(page: Any) -> None:
    """The node's file in the editor shown (the form is what a node opens as)."""
    page.evaluate("document.querySelector('#edit-box').open = true")


def _events(page: Any) -> None:
    """The events view, drawn."""
    page.click("#tab-events")
    page.wait_for_selector("body[data-events-ready]")


def _open_event(page: Any, commit: str, words: str) -> None:
    """The event at ``commit`` opened from the timeline (the events view shown first when it is
    not), once its title holds ``words``."""
    if page.get_attribute("#tab-events", "aria-selected") != "true":
        _events(page)
    page.click(f"#timeline button[data-commit='{commit}']")
    page.wait_for_function(f"document.querySelector('#event-title').textContent.includes({json.dumps(words)})")


def _where(root: Path) -> tuple[str | None, str | None]:
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(root) as wr:
        return wr.branch(), wr.head_id()


def _ok(proc: Any) -> None:
    assert proc.returncode == 0, proc.stderr


def test_a_stale_page_cannot_reset_a_story_that_moved(flat_world: Path, browser: Any) -> None:
    root = flat_world
    _ok(narr(root, "branch", "alt"))
    _ok(narr(root, "switch", "alt"))
    _ok(narr(root, "event", "Su Qing doubts Lin Yuan"))
    _ok(narr(root, "switch", "main"))
    _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
    main_log = [e["commit"] for e in world_now(root, "log")]
    genesis = main_log[-1]
    _ok(narr(root, "switch", "alt"))
    alt_head = _where(root)[1]
    _ok(narr(root, "switch", "main"))
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_event(page, genesis, "Genesis")
        page.click("#event-reset")
        page.wait_for_selector("#confirm[open]")
        assert "abandoned chain" in page.inner_text("#confirm-text")
        # Between the page's promise and the click, a terminal moves to another story line.
        _ok(narr(root, "switch", "alt"))
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelector('#compose-out .error')")
        said = page.inner_text("#compose-out")
        assert "moved" in said and "alt" in said, said
        # Nothing moved: alt is where it was, main too, and no chain was made.
        assert _where(root) == ("alt", alt_head)
        assert [e["commit"] for e in narr_json(root, "log", "main")["items"]] == main_log
        assert world_now(root, "chains") == []
        # The page now shows the story as it stands.
        page.wait_for_function("document.querySelector('#branch-name').textContent.includes('alt')")
        assert "Su Qing doubts" in page.inner_text("#timeline")
        context.close()
    assert errors == []


def test_writes_carry_the_head_they_saw(flat_world: Path) -> None:
    """Over HTTP: a write with another HEAD in If-Match is 412 and writes nothing; with the
    current one it goes through and answers the new HEAD as its ETag."""
    root = flat_world
    with studio(root) as info:
        base = f"http://127.0.0.1:{info['port']}"
        token = (root / ".git" / "narr" / "token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        status, body, _ = fetch(base + "/api/studio/where", headers=auth)
        assert status == 200
        seen = json.loads(body)
        assert (seen["branch"], seen["head"]) == _where(root)
        path = node_file(root, "lin-yuan")
        before = path.read_bytes()
        node = json.loads(before)
        node["state"]["mood"] = "calm"
        _ok(narr(root, "event", "Lin Yuan walks to the ferry"))  # HEAD moves under the caller
        status, body, _ = fetch(base + "/api/nodes/lin-yuan", method="PUT", body=json.dumps(node).encode(),
                                headers={**auth, "If-Match": f'"{seen["head"]}"'})
        assert status == 412, body
        assert json.loads(body)["type"] == "MovedError"
        assert world_now(root, "status")["edits"] == []
        status, body, _ = fetch(base + "/api/events", method="POST", body=b'{"content": "Lin Yuan sleeps"}',
                                headers={**auth, "If-Match": f'"{seen["head"]}"', "X-Narr-Branch": "main"})
        assert status == 412 and len(world_now(root, "log")) == 2
        now = _where(root)[1]
        status, body, headers = fetch(base + "/api/events", method="POST",
                                      body=b'{"content": "Lin Yuan sleeps"}',
                                      headers={**auth, "If-Match": f'"{now}"', "X-Narr-Branch": "main"})
        assert status == 200, body
        assert headers["etag"] == f'"{_where(root)[1]}"' and _where(root)[1] != now
        status, body, _ = fetch(base + "/api/events", method="POST", body=b'{"content": "Lin Yuan sleeps"}',
                                headers={**auth, "If-Match": f'"{_where(root)[1]}"', "X-Narr-Branch": "alt"})
        assert status == 412 and b"story line" in body


def test_another_session_and_another_process_are_seen_within_a_second(flat_world: Path,
                                                                      browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        first_ctx, first, errors = _open(browser, info["url"])
        second_ctx, second, errors2 = _open(browser, info["url"])
        for page in (first, second):
            _open_node(page, "lin-yuan", "Lin Yuan")
        first.fill("#node-fields input[data-path='state.mood']", "resolved")
        first.press("#node-fields input[data-path='state.mood']", "Enter")
        first.wait_for_selector("#node-message.ok")
        assert {(e["target"], e["new_value"]) for e in world_now(root, "status")["edits"]} == {
            ("lin-yuan", "resolved")}
        # Within a second (the bar for a second session): the wait's own timeout.
        second.wait_for_function(
            "document.querySelector(\"#node-fields input[data-path='state.mood']\").value === 'resolved'",
            timeout=1000)
        status = "document.querySelector('#world-status').textContent"
        second.wait_for_function(f"{status}.includes('1 hand edit')", timeout=1000)
        # Another process: a node file written by hand, and an event recorded in a terminal.
        edit_node(root, "su-qing", mood="wary")
        second.wait_for_function(f"{status}.includes('2 hand edits')", timeout=1000)
        _ok(narr(root, "event", "Lin Yuan walks to the ferry"))
        head = _where(root)[1]
        for page in (first, second):
            page.wait_for_function(f"document.body.dataset.head === '{head}'", timeout=1500)
            page.wait_for_function(f"{status} === ''", timeout=1500)
        # (the server stops with both pages still listening: their streams end with it)
    first_ctx.close()
    second_ctx.close()
    assert errors == errors2 == []


def test_unsaved_text_is_never_dropped_or_saved_unasked(flat_world: Path, browser: Any) -> None:
    root = flat_world
    path = node_file(root, "lin-yuan")
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        node = json.loads(page.input_value("#node-editor"))
        node["state"]["goal"] = "an unsaved thought"
        typed = json.dumps(node, ensure_ascii=False, indent=2)
        _advanced(page)
        page.fill("#node-editor", typed)
        # Another node: asked first; cancelled, the text stays and the node too.
        page.click("#node-list button[data-id='su-qing']")
        page.wait_for_selector("#confirm[open]")
        assert "not saved" in page.inner_text("#confirm-text")
        page.click("#confirm-cancel")
        assert page.input_value("#node-editor") == typed
        assert "Lin Yuan" in page.inner_text("#node-title")
        # An inline field change would save the editor's text too: refused, nothing written.
        page.fill("#node-fields input[data-path='state.mood']", "resolved")
        page.press("#node-fields input[data-path='state.mood']", "Enter")
        page.wait_for_selector("#node-message.error")
        assert "unsaved" in page.inner_text("#node-message")
        assert world_now(root, "status")["edits"] == []
        assert page.input_value("#node-editor") == typed
        # The slider to the past: asked too; cancelled, still now and the text kept.
        page.eval_on_selector("#time-slider", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
        page.wait_for_selector("#confirm[open]")
        page.click("#confirm-cancel")
        assert page.input_value("#node-editor") == typed
        # Someone else changes the node's file: the page says so and keeps the text.
        refreshed = int(page.evaluate("document.body.dataset.refreshed || 0"))
        edit_node(root, "lin-yuan", mood="tired")
        page.wait_for_function(f"Number(document.body.dataset.refreshed || 0) > {refreshed}")
        page.wait_for_function(
            "document.querySelector('#node-message').textContent.includes('Your text is kept')")
        assert page.input_value("#node-editor") == typed
        assert json.loads(path.read_text())["state"]["mood"] == "tired"
        # Saved when asked: the file changed since it was loaded, so the page asks first; then the
        # editor's text is what is written.
        page.click("#node-save")
        page.wait_for_selector("#confirm[open]")
        assert "changed since this page loaded it" in page.inner_text("#confirm-text")
        page.click("#confirm-ok")
        page.wait_for_selector("#node-message.ok")
        assert json.loads(path.read_text())["state"]["goal"] == "an unsaved thought"
        # Discarded when asked: then the other node opens.
        page.fill("#node-editor", typed.replace("an unsaved thought", "another"))
        page.click("#node-list button[data-id='su-qing']")
        page.wait_for_selector("#confirm[open]")
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelector('#node-title').textContent.includes('Su Qing')")
        assert json.loads(path.read_text())["state"]["goal"] == "an unsaved thought"
        context.close()
    assert errors == []


def test_bad_input_from_the_page(flat_world: Path, browser: Any) -> None:
    """A double-clicked save writes once; two tabs saving the same node: the second is told the
    file changed and writes nothing unless asked; never a broken file."""
    root = flat_world
    path = node_file(root, "lin-yuan")
    with studio(root) as info:
        one_ctx, one, errors = _open(browser, info["url"])
        two_ctx, two, errors2 = _open(browser, info["url"])
        saves: list[str] = []
        one.on("request", lambda r: saves.append(r.method) if "/api/studio/save/" in r.url else None)
        for page in (one, two):
            _open_node(page, "lin-yuan", "Lin Yuan")
        # The title is text: a double click selects a word. Done while nothing changes the world
        # (after a save, the page's refresh draws the title again at a time of its own, and the
        # box of a span taken away as it is measured is None).
        one.locator("#node-title .name").scroll_into_view_if_needed()
        box = one.locator("#node-title .name").bounding_box()
        one.mouse.dblclick(box["x"] + 4, box["y"] + box["height"] / 2)
        assert one.evaluate("window.getSelection().toString().trim()") == "Lin"
        first = json.loads(one.input_value("#node-editor"))
        first["state"]["goal"] = "from the first tab"
        for page in (one, two):
            _advanced(page)
        one.fill("#node-editor", json.dumps(first, ensure_ascii=False, indent=2))
        second = json.loads(two.input_value("#node-editor"))
        second["state"]["goal"] = "from the second tab"
        two.fill("#node-editor", json.dumps(second, ensure_ascii=False, indent=2))
        saved = "document.querySelector('#node-message').className === 'ok'"
        assert slow_double_click(one, "#node-save", saved) == 0
        one.wait_for_selector("#node-message.ok")
        assert saves == ["PUT"]
        assert json.loads(path.read_text())["state"]["goal"] == "from the first tab"
        two.click("#node-save")
        two.wait_for_selector("#confirm[open]")
        assert "changed since this page loaded it" in two.inner_text("#confirm-text")
        two.click("#confirm-cancel")
        assert json.loads(path.read_text())["state"]["goal"] == "from the first tab"
        assert "from the second tab" in two.input_value("#node-editor")  # kept, not saved
        assert [e["field"] for e in world_now(root, "status")["edits"]] == ["/state/goal"]
        assert world_now(root, "status")["problems"] == []
    one_ctx.close()
    two_ctx.close()
    assert errors == errors2 == []
