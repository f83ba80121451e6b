"""Text from a world reaches the screen with its control characters escaped (an OSC 52
clipboard write, a screen clear, a backspace, a right-to-left override, C1 codes, NUL), as git
quotes such paths; tab and newline stay, narr's own colours stay, and ``--json`` is exact."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CLI, write_node

HOSTILE = "Bell \x1b]52;c;cm0gLXJmIH4=\x07 rings \x1b[2J\x08\u202e\x9b\x7f end"
SHOWN = "Bell \\x1b]52;c;cm0gLXJmIH4=\\x07 rings \\x1b[2J\\x08\\u202e\\x9b\\x7f end"
# every character a terminal acts on, but tab and newline
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _hostile_world(world: Path) -> CLI:
    narr = CLI(world)
    node = json.loads((world / "world/character/lin-yuan.json").read_text())
    node["name"] = "Lin\x1b[2JYuan"
    node["summary"] = "A \x1b]52;c;eA==\x07 disciple\x00"
    write_node(world, "world/character/lin-yuan.json", node)
    narr("event", HOSTILE, "--diffuser", "explicit", "--set", "lin-xue.state.mood=\x1b[31mred\x07")
    return narr


def test_world_text_is_escaped_on_every_reader(world: Path) -> None:
    narr = _hostile_world(world)
    for args in (["log"], ["show"], ["story"], ["history", "lin-xue"], ["brief"],
                 ["search", "rings"], ["why", "lin-xue", "state.mood"], ["get", "lin-yuan"],
                 ["nodes"], ["status"]):
        out = narr(*args).stdout
        assert not CONTROL.search(out), (args, out)
    assert SHOWN in narr("log").stdout
    assert SHOWN in narr("show").stdout
    assert "Lin\\x1b[2JYuan" in narr("nodes").stdout


def test_json_output_stays_exact(world: Path) -> None:
    narr = _hostile_world(world)
    assert narr.json("log")["items"][0]["content"] == HOSTILE
    assert narr.json("show")["content"] == HOSTILE
    assert narr.json("get", "lin-yuan")["node"]["name"] == "Lin\x1b[2JYuan"


def test_failed_events_and_errors_stay_escaped(world: Path) -> None:
    narr = CLI(world)
    (world / "world/character/lin-yuan.json").write_text("{")
    result = narr("event", HOSTILE, expect=13)
    assert not CONTROL.search(result.stderr), result.stderr
    for args in (["failed"], ["status"]):
        out = narr(*args).stdout
        assert "\\x1b]52;c;cm0gLXJmIH4=" in out and not CONTROL.search(out), (args, out)
    assert narr.json("failed")["items"][0]["content"] == HOSTILE


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_on_a_terminal_colours_stay_and_world_escapes_do_not(world: Path) -> None:
    _hostile_world(world)
    import pty

    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.run([sys.executable, "-m", "narrative", "-C", str(world), "--no-pager",
                           "show"], stdout=child, stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    out = b"".join(chunks).decode()
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[31m" in out and "\x1b[32m" in out  # old and new values in colour
    assert SHOWN in out
    no_colours = re.sub("\x1b\\[(?:0|31|32|33|39)m", "", out)
    assert not CONTROL.search(no_colours.replace("\r", "")), no_colours
