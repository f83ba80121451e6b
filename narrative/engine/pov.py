"""What one character can know: the point of view ``narr brief --pov`` keeps to.

A character knows of itself, of what its relations point at, of the place it stands
in and whoever stands there with it, and of what those hold (:func:`visible_to`). Of
the secrets (nodes of kind ``secret``) it knows those it has a ``knows`` relation to
and those that are public (``state.known_widely``); every other secret is *unknown*,
and nothing that names one may reach it: its name, aliases and summary, and the
words of every event that wrote it or an edge to it (the event in which someone
learned it, told it, revealed it). :meth:`Sight.clean` holds any text to that, so
a brief can check each item it is about to give, whatever section it comes from. The
test is on normalised text, inside words too: an alias short enough to stand inside
ordinary words (one Chinese character) withholds every item holding it, erring on the
side of the secret.

Of the events, it knows those it took part in (a diffusion changed it, or the
words name it) and those it witnessed: it stood, before or after the event, where
one of the event's participants stood, or at a place the event changed or named.
Where everyone stood at each event comes from the records (each change of
``state.location`` on the story line), not from where they stand now. An event it
knows of whose words would tell it what it does not know is given by its changes
the character could have seen, without its words.

Who else knows a secret is given only for secrets the character knows, and only
those knowers it could know of: itself, and those whose learning (or any event
naming them with the secret) it took part in or witnessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.diffusers.context import find_mentions
from narrative.engine.eventgraph import EventInfo, Write
from narrative.engine.threads import THREAD_KINDS
from narrative.ids import normalize_name
from narrative.nodefile import NodeDict, edges_of, names_of
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

SECRET_KIND = "secret"
_LOCATION = "/state/location"


def is_secret(node: NodeDict | None) -> bool:
    return node is not None and node.get("kind") == SECRET_KIND


def is_public(node: NodeDict | None) -> bool:
    """A secret everyone knows: its ``state.known_widely`` is true."""
    return node is not None and bool((node.get("state") or {}).get("known_widely"))


def _folded(text: str) -> str:
    return normalize_name(text)


def _located(value: Any, written: str) -> str | None:
    """The location a change wrote, from a change at ``written`` (the field, the state, the node)."""
    if value is fields.ABSENT:
        return None
    sub = value if written == _LOCATION else fields.get(value, _LOCATION[len(written):])
    return sub if isinstance(sub, str) else None


class Whereabouts:
    """Where a node stood at each event of the story line, read from the recorded changes."""

    def __init__(self, wr: WorldRepo, tip: str, view: WorldView) -> None:
        self.wr = wr
        self.tip = tip
        self.view = view
        self._moves: dict[str, list[Write]] = {}

    def _writes(self, node_id: str) -> list[Write]:
        if node_id not in self._moves:
            rows = self.wr.catalog.graph.chain_writes(self.tip, node_id)
            self._moves[node_id] = [w for w in rows if w.field in ("", "/state", _LOCATION)]
        return self._moves[node_id]

    def moves(self, node_id: str) -> list[Write]:
        """The recorded changes of ``node_id``'s location on the story line, oldest first."""
        return self._writes(node_id)

    def ever_at(self, places: set[str]) -> set[str]:
        """The nodes that stood in one of ``places`` at some point of the story line: moved
        there or away by a recorded change, or standing there now."""
        if not places:
            return set()
        found = self.wr.catalog.graph.ever_located(self.tip, places)
        found |= {r.src for r in self.view.references_to(places, {_LOCATION: "at"})}
        return found

    def at(self, node_id: str, seq: int) -> str | None:
        """Where ``node_id`` stood once the event at ``seq`` was over (None: nowhere known)."""
        moves = self._writes(node_id)
        done = [w for w in moves if w.seq <= seq]
        if done:
            return _located(done[-1].new, done[-1].field)
        if moves:
            return _located(moves[0].old, moves[0].field)
        node = self.view.get(node_id)
        loc = ((node or {}).get("state") or {}).get("location")
        return loc if isinstance(loc, str) else None


@dataclass
class Sight:
    """What ``pov`` can know of the world and of the story; build with :func:`sight`."""

    pov: str
    view: WorldView
    where: Whereabouts
    visible: set[str]
    known_secrets: set[str]
    unknown_secrets: set[str]
    forbidden: list[str]
    knowers: dict[str, set[str]] = field(default_factory=dict)
    reader: Any = None  # a caching names world to find mentions with (MentionWorld)
    _known: dict[str, bool] = field(default_factory=dict)
    _near_names: list[str] | None = None
    _mentions: dict[str, set[str]] = field(default_factory=dict)

    def can_see(self, node_id: str) -> bool:
        return node_id in self.visible

    def clean(self, *texts: Any) -> bool:
        """Whether none of ``texts`` holds a string that names what ``pov`` does not know."""
        for text in texts:
            if not isinstance(text, str) or not text:
                continue
            folded = _folded(text)
            if any(f in folded for f in self.forbidden):
                return False
        return True

    def edge_visible(self, src: str, rtype: str, dst: str) -> bool:
        if not (self.can_see(src) and self.can_see(dst)):
            return False
        if rtype == "knows" and dst in self.known_secrets:
            return src in self.knowers.get(dst, {self.pov})
        return True

    def named(self, e: EventInfo) -> set[str]:
        """The nodes an event's words name (one node per name: a shared name names none)."""
        if e.commit not in self._mentions:
            found = find_mentions(self.reader or self.view, e.content) if e.content else []
            self._mentions[e.commit] = {m.ids[0] for m in found if len(m.ids) == 1}
        return self._mentions[e.commit]

    def knows_of(self, e: EventInfo, writes: list[Write]) -> bool:
        """Whether ``pov`` took part in the event or witnessed it.

        What the records say is asked first (what the event changed, and where that stood);
        its words are read for names only when they hold a name that could matter: one of
        pov's, of the places it stood in, or of someone who ever stood there.
        """
        if e.commit in self._known:
            return self._known[e.commit]
        acted = {w.target for w in writes if w.source == "diffusion"}
        mine = {self.where.at(self.pov, e.seq), self.where.at(self.pov, e.seq - 1)} - {None}
        known = self.pov in acted or bool(mine & (self._places(e, acted, writes) | acted))
        if not known and self._may_matter(e):
            who = acted | self.named(e)
            known = self.pov in who or bool(mine & (self._places(e, who, writes) | who))
        self._known[e.commit] = known
        return known

    def _places(self, e: EventInfo, who: set[str], writes: list[Write]) -> set[str]:
        """Where the event's participants stood, before or after it, and where it moved anyone."""
        places: set[str] = set()
        for n in who:
            for seq in (e.seq, e.seq - 1):
                at = self.where.at(n, seq)
                if at is not None:
                    places.add(at)
        for w in writes:
            if w.source == "diffusion" and w.field == _LOCATION and isinstance(w.new, str):
                places.add(w.new)
        return places

    def _may_matter(self, e: EventInfo) -> bool:
        """A cheap test before reading an event's words for names (see :meth:`knows_of`)."""
        if not e.content:
            return False
        if self._near_names is None:
            self._near_names = sorted(self._names_near())
        text = _folded(e.content)
        return any(n in text for n in self._near_names)

    def _names_near(self) -> set[str]:
        """The names of pov, of every place it stood in on the story line, and of every node
        that ever stood in one of those places."""
        places = {loc for w in self.where.moves(self.pov)
                  for loc in (_located(w.old, w.field), _located(w.new, w.field)) if loc}
        now = self.where.at(self.pov, 1 << 60)
        if now is not None:
            places.add(now)
        near = {self.pov, *places, *self.where.ever_at(places)}
        out: set[str] = set()
        for n in near:
            node = self.view.get(n)
            if node is not None:
                out |= names_of(node)
        return out

    def seen_changes(self, writes: list[Write], name_of: Any) -> list[str]:
        """The changes of an event ``pov`` could have seen, in words naming nothing it does not know."""
        out = []
        for w in writes:
            if w.source != "diffusion" or not self.can_see(w.target):
                continue
            parts = fields.split(w.field)
            if parts[:1] == ["relations"] and len(parts) >= 3 and not self.edge_visible(
                    w.target, parts[1], parts[2]):
                continue
            who = name_of.get(w.target, w.target)
            if w.field == "":
                line = f"{who} {'appears' if w.old is fields.ABSENT else 'is gone'}"
            elif parts[:1] == ["relations"] and len(parts) == 3:
                other = name_of.get(parts[2], parts[2])
                line = f"{who} {'no longer ' if w.new is fields.ABSENT else ''}{parts[1]} {other}"
            else:
                value = "(gone)" if w.new is fields.ABSENT else fields.show(w.new)
                line = f"{who} {'.'.join(parts)} = {value}"
            if self.clean(line):
                out.append(line)
        return out


def visible_to(view: WorldView, pov: str, labels: dict[str, str]) -> set[str]:
    """The nodes ``pov`` can know of: itself, its relations' targets (secrets only through
    ``knows``, or public ones; threads never), its location and whoever stands there, and
    what those hold."""
    me = view.get(pov)
    assert me is not None
    seen = {pov}
    for rtype, dst in edges_of(me):
        target = view.get(dst)
        if rtype == "knows" or not is_secret(target) or is_public(target):
            seen.add(dst)
    seen.update(r.dst for r in view.references_from([pov], labels))
    loc = (me.get("state") or {}).get("location")
    if isinstance(loc, str):
        seen.add(loc)
        for ref in view.references_to([loc], {_LOCATION: labels.get(_LOCATION, "at")}):
            node = view.get(ref.src)
            if node is not None:
                seen.add(ref.src)
                seen.update(d for t, d in edges_of(node) if t == "holds")
    known = {d for t, d in edges_of(me) if t == "knows"}
    out = set()
    for n in seen:
        node = view.get(n)
        if node is None:
            continue
        if node.get("kind") in THREAD_KINDS and n != pov:
            continue
        if n == pov or not is_secret(node) or n in known or is_public(node):
            out.add(n)
    return out


def sight(wr: WorldRepo, view: WorldView, tip: str, pov: str, labels: dict[str, str]) -> Sight:
    """What ``pov`` can know, as the story stands at ``tip`` (the world of ``view``)."""
    me = view.get(pov)
    assert me is not None
    secrets = set(view.ids_of_kind([SECRET_KIND]))
    mine = {d for t, d in edges_of(me) if t == "knows"}
    known = {s for s in secrets if s in mine or is_public(view.get(s))}
    unknown = secrets - known
    forbidden = _forbidden(wr, view, tip, unknown)
    where = Whereabouts(wr, tip, view)
    visible = visible_to(view, pov, labels) - unknown
    from narrative.engine.history_of import MentionWorld

    return Sight(pov, view, where, visible, known, unknown, forbidden, reader=MentionWorld(view, tip))


def _forbidden(wr: WorldRepo, view: WorldView, tip: str, unknown: Iterable[str]) -> list[str]:
    """Folded strings that name an unknown secret: its names, its summary, and the words of
    every event that changed it or an edge to it."""
    out: set[str] = set()
    commits: set[str] = set()
    graph = wr.catalog.graph
    for s in sorted(unknown):
        node = view.get(s)
        if node is not None:
            for text in [node.get("name", ""), *(node.get("aliases") or []), node.get("summary", "")]:
                if isinstance(text, str) and _folded(text):
                    out.add(_folded(text))
        writes = [*graph.chain_writes(tip, s), *graph.chain_pointing_at(tip, s)]
        commits.update(w.commit for w in writes if w.source == "diffusion" and _concerns(w, s))
    for e in graph.event_infos(commits):
        if e.kind != "event":
            continue
        for words in (e.content, e.narrative):
            if isinstance(words, str) and _folded(words):
                out.add(_folded(words))
    return sorted(out)


def _concerns(w: Write, secret: str) -> bool:
    """Whether a change is to the secret itself or to someone's knowing it."""
    if w.target == secret:
        return True
    if w.field.startswith("/relations/"):
        parts = fields.split(w.field)
        return len(parts) >= 3 and parts[1] == "knows" and parts[2] == secret
    return w.field == "" and _knows_in(w, secret)


def _knows_in(w: Write, secret: str) -> bool:
    for value in (w.old, w.new):
        rels = value.get("relations") if isinstance(value, dict) else None
        if isinstance(rels, dict) and secret in (rels.get("knows") or {}):
            return True
    return False


def knowers_seen(wr: WorldRepo, sight_: Sight, tip: str, story: Any) -> None:
    """Fill ``sight_.knowers``: for each secret ``pov`` knows, the knowers it could know of
    (itself; those who learned it, or were named, in an event it took part in or witnessed)."""
    view = sight_.view
    for s in sorted(sight_.known_secrets):
        knowers = {src for src, t, _ in view.incoming([s]) if t == "knows"}
        seen = {sight_.pov} & knowers
        learnt = fields.pointer("relations", "knows", s)
        for w in wr.catalog.graph.chain_pointing_at(tip, s):
            if w.source != "diffusion" or w.field != learnt or seen >= knowers:
                continue
            event = story.event(w.commit)
            if sight_.knows_of(event, story.writes_of(w.commit)):
                seen |= ({w.target} | sight_.named(event)) & knowers
        sight_.knowers[s] = seen
