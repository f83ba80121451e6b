"""A real story session on the sample world, no flags: the offline rules do what a reader expects.

Each event is typed as a user would (English and Chinese), and the test states
exactly what it must change, nothing more. Whole nodes that come or go are
compared with the node files as they were just before the event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import CLI, git, read_node


@dataclass(frozen=True)
class Removed:
    """A node that leaves the world in this event (its old value is read just before it)."""

    node_id: str


@dataclass(frozen=True)
class Created:
    """A node that enters the world in this event (``created_by_event`` is the event's id)."""

    node: dict[str, Any]


def change(target: str, field: str, old: Any = ..., new: Any = ...) -> dict[str, Any]:
    out: dict[str, Any] = {"target": target, "field": field}
    if old is not ...:
        out["old_value"] = old
    if new is not ...:
        out["new_value"] = new
    return out


CROWD_AT_GATE = {
    "id": "crowd-qingyun-gate", "name": "Crowd at Qingyun Gate", "layer": "ambient", "kind": "crowd",
    "aliases": [], "summary": "People gathered at Qingyun Gate.", "lifecycle": "scene", "traits": {},
    "state": {"size": "growing", "mood": "curious"}, "relations": {"at": {"qingyun-gate": {}}},
}
BELL = {
    "id": "bell", "name": "Bell", "layer": "ambient", "kind": "sound", "aliases": ["the bell", "钟声"],
    "summary": "A bell heard across the valley.", "lifecycle": "event", "traits": {}, "state": {},
    "relations": {},
}

# (what the user types, the diffusions it must record, the nodes it must expire)
SESSION: list[tuple[str, list[Any], dict[str, str]]] = [
    ("Lin Yuan walks to the ferry",
     [change("lin-yuan", "/state/location", "qingyun-gate", "ferry"), Removed("temple-bell")],
     {"temple-bell": "event lifecycle"}),
    ("苏晴冒雨来到渡口",
     [change("su-qing", "/state/location", "qingyun-gate", "ferry")], {}),
    ("Su Qing grows suspicious of the outer disciple",
     [change("su-qing", "/relations/suspects/lin-yuan", new={})], {}),
    ("林远把妹妹的信交给老周",
     [change("lin-yuan", "/relations/holds/sister-letter", old={}),
      change("old-zhou", "/relations/holds/sister-letter", new={}),
      change("sister-letter", "/state/holder", "lin-yuan", "old-zhou")], {}),
    ("Old Zhou lights the lantern",
     [change("paper-lantern", "/state/lit", False, True)], {}),
    ("The black ring grows warm",
     [change("black-ring", "/state/warmth", "cold", "warm")], {}),
    ("老周烧掉了那封信",
     [Removed("sister-letter"), change("old-zhou", "/relations/holds/sister-letter", old={})],
     {"sister-letter": "expired by the event"}),
    ("雨越下越大",
     [change("autumn-rain", "/state/intensity", "steady", "heavy")], {}),
    ("A crowd gathers at the gate", [Created(CROWD_AT_GATE)], {}),
    ("A crowd gathers at the ferry", [], {}),  # the crowd already there: the arbiter says so
    ("Elder Mo tells Lin Yuan where Xue is",
     [change("lin-yuan", "/relations/knows/xue-whereabouts", new={})], {}),
    ("林远与苏晴结盟",
     [change("lin-yuan", "/relations/allied-with/su-qing", new={}),
      change("lin-yuan", "/relations/distrusts/su-qing", old={}),
      change("su-qing", "/relations/allied-with/lin-yuan", new={}),
      change("su-qing", "/relations/suspects/lin-yuan", old={})], {}),
    ("Su Qing takes the jade token from Elder Mo",
     [change("elder-mo", "/relations/holds/jade-token", old={}),
      change("su-qing", "/relations/holds/jade-token", new={}),
      change("jade-token", "/state/holder", "elder-mo", "su-qing")], {}),
    ("Elder Mo attacks Su Qing",
     [change("elder-mo", "/relations/enemy-of/su-qing", new={}),
      change("su-qing", "/relations/enemy-of/elder-mo", new={})], {}),
    ("苏晴被莫长老打伤",
     [change("su-qing", "/state/health", "unhurt", "wounded")], {}),
    ("The rain stops", [Removed("autumn-rain")], {"autumn-rain": "expired by the event"}),
    ("林远来到藏经阁",
     [change("lin-yuan", "/state/location", "ferry", "library-pavilion")], {}),
    ("Lin Yuan drops the black ring",
     [change("lin-yuan", "/relations/holds/black-ring", old={"worn": "left middle finger"}),
      change("black-ring", "/state/holder", old="lin-yuan"),
      change("black-ring", "/state/location", new="library-pavilion")], {}),
    ("Lin Yuan learns the ring's secret",
     [change("lin-yuan", "/relations/knows/ring-origin", new={})], {}),
    ("钟声响起", [Created(BELL)], {}),
    ("They wait in silence", [Removed("bell")], {"bell": "event lifecycle"}),
    ("The next day",
     [Removed("crowd-qingyun-gate"), Removed("ferry-crowd"), Removed("paper-lantern"),
      change("old-zhou", "/relations/holds/paper-lantern", old={})],
     {"crowd-qingyun-gate": "scene closed", "ferry-crowd": "scene closed",
      "paper-lantern": "scene closed"}),
    ("莫长老死了", [change("elder-mo", "/state/health", "unhurt", "dead")], {}),
]


def expected(world: Path, items: list[Any]) -> list[Any]:
    out = []
    for item in items:
        if isinstance(item, Removed):
            out.append(change(item.node_id, "", old=read_node(world, item.node_id)))
        else:
            out.append(item)
    return out


def test_a_story_session_with_no_flags(narr: CLI, world: Path) -> None:
    assert len(SESSION) >= 15
    for text, items, expires in SESSION:
        want = expected(world, items)
        rec = narr.json("event", text)
        for i, item in enumerate(want):
            if isinstance(item, Created):
                want[i] = change(item.node["id"], "", new={**item.node, "created_by_event": rec["id"]})
        assert rec["diffusions"] == want, text
        assert rec["expired"] == expires, text
        assert rec["proposal"]["diffuser"] == "rules"
        assert rec["proposal"]["refused"] == [], text
    log = narr.json("log")["items"]
    assert [e["content"] for e in reversed(log[:-1])] == [t for t, _, _ in SESSION]
    assert all(e["diffuser"] == "rules" for e in log[:-1])
    assert narr("check").exit_code == 0
    git(world, "fsck", "--strict")
    assert narr.json("get", "lin-yuan", "state")["value"] == {
        "goal": "find Lin Xue", "health": "unhurt", "location": "library-pavilion", "mood": "anxious"}
    assert read_node(world, "jade-token")["state"]["holder"] == "su-qing"


def test_session_text_output_tells_what_fired(narr: CLI) -> None:
    out = narr("event", "林远来到渡口").stdout.splitlines()
    assert out[1:] == [
        '  lin-yuan /state/location: "qingyun-gate" → "ferry"',
        "  temple-bell: expired (event lifecycle)",
        "rules:",
        "  rule go (rules/movement.toml): '林远来到渡口' (who=lin-yuan, place=ferry)",
    ]
    out = narr("event", "Nothing happens for a while").stdout.splitlines()
    assert out[1:] == [
        "  (no change to the world: a story beat)",
        "rules:",
        "  no rule matched 'Nothing happens for a while'",
    ]
