"""What a new writer trips on in the first hour: each a small thing, each held here."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import CLI


def test_graph_with_a_format_alone_is_the_world_graph(narr: CLI) -> None:
    assert narr("graph", "--format", "dot").stdout == narr("graph", "world", "--format", "dot").stdout
    assert json.loads(narr("graph", "--format", "json", "--around", "林远").stdout) == json.loads(
        narr("graph", "world", "--format", "json", "--around", "lin-yuan").stdout)
    assert "world:" in narr("graph").stdout  # alone: the counts, as before
    result = narr("graph", "--format", "dot", "events", expect=2)
    assert "put --format, --around, --depth and --at after 'events'" in result.stderr
