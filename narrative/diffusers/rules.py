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

A rule's ``require`` list (its preconditions) is checked against the scratch
world just before the firing's actions, so "gives Su Qing the ring" is checked
against who holds the ring after the words before it. An unmet precondition does
not stop the firing (the words say it happened; the world may be what is wrong)
but is reported: as a note on an event, and as an :class:`Unmet` to ``narr audit``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from narrative import fields
from narrative.delta.draft import Draft
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
    SetAction,
    UnrelateAction,
    UnsetAction,
    VarSpec,
    rule_set,
)
from narrative.errors import DiffuserError
from narrative.ids import id_problem
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
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
    from narrative.store.worldrepo import WorldRepo

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


class RulesDiffuser:
    name = "rules"

    def __init__(self, root: Path) -> None:
        self.root = root

    def propose(self, world: World, request: EventRequest) -> Proposal:
        return self.propose_checked(world, request)[0]

    def propose_checked(self, world: World, request: EventRequest) -> tuple[Proposal, list[Unmet]]:
        """The proposal, and the preconditions of its firings that the world contradicts."""
        loaded = rule_set(self.root)
        rules = loaded.rules
        if not rules:
            return Proposal(notes=["no rules in this world (rules/*.toml)"]), []
        text = request.content
        lex = loaded.lexicon
        with _within_budget(), budget.within(MATCH_BUDGET):
            try:
                analysis = lex.analyse(text)
                named = find_mentions(world, text)
                nodes = {i: world.get(i) for m in named for i in m.ids}
                refs = referents.resolve(text, named, nodes, lex, analysis, lambda: _recent(world))
            except budget.OutOfTime:
                raise budget.OutOfTime(_cue_words(loaded.cue_sources)) from None
            mentions = refs.mentions
            analysis.drop_before({m.start for m, why in refs.set_aside if "contrast" in why})
            for m in mentions:
                for i in m.ids:
                    if i not in nodes:
                        nodes[i] = world.get(i)
            firings = find_firings(rules, text, mentions, nodes, lex.terminators,
                                   frozenset(refs.zeros))
        builder = _Builder(world)
        notes: list[str] = []
        unmet: list[Unmet] = []
        applied = 0
        for firing in firings:
            words = text[firing.match.start : firing.match.end]
            where = f"rule {firing.rule.rule.id} ({firing.rule.source})"
            if any(k in refs.zeros and not referents.zero_fits(text, mentions[k], firing.match.words)
                   for k in firing.match.slots.values()):
                notes.append(f"{where} not applied to {words!r}: nobody named does it")
                continue
            if firing.match.blocked_by is not None:
                notes.append(f"{where} not applied: {firing.match.blocked_by!r} in {words!r}")
                continue
            cue = analysis.blocking(list(firing.match.words))
            if cue is not None:
                notes.append(f"{where} not applied to {words!r}: "
                             f"{_reason(cue, analysis, mentions, nodes)}")
                continue
            for each in [firing, *_listed(firing, text, mentions, nodes)]:
                slots, problem = _bind_slots(each, mentions, nodes)
                if problem:
                    notes.append(f"{where} not applied to {words!r}: {problem}")
                    continue
                before = (builder.changes, builder.close_scene)
                env = _Env(each.rule, builder, slots)
                found = [u for req in each.rule.requires
                         if (u := _check(req, env, each)) is not None]
                unmet.extend(found)
                skipped = builder.fire(each.rule, env)
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
        if not applied:
            verb = "applied to" if firings else "matched"
            notes.append(f"no rule {verb} {text!r}")
        proposal = Proposal(delta=Delta(ops=builder.ops, close_scene=builder.close_scene), notes=notes)
        return proposal, unmet


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
        near = [m for m in mentions if s0 <= m.start < s1 and m.start < m.end and len(m.ids) == 1
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
    be written to match in exponential time ("(a|a a) (a|a a) ... b"), and so can
    a cue term, and cloning someone's story must not hang narr. Every expression
    made of a world's words matches within :func:`budget.within`, on any thread.
    """
    try:
        yield
    except budget.OutOfTime as exc:
        where = str(exc) or "the rules"
        hint = ("simplify the [cues] terms (fewer {x} in one term), or split a very long text "
                "into several events") if where.startswith("the cue words") else (
                "simplify the rule's pattern (fewer alternatives between gaps), or split a "
                "very long text into several events")
        raise DiffuserError(f"{where} took more than {MATCH_BUDGET:g}s to match this event's text",
                            hint=hint) from None


def _cue_words(sources: tuple[str, ...]) -> str:
    """What was matching when the cue analysis ran out of time."""
    if sources:
        return f"the cue words of {', '.join(sources)}"
    return "the cue words"


def find_firings(rules: list[LoadedRule], text: str, mentions: list[Mention],
                 nodes: dict[str, Any], terminators: Any = None,
                 zeros: frozenset[int] = frozenset()) -> list[Firing]:
    """The firings of every rule in ``text``, in the order of the text.

    A dropped subject (one of ``zeros``) may only fill a pattern's first slot: it
    is a subject, never the second of "{who} and {who2}" nor an object.
    """
    out: list[Firing] = []
    by_group: dict[str, list[Firing]] = {}
    known: dict[str, set[int]] = {}  # the same kind of variable recurs in many patterns

    def candidates(spec: VarSpec) -> set[int]:
        key = spec.model_dump_json()
        if key not in known:
            known[key] = _candidates(spec, mentions, nodes)
        return known[key]

    for order, rule in enumerate(rules):
        found: list[Firing] = []
        try:
            for pi, pattern in enumerate(rule.patterns):
                first = pattern.parts[0].slot
                verb = pattern.parts[1] if len(pattern.parts) > 1 else None
                unfit = {k for k in zeros if verb is None or not patterns.part_starts_at(
                    verb, text, referents.after_fillers(text, mentions[k].end))}
                allowed = {s: candidates(rule.vars.get(s, ANY)) - (unfit if s == first else zeros)
                           for s in pattern.slots}
                for m in patterns.find(pattern, text, mentions, allowed, rule.unless,
                                           terminators):
                    if not _verb_has_own_subject(text, m, mentions, zeros):
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


def _verb_has_own_subject(text: str, match: patterns.Match, mentions: list[Mention],
                          zeros: frozenset[int]) -> bool:
    """Whether a dropped subject stands right before the match's first word, so the names
    before it are not that word's subject: "greets Old Zhou and Elder Mo, then walks ..."."""
    for z in zeros:
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
    if first is None or first not in firing.rule.each:
        return []
    k = firing.match.slots[first]
    spec = firing.rule.vars.get(first, ANY)
    fits = _candidates(spec, mentions, nodes)
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


class _Builder:
    """The operations of all firings, tried on a scratch copy of the world as they are made."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.draft = Draft(world, "rules")
        self.ops: list[Op] = []
        self.close_scene = False
        self.changes = 0  # operations that changed the scratch world ("already so" when none did)

    def current(self, node_id: str) -> NodeDict | None:
        return self.draft.current(node_id)

    def add(self, op: Op) -> None:
        warnings = len(self.draft.warnings)
        node = op.source if isinstance(op, RelateOp) else op.target if isinstance(op, SetOp) else None
        before = copy.deepcopy(self.current(node)) if node is not None else None
        self.draft.apply_op(op, "rules")
        if isinstance(op, UnsetOp | UnrelateOp) and len(self.draft.warnings) > warnings:
            del self.draft.warnings[warnings:]  # nothing to remove: leave the operation out
            return
        if node is None or self.current(node) != before:
            self.changes += 1
        self.ops.append(op)

    def fire(self, rule: LoadedRule, env: _Env) -> list[str]:
        """Add the operations of one firing; returns notes on actions that could not be made."""
        skipped: list[str] = []
        kept = self._relates(rule, env)
        for action in rule.rule.do:
            try:
                for op in self._ops(action, env):
                    if (isinstance(action, UnrelateAction) and isinstance(op, UnrelateOp)
                            and "*" in action.unrelate and (op.source, op.type, op.target) in kept):
                        continue  # "move the edge here" when it is here already: keep its attrs
                    self.add(op)
            except _Unbound as exc:
                missing = str(exc)
                if missing in {slot for p in rule.patterns for slot in p.slots}:
                    continue  # a slot this pattern does not have ("who2"): the action is optional
                skipped.append(f"cannot {_verb(action)}: {missing} has no value here")
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
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
