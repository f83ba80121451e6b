"""Asking the story: why, history, search, graph and brief, on the sample world after a session
with English and Chinese events, rules and ``--set``, a hand edit, a reset and a replay.

Every answer must follow the current story line: events a reset undid are not
causes, not history and not search results until a replay brings them back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import CLI, edit_node


def session(narr: CLI, root: Path) -> dict[str, str]:
    """The scripted session; returns the event ids by name."""
    ids = {}
    ids["walk"] = narr.json("event", "Lin Yuan walks to the ferry")["id"]
    ids["calm"] = narr.json("event", "Lin Yuan is calm", "--set", "lin-yuan.state.mood=calm")["id"]
    edit_node(root, "black-ring", warmth="warm")  # a hand edit, recorded by the next event
    ids["suspect"] = narr.json("event", "林远拿起黑戒，苏晴怀疑林远")["id"]
    ids["angry"] = narr.json("event", "Lin Yuan grows angry", "--set",
                             "lin-yuan.state.mood=angry")["id"]
    return ids


@pytest.fixture
def played(flat_world: Path) -> tuple[CLI, Path, dict[str, str]]:
    narr = CLI(flat_world)
    return narr, flat_world, session(narr, flat_world)


def test_why_names_the_event_its_values_and_its_causes(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    d = narr.json("why", "lin-yuan", "state.mood")
    assert (d["source"], d["value"], d["old_value"], d["new_value"]) == ("event", "angry", "calm", "angry")
    assert d["event"]["id"] == ids["angry"] and d["change"]["by"] == "diffusion"
    assert [(a["id"], a["led_to"]) for a in d["ancestry"]] == [
        (ids["calm"], [{"id": ids["angry"], "commit": d["event"]["commit"],
                        "content": "Lin Yuan grows angry", "kind": "read",
                        "target": "lin-yuan", "field": "/state/mood"}])]
    text = narr("why", "lin-yuan", "/state/mood").stdout.splitlines()
    assert text[0] == 'lin-yuan /state/mood = "angry"'
    assert text[1].startswith("  set by event ") and text[1].endswith(" Lin Yuan grows angry")
    assert text[2] == '  "calm" → "angry"'
    assert text[3] == "  follows from, newest first:"
    # a value from genesis, and one as the story stood earlier
    assert narr.json("why", "lin-yuan", "state.goal")["source"] == "genesis"
    assert narr.json("why", "lin-yuan", "state.mood", "--at", "HEAD~1")["value"] == "calm"


def test_why_a_hand_edit_recorded_and_one_not_yet(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, ids = played
    d = narr.json("why", "black-ring", "state.warmth")
    assert (d["source"], d["event"]["id"], d["old_value"], d["new_value"]) == (
        "hand edit", ids["suspect"], "cold", "warm")
    assert "recorded by event" in narr("why", "black-ring", "state.warmth").stdout
    edit_node(root, "black-ring", warmth="hot")
    d = narr.json("why", "black-ring", "state.warmth")
    assert d["source"] == "unrecorded hand edit" and d["value"] == "hot"
    assert d["uncommitted"] == {"committed_value": "warm"}
    assert "a hand edit not yet recorded" in narr("why", "black-ring", "state.warmth").stdout


def test_why_errors(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    assert "no field /state/nothing" in narr("why", "lin-yuan", "state.nothing", expect=11).stderr
    assert "no node 'nobody'" in narr("why", "nobody", "state.x", expect=11).stderr


def test_answers_follow_reset_and_replay(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    narr("reset", "HEAD~2")
    d = narr.json("why", "lin-yuan", "state.mood")
    assert (d["event"]["id"], d["ancestry"]) == (ids["calm"], [])
    assert [e["id"] for e in narr.json("history", "su-qing")["events"]] == []
    assert narr.json("search", "苏晴怀疑")["hits"] == []
    assert narr.json("graph")["events"] == {"nodes": 3, "edges": 0}
    narr("replay", "1", "--reuse")
    d = narr.json("why", "lin-yuan", "state.mood")
    assert d["event"]["id"] == ids["angry"] and [a["id"] for a in d["ancestry"]] == [ids["calm"]]
    assert [h["id"] for h in narr.json("search", "苏晴怀疑")["hits"]] == [ids["suspect"]]
    # a new line after the reset: its answers, not the old line's
    narr("reset", "HEAD~1")
    new = narr.json("event", "林远很平静", "--set", "lin-yuan.state.mood=平静")["id"]
    d = narr.json("why", "lin-yuan", "state.mood")
    assert (d["event"]["id"], d["value"], [a["id"] for a in d["ancestry"]]) == (
        new, "平静", [ids["calm"]])
    assert narr.json("search", "angry")["hits"] == []


def test_declared_causes_are_edges(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    delta = {"ops": [{"op": "set", "target": "su-qing", "field": "/state/mood", "value": "cold"}],
             "causes": [ids["walk"]]}
    narr("event", "Su Qing turns cold", "--delta", "-", input=json.dumps(delta))
    d = narr.json("why", "su-qing", "state.mood")
    assert [(a["id"], [x["kind"] for x in a["led_to"]]) for a in d["ancestry"]] == [
        (ids["walk"], ["declared"])]


def test_history_of_a_node(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    h = narr.json("history", "lin-yuan")
    assert h["exists"] and h["at_genesis"]
    assert [(e["id"], e["mentioned"], [c["what"] for c in e["changes"]]) for e in h["events"]] == [
        (ids["walk"], True, ["set"]),
        (ids["calm"], True, ["set"]),
        (ids["suspect"], True, ["relation"]),
        (ids["angry"], True, ["set"]),
    ]
    incoming = h["events"][2]["changes"][0]
    assert (incoming["direction"], incoming["type"], incoming["other"], incoming["change"]) == (
        "in", "suspects", "su-qing", "added")
    text = narr("history", "su-qing").stdout.splitlines()
    assert text[0] == "su-qing: in the world from genesis"
    assert text[1].endswith(" 林远拿起黑戒，苏晴怀疑林远")
    assert text[2] == "  relation added: suspects → lin-yuan"
    ring = narr.json("history", "black-ring")["events"]
    assert ring[-1]["changes"][0] == {"by": "edit", "target": "black-ring", "field": "/state/warmth",
                                      "old_value": "cold", "new_value": "warm", "what": "set"}


def test_history_and_get_of_a_node_that_ended(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, ids = played
    h = narr.json("history", "temple-bell")
    assert not h["exists"]
    assert [(e["id"], [(c["what"], c.get("reason")) for c in e["changes"]]) for e in h["events"]] == [
        (ids["walk"], [("ended", "event lifecycle")])]
    narr("event", "The rain stops", "--close-scene")
    ended = narr.json("history", "paper-lantern")["events"][-1]["changes"]
    assert [(c["what"], c.get("reason") or c["direction"]) for c in ended] == [
        ("ended", "scene closed"), ("relation", "in")]  # old-zhou held it: that edge went too
    zhou = narr.json("history", "old-zhou")["events"][-1]["changes"]
    assert [(c["what"], c["direction"], c["change"]) for c in zhou] == [("relation", "out", "removed")]
    err = narr("get", "temple-bell", expect=11).stderr
    assert f"temple-bell is no longer in the world: it ended with event {ids['walk']}" in err
    assert "event lifecycle" in err and "narr get temple-bell --at" in err
    assert "no node 'nobody'" in narr("history", "nobody", expect=11).stderr


def test_search_english_and_chinese(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, ids = played
    d = narr.json("search", "ferry")
    assert d["mode"] == "ranked"
    assert d["hits"][0] == {"kind": "node", "id": "ferry", "name": "Cold River Ferry",
                            "layer": "background", "node_kind": "place", "edited": False,
                            "score": d["hits"][0]["score"]}
    assert ids["walk"] in [h["id"] for h in d["hits"] if h["kind"] == "event"]
    d = narr.json("search", "黑戒")  # two characters: a substring scan
    assert d["mode"] == "substring"
    assert [(h["kind"], h["id"]) for h in d["hits"]] == [
        ("node", "black-ring"), ("node", "ring-origin"), ("event", ids["suspect"])]
    assert [h["id"] for h in narr.json("search", "苏晴怀疑")["hits"]] == [ids["suspect"]]
    assert [h["id"] for h in narr.json("search", "ferry", "--limit", "1")["hits"]] == ["ferry"]
    edit_node(root, "old-zhou", mood="sings of the moon")
    hit = narr.json("search", "moon")["hits"]
    assert [(h["id"], h["edited"]) for h in hit] == [("old-zhou", True)]
    assert "node   old-zhou  Old Zhou (character/person)  [hand-edited]" in narr("search", "moon").stdout
    assert narr("search", "  ", expect=12).stderr.startswith("narr: error: the search query is empty")


def test_graph_exports(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    dot = narr("graph", "world", "--around", "lin-yuan", "--depth", "1").stdout
    assert dot.startswith("digraph narr {")
    assert '"lin-yuan" -> "black-ring" [label="holds"];' in dot
    assert '"su-qing" -> "lin-yuan" [label="suspects"];' in dot
    assert '"old-zhou"' not in dot
    data = json.loads(narr("graph", "world", "--format", "json").stdout)
    edge = {"source": "su-qing", "target": "lin-yuan", "key": "suspects", "label": "suspects",
            "kind": "relation"}
    assert edge in data["edges"]
    mermaid = narr("graph", "events", "--format", "mermaid").stdout
    assert mermaid.startswith("graph LR\n") and '-->|"lin-yuan/state/mood"|' in mermaid
    graphml = narr("graph", "events", "--format", "graphml").stdout
    assert "<graphml" in graphml and "Lin Yuan grows angry" in graphml
    assert narr.json("graph", "events", "--around", "HEAD", "--depth", "1")["nodes"] == 2
    c = narr.json("graph", "connect", "lin-yuan", "elder-mo")
    assert c["length"] == 2
    assert [[(h["from"], h["to"], [(r["type"], r["direction"]) for r in h["relations"]]) for h in p]
            for p in c["paths"]] == [
        [("lin-yuan", "qingyun-sect", [("member-of", "forward")]),
         ("qingyun-sect", "elder-mo", [("member-of", "backward")])],
        [("lin-yuan", "su-qing", [("distrusts", "forward"), ("suspects", "backward")]),
         ("su-qing", "elder-mo", [("student-of", "forward")])]]
    assert narr("graph", "connect", "lin-yuan", "su-qing").stdout == (
        "lin-yuan -distrusts-> | <-suspects- su-qing\n")
    narr("event", "Sworn enemies", "--diffuser", "explicit", "--relate", "lin-yuan:enemy-of:su-qing",
         "--relate", "su-qing:enemy-of:lin-yuan")
    assert narr("graph", "connect", "lin-yuan", "su-qing").stdout == (
        "lin-yuan -distrusts-> | <-enemy-of-> | <-suspects- su-qing\n")
    assert narr("graph", "connect", "lin-yuan", "nobody", expect=11).stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_dot_renders_with_graphviz(played: tuple[CLI, Path, dict[str, str]], tmp_path: Path) -> None:
    narr, _, _ = played
    for which in ("world", "events"):
        out = subprocess.run(["dot", "-Tsvg"], input=narr("graph", which).stdout, text=True,
                             capture_output=True, check=True)
        assert "<svg" in out.stdout


def test_brief_with_a_goal(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, _ = played
    edit_node(root, "su-qing", mood="restless")
    b = narr.json("brief", "Su Qing confronts Lin Yuan at the ferry", "--budget", "100000")
    assert b["focus"] == ["su-qing", "lin-yuan", "ferry"]
    sections = [i["section"] for i in b["items"]]
    assert sections[0] == "hand edits" and b["items"][0]["text"] == (
        'su-qing /state/mood: "watchful" → "restless"')
    assert sections.index("focus") < sections.index("events") < sections.index("continuity")
    assert all(i["reason"] for i in b["items"])
    facts = [i["text"] for i in b["items"] if i["section"] == "continuity"]
    assert "Lin Yuan is at Cold River Ferry" in facts
    assert "Lin Yuan holds Black Ring, Xue's Letter" in facts
    assert "Elder Mo knows The Ring's Origin, Where Xue Is" in facts
    events = [i["text"] for i in b["items"] if i["section"] == "events"]
    assert events[0] == "Lin Yuan grows angry" and len(events) == 4
    assert b == narr.json("brief", "Su Qing confronts Lin Yuan at the ferry", "--budget", "100000")
    small = narr.json("brief", "Su Qing confronts Lin Yuan at the ferry", "--budget", "300")
    assert small["used"] <= 300 and small["dropped"] > 0


def test_brief_without_a_goal_and_from_a_point_of_view(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    b = narr.json("brief")
    assert b["head"]["content"] == "Lin Yuan grows angry" and "lin-yuan" in b["focus"]
    pov = narr.json("brief", "--pov", "su-qing", "--budget", "100000")
    texts = " ".join(i["text"] for i in pov["items"])
    assert "Where Xue Is" not in texts and "The Ring's Origin" not in texts  # secrets she does not know
    assert pov["pov"] == "su-qing" and "su-qing" in pov["focus"]
    lin = narr.json("brief", "--pov", "lin-yuan", "--budget", "100000")
    assert any(i["text"] == "Lin Yuan is at Cold River Ferry" for i in lin["items"])
    assert "Old Zhou (old-zhou" in " ".join(i["text"] for i in lin["items"])  # at his location
    assert narr("brief", "--focus", "nobody", expect=11).stderr
    text = narr("brief", "--budget", "200").stdout
    assert text.startswith("Story at ") and "of 200 characters" in text


def test_the_event_graph_is_rebuilt_when_the_cache_is_deleted(
        played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, _ = played
    before = (narr.json("why", "lin-yuan", "state.mood"), narr.json("history", "lin-yuan"),
              narr.json("search", "ferry"))
    for p in (root / ".git" / "narr").glob("catalog.sqlite*"):
        p.unlink()
    after = (narr.json("why", "lin-yuan", "state.mood"), narr.json("history", "lin-yuan"),
             narr.json("search", "ferry"))
    assert after == before


def test_both_layouts_answer_alike(narr: CLI, world: Path) -> None:
    ids = session(narr, world)
    assert narr.json("why", "lin-yuan", "state.mood")["event"]["id"] == ids["angry"]
    assert [e["id"] for e in narr.json("history", "black-ring")["events"]] == [ids["suspect"]]
    assert narr.json("history", "temple-bell")["events"][0]["changes"][0]["reason"] == "event lifecycle"
    assert [h["id"] for h in narr.json("search", "苏晴怀疑")["hits"]] == [ids["suspect"]]
    assert narr.json("graph")["world"] == {"nodes": 21, "edges": 37}  # 18 + 3 threads; 8 references


def test_threads_ranked_by_events_since_they_moved(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, root, ids = played
    d = narr.json("threads")
    assert d["head"]["id"] == ids["angry"] and d["head"]["content"] == "Lin Yuan grows angry"
    assert [(t["id"], t["status"], t["events_since"], t["last_moved"], t["waiting_on"])
            for t in d["threads"]] == [
        ("missing-sister", "open", 4, None, []),
        ("su-qing-doubt", "deferred", 4, None, ["vein-theft"]),
        ("vein-theft", "progressing", 4, None, [])]
    assert d["secrets"] == []  # Elder Mo knows both secrets of the sample world
    moved = narr.json("event", "The inquiry turns to the inner court",
                      "--set", "vein-theft.state.payoff=苏晴查出真正的窃贼是谁")
    narr("event", "Night falls")
    d = narr.json("threads")
    assert [(t["id"], t["events_since"]) for t in d["threads"]] == [
        ("missing-sister", 6), ("su-qing-doubt", 6), ("vein-theft", 1)]
    last = d["threads"][2]["last_moved"]
    assert (last["id"], last["commit"], last["content"]) == (
        moved["id"], moved["commit"], "The inquiry turns to the inner court")
    text = narr("threads").stdout.splitlines()
    assert text[0] == "Threads, stalest first:"
    assert text[1] == "  missing-sister  The Search for Xue  open: not moved in the 6 events so far"
    assert "    waits for: vein-theft (灵脉失窃案)" in text
    assert "  vein-theft  灵脉失窃案  progressing: 1 event since it last moved" in text
    # resolved threads leave the list (--all shows them, last); what waited on them is free
    narr("event", "真相大白", "--set", "vein-theft.state.status=resolved")
    d = narr.json("threads")
    assert [t["id"] for t in d["threads"]] == ["missing-sister", "su-qing-doubt"]
    assert d["resolved_left_out"] == 1 and d["threads"][1]["waiting_on"] == []
    assert [(t["id"], t["status"]) for t in narr.json("threads", "--all")["threads"]][-1] == (
        "vein-theft", "resolved")
    assert "(1 resolved thread left out: --all shows it)" in narr("threads").stdout
    # as the story stood before the inquiry; a hand edit is marked
    before = narr.json("threads", "--at", ids["angry"])["threads"]
    assert [(t["id"], t["events_since"]) for t in before] == [
        ("missing-sister", 4), ("su-qing-doubt", 4), ("vein-theft", 4)]
    edit_node(root, "missing-sister", status="progressing")
    t = narr.json("threads")["threads"][0]
    assert (t["id"], t["status"], t["edited"]) == ("missing-sister", "progressing", True)


def test_a_hook_is_a_thread_too(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    narr("new", "background", "The Locked Door", "--kind", "hook")
    narr("event", "Nobody opens the door")  # records the new node: the hook moved just now
    d = narr.json("threads")
    assert [(t["id"], t["status"], t["events_since"]) for t in d["threads"]][-1] == (
        "the-locked-door", "open", 0)
    assert "The Locked Door (the-locked-door): open" in narr("brief", "--budget", "99999").stdout


def test_threads_list_secrets_nobody_has_learned(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    narr("new", "background", "老周的秘密", "--kind", "secret", "--summary", "A hooded passenger.")
    assert narr.json("threads")["secrets"] == [
        {"id": "lao-zhou-de-mi-mi", "name": "老周的秘密", "summary": "A hooded passenger."}]
    assert narr("threads").stdout.endswith(
        "\nSecrets nobody has learned:\n  lao-zhou-de-mi-mi  老周的秘密\n")
    narr("event", "老周知道老周的秘密")  # the learn rule: old-zhou knows it now
    assert narr.json("threads")["secrets"] == []
    assert narr("threads", "--at", "nowhere", expect=11).stderr


def test_brief_open_threads(played: tuple[CLI, Path, dict[str, str]]) -> None:
    narr, _, _ = played
    b = narr.json("brief", "Su Qing confronts Lin Yuan at the ferry", "--budget", "100000")
    threads = [(i["node"], i["reason"]) for i in b["items"] if i["section"] == "open threads"]
    assert threads == [
        ("su-qing-doubt", "an open thread about Su Qing, not moved in the 4 events so far"),
        ("missing-sister", "an open thread, not moved in the 4 events so far"),
        ("vein-theft", "an open thread, not moved in the 4 events so far")]
    doubt = next(i for i in b["items"] if i.get("node") == "su-qing-doubt")
    assert doubt["text"] == ("苏晴的疑心 (su-qing-doubt): deferred; payoff: Su Qing turns her doubt "
                             "from Lin Yuan to the one who hid the theft; waits for 灵脉失窃案")
    sections = [i["section"] for i in b["items"]]
    assert sections.index("continuity") < sections.index("open threads") < sections.index("neighbourhood")
    assert all(i.get("node") not in ("su-qing-doubt", "missing-sister", "vein-theft")
               for i in b["items"] if i["section"] == "neighbourhood")
    event = next(i for i in b["items"] if i["section"] == "events")
    assert set(event["event"]) == {"id", "commit", "content"}
    pov = narr.json("brief", "--pov", "su-qing", "--budget", "100000")  # the writer's plan stays hidden
    assert "open threads" not in {i["section"] for i in pov["items"]}
    assert "苏晴的疑心" not in " ".join(i["text"] for i in pov["items"])
