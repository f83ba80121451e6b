"""``narr brief``: what a writer (or a model) needs in hand before the next event, within a budget.

The pack is deterministic: the same world and the same question give the same
items in the same order, each with the ``reason`` it is there. In order of
priority: hand edits not yet recorded (they override the history), the focus
nodes (given, or named in the goal as ``narr event`` finds names), the last
events, continuity facts about the characters around them (where they are, what
they hold, which secrets they know, who is dead), the open threads (those about
the focus first, then the longest untouched), then the focus nodes'
neighbourhood in the world graph ranked by distance, then by how recently an
event changed them, and failed events waiting for a retry. Before all of these,
a brief of the present (not ``at`` a past revision, not from a point of view)
leads with its health: what would stop the next event or make the history
unexplained, each with the command that fixes it (hand-edited files that are
broken, a merge or a git operation in progress, plain git commits on top of the
last event, a write a crash interrupted). Only what is cheap to know: never the
walk over the whole history that ``narr check`` does. Items are taken in
that order while they fit the budget (characters of text); those that do not
fit are counted, never cut in half.

Without a goal or focus, the focus is what the last events changed: where the
story stands. With ``at``, the pack is the story as it stood at that revision:
the world of its commit (no hand edits), the events up to it, the threads as
they were, no health and no failed events. With ``pov``, the pack keeps to what that character can know:
itself and what it holds, its relations and their targets, its location and
whoever is there, the secrets it ``knows`` (other secrets are left out), and the
events that name or change any of those (the present location stands in for
"where they were": the records do not keep where everyone stood at each event;
it looks back at most ``POV_SCAN`` events for them). Threads are the writer's
plan, never in a point of view.

Everything is read through the catalog (the neighbourhood is a walk over its
edge table, the recent events a page of its chain), with the hand edits laid
over it, so the cost follows what the pack holds, not the size of the world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.diffusers.context import find_mentions
from narrative.engine.eventgraph import tip_of
from narrative.engine.history_of import mentions
from narrative.engine.threads import THREAD_KINDS
from narrative.errors import ConflictError, InvalidInputError, NotFoundError
from narrative.ids import check_id, parse_node_path
from narrative.nodefile import NodeDict, edges_of, names_of
from narrative.store import history, worktree
from narrative.store.catalog import NodeRow
from narrative.store.catalog.story import EventInfo, Write
from narrative.store.move import finish_interrupted
from narrative.store.view import WorldView
from narrative.store.worldrepo import MERGE_STATE, WorldRepo

DEFAULT_BUDGET = 4000
RECENT = 5
RADIUS = 2
MAX_NEIGHBOURS = 30
POV_SCAN = 500  # a point of view looks this far back for the events it knows of


@dataclass
class Brief:
    goal: str | None
    pov: str | None
    budget: int
    head: dict[str, Any] | None
    focus: list[str]
    items: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0

    @property
    def used(self) -> int:
        return sum(len(i["text"]) for i in self.items)

    at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"goal": self.goal, "pov": self.pov, "at": self.at, "budget": self.budget,
                "used": self.used, "dropped": self.dropped, "head": self.head, "focus": self.focus,
                "items": self.items}

    def to_markdown(self) -> str:
        return render_markdown(self.to_json())


def _head_text(head: dict[str, Any] | None) -> str:
    if head is None:
        return "no events yet"
    text = f"{str(head['commit'])[:10]} {head['content'].splitlines()[0] if head['content'] else ''}"
    return text + (f" [{head['timestamp']}]" if head.get("timestamp") else "")


def render_markdown(d: dict[str, Any]) -> str:
    """The brief dict as Markdown: where the story stands, then one section per part of the
    pack, each item a bullet with its reason in italics."""
    title = f"Brief: {d['goal']}" if d.get("goal") else "Brief: where the story stands"
    lines = [f"# {title}", ""]
    where = f"Story at {_head_text(d['head'])}"
    if d.get("at"):
        where += f" (as it stood at {d['at']})"
    if d.get("pov"):
        where += f"; point of view: {d['pov']}"
    if d.get("focus"):
        where += "; focus: " + ", ".join(d["focus"])
    lines.append(where + ".")
    section = None
    for item in d["items"]:
        if item["section"] != section:
            section = item["section"]
            lines += ["", f"## {section[:1].upper()}{section[1:]}", ""]
        line = f"- {item['text']} *({item['reason']})*"
        if item.get("fix"):
            line += f" Fix: `{item['fix']}`"
        lines.append(line)
    tail = f"; {d['dropped']} more left out" if d["dropped"] else ""
    lines += ["", f"{d['used']} of {d['budget']} characters{tail}.", ""]
    return "\n".join(lines)


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)


def node_line(node: NodeDict, name_of: Any, can_see: Any = None) -> str:
    """One line that says what a node is and how it stands (relations to what ``can_see``)."""
    head = f"{node.get('name', '')} ({node.get('id')}, {node.get('layer')}"
    head += f"/{node['kind']})" if node.get("kind") else ")"
    summary = str(node.get("summary", "")).strip().rstrip(".")
    parts = [head + (f": {summary}" if summary else "")]
    state = node.get("state") or {}
    if state:
        parts.append("state: " + ", ".join(f"{k}={_value(v)}" for k, v in sorted(state.items())))
    rels: dict[str, list[str]] = {}
    for rtype, dst in edges_of(node):
        if can_see is not None and not can_see(dst):
            continue
        rels.setdefault(rtype, []).append(name_of.get(dst, dst))
    if rels:
        parts.append("relations: " + "; ".join(f"{t} {', '.join(sorted(d))}"
                                                for t, d in sorted(rels.items())))
    return ". ".join(parts) + "."


class _Pack:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items: list[dict[str, Any]] = []
        self.dropped = 0
        self.used = 0
        self.seen: set[tuple[str, str]] = set()

    def add(self, section: str, reason: str, text: str, **extra: Any) -> None:
        key = (section, text)
        if key in self.seen:
            return
        self.seen.add(key)
        if self.used + len(text) > self.budget:
            self.dropped += 1
            return
        self.used += len(text)
        self.items.append({"section": section, "reason": reason, "text": text, **extra})


def brief(wr: WorldRepo, goal: str | None = None, focus: list[str] | tuple[str, ...] = (),
          budget: int = DEFAULT_BUDGET, pov: str | None = None, *,
          view: WorldView | None = None, include_failed: bool = True,
          at: str | None = None) -> Brief:
    """The pack for the next event. ``view``: the edited world to read (an event running
    passes its own, so the pack sees what the event sees); by default HEAD and the hand
    edits found on disk. ``at``: the pack as the story stood at that revision or event
    (its committed world, no hand edits, no health, no failed events)."""
    if budget < 1:
        raise InvalidInputError("--budget must be at least 1 character")
    for node_id in [*focus, *([pov] if pov else [])]:
        check_id(node_id)
    present = at is None and view is None
    note = finish_interrupted(wr) if present else None
    head = tip_of(wr, at)
    if head is None:
        raise NotFoundError("the story has no events yet")
    tip = head.id
    cache = wr.catalog
    if view is None:
        view = WorldView(wr, head.tree, None if at is not None
                         else worktree.scan_for_reader(wr, head.tree))
    edits = view.hand
    for node_id in [*focus, *([pov] if pov else [])]:
        if not view.exists(node_id):
            raise NotFoundError(f"no node {node_id!r} in the world", hint="narr nodes lists the nodes")
    names = _Names(view)
    recent = _Recent(wr, tip)

    visible: set[str] | None = None
    if pov is not None:
        visible = _visible_to(view, pov)

    def can_see(node_id: str) -> bool:
        return visible is None or node_id in visible

    reasons: dict[str, str] = {}
    if focus:
        for node_id in focus:
            reasons.setdefault(node_id, "asked for with --focus")
    if goal:
        for m in find_mentions(view, goal):
            for node_id in m.ids:
                reasons.setdefault(node_id, f"named in the goal as {m.text!r}")
    if not goal and not focus:
        for e in recent.first(3):
            for w in recent.writes_of(e):
                if view.exists(w.target):
                    reasons.setdefault(w.target, f"changed by the recent event {e.content!r}")
    if pov is not None:
        reasons.setdefault(pov, "the point of view")
        loc = ((view.get(pov) or {}).get("state") or {}).get("location")
        for node_id in sorted(visible or ()):
            node = view.get(node_id)
            if node is not None and (node.get("state") or {}).get("location") == loc:
                reasons.setdefault(node_id, f"at {names.get(str(loc), loc)}, where {pov} is")
    focus_ids = [n for n in reasons if can_see(n)]

    pack = _Pack(budget)
    if present and pov is None:
        for text, reason, fix in _health(wr, head, view, recent, note):
            pack.add("health", reason, text, fix=fix)
    for node_id in sorted(edits.edits):
        hand = edits.edits[node_id]
        if not can_see(node_id):
            continue
        for ch in fields.node_changes(node_id, hand.old, hand.new):
            d = ch.model_dump(mode="json")
            old = json.dumps(d["old_value"], ensure_ascii=False) if "old_value" in d else "(absent)"
            new = json.dumps(d["new_value"], ensure_ascii=False) if "new_value" in d else "(absent)"
            pack.add("hand edits", "a hand edit not yet recorded: it overrides the history",
                     f"{node_id} {ch.field}: {old} → {new}", node=node_id)

    neighbours = _neighbourhood(view, cache, tip, recent.head_seq, focus_ids, can_see)
    names.want([*focus_ids, *(n for n, _, _ in neighbours)])
    for node_id in focus_ids:
        node = view.get(node_id)
        if node is not None:
            names.want(d for _, d in edges_of(node))
            pack.add("focus", reasons[node_id], node_line(node, names, can_see), node=node_id)

    shown = 0
    for e in recent.events(scan=None if visible is None else POV_SCAN):
        if shown >= RECENT or e.kind == "genesis":
            break
        if visible is not None and not _event_visible(recent, e, visible, view):
            continue
        shown += 1
        pack.add("events", "one of the last events" if visible is None
                 else f"one of the last events {pov} knows of",
                 f"{e.content}" + (f" [{e.timestamp}]" if e.timestamp else ""),
                 event={"id": e.id, "commit": e.commit, "content": e.content})

    characters = [n for n in [*focus_ids, *(n for n, _, _ in neighbours)]
                  if names.layer(n) == "character"]
    for node_id in characters:
        node = view.get(node_id)
        if node is None:
            continue
        names.want(d for _, d in edges_of(node))
        for reason, text in _facts(node, names, can_see):
            pack.add("continuity", reason, text, node=node_id)

    if visible is None:  # threads are the writer's plan: no character can know them
        _threads(pack, wr, head, view, names, focus_ids)

    for node_id, dist, ago in neighbours:
        if names.kind(node_id) in THREAD_KINDS:
            continue  # in "open threads" already, with what moves them
        node = view.get(node_id)
        if node is None:
            continue
        when = "never changed by an event" if ago is None else (
            "changed by the last event" if ago == 0 else f"changed {ago} events ago")
        names.want(d for _, d in edges_of(node))
        pack.add("neighbourhood", f"{dist} relation{'s' if dist > 1 else ''} from the focus, {when}",
                 node_line(node, names, can_see), node=node_id)

    kept = wr.narr_dir / "failed"  # looked at before importing what reads them (pydantic)
    if include_failed and at is None and visible is None and kept.is_dir() and any(kept.glob("*.json")):
        from narrative.engine import failed

        for f in failed.listing(wr):
            pack.add("failed", "an event that failed and waits for narr failed retry",
                     f"{f['content']}: {f['error']}")
    first = recent.first(1)
    return Brief(goal, pov, budget, first[0].to_json() if first else None,
                 focus_ids, pack.items, pack.dropped, at)


def _edit_command(wr: WorldRepo, problem: str) -> str:
    """``narr edit NODE`` for a problem that starts with a node file's path."""
    placed = parse_node_path(problem.split(":", 1)[0], wr.config.layout)
    return f"narr edit {placed[1]}" if placed else "fix the file by hand (narr status names it)"


PLAIN_SCAN = 64  # plain commits looked through for the last event before HEAD


def _health(wr: WorldRepo, head: Any, view: WorldView, recent: _Recent,
            note: str | None) -> list[tuple[str, str, str | None]]:
    """``(text, reason, fix)`` of what stops the next event or leaves the history unexplained,
    from what is cheap to know: the hand edits already scanned, state files, a page of the chain."""
    out: list[tuple[str, str, str | None]] = []
    if note:
        out.append((note, "a write a crash interrupted, finished (or dropped) just now",
                    None))
    try:
        wr.require_no_git_operation(merging=True)
    except ConflictError as exc:
        out.append((exc.message, "git is half-way through an operation: no event can be "
                                 "recorded until it is finished or aborted", exc.hint))
    state = None
    if (wr.narr_dir / MERGE_STATE).exists():  # (the module that reads it loads only then)
        from narrative.store import mergestate

        state = mergestate.load(wr)
    if state is not None:
        left = mergestate.unresolved(state)
        out.append((f"a narr merge of {state.get('branch')} stopped on conflicts: "
                    f"{len(left)} of {len(state.get('conflicts') or [])} unresolved",
                    "no event can be recorded until the merge goes on (narr resolve NODE FIELD "
                    "for each conflict, then narr merge --continue) or is dropped (narr merge "
                    "--abort)", "narr conflicts"))
    for problem in view.hand.problems:
        out.append((problem, "a hand-edited file narr cannot read: the next event refuses "
                             "until it is fixed", _edit_command(wr, problem)))
    if view.hand.edits:
        from narrative.engine.status import hand_edit_problems

        dangling = hand_edit_problems(wr, head.tree, view.hand)
    else:
        dangling = []
    for problem in dangling:
        out.append((problem, "a hand edit relates to a node that does not exist: the next "
                             "event refuses it", _edit_command(wr, problem)))
    plain: list[EventInfo] = []
    for e in recent.events(scan=PLAIN_SCAN):
        if e.kind != "commit":
            last = history.peel_commit(wr, e.commit)
            if plain and last is not None and \
                    wr.world_tree_id(head.tree) != wr.world_tree_id(last.tree):
                merges = [c for c in plain if (m := history.peel_commit(wr, c.commit)) is not None
                          and m.is_merge]
                n = len(plain)
                what = ("is a plain git commit that changes" if n == 1 else
                        f"and the {'commit' if n == 2 else f'{n - 1} commits'} under it are "
                        "plain git commits that change")
                its = "its" if n == 1 else "their"
                text = (f"HEAD {head.id!s:.10} {plain[0].content!r} {what} world/ after the last "
                        f"event {e.commit[:10]} {e.content!r}")
                if merges:
                    out.append((text, "a plain git merge no event explains: narr check says "
                                      "how to make it a merge event", "narr check"))
                else:
                    out.append((text, f"no event explains {its} changes: adopting makes them "
                                      "hand edits again, which the next event records",
                                "narr adopt"))
            break
        plain.append(e)
    return out


def _threads(pack: _Pack, wr: WorldRepo, head: Any, view: WorldView, names: _Names,
             focus: list[str]) -> None:
    """Open threads: those about the focus first, then the rest, stalest first."""
    from narrative.engine.threads import describe, moved_text, read_threads

    found, _ = read_threads(wr, head, view)
    open_ = [t for t in found if not t.resolved]
    names.want(d for t in open_ for d in [*t.waiting_on, *t.concerns])
    wanted = set(focus)
    about = [t for t in open_ if t.id in wanted or wanted & set(t.concerns)]
    for t in [*about, *(t for t in open_ if t not in about)]:
        near = [names.get(n, n) for n in t.concerns if n in wanted]
        reason = (f"an open thread about {', '.join(near)}, " if near
                  else "an open thread, ") + moved_text(t)
        pack.add("open threads", reason, describe(t, lambda i: names.get(i, i)), node=t.id)


class _Names:
    """Node names (and layers, kinds) of the edited world, fetched from the catalog as needed."""

    def __init__(self, view: WorldView) -> None:
        self.view = view
        self.rows: dict[str, NodeRow | None] = {}

    def want(self, ids: Any) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.rows]
        if missing:
            found = self.view.rows_of(missing)
            for i in missing:
                self.rows[i] = found.get(i)

    def _row(self, node_id: str) -> NodeRow | None:
        self.want([node_id])
        return self.rows[node_id]

    def get(self, node_id: str, default: Any = None) -> Any:
        row = self._row(node_id)
        return row.name if row is not None and row.name else default

    def layer(self, node_id: str) -> str | None:
        row = self._row(node_id)
        return row.layer if row else None

    def kind(self, node_id: str) -> str | None:
        row = self._row(node_id)
        return row.kind if row else None


class _Recent:
    """The story line's commits, newest first, read from the catalog a page at a time."""

    PAGE = 64

    def __init__(self, wr: WorldRepo, tip: str) -> None:
        self.wr = wr
        self.tip = tip
        self.loaded: list[EventInfo] = []
        self.done = False

    def _more(self) -> None:
        rows = self.wr.catalog.graph.chain_events(self.tip, limit=len(self.loaded) + self.PAGE)
        self.done = len(rows) < len(self.loaded) + self.PAGE
        self.loaded = rows

    def first(self, n: int) -> list[EventInfo]:
        while len(self.loaded) < n and not self.done:
            self._more()
        return self.loaded[:n]

    def events(self, scan: int | None = None) -> Any:
        k = 0
        while True:
            if k >= len(self.loaded):
                if self.done or (scan is not None and k >= scan):
                    return
                self._more()
                if k >= len(self.loaded):
                    return
            yield self.loaded[k]
            k += 1

    @property
    def head_seq(self) -> int:
        first = self.first(1)
        return first[0].seq if first else 0

    def writes_of(self, e: EventInfo) -> list[Write]:
        return self.wr.catalog.graph.commit_writes(e.commit, e.seq)


def _neighbourhood(view: WorldView, cache: Any, tip: str, newest: int, focus: list[str],
                   can_see: Any) -> list[tuple[str, int, int | None]]:
    """``(node, distance, events since it last changed)``, nearest and freshest first.

    A breadth-first walk over the relations both ways, through the catalog's edge
    table (hand edits laid over it), so it reads only the nodes it reaches.
    """
    dist: dict[str, int] = {f: 0 for f in focus}
    frontier = set(focus)
    for d in range(1, RADIUS + 1):
        if not frontier:
            break
        reached: set[str] = set()
        reached.update(dst for _, _, dst in view.outgoing(frontier))
        reached.update(src for src, _, _ in view.incoming(frontier))
        frontier = {n for n in reached if n not in dist}
        for n in frontier:
            dist[n] = d
    found = {n: d for n, d in dist.items() if d > 0 and can_see(n)}
    alive = view.rows_of(list(found))
    found = {n: d for n, d in found.items() if n in alive}
    last = cache.graph.last_writes(tip, found)
    rows = [(n, d, newest - last[n].seq if n in last else None) for n, d in found.items()]
    rows.sort(key=lambda r: (r[1], r[2] if r[2] is not None else 1 << 30, r[0]))
    return rows[:MAX_NEIGHBOURS]


def _facts(node: NodeDict, name_of: Any, can_see: Any) -> list[tuple[str, str]]:
    name = node.get("name", node.get("id", ""))
    state = node.get("state") or {}
    out = []
    if state.get("health") == "dead" or state.get("alive") is False or state.get("status") == "dead":
        out.append(("continuity: who is dead", f"{name} is dead"))
    loc = state.get("location")
    if isinstance(loc, str):
        out.append(("continuity: where everyone is", f"{name} is at {name_of.get(loc, loc)}"))
    rels = node.get("relations") or {}
    held = sorted(name_of.get(d, d) for d in rels.get("holds", {}) if can_see(d))
    if held:
        out.append(("continuity: who holds what", f"{name} holds {', '.join(held)}"))
    known = sorted(name_of.get(d, d) for d in rels.get("knows", {}) if can_see(d))
    if known:
        out.append(("continuity: who knows what", f"{name} knows {', '.join(known)}"))
    return out


def _visible_to(view: WorldView, pov: str) -> set[str]:
    """The nodes ``pov`` can know of: itself, its relations' targets (secrets only through
    ``knows``; threads never), its location and whoever shares it, and what those hold."""
    me = view.get(pov)
    assert me is not None
    seen = {pov}
    for rtype, dst in edges_of(me):
        if rtype == "knows" or not _is_secret(view.get(dst)):
            seen.add(dst)
    loc = (me.get("state") or {}).get("location")
    if isinstance(loc, str):
        seen.add(loc)
        there = {hit.id for hit in view.catalog().text.search_nodes([loc], 100_000)} | set(view.edits)
        for n in sorted(there):
            node = view.get(n) if n not in seen else None
            if node is not None and (node.get("state") or {}).get("location") == loc:
                seen.add(n)
                seen.update(d for t, d in edges_of(node) if t == "holds")
    known = {d for t, d in edges_of(me) if t == "knows"}
    out = set()
    for n in seen:
        node = view.get(n)
        if node is not None and node.get("kind") in THREAD_KINDS and n != pov:
            continue
        if n == pov or not _is_secret(node) or n in known:
            out.add(n)
    return out


def _is_secret(node: NodeDict | None) -> bool:
    return node is not None and node.get("kind") == "secret"


def _event_visible(recent: _Recent, e: EventInfo, visible: set[str], view: WorldView) -> bool:
    if any(w.target in visible for w in recent.writes_of(e)):
        return True
    names: set[str] = set()
    for n in visible:
        node = view.get(n)
        if node is not None:
            names |= names_of(node)
    return mentions(e.content, names)
