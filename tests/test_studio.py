"""The studio in a real headless browser: Debian's chromium driven by playwright.

A session does what a writer does on the sample world: find a node by its
Chinese name, edit it (and see the edit in ``narr status``), have a broken edit
refused with the CLI's message, try an event as a dry run and record it from the
composer, look at the world as it was with the time slider, and reset the story
from the timeline. No request may leave the machine: every request the page
makes is intercepted and anything not for 127.0.0.1 fails the test. Set
``NARR_WRITE_SCREENSHOTS=1`` to write the README's screenshots to ``docs/`` (each view in the
light theme and the dark).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers import narr_subprocess, node_file
from studio_pages import TIMEOUT_MS, browser, narr, narr_json, studio

__all__ = ["TIMEOUT_MS", "browser", "narr", "narr_json", "studio"]  # the other studio modules' names

# Read at import: the session fixture clears NARR_* variables before the tests run.
WRITE_SCREENSHOTS = os.environ.get("NARR_WRITE_SCREENSHOTS") == "1"
DOCS = Path(__file__).resolve().parent.parent / "docs"


def world_now(root: Path, what: str) -> Any:
    """``narr status`` / ``log`` / ``chains`` as --json would print them, in this process (quicker)."""
    from narrative.api import list_chains, log, status
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(root)
    try:
        if what == "status":
            return status(wr).to_json()
        if what == "log":
            return [e.to_json() for e in log(wr)]
        return [c.to_json() for c in list_chains(wr)]
    finally:
        wr.close()


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
          body: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def shoot(page: Any, name: str) -> None:
    """``docs/NAME.png`` in the light theme and ``docs/NAME-dark.png`` in the dark; the page is
    left following the system again."""
    DOCS.mkdir(exist_ok=True)
    for theme, suffix in (("light", ""), ("dark", "-dark")):
        page.select_option("#theme", theme)
        page.wait_for_timeout(200)  # the graphs take the theme's colours
        page.screenshot(path=str(DOCS / f"{name}{suffix}.png"))
    page.select_option("#theme", "")


def test_the_studio_wants_the_token(flat_world: Path) -> None:
    with studio(flat_world) as info:
        url = urllib.parse.urlsplit(info["url"])
        assert url.hostname == "127.0.0.1"
        assert narr_json(flat_world, "serve", "--status")["host"] == "127.0.0.1"  # loopback only
        token = urllib.parse.parse_qs(url.query)["token"][0]
        assert token == (flat_world / ".git" / "narr" / "token").read_text().strip()
        base = f"http://127.0.0.1:{info['port']}"
        for path in ("/", "/?token=wrong", "/static/studio.js", "/static/vendor/cytoscape.min.js",
                     "/api/graph/world", "/api/graph/events", "/api/chains"):
            status, body, _ = fetch(base + path)
            assert status == 401, path
            assert b"cytoscape" not in body.lower() and b"lin-yuan" not in body
        status, _, headers = fetch(info["url"])
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        jar = {"Cookie": cookie.split(";")[0]}
        status, page, headers = fetch(base + "/", headers=jar)
        assert status == 200 and b"narr studio" in page
        assert "connect-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        for path in ("/static/../studio.py", "/static/%2e%2e/studio.py", "/static/..%2fstudio.py"):
            assert fetch(base + path, headers=jar)[0] == 404, path
        status, body, _ = fetch(base + "/api/graph/world?q=" + urllib.parse.quote("林远"), headers=jar)
        assert status == 200 and [n["id"] for n in json.loads(body)["nodes"]] == ["lin-yuan"]
        # The cookie alone cannot change the world: another site's form could send it.
        node = node_file(flat_world, "lin-yuan").read_bytes()
        assert fetch(base + "/api/nodes/lin-yuan", method="PUT", headers=jar, body=node)[0] == 401
        assert fetch(base + "/api/events", method="POST", headers=jar,
                     body=b'{"content": "Lin Yuan sleeps"}')[0] == 401
        status, _, _ = fetch(base + "/api/nodes/lin-yuan", method="PUT", body=node,
                             headers={**jar, "X-Narr-Studio": "1"})
        assert status == 200
        assert fetch(base + "/api/graph/world?depth=9", headers=jar)[0] == 400
        assert narr_json(flat_world, "status")["edits"] == []  # the same bytes: no edit


def test_the_page_needs_nothing_from_the_network() -> None:
    """Every file the page loads is in the package, named by a path on its own server."""
    import re

    from narrative.serve.studio import STATIC

    page = (STATIC / "index.html").read_text("utf-8")
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/static/vendor/cytoscape.min.js" in loaded
    for ref in loaded:
        assert ref.startswith("/static/") or ref == "data:,", ref
        if ref.startswith("/static/"):
            assert (STATIC / ref.removeprefix("/static/")).is_file(), ref
    assert "Permission is hereby granted" in (STATIC / "vendor" / "cytoscape.LICENSE").read_text("utf-8")
    for name in ("index.html", "studio.js", "studio.css"):
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", (STATIC / name).read_text("utf-8")), name


def test_narr_studio_opens_a_browser(flat_world: Path, tmp_path: Path) -> None:
    seen = tmp_path / "opened"
    opener = tmp_path / "browser"
    opener.write_text(f"#!/bin/sh\necho \"$1\" > {seen}\n")
    opener.chmod(0o755)
    first = narr_subprocess(flat_world, "studio", "--json", env={"BROWSER": str(opener)})
    try:
        assert first.returncode == 0, first.stderr
        info = json.loads(first.stdout)
        assert info["opened"] is True
        assert seen.read_text().strip() == info["url"]
        again = narr_json(flat_world, "studio", "--url")  # the running server is reused
        assert (again["pid"], again["url"]) == (info["pid"], info["url"])
        assert narr_subprocess(flat_world, "studio", "--url").stdout.strip() == info["url"]
    finally:
        narr_subprocess(flat_world, "serve", "--stop")


def _outside(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname
    return url.startswith(("http:", "https:", "ws:", "wss:")) and host not in ("127.0.0.1",)


def _png_colours(png: bytes) -> int:
    """How many distinct colours a screenshot holds (a blank page has one or two)."""
    import struct
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width, height, colour = 8, b"", 0, 0, 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, _, colour = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            data += chunk
        pos += 12 + length
    raw = zlib.decompress(data)
    step = 4 if colour == 6 else 3
    stride = width * step + 1
    # Unfiltered bytes are enough to tell a picture from a blank: count distinct pixel values.
    seen = {raw[row * stride + 1 + x:row * stride + 1 + x + step]
            for row in range(0, height, 7) for x in range(0, width * step, step * 5)}
    return len(seen)


@pytest.mark.slow
def test_a_session_in_the_studio(flat_world: Path, browser: Any) -> None:
    root = flat_world
    outside: list[str] = []

    def guard(route: Any) -> None:
        if _outside(route.request.url):
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    with studio(root) as info:
        # Under its own Content-Security-Policy the page works and breaks no rule of it.
        strict = browser.new_context()
        strict.route("**/*", guard)
        console: list[str] = []
        first = strict.new_page()
        first.on("console", lambda msg: console.append(msg.text))
        first.goto(info["url"])
        first.wait_for_selector("body[data-world-ready] #node-list li button[data-id='lin-yuan']")
        strict.close()
        assert not [m for m in console if "Content Security Policy" in m], console

        # The page's CSP forbids eval, which playwright's waits use; bypassing it here also shows
        # that no node text gets run by the page's own code, CSP or not.
        context = browser.new_context(viewport={"width": 1400, "height": 850}, locale="en-GB",
                                      bypass_csp=True)

        context.route("**/*", guard)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(info["url"])
        assert "token=" not in page.url  # exchanged for a cookie, out of the address bar
        page.wait_for_selector("body[data-world-ready]")

        # The world view: names as text, in English and Chinese; the graph is drawn.
        names = page.locator("#node-list").inner_text()
        for name in ("Lin Yuan", "林远", "Su Qing", "苏晴", "Elder Mo", "莫长老"):
            assert name in names
        assert page.evaluate("document.fonts.check('16px \"Noto Sans CJK SC\"', '林远')")
        assert page.evaluate("window.narrStudio.state.view") == "world"
        assert _png_colours(page.locator("#world-graph").screenshot()) > 10

        # Search by a Chinese alias, then open the node.
        page.fill("#search", "苏晴")  # her node, and the thread named after her doubt
        page.wait_for_function("[...document.querySelectorAll('#node-list li button')]"
                               ".map(b => b.dataset.id).sort().join() === 'su-qing,su-qing-doubt'")
        page.fill("#search", "林远")
        page.wait_for_function("document.querySelector('#node-list li button')?.dataset.id === 'lin-yuan'"
                               " && document.querySelectorAll('#node-list li').length === 1")
        from test_studio_live import (  # (that module imports this one)
            _advanced,
            _events,
            _open_event,
            _open_node,
        )

        _open_node(page, "lin-yuan", "Lin Yuan")
        assert "sibling-of → Lin Xue" in page.locator("#node-relations").inner_text()
        page.wait_for_function("document.querySelector('#world-graph').dataset.focus === 'lin-yuan'")
        label = page.locator("#world-graph").get_attribute("aria-label") or ""
        assert "Lin Yuan" in label and "Lin Xue" in label

        # A hand edit of one field: the node's file changes and narr status lists it.
        page.fill("#node-fields input[data-path='state.mood']", "resolved")
        page.press("#node-fields input[data-path='state.mood']", "Enter")
        page.wait_for_selector("#node-message.ok")
        edits = narr_json(root, "status")["edits"]
        assert {(e["target"], e["field"], e["new_value"]) for e in edits} == {
            ("lin-yuan", "/state/mood", "resolved")}
        # A new field, its value read as JSON when it is JSON; then the whole file in the editor.
        page.fill("#field-path", "state.wounds")
        page.fill("#field-value", '["a cut on the hand"]')
        page.click("#field-set")
        page.wait_for_selector("#node-fields [data-path='state.wounds']")
        node = json.loads(page.input_value("#node-editor"))
        assert node["state"]["wounds"] == ["a cut on the hand"]
        node["state"]["goal"] = "find Lin Xue, 找到林雪 <img src=x onerror=window.pwned=1>"
        _advanced(page)
        page.fill("#node-editor", json.dumps(node, ensure_ascii=False, indent=2))
        page.click("#node-save")
        page.wait_for_function("document.querySelector('#node-message.ok') && "
                               "document.querySelector(\"input[data-path='state.goal']\").value.includes('林雪')")
        assert {e["field"] for e in world_now(root, "status")["edits"]} == {
            "/state/mood", "/state/wounds", "/state/goal"}

        # Relations: one added and one removed from the inspector, each a hand edit too.
        page.fill("#relation-type", "knows")
        page.fill("#relation-target", "ring-origin")
        page.click("#relation-add")
        page.wait_for_function(
            "document.querySelector('#node-relations').textContent.includes('knows → The Ring')")
        page.click("#node-relations button[aria-label='remove distrusts → Su Qing']")
        page.wait_for_function("!document.querySelector('#node-relations').textContent.includes('distrusts')")
        fields = {e["field"] for e in world_now(root, "status")["edits"]}
        assert {"/state/mood", "/state/wounds", "/state/goal", "/relations/knows/ring-origin"} <= fields
        assert any(f.startswith("/relations/distrusts") for f in fields)
        node = json.loads(page.input_value("#node-editor"))

        # A broken edit is refused with the CLI's message, and nothing is written.
        path = node_file(root, "lin-yuan")
        before = path.read_bytes()
        del node["layer"]
        page.fill("#node-editor", json.dumps(node))
        page.click("#node-save")
        page.wait_for_selector("#node-message.error")
        shown = page.inner_text("#node-message")
        assert path.read_bytes() == before
        path.write_text(json.dumps(node))
        problems = world_now(root, "status")["problems"]
        path.write_bytes(before)
        assert problems and problems[0].splitlines()[0] in shown, (problems, shown)
        page.click("#node-revert")  # the refused text is the writer's to drop (never dropped for them)
        if WRITE_SCREENSHOTS:
            page.fill("#node-editor", before.decode())
            page.fill("#search", "")
            page.wait_for_function("document.querySelectorAll('#node-list li').length > 5")
            page.click("#node-list button[data-id='lin-yuan']")
            page.wait_for_function("document.querySelector('#world-graph').dataset.focus === 'lin-yuan'")
            page.evaluate("document.querySelector('#edit-box').open = false")
            page.evaluate("document.querySelector('#inspector').scrollTop = 0")
            shoot(page, "studio-world")
            page.evaluate("document.querySelector('#edit-box').open = true")

        # The composer: a dry run shows the proposal and records nothing; then record it.
        _events(page)
        assert "lin-yuan /state/mood" in page.inner_text("#pending")
        page.fill("#compose-text", "Lin Yuan walks to the ferry")
        page.click("#compose-dry")
        page.wait_for_function("document.querySelector('#compose-out').textContent.includes('dry run')")
        proposal = page.inner_text("#compose-out")
        assert "/state/location" in proposal and "ferry" in proposal
        assert len(world_now(root, "log")) == 1
        page.click("#compose-record")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 2")
        log = world_now(root, "log")
        assert [e["content"] for e in log] == ["Lin Yuan walks to the ferry",
                                               "Genesis: The Black Ring of Qingyun"]
        assert {e["field"] for e in log[0]["edits"]} == fields
        assert world_now(root, "status")["edits"] == []
        page.wait_for_function("document.querySelector('#pending').textContent === 'none'")

        # The event's changes, old and new side by side.
        page.click(f"#timeline button[data-commit='{log[0]['commit']}']")
        page.wait_for_function("document.querySelector('#event-title').textContent.includes('ferry')")
        rows = page.locator("#event-changes tbody tr").all_inner_texts()
        assert any("hand edit" in r and "anxious" in r and "resolved" in r for r in rows)
        assert any("hand edit" in r and "找到林雪" in r for r in rows)
        assert any("/state/location" in r and "ferry" in r for r in rows)

        # The time slider: the world as of the genesis.
        page.click("#tab-world")
        page.fill("#search", "")
        page.eval_on_selector("#time-slider", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
        page.wait_for_function("document.querySelector('#time-label').textContent.includes('Genesis')")
        page.click("#node-list button[data-id='lin-yuan']")
        page.wait_for_function("document.querySelector('#node-editor').readOnly")
        fields = page.inner_text("#node-fields")
        assert "anxious" in fields and "ferry" not in fields
        page.click("#time-now")
        page.wait_for_function("!document.querySelector('#node-editor').readOnly")
        where = page.input_value("#node-fields input[data-path='state.location']")
        assert where == "Cold River Ferry"  # by name

        # Ask: why the field holds its value, the node's history, the brief.
        page.fill("#why-field", "/state/location")
        page.click("#ask-why")
        page.wait_for_function("document.querySelector('#ask-out').textContent.includes('set by')")
        assert "Lin Yuan walks to the ferry" in page.inner_text("#ask-out")
        page.click("#ask-history")
        page.wait_for_function("document.querySelector('#ask-out').textContent.includes('History of')")
        assert "/state/location: qingyun-gate → ferry" in page.inner_text("#ask-out")
        page.click("#ask-brief")
        page.wait_for_function("document.querySelector('#ask-out').textContent.includes('Brief')")
        assert "Lin Yuan" in page.inner_text("#ask-out")

        # Reset to the genesis from the timeline, after a confirmation that says what happens.
        genesis = log[1]["commit"]
        _open_event(page, genesis, "Genesis")
        page.click("#event-reset")
        page.wait_for_selector("#confirm[open]")
        said = page.inner_text("#confirm-text")
        assert "Lin Yuan walks to the ferry" in said and "abandoned chain" in said
        page.click("#confirm-cancel")
        assert len(world_now(root, "log")) == 2  # cancelled: nothing happened
        page.click("#event-reset")
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 1")
        assert [e["commit"] for e in narr_json(root, "log")["items"]] == [genesis]
        assert "walks to the ferry" in page.inner_text("#chains")
        pwned = page.evaluate("window.pwned")
        assert len(world_now(root, "chains")) == 1

        # Replay the abandoned chain, after a confirmation.
        page.click("#chains button[data-chain='1']")
        page.wait_for_selector("#confirm[open]")
        assert "run again" in page.inner_text("#confirm-text")
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 2")
        replayed = world_now(root, "log")
        assert [e["content"] for e in replayed] == ["Lin Yuan walks to the ferry", log[1]["content"]]

        # Revert the replayed event: a new event undoes its diffusions.
        page.click(f"#timeline button[data-commit='{replayed[0]['commit']}']")
        page.wait_for_function("document.querySelector('#event-title').textContent.includes('ferry')")
        page.click("#event-revert")
        page.wait_for_selector("#confirm[open]")
        assert "undo" in page.inner_text("#confirm-text")
        page.click("#confirm-ok")
        page.wait_for_function("document.querySelectorAll('#timeline li').length === 3")
        reverted = world_now(root, "log")[0]
        assert reverted["reverts"] == replayed[0]["id"]
        assert {"target": "lin-yuan", "field": "/state/location", "old_value": "ferry",
                "new_value": "qingyun-gate"} in reverted["diffusions"]
        if WRITE_SCREENSHOTS:
            told = [("苏晴怀疑林远", "Day 3, dusk",
                     "苏晴看着林远走下渡口的石阶，手里还攥着那枚黑戒，心里起了疑。"),
                    ("Lin Yuan walks to the Library Pavilion", "Day 4, dawn",
                     "At first light Lin Yuan left the ferry. The Library Pavilion stood above the "
                     "mist, and Elder Mo was already waiting at its door.")]
            page.click("#compose-more summary")
            for n, (text, at, prose) in enumerate(told, start=4):
                page.fill("#compose-text", text)
                page.fill("#compose-at", at)
                page.fill("#compose-prose", prose)
                page.click("#compose-record")
                page.wait_for_function(f"document.querySelectorAll('#timeline li').length === {n}")
            page.click("#compose-more summary")
            page.click("#timeline li:first-child button")
            page.wait_for_function("document.querySelector('#event-title').textContent.includes('Pavilion')")
            page.fill("#compose-text", "Elder Mo tells Su Qing the ring's secret")
            page.click("#compose-dry")
            page.wait_for_function("document.querySelector('#compose-out').textContent.includes('dry run')")
            shoot(page, "studio-events")
            page.click("#tab-book")
            page.wait_for_selector("body[data-book-ready]")
            shoot(page, "studio-manuscript")
        context.close()
    assert outside == []
    assert errors == []
    assert pwned is None  # a node's text is shown as text, never run


def test_the_page_gets_narrs_vocabulary_from_the_server() -> None:
    """Layers and lifecycles are defined once (narrative.ids) and given to the page, not copied
    into its script."""
    import re

    from narrative.ids import LAYERS, LIFECYCLES
    from narrative.serve.studio import STATIC, page_html

    body = re.search(r"<body[^>]*>", page_html())
    assert body is not None
    assert f'data-layers="{" ".join(LAYERS)}"' in body.group(0)
    assert f'data-lifecycles="{" ".join(LIFECYCLES)}"' in body.group(0)
    script = (STATIC / "studio.js").read_text("utf-8")
    assert not re.search(r"\[\s*\"permanent\"", script) and not re.search(r"\[\s*\"character\"", script)
