"""``narr history NODE``: everything that happened to one node, event by event, in story order.

Read from the records on the current story line, through the catalog's event
graph: the node's creation, each field set or removed, relations it gained or
lost and relations other nodes' events pointed at it, hand edits the events
recorded, its end (and why), and the events whose words name it without
changing it. Names are found as ``narr event`` finds them
(:func:`narrative.diffusers.context.find_mentions`: the longest name wins, so an
alias inside a longer name of another node, 掌门 in 掌门的秘密 or "the Mayor" in
"the Mayor's affair", names the other node), with every name and alias the node
ever had, among the names of the world and of the nodes that have ended.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, ClassVar

from narrative import fields
from narrative.answers import Answer
from narrative.diffusers.context import find_mentions
from narrative.engine.eventgraph import EventInfo, Story, Write, end_reason, tip_of
from narrative.errors import NotFoundError, Step
from narrative.ids import LAYERS, check_id, node_path, normalize_name
from narrative.nodefile import load_trusted, names_of
from narrative.shapes import EventRef, Obj, ToldAt
from narrative.store import WorldRepo, WorldView, peel_commit


@dataclass
class EventChanges:
    event: EventInfo
    changes: list[dict[str, Any]] = field(default_factory=list)
    mentioned: bool = False
    chapter: dict[str, Any] | None = None  # told in a chapter: which, at which sentence

    def to_json(self) -> dict[str, Any]:
        return {**self.event.to_json(), "mentioned": self.mentioned, "changes": self.changes,
                "chapter": self.chapter}


class HistoryEvent(EventRef):
    """An event in a node's story: its changes to the node (or the relations pointing at it),
    or ``mentioned`` when its words only named the node."""

    mentioned: bool
    changes: list[Obj]
    chapter: ToldAt | None


class NodeHistory(Answer):
    """What happened to a node, oldest first: whether it ``exists`` now, was there at the
    genesis, and ``ended`` (the event and the reason) when the story ended it."""

    NAME: ClassVar[str] = "history"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)

    node: str
    name: str | None
    exists: bool
    at_genesis: bool
    ended: Obj | None
    events: list[HistoryEvent]


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


class MentionWorld(WorldView):
    """The names a text may be read against: the world's, those of the nodes that have
    ended on the story line, and every name ``node_id`` ever had, so that
    :func:`~narrative.diffusers.context.find_mentions` says which node each span names
    (the longest name winning) for a node that is in the world or not.

    Answers are kept, so reading many events asks the catalog once per new name.
    """

    def __init__(self, world: WorldView, tip: str, own: dict[str, set[str]] | None = None) -> None:
        # the world's tree and hand edits, shared: changes laid over ``world`` show here too
        super().__init__(world.wr, world.tree, world.hand)
        self.world = world  # asked for names: its own answers (a chapter's copy keeps them)
        wr = world.wr
        self.own = own or {}  # node -> its normalised names, as it ever had them
        self._hits: dict[str, set[str]] = {}
        gone: dict[str, set[str]] = {}
        for norm, node_id in wr.catalog.graph.ended_names(tip):
            gone.setdefault(norm, set()).add(node_id)
        for node_id, norms in self.own.items():
            for norm in norms:
                gone.setdefault(norm, set()).add(node_id)
        self.gone = gone
        self._gone_reach: dict[str, int] = {}
        for norm in gone:
            self._gone_reach[norm[:1]] = max(self._gone_reach.get(norm[:1], 0), len(norm))
        self._reach: dict[str, int] = {}

    def forget(self, node_id: str, norms: Collection[str]) -> None:
        """``node_id`` has ended since (a chapter being read ended it): its names name it still."""
        for norm in norms:
            self.gone.setdefault(norm, set()).add(node_id)
            self._gone_reach[norm[:1]] = max(self._gone_reach.get(norm[:1], 0), len(norm))
        self.refresh()

    def refresh(self) -> None:
        """Forget the answers kept: the world under it changed (a chapter laid changes over it)."""
        self._hits.clear()
        self._reach.clear()

    def ids_by_name(self, norms: Collection[str]) -> dict[str, set[str]]:
        missing = [n for n in norms if n not in self._hits]
        if missing:
            found = self.world.ids_by_name(missing)
            for norm in missing:
                self._hits[norm] = found.get(norm, set()) | self.gone.get(norm, set())
        return {n: self._hits[n] for n in norms if self._hits.get(n)}

    def name_reach(self, first: str) -> int:
        if first not in self._reach:
            self._reach[first] = max(self.world.name_reach(first), self._gone_reach.get(first, 0))
        return self._reach[first]


def names_node(world: MentionWorld, text: str, node_id: str) -> bool:
    """Whether ``text`` names ``node_id``: a span of it that is one of the node's names and
    not part of a longer name of another node."""
    return any(node_id in m.ids for m in find_mentions(world, text))


def history_of(wr: WorldRepo, node_id: str, at: str | None = None, *,
               with_mentions: bool = True) -> NodeHistory:
    """What happened to ``node_id`` on the story line (ending at ``at``), oldest first;
    ``with_mentions`` False leaves out the events that only name it (``log NODE``)."""
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
    name = ""
    last_whole: Write | None = None
    for w in story.writes(node_id):
        slot(w.commit).changes.append(_own(w, story.event(w.commit)))
        for value in (w.old, w.new):
            if w.field == "" and isinstance(value, dict):
                names |= names_of(value)
                name = str(value.get("name") or name)
        if w.field == "":
            last_whole = w
    for w in wr.catalog.graph.chain_pointing_at(tip.id, node_id):
        item = _incoming(w, node_id)
        if item is not None:
            slot(w.commit).changes.append(item)
    root = peel_commit(wr, story.events[-1].commit) if story.events else None
    exists = at_genesis = False
    for layer in LAYERS:
        path = node_path(node_id, layer, wr.config.layout)
        for commit, is_root in ((tip, False), (root, True)):
            data = commit.tree.read(path) if commit is not None else None
            if data is not None:
                node = load_trusted(data, path)
                names |= names_of(node)
                if not is_root or not name:
                    name = str(node.get("name") or name)
                if is_root:
                    at_genesis = True
                else:
                    exists = True
    if not per and not exists and not at_genesis:
        raise NotFoundError(f"no node {node_id!r} in this story, now or before",
                            hint="{0} finds nodes by name", steps=[Step("search")])
    ended = None
    if not exists and last_whole is not None and last_whole.new is fields.ABSENT:
        event = story.event(last_whole.commit)
        ended = {"event": {"id": event.id, "commit": event.commit, "content": event.content},
                 "reason": end_reason(last_whole, event)}
    if with_mentions:
        _mark_mentions(wr, story, tip, node_id, names, slot)
    events = sorted(per.values(), key=lambda x: x.event.seq)
    from narrative.engine.chapters import places

    told = places(wr, [e.event.commit for e in events])
    for e in events:
        e.chapter = told.get(e.event.commit)
    return NodeHistory.model_validate({
        "node": node_id, "name": name, "exists": exists, "at_genesis": at_genesis,
        "ended": ended, "events": [e.to_json() for e in events]})


def _mark_mentions(wr: WorldRepo, story: Story, tip: Any, node_id: str, names: set[str],
                   slot: Any) -> None:
    """Mark the events whose words name the node (whole names, see :func:`names_node`)."""
    wanted = sorted(n for n in names if n)
    if not wanted:
        return
    world: MentionWorld | None = None
    for e in story.events:
        # A cheap test first: a text that names the node holds one of its names as it is
        # (normalised); only those few are read for which node each name means.
        if e.kind == "event" and e.content:
            text = normalize_name(e.content)
            if any(n in text for n in wanted):
                if world is None:  # the names of the world now: an older tree would re-sync
                    head = wr.head_commit() or tip  # the shared catalog to it and back
                    now = WorldView(wr, head.tree)
                    world = MentionWorld(now, tip.id, {node_id: set(wanted)})
                if names_node(world, e.content, node_id):
                    slot(e.commit).mentioned = True
