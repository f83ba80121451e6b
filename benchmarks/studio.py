#!/usr/bin/env python
"""The studio in a headless browser: how long a world takes to open, focus, search and show its events.

    python benchmarks/studio.py --nodes 10000        # a generated world; prints the figures as JSON
    python benchmarks/studio.py --sample             # the sample world (22 nodes)

``run.py`` calls :func:`measure` in its ``studio`` section. Each round opens the
studio in a fresh browser context (no cache, no cookie: the token is exchanged
again) and times from the navigation to the first drawing of the world view (its
layout and labels placed); the first round runs against a server that has just
started (nothing warm but the process). A world gets ``--events`` events first,
each changing a few nodes, so the time slider has somewhere to go: moving it to an
event not seen before, and five arrow-key steps, are timed to their drawing too
(``slider_step_s`` is one step). ``search_to_node_s`` is a writer finding a node:
a name typed in the search (less the typing pause), the node picked from the list,
until its form and its neighbourhood are shown. The bars the studio keeps (a quiet
machine): first drawing 1.0 s, a slider step 0.3 s, search to node 0.5 s. Needs
Debian's chromium and the playwright package; without them :func:`measure` says why
instead of measuring. ``PYTHONPATH`` pointing at another checkout measures its code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OPEN_LIMIT_S = 1.0
STEP_LIMIT_S = 0.3
SEARCH_LIMIT_S = 0.5
TYPING_PAUSE_S = 0.2  # the page waits this long after the last key before it searches
TIMEOUT_MS = 60_000


def unavailable() -> str | None:
    """Why the studio cannot be measured here, or None."""
    if not CHROMIUM.exists():
        return "chromium is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed"
    return None


def _narr(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), *args],
                          capture_output=True, text=True, timeout=120, check=True)


def measure(root: Path, rounds: int = 5) -> dict[str, Any]:
    """Open the studio on the world at ``root`` ``rounds`` times; the timings, in seconds."""
    from playwright.sync_api import sync_playwright

    info = json.loads(_narr(root, "studio", "--url", "--json").stdout)
    opens: list[float] = []
    page_timings: list[dict[str, float]] = []
    out: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            try:
                for r in range(rounds):
                    context = browser.new_context(viewport={"width": 1400, "height": 850},
                                                  bypass_csp=True)  # for playwright's waits
                    page = context.new_page()
                    page.set_default_timeout(TIMEOUT_MS)
                    t0 = time.perf_counter()
                    page.goto(info["url"])
                    page.wait_for_selector("body[data-world-ready]")
                    opens.append(time.perf_counter() - t0)
                    page_timings.append(page.evaluate("window.narrStudio.timings"))
                    if r == rounds - 1:
                        out.update(_interactions(page))
                    context.close()
            finally:
                browser.close()
    finally:
        subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), "serve", "--stop"],
                       capture_output=True, timeout=60)
    warm = opens[1:] or opens
    out.update({
        "open_first_s": round(opens[0], 3),
        "open_median_s": round(statistics.median(warm), 3),
        "open_max_s": round(max(opens), 3),
        "open_runs_s": [round(x, 3) for x in opens],
        "script_start_median_s": round(statistics.median(t["start"] for t in page_timings) / 1000, 3),
        "api_median_s": round(statistics.median(t["worldFetch"] for t in page_timings) / 1000, 3),
        "render_median_s": round(statistics.median(t["worldRender"] - t["worldFetch"]
                                                   for t in page_timings) / 1000, 3),
        "limit_s": {"open": OPEN_LIMIT_S, "slider_step": STEP_LIMIT_S, "search_to_node": SEARCH_LIMIT_S},
        "load_1m": round(os.getloadavg()[0], 2),
        "rounds": rounds,
    })
    return out


def _interactions(page: Any) -> dict[str, Any]:
    """Focus a node, search, open the event view: each timed to its drawing."""
    out: dict[str, Any] = {}
    drawn = page.evaluate("document.querySelectorAll('#node-list li').length")
    out["listed"] = drawn
    out["drawn"] = page.evaluate("window.narrStudio.state.drawn")
    first = page.get_attribute("#node-list li:nth-child(3) button", "data-id")
    t0 = time.perf_counter()
    page.click(f"#node-list button[data-id='{first}']")
    page.wait_for_function(_focused(first))
    out["focus_s"] = round(time.perf_counter() - t0, 3)
    ticket = page.get_attribute("body", "data-world-ready")
    t0 = time.perf_counter()
    page.fill("#search", "lin")
    page.wait_for_function(f"document.body.dataset.worldReady !== {json.dumps(ticket)}")
    out["search_s"] = round(time.perf_counter() - t0 - TYPING_PAUSE_S, 3)
    page.fill("#search", "")
    page.wait_for_function("document.querySelectorAll('#node-list li').length > 5")
    out["search_to_node_s"] = _search_to_node(page)
    steps = int(page.evaluate("Number(document.querySelector('#time-slider').max)"))
    if steps >= 1:
        ticket = page.get_attribute("body", "data-world-ready")
        t0 = time.perf_counter()
        page.eval_on_selector("#time-slider", "s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
        page.wait_for_function(f"document.body.dataset.worldReady !== {json.dumps(ticket)}")
        out["slider_unseen_s"] = round(time.perf_counter() - t0, 3)
        page.focus("#time-slider")
        t0 = time.perf_counter()
        for _ in range(min(5, steps)):
            ticket = page.get_attribute("body", "data-world-ready")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"document.body.dataset.worldReady !== {json.dumps(ticket)}")
        out["slider_five_steps_s"] = round(time.perf_counter() - t0, 3)
        out["slider_step_s"] = round(out["slider_five_steps_s"] / min(5, steps), 3)
    t0 = time.perf_counter()
    page.click("#tab-events")
    page.wait_for_selector("body[data-events-ready]")
    out["events_view_s"] = round(time.perf_counter() - t0, 3)
    return out


def _focused(node: str) -> str:
    """The page shows ``node``'s neighbourhood (older pages said so in the note under the graph)."""
    return (f"document.querySelector('#world-graph').dataset.focus === {json.dumps(node)}"
            f" || document.querySelector('#graph-note').textContent.includes({json.dumps(node)})")


def _search_to_node(page: Any) -> float:
    """A node found by its name and opened: typed, picked from the list, its fields and its
    neighbourhood shown (the typing pause taken off)."""
    target = page.get_attribute("#node-list li:nth-child(2) button", "data-id")
    name = page.evaluate("(id) => window.narrStudio.state.names[id].name", target)
    ticket = page.get_attribute("body", "data-world-ready")
    t0 = time.perf_counter()
    page.fill("#search", name)
    page.wait_for_function(f"document.body.dataset.worldReady !== {json.dumps(ticket)}"
                           f" && document.querySelector('#node-list button[data-id={json.dumps(target)}]')")
    page.click(f"#node-list button[data-id='{target}']")
    page.wait_for_function(f"document.querySelector('#node-title').textContent.includes({json.dumps(name[:20])})")
    page.wait_for_function(_focused(target))
    took = time.perf_counter() - t0 - TYPING_PAUSE_S
    page.fill("#search", "")
    page.wait_for_function("document.querySelectorAll('#node-list li').length > 5")
    return round(took, 3)


def add_events(root: Path, n: int) -> None:
    """``n`` events on a world, each changing a few characters' mood (for the time slider)."""
    listed = json.loads(_narr(root, "nodes", "--json").stdout)["items"]  # a list answer: {schema, items}
    ids = [row["id"] for row in listed if row.get("layer") == "character"][:3 * n]
    for i in range(n):
        sets = [f"{ids[k % len(ids)]}.state.mood=step {i}" for k in range(3 * i, 3 * i + 3)]
        args = [arg for spec in sets for arg in ("--set", spec)]
        _narr(root, "event", f"Step {i}: moods change", *args, "--diffuser", "explicit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--world", type=Path, help="measure this world instead of a generated one")
    parser.add_argument("--sample", action="store_true", help="measure the sample world (22 nodes)")
    parser.add_argument("--events", type=int, default=6, help="events to add to a generated world")
    args = parser.parse_args(argv)
    why = unavailable()
    if why:
        print(f"studio benchmark skipped: {why}", file=sys.stderr)
        return 1
    if args.world:
        print(json.dumps({"world": str(args.world), **measure(args.world, args.rounds)}, indent=2))
        return 0
    sys.path.insert(0, str(HERE))
    from worldgen import WorldSpec, build_world

    scratch = Path(tempfile.mkdtemp(prefix="narr-studio-bench-"))
    try:
        root = scratch / "world"
        os.environ.setdefault("NARR_NO_SERVER", "1")
        if args.sample:
            _narr(scratch, "init", "--sample", str(root))
        else:
            build_world(root, WorldSpec(args.nodes))
        add_events(root, args.events)
        nodes = len(json.loads(_narr(root, "nodes", "--json").stdout)["items"])
        result = {"nodes": nodes, **measure(root, args.rounds)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
