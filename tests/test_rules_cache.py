"""Rule files are parsed once per content, per process: the next event reuses them, and an edit
(whatever its size and time) is read at the next event."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import CLI, read_node

from narrative.diffusers import rulefile

DANCE = ('[[rules]]\nid = "dance"\nmatch = ["{who} dances"]\nvars = { who = { layer = "character" } }\n'
         'do = [{ set = "who.state.mood", value = "%s" }]\n')


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rule files parsed from now on (their names), in this process."""
    seen: list[str] = []
    real = rulefile.parse_rule_file

    def spy(data: bytes, source: str) -> rulefile.RuleFile:
        seen.append(source)
        return real(data, source)

    monkeypatch.setattr(rulefile, "parse_rule_file", spy)
    monkeypatch.setattr(rulefile, "_sets", type(rulefile._sets)())
    monkeypatch.setattr(rulefile, "_files", type(rulefile._files)())
    return seen


def test_events_reuse_the_parsed_rules(flat_world: Path, parses: list[str]) -> None:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry")
    first = sorted(parses)
    assert first == sorted(f"rules/{p.name}" for p in (flat_world / "rules").glob("*.toml"))
    narr("event", "Lin Yuan walks to the Qingyun Gate")
    narr("event", "Su Qing walks to the ferry", "--dry-run")
    assert sorted(parses) == first  # nothing parsed again
    (flat_world / "rules" / "dance.toml").write_text(DANCE % "merry", "utf-8")
    narr("event", "Lin Yuan dances")
    assert sorted(parses) == sorted([*first, "rules/dance.toml"])  # only the new file
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "merry"


def test_an_edit_of_the_same_size_and_time_is_read_at_the_next_event(flat_world: Path,
                                                                     parses: list[str]) -> None:
    narr = CLI(flat_world)
    path = flat_world / "rules" / "dance.toml"
    path.write_text(DANCE % "merry", "utf-8")
    narr("event", "Lin Yuan dances")
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "merry"
    st = path.stat()
    path.write_text(DANCE % "sadly", "utf-8")  # as long as "merry"
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    narr("event", "Lin Yuan dances again")
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "sadly"
    assert parses.count("rules/dance.toml") == 2


def test_a_broken_edit_is_reported_and_its_fix_read(flat_world: Path, parses: list[str]) -> None:
    narr = CLI(flat_world)
    path = flat_world / "rules" / "dance.toml"
    path.write_text(DANCE % "merry", "utf-8")
    narr("event", "Lin Yuan dances", "--dry-run")
    path.write_text(DANCE.replace("do = ", "do == ") % "merry", "utf-8")
    narr("event", "Lin Yuan dances", "--dry-run", expect=13)
    narr("event", "Lin Yuan dances", "--dry-run", expect=13)  # a failure is not kept
    path.write_text(DANCE % "merry", "utf-8")  # fixed
    narr("event", "Lin Yuan dances")
    assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "merry"
    assert parses.count("rules/dance.toml") == 4
