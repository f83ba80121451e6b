"""A layout that reads: graph labels never smaller than the page's text (hidden when too far out
instead), positions kept between visits, hover shows a node's neighbours (those the library says it
has), a legend that covers no control, and every width from 360 px up usable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_studio import TIMEOUT_MS, browser, studio
from test_studio_live import _events, _open_node

__all__ = ["browser"]

pytestmark = pytest.mark.slow

DRAWN = ("(e => e.style('label') && parseFloat(e.style('font-size')) * e.cy().zoom()"
         " >= parseFloat(e.style('min-zoomed-font-size')))")  # a label the renderer draws
BOXES = """sel => [...document.querySelectorAll(sel)].filter(e => e.offsetParent !== null).map(e => {
  const r = e.getBoundingClientRect(); return [e.id || e.tagName, r.left, r.top, r.right, r.bottom]; })"""


def _page(browser: Any, url: str, width: int = 1400, height: int = 850, **kw: Any) -> tuple[Any, Any]:
    """A fresh page of the studio at ``width`` x ``height`` (``kw``: more of the context's
    options, e.g. ``color_scheme``), once the world view is drawn."""
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True, **kw)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector("body[data-world-ready]")
    return context, page


def _labels_read(page: Any, cy: str) -> int:
    """Every label drawn is at least the body's text size on the screen (a label with no room
    is not drawn at all, never drawn small); how many are drawn."""
    body = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    rows = page.evaluate(f"""() => {{ const cy = window.narrStudio.{cy};
      return cy.elements().filter({DRAWN})
        .map(e => [parseFloat(e.renderedStyle('font-size')), e.id()]); }}""")
    for rendered, ident in rows:
        assert rendered >= body - 0.01, (ident, rendered, body)
    return len(rows)


def _neighbours(root: Path, node: str) -> set[str]:
    from narrative.api import world_view
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(root) as wr:
        view = world_view(wr, around=node, depth=1).to_json()
    return {n["id"] for n in view["graph"]["nodes"]}


def _labelled(page: Any) -> set[str]:
    return set(page.evaluate(f"window.narrStudio.worldCy.nodes().filter({DRAWN}).map(n => n.id())"))


def test_labels_positions_and_hover(served_world: Path, browser: Any) -> None:
    root = served_world
    with studio(root) as info:
        context, page = _page(browser, info["url"], 1400)
        _labels_read(page, "worldCy")
        # Hover: the node and the neighbours the library gives it stand out, the rest fade; the
        # node pointed at is named, and its neighbours before any other.
        page.evaluate("void window.narrStudio.worldCy.getElementById('lin-yuan').emit('mouseover')")
        drawn = set(page.evaluate("window.narrStudio.worldCy.nodes().map(n => n.id())"))
        near = _neighbours(root, "lin-yuan") & drawn
        faded = set(page.evaluate("window.narrStudio.worldCy.nodes('.faded').map(n => n.id())"))
        assert faded == drawn - near and "lin-yuan" in near
        assert "lin-yuan" in _labelled(page)
        _labels_read(page, "worldCy")
        page.evaluate("void window.narrStudio.worldCy.getElementById('lin-yuan').emit('mouseout')")
        # Zoomed far out: fewer labels (larger in the graph's units, so fewer fit), none small;
        # the node pointed at is named still, at the page's size.
        shown = len(_labelled(page))
        for zoom in (0.3, 0.12):
            page.evaluate(f"void window.narrStudio.worldCy.zoom({zoom})")  # (returned, cy is serialised)
            page.evaluate("void window.narrStudio.placeLabels(window.narrStudio.worldCy)")
            assert _labels_read(page, "worldCy") < shown
            page.evaluate("void window.narrStudio.worldCy.center("
                          "window.narrStudio.worldCy.getElementById('lin-yuan'))")
            page.evaluate("void window.narrStudio.worldCy.getElementById('lin-yuan').emit('mouseover')")
            assert "lin-yuan" in _labelled(page)
            _labels_read(page, "worldCy")
            page.evaluate("void window.narrStudio.worldCy.getElementById('lin-yuan').emit('mouseout')")
        page.evaluate("void window.narrStudio.worldCy.fit(undefined, 30)")
        # A node moved by hand stays where it was put (pinned), on the next visit too.
        page.evaluate("(() => { const n = window.narrStudio.worldCy.getElementById('ferry');"
                      " n.position({x: 1234, y: -321}); n.emit('dragfree'); })()")
        page.wait_for_timeout(800)  # the others settle round it
        assert page.evaluate("window.narrStudio.worldCy.getElementById('ferry').hasClass('pinned')")
        page.close()  # the next visit, in the same browser
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(info["url"])
        page.wait_for_selector("body[data-world-ready]")
        assert page.evaluate("window.narrStudio.worldCy.getElementById('ferry').position()") == {
            "x": 1234, "y": -321}
        assert page.evaluate("window.narrStudio.worldCy.getElementById('ferry').hasClass('pinned')")
        # Unpinned, the layout is its own again.
        page.click("#graph-unpin")
        page.wait_for_timeout(800)
        assert not page.evaluate("window.narrStudio.worldCy.getElementById('ferry').hasClass('pinned')")
        assert page.evaluate("window.narrStudio.worldCy.getElementById('ferry').position()") != {
            "x": 1234, "y": -321}
        # The event view's labels read too.
        _events(page)
        assert _labels_read(page, "eventCy") >= 1  # the genesis, named at the default zoom
        context.close()


@pytest.mark.parametrize("width", [360, 390, 800, 1400])
def test_every_width_is_usable(served_world: Path, browser: Any, width: int) -> None:
    with studio(served_world) as info:
        context, page = _page(browser, info["url"], width)
        graph = page.locator("#world-graph").bounding_box()
        assert graph["width"] >= min(width - 40, 300) and graph["height"] >= 200, graph
        _open_node(page, "lin-yuan", "Lin Yuan")
        legend = page.locator(".legend").bounding_box()
        controls = page.evaluate(BOXES, "#world-view button, #world-view input, #world-view select, "
                                        "#world-view textarea")
        for name, left, top, right, bottom in controls:
            overlap = (min(right, legend["x"] + legend["width"]) - max(left, legend["x"]) > 1
                       and min(bottom, legend["y"] + legend["height"]) - max(top, legend["y"]) > 1)
            assert not overlap, (name, width)
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # no sideways scroll
        _events(page)
        events = page.locator("#event-graph").bounding_box()
        assert events["width"] >= min(width - 40, 300) and events["height"] >= 200, events
        context.close()
