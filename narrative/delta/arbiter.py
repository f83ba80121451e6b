"""Arbitration of new nodes: a node a diffuser wants to create that the world already has
becomes a reference to the existing node, never a second node.

This is the "hook arbiter" of InkOS (seed 000): before a proposed thread is opened,
check whether it is only an old one said differently. Every node a diffuser
proposes is compared, within its layer, with the names and aliases of the live
nodes (and of nodes created earlier in the same proposal):

- the same id in the same layer, the same name (normalised: Unicode, case,
  spaces, hyphens, English articles), one multi-word name inside the other and
  starting and ending on the same words ("Crowd at the Ferry" within "Crowd at Cold
  River Ferry"; not "Black Ring Box", "Fake Black Ring" nor "Su Qing and Lin Yuan"),
  or a close spelling (difflib ratio at least 0.9, word by word, where only words
  of five letters or more may differ: "Qinyun Sect" is the Qingyun Sect, "Su Qin"
  is not Su Qing) make a duplicate;
- nodes this event ends anyway (those the proposal expires, ``event`` nodes from
  before, ``scene`` nodes when the scene closes) are not candidates: "the bell
  rings again" makes a new bell;
- a duplicate's create is dropped and the operations after it that name the
  proposed id are rewritten to the existing node; what the proposal knew that the
  existing node lacks (a state field it does not have, a relation it does not
  have) is added, nothing it has is overwritten;
- a new node whose id is taken by a different node (another layer, another name)
  is created under the first free id ``<id>-2``, ``<id>-3``, ...

An import (``across_layers``, ``enrich``) asks more: a node of the same name or
alias in another layer is the same node too (a lorebook has no layers), and what
the imported entry knows that the node lacks is added: its name and aliases that no
name of the node normalises to (unless another node carries them: that would make
the name ambiguous, so it is noted instead) and its summary where the node has none.
A summary the node has is never overwritten; a different one is noted. An entry that
met the node only through an alias both carry ("Tove" for Tove Greaves and Tove
Dunmore) adds no names at all: otherwise each such entry would lend the node more
aliases for the next to meet it by, until one node held a whole cast.

An import asks for exact identity (``identity="exact"``), as a writer's bible holds distinct
things with alike names (Light and Blight, Giant Toad and Giant Ice Toad, Name1 and Name12):
a proposed node is an existing one only by the same id in its layer, or when its name is one
of that node's names, or that node's name one of its own (Unicode, case and width aside:
:func:`narrative.ids.normalize_name`; articles and hyphens count), and never another node of
the same delta (the import has already joined what is one). Two nodes that only share an
alias stay two. A name several nodes carry names none of them. The names are looked up in one
query for the whole delta, so an import of 20,000 entries costs a query, not a scan per entry.

Names are indexed, not compared pair by pair: a proposed key meets only the keys it
can match, those equal to it, those with the same first and last word (the
"within" rule), and those of as many words that rapidfuzz finds at least as close
as the threshold (its Indel ratio bounds difflib's from above, so nothing is missed)
and that have the same short words in the same places. The decisions are exactly
those of comparing every pair (a test holds it); the 2000 notes of
``benchmarks/importing.py`` are weighed in about 0.4 s instead of 14 s.

Each decision is returned, so the engine can print it and record it in the result.
"""

from __future__ import annotations

import difflib
import functools
import json
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.delta.world import World
from narrative.ids import LAYERS, MAX_ID_LENGTH, id_problem, normalize_name
from narrative.model import CreateOp, Delta, ExpireOp, Node, Op, RelateOp, SetOp, UnrelateOp, UnsetOp
from narrative.nodefile import NodeDict, as_node_dict, names_of

FUZZY_RATIO = 0.9
FUZZY_MIN_CHARS = 4
FUZZY_WORD_CHARS = 5  # a word shorter than this must match exactly
FUZZY_WORD_RATIO = 0.8
ARTICLES = frozenset({"the", "a", "an"})
JOINERS = frozenset({"and", "or", "with", "&", "和", "与", "及"})


@dataclass
class Decision:
    """What the arbiter decided about one proposed node."""

    proposed: str
    name: str
    existing: str | None = None
    existing_name: str | None = None
    how: str = ""
    created_as: str | None = None
    merged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was known and left as it is (an import)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"proposed": self.proposed, "name": self.name}
        if self.existing is not None:
            out.update({"decision": "reference", "existing": self.existing, "how": self.how,
                        "merged": self.merged})
            if self.notes:
                out["notes"] = self.notes
        else:
            out.update({"decision": "renamed", "created_as": self.created_as, "how": self.how})
        return out

    def note(self) -> str:
        if self.existing is None:
            return (f"arbiter: {self.how}; creating {self.name!r} as {self.created_as}")
        text = (f"arbiter: not creating {self.proposed} ({self.name!r}): it is {self.existing} "
                f"({self.existing_name!r}), {self.how}; later changes go to {self.existing}")
        if self.merged:
            text += f"; added {', '.join(self.merged)}"
        return text


class _Dashes(dict[int, "str | int"]):
    """``str.translate`` table: underscores and dashes (Unicode Pd) to spaces, learnt per character."""

    def __missing__(self, code: int) -> str | int:
        ch = chr(code)
        value: str | int = " " if ch == "_" or unicodedata.category(ch) == "Pd" else code
        self[code] = value
        return value


_DASHES = _Dashes()


@functools.lru_cache(maxsize=1 << 16)
def key(name: str) -> str:
    """A name as the arbiter compares it: normalised, hyphens as spaces, without articles.

    Every event with a new node keys every name of its layer (and a server keeps
    keying the same ones), so the table and the cache matter at 10k nodes.
    """
    spaced = normalize_name(name).translate(_DASHES)
    return " ".join(t for t in spaced.split() if t not in ARTICLES)


def likeness(a: str, b: str) -> tuple[float, str] | None:
    """How alike two keys are (higher is closer) and why, or None when they are not."""
    return Likeness(a)(b)


class Likeness:
    """Compares one key with many: cheap bounds first, so a large layer stays quick."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.tokens = set(key.split())
        self.matcher = difflib.SequenceMatcher(None, autojunk=False)
        self.matcher.set_seq2(key)  # difflib caches what it learns about the second sequence

    def __call__(self, other: str) -> tuple[float, str] | None:
        a, b = self.key, other
        if not a or not b:
            return None
        if a == b:
            return 3.0, f"same name {a!r}"
        tb = set(b.split())
        short, long_ = (self.tokens, tb) if len(self.tokens) <= len(tb) else (tb, self.tokens)
        if len(short) >= 2 and short < long_:
            inner, outer = (a, b) if short is self.tokens else (b, a)
            # "crowd at the ferry" is "crowd at cold river ferry"; "black ring box" and "fake
            # black ring" are not "black ring", and "su qing and lin yuan" is two people
            iw, ow = inner.split(), outer.split()
            if iw[0] == ow[0] and iw[-1] == ow[-1] and not (set(ow) & JOINERS):
                return 2.0, f"{inner!r} within {outer!r}"
            return None
        la, lb = len(a), len(b)
        if min(la, lb) < FUZZY_MIN_CHARS or 2 * min(la, lb) / (la + lb) < FUZZY_RATIO:
            return None
        if not _words_alike(a.split(), b.split()):
            return None
        m = self.matcher
        m.set_seq1(b)
        if m.real_quick_ratio() < FUZZY_RATIO or m.quick_ratio() < FUZZY_RATIO:
            return None
        ratio = m.ratio()
        if ratio >= FUZZY_RATIO:
            return 1.0 + ratio, f"{a!r} is close to {b!r} ({ratio:.2f})"
        return None


def _words_alike(a: list[str], b: list[str]) -> bool:
    """Word by word the same, but for a slip in a long word.

    A short word differing by a letter is another name, not a typo: Lin Yun is
    not Lin Yuan, Su Qin not Su Qing, Old Zhu not Old Zhou.
    """
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if min(len(x), len(y)) < FUZZY_WORD_CHARS:
            return False
        if difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() < FUZZY_WORD_RATIO:
            return False
    return True


def _shape(words: list[str]) -> tuple[str, ...]:
    """The words that must match exactly for a close spelling, with ``""`` for the long ones."""
    return tuple("" if len(w) >= FUZZY_WORD_CHARS else w for w in words)


class _NameIndex:
    """The keys of one layer's names, indexed so that a proposed key meets only those it may match.

    :meth:`near` returns a superset of the keys :class:`Likeness` accepts: the same key;
    a key one may lie within (it shares the first and the last word); a close spelling
    (as many words, rapidfuzz's Indel ratio, an upper bound of difflib's, reaches the
    threshold, and the same shape, see :func:`_shape`). Adding a name costs little more
    than a dict entry, since an event with one new node builds the index for one query.
    """

    def __init__(self, direct: int = 8) -> None:
        self.direct = direct  # queries answered without rapidfuzz: an event asks one or two
        self.ids: dict[str, list[str]] = {}  # key -> ids carrying it
        self._ends: dict[tuple[str, str], list[str]] = {}  # (first word, last word) -> keys
        self._counts: dict[int, list[str]] = {}  # words -> keys long enough to be close spellings

    def add(self, k: str, node_id: str) -> None:
        ids = self.ids.get(k)
        if ids is not None:
            ids.append(node_id)
            return
        if not k:
            return
        self.ids[k] = [node_id]
        words = k.split()
        if len(words) >= 2:
            self._ends.setdefault((words[0], words[-1]), []).append(k)
        if len(k) >= FUZZY_MIN_CHARS:
            self._counts.setdefault(len(words), []).append(k)

    def near(self, k: str) -> set[str]:
        out = {k} if k in self.ids else set()
        words = k.split()
        if len(words) >= 2:
            out.update(self._ends.get((words[0], words[-1]), ()))
        block = self._counts.get(len(words)) if len(k) >= FUZZY_MIN_CHARS else None
        if not block:
            return out
        shape = _shape(words)
        self.direct -= 1
        if self.direct >= 0:  # cheaper than importing rapidfuzz (20 ms) for an event's few names
            n = len(k)
            close: Iterable[str] = (b for b in block
                                    if 2 * min(n, len(b)) >= (FUZZY_RATIO - 1e-9) * (n + len(b)))
        else:
            from rapidfuzz import fuzz, process

            # a hair under the threshold: float rounding must not drop a borderline pair
            close = (hit[0] for hit in process.extract(k, block, scorer=fuzz.ratio, processor=None,
                                                       limit=None, score_cutoff=FUZZY_RATIO * 100 - 0.01))
        out.update(b for b in close if _shape(b.split()) == shape)
        return out


class _Candidates:
    """The live nodes a proposed node may duplicate, with their names indexed by layer."""

    def __init__(self, world: World, delta: Delta, close_scene: bool,
                 across_layers: bool | Collection[str], exact: bool = False) -> None:
        self.world = world
        self.exact = exact
        self._carriers: dict[str, set[str]] = {}  # exact: normalised name -> ids of the world carrying it
        if exact:
            wanted = {norm for op in delta.ops if isinstance(op, CreateOp)
                      for norm in names_of({"name": op.node.name, "aliases": op.node.aliases})}
            self._carriers = world.ids_by_name(sorted(wanted)) if wanted else {}
        self.across_layers = across_layers
        self.expired = {op.target for op in delta.ops if isinstance(op, ExpireOp)}
        self.ending = {"event", "scene"} if close_scene else {"event"}
        self.new: dict[str, Node] = {}
        self._index: dict[str, _NameIndex] = {}
        self._new_names: dict[str, list[tuple[str, str]]] = {}  # layer -> keys of new nodes
        self._new_norms: dict[str, set[str]] = {}  # normalised name of a new node -> its ids
        self.pending: dict[str, NodeDict] = {}  # existing id -> the node with what was added to it
        self.claimed: dict[str, str] = {}  # normalised alias added to an existing node -> its id

    def add(self, node: Node) -> None:
        """``node`` is created by this delta: later proposals are weighed against it too."""
        self.new[node.id] = node
        for name in [node.name, *node.aliases]:
            self._learn(node.layer, name, node.id)
        for norm in names_of({"name": node.name, "aliases": node.aliases}):
            self._new_norms.setdefault(norm, set()).add(node.id)

    def _learn(self, layer: str, name: str, node_id: str) -> None:
        """``name`` names ``node_id`` from now on (a new node, an alias an import adds)."""
        self._new_names.setdefault(layer, []).append((key(name), node_id))
        if layer in self._index:
            self._index[layer].add(key(name), node_id)

    def live(self, node_id: str) -> NodeDict | None:
        if node_id in self.new:
            return as_node_dict(self.new[node_id].model_dump(mode="json", warnings=False))  # screened later
        if node_id in self.expired:
            return None
        node = self.world.get(node_id)
        if node is None:
            return None
        if node.get("lifecycle") in self.ending and self.world.committed_path(node_id) is not None:
            return None
        return node

    def index(self, layer: str) -> _NameIndex:
        """Every name and alias in ``layer`` (hand edits included), by key."""
        if layer not in self._index:
            index = _NameIndex()
            for norm, node_id in self.world.names_in_layer(layer):
                index.add(key(norm), node_id)
            for k, node_id in self._new_names.get(layer, []):
                index.add(k, node_id)
            self._index[layer] = index
        return self._index[layer]

    def duplicate_of(self, node: Node, strict: bool = False) -> tuple[str, str, bool] | None:
        """``(existing id, why, by name)`` when ``node`` is already in the world, else None.

        ``strict`` (an entry narr wrote itself, with its own id): only the same id, or the same
        name in a node the world had before this delta; never a close spelling, never another
        node of the same delta (narr's export holds each node once, so two are two).

        ``by name`` is false when the two met only through aliases they share ("Tove"
        for Tove Dunmore and Tove Greaves): a weaker sign than a name, so an import
        adds nothing of the one's names to the other.
        """
        same = self.live(node.id)
        if same is not None and same.get("layer") == node.layer:
            return node.id, "same id", True
        if self.exact:
            return self._same_name(node)
        found: list[tuple[float, int, int, str, str, str, str]] = []
        keys = sorted({key(n) for n in [node.name, *node.aliases]} - {""})
        index = self.index(node.layer)
        for k in keys:
            like = Likeness(k)
            for existing_key in index.near(k):
                alike = like(existing_key)
                if alike is None:
                    continue
                if strict and alike[0] < 3.0:
                    continue
                for node_id in index.ids[existing_key]:
                    if strict and node_id in self.new:
                        continue
                    if self.live(node_id) is not None:
                        found.append((-alike[0], 0, -len(existing_key), existing_key, node_id, alike[1],
                                      k))
        across = (self.across_layers if isinstance(self.across_layers, bool)
                  else node.id in self.across_layers)
        if across:  # the same name in another layer is the same node (not a close one)
            for layer in LAYERS:
                if layer == node.layer:
                    continue
                other = self.index(layer)
                for k in keys:
                    for node_id in other.ids.get(k, []):
                        if self.live(node_id) is not None:
                            found.append((-3.0, 1, -len(k), k, node_id,
                                          f"same name {k!r}, in the {layer} layer", k))
        if not found:
            return None
        best = min(found)  # the closest, in its own layer first, then the longest name, by name and id
        names = {key(node.name), key(str((self.live(best[4]) or {}).get("name", "")))}
        by_name = any(f[4] == best[4] and (f[6] in names or f[3] in names) for f in found)
        return best[4], best[5], by_name

    def _same_name(self, node: Node) -> tuple[str, str, bool] | None:
        """Exact identity (module docstring): the one node of the world, in the node's layer
        first (in another only ``across_layers``), that the node's name names or whose name the
        node carries."""
        mine = names_of({"name": node.name, "aliases": node.aliases})
        name = normalize_name(node.name)
        across = (self.across_layers if isinstance(self.across_layers, bool)
                  else node.id in self.across_layers)
        found: dict[str, tuple[str, str]] = {}  # id -> (layer, how)
        for norm in sorted(mine):
            ids = set(self._carriers.get(norm, ()))
            if norm in self.claimed:
                ids.add(self.claimed[norm])
            for node_id in sorted(i for i in ids if i not in self.new):
                there = self.live(node_id)
                if there is None or node_id in found:
                    continue
                theirs = names_of(there)
                if norm != name and normalize_name(str(there.get("name", ""))) not in mine \
                        and name not in theirs:
                    continue  # only an alias both carry: two things
                layer = str(there.get("layer", ""))
                if layer != node.layer and not across:
                    continue
                how = f"same name {norm!r}" + ("" if layer == node.layer else f", in the {layer} layer")
                found[node_id] = (layer, how)
        own = [i for i, (layer, _) in found.items() if layer == node.layer]
        pick = own if own else list(found)
        if len(pick) != 1:
            return None  # none, or a name two nodes carry: which one would be a guess
        return pick[0], found[pick[0]][1], True

    def carriers(self, norm: str) -> set[str]:
        """Ids of the live nodes a normalised name names, this delta's new nodes and additions included."""
        ids = {i for i in self.world.ids_by_name([norm]).get(norm, set()) if self.live(i) is not None}
        ids |= self._new_norms.get(norm, set())
        if norm in self.claimed:
            ids.add(self.claimed[norm])
        return ids

    def enrich(self, existing: str, current: NodeDict, proposed: Node, by_name: bool
               ) -> tuple[list[tuple[SetOp, str]], list[str]]:
        """The aliases and summary ``proposed`` adds to ``existing`` (each set with how to say it),
        and what it knew but did not add."""
        if not by_name:  # adding would chain: the next entry sharing one of those aliases, and so on
            return [], ["it shares only an alias with the node: its names and summary are not added"]
        node = self.pending.get(existing, current)
        ops: list[tuple[SetOp, str]] = []
        notes: list[str] = []
        have = names_of(node)
        added: list[str] = []
        for name in [proposed.name, *proposed.aliases]:
            norm = normalize_name(name)
            if not norm or norm in have:
                continue
            others = sorted(self.carriers(norm) - {existing})
            if others:
                notes.append(f"the alias {name!r} is not added: it names {', '.join(others)}")
                continue
            have.add(norm)
            added.append(name)
        aliases = node.get("aliases")
        if added and isinstance(aliases, list | None):
            value = [*(aliases or []), *added]
            said = ", ".join(json.dumps(n, ensure_ascii=False) for n in added)
            ops.append((SetOp(target=existing, field="/aliases", value=value),
                        f"/aliases ({said})"))
            node = as_node_dict({**node, "aliases": value})
            self.claimed.update((normalize_name(n), existing) for n in added)
            for name in added:  # a later entry of that name is this node too
                self._learn(str(node.get("layer", "")), name, existing)
        summary = node.get("summary")
        summary = summary.strip() if isinstance(summary, str) else ""
        if proposed.summary.strip() and not summary:
            ops.append((SetOp(target=existing, field="/summary", value=proposed.summary.strip()),
                        "/summary"))
            node = as_node_dict({**node, "summary": proposed.summary.strip()})
        elif proposed.summary.strip() and " ".join(proposed.summary.split()) != " ".join(summary.split()):
            notes.append("its summary differs from the one in the world, which is kept")
        self.pending[existing] = node
        return ops, notes

    def taken(self, node_id: str) -> bool:
        return node_id in self.new or self.world.get(node_id) is not None


def arbitrate(world: World, delta: Delta, *, close_scene: bool = False,
              across_layers: bool | Collection[str] = False,
              enrich: bool = False, exact: Collection[str] = (), identity: str = "alike",
              progress: Callable[[int, int, str], None] | None = None) -> tuple[Delta, list[Decision]]:
    """The delta with duplicate creations turned into references, and the decisions taken.

    ``across_layers``: a node of the same name in another layer is a duplicate too
    (for every proposed node, or for the proposed ids given: an import's entries whose
    source says no layer);
    ``enrich``: a duplicate's new aliases and a missing summary are added to the
    existing node (both for an import; an event's diffuser gets neither);
    ``exact``: proposed ids of nodes narr wrote itself (a codex, an export), matched strictly
    (:meth:`_Candidates.duplicate_of`), so that an export reads back as it was.
    ``identity``: ``"alike"`` (an event's: close spellings are the same node) or ``"exact"``
    (an import's: the same name only, module docstring);
    ``progress(done, total, name)`` hears of each creation weighed (an import of thousands).
    """
    creates = sum(isinstance(op, CreateOp) for op in delta.ops)
    if not creates:
        return delta, []
    cands = _Candidates(world, delta, close_scene, across_layers, exact=identity == "exact")
    mapping: dict[str, str] = {}
    decisions: list[Decision] = []
    out: list[Op | None] = []
    decided_at: dict[str, int] = {}  # proposed id -> where in ``out`` its create was decided
    enriched_at: dict[tuple[str, str], int] = {}  # (existing id, field) -> where it was last set
    weighed = 0
    for op in delta.ops:
        if not isinstance(op, CreateOp):
            out.append(_rewrite(op, mapping))
            continue
        node = op.node
        weighed += 1
        if progress is not None:
            progress(weighed, creates, node.name)
        decided_at[node.id] = len(out)
        found = cands.duplicate_of(node, strict=node.id in exact)
        if found is not None:
            existing, how, by_name = found
            mapping[node.id] = existing
            target = cands.live(existing) or {}
            decision = Decision(node.id, node.name, existing, str(target.get("name", existing)), how)
            fill = _fill(existing, target, _rewrite_node(node, mapping))
            decision.merged = [_describe(f) for f in fill]
            if enrich:
                more, decision.notes = cands.enrich(existing, target, node, by_name)
                for extra, said in more:
                    where = (existing, extra.field)
                    if where in enriched_at:  # a second entry for one node: its set holds both
                        out[enriched_at[where]] = None
                    enriched_at[where] = len(out) + len(fill)
                    fill.append(extra)
                    decision.merged.append(said)
            out.extend(fill)
            decisions.append(decision)
            continue
        if cands.taken(node.id):
            new_id = _free_id(cands, node.id)
            holder = world.get(node.id) or {}
            how = (f"the id {node.id} is taken by {holder.get('name', node.id)!r} "
                   f"({holder.get('layer', 'another')} layer), a different node")
            decisions.append(Decision(node.id, node.name, created_as=new_id, how=how))
            mapping[node.id] = new_id
            node = node.model_copy(update={"id": new_id})
        elif node.id in mapping:
            del mapping[node.id]  # a fresh node of that id: later ops mean it
        node = _rewrite_node(node, mapping)
        cands.add(node)
        out.append(CreateOp(node=node))
    # a created node may relate to a node proposed after it, which the arbiter then decided on
    for i, done in enumerate(out):
        if isinstance(done, CreateOp):
            later = {dst: mapping[dst] for targets in done.node.relations.values() for dst in targets
                     if dst in mapping and decided_at.get(dst, -1) > i}
            if later:
                out[i] = CreateOp(node=_rewrite_node(done.node, later))
    ops = [op for op in out if op is not None]
    return delta.model_copy(update={"ops": ops}), decisions


def _free_id(cands: _Candidates, base: str) -> str:
    for n in range(2, 1000):
        suffix = f"-{n}"
        candidate = base[: MAX_ID_LENGTH - len(suffix)] + suffix
        if id_problem(candidate) is None and not cands.taken(candidate):
            return candidate
    raise AssertionError("no free id")  # a thousand nodes of one id: not a story


def _rewrite(op: Op, mapping: dict[str, str]) -> Op:
    if not mapping:
        return op
    if isinstance(op, SetOp | UnsetOp | ExpireOp):
        if op.target in mapping:
            return op.model_copy(update={"target": mapping[op.target]})
        return op
    if isinstance(op, RelateOp | UnrelateOp):
        return op.model_copy(update={"source": mapping.get(op.source, op.source),
                                     "target": mapping.get(op.target, op.target)})
    return op


def _rewrite_node(node: Node, mapping: dict[str, str]) -> Node:
    if not any(dst in mapping for targets in node.relations.values() for dst in targets):
        return node
    relations = {rtype: {mapping.get(dst, dst): attrs for dst, attrs in targets.items()}
                 for rtype, targets in node.relations.items()}
    return node.model_copy(update={"relations": relations})


def _fill(existing: str, current: NodeDict, proposed: Node) -> list[Op]:
    """What the proposed node says that the existing one does not: new state fields and edges."""
    ops: list[Op] = []
    state = current.get("state", {})
    for name, value in proposed.state.items():
        if name not in state:
            ops.append(SetOp(target=existing, field=fields.pointer("state", name), value=value))
    relations = current.get("relations", {})
    for rtype, targets in proposed.relations.items():
        for dst, attrs in targets.items():
            if dst != existing and dst not in relations.get(rtype, {}):
                ops.append(RelateOp(source=existing, type=rtype, target=dst, attrs=attrs))
    return ops


def _describe(op: Op) -> str:
    if isinstance(op, SetOp):
        return op.field
    assert isinstance(op, RelateOp)
    return fields.pointer("relations", op.type, op.target)
