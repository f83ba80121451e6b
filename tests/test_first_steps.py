"""What a new writer trips on in the first hour: each a small thing, each held here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import CLI, node_file


def test_graph_with_a_format_alone_is_the_world_graph(narr: CLI) -> None:
    assert narr("graph", "--format", "dot").stdout == narr("graph", "world", "--format", "dot").stdout
    assert json.loads(narr("graph", "--format", "json", "--around", "林远").stdout) == json.loads(
        narr("graph", "world", "--format", "json", "--around", "lin-yuan").stdout)
    assert "world:" in narr("graph").stdout  # alone: the counts, as before
    result = narr("graph", "--format", "dot", "events", expect=2)
    assert "put --format, --around, --depth and --at after 'events'" in result.stderr


def _helps(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    import click
    from click.testing import CliRunner

    from narrative.cli import main

    out = []
    result = CliRunner().invoke(main, [*path, "--help"], prog_name="narr", catch_exceptions=False)
    out.append((path, result.output))
    if isinstance(group, click.Group):
        for name in group.commands:
            out += _helps(group.commands[name], (*path, name))
    return out


def test_no_help_shows_the_docstrings_markup() -> None:
    from narrative.cli import main

    marked = [" ".join(path) for path, text in _helps(main) if "``" in text or ":func:" in text
              or ":mod:" in text or ":class:" in text]
    assert marked == []


def test_an_ambiguous_name_points_at_what_fixes_it(narr: CLI, world: Path) -> None:
    narr("new", "character", "Zhou Two")
    path = node_file(world, "zhou-two")
    path.write_text(path.read_text(encoding="utf-8").replace('"Zhou Two"', '"Old Zhou"'), encoding="utf-8")
    result = narr("get", "Old Zhou", expect=12)
    assert "names 2 nodes" in result.stderr
    assert "narr new --alias" not in result.stderr
    assert "hint: use the id of the one you mean; to tell them apart by name for good, change the name or " \
           "alias one of them shares: narr edit old-zhou" in result.stderr


def test_new_refuses_the_same_words_under_a_second_id_unless_forced(narr: CLI, world: Path) -> None:
    narr("new", "background", "Old Mill", "--kind", "place")
    for name in ("Old Mill!", "old-mill"):
        result = narr("new", "background", name, expect=12)
        assert f"narr: error: {name!r} would be old-mill-2 beside old-mill (Old Mill)" in result.stderr
        assert "add --force (its id: old-mill-2)" in result.stderr
    assert not (world / "world" / "background" / "old-mill-2.json").exists()
    made = narr.json("new", "background", "Old Mill!", "--force")
    assert made["id"] == "old-mill-2" and made["warnings"] == [
        "the id old-mill is taken by old-mill (Old Mill): this node is old-mill-2; the names tell them apart"]


def test_new_leaves_out_an_alias_that_repeats_the_name(narr: CLI) -> None:
    made = narr.json("new", "background", "The Forged Will", "--kind", "secret",
                     "--alias", "the forged will", "--alias", "Will", "--alias", " will ")
    assert made["aliases"] == ["Will"]
    assert made["warnings"] == [
        "alias 'the forged will' left out: it is the name or an alias already (names match case "
        "and spacing aside)",
        "alias 'will' left out: it is the name or an alias already (names match case and spacing "
        "aside)"]
    assert narr.json("get", "the forged will")["node"]["aliases"] == ["Will"]


def test_new_says_when_a_chinese_name_shares_a_romanisation(narr: CLI) -> None:
    result = narr("new", "background", "林园")  # 林远 is lin-yuan already
    assert result.stdout.startswith("lin-yuan-2 ")
    assert "narr: warning: the id lin-yuan is taken by lin-yuan (Lin Yuan): this node is lin-yuan-2" \
        in result.stderr


def test_branch_names_in_chinese_line_up(narr: CLI) -> None:
    for name in ("如果苏晴没有怀疑", "what-if", "雨夜"):
        narr("branch", name)
    lines = narr("branch").stdout.splitlines()
    assert len(lines) == 4
    from narrative.cli.output import display_width

    # the commit column starts at the same terminal column on every line
    starts = [re.search(r" [0-9a-f]{10} ", line) for line in lines]
    columns = {display_width(line[: m.start()]) for line, m in zip(lines, starts, strict=True) if m}
    assert all(starts) and len(columns) == 1, lines
    assert display_width("林远") == 4 and display_width("e\u0301") == 1


def test_a_warning_names_the_node_and_field_not_the_op_number(narr: CLI) -> None:
    result = narr("event", "a beat", "--diffuser", "none", "--set", "lin-yuan.state.mood=calm",
                  "--unset", "lin-yuan.state.nothing", "--unrelate", "lin-yuan:holds:ferry")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("narr: warning: ")]
    assert "narr: warning: unset lin-yuan state.nothing: it was already absent, nothing to unset" in warnings
    assert ("narr: warning: unrelate lin-yuan:holds:ferry: lin-yuan has no 'holds' relation to ferry; "
            "nothing to remove") in warnings
    assert not any(re.search(r"\bop \d+ \(", w) for w in warnings), warnings


def test_a_mistyped_field_gets_the_nearest_fields(narr: CLI) -> None:
    result = narr("get", "lin-yuan", "state.locaton", expect=11)
    assert result.stderr.splitlines() == ["narr: error: lin-yuan has no field /state/locaton",
                                          "hint: did you mean state.location?"]
    assert "hint: did you mean state.location?" in narr("why", "林远", "state.locaton", expect=11).stderr
    assert "hint:" not in narr("get", "lin-yuan", "state.zzzzzzzz", expect=11).stderr
    result = narr("event", "a beat", "--diffuser", "none", "--set", "lin-yuan.stat.mood=calm", expect=12)
    assert "'stat' is not a node field (did you mean state?; a delta may change" in result.stderr
    result = narr("event", "a beat", "--diffuser", "none", "--unset", "lin-yuan.state.locaton")
    assert "unset lin-yuan state.locaton: it was already absent, nothing to unset (did you mean " \
           "state.location?)" in result.stderr


def test_a_chinese_worlds_brief_has_chinese_labels(tmp_path: Path) -> None:
    from narrative.engine.brief import SECTIONS_ZH

    CLI(tmp_path)("init", "tale", "--rules", "zh")
    narr = CLI(tmp_path / "tale")
    narr("new", "character", "林远")
    narr("event", "林远醒来", "--diffuser", "none")
    text = narr("brief").stdout
    assert text.startswith("故事进行到 ") and "字符" in text and "characters" not in text
    md = narr("brief", "--format", "md").stdout
    assert md.startswith("# 简报：故事现状\n\n故事进行到 ")
    headings = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    assert headings and set(headings) <= set(SECTIONS_ZH.values())
    d = narr.json("brief")
    assert d["language"] == "zh" and {i["section"] for i in d["items"]} <= set(SECTIONS_ZH)


def test_the_book_has_no_revert_chapter_and_breaks_the_scene_before_a_new_day(narr: CLI) -> None:
    quiet = ("--diffuser", "none")
    narr("event", "Lin Yuan walks to the ferry", "--story-time", "Day 3, dusk", *quiet)
    narr("event", "The last boat leaves and the rain stops", "--close-scene", *quiet)
    narr("event", "Lin Yuan wakes at the inn", "--story-time", "Day 4, dawn", "--close-scene", *quiet)
    narr("event", "He counts his coins", "--set", "lin-yuan.state.mood=careful", *quiet)
    narr("revert", "HEAD")
    md = narr("story").stdout
    assert "Revert" not in md and "## 5." not in md
    assert md.endswith("## 4. He counts his coins\n\n*Undone later by a revert.*\n")
    # the break after the scene's last beat; the new day's beat opens the next scene: a break
    # before it (one, not two), none after its first line
    assert ("## 2. The last boat leaves and the rain stops\n\n* * *\n\n## 3. Lin Yuan wakes at the inn\n\n"
            "*Day 4, dawn*\n\n## 4.") in md
    d = narr.json("story")
    assert [e["scene_break"] for e in d["events"]] == [None, "after", "before", None]
    assert [r["content"] for r in d["reverts"]] == ["Revert: He counts his coins"]
    assert d["events"][3]["reverted_by"]["commit"] == d["reverts"][0]["commit"]
