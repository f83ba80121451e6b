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

Each decision is returned, so the engine can print it and record it in the result.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.delta.world import World
from narrative.ids import MAX_ID_LENGTH, id_problem, normalize_name
from narrative.model import CreateOp, Delta, ExpireOp, Node, Op, RelateOp, SetOp, UnrelateOp, UnsetOp
from narrative.nodefile import NodeDict, as_node_dict

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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"proposed": self.proposed, "name": self.name}
        if self.existing is not None:
            out.update({"decision": "reference", "existing": self.existing, "how": self.how,
                        "merged": self.merged})
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


def key(name: str) -> str:
    """A name as the arbiter compares it: normalised, hyphens as spaces, without articles."""
    spaced = "".join(" " if ch == "_" or unicodedata.category(ch) == "Pd" else ch
                     for ch in normalize_name(name))
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


class _Candidates:
    """The live nodes a proposed node may duplicate, with their names, by layer."""

    def __init__(self, world: World, delta: Delta, close_scene: bool) -> None:
        self.world = world
        self.expired = {op.target for op in delta.ops if isinstance(op, ExpireOp)}
        self.ending = {"event", "scene"} if close_scene else {"event"}
        self.new: dict[str, Node] = {}
        self._names: dict[str, list[tuple[str, str]]] = {}
        self._new_names: dict[str, list[tuple[str, str]]] = {}  # layer -> keys of new nodes

    def add(self, node: Node) -> None:
        """``node`` is created by this delta: later proposals are weighed against it too."""
        self.new[node.id] = node
        self._new_names.setdefault(node.layer, []).extend(
            (key(n), node.id) for n in [node.name, *node.aliases])

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

    def names(self, layer: str) -> list[tuple[str, str]]:
        """``(key, id)`` for every name and alias in ``layer`` (hand edits included)."""
        if layer not in self._names:
            self._names[layer] = [(key(norm), node_id)
                                  for norm, node_id in self.world.names_in_layer(layer)]
        return self._names[layer] + self._new_names.get(layer, [])

    def duplicate_of(self, node: Node) -> tuple[str, str] | None:
        """``(existing id, why)`` when ``node`` is already in the world, else None."""
        same = self.live(node.id)
        if same is not None and same.get("layer") == node.layer:
            return node.id, "same id"
        found: list[tuple[float, int, str, str, str]] = []
        proposed = [Likeness(k) for k in sorted({key(n) for n in [node.name, *node.aliases]} - {""})]
        for existing_key, node_id in self.names(node.layer):
            for like in proposed:
                alike = like(existing_key)
                if alike is not None and self.live(node_id) is not None:
                    found.append((-alike[0], -len(existing_key), existing_key, node_id, alike[1]))
        if not found:
            return None
        best = min(found)  # the closest, then the longest name matched, then by name and id
        return best[3], best[4]

    def taken(self, node_id: str) -> bool:
        return node_id in self.new or self.world.get(node_id) is not None


def arbitrate(world: World, delta: Delta, *, close_scene: bool = False,
              progress: Callable[[int, int, str], None] | None = None) -> tuple[Delta, list[Decision]]:
    """The delta with duplicate creations turned into references, and the decisions taken.

    ``progress(done, total, name)`` hears of each creation weighed (an import of thousands).
    """
    creates = sum(isinstance(op, CreateOp) for op in delta.ops)
    if not creates:
        return delta, []
    cands = _Candidates(world, delta, close_scene)
    mapping: dict[str, str] = {}
    decisions: list[Decision] = []
    out: list[Op] = []
    decided_at: dict[str, int] = {}  # proposed id -> where in ``out`` its create was decided
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
        found = cands.duplicate_of(node)
        if found is not None:
            existing, how = found
            mapping[node.id] = existing
            target = cands.live(existing) or {}
            decision = Decision(node.id, node.name, existing, str(target.get("name", existing)), how)
            fill = _fill(existing, target, _rewrite_node(node, mapping))
            decision.merged = [_describe(f) for f in fill]
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
        out.append(CreateOp(op="create", node=node))
    # a created node may relate to a node proposed after it, which the arbiter then decided on
    for i, op in enumerate(out):
        if isinstance(op, CreateOp):
            later = {k: v for k, v in mapping.items() if decided_at.get(k, -1) > i}
            out[i] = CreateOp(op="create", node=_rewrite_node(op.node, later))
    return delta.model_copy(update={"ops": out}), decisions


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
            ops.append(SetOp(op="set", target=existing, field=fields.pointer("state", name), value=value))
    relations = current.get("relations", {})
    for rtype, targets in proposed.relations.items():
        for dst, attrs in targets.items():
            if dst != existing and dst not in relations.get(rtype, {}):
                ops.append(RelateOp(op="relate", source=existing, type=rtype, target=dst, attrs=attrs))
    return ops


def _describe(op: Op) -> str:
    if isinstance(op, SetOp):
        return op.field
    assert isinstance(op, RelateOp)
    return fields.pointer("relations", op.type, op.target)
