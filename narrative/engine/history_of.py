"""``narr history NODE``: everything that happened to one node, event by event, in story order.

Read from the records on the current story line, through the catalog's event
graph: the node's creation, each field set or removed, relations it gained or
lost and relations other nodes' events pointed at it, hand edits the events
recorded, its end (and why), and the events whose words name it without
changing it. Names are matched as ``narr event`` matches them (whole words; any
span in Chinese), with every name and alias the node ever had, so a node that
has ended is still found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.diffusers.context import candidate_spans
from narrative.engine.eventgraph import EventInfo, Story, Write, end_reason, tip_of
from narrative.errors import NotFoundError
from narrative.ids import LAYERS, check_id, node_path, normalize_name
from narrative.nodefile import load_trusted, names_of
from narrative.store import history
from narrative.store.worldrepo import WorldRepo


@dataclass
class EventChanges:
    event: EventInfo
    changes: list[dict[str, Any]] = field(default_factory=list)
    mentioned: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**self.event.to_json(), "mentioned": self.mentioned, "changes": self.changes}


@dataclass
class NodeHistory:
    node: str
    exists: bool
    at_genesis: bool
    events: list[EventChanges]

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "exists": self.exists, "at_genesis": self.at_genesis,
                "events": [e.to_json() for e in self.events]}


def _own(w: Write, event: EventInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"by": w.source, **w.change()}
    if w.field == "":
        if w.old is fields.ABSENT:
            out["what"] = "created"
        elif w.new is fields.ABSENT:
            out["what"] = "ended"
            out["reason"] = end_reason(w, event)
        else:
            out["what"] = "replaced"
        return out
    parts = fields.split(w.field)
    if parts[0] == "relations" and len(parts) >= 3:
        out.update(what="relation", direction="out", type=parts[1], other=parts[2])
        out["change"] = "added" if w.old is fields.ABSENT and len(parts) == 3 else (
            "removed" if w.new is fields.ABSENT and len(parts) == 3 else "changed")
        return out
    out["what"] = "unset" if w.new is fields.ABSENT else "set"
    return out


def _incoming(w: Write, node_id: str) -> dict[str, Any] | None:
    """What another node's change did to a relation pointing at ``node_id``, or None."""
    if w.field == "":
        rels: list[tuple[str, str]] = []
        for value, verb in ((w.new, "added"), (w.old, "removed")):
            if isinstance(value, dict) and isinstance(value.get("relations"), dict):
                rels += [(t, verb) for t, targets in value["relations"].items()
                         if isinstance(targets, dict) and node_id in targets]
        if not rels or (w.old is not fields.ABSENT and w.new is not fields.ABSENT):
            return None
        rtype, verb = rels[0]
        return {"by": w.source, "what": "relation", "direction": "in", "type": rtype,
                "other": w.target, "change": verb, "target": w.target, "field": w.field}
    parts = fields.split(w.field)
    if len(parts) < 3 or parts[0] != "relations" or parts[2] != node_id:
        return None
    out: dict[str, Any] = {"by": w.source, **w.change(), "what": "relation", "direction": "in",
                           "type": parts[1], "other": w.target}
    out["change"] = "added" if w.old is fields.ABSENT and len(parts) == 3 else (
        "removed" if w.new is fields.ABSENT and len(parts) == 3 else "changed")
    return out


def mentions(text: str, names: set[str]) -> bool:
    """Whether ``text`` names one of ``names`` (normalised) on word boundaries."""
    if not names or not text:
        return False
    longest = max(len(n) for n in names)
    return any(normalize_name(text[i:j]) in names
               for i, j in candidate_spans(text, max_chars=2 * longest + 2))


def history_of(wr: WorldRepo, node_id: str, at: str | None = None) -> NodeHistory:
    check_id(node_id)
    tip = tip_of(wr, at)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    story = Story(wr, tip.id)
    per: dict[str, EventChanges] = {}

    def slot(commit: str) -> EventChanges:
        if commit not in per:
            per[commit] = EventChanges(story.event(commit))
        return per[commit]

    names: set[str] = set()
    for w in story.writes(node_id):
        slot(w.commit).changes.append(_own(w, story.event(w.commit)))
        for value in (w.old, w.new):
            if w.field == "" and isinstance(value, dict):
                names |= names_of(value)
    for w in wr.catalog.graph.chain_pointing_at(tip.id, node_id):
        item = _incoming(w, node_id)
        if item is not None:
            slot(w.commit).changes.append(item)
    root = history.peel_commit(wr, story.events[-1].commit) if story.events else None
    exists = at_genesis = False
    for layer in LAYERS:
        path = node_path(node_id, layer, wr.config.layout)
        for commit, is_root in ((tip, False), (root, True)):
            data = commit.tree.read(path) if commit is not None else None
            if data is not None:
                names |= names_of(load_trusted(data))
                if is_root:
                    at_genesis = True
                else:
                    exists = True
    if not per and not exists and not at_genesis:
        raise NotFoundError(f"no node {node_id!r} in this story, now or before",
                            hint="narr search finds nodes by name")
    wanted = sorted(n for n in names if n)
    for e in story.events:
        # A cheap test first: a text that names the node holds one of its names as it is
        # (normalised); only those few go through the word-boundary test.
        if e.kind == "event" and e.content:
            text = normalize_name(e.content)
            if any(n in text for n in wanted) and mentions(e.content, names):
                slot(e.commit).mentioned = True
    events = sorted(per.values(), key=lambda x: x.event.seq)
    return NodeHistory(node_id, exists, at_genesis, events)

