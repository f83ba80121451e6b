"""A chapter read sentence by sentence on a copy of the world, as the chapter changes it.

``narr audit`` and ``narr chapter`` read a draft the same way: one sentence at a
time (the diffusers' sentence splitter), each sentence proposed as an event would be
on an in-memory copy of the world (the world at HEAD with the user's hand edits, or
the world at a revision), and what the engine would accept laid over the copy, so
later sentences see what earlier ones did ("he picks up the ring" after "Lin Yuan
walks to the ferry" finds him at the ferry). Nothing is written.

What was laid by earlier sentences (and the hand edits before the chapter) stands as
committed for the sentences after it, as it will be once the chapter is recorded: an
``event`` node a sentence made ends with the next sentence that changes something,
exactly as it would between two events.

Each sentence is checked against the copy as the chapter has left it, two ways:

- the preconditions of the rules it fires (``require`` in the rule files), each one
  just before its rule's actions, as the rules diffuser checks them;
- the checks that need no rule (:mod:`narrative.engine.contradictions`): a dead
  character acting or speaking, an ended node used or present, a transfer between
  two characters in different places, a secret told by one who does not know it;
  and, as a note only, a secret learnt by one who knows it already.

Every contradiction is a *finding*: the sentence, the node, the field, the world's
value, and the fact behind it in words (who holds the item now and since which
event, where each party stands, which event ended the node), the same as data in
JSON (``holder``, ``since_event``, ``ended_by``, ``locations``, ``knowers``).

The cost of a sentence follows the sentence and the nodes it names, never the text
read before it: the names of the nodes the chapter changed are kept in an index that
each change updates, and the copy's answers about names are kept between sentences.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.delta.draft import Draft
from narrative.delta.request import EventRequest
from narrative.delta.screen import Reviewed, review
from narrative.diffusers import clauses, referents
from narrative.diffusers.context import find_mentions, is_cjk
from narrative.diffusers.rules import RulesDiffuser, Unmet
from narrative.engine import contradictions as cx
from narrative.engine.eventgraph import Story, end_reason
from narrative.engine.history_of import MentionWorld
from narrative.ids import normalize_name
from narrative.model import Change, CreateOp, Delta, Op, RelateOp, UnrelateOp
from narrative.nodefile import NodeDict, names_of
from narrative.store import HandEdit, HandEdits, WorldRepo, WorldView

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from narrative.delta.proposal import Diffuser
    from narrative.diffusers.rulefile import RuleSet
    from narrative.store import Tree

CHECKS = {
    "require": "a rule's precondition",
    "dead": "a dead character acts",
    "ended": "something that has ended is there",
    "apart": "a thing passes between people in different places",
    "untold": "a secret told by one who does not know it",
    "known": "a secret learnt by one who knows it",
}


@dataclass(frozen=True)
class Finding:
    """One action of the chapter that the world, at that point, contradicts (or, for a
    note, finds odd): the words, the node and field, the world's value and the fact behind it."""

    sentence: str
    number: int  # 1-based: which sentence of the chapter
    words: str  # the words that fired the rule or the check
    rule: str | None
    source: str | None
    requirement: str | None
    node: str
    field: str
    value: Any  # the world's value (fields.ABSENT: it has none)
    message: str
    check: str = "require"
    fact: str = ""
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sentence": self.sentence, "number": self.number, "words": self.words,
            "check": self.check, "rule": self.rule, "source": self.source,
            "requirement": self.requirement, "node": self.node, "field": self.field,
            "present": self.value is not fields.ABSENT,
            "value": None if self.value is fields.ABSENT else self.value,
            "message": self.message, "fact": self.fact,
        }
        out.update(self.data)
        return out



class ChapterView(WorldView):
    """The world copy a chapter is read on.

    The sentences read so far are its recent events (what "he" and a dropped subject
    are resolved against). What the hand edits and the sentences laid so far hold is the
    committed world for the next sentence: its path is where a committed file would be,
    and an ``event`` or ``scene`` node among them ends as a committed one does.
    """

    def __init__(self, wr: WorldRepo, tree: Tree | None,
                 edits: HandEdits | None = None) -> None:
        super().__init__(wr, tree, edits)
        self.read: list[str] = []
        self._reach: dict[str, int] = {}  # the committed world's, per first character
        self._laid_reach: dict[str, int] = {}  # the same for the nodes laid: only grows
        self._laid_names: dict[str, set[str]] = {}  # norm -> laid (or hand-edited) nodes
        self._names_of: dict[str, frozenset[str]] = {}
        self._committed_names: dict[str, set[str]] = {}  # norm -> committed nodes carrying it
        self._layer_names: dict[str, list[tuple[str, str]]] = {}
        for node_id, e in self.hand.edits.items():
            self._index(node_id, e.new)

    def recent_events(self, limit: int, *, changes: bool = True) -> list[dict[str, Any]]:
        return [{"id": None, "content": s, "timestamp": None, **({"diffusions": []} if changes else {})}
                for s in reversed(self.read[-limit:])] if limit > 0 else []

    def lay(self, node_id: str, node: NodeDict | None) -> None:
        super().lay(node_id, node)
        self._index(node_id, node)

    def _index(self, node_id: str, node: NodeDict | None) -> None:
        for norm in self._names_of.pop(node_id, frozenset()):
            ids = self._laid_names.get(norm)
            if ids is not None:
                ids.discard(node_id)
        norms = frozenset(names_of(node)) if node is not None else frozenset()
        self._names_of[node_id] = norms
        for norm in norms:
            self._laid_names.setdefault(norm, set()).add(node_id)
            first = norm[:1]
            self._laid_reach[first] = max(self._laid_reach.get(first, 0), len(norm))

    # --- what stands as committed for the next sentence -------------------------------

    @property
    def edits(self) -> Mapping[str, HandEdit]:
        """None: what the hand edits and the sentences before hold stands as committed (the
        chapter's own commit records the hand edits, each sentence's event its changes), so
        no sentence's event re-checks them, and none finds them "made by hand since"."""
        return {}

    def committed_path(self, node_id: str) -> str | None:
        edit = self.hand.edits.get(node_id)
        if edit is not None:
            return edit.new_path if edit.new is not None else None
        return super().committed_path(node_id)

    def transient(self, lifecycles: Collection[str] = ("scene", "event")) -> dict[str, str]:
        out = {i: lc for i, lc in super().transient(lifecycles).items()
               if i not in self.hand.edits}
        for node_id, e in self.hand.edits.items():
            lifecycle = (e.new or {}).get("lifecycle")
            if isinstance(lifecycle, str) and lifecycle in lifecycles:
                out[node_id] = lifecycle
        return out

    # --- names, kept between sentences ------------------------------------------------

    def name_reach(self, first: str) -> int:
        if first not in self._reach:
            self._reach[first] = self.catalog().longest_name_from(first)  # a bound: fine
        return max(self._reach[first], self._laid_reach.get(first, 0))

    def names_in_layer(self, layer: str) -> list[tuple[str, str]]:
        if layer not in self._layer_names:  # the committed world's, asked once
            self._layer_names[layer] = [(row[0], row[1]) for row in
                                        self.catalog().names_in_layer(layer)]
        edited = self.hand.edits
        out = [row for row in self._layer_names[layer] if row[1] not in edited]
        for node_id, e in edited.items():
            if e.new is not None and e.new.get("layer") == layer:
                out.extend((norm, node_id) for norm in sorted(self._names_of.get(node_id, ())))
        return out

    def ids_by_name(self, norms: Collection[str]) -> dict[str, set[str]]:
        hits: dict[str, set[str]] = {}
        if not norms:
            return hits
        edited = self.hand.edits
        missing = [n for n in norms if n not in self._committed_names]
        if missing:  # the committed world's answers, asked once a name
            for norm in missing:
                self._committed_names[norm] = set()
            for norm, node_id in self.catalog().ids_by_names(missing):
                self._committed_names[norm].add(node_id)
        for norm in norms:
            for node_id in self._committed_names[norm]:
                if node_id not in edited:
                    hits.setdefault(norm, set()).add(node_id)
        for norm in norms:
            ids = self._laid_names.get(norm)
            if ids:
                hits.setdefault(norm, set()).update(ids)
        return hits


@dataclass
class Step:
    """What one sentence of the chapter proposes, and what the world says against it."""

    number: int
    sentence: str
    proposal: Reviewed | None  # after review: arbitrated and screened, as an event takes it
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    named: bool = False  # it names a node of the world at all

    @property
    def ops(self) -> list[Op]:
        return list(self.proposal.delta.ops) if self.proposal is not None else []

    @property
    def close_scene(self) -> bool:
        return self.proposal is not None and self.proposal.delta.close_scene


class Reading:
    """A chapter being read on a copy of the world, one sentence after another.

    ``diffuser`` None reads as ``narr audit`` does: the world's rules, every operation
    in the order of the words and no rule held back by its guards (the chapter is
    followed as written, and a contradiction is reported, not avoided). With a diffuser,
    each sentence is proposed exactly as ``narr event`` would propose it.
    """

    def __init__(self, wr: WorldRepo, tip: str, tree: Tree | None,
                 edits: HandEdits | None, loaded: RuleSet,
                 diffuser: Diffuser | None = None) -> None:
        self.view = ChapterView(wr, tree, edits)
        self.lexicon = loaded.lexicon
        self.checks = Checks(wr, self.view, tip, loaded.lexicon)
        self.follow = diffuser is None
        self.rules = RulesDiffuser(wr.root, loaded) if loaded.rules else None
        if diffuser is not None and getattr(diffuser, "name", None) == "rules":
            diffuser = self.rules
        self.diffuser = diffuser

    def propose(self, number: int, sentence: str, *, given: Reviewed | None = None,
                checks: bool = True, brief: dict[str, Any] | None = None) -> Step:
        """Sentence ``number`` proposed on the world as the chapter has left it, and checked.

        ``given``: the proposal a kept review holds for it (nothing is asked of the
        diffuser); ``checks`` False leaves out the continuity checks (a recording, whose
        review made them); ``brief``: the pack a diffuser that works from one is given."""
        view, checks_of = self.view, self.checks
        checks_of.facts.sentences.append(sentence)
        name = "rules" if self.diffuser is None else self.diffuser.name
        request = EventRequest(content=sentence, diffuser=name, brief=brief)
        unmet: list[Unmet] = []
        reviewed: Reviewed | None = given
        seen: dict[str, Any] | None = None
        if given is None:
            proposal = None
            if self.diffuser is None or self.diffuser is self.rules:
                if self.rules is not None:
                    # in audit, every operation in the order of the words: a transfer is
                    # checked at each hand it passes
                    seen = {}
                    proposal, unmet = self.rules.propose_checked(
                        view, request, compact=not self.follow, guards=not self.follow, seen=seen)
            else:
                proposal = self.diffuser.propose(view, request)
            reviewed = review(view, proposal, request) if proposal is not None else None
        if not checks:
            return Step(number, sentence, reviewed, named=True)
        found = [checks_of.from_unmet(sentence, number, u) for u in unmet]
        ops = list(reviewed.delta.ops) if reviewed is not None else []
        more, notes, named = checks_of.check(sentence, number, ops, unmet, seen or None)
        said = {(f.node, f.field) for f in found}  # a rule said it already: one slip, once
        found += [f for f in more if f.check == "apart" or (f.node, f.field) not in said]
        return Step(number, sentence, reviewed, found, notes, named)

    def draft(self, ops: list[Op], close_scene: bool, event_id: str,
              proposed: int | None = None) -> Draft:
        """The event ``ops`` make on the world as the chapter has left it (not laid yet)."""
        draft = Draft(self.view, event_id)
        draft.apply(Delta(ops=ops), proposed=len(ops) if proposed is None else proposed)
        if not draft.problems:
            draft.finish(close_scene=close_scene)
        return draft

    def lay(self, number: int, nodes: dict[str, NodeDict | None],
            changes: list[Change] | None = None) -> None:
        """Lay sentence ``number``'s changes (``changes``: its draft's diffusions, when made
        already) over the copy."""
        self.checks.lay(number, nodes, changes)

    def done(self, sentence: str) -> None:
        """The sentence is read: the next one finds it among the recent events."""
        self.view.read.append(sentence)


class Checks:
    """The checks that need no rule, and the facts in words behind every finding."""

    def __init__(self, wr: WorldRepo, view: ChapterView, tip: str, lex: clauses.Lexicon) -> None:
        self.view = view
        self.lex = lex
        self.facts = _Facts(wr, view, tip)
        self.names = MentionWorld(view, tip)

    def lay(self, number: int, nodes: dict[str, NodeDict | None],
            changes: list[Change] | None = None) -> None:
        """Lay a sentence's changes over the world copy, remembering which sentence made each."""
        if changes is None:
            changes = [ch for node_id, node in nodes.items()
                       for ch in fields.node_changes(node_id, self.view.get(node_id), node)]
        for ch in changes:
            self.facts.changed[(ch.target, ch.field)] = number
        for node_id, node in nodes.items():
            old = self.view.get(node_id)
            if node is None and old is not None:
                self.facts.ended_here[node_id] = (number, copy.deepcopy(old))
                self.names.forget(node_id, names_of(old))
            self.view.lay(node_id, node)
        self.names.refresh()

    def _may_name_ended(self, sentence: str) -> bool:
        """Whether the sentence holds a name of a node that has ended (as text: the cheap test
        before its names are read against the ended ones)."""
        gone = self.names.gone
        if not gone:
            return False
        text = normalize_name(sentence)
        return any(norm in text for norm in gone)

    def from_unmet(self, sentence: str, number: int, u: Unmet) -> Finding:
        fact, data = self.facts.explain(u.node, u.field, u.value)
        return Finding(sentence, number, sentence[u.start:u.end], u.rule, u.source, u.requirement,
                       u.node, u.field, u.value, u.describe(), "require", fact, data)

    def check(self, sentence: str, number: int, ops: list[Op], unmet: list[Unmet],
              seen: dict[str, Any] | None = None) -> tuple[list[Finding], list[Finding], bool]:
        """The rule-free findings and notes of one sentence, against the world before it (its
        rules' ``unmet`` preconditions already found); and whether it names anything at all."""
        view, facts = self.view, self.facts
        if seen is not None:  # what the rules read of this very sentence on this very world
            named, analysis, refs = seen["named"], seen["analysis"], seen["refs"]
            nodes: dict[str, NodeDict | None] = {i: view.get(i) for m in named for i in m.ids}
        else:
            named = find_mentions(view, sentence)
            analysis = self.lex.analyse(sentence, [(m.start, m.end) for m in named])  # as the rules
            nodes = {i: view.get(i) for m in named for i in m.ids}
            refs = referents.resolve(sentence, named, nodes, self.lex, analysis, self._recent)
        for m in refs.mentions:
            for i in m.ids:
                if i not in nodes:
                    nodes[i] = view.get(i)
        found: list[Finding] = []
        notes: list[Finding] = []

        def add(to: list[Finding], words: str, check: str, node: str, ptr: str, value: Any,
                message: str, fact: str, data: dict[str, Any]) -> None:
            to.append(Finding(sentence, number, words, None, None, None, node, ptr, value,
                              message, check, fact, data))

        actors = cx.acts(sentence, analysis, refs.mentions, refs.zeros, nodes)
        done: set[str] = set()
        for act in actors:
            node = nodes.get(act.node)
            if act.node in done or not _dead(node):
                continue
            done.add(act.node)
            name = facts.name(act.node)
            fact, data = facts.explain(act.node, "/state/health", "dead")
            add(found, act.words(sentence), "dead", act.node, "/state/health", "dead",
                f"{name} is dead, but acts here ({act.words(sentence)!r})", fact, data)
        made = [op.node for op in ops if isinstance(op, CreateOp)]
        created = {n.id for n in made} | {norm for n in made for norm in names_of(n.model_dump())}
        ended = cx.ended_mentions(self.names, sentence, analysis, view.exists) \
            if self._may_name_ended(sentence) else []
        for em in ended:
            if em.node in done or em.node in created or normalize_name(em.mention.text) in created:
                continue  # said again, or made again by this very sentence (rain, a crowd)
            if facts.lifecycle(em.node) == "event":
                continue  # a sound, a flash: it lasts one event by nature, and comes again
            done.add(em.node)
            name = facts.name(em.node)
            fact, data = facts.ended(em.node)
            add(found, em.mention.text, "ended", em.node, "", fields.ABSENT,
                f"{name} ({em.node}) is used or present here ({em.mention.text!r}), but it has "
                "ended", fact, data)
        self._secrets(sentence, analysis, actors, named, nodes, add, found, notes)
        found += self._transfers(sentence, number, ops, unmet)
        return found, notes, bool(named)

    def _secrets(self, sentence: str, analysis: clauses.Analysis, actors: list[cx.Act],
                 named: list[Any], nodes: dict[str, NodeDict | None], add: Any,
                 found: list[Finding], notes: list[Finding]) -> None:
        facts = self.facts
        secrets = [m for m in named
                   if len(m.ids) == 1 and (nodes.get(m.ids[0]) or {}).get("kind") == "secret"]
        if not secrets:
            return
        for act in actors:
            kind = cx.verb_kind(sentence, act) or self._verb_in_clause(sentence, analysis, act)
            if kind is None:
                continue
            end = cx.clause_end(analysis, act.end)
            for m in secrets:
                if not (act.who.start <= m.start < end) or m.start < act.who.end:
                    continue
                secret = m.ids[0]
                who = nodes.get(act.node) or {}
                knows = secret in ((who.get("relations") or {}).get("knows") or {})
                ptr = fields.pointer("relations", "knows", secret)
                if kind == "tell" and not knows and not _public(nodes.get(secret)):
                    fact, data = facts.explain(act.node, ptr, fields.ABSENT)
                    add(found, sentence[act.who.start:m.end].strip(), "untold", act.node, ptr,
                        fields.ABSENT, f"{facts.name(act.node)} tells {facts.name(secret)}, but "
                        "does not know it", fact, data)
                elif kind == "learn" and knows:
                    fact, data = facts.explain(act.node, ptr, {})
                    add(notes, sentence[act.who.start:m.end].strip(), "known", act.node, ptr, {},
                        f"{facts.name(act.node)} learns {facts.name(secret)} again", fact, data)

    def _verb_in_clause(self, sentence: str, analysis: clauses.Analysis, act: cx.Act) -> str | None:
        """In Chinese the object may come first (莫长老把秘密告诉苏晴): the clause's verb."""
        if not is_cjk(sentence[act.start:act.start + 1]):
            return None
        clause = sentence[act.start:cx.clause_end(analysis, act.start)]
        if any(w in clause for w in cx.TELL_ZH):
            return "tell"
        if any(w in clause for w in cx.LEARN_ZH):
            return "learn"
        return None

    def _transfers(self, sentence: str, number: int, ops: list[Op],
                   unmet: list[Unmet]) -> list[Finding]:
        """Items the sentence moves from one character to another while the two stand in
        different places, each checked at the moment of its move (the operations in order).
        An item a rule already found held by someone else is that one slip, reported once."""
        if not any(isinstance(op, RelateOp) and op.type == "holds" for op in ops):
            return []
        paths = [fields.split(u.field) for u in unmet]
        reported = {p[2] for p in paths if len(p) == 3 and p[:2] == ["relations", "holds"]}
        facts = self.facts
        scratch = Draft(self.view, "audit")
        lost: dict[str, str] = {}  # item -> who last let go of it in this sentence
        out: list[Finding] = []
        for op in ops:
            if isinstance(op, UnrelateOp) and op.type == "holds":
                lost[op.target] = op.source
            elif isinstance(op, RelateOp) and op.type == "holds":
                giver = lost.pop(op.target, None)
                if op.target in reported:
                    giver = None
                before, receiver = scratch.current(giver or ""), scratch.current(op.source)
                a, b = cx.location(before), cx.location(receiver)
                if (giver is not None and giver != op.source and a is not None and b is not None
                        and a != b and {(before or {}).get("layer"),
                                        (receiver or {}).get("layer")} == {"character"}):
                    fact, data = facts.apart(op.target, giver, op.source, before, receiver)
                    out.append(Finding(
                        sentence, number, sentence, None, None, None, giver, "/state/location", a,
                        f"{facts.name(op.target)} passes from {facts.name(giver)} to "
                        f"{facts.name(op.source)}, but they stand in different places",
                        "apart", fact, data))
            scratch.apply_op(op, "audit")
        return out

    def _recent(self) -> list[list[tuple[str, NodeDict]]]:
        """The nodes each of the last sentences named, newest first (for "he" and dropped subjects)."""
        out = []
        for s in reversed(self.view.read[-3:]):
            named = []
            for m in find_mentions(self.view, s):
                node = self.view.get(m.ids[0]) if len(m.ids) == 1 else None
                if node is not None:
                    named.append((m.ids[0], node))
            out.append(named)
        return out


def _dead(node: NodeDict | None) -> bool:
    from narrative.engine.brief import is_dead

    return node is not None and node.get("layer") == "character" and is_dead(node)


def _public(node: NodeDict | None) -> bool:
    return bool(((node or {}).get("state") or {}).get("known_widely"))


class _Facts:
    """The world's facts behind a finding, in words and as data: since which event (or which
    sentence of the chapter) a field is what it is, who holds what, where each one stands."""

    def __init__(self, wr: WorldRepo, view: ChapterView, tip: str) -> None:
        self.wr = wr
        self.view = view
        self.tip = tip
        self.sentences: list[str] = []
        self.changed: dict[tuple[str, str], int] = {}  # (node, field) -> the sentence that changed it
        self.ended_here: dict[str, tuple[int, NodeDict]] = {}
        self.hand = set(view.hand.edits)  # hand edits not yet recorded, before the chapter
        self._story: Story | None = None

    # --- names --------------------------------------------------------------------------

    def name(self, node_id: str) -> str:
        node = self.view.get(node_id)
        if node is None and node_id in self.ended_here:
            node = self.ended_here[node_id][1]
        if node is None:
            gone = self._ending(node_id)
            node = gone[0] if gone is not None else None
        return str((node or {}).get("name") or node_id)

    def lifecycle(self, node_id: str) -> str:
        node = self.ended_here[node_id][1] if node_id in self.ended_here else None
        if node is None:
            gone = self._ending(node_id)
            node = gone[0] if gone is not None else None
        return str((node or {}).get("lifecycle") or "permanent")

    def _named(self, node_id: str) -> dict[str, str]:
        return {"id": node_id, "name": self.name(node_id)}

    # --- since when ---------------------------------------------------------------------

    def since(self, node_id: str, ptr: str) -> dict[str, Any] | None:
        """What made ``node_id``'s field what it is: a sentence of the chapter, an event,
        the world's beginning or a hand edit; None when nothing says."""
        tokens = fields.split(ptr)
        for k in range(len(tokens), -1, -1):
            number = self.changed.get((node_id, fields.pointer(*tokens[:k])))
            if number is not None:
                return {"kind": "sentence", "sentence": number, "text": self.sentences[number - 1]}
        if node_id in self.hand:
            edit = self.view.hand.edits.get(node_id)
            old = fields.value_in(edit.old, ptr) if edit is not None else fields.ABSENT
            new = fields.value_in(edit.new, ptr) if edit is not None else fields.ABSENT
            if not fields.same(old, new):
                return {"kind": "hand edit"}
        graph = self.wr.catalog.graph
        found = graph.last_writer(self.tip, node_id, ptr)
        if found is None:  # no change on the story line made it: it is as the world began
            return {"kind": "genesis"} if self.view.committed(node_id) is not None else None
        event = graph.event_info(found.commit)
        if event is None:
            return None
        if event.kind == "genesis":
            return {"kind": "genesis", "commit": found.commit}
        return {"kind": "hand edit recorded" if found.source == "edit" else "event", "id": event.id,
                "commit": found.commit, "content": event.content}

    @staticmethod
    def since_text(since: dict[str, Any] | None) -> str:
        if since is None:
            return ""
        kind = since["kind"]
        if kind == "sentence":
            return f"since sentence {since['sentence']} of this chapter ({since['text']!r})"
        if kind == "genesis":
            return "since the world began"
        if kind == "hand edit":
            return "by a hand edit not yet recorded"
        first = str(since["content"]).splitlines()[0] if since.get("content") else ""
        what = "a hand edit recorded by " if kind == "hand edit recorded" else ""
        return f"since {what}{first!r} (event {str(since['commit'])[:10]})"

    def _with_since(self, text: str, since: dict[str, Any] | None) -> str:
        tail = self.since_text(since)
        return f"{text}, {tail}" if tail else text

    # --- the facts ----------------------------------------------------------------------

    def holder(self, item: str) -> str | None:
        node = self.view.get(item)
        holder = ((node or {}).get("state") or {}).get("holder")
        if isinstance(holder, str) and self.view.exists(holder):
            return holder
        holders = sorted(src for src, t, _ in self.view.incoming({item}) if t == "holds")
        return holders[0] if holders else None

    def where(self, node_id: str, node: NodeDict | None = None) -> dict[str, Any] | None:
        place = cx.location(node if node is not None else self.view.get(node_id))
        if place is None:
            return None
        return {"place": place, "name": self.name(place),
                "since_event": self.since(node_id, "/state/location")}

    def explain(self, node_id: str, ptr: str, value: Any) -> tuple[str, dict[str, Any]]:
        """The fact behind a field's value, in words and as data."""
        who = self.name(node_id)
        tokens = fields.split(ptr)
        data: dict[str, Any] = {}
        if tokens[:2] == ["relations", "holds"] and len(tokens) == 3:
            item = tokens[2]
            holder = self.holder(item)
            if value is not fields.ABSENT:
                since = self.since(node_id, ptr)
                data.update(holder=self._named(node_id), since_event=since)
                return self._with_since(f"{who} holds {self.name(item)} already", since), data
            if holder is None:
                place = self.where(item)
                data.update(holder=None, since_event=None)
                text = f"nobody holds {self.name(item)}"
                if place is not None:
                    data["locations"] = {item: place}
                    text += f"; it lies at {place['name']}"
                return text, data
            since = self.since(holder, fields.pointer("relations", "holds", item))
            data.update(holder=self._named(holder), since_event=since)
            return self._with_since(f"{self.name(item)} is held by {self.name(holder)}", since), data
        if tokens[:2] == ["relations", "knows"] and len(tokens) == 3:
            secret = tokens[2]
            knowers = sorted(src for src, t, _ in self.view.incoming({secret}) if t == "knows")
            data["knowers"] = [self._named(k) for k in knowers]
            if value is not fields.ABSENT:
                since = self.since(node_id, ptr)
                data["since_event"] = since
                return self._with_since(f"{who} knows {self.name(secret)} already", since), data
            them = ", ".join(self.name(k) for k in knowers)
            return (f"{who} does not know {self.name(secret)}; "
                    + (f"those who know it: {them}" if them else "nobody knows it")), data
        since = self.since(node_id, ptr)
        data["since_event"] = since
        if ptr == "/state/health" and value == "dead":
            return self._with_since(f"{who} is dead", since), data
        if ptr == "/state/location" and isinstance(value, str):
            place = self.where(node_id)
            data["locations"] = {node_id: place} if place else {}
            return self._with_since(f"{who} is at {self.name(value)}", since), data
        shown = "absent" if value is fields.ABSENT else fields.show(value)
        return self._with_since(f"{who} {'.'.join(tokens)} is {shown}", since), data

    def apart(self, item: str, giver: str, receiver: str, a: NodeDict | None,
              b: NodeDict | None) -> tuple[str, dict[str, Any]]:
        there = {giver: self.where(giver, a), receiver: self.where(receiver, b)}
        parts = [self._with_since(f"{self.name(n)} is at {w['name']}", w["since_event"])
                 for n, w in there.items() if w is not None]
        holder = self.holder(item)
        data = {"locations": there, "holder": self._named(holder) if holder else None,
                "since_event": self.since(holder, fields.pointer("relations", "holds", item))
                if holder else None}
        return "; ".join(parts), data

    def _ending(self, node_id: str) -> tuple[NodeDict, dict[str, Any]] | None:
        """The node as it was when the story line ended it, and the event that did, or None."""
        if self._story is None:
            self._story = Story(self.wr, self.tip)
        story = self._story
        for w in reversed(story.writes(node_id)):
            if w.field != "":
                continue
            if w.new is not fields.ABSENT or not isinstance(w.old, dict):
                return None
            event = story.event(w.commit)
            return w.old, {"id": event.id, "commit": event.commit, "content": event.content,
                           "reason": end_reason(w, event)}  # type: ignore[return-value]
        return None

    def ended(self, node_id: str) -> tuple[str, dict[str, Any]]:
        """Which event (or sentence of the chapter) ended the node, in words and as data."""
        name = self.name(node_id)
        if node_id in self.ended_here:
            number = self.ended_here[node_id][0]
            by = {"kind": "sentence", "sentence": number, "text": self.sentences[number - 1]}
            return (f"{name} ended in sentence {number} of this chapter "
                    f"({self.sentences[number - 1]!r})"), {"ended_by": by}
        gone = self._ending(node_id)
        if gone is None:
            return f"{name} is not in the world", {"ended_by": None}
        by = {"kind": "event", **gone[1]}
        first = str(by["content"]).splitlines()[0] if by.get("content") else ""
        return (f"{name} ended in {first!r} (event {str(by['commit'])[:10]}, {by['reason']})",
                {"ended_by": by})
