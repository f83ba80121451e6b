"""Terminal habits: colour and a pager on a terminal, plain text in a pipe.

narr runs as its own process in a pseudo-terminal (pexpect), the only way to see
what a person at a terminal sees; the pipe case runs it with its output captured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers import CLI, narr_subprocess

RED, GREEN, ESC = "\x1b[31m", "\x1b[32m", "\x1b["
PAGER = 'echo "LESS=$LESS"; sed "s/^/PAGED:/"'


def _tty(root: Path, *args: str, rows: int = 40, **env: str) -> str:
    """What narr prints on a terminal of ``rows`` lines."""
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "LESS", "PAGER", "NARR_PAGER")}
    full.update(env)
    child = pexpect.spawn(sys.executable, ["-m", "narrative", "-C", str(root), *args], env=full,
                          dimensions=(rows, 120), encoding="utf-8", timeout=60)
    out = child.read()
    child.close()
    assert child.exitstatus == 0, out
    return str(out).replace("\r\n", "\n")


@pytest.fixture
def transport(request: pytest.FixtureRequest, flat_world: Path) -> Iterator[str]:
    """``served``: what a test runs on a terminal goes through ``narr serve`` and the thin
    client, which must show the same (colours, the pager) as narr in its own process."""
    if request.param == "local":
        yield "local"
        return
    request.getfixturevalue("servers_by_hand")  # commands use the server started here
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "LESS", "PAGER", "NARR_PAGER")}

    def serve(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "narrative", "-C", str(flat_world), "serve", *args],
                              env=clean, capture_output=True, text=True, check=True).stdout

    serve("--detach")
    try:
        yield "served"
        assert json.loads(serve("--status", "--json"))["requests"] > 0
    finally:
        serve("--stop")


LOCAL_AND_SERVED = pytest.mark.parametrize("transport", ["local", "served"], indirect=True)


def _world_with_a_change(flat_world: Path) -> Path:
    CLI(flat_world)("event", "Lin Yuan calms down", "--set", 'lin-yuan.state.location="temple"')
    return flat_world


@LOCAL_AND_SERVED
@pytest.mark.usefixtures("transport")
def test_colours_on_a_terminal(flat_world: Path) -> None:
    root = _world_with_a_change(flat_world)
    out = _tty(root, "show", NARR_PAGER="")
    assert f'lin-yuan /state/location: {RED}"qingyun-gate"' in out
    assert f'{GREEN}"temple"' in out


@LOCAL_AND_SERVED
@pytest.mark.usefixtures("transport")
def test_no_color_and_the_flag_turn_colours_off(flat_world: Path) -> None:
    root = _world_with_a_change(flat_world)
    assert ESC not in _tty(root, "show", NARR_PAGER="", NO_COLOR="1")
    assert ESC not in _tty(root, "--no-color", "show", NARR_PAGER="")


@LOCAL_AND_SERVED
@pytest.mark.usefixtures("transport")
def test_long_output_goes_through_the_pager_on_a_terminal(flat_world: Path) -> None:
    root = _world_with_a_change(flat_world)
    out = _tty(root, "show", rows=5, NARR_PAGER=PAGER)
    assert out.startswith("LESS=FRX\nPAGED:commit ")
    assert f"PAGED:  lin-yuan /state/location: {RED}" in out  # the colours reach the pager
    assert "PAGED:" not in _tty(root, "show", "--no-pager", rows=5, NARR_PAGER=PAGER)
    assert "PAGED:" not in _tty(root, "--no-pager", "log", rows=5, PAGER=PAGER)
    assert _tty(root, "log", rows=2, PAGER=PAGER).startswith("LESS=FRX\nPAGED:")
    # output that fits the window is printed as it is
    assert "PAGED:" not in _tty(root, "log", "-n", "1", rows=5, NARR_PAGER=PAGER)


def test_a_pipe_gets_no_pager_and_no_colour(flat_world: Path) -> None:
    root = _world_with_a_change(flat_world)
    proc = narr_subprocess(root, "show", env={"NARR_PAGER": PAGER, "NO_COLOR": ""})
    assert proc.returncode == 0
    assert proc.stdout.startswith("commit ") and ESC not in proc.stdout and "PAGED" not in proc.stdout
    assert 'lin-yuan /state/location: "qingyun-gate" → "temple"' in proc.stdout


def test_long_event_contents_are_one_line_except_in_show_and_story(flat_world: Path) -> None:
    narr = CLI(flat_world)
    words = "Lin Yuan " + "walks on and on " * 8 + "to the ferry"
    result = narr("event", words + "\nand then the rain.")
    first = result.stdout.splitlines()[0]
    assert first.endswith(words[:71] + "…") and len(first.split("] ", 1)[1]) == 72
    assert narr("log", "-n", "1").stdout.split(" ", 1)[1] == words[:71] + "…  (1 change)\n"
    narr("event", "Short one\nsecond line")
    assert narr("log", "-n", "1").stdout.split(" ", 1)[1].startswith("Short one …")
    shown = narr("show", "HEAD~1").stdout
    assert f"    {words}\n    and then the rain.\n" in shown
    assert words in narr("story").stdout


NOTES = Path(__file__).resolve().parent / "data" / "import" / "notes"
BAR_END = "\r\x1b[K"  # the bar erases itself, leaving the answer on the screen


@LOCAL_AND_SERVED
@pytest.mark.usefixtures("transport")
def test_long_operations_draw_a_bar_on_a_terminal_only(flat_world: Path) -> None:
    root = _world_with_a_change(flat_world)
    out = _tty(root, "check", NARR_PROGRESS_DELAY="0")
    assert "Checking  [" in out and "2/2  events" in out and "21/21  nodes" in out
    assert out.endswith(BAR_END + "\x1b[?25hok: 1 event on the story line, 21 nodes valid\n")
    out = _tty(root, "import", str(NOTES), NARR_PROGRESS_DELAY="0")
    assert "Importing  [" in out and "3/3  places/Temple.md" in out and "3/3  Temple" in out
    assert out.split(BAR_END)[-1].startswith("\x1b[?25h[main ")
    CLI(root)("reset", "HEAD~2")
    out = _tty(root, "replay", "1", "--reuse", NARR_PROGRESS_DELAY="0")
    assert "Replaying  [" in out and out.split(BAR_END)[-1].startswith("\x1b[?25hFast-forwarded")
    # not with --json, not in a pipe
    assert "Checking" not in _tty(root, "check", "--json", NARR_PROGRESS_DELAY="0")
    proc = narr_subprocess(root, "check", env={"NARR_PROGRESS_DELAY": "0"})
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == "ok: 2 events on the story line, 22 nodes valid\n"
