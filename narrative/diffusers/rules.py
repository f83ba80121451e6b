"""``rules``: the built-in, offline diffuser. Declarative rules in the world turn words into changes.

The world's rules (``rules/*.toml``, format in :mod:`narrative.diffusers.rulefile`)
are matched against the event's text (patterns in :mod:`narrative.diffusers.patterns`)
using the world's own names and aliases, so "林远来到渡口" and "Lin Yuan walks to the
ferry" both name ``lin-yuan`` and ``ferry``. Each match of a rule (a *firing*)
binds variables to nodes and turns the rule's actions into delta operations.

Firings run in the order their words appear in the text, on a scratch copy of the
world, so a later firing sees what an earlier one did ("goes to the library and
drops the ring" leaves the ring in the library). Operations that would change
nothing (removing an edge or a field that is not there) are left out. Everything
else goes to the engine, which arbitrates new nodes and screens every operation,
as it does for any diffuser. Every firing, every firing stopped by an ``unless``
word or an ambiguous name, and "no rule matched" are reported as notes.

A rule's ``require`` and ``guard`` lists (its preconditions) are checked against
the scratch world just before the firing's actions, so "gives Su Qing the ring" is
checked against who holds the ring after the words before it. On an event, a
firing whose precondition the world contradicts is held back, not written: the
words may be right and the world wrong, but writing "the ring passes from Lin
Yuan" for "Old Zhou gives the ring" corrupts the story silently, while a held-back
change costs the writer one ``--accept N``. ``narr audit`` follows a chapter as
written instead: it applies the firing and reports the contradiction as an
:class:`Unmet`. A firing that would relate a node to itself ("she trusted only
herself") is never applied.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from narrative import fields
from narrative.delta.draft import Draft
from narrative.delta.proposal import HeldChange, Origin
from narrative.diffusers import budget, clauses, patterns, referents
from narrative.diffusers.base import Proposal, register
from narrative.diffusers.context import DisjointSpans, Mention, find_mentions
from narrative.diffusers.rulefile import (
    TEMPLATE_RE,
    CloseSceneAction,
    CreateAction,
    ExpireAction,
    LoadedRule,
    RelateAction,
    Requirement,
    RuleSet,
    SetAction,
    UnrelateAction,
    UnsetAction,
    VarSpec,
    rule_set,
)
from narrative.errors import DiffuserError, InvalidInputError
from narrative.ids import id_problem
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
    InvalidOpError,
    Node,
    Op,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.nodefile import NodeDict

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World
    from narrative.store import WorldRepo

ANY = VarSpec()


@dataclass(frozen=True)
class Firing:
    """One match of one rule."""

    order: int  # the rule's position among the world's rules
    rule: LoadedRule
    pattern: int
    match: patterns.Match

    def rank(self) -> tuple[int, int, int, int]:
        """Within a group: the longest match, then the one skipping fewest words, then file order."""
        return (-self.match.length, self.match.skipped, self.order, self.match.start)

    def overlaps(self, other: Firing) -> bool:
        return self.match.start < other.match.end and other.match.start < self.match.end


@dataclass(frozen=True)
class Unmet:
    """A precondition of a firing that the world, as the text had left it, contradicts."""

    rule: str
    source: str
    requirement: str
    start: int  # the firing's words in the text
    end: int
    node: str
    field: str  # a JSON pointer into the node
    value: Any  # what the world holds there (fields.ABSENT: nothing)
    wanted: str  # what the requirement asked, in words

    @property
    def present(self) -> bool:
        return self.value is not fields.ABSENT

    def describe(self) -> str:
        """``su-qing /relations/holds/black-ring is absent, but must be there``."""
        held = json.dumps(self.value, ensure_ascii=False) if self.present else "absent"
        return f"{self.node} {self.field} is {held}, but {self.wanted}"


class _Unbound(Exception):
    """An action needs a variable (or a field) this firing did not bind: skip the action."""


MAX_CONTENT = 256 * 1024  # bytes of event content the rules read unless asked for more (--large)


@dataclass(frozen=True)
class Held:
    """A change the rules found under a structure they do not know, so did not write."""

    n: int
    rule: str
    source: str
    words: str
    reason: str
    ops: list[Op]


class RulesDiffuser:
    name = "rules"

    def __init__(self, root: Path, rules: RuleSet | None = None) -> None:
        self.root = root
        self._rules = rules

    def propose(self, world: World, request: EventRequest) -> Proposal:
        return self.propose_checked(world, request)[0]

    def rule_set(self) -> RuleSet:
        """The world's rules as its files stand now (parsed once per content, per process), or
        the set this diffuser was made with (``narr audit`` reads one chapter with one set)."""
        return self._rules if self._rules is not None else rule_set(self.root)

    def propose_checked(self, world: World, request: EventRequest, *,
                        compact: bool = True, guards: bool = True,
                        seen: dict[str, Any] | None = None) -> tuple[Proposal, list[Unmet]]:
        """The proposal, and the preconditions of its firings that the world contradicts.

        ``seen``, when given, is filled with what was read of the text (``named``,
        ``analysis``, ``refs``), for a reader that checks the same sentence on the same world.
        With ``compact`` an operation a later one on the same field or edge undoes is left
        out (:func:`_compact`); without, every operation stands in the order of the words,
        as ``narr audit`` needs to follow an item from hand to hand within a sentence.
        Without ``guards`` a rule whose guard the world contradicts is applied, not held
        back: ``narr audit`` follows the chapter as written and reports the contradiction.
        """
        loaded = self.rule_set()
        rules = loaded.rules
        if not rules:
            return Proposal(notes=["no rules in this world (rules/*.toml)"]), []
        text = request.content
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_CONTENT and not getattr(request, "large", False):
            raise InvalidInputError(
                f"the event's content is {size // 1024} KB; the rules read at most "
                f"{MAX_CONTENT // 1024} KB at once",
                hint="split the text into several events, or pass --large to read it whole")
        lex = loaded.lexicon
        vocab = loaded.vocabulary
        with _within_budget(), budget.within(MATCH_BUDGET):
            try:
                named = find_mentions(world, text)
                analysis = lex.analyse(text, [(m.start, m.end) for m in named])
                nodes = {i: world.get(i) for m in named for i in m.ids}
                refs = referents.resolve(text, named, nodes, lex, analysis, lambda: _recent(world))
            except budget.OutOfTime:
                raise budget.OutOfTime(_cue_words(loaded.cue_sources, loaded.class_sources)) from None
            mentions = refs.mentions
            if seen is not None:
                seen.update(named=named, analysis=copy.copy(analysis), refs=refs)
            analysis.drop_before({m.start for m, why in refs.set_aside if "contrast" in why})
            for m in mentions:
                for i in m.ids:
                    if i not in nodes:
                        nodes[i] = world.get(i)
            try:
                # "made his way", "breathed her last": a possessive pronoun is a word of a phrase too
                pronouns = _owner_pronouns(refs, mentions)
                words_at = [m for m in mentions if (m.start, m.end) not in pronouns]
                scan = patterns.scan_text(text, mentions, analysis.units, vocab, analysis.figures,
                                          taken=words_at)
            except budget.OutOfTime:
                raise budget.OutOfTime(_rule_words(loaded.class_sources)) from None
            zeros = frozenset(refs.zeros)
            owners = frozenset(refs.possessive)
            firings = find_firings(rules, scan, nodes, lex.terminators, zeros, owners,
                                   frozenset(refs.dropped))
        builder = _Builder(world)
        notes: list[str] = list(refs.notes)
        unmet: list[Unmet] = []
        held: list[Held] = []
        accept = set(getattr(request, "accept", None) or ())
        applied = 0
        known: dict[int, clauses.Cue | None] = {}

        def cue_of(k: int) -> clauses.Cue | None:
            """What keeps firing ``k`` from being applied as said (read once, when asked)."""
            if k not in known:
                f = firings[k]
                known[k] = (analysis.blocking(list(f.match.words)) or _form_cue(f, analysis, mentions)
                            or _negated_object(f, analysis, mentions) or _attributive(f, analysis))
            return known[k]

        for at, firing in enumerate(firings):
            words = text[firing.match.start : firing.match.end]
            where = f"rule {firing.rule.rule.id} ({firing.rule.source})"
            if any((k in refs.zeros or k in refs.dropped)
                   and not referents.zero_fits(text, mentions[k], firing.match.words)
                   for k in firing.match.slots.values()):
                notes.append(f"{where} not applied to {words!r}: nobody named does it")
                continue
            if firing.match.blocked_by is not None:
                notes.append(f"{where} not applied: {firing.match.blocked_by!r} in {words!r}")
                continue
            cue = cue_of(at)
            unsure = cue is not None and cue.kind == "unsure"
            if cue is not None and not unsure:
                notes.append(f"{where} not applied to {words!r}: "
                             f"{_reason(cue, analysis, mentions, nodes)}")
                continue
            if cue is None and (itself := self._self_related(firing, mentions, nodes, builder)):
                notes.append(f"{where}: {words!r}: {itself}: that relation is left out")
            contradicted = None if cue is not None or not guards else self._guarded(
                firing, mentions, nodes, builder)
            replaced = None if cue is not None or contradicted else self._replaced_unread(
                at, firings, cue_of, text, mentions, zeros, nodes, builder, analysis)
            if unsure or contradicted or replaced:
                if cue is not None:
                    reason = f"under {cue.term!r}, which narr does not know as a verb of saying, " \
                             "believing or perceiving"
                elif replaced:
                    reason = replaced
                else:
                    reason = f"the world contradicts it: {contradicted}"
                n = len(held) + 1
                if n not in accept:
                    ops = builder.trial(partial(self._fire_all, firing, text, mentions, nodes,
                                                builder, [], []))
                    if ops:
                        held.append(Held(n, firing.rule.rule.id, firing.rule.source, words, reason, ops))
                        # which command applies it depends on whether the event is recorded:
                        # the engine gives it with the held change (``held[].command``)
                        notes.append(f"{where} held back {words!r}: {reason} "
                                     f"(held-back change {n})")
                    continue
                notes.append(f"{where}: held-back change {n} accepted")
                held.append(Held(n, firing.rule.rule.id, firing.rule.source, words, "accepted", []))
            applied += self._fire_all(firing, text, mentions, nodes, builder, notes, unmet)
        if not applied:
            verb = "applied to" if firings else "matched"
            kept = [h for h in held if h.ops]
            tail = f"; {len(kept)} change{'s' if len(kept) > 1 else ''} held back" if kept else ""
            notes.append(f"no rule {verb} {text!r}{tail}")
        ops = _compact(builder.ops) if compact else builder.ops
        proposal = Proposal(delta=Delta(ops=ops, close_scene=builder.close_scene),
                            notes=notes)
        proposal.origins = [Origin(op=op, rule=o[0], source=o[1], words=o[2]) for op in ops
                            if (o := builder.origins.get(id(op))) is not None]
        proposal.held = [HeldChange(n=h.n, rule=h.rule, source=h.source, words=h.words,
                                    reason=h.reason, ops=h.ops) for h in held if h.ops]
        return proposal, unmet

    def _replaced_unread(self, i: int, firings: list[Firing],
                         cue_of: Callable[[int], clauses.Cue | None],
                         text: str, mentions: list[Mention], zeros: frozenset[int],
                         nodes: dict[str, Any], builder: _Builder,
                         analysis: clauses.Analysis) -> str | None:
        """Why firing ``i``'s removal of a field is held back: later in its sentence a firing of
        its group sets that field again, under a cue that keeps it from being applied.

        "老铁离开酒馆，沿着那条没有路灯的大街一直走到了教堂": the leave takes his location
        away, the arrival would give it back, and a negation inside the arrival's words
        (没有路灯, "with no street lamps") keeps it out. Writing "nowhere" would then contradict the
        sentence, which says where he went; what it means is the writer's call.
        """
        firing = firings[i]
        group = firing.rule.rule.group
        if not group:
            return None
        _, end = analysis.sentence_of(firing.match.start)
        later = []
        for j in range(i + 1, len(firings)):  # the firings are in the order of the text
            if firings[j].match.start >= end:
                break
            if firings[j].rule.rule.group == group and (
                    firings[j].match.blocked_by is not None
                    or ((c := cue_of(j)) is not None and c.kind != "unsure")):
                later.append(j)
        if not later:
            return None
        removed = {(op.target, op.field) for op in builder.trial(
            partial(self._fire_all, firing, text, mentions, nodes, builder, [], []))
            if isinstance(op, UnsetOp)}
        if not removed:
            return None
        for j in later:
            other = firings[j]
            if any(k in zeros and not referents.zero_fits(text, mentions[k], other.match.words)
                   for k in other.match.slots.values()):
                continue  # nobody named does it
            set_again = {(op.target, op.field) for op in builder.trial(
                partial(self._fire_all, other, text, mentions, nodes, builder, [], []))
                if isinstance(op, SetOp)}
            if removed & set_again:
                words = text[other.match.start:other.match.end]
                cue = cue_of(j)
                why = (_reason(cue, analysis, mentions, nodes) if cue is not None
                       else f"{other.match.blocked_by!r} in it")
                return f"the sentence goes on to set it again in {words!r}, which is not applied ({why})"
        return None

    @staticmethod
    def _guarded(firing: Firing, mentions: list[Mention], nodes: dict[str, Any],
                 builder: _Builder) -> str | None:
        """The first precondition of the rule (its ``require`` and ``guard``) that the world
        contradicts, as the event found it and as the words before left it, described; a node
        the rule names that the event ended already contradicts it too (None: all met)."""
        checks = [*firing.rule.guards, *firing.rule.requires]
        for each, slots, problem in _bindings([firing], mentions, nodes):
            if problem:
                continue
            for name, node_id in slots.items():
                if nodes.get(node_id) is not None and builder.current(node_id) is None:
                    return f"{node_id} ended earlier in this event, so it cannot be {name} here"
            if not checks:
                continue
            env = _Env(each.rule, builder, slots)
            for req in checks:
                u = _check(req, env, each)
                if u is not None:
                    return f"{u.describe()} ({req.text}){_holder_of(u, builder)}"
        return None

    @staticmethod
    def _self_related(firing: Firing, mentions: list[Mention], nodes: dict[str, Any],
                      builder: _Builder) -> str | None:
        """The relation of a node to itself the firing would make ("Su Qing trusts Qing", or
        "Bo broke his own wrist" read as Bo wounding Bo), described; such a relation is never
        written, and the rest of the firing stands (None: there is none)."""
        relates = [a for a in firing.rule.rule.do if isinstance(a, RelateAction)]
        if not relates:
            return None
        for each, slots, problem in _bindings([firing], mentions, nodes):
            if problem:
                continue
            env = _Env(each.rule, builder, slots)
            for action in relates:
                src, rtype, dst = action.relate.split(":")
                a, b = env.values.get(src), env.values.get(dst)
                if a is not None and a == b:
                    return f"{a} {rtype} {a} would relate {a} to itself"  # "she trusted only herself"
        return None

    def _fire_all(self, firing: Firing, text: str, mentions: list[Mention], nodes: dict[str, Any],
                  builder: _Builder, notes: list[str], unmet: list[Unmet]) -> int:
        """Apply a firing (and one more for each name listed with its subject); how many applied."""
        applied = 0
        words = text[firing.match.start : firing.match.end]
        where = f"rule {firing.rule.rule.id} ({firing.rule.source})"
        for each, slots, problem in _bindings([firing, *_listed(firing, text, mentions, nodes)],
                                              mentions, nodes):
            if problem:
                notes.append(f"{where} not applied to {words!r}: {problem}")
                continue
            before = (builder.changes, builder.close_scene)
            env = _Env(each.rule, builder, slots)
            found = [u for req in each.rule.requires
                     if (u := _check(req, env, each)) is not None]
            unmet.extend(found)
            made = len(builder.ops)
            skipped = builder.fire(each.rule, env)
            for op in builder.ops[made:]:
                builder.origins.setdefault(id(op), (each.rule.rule.id, each.rule.source, words))
            applied += 1
            bound = ", ".join(f"{k}={v}" for k, v in env.values.items() if v is not None)
            text_of = f"{words!r}" + (f" ({bound})" if bound else "")
            if each is not firing:
                text_of += " (one of a list)"
            tail = "" if (builder.changes, builder.close_scene) != before else "; already so"
            notes.append(f"{where}: {text_of}{tail}")
            notes.extend(f"{where}: {s}" for s in skipped)
            notes.extend(f"{where}: the world contradicts {u.requirement!r}: {u.describe()}"
                         for u in found)
        return applied


_JOINERS = frozenset({"and", "&", "with", "or", "nor", "to", "from", "of", "the", "a", "an"})


def _form_cue(firing: Firing, analysis: clauses.Analysis, mentions: list[Mention]) -> clauses.Cue | None:
    """What the form of the rule's verb says: an infinitive, or a complement of an unknown verb.

    Only the verb right after the pattern's first slot is read ("{who} @go to {place}").
    """
    from narrative.diffusers.inflect import is_base_verb

    match = firing.match
    pattern = firing.rule.patterns[firing.pattern]
    first = pattern.parts[0].slot
    if first is None or len(pattern.parts) < 2 or not match.words:
        return None
    k = next((i for i, (a, b) in enumerate(match.words)
              if analysis.text[a:b].split()[0].lower() not in _JOINERS), None)
    if k is None:  # the verb: the first word that is no joiner
        return None
    start, end = match.words[k]
    token = re.match(r"[A-Za-z'’-]+", analysis.text[start:end])
    if token is None:
        return None
    if not (match.bases[k] if k < len(match.bases) else False) and not is_base_verb(token.group(0)):
        return None
    m = mentions[match.slots[first]]
    subject = (m.start, m.end) if m.start < m.end <= start else None
    return analysis.base_verb((start, end), subject)


_DETERMINER = re.compile(r"(?<![\w'’])(?:the|a|an|his|her|their|its|my|our|your|this|that|these|"
                         r"those)\s+$", re.IGNORECASE)


def _attributive(firing: Firing, analysis: clauses.Analysis) -> clauses.Cue | None:
    """A participle after a determiner is a state, not the act: "dragged the wounded Censor
    Shen" wounds nobody, and "the murdered man" names no killing."""
    text = analysis.text
    for start, end in firing.match.words:
        word = re.match(r"[A-Za-z]+", text[start:end])
        if word is None or not word.group(0).lower().endswith(("ed", "en", "wn", "nt")):
            continue
        if _DETERMINER.search(text, max(0, start - 12), start):
            return clauses.Cue("attributive", word.group(0), start, start + word.end(), start, end)
    return None


def _negated_object(firing: Firing, analysis: clauses.Analysis,
                    mentions: list[Mention]) -> clauses.Cue | None:
    """A negation between the rule's verb and the slot after it: what the verb takes is nothing
    ("learned nothing about the Will", "went to neither the Tower nor the Docks")."""
    words = firing.match.words
    if not words:
        return None
    for k in firing.match.slots.values():
        m = mentions[k]
        before = [e for _, e in words if e <= m.start]
        if not before or m.start == m.end:
            continue
        cue = analysis.negation_between(max(before), m.start)
        if cue is not None:
            return cue
    return None


def _holder_of(u: Unmet, builder: _Builder) -> str:
    """Who the world says holds the item one who does not hold it would give ("; black-ring is
    lin-yuan's"): the fact a writer needs to see why the give cannot be read as said."""
    parts = fields.split(u.field)
    if u.present or len(parts) != 3 or parts[:2] != ["relations", "holds"]:
        return ""
    item = builder.current(parts[2])
    state = (item or {}).get("state")
    holder = state.get("holder") if isinstance(state, dict) else None
    if not isinstance(holder, str) or not holder or holder == u.node:
        return ""
    return f"; {parts[2]} is {holder}'s"


def _check(req: Requirement, env: _Env, firing: Firing) -> Unmet | None:
    """The requirement, when the scratch world contradicts it (None: met, or nothing to check)."""
    try:
        node_id = env.id(req.var)
        path = [env.id(s[1:-1]) if s.startswith("{") else s for s in req.path]
        want = env.id(req.value_var) if req.value_var else req.value
    except _Unbound:
        return None  # "who2" in a sentence about one person: nothing to check
    node = env.builder.current(node_id)
    if node is None:
        return None
    ptr = fields.pointer(*path)
    value = fields.get(node, ptr)
    if req.op is None:
        there = value is not fields.ABSENT and value is not None and value is not False
        if there != req.negated:
            return None
        wanted = "must not be there" if req.negated else "must be there"
    elif value is fields.ABSENT or fields.same(value, want) == (req.op == "=="):
        return None
    else:
        shown = json.dumps(want, ensure_ascii=False)
        wanted = f"must be {shown}" if req.op == "==" else f"must not be {shown}"
    rule = firing.rule
    return Unmet(rule.rule.id, rule.source, req.text, firing.match.start, firing.match.end,
                 node_id, ptr, copy.deepcopy(value), wanted)


RECENT_FOR_REFERENTS = 3  # events looked back at for a "he" or a dropped subject naming no one


def _recent(world: World) -> list[list[tuple[str, NodeDict]]]:
    """The nodes each of the last few events named, newest first, in the order it named them."""
    out: list[list[tuple[str, NodeDict]]] = []
    for event in world.recent_events(RECENT_FOR_REFERENTS, changes=False):
        content = event.get("content")
        if not isinstance(content, str):
            continue
        named: list[tuple[str, NodeDict]] = []
        for m in find_mentions(world, content):
            if len(m.ids) == 1:
                node = world.get(m.ids[0])
                if node is not None:
                    named.append((m.ids[0], node))
        out.append(named)
    return out


def _reason(cue: clauses.Cue, analysis: clauses.Analysis, mentions: list[Mention],
            nodes: dict[str, Any]) -> str:
    """Why a clause asserts nothing: "question ('?')", "reported by Old Zhou ('claims')"."""
    if cue.kind == "reported":
        s0, s1 = analysis.sentence_of(cue.start)
        near = [mentions[k] for k in _near(mentions, s0, s1)]
        near = [m for m in near if m.start < m.end and len(m.ids) == 1
                and (nodes.get(m.ids[0]) or {}).get("layer") == "character"
                and not cue.scope_start <= m.start < cue.scope_end]
        before = [m for m in near if m.end <= cue.start]
        who = before[-1] if before else (near[0] if near else None)
        if who is not None:
            name = (nodes.get(who.ids[0]) or {}).get("name") or who.text
            return f"reported by {name} ({cue.term!r})"
    return f"{cue.reason} ({cue.term!r})"


MATCH_BUDGET = 10.0  # seconds for all rules against one text; ~1.7 s for 100 KB of prose


@contextlib.contextmanager
def _within_budget() -> Iterator[None]:
    """Turn the match budget running out into one clear error naming what was matching.

    A rule is the world's code in all but name: words with gaps between them can
    be written to match in exponential time ("(a|a a) (a|a a) ... b"), and a world
    can write thousands of cue terms and class entries for the scan to try, and
    cloning someone's story must not hang narr. Every expression made of a world's
    words matches within :func:`budget.within`, and the scans over its words check
    the same deadline, on any thread.
    """
    try:
        yield
    except budget.OutOfTime as exc:
        where = str(exc) or "the rules"
        if where.startswith("the cue words"):
            hint = ("simplify the [cues] terms (fewer of them sharing a first word), or split a "
                    "very long text into several events")
        elif where.startswith("the words of"):
            hint = ("write fewer [classes] entries sharing a first word, or split a very long "
                    "text into several events")
        else:
            hint = ("simplify the rule's pattern (fewer parts, fewer alternatives between gaps), "
                    "or split a very long text into several events")
        raise DiffuserError(f"{where} took more than {MATCH_BUDGET:g}s to match this event's text",
                            hint=hint) from None


def _cue_words(cue_sources: tuple[str, ...], class_sources: tuple[str, ...]) -> str:
    """What was matching when the cue analysis ran out of time: the files that add cue words
    (their [cues], and their [classes], whose phrases may be cues too)."""
    sources = tuple(dict.fromkeys((*cue_sources, *class_sources)))
    if sources:
        return f"the cue words of {', '.join(sources)}"
    return "the cue words"


def _rule_words(class_sources: tuple[str, ...]) -> str:
    """What was matching when the scan for the rules' words ran out of time."""
    if class_sources:
        return f"the words of the rules and the classes of {', '.join(class_sources)}"
    return "the words of the rules"


def find_firings(rules: list[LoadedRule], scan: patterns.Scan, nodes: dict[str, Any],
                 terminators: Any = None, zeros: frozenset[int] = frozenset(),
                 owners: frozenset[int] = frozenset(),
                 dropped: frozenset[int] = frozenset()) -> list[Firing]:
    """The firings of every rule in the scanned text, in the order of the text.

    A dropped subject (one of ``zeros``) may only fill a pattern's first slot: it
    is a subject, never the second of "{who} and {who2}" nor an object. A possessor
    (one of ``owners``: "Lin Yuan's", "林远的") fills only a slot that the pattern
    continues with the possessive itself ("{who}的伤"). An object the words leave out
    (one of ``dropped``) fills only a ``{~slot}``, and only where the pattern's next word
    follows it at once; a ``{~slot}`` takes nothing else.
    """
    out: list[Firing] = []
    by_group: dict[str, list[Firing]] = {}
    known: dict[str, set[int]] = {}  # the same kind of variable recurs in many patterns
    text = scan.text
    mentions = list(scan.mentions)
    present = set(scan.units_with)  # the atoms of the rules' words found in the text
    words = _pattern_words(rules, scan.vocab)

    def candidates(spec: VarSpec) -> set[int]:
        key = _spec_key(spec)
        if key not in known:
            known[key] = _candidates(spec, mentions, nodes)  # type: ignore[arg-type]
        return known[key]

    for order, rule in enumerate(rules):
        found: list[Firing] = []
        try:
            for pi, pattern in enumerate(rule.patterns):
                if _absent(words[order][pi], present):
                    continue  # a word of the pattern is nowhere in the text
                first = pattern.parts[0].slot
                verb = _word_after(scan, pattern, 0)
                unfit = {k for k in zeros if not verb or scan.occurrence_between(
                    mentions[k].end, referents.after_fillers(text, mentions[k].end), verb) is None}
                allowed = {s: candidates(rule.vars.get(s, ANY)) - (unfit if s == first else zeros)
                           - (frozenset() if _owned(pattern, s) else owners) - dropped
                           for s in pattern.slots}
                for i, part in enumerate(pattern.parts):
                    if part.slot is not None and part.dropped:
                        after = _word_after(scan, pattern, i)
                        allowed[part.slot] = {k for k in dropped & candidates(
                            rule.vars.get(part.slot, ANY)) if after and scan.occurrence_between(
                            mentions[k].end, referents.after_fillers(text, mentions[k].end), after)}
                for m in patterns.find(pattern, scan, None, allowed, rule.unless, terminators):
                    if not _verb_has_own_subject(text, m, mentions, zeros):  # type: ignore[arg-type]
                        found.append(Firing(order, rule, pi, m))
        except budget.OutOfTime:
            raise budget.OutOfTime(f"rule {rule.rule.id} ({rule.source})") from None
        kept = _disjoint(sorted(found, key=lambda f: (f.pattern, f.match.start)))
        if rule.rule.group:
            by_group.setdefault(rule.rule.group, []).extend(kept)
        else:
            out.extend(kept)
    for firings in by_group.values():
        out.extend(_disjoint(sorted(firings, key=Firing.rank)))
    return sorted(out, key=lambda f: (f.match.start, f.order))


def _owner_pronouns(refs: referents.Referents, mentions: list[Mention]) -> set[tuple[int, int]]:
    """The spans of the possessive pronouns bound ("his", "her" before a noun)."""
    return {(mentions[k].start, mentions[k].end) for k in refs.possessive
            if mentions[k].text.lower() in ("his", "her", "their")}


def _word_after(scan: patterns.Scan, pattern: patterns.Pattern, i: int) -> frozenset[int]:
    """The atoms of the first part of ``pattern`` after part ``i`` that is words, not a slot."""
    for j in range(i + 1, len(pattern.parts)):
        if pattern.parts[j].slot is None:
            return scan.vocab.atoms_of(pattern, j)
    return frozenset()


POSSESSED = frozenset({"body", "hand"})
"""Classes of what someone has: a slot right before one of them names its owner ("his ribs",
"Xiaochan's palm", 高德顺的左肩)."""


_SPEC_KEYS: dict[int, tuple[VarSpec, str]] = {}


def _spec_key(spec: VarSpec) -> str:
    """A variable's spec as text, made once per spec (its JSON was a tenth of a sentence's
    matching, made for every slot of every pattern of every rule)."""
    found = _SPEC_KEYS.get(id(spec))
    if found is None or found[0] is not spec:
        found = (spec, spec.model_dump_json())
        _SPEC_KEYS[id(spec)] = found
    return found[1]


def _pattern_words(rules: list[LoadedRule], vocab: Any) -> list[list[list[frozenset[int]]]]:
    """For each rule and each of its patterns, the atoms of each word part (any one of which
    spells it), made once per set of rules: the cheap test of whether a pattern can match a
    text before its slots' candidates are worked out."""
    key = (id(rules), id(vocab))
    found = _WORDS.get(key)
    if found is None or found[0] is not rules or found[1] is not vocab:
        words = [[[vocab.atoms_of(pattern, i) for i, part in enumerate(pattern.parts)
                   if part.slot is None] for pattern in rule.patterns] for rule in rules]
        found = (rules, vocab, words)
        _WORDS.clear()  # one set of rules in use at a time
        _WORDS[key] = found
    return found[2]


_WORDS: dict[tuple[int, int], tuple[list[LoadedRule], Any, list[list[list[frozenset[int]]]]]] = {}


def _absent(needed: list[frozenset[int]], present: set[int]) -> bool:
    """Whether one of the word parts ``needed`` has none of its atoms ``present`` (a plain loop:
    it runs for every pattern of every rule of every sentence, where a generator costs more)."""
    for atoms in needed:  # noqa: SIM110
        if present.isdisjoint(atoms):
            return True
    return False


def _owned(pattern: patterns.Pattern, slot: str) -> bool:
    """Whether the pattern goes on with a possessive after ``slot`` ("{who}的伤", "{who}'s") or
    with a thing someone has ("{who} @body": "broke his wrist")."""
    parts = pattern.parts
    for i, p in enumerate(parts[:-1]):
        if p.slot == slot:
            nxt = parts[i + 1]
            if nxt.classes and set(nxt.classes) <= POSSESSED:
                return True
            return bool(nxt.words) and all(w.startswith(("的", "'s", "’s")) for w in nxt.words)
    return False


def _verb_has_own_subject(text: str, match: patterns.Match, mentions: list[Mention],
                          zeros: frozenset[int]) -> bool:
    """Whether a dropped subject stands right before the match's first word, so the names
    before it are not that word's subject: "greets Old Zhou and Elder Mo, then walks ..."."""
    for z in _near(mentions, match.start + 1, match.end):
        if z not in zeros:
            continue
        pos = mentions[z].start
        after = [s for s, _ in match.words if s >= pos]
        if (match.start < pos and after and z not in match.slots.values()
                and referents.after_fillers(text, mentions[z].end) >= min(after)):
            return True
    return False


def _disjoint(firings: list[Firing]) -> list[Firing]:
    """The firings, in order, that overlap none kept before them."""
    taken = DisjointSpans()
    kept = []
    for f in firings:
        if taken.overlaps(f.match.start, f.match.end):
            continue
        taken.add(f.match.start, f.match.end)
        kept.append(f)
    return kept


_STARTS: dict[int, tuple[list[Mention], list[int]]] = {}


def _near(mentions: list[Mention], start: int, end: int) -> range:
    """The indexes of the mentions (sorted by start) that start in ``[start, end)``."""
    cached = _STARTS.get(id(mentions))
    if cached is None or cached[0] is not mentions:
        _STARTS.clear()
        cached = (mentions, [m.start for m in mentions])
        _STARTS[id(mentions)] = cached
    starts = cached[1]
    return range(bisect.bisect_left(starts, start), bisect.bisect_left(starts, end))


def _candidates(spec: VarSpec, mentions: list[Mention], nodes: dict[str, Any]) -> set[int]:
    return {k for k, m in enumerate(mentions)
            if any(nodes.get(i) is not None and spec.accepts(nodes[i]) for i in m.ids)}


# What joins the names of a list: "A, B and C", "A, B, and C", "林远、苏晴和老周", "林远、苏晴、老周"
_JOIN_COMMA = re.compile(r"\s*,\s*")
_JOIN_AND = re.compile(r"\s*(?:,\s*)?(?:and|&)\s+|\s*&\s*", re.IGNORECASE)
_JOIN_ZH = re.compile(r"\s*(?:、|和|与|跟|同|及|以及)\s*")


def coordinated(text: str, mentions: list[Mention], k: int, fits: set[int]) -> list[int]:
    """The mentions listed together with mention ``k``, in order (``[k]`` when it stands alone).

    Only mentions in ``fits`` (those the slot accepts) count as members. An English
    list ends with "and" ("Lin Yuan, Su Qing and Old Zhou"); names joined by commas
    alone are not one ("Su Qing, Lin Yuan walks ..." speaks to her). In Chinese,
    "、" and "和/与/跟/同/及" join a list.
    """
    order = sorted((i for i in fits if mentions[i].start < mentions[i].end),
                   key=lambda i: mentions[i].start)
    if k not in order:
        return [k]
    pos = order.index(k)

    def join(a: int, b: int) -> str | None:
        gap = text[mentions[a].end:mentions[b].start]
        if _JOIN_ZH.fullmatch(gap):
            return "zh"
        if _JOIN_AND.fullmatch(gap):
            return "and"
        if _JOIN_COMMA.fullmatch(gap):
            return ","
        return None

    lo = hi = pos
    while lo > 0 and join(order[lo - 1], order[lo]) is not None:
        lo -= 1
    while hi + 1 < len(order) and join(order[hi], order[hi + 1]) is not None:
        hi += 1
    members = order[lo:hi + 1]
    joins = [join(a, b) for a, b in itertools.pairwise(members)]
    if "zh" not in joins:
        # English: commas, then one "and" that closes the list; cut at the first "and"
        ands = [n for n, j in enumerate(joins) if j == "and"]
        if not ands:
            return [k]
        members = members[:ands[0] + 2]
    return members if k in members else [k]


def _listed(firing: Firing, text: str, mentions: list[Mention], nodes: dict[str, Any]) -> list[Firing]:
    """One more firing for each other name listed with the subject of a per-subject rule.

    "Lin Yuan, Su Qing and Old Zhou go to the ferry": the tightest match binds
    "Su Qing and Old Zhou"; Lin Yuan, listed with them, goes too.
    """
    pattern = firing.rule.patterns[firing.pattern]
    first = pattern.parts[0].slot
    last = pattern.parts[-1].slot
    if first is not None and first in firing.rule.each:
        return _listed_at(firing, first, text, mentions, nodes)
    if last is not None and last in firing.rule.each_object:
        return _listed_at(firing, last, text, mentions, nodes)
    return []


def _listed_at(firing: Firing, first: str, text: str, mentions: list[Mention],
               nodes: dict[str, Any]) -> list[Firing]:
    """One more firing for each other name listed with the one in the slot ``first``."""
    k = firing.match.slots[first]
    spec = firing.rule.vars.get(first, ANY)
    near = _near(mentions, firing.match.start - 400, firing.match.end + 400)
    fits = {i for i in near if any(nodes.get(x) is not None and spec.accepts(nodes[x])
                                   for x in mentions[i].ids)}
    members = coordinated(text, mentions, k, fits)
    if len(members) < 2:
        return []
    bound = set(firing.match.slots.values())
    rest = {name: m for name, m in firing.match.slots.items() if m not in members}
    bound_ids = {i for m in bound for i in mentions[m].ids}
    out = []
    for m in members:
        if m in bound or set(mentions[m].ids) <= bound_ids:
            continue
        match = dataclasses.replace(firing.match, slots={first: m, **rest})
        out.append(dataclasses.replace(firing, match=match))
    return out


def _bindings(firings: list[Firing], mentions: list[Mention], nodes: dict[str, Any]
              ) -> list[tuple[Firing, dict[str, str], str | None]]:
    """Each firing with its slots bound; a dropped subject standing for two people ("林远和苏晴
    吵了一架，回到了藏经阁") fills a per-subject slot once for each of them."""
    out: list[tuple[Firing, dict[str, str], str | None]] = []
    for f in firings:
        group = [(name, k) for name, k in f.match.slots.items()
                 if mentions[k].start == mentions[k].end and len(mentions[k].ids) > 1]
        if group and group[0][0] in f.rule.each:
            name, k = group[0]
            rest = {n: m for n, m in f.match.slots.items() if n != name}
            base, problem = _bind_slots(dataclasses.replace(f, match=dataclasses.replace(
                f.match, slots=rest)), mentions, nodes)
            for node_id in mentions[k].ids:
                out.append((f, {**base, name: node_id}, problem))
            continue
        slots, problem = _bind_slots(f, mentions, nodes)
        out.append((f, slots, problem))
    return out


def _bind_slots(firing: Firing, mentions: list[Mention],
                nodes: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    slots: dict[str, str] = {}
    for name, k in firing.match.slots.items():
        spec = firing.rule.vars.get(name, ANY)
        ids = [i for i in mentions[k].ids if nodes.get(i) is not None and spec.accepts(nodes[i])]
        if len(ids) > 1:
            return {}, f"{mentions[k].text!r} could be {' or '.join(ids)}"
        slots[name] = ids[0]
    return slots, None


def _key(op: Op) -> tuple[str, ...] | None:
    """What an operation writes: a node's field or an edge (None: a whole node)."""
    if isinstance(op, SetOp | UnsetOp):
        return ("field", op.target, op.field)
    if isinstance(op, RelateOp | UnrelateOp):
        return ("edge", op.source, op.type, op.target)
    return None


def _compact(ops: list[Op]) -> list[Op]:
    """The operations without those a later one on the same field or edge undoes.

    A long text moves a character a hundred times; the world ends where the last
    move leaves it, so only that one is proposed. An operation on a field stays when
    another one on a field inside it or around it (``/state`` and ``/state/mood``)
    comes between, so the order of nested writes is kept.
    """
    last: dict[tuple[str, ...], int] = {}
    for i, op in enumerate(ops):
        key = _key(op)
        if key is not None:
            last[key] = i
    if len(last) == sum(1 for op in ops if _key(op) is not None):
        return ops
    fields_of: dict[str, set[str]] = {}
    for op in ops:
        if isinstance(op, SetOp | UnsetOp):
            fields_of.setdefault(op.target, set()).add(op.field)
    nested = {t for t, fs in fields_of.items()
              if any(a != b and b.startswith(a + "/") for a in fs for b in fs)}
    structural = [i for i, op in enumerate(ops) if isinstance(op, ExpireOp | CreateOp)]
    out: list[Op] = []
    for i, op in enumerate(ops):
        key = _key(op)
        if key is None or last[key] == i:
            out.append(op)
            continue
        j = last[key]
        k = bisect.bisect_right(structural, i)
        if (k < len(structural) and structural[k] < j) or (
                isinstance(op, SetOp | UnsetOp) and op.target in nested and _nested_between(ops, i, j)):
            out.append(op)  # a node created or ended between them, or a nested write: keep the order
    return out


def _nested_between(ops: list[Op], i: int, j: int) -> bool:
    """Whether a write inside or around the field of ``ops[i]`` comes before ``ops[j]``."""
    op = ops[i]
    if not isinstance(op, SetOp | UnsetOp):
        return False
    for other in ops[i + 1:j]:
        if isinstance(other, SetOp | UnsetOp) and other.target == op.target and other.field != op.field \
                and (other.field.startswith(op.field + "/") or op.field.startswith(other.field + "/")):
            return True
    return False


def _touches(op: Op) -> tuple[str, ...]:
    """The nodes an operation is about (see :func:`_about`)."""
    if isinstance(op, SetOp | UnsetOp | ExpireOp):
        return (op.target,)
    if isinstance(op, RelateOp):
        return (op.source, op.target)
    if isinstance(op, UnrelateOp):
        return (op.source,)
    return ()


def _about(op: Op, node_id: str) -> bool:
    """Whether ``op`` changes node ``node_id`` itself (its fields, or its own edges)."""
    if isinstance(op, SetOp | UnsetOp | ExpireOp):
        return op.target == node_id
    if isinstance(op, RelateOp | UnrelateOp):
        return op.source == node_id or (isinstance(op, RelateOp) and op.target == node_id)
    return False


class _Builder:
    """The operations of all firings, tried on a scratch copy of the world as they are made."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.draft = Draft(world, "rules")
        self.ops: list[Op] = []
        self.close_scene = False
        self.changes = 0  # operations that changed the scratch world ("already so" when none did)
        self._touched: dict[str, int] = {}  # node -> how many of the operations are about it
        self.origins: dict[int, tuple[str, str, str]] = {}  # id(op) -> (rule, source, words)

    def current(self, node_id: str) -> NodeDict | None:
        return self.draft.current(node_id)

    def _mark(self, op: Op) -> Any:
        """What ``op`` may change, as it is now (cheap: the one field or edge, not the node)."""
        if isinstance(op, SetOp):
            node = self.current(op.target)
            return None if node is None else copy.deepcopy(fields.get(node, op.field))
        if isinstance(op, RelateOp):
            node = self.current(op.source) or {}
            return copy.deepcopy(((node.get("relations") or {}).get(op.type) or {}).get(op.target,
                                                                                       fields.ABSENT))
        return None

    def add(self, op: Op) -> None:
        if isinstance(op, ExpireOp) and self._touched.get(op.target):
            # "took the telegram ... and burned it": the item ends; what the words did to it
            # before no longer matters (its holder's edge goes with it)
            kept = [o for o in self.ops if not _about(o, op.target)]
            self.draft = Draft(self.world, "rules")
            self.ops = []
            self._touched = {}
            for o in kept:
                self.draft.apply_op(o, "rules")
                self._append(o)
        warnings = len(self.draft.warnings)
        marked = isinstance(op, SetOp | RelateOp)
        before = self._mark(op) if marked else None
        self.draft.apply_op(op, "rules")
        if isinstance(op, UnsetOp | UnrelateOp) and len(self.draft.warnings) > warnings:
            del self.draft.warnings[warnings:]  # nothing to remove: leave the operation out
            return
        if not marked or self._mark(op) != before:
            self.changes += 1
        self._append(op)

    def _append(self, op: Op) -> None:
        self.ops.append(op)
        for node_id in _touches(op):
            self._touched[node_id] = self._touched.get(node_id, 0) + 1

    def trial(self, work: Callable[[], object]) -> list[Op]:
        """The operations ``work`` would add, undone again (what a held-back change would do);
        none when they would change nothing."""
        cp = self.draft.checkpoint()
        draft, ops, touched = self.draft, list(self.ops), dict(self._touched)
        changes, close, origins = self.changes, self.close_scene, dict(self.origins)
        work()
        made = self.ops[len(ops):] if self.changes > changes else []
        self.ops, self._touched, self.origins = ops, touched, origins
        self.changes, self.close_scene = changes, close
        self.draft = draft
        self.draft.rollback(cp)
        return made

    def fire(self, rule: LoadedRule, env: _Env) -> list[str]:
        """Add the operations of one firing; returns notes on actions that could not be made."""
        skipped: list[str] = []
        kept = self._relates(rule, env)
        for action in rule.rule.do:
            try:
                for op in self._ops(action, env):
                    if isinstance(op, RelateOp | UnrelateOp) and op.source == op.target:
                        continue  # a node is never related to itself: the rest of the firing stands
                    if (isinstance(action, UnrelateAction) and isinstance(op, UnrelateOp)
                            and "*" in action.unrelate and (op.source, op.type, op.target) in kept):
                        continue  # "move the edge here" when it is here already: keep its attrs
                    self.add(op)
            except _Unbound as exc:
                missing = str(exc)
                if missing in {slot for p in rule.patterns for slot in p.slots}:
                    continue  # a slot this pattern does not have ("who2"): the action is optional
                skipped.append(f"cannot {_verb(action)}: {missing} has no value here")
            except (ValidationError, InvalidOpError) as exc:
                problem = exc.validation if isinstance(exc, InvalidOpError) else exc
                first = problem.errors(include_url=False)[0]
                loc = "/".join(str(p) for p in first["loc"])
                skipped.append(f"cannot {_verb(action)}: {loc}: {first['msg']}")
        return skipped

    @staticmethod
    def _relates(rule: LoadedRule, env: _Env) -> set[tuple[str, str, str]]:
        """The edges a firing relates, which its ``*`` unrelates must leave alone."""
        out = set()
        for action in rule.rule.do:
            if isinstance(action, RelateAction):
                src, rtype, dst = action.relate.split(":")
                try:
                    out.add((env.id(src), rtype, env.id(dst)))
                except _Unbound:
                    continue
        return out

    def _ops(self, action: Any, env: _Env) -> list[Op]:
        if isinstance(action, SetAction | UnsetAction):
            path = action.set if isinstance(action, SetAction) else action.unset
            var, _, rest = path.partition(".")
            target, ptr = env.id(var), fields.pointer(*rest.split("."))
            if isinstance(action, SetAction):
                return [SetOp(target=target, field=ptr, value=env.render(action.value))]
            return [UnsetOp(target=target, field=ptr)]
        if isinstance(action, RelateAction):
            src, rtype, dst = action.relate.split(":")
            return [RelateOp(source=env.id(src), type=rtype, target=env.id(dst),
                             attrs=env.render(action.attrs))]
        if isinstance(action, UnrelateAction):
            src, rtype, dst = action.unrelate.split(":")
            return [UnrelateOp(source=s, type=rtype, target=d)
                    for s, d in self._edges(env, src, rtype, dst)]
        if isinstance(action, CreateAction):
            data = env.render(action.create.model_dump())
            node = Node.model_validate({**data, "created_by_event": None})
            if action.as_:
                env.values[action.as_] = node.id
            return [CreateOp(node=node)]
        if isinstance(action, ExpireAction):
            return [ExpireOp(target=env.id(action.expire))]
        if isinstance(action, CloseSceneAction):
            self.close_scene = True
        return []

    def _edges(self, env: _Env, src: str, rtype: str, dst: str) -> list[tuple[str, str]]:
        """The edges an unrelate names; ``*`` stands for every node with such an edge now."""
        if src != "*" and dst != "*":
            return [(env.id(src), env.id(dst))]
        if src == "*":
            target = env.id(dst)
            sources = {s for s, t, d in self.world.incoming({target}) if t == rtype}
            sources |= {i for i, n in self.draft.nodes.items() if n is not None}
            return [(s, target) for s in sorted(sources)
                    if target in ((self.current(s) or {}).get("relations", {}).get(rtype, {}))]
        source = env.id(src)
        targets = (self.current(source) or {}).get("relations", {}).get(rtype, {})
        return [(source, t) for t in sorted(targets)]


class _Env:
    """The variables of one firing: slots, then fixed and derived ones, read before any action."""

    def __init__(self, rule: LoadedRule, builder: _Builder, slots: dict[str, str]) -> None:
        self.builder = builder
        self.values: dict[str, str | None] = dict(slots)
        pending = {n: s for n, s in rule.vars.items()
                   if n in rule.needs and n not in slots and (s.id or s.from_)}
        for _ in range(len(pending) + 1):  # derived variables may depend on each other
            for name, spec in list(pending.items()):
                value = self._derive(spec)
                if not isinstance(value, _Wait):
                    self.values[name] = value
                    del pending[name]

    def _derive(self, spec: VarSpec) -> str | _Wait | None:
        if spec.id is not None:
            return spec.id if self.builder.current(spec.id) is not None else None
        assert spec.from_ is not None
        base = spec.from_.split(".")[0]
        if base not in self.values:
            return _WAIT
        try:
            value = self.resolve(spec.from_)
        except _Unbound:
            return None
        if isinstance(value, str) and id_problem(value) is None and self.builder.current(value) is not None:
            return value
        return None

    def id(self, name: str) -> str:
        value = self.values.get(name)
        if value is None:
            raise _Unbound(name)
        return value

    def resolve(self, expr: str) -> Any:
        var, *path = expr.split(".")
        node_id = self.id(var)
        if not path:
            return node_id
        node = self.builder.current(node_id)
        value = fields.ABSENT if node is None else fields.get(node, fields.pointer(*path))
        if value is fields.ABSENT:
            raise _Unbound(expr)
        return value

    def render(self, value: Any) -> Any:
        """A template with every ``{var}`` and ``{var.field}`` filled in."""
        if isinstance(value, str):
            whole = TEMPLATE_RE.fullmatch(value)
            if whole and whole.group(1):
                return self.resolve(whole.group(1))
            return TEMPLATE_RE.sub(self._text, value)
        if isinstance(value, dict):
            return {str(self.render(k)): self.render(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v) for v in value]
        return value

    def _text(self, m: Any) -> str:
        if m.group(0) in ("{{", "}}"):
            return str(m.group(0)[0])
        value = self.resolve(m.group(1))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _Wait:
    """A derived variable whose source variable is not known yet."""


_WAIT = _Wait()


def _verb(action: Any) -> str:
    for key in ("set", "unset", "relate", "unrelate", "expire"):
        if hasattr(action, key):
            return f"{key} {getattr(action, key)}"
    if isinstance(action, CreateAction):
        return f"create {action.create.id}"
    return "act"


def _factory(wr: WorldRepo) -> RulesDiffuser:
    return RulesDiffuser(wr.root)


register("rules", _factory)
