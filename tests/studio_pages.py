"""The studio tests' set-up: Debian's chromium driven by playwright, narr's commands, and the
world's studio server they start.

A module of tests shares one chromium (a start costs about a second on a busy machine); each
test's pages are in browser contexts of its own (no cookie, storage or cache carried over),
closed when the test ends. The browser is closed when the module's tests are done, not kept for
the session: playwright's synchronous API holds an event loop on this thread while it is open,
and ``asyncio.run`` in a later test would refuse to run.

narr's commands run in this process (click's runner), as a terminal would run them but without
a new Python each time; the server ``narr studio`` starts is still a process of its own, so a
command here is another process to it, as a terminal is.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless chromium for the module's tests."""
    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed (apt-get install chromium fonts-noto-cjk)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The module's chromium; whatever contexts a test leaves open are closed when it ends."""
    assert chromium.is_connected(), "the module's chromium has gone"
    yield chromium
    for context in list(chromium.contexts):
        with contextlib.suppress(Exception):  # a context the test closed as the page went
            context.close()


def narr(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``narr -C ROOT ARGS``: its exit code and output, run in this process."""
    from click.testing import CliRunner

    from narrative.cli import main

    with warnings.catch_warnings():
        # A server a command starts (narr studio, narr serve --detach) outlives the command's
        # handle on it; stopping it reaps it.
        warnings.simplefilter("ignore", ResourceWarning)
        result = CliRunner().invoke(main, ["-C", str(root), *args], env=env, catch_exceptions=False)
    return subprocess.CompletedProcess(["narr", "-C", str(root), *args], result.exit_code,
                                       result.stdout, result.stderr)


def narr_json(root: Path, *args: str) -> Any:
    proc = narr(root, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@contextlib.contextmanager
def studio(root: Path) -> Iterator[dict[str, Any]]:
    """This world's studio, as ``narr studio --url`` gives it: a server it starts is stopped by
    ``narr serve --stop`` when the block ends; one already running (``served_world``'s) is used
    and left running."""
    from narrative.serve import server

    running = server.running(root / ".git")
    info = narr_json(root, "studio", "--url")
    if running is not None and running.get("pid") == info["pid"]:
        yield info
        return
    try:
        yield info
    finally:
        narr(root, "serve", "--stop")
        pid = int(info["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # (started from this process: its child, gone now)
