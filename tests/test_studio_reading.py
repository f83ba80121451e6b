"""The studio a writer reads: graph labels that never overlap, names cut with an ellipsis and
whole on hover, lists in the order of the names shown, a dark theme that follows the system
(and a switch), and a phone's width where every target is at least 24 px and the composer
comes before the graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import edit_node
from test_studio import browser, studio
from test_studio_layout import _page
from test_studio_live import _events, _open, _open_node

__all__ = ["browser"]

pytestmark = pytest.mark.slow

LABEL_BOXES = """(which) => { const cy = window.narrStudio[which];
  return cy.elements().filter(e => e.visible() && e.style('label') && Number(e.style('text-opacity')) > 0
      && parseFloat(e.style('font-size')) * cy.zoom() >= parseFloat(e.style('min-zoomed-font-size')))
    .map(e => { const b = e.boundingBox({includeNodes: false, includeEdges: false, includeLabels: true,
                                          includeOverlays: false, useCache: false});
                return [e.id(), b.x1, b.y1, b.x2, b.y2]; })
    .filter(r => r[3] > r[1] && r[4] > r[2]); }"""


def _overlaps(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    found = []
    for i, (a, ax1, ay1, ax2, ay2) in enumerate(boxes):
        for b, bx1, by1, bx2, by2 in boxes[i + 1:]:
            if min(ax2, bx2) - max(ax1, bx1) > 0.5 and min(ay2, by2) - max(ay1, by1) > 0.5:
                found.append((a, b))
    return found


def test_no_two_labels_overlap_on_the_sample_world(served_world: Path, browser: Any) -> None:
    with studio(served_world) as info:
        context, page = _page(browser, info["url"])
        page.wait_for_selector("body[data-labels-placed]")
        boxes = page.evaluate(LABEL_BOXES, "worldCy")
        assert len(boxes) >= 12, boxes  # most of the 22 nodes named at the default zoom
        assert _overlaps(boxes) == []
        # A neighbourhood, drawn for a node picked: still none.
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.wait_for_function("document.querySelector('#world-graph').dataset.focus === 'lin-yuan'")
        page.wait_for_selector("body[data-labels-placed]")
        boxes = page.evaluate(LABEL_BOXES, "worldCy")
        assert "lin-yuan" in [b[0] for b in boxes] and _overlaps(boxes) == []
        context.close()


def test_the_node_list_is_in_the_order_of_the_names_shown(served_world: Path, browser: Any) -> None:
    with studio(served_world) as info:
        context, page = _page(browser, info["url"])
        names = page.eval_on_selector_all("#node-list li button .name", "bs => bs.map(b => b.textContent)")
        assert len(names) == 22
        latin = [n for n in names if n.isascii()]
        assert latin == sorted(latin, key=str.casefold)
        # Chinese names stand among the Latin ones by their pinyin: 苏晴的疑心 (su) after Spirit
        # Veins and before The Ring's Origin; 灵脉失窃案 (ling) among the L's, before Old Zhou.
        assert names.index("Spirit Veins") < names.index("苏晴的疑心") < names.index("The Ring's Origin")
        assert names.index("Lin Yuan") < names.index("灵脉失窃案") < names.index("Old Zhou")
        context.close()


def test_a_long_name_is_cut_with_an_ellipsis(flat_world: Path, browser: Any) -> None:
    root = flat_world
    long = "Qingyun " + "very " * 36 + "long name"  # 200 characters, the most a name may have
    assert len(long) <= 200
    edit_node(root, "qingyun-sect", name=long)
    with studio(root) as info:
        context, page = _page(browser, info["url"])
        button = page.locator("#node-list button[data-id='qingyun-sect']")
        height = button.bounding_box()["height"]
        other = page.locator("#node-list button[data-id='lin-yuan']").bounding_box()["height"]
        assert height <= other + 2, (height, other)
        assert button.locator(".name").get_attribute("title") == long
        label = page.evaluate("window.narrStudio.worldCy.getElementById('qingyun-sect').data('label')")
        name = label.split(" · ")[0]  # (the alias after it)
        assert name.endswith("…") and len(name) < 40, label
        drawn = page.evaluate("window.narrStudio.worldCy.nodes().length")
        assert drawn == 22
        page.wait_for_selector("body[data-labels-placed]")
        assert len(page.evaluate(LABEL_BOXES, "worldCy")) >= 12
        _open_node(page, "qingyun-sect", "Qingyun")
        title = page.locator("#node-title").bounding_box()
        assert title["height"] < 100, title
        assert page.get_attribute("#node-title .name", "title") == long
        context.close()


def _luminance(rgb: str) -> float:
    parts = [float(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    return sum(w * (p / 255) for w, p in zip((0.2126, 0.7152, 0.0722), parts, strict=True))


def test_dark_mode_follows_the_system_and_a_switch(served_world: Path, browser: Any) -> None:
    with studio(served_world) as info:
        context, page = _page(browser, info["url"], color_scheme="dark")
        body = page.evaluate("[getComputedStyle(document.body).backgroundColor,"
                             " getComputedStyle(document.body).color]")
        assert _luminance(body[0]) < 0.2 < 0.6 < _luminance(body[1]), body
        graph = page.evaluate("getComputedStyle(document.querySelector('#world-graph')).backgroundColor")
        assert _luminance(graph) < 0.2, graph
        label = page.evaluate("window.narrStudio.worldCy.getElementById('lin-yuan').style('color')")
        assert _luminance(label) > 0.6, label  # the graph's labels too
        # The switch: light, whatever the system says, and kept for the next visit.
        page.select_option("#theme", "light")
        assert _luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.8
        page.reload()
        page.wait_for_selector("body[data-world-ready]")
        assert _luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.8
        label = page.evaluate("window.narrStudio.worldCy.getElementById('lin-yuan').style('color')")
        assert _luminance(label) < 0.3, label
        context.close()


TARGETS = """(root) => [...document.querySelectorAll(
    root + ' :is(button, input, select, textarea, summary, a[href])')]
  .filter(e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden'
               && !e.closest('dialog:not([open])') && e.type !== 'hidden')
  .map(e => { const r = e.getBoundingClientRect();
              const name = e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 30);
              return [name || e.tagName, r.width, r.height]; })"""


def test_a_phone_reaches_everything(flat_world: Path, browser: Any) -> None:
    from test_studio import narr

    narr(flat_world, "event", "Lin Yuan walks to the ferry", "--text", "Lin Yuan walked to the ferry.")
    with studio(flat_world) as info:
        context, page = _page(browser, info["url"], width=390, height=844)
        _open_node(page, "lin-yuan", "Lin Yuan")
        small = [t for t in page.evaluate(TARGETS, "body") if t[1] < 24 or t[2] < 24]
        assert small == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 391
        _events(page)
        small = [t for t in page.evaluate(TARGETS, "body") if t[1] < 24 or t[2] < 24]
        assert small == []
        compose = page.locator("#compose-text").bounding_box()
        graph = page.locator("#event-graph").bounding_box()
        assert compose["y"] < graph["y"], (compose, graph)  # not past the graph
        assert compose["y"] < 844, compose
        page.click("#tab-book")
        page.wait_for_selector("body[data-book-ready]")
        small = [t for t in page.evaluate(TARGETS, "body") if t[1] < 24 or t[2] < 24]
        assert small == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 391
        context.close()


def test_buttons_say_what_they_show(flat_world: Path, browser: Any) -> None:
    """A button's accessible name starts with the words it shows (axe's
    label-content-name-mismatch): the timeline's "#2 ..." buttons, the node list's."""
    from test_studio_a11y import AXE

    if not AXE.exists():
        pytest.skip("axe-core is not installed (cd tests/a11y && npm install)")
    from test_studio import narr

    narr(flat_world, "event", "Lin Yuan walks to the ferry")
    with studio(flat_world) as info:
        context, page, errors = _open(browser, info["url"])
        page.add_script_tag(path=str(AXE))
        _events(page)
        run = ("axe.run(document, {runOnly: ['label-content-name-mismatch']})"
               ".then(r => r.violations.map(v => v.nodes.map(n => n.target.join(' '))).flat())")
        assert page.evaluate(run) == []
        page.click("#tab-world")
        page.wait_for_selector("#world-view:not([hidden])")
        assert page.evaluate(run) == []
        context.close()
    assert errors == []


def test_the_whole_name_on_hover_in_the_graph(served_world: Path, browser: Any) -> None:
    with studio(served_world) as info:
        context, page = _page(browser, info["url"])
        page.evaluate("void window.narrStudio.worldCy.getElementById('lin-yuan').emit('mouseover')")
        assert json.loads(json.dumps(page.get_attribute("#world-graph", "title"))).startswith("Lin Yuan")
        context.close()


def test_the_depth_of_a_neighbourhood(served_world: Path, browser: Any) -> None:
    from narrative.api import world_view
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(served_world) as wr:
        near = {n["id"] for n in world_view(wr, around="lin-xue", depth=1).to_json()["graph"]["nodes"]}
        far = {n["id"] for n in world_view(wr, around="lin-xue", depth=3).to_json()["graph"]["nodes"]}
    assert near < far
    with studio(served_world) as info:
        context, page = _page(browser, info["url"])
        _open_node(page, "lin-xue", "Lin Xue")
        for depth, expected in (("1", near), ("3", far)):
            ticket = page.get_attribute("body", "data-world-ready")
            page.select_option("#graph-depth", depth)
            page.wait_for_function(f"document.body.dataset.worldReady !== {ticket!r}")
            assert set(page.evaluate("window.narrStudio.worldCy.nodes().map(n => n.id())")) == expected
            assert f"({depth} relation" in page.inner_text("#graph-note")
        page.click("#graph-overview")
        page.wait_for_function("document.querySelector('#world-graph').dataset.focus === ''")
        assert page.evaluate("window.narrStudio.worldCy.nodes().length") == 22
        context.close()


@pytest.fixture(scope="module")
def big_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 generated nodes: more than the page draws at once."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from worldgen import WorldSpec, build_world

    root = tmp_path_factory.mktemp("big") / "world"
    build_world(root, WorldSpec(600))
    return root


def test_a_big_world_opens_as_clusters_that_open(big_world: Path, browser: Any) -> None:
    with studio(big_world) as info:
        context, page = _page(browser, info["url"])
        clusters = page.evaluate("window.narrStudio.worldCy.nodes('[?cluster]')"
                                 ".map(n => [n.id(), n.data('count')])")
        assert dict(clusters).keys() == {"layer:character", "layer:item", "layer:ambient", "layer:background"}
        assert sum(dict(clusters).values()) == 600
        assert "in 4 clusters by layer" in page.inner_text("#graph-note")
        assert _overlaps(page.evaluate(LABEL_BOXES, "worldCy")) == []
        # A click opens one: its best connected nodes drawn in its place, the others still clusters.
        ticket = page.get_attribute("body", "data-world-ready")
        page.evaluate("void window.narrStudio.worldCy.getElementById('layer:character').emit('tap')")
        page.wait_for_function(f"document.body.dataset.worldReady !== {ticket!r}")
        members = page.evaluate("window.narrStudio.worldCy.nodes('[member]').map(n => n.data('member'))")
        assert 0 < len(members) <= 150 and set(members) == {"layer:character"}
        assert page.evaluate("window.narrStudio.worldCy.nodes('[?cluster]').length") == 3
        page.wait_for_selector("body[data-labels-placed]")
        boxes = page.evaluate(LABEL_BOXES, "worldCy")
        assert len(boxes) >= 3 and _overlaps(boxes) == []
        # Closed again; then by kind.
        ticket = page.get_attribute("body", "data-world-ready")
        page.click("#graph-opened button[data-cluster='layer:character']")
        page.wait_for_function(f"document.body.dataset.worldReady !== {ticket!r}")
        assert page.evaluate("window.narrStudio.worldCy.nodes('[?cluster]').length") == 4
        ticket = page.get_attribute("body", "data-world-ready")
        page.select_option("#graph-group", "kind")
        page.wait_for_function(f"document.body.dataset.worldReady !== {ticket!r}")
        kinds = page.evaluate("window.narrStudio.worldCy.nodes('[?cluster]').map(n => n.id())")
        assert len(kinds) > 4 and all(k.startswith(("kind:", "other:")) for k in kinds)
        context.close()
