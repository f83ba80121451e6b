"""Ended things keep their names: history, why, get --at, log and reset --before find them.

Worlds built with ``narr init --rules`` and ``narr new`` only, in both scripts; mentions
in ``history`` are whole names (an alias inside a longer name of another node is the other node).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CLI, snapshot

NOT_FOUND, INVALID_INPUT = 11, 12


def _world(tmp_path: Path, rules: str) -> CLI:
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", rules)
    return CLI(root)


@pytest.fixture
def pill(tmp_path: Path) -> tuple[CLI, dict[str, str]]:
    """A pill taken, then eaten: it ends with the second event."""
    narr = _world(tmp_path, "zh")
    narr("new", "character", "陆青云", "--alias", "Lu Qingyun")
    narr("new", "item", "筑基丹", "--alias", "Foundation Pill")
    narr("event", "陆青云拿起筑基丹")
    narr("event", "陆青云吃下筑基丹")
    log = narr.json("log")["items"]
    return narr, {"eaten": log[0]["commit"], "taken": log[1]["commit"], "eaten_id": log[0]["id"]}


@pytest.mark.parametrize("name", ["筑基丹", "foundation pill", "Foundation Pill", "zhu-ji-dan"])
def test_history_of_an_ended_node_by_any_of_its_names(pill: tuple[CLI, dict[str, str]],
                                                      name: str) -> None:
    narr, c = pill
    assert narr("history", name).stdout.splitlines() == [
        f"{c['taken'][:10]} 陆青云拿起筑基丹",
        "  hand edit: created",
        '  /state/holder: (absent) → "lu-qing-yun"',
        "  relation added: lu-qing-yun holds → it",
        f"{c['eaten'][:10]} 陆青云吃下筑基丹",
        "  ended (expired)",
        "  relation removed: lu-qing-yun holds → it",
        f"zhu-ji-dan is no longer in the world: it ended in {c['eaten'][:10]} 陆青云吃下筑基丹 (expired)",
    ]
    d = narr.json("history", name)
    assert (d["node"], d["name"], d["exists"]) == ("zhu-ji-dan", "筑基丹", False)
    assert d["ended"] == {"event": {"id": c["eaten_id"], "commit": c["eaten"],
                                    "content": "陆青云吃下筑基丹"}, "reason": "expired"}


def test_why_get_at_and_log_by_the_name_of_an_ended_node(pill: tuple[CLI, dict[str, str]]) -> None:
    narr, c = pill
    assert narr("why", "筑基丹", "state.holder").stdout.splitlines() == [
        'zhu-ji-dan /state/holder = "lu-qing-yun"',
        f"  as it stood when it ended in {c['eaten'][:10]} 陆青云吃下筑基丹 (expired)",
        f"  set by event {c['taken'][:10]} 陆青云拿起筑基丹",
        '  (absent) → "lu-qing-yun"',
        "  it read nothing an earlier event wrote",
    ]
    assert narr.json("why", "Foundation Pill", "state.holder")["ended"]["reason"] == "expired"
    assert narr("get", "筑基丹", "state.holder", "--at", "HEAD~1").stdout == "lu-qing-yun\n"
    assert narr("get", "foundation pill", "name", "--at", c["taken"]).stdout == "筑基丹\n"
    assert [e["commit"] for e in narr.json("log", "筑基丹")["items"]] == [c["eaten"], c["taken"]]
    assert [e["commit"] for e in narr.json("log", "--node", "Foundation Pill")["items"]] == [
        c["eaten"], c["taken"]]


def test_get_of_an_ended_node_says_so_and_points_at_at(pill: tuple[CLI, dict[str, str]]) -> None:
    narr, c = pill
    err = narr("get", "筑基丹", expect=NOT_FOUND).stderr.splitlines()
    assert err == [
        f"narr: error: zhu-ji-dan is no longer in the world: it ended with event {c['eaten_id']} "
        f"({c['eaten'][:10]} '陆青云吃下筑基丹'): expired",
        f"hint: narr get zhu-ji-dan --at {c['eaten'][:10]}~1 shows it as it was, "
        "narr history zhu-ji-dan its story",
    ]
    assert narr("get", "zhu-ji-dan", "--at", f"{c['eaten'][:10]}~1", "state.holder").stdout == (
        "lu-qing-yun\n")


def test_commands_on_the_present_name_the_event_that_ended_it(
        pill: tuple[CLI, dict[str, str]]) -> None:
    narr, c = pill
    before = snapshot(narr.root)
    gone = f"筑基丹 (zhu-ji-dan, ended in {c['eaten'][:10]} '陆青云吃下筑基丹')"
    assert narr("edit", "筑基丹", expect=NOT_FOUND).stderr.splitlines()[0] == (
        f"narr: error: '筑基丹' is no longer in the world: {gone}")
    assert narr("brief", "--focus", "Foundation Pill", expect=NOT_FOUND).stderr.splitlines()[0] == (
        f"narr: error: --focus: 'Foundation Pill' is no longer in the world: {gone}")
    err = narr("event", "x", "--relate", "陆青云:holds:筑基丹", expect=NOT_FOUND).stderr
    assert err.startswith(f"narr: error: target of --relate '陆青云:holds:筑基丹': '筑基丹' is no "
                          f"longer in the world: {gone}")
    assert snapshot(narr.root) == before
    hint = narr("get", "筑基", expect=NOT_FOUND).stderr.splitlines()[1]
    assert hint == "hint: did you mean 筑基丹 (zhu-ji-dan, ended)? narr nodes lists the nodes"


def test_reset_before_an_ended_node_by_name(pill: tuple[CLI, dict[str, str]]) -> None:
    narr, _ = pill
    out = narr.json("reset", "--before", "Foundation Pill")
    assert out["event"]["content"].startswith("Genesis") and len(out["undone"]) == 2


def test_the_live_node_wins_a_tie_and_two_ended_ones_are_listed(
        pill: tuple[CLI, dict[str, str]]) -> None:
    narr, c = pill
    narr("new", "item", "丹药", "--alias", "筑基丹")  # a second pill, under the same name
    assert narr("get", "筑基丹", "name").stdout == "丹药\n"
    narr("event", "天亮了")
    assert narr.json("history", "筑基丹")["node"] == "dan-yao"
    narr("event", "陆青云拿起丹药")
    narr("event", "陆青云吃下丹药")
    err = narr("history", "筑基丹", expect=INVALID_INPUT).stderr.splitlines()[0]
    second = narr.json("log")["items"][0]["commit"]
    assert err == (
        "narr: error: '筑基丹' names 2 nodes that have ended: "
        f"丹药 (dan-yao, ended in {second[:10]} '陆青云吃下丹药'), "
        f"筑基丹 (zhu-ji-dan, ended in {c['eaten'][:10]} '陆青云吃下筑基丹')")
    assert narr.json("history", "dan-yao")["ended"]["reason"] == "expired"


def test_an_english_world_names_its_ended_nodes(tmp_path: Path) -> None:
    narr = _world(tmp_path, "en")
    narr("new", "character", "Ada Lane")
    narr("new", "item", "sealed letter", "--alias", "the letter")
    narr("event", "Ada Lane takes the letter.")
    narr("event", "Ada Lane burns the letter.")
    commits = [e["commit"] for e in narr.json("log")["items"]]
    assert narr.json("history", "the letter")["ended"]["event"]["commit"] == commits[0]
    assert narr("get", "Sealed Letter", "state.holder", "--at", "HEAD~1").stdout == "ada-lane\n"
    assert narr.json("why", "the letter", "state.holder")["value"] == "ada-lane"
    assert [e["commit"] for e in narr.json("log", "the letter")["items"]] == commits[:2]


def test_history_counts_only_whole_names(tmp_path: Path) -> None:
    narr = _world(tmp_path, "both")
    narr("new", "character", "Mayor Hale", "--alias", "the Mayor")
    narr("new", "character", "Ada Lane")
    narr("new", "background", "the Mayor's affair", "--kind", "secret")
    narr("new", "character", "掌门", "--alias", "Zhangmen")
    narr("new", "background", "掌门的秘密", "--kind", "secret")
    narr("new", "character", "李四")
    narr("event", "Ada Lane learns the Mayor's affair.")  # names the secret, not the mayor
    narr("event", "Ada Lane smiles at the Mayor.")
    narr("event", "李四得知掌门的秘密。")  # names the secret, not 掌门
    narr("event", "李四看着掌门。")
    contents = {e["content"]: e for e in narr.json("log")["items"]}
    mayor = [e["content"] for e in narr.json("history", "the Mayor")["events"] if e["mentioned"]]
    assert mayor == ["Ada Lane smiles at the Mayor."]
    zhang = [e["content"] for e in narr.json("history", "掌门")["events"] if e["mentioned"]]
    assert zhang == ["李四看着掌门。"]
    secret = narr.json("history", "掌门的秘密")["events"]
    assert [e["content"] for e in secret if e["changes"] or e["mentioned"]] == [
        "Ada Lane learns the Mayor's affair.", "李四得知掌门的秘密。"]  # its creation; then learnt
    assert "李四得知掌门的秘密。" in contents
    # once the secret has ended, its name still is the longer name: 掌门 is not named there
    narr("event", "x", "--expire", "掌门的秘密")
    zhang = [e["content"] for e in narr.json("history", "掌门")["events"] if e["mentioned"]]
    assert zhang == ["李四看着掌门。"]
