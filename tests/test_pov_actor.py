"""The actor of an event witnesses it and knows whom it acted on, on the tutorial's own world:
Mara, at the Salt Docks, tells Tobias (at the lighthouse) what she knows and heals him; neither
event changes her node, yet both are hers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI

from narrative.cli import main  # noqa: F401  (the CLI the helper drives)


@pytest.fixture
def harbour(tmp_path: Path) -> CLI:
    """The tutorial's world (docs/tutorial.md), a secret Mara knows, and Tobias away from her."""
    CLI(tmp_path)("init", "harbour", "--rules", "en")
    narr = CLI(tmp_path / "harbour")
    narr("new", "character", "Mara Quill", "--alias", "Mara", "--pronouns", "she")
    narr("new", "character", "Tobias Wren", "--alias", "Tobias", "--pronouns", "he")
    narr("new", "background", "The Salt Docks", "--kind", "place")
    narr("new", "background", "The Lighthouse", "--kind", "place")
    narr("new", "item", "Brass Key", "--alias", "the key")
    narr("new", "background", "The Wreck", "--kind", "secret",
         "--summary", "The Aurora went down on the reef with her cargo")
    narr("event", "Mara walks to the Salt Docks")
    narr("event", "Mara remembers the wreck", "--diffuser", "explicit",
         "--relate", "mara-quill:knows:the-wreck")
    narr("event", "Tobias climbs to the lighthouse")
    narr("event", "A wave throws Tobias against the rail", "--diffuser", "explicit",
         "--set", "tobias-wren.state.health=wounded")
    return narr


def brief(narr: CLI, pov: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = narr.json("brief", "--pov", pov)["items"]
    return items


def test_the_teller_witnesses_her_telling(harbour: CLI) -> None:
    told = harbour.json("event", "Mara tells Tobias about the Wreck")
    assert [d["target"] for d in told["diffusions"]] == ["tobias-wren"]  # her node does not change
    events = [i["text"] for i in brief(harbour, "mara") if i["section"] == "events"]
    assert "Mara tells Tobias about the Wreck" in events
    who_knows = [i["text"] for i in brief(harbour, "mara") if i["section"] == "continuity"]
    assert "Tobias Wren knows The Wreck" in who_knows


def test_the_healer_knows_the_one_she_healed(harbour: CLI) -> None:
    before = {i.get("node") for i in brief(harbour, "mara")}
    assert "tobias-wren" not in before  # she has never met him
    harbour("event", "Mara heals Tobias")
    items = brief(harbour, "mara")
    assert "Mara heals Tobias" in [i["text"] for i in items if i["section"] == "events"]
    [tobias] = [i for i in items if i.get("node") == "tobias-wren" and i["section"] == "focus"]
    assert tobias["reason"] == "mara-quill acted on them"
    assert "health=unhurt" in tobias["text"]  # she saw him mended
    assert "location" not in tobias["text"]  # but not where he stands


def test_one_named_but_not_acting_witnesses_nothing_away(harbour: CLI) -> None:
    harbour("event", "Tobias swears that Mara will never see the key again", "--diffuser", "explicit")
    events = [i["text"] for i in brief(harbour, "mara") if i["section"] == "events"]
    assert "Tobias swears that Mara will never see the key again" not in events


def test_the_lorebook_of_a_pov_holds_whom_it_acted_on(harbour: CLI, tmp_path: Path) -> None:
    harbour("event", "Mara heals Tobias")
    out = tmp_path / "mara.json"
    harbour("export", "lorebook", "--pov", "mara", "-o", str(out))
    text = json.dumps(json.loads(out.read_text(encoding="utf-8")), ensure_ascii=False)
    assert "Tobias Wren" in text
