"""What one character can know: the point of view ``narr brief --pov`` keeps to.

The question is always the same: how would the character know it? It knows

- **itself**, all of it: traits, state (its plans and moods too), relations;
- **what it sees now**: the place it stands in, who and what stands there with it
  (``state.location``, or an ``at`` relation, naming that place), and what it and they
  carry (``holds``, ``state.holder``). Of others it sees only the *outward*: who they are,
  their traits and state, the relations they show, but never their **inner** fields (a
  plan, a mood, a goal, a fear, a suspicion: :class:`Conventions`), and nothing a
  **hidden** thing (``state.hidden`` or ``state.concealed`` set, or lying in or held by a
  container, an item) would show: a hidden thing is not at the place for a bystander;
- **whom and what it knows of**: the targets of its relations, by who they are (name,
  summary, sections, outward traits) and by the relations that point at the character
  itself, but not where they are or how they stand: knowing someone is not seeing them.
  Of their state it knows the fields a witnessed event set and nothing has changed since;
- **what it was told**: what it ``knows`` (a ``knows`` relation gives the whole node, a
  secret's content; of a person, who they are), and the events it witnessed.

It witnessed an event when it **took part** in it (the event's recorded changes changed
the character's own node: it moved, learned, was hurt, changed its mind), when it **acted**
in it (the event's actor, the first character its words name: the teller of what it knew
already, the healer, the giver of what it no longer holds), or when it **stood where the
event happened, at the time**. It knows of the characters **it acted on** (those the
events it acted in changed) by who they are, as it knows the targets of its relations.
Where an event happened is where its participants stood just before or just after it (each recorded change of
``state.location`` on the story line says where everyone stood at every event, not where
they stand now), or a place the event changed itself. An event whose changes place no one
(words only) is placed by its *actor*, the first character its words name (the subject
of "Su Qing swears she will expose Lin Yuan"), and, failing that, by the places its words
name. Being named is not taking part: Lin Yuan at the ferry does not hear Su Qing swear
at the gate, though she names him. An event it witnessed is given in its own words
unless those would tell it what it does not know (a secret, the inner value the event
gave someone else); then as the changes it could have seen.

Secrets (nodes of kind ``secret``): it knows those it has a ``knows`` relation to and those
that are public (``state.known_widely``); every other secret is *unknown*, and nothing
that names one may reach it: its name, aliases and summary, and the words of every event
that wrote it or an edge to it (the event in which someone learned it, told it, revealed
it). :meth:`Sight.clean` holds any text to that, so a brief can check each item it is
about to give, whatever section it comes from. The test is on normalised text, inside
words too: an alias short enough to stand inside ordinary words (one Chinese character)
withholds every item holding it, erring on the side of the secret. Who else knows a secret
is given only for secrets the character knows, and only those knowers it could know of:
itself, and those whose learning (or any event naming them with the secret) it witnessed.

Which fields are inner is a convention with defaults (:data:`INNER`), for the nodes of the
character layer (a crowd's mood is there for anyone to see), that a world adjusts
in ``narr.toml``'s ``[pov]`` table: ``inner`` adds fields and relation types, ``outward``
takes entries back (a world where moods show on faces), either for characters or, written
``KIND:state.field``, for the nodes of one kind; ``hidden`` adds the flags that hide a node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from narrative import fields
from narrative.diffusers.context import find_mentions
from narrative.engine.eventgraph import EventInfo, Write
from narrative.engine.threads import THREAD_KINDS
from narrative.ids import normalize_name
from narrative.nodefile import NodeDict, edges_of, names_of
from narrative.store import WorldRepo, WorldView

SECRET_KIND = "secret"
_LOCATION = "/state/location"
_HOLDER = "/state/holder"

INNER = (
    *(f"state.{f}" for f in (
        "plan", "plans", "mood", "feeling", "feelings", "emotion", "intent", "intention",
        "intentions", "goal", "goals", "motive", "agenda", "fear", "fears", "desire", "desires",
        "wish", "hope", "hopes", "worry", "doubt", "doubts", "secret", "secrets", "suspicion",
        "suspicions", "thoughts", "belief", "beliefs", "opinion", "memory", "memories",
        "grudge", "resolve", "loyalty")),
    *(f"traits.{f}" for f in ("secret", "secrets", "true_identity", "motive", "fear", "fears", "desire")),
    *(f"relations.{t}" for t in (
        "suspects", "distrusts", "trusts", "fears", "loves", "hates", "desires", "resents",
        "admires", "envies", "plans", "intends", "suspected-by")),
)
"""Narr's own inner fields and relation types: a character's inner life, which no bystander
sees (a world adds to them and takes some back in ``[pov]``, :class:`Conventions`)."""

HIDDEN = ("state.hidden", "state.concealed")
"""The state fields that, set to anything but false, hide a node from whoever stands by."""

_NOT_SET = (None, False, "", "false", "no", 0)


def _dotted(entry: str) -> str:
    return fields.pointer(*entry.split(".", 1))


def _entry(entry: str) -> tuple[str | None, str]:
    """``crowd:state.mood`` as ``("crowd", "/state/mood")``; ``state.plan`` as ``(None, ...)``."""
    kind, _, tail = entry.rpartition(":")
    return (kind or None), _dotted(tail)


@dataclass(frozen=True)
class Conventions:
    """Which fields of a node are inner life and which flags hide it, for one world.

    An inner entry is a field pointer for the nodes of the character layer (``None``) or of
    one kind (``KIND:state.field`` in ``narr.toml``); an outward entry takes one back.
    """

    inner: frozenset[tuple[str | None, str]]  # (kind, pointer): (None, "/state/plan")
    hidden: tuple[str, ...]  # pointers: /state/hidden
    outward: frozenset[tuple[str | None, str]] = frozenset()

    @classmethod
    def of(cls, pov: dict[str, tuple[str, ...]] | None = None) -> Conventions:
        """narr's defaults with a world's ``[pov]`` table laid over them."""
        pov = pov or {}
        inner = {_entry(e) for e in (*INNER, *pov.get("inner", ()))}
        outward = {_entry(e) for e in pov.get("outward", ())}
        hidden = dict.fromkeys([*HIDDEN, *pov.get("hidden", ())])
        return cls(frozenset(inner - outward), tuple(_dotted(e) for e in hidden),
                   frozenset(outward))

    def is_inner(self, pointer: str, layer: str | None = "character", kind: str | None = None) -> bool:
        """Whether a field (or a relation, ``/relations/TYPE/...``) of a node of ``layer``
        and ``kind`` is inner life."""
        parts = fields.split(pointer)
        if len(parts) < 2:
            return False
        top = fields.pointer(*parts[:2])
        if kind and (kind, top) in self.outward:
            return False
        if kind and (kind, top) in self.inner:
            return True
        return layer in (None, "character") and (None, top) in self.inner

    def is_hidden(self, node: NodeDict, view: WorldView) -> bool:
        """Whether a node is out of a bystander's sight: a hiding flag is set, or it lies in
        or is held by a container (an item)."""
        for ptr in self.hidden:
            value = fields.get(node, ptr)
            if value is not fields.ABSENT and value not in _NOT_SET:
                return True
        state = node.get("state") or {}
        for key in ("location", "holder"):
            where = state.get(key)
            if isinstance(where, str) and where != node.get("id"):
                row = view.rows_of([where]).get(where)
                if row is not None and row.layer == "item":
                    return True
        return False


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


_IDENTITY = ("id", "name", "layer", "kind", "aliases", "summary", "sections", "lifecycle", "tags",
             "always_in_view")  # who or what a node is: the writer's words for it, no state


@dataclass
class Sight:
    """What ``pov`` can know of the world and of the story; build with :func:`sight`.

    ``present``: what it sees now (its place, who and what is there, what they carry);
    ``acquainted``: what its relations point at (known by who they are); ``told``: what it
    ``knows``. ``visible`` is all of them and itself.
    """

    pov: str
    view: WorldView
    where: Whereabouts
    visible: set[str]
    known_secrets: set[str]
    unknown_secrets: set[str]
    forbidden: list[str]
    conventions: Conventions = field(default_factory=Conventions.of)
    present: set[str] = field(default_factory=set)
    told: set[str] = field(default_factory=set)
    acted_on: set[str] = field(default_factory=set)  # the characters changed by events it acted in
    knowers: dict[str, set[str]] = field(default_factory=dict)
    reader: Any = None  # a caching names world to find mentions with (MentionWorld)
    story: Any = None  # the story line (eventgraph.Story), to read events by commit
    _known: dict[str, bool] = field(default_factory=dict)
    _near_names: list[str] | None = None
    _mentions: dict[str, list[str]] = field(default_factory=dict)
    _seen: dict[str, NodeDict | None] = field(default_factory=dict)
    _layers: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

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

    def level(self, node_id: str) -> str | None:
        """How ``pov`` knows a node: ``self``; ``whole`` (a thing it was told of, not a
        person); ``outward`` (before its eyes); ``identity`` (who or what it is); None."""
        if node_id == self.pov:
            return "self"
        if node_id not in self.visible:
            return None
        node = self.view.get(node_id)
        if node_id in self.told and (node or {}).get("layer") != "character":
            return "whole"
        return "outward" if node_id in self.present else "identity"

    def field_seen(self, node_id: str, pointer: str) -> bool:
        """Whether ``pov`` can see the field at ``pointer`` of a node."""
        level = self.level(node_id)
        parts = fields.split(pointer)
        if level == "self":
            return True
        if len(parts) >= 3 and parts[0] == "relations" and not self.edge_visible(
                node_id, parts[1], parts[2]):
            return False
        if level == "whole":
            return True
        if level is None or not parts:
            return False
        if level == "identity":
            return parts[0] in _IDENTITY or (parts[0] == "traits" and not self._inner(node_id, pointer))
        return not self._inner(node_id, pointer)

    def seen(self, node_id: str) -> NodeDict | None:
        """The node as ``pov`` can see it (:meth:`level`): inner fields, the state of someone
        out of sight and relations it cannot know left out; None when it cannot know it."""
        if node_id in self._seen:
            return self._seen[node_id]
        node = self.view.get(node_id)
        level = self.level(node_id)
        out: NodeDict | None = None
        if node is not None and level in ("self", "whole"):
            out = node
        elif node is not None and level is not None:
            part: dict[str, Any] = {k: v for k, v in node.items() if k in _IDENTITY}
            out = cast(NodeDict, part)
            traits = {k: v for k, v in (node.get("traits") or {}).items()
                      if not self._inner(node_id, fields.pointer("traits", k))}
            if traits:
                part["traits"] = traits
            seen_keys = None if level == "outward" else self._witnessed_state(node_id)
            state = {k: v for k, v in (node.get("state") or {}).items()
                     if not self._inner(node_id, fields.pointer("state", k))
                     and (seen_keys is None or k in seen_keys)}
            if state:
                part["state"] = state
            rels: dict[str, dict[str, Any]] = {}
            for rtype, targets in (node.get("relations") or {}).items():
                kept = {dst: attrs for dst, attrs in targets.items()
                        if self._shows(node_id, rtype, dst, level)}
                if kept:
                    rels[rtype] = kept
            if rels:
                part["relations"] = rels
        self._seen[node_id] = out
        return out

    def _witnessed_state(self, node_id: str) -> set[str]:
        """The state fields of a node out of sight whose value ``pov`` saw set: the last
        recorded change of each was made by an event it witnessed (and no hand edit since)."""
        last: dict[str, Write] = {}
        for w in self.where.wr.catalog.graph.chain_writes(self.where.tip, node_id):
            if w.source != "diffusion":
                continue
            parts = fields.split(w.field)
            if len(parts) >= 2 and parts[0] == "state":
                last[parts[1]] = w
            elif len(parts) <= 1:
                for value in (w.old, w.new):
                    state = value if parts == ["state"] else (
                        value.get("state") if isinstance(value, dict) else None)
                    for key in state if isinstance(state, dict) else ():
                        last[key] = w
        hand = self.view.hand.edits.get(node_id)
        edited = set()
        if hand is not None:
            old, new = (hand.old or {}).get("state") or {}, (hand.new or {}).get("state") or {}
            edited = {k for k in {*old, *new} if old.get(k, fields.ABSENT) != new.get(k, fields.ABSENT)}
        out = set()
        for key, w in last.items():
            if key not in edited and self.story is not None and self.knows_of(
                    self.story.event(w.commit), self.story.writes_of(w.commit)):
                out.add(key)
        return out

    def _inner(self, node_id: str, pointer: str) -> bool:
        """Whether the field of a node is inner life: an inner field of a character, or of a
        kind the world names (a crowd's mood, an item's state, are there for anyone to see)."""
        if node_id not in self._layers:
            row = self.view.rows_of([node_id]).get(node_id)
            self._layers[node_id] = (row.layer, row.kind) if row is not None else (None, None)
        layer, kind = self._layers[node_id]
        return self.conventions.is_inner(pointer, layer, kind)

    def lore(self, node_id: str) -> NodeDict | None:
        """A node always in view that ``pov`` does not otherwise know: a rule of the world
        whole, a person by who they are."""
        node = self.view.get(node_id)
        if node is None or node_id in self.unknown_secrets:
            return None
        if node.get("layer") != "character":
            return node
        out: dict[str, Any] = {k: v for k, v in node.items() if k in _IDENTITY}
        traits = {k: v for k, v in (node.get("traits") or {}).items()
                  if not self._inner(node_id, fields.pointer("traits", k))}
        return cast(NodeDict, {**out, "traits": traits} if traits else out)

    def _shows(self, src: str, rtype: str, dst: str, level: str) -> bool:
        if rtype == "knows":
            return dst in self.known_secrets and self.edge_visible(src, rtype, dst)
        if self._inner(src, fields.pointer("relations", rtype)):
            return False
        return (level == "outward" or dst == self.pov) and self.edge_visible(src, rtype, dst)

    def edge_visible(self, src: str, rtype: str, dst: str) -> bool:
        """Whether ``pov`` can know of the edge (a relation, or a reference field by its
        label): its own, or one it sees, not inner; who knows a secret only as it saw it."""
        if not (self.can_see(src) and self.can_see(dst)):
            return False
        if rtype == "knows" and dst in self.known_secrets:
            return src in self.knowers.get(dst, {self.pov})
        if src == self.pov or self.level(src) == "whole":
            return True
        if self._inner(src, fields.pointer("relations", rtype)):
            return False
        return src in self.present or dst == self.pov

    def named(self, e: EventInfo) -> set[str]:
        """The nodes an event's words name (one node per name: a shared name names none)."""
        return set(self._named_in_order(e))

    def _named_in_order(self, e: EventInfo) -> list[str]:
        if e.commit not in self._mentions:
            found = find_mentions(self.reader or self.view, e.content) if e.content else []
            found = sorted((m for m in found if len(m.ids) == 1), key=lambda m: m.start)
            self._mentions[e.commit] = list(dict.fromkeys(m.ids[0] for m in found))
        return self._mentions[e.commit]

    def actor(self, e: EventInfo) -> str | None:
        """The first character an event's words name: who acts, when the records place no one."""
        named = self._named_in_order(e)
        rows = self.view.rows_of(named)
        for n in named:
            if n in rows and rows[n].layer == "character":
                return n
        return None

    def knows_of(self, e: EventInfo, writes: list[Write]) -> bool:
        """Whether ``pov`` took part in the event or witnessed it (see the module's words).

        What the records say is asked first (what the event changed, and where that stood);
        its words are read for names only when the records place no one and the words hold
        a name that could matter: one of pov's, of the places it stood in, or of someone who
        ever stood there.
        """
        if e.commit in self._known:
            return self._known[e.commit]
        acted = {w.target for w in writes if w.source == "diffusion"}
        known = self.pov in acted or (self._may_matter(e) and self.actor(e) == self.pov)
        mine = {self.where.at(self.pov, e.seq), self.where.at(self.pov, e.seq - 1)} - {None}
        if not known and (mine or self._may_matter(e)):
            places = self._places(e, acted)
            known = bool(mine & (places | acted))
            if not known and not places and self._may_matter(e):
                actor = self.actor(e)
                if actor == self.pov:
                    known = True
                elif actor is not None and (located := self._places(e, {actor})):
                    known = bool(mine & located)
                else:
                    known = bool(mine & self.named(e))
        self._known[e.commit] = known
        return known

    def _places(self, e: EventInfo, who: set[str]) -> set[str]:
        """Where ``who`` stood just before and just after the event."""
        places: set[str] = set()
        for n in who:
            for seq in (e.seq, e.seq - 1):
                at = self.where.at(n, seq)
                if at is not None:
                    places.add(at)
        return places

    def may_tell(self, e: EventInfo, writes: list[Write]) -> bool:
        """Whether an event ``pov`` knows of can be given in its own words: they name nothing
        it does not know, nor the inner value the event gave someone else."""
        if not self.clean(e.content):
            return False
        text = _folded(e.content or "")
        for w in writes:
            if w.source != "diffusion" or w.target == self.pov:
                continue
            for value in _inner_values(w, partial(self._inner, w.target)):
                if _says(text, value):
                    return False
        return True

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
        """The changes of an event ``pov`` witnessed that it could have seen (nothing inner
        of anyone else), in words naming nothing it does not know."""
        out = []
        for w in writes:
            if w.source != "diffusion" or w.target in self.unknown_secrets:
                continue
            if w.target != self.pov and self._inner(w.target, w.field):
                continue
            parts = fields.split(w.field)
            if parts[:1] == ["relations"] and len(parts) >= 3 and parts[1] == "knows" \
                    and not self.edge_visible(w.target, parts[1], parts[2]):
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

    def saw_hidden(self, node_id: str) -> bool:
        """Whether ``pov`` witnessed an event that put a hidden node where it is or hid it."""
        if self.story is None:
            return False
        wr = self.where.wr
        for w in reversed(wr.catalog.graph.chain_writes(self.where.tip, node_id)):
            if w.source == "diffusion" and w.field in (
                    "", "/state", _LOCATION, _HOLDER, *self.conventions.hidden) and self.knows_of(
                    self.story.event(w.commit), self.story.writes_of(w.commit)):
                return True
        return False


def _says(text: str, value: str) -> bool:
    """Whether folded ``text`` holds folded ``value``: as whole words where it is written with
    letters that space words (``no`` is not in ``nothing``), anywhere inside CJK text."""
    if not value.strip():
        return False
    if not value.isascii():
        return value in text
    return re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text) is not None


def _inner_values(w: Write, inner: Callable[[str], bool]) -> list[str]:
    """The folded text values of inner fields a change wrote."""
    out: list[str] = []
    if w.new is fields.ABSENT:
        return out
    base = fields.split(w.field)
    if base and inner(w.field):
        values = [w.new]
    elif len(base) <= 1 and isinstance(w.new, dict):
        root = w.new.get("state") if not base else w.new
        values = [v for k, v in (root or {}).items() if inner(fields.pointer("state", k))]
    else:
        values = []
    for v in values:
        for text in (v if isinstance(v, list) else [v]):
            if isinstance(text, str) and _folded(text):
                out.append(_folded(text))
    return out


def in_sight(view: WorldView, pov: str, labels: dict[str, str],
             conventions: Conventions | None = None,
             saw_hidden: Any = None) -> tuple[set[str], set[str], set[str]]:
    """``(present, acquainted, told)`` for ``pov`` (see :class:`Sight`): secrets only through
    ``knows`` or public ones, threads never, hidden things only its own or those it knows of
    (``saw_hidden``: a test for one it saw hidden)."""
    conv = conventions or Conventions.of()
    me = view.get(pov)
    assert me is not None
    mine = {d for t, d in edges_of(me) if t == "holds"}
    mine |= {r.src for r in view.references_to([pov], {_HOLDER: "held by"})}
    told = {d for t, d in edges_of(me) if t == "knows"}
    acquainted = {dst for rtype, dst in edges_of(me) if rtype not in ("knows", "holds")}
    refs = view.references_from([pov], labels)
    acquainted |= {r.dst for r in refs if r.field != _LOCATION}
    present: set[str] = set(mine)
    loc = (me.get("state") or {}).get("location")
    if isinstance(loc, str) and view.exists(loc):
        present.add(loc)
        here = {r.src for r in view.references_to([loc], {_LOCATION: labels.get(_LOCATION, "at")})}
        here |= {src for src, t, _ in view.incoming([loc]) if t == "at"}
        people = [pov]
        for n in sorted(here - {pov}):
            node = view.get(n)
            if node is None:
                continue
            if n in told or n in mine or not conv.is_hidden(node, view) or (
                    saw_hidden is not None and saw_hidden(n)):
                present.add(n)
                if node.get("layer") == "character":
                    people.append(n)
        carried = {d for n in people for t, d in edges_of(view.get(n) or {}) if t == "holds"}
        carried |= {r.src for r in view.references_to(people, {_HOLDER: "held by"})}
        for n in sorted(carried - present):
            node = view.get(n)
            if node is not None and (n in told or n in mine or not conv.is_hidden(node, view)
                                     or (saw_hidden is not None and saw_hidden(n))):
                present.add(n)
    out = []
    for group in (present, acquainted, told):
        kept = set()
        for n in group:
            node = view.get(n)
            if node is None or n == pov:
                continue
            if node.get("kind") in THREAD_KINDS:
                continue
            if not is_secret(node) or n in told or is_public(node):
                kept.add(n)
        out.append(kept)
    return out[0], out[1], out[2]


def visible_to(view: WorldView, pov: str, labels: dict[str, str],
               conventions: Conventions | None = None) -> set[str]:
    """The nodes ``pov`` can know of at all: itself and what :func:`in_sight` gives."""
    present, acquainted, told = in_sight(view, pov, labels, conventions)
    return {pov, *present, *acquainted, *told}


def sight(wr: WorldRepo, view: WorldView, tip: str, pov: str, labels: dict[str, str]) -> Sight:
    """What ``pov`` can know, as the story stands at ``tip`` (the world of ``view``)."""
    from narrative.engine.eventgraph import Story
    from narrative.engine.history_of import MentionWorld

    me = view.get(pov)
    assert me is not None
    conv = Conventions.of(wr.config.pov)
    secrets = set(view.ids_of_kind([SECRET_KIND]))
    mine = {d for t, d in edges_of(me) if t == "knows"}
    known = {s for s in secrets if s in mine or is_public(view.get(s))}
    unknown = secrets - known
    forbidden = _forbidden(wr, view, tip, unknown)
    where = Whereabouts(wr, tip, view)
    eye = Sight(pov, view, where, set(), known, unknown, forbidden, conv,
                reader=MentionWorld(view, tip), story=Story(wr, tip))
    present, acquainted, told = in_sight(view, pov, labels, conv, eye.saw_hidden)
    eye.acted_on = acted_on(wr, eye, tip) - unknown
    acquainted |= eye.acted_on
    eye.present, eye.told = present - unknown, told - unknown
    eye.visible = ({pov} | present | acquainted | told) - unknown
    knowers_seen(wr, eye, tip, eye.story)
    return eye


def acted_on(wr: WorldRepo, eye: Sight, tip: str) -> set[str]:
    """The characters ``pov`` acted on: those changed by the events whose actor it is (the one
    it healed, gave to, told, wounded). Only events whose words hold one of its names are read."""
    me = eye.view.get(eye.pov)
    names = sorted(names_of(me)) if me is not None else []
    if not names:
        return set()
    out: set[str] = set()
    graph = wr.catalog.graph
    for e in graph.chain_events(tip):
        if e.kind != "event" or not e.content:
            continue
        text = _folded(e.content)
        if not any(n in text for n in names) or eye.actor(e) != eye.pov:
            continue
        for w in graph.commit_writes(e.commit, e.seq):
            if w.source != "diffusion" or w.target == eye.pov or w.target in out:
                continue
            row = eye.view.rows_of([w.target]).get(w.target)
            if row is not None and row.layer == "character" and eye.view.exists(w.target):
                out.add(w.target)
    return out


def _forbidden(wr: WorldRepo, view: WorldView, tip: str, unknown: Iterable[str]) -> list[str]:
    """Folded strings that name an unknown secret: its id, names and summary, and the words
    of every event that changed it or an edge to it."""
    out: set[str] = set()
    commits: set[str] = set()
    graph = wr.catalog.graph
    for s in sorted(unknown):
        node = view.get(s)
        if node is not None:
            for text in [s, node.get("name", ""), *(node.get("aliases") or []), node.get("summary", "")]:
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
