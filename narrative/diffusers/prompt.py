"""The ``llm`` diffuser's prompt: what the model is told of one event, within a token budget.

On a machine without a graphics card a model reads a prompt at a few dozen tokens a
second, and a local server's context is often 2,048 or 4,096 tokens, reply included.
So the prompt is built for its size, and what it holds grows with what the event
names, never with the world:

- the rules and a one-line description of each operation (about 350 tokens); the
  delta's JSON Schema is not in it, since the server enforces it where it can
  (``response_format``) and the operations' lines describe it where it cannot;
- the event's words, its story time and the writer's explicit changes;
- the nodes the words name, as compact JSON keyed by id (state, relations as lists of
  ids, the summary; traits only when the model writes prose);
- for each named node, at most :data:`NEARBY_PER_NAMED` nodes around it: where it is,
  what holds it, what it relates to and what relates to it, each with its name,
  layer, kind and state (a place a thousand characters stand in costs what a hut does);
- the brief's items that are not those nodes again (hand edits, health, continuity,
  open threads), at most :data:`BRIEF_CHARS` characters, and the last events, each
  under a short reference (``e1``) that ``causes`` may name.

The named nodes and the words are the prompt's core: when they alone do not fit the
budget the request is refused before it is sent (:class:`PromptTooLarge`). What
follows them is added in that order while it fits, and what was left out is said.
On the sample world a one-sentence event costs about a thousand tokens
(:mod:`narrative.diffusers.tokens` counts them).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.diffusers.context import find_mentions
from narrative.diffusers.tokens import estimate, estimate_messages
from narrative.errors import DiffuserError
from narrative.model import RelateOp, SetOp, UnrelateOp, UnsetOp
from narrative.nodefile import NodeDict, edges_of

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World

NEARBY_PER_NAMED = 8
TARGET = 1400  # tokens the prompt fills with what is around the named nodes, at most
BRIEF_CHARS = 900
BRIEF_SECTIONS = ("hand edits", "health", "always in view", "continuity", "open threads")
WRITERS = ("hand edits", "health")  # the writer's corrections and the world's damage: always first
RECENT = 3
MAX_TEXT = 240  # characters of a summary or a state value
MAX_TARGETS = 24  # relation targets of one named node

SYSTEM = """\
You are narr's diffuser. A story's world is a graph of nodes (layers: character, item, \
ambient, background). For one story event, answer with the changes the event makes to the \
world, as one JSON object {"ops":[...],"causes":[],"narrative_text":null} and nothing else.

The user message holds "event" (what happens) and "story_time"; "named": the nodes the \
event names, by id; "nearby": nodes around them; "explicit_changes": the writer's own \
changes, applied after yours (do not repeat them); "brief": what must stay consistent \
(hand edits are the writer's corrections and override the history); "recent": the last \
events, by reference.

Ops (ID is a node's id, never invented for a node that exists):
{"op":"set","target":ID,"field":"/state/KEY","value":V} (also /name /aliases /summary /lifecycle)
{"op":"unset","target":ID,"field":"/state/KEY"}
{"op":"relate","source":ID,"type":TYPE,"target":ID}
{"op":"unrelate","source":ID,"type":TYPE,"target":ID}
{"op":"create","node":{"id":NEW_ID,"name":NAME,"layer":LAYER,"kind":KIND,\
"lifecycle":"event|scene|permanent","summary":TEXT,"state":{}}}
{"op":"expire","target":ID}

Rules:
- These fields name a node and hold its id, never a description: {references}.
- Store state the way the nodes shown store it.
- Change only what the event says or clearly implies; an event that changes nothing is {"ops":[]}.
- Never change traits, id, layer or created_by_event.
- A new node gets a fresh lowercase id (a-z, 0-9, -) and lifecycle "event" (momentary), \
"scene" (until the scene ends) or "permanent".
- "causes": references of recent events this one follows from, if any.
- {narrative_rule}"""

NO_RENDER = 'Leave "narrative_text" null.'
RENDER = ('Also write "narrative_text": two to five sentences of story prose in the language '
          '"{language}" that tell this event, consistent with your changes and with the '
          "characters' traits.")
PLAIN = "\nAnswer with the bare JSON object: no prose around it, no code fences."


class PromptTooLarge(DiffuserError):
    """The event's words and the nodes they name do not fit the model's context."""

    def __init__(self, needed: int, budget: int) -> None:
        super().__init__(f"the prompt for this event needs about {needed} tokens, more than the "
                         f"{budget} the model's context leaves it")
        self.needed = needed
        self.budget = budget


@dataclass
class Prompt:
    messages: list[dict[str, str]]
    tokens: int
    budget: int | None
    left_out: list[str] = field(default_factory=list)
    squeezed: bool = False  # the model's context, not narr's own target, left them out
    events: dict[str, str] = field(default_factory=dict)  # "e1" -> the event's id
    shown: dict[str, NodeDict] = field(default_factory=dict)  # every node in the prompt, by id


@dataclass
class Gathered:
    """What the prompt may hold for one event, before the budget picks from it."""

    named: dict[str, NodeDict]
    nearby: dict[str, NodeDict]
    brief: list[tuple[str, str]]  # (section, text), none of them about a node already shown
    recent: list[dict[str, Any]]


def gather(world: World, request: EventRequest, references: Collection[str], *,
           per_named: int = NEARBY_PER_NAMED, recent: int = RECENT) -> Gathered:
    """The nodes the words (and the explicit changes) name, those around them, the brief, the
    last events: each read by id, so the cost follows the event, not the world."""
    ids: list[str] = [i for m in find_mentions(world, request.content) for i in m.ids]
    for op in request.delta.ops:
        if isinstance(op, SetOp | UnsetOp):
            ids.append(op.target)
        elif isinstance(op, RelateOp | UnrelateOp):
            ids += [op.source, op.target]
    named: dict[str, NodeDict] = {}
    for node_id in dict.fromkeys(ids):
        node = world.get(node_id)
        if node is not None:
            named[node_id] = node
    rings: list[list[str]] = []  # around each named node, nearest first
    for node_id, node in named.items():
        ring = [i for i in around(world, node_id, node, references) if i not in named]
        rings.append(ring[:per_named])
    nearby: dict[str, NodeDict] = {}
    for depth in range(per_named):  # the nearest of each named node first, then the next ...
        for ring in rings:
            if depth < len(ring) and ring[depth] not in nearby:
                found = world.get(ring[depth])
                if found is not None:
                    nearby[ring[depth]] = found
    brief = [(str(i.get("section")), str(i.get("text"))) for i in
             ((request.brief or {}).get("items") or []) if i.get("section") in BRIEF_SECTIONS
             and (i.get("section") in WRITERS or (i.get("node") not in named
                                                   and i.get("node") not in nearby))]
    return Gathered(named, nearby, brief, world.recent_events(recent, changes=False))


def around(world: World, node_id: str, node: NodeDict, references: Collection[str]) -> list[str]:
    """The ids around a node, nearest first: what its reference fields name (where it is, who
    holds it), what it relates to, then what relates to it (sorted: the same each time)."""
    out: list[str] = []
    for pointer in references:
        value = fields.get(node, pointer) if _under_state(pointer) else None
        if isinstance(value, str):
            out.append(value)
    out += [dst for _rtype, dst in edges_of(node)]
    out += [src for src, _rtype, _dst in sorted(world.incoming([node_id]))]
    return list(dict.fromkeys(i for i in out if i != node_id))


def _under_state(pointer: str) -> bool:
    return pointer.startswith("/state/")


def compact(node: NodeDict, *, named: bool, render: bool) -> dict[str, Any]:
    """A node as the model reads it: its id is the key it sits under."""
    out: dict[str, Any] = {"name": node.get("name"), "layer": node.get("layer")}
    if node.get("kind"):
        out["kind"] = node["kind"]
    if node.get("lifecycle") not in (None, "permanent"):
        out["lifecycle"] = node["lifecycle"]
    if named:
        if node.get("aliases"):
            out["aliases"] = node["aliases"]
        if node.get("summary"):
            out["summary"] = _clip(str(node["summary"]))
        if render and node.get("traits"):
            out["traits"] = _clipped(node["traits"])
    if node.get("state"):
        out["state"] = _clipped(node["state"])
    if named:
        relations: dict[str, list[str]] = {}
        for rtype, dst in list(edges_of(node))[:MAX_TARGETS]:
            relations.setdefault(rtype, []).append(dst)
        if relations:
            out["relations"] = relations
    return out


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _clipped(value: Any) -> Any:
    if isinstance(value, str):
        return _clip(value)
    if isinstance(value, Mapping):
        return {k: _clipped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clipped(v) for v in value[:MAX_TARGETS]]
    return value


def system_prompt(*, language: str, render: bool, references: Collection[str]) -> str:
    """The rules; :data:`PLAIN` goes after them where the server holds the reply to no schema."""
    rule = RENDER.format(language=language) if render else NO_RENDER
    return SYSTEM.replace("{references}", ", ".join(references)).replace("{narrative_rule}", rule)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def build(gathered: Gathered, request: EventRequest, *, language: str, render: bool,
          references: Collection[str], budget: int | None, target: int | None = TARGET) -> Prompt:
    """The messages for the event within ``budget`` tokens (None: no bound but the caps); the
    budget keeps room for :data:`PLAIN`, which the client adds when it must. What is around
    the named nodes fills the prompt up to ``target`` tokens, the core alone may pass it."""
    system = system_prompt(language=language, render=render, references=references)
    if budget is not None:
        budget -= estimate(PLAIN)
    core: dict[str, Any] = {"event": request.content}
    if request.timestamp:
        core["story_time"] = request.timestamp
    if request.delta.ops:
        core["explicit_changes"] = [{k: v for k, v in op.model_dump(mode="json").items() if v != {}}
                                    for op in request.delta.ops]
    core["named"] = {i: compact(n, named=True, render=render) for i, n in gathered.named.items()}
    events = {f"e{n}": e["id"] for n, e in enumerate(gathered.recent, 1)}
    extras: list[tuple[str, str, Any]] = []  # (part, key, value), in the order they are kept
    first = [t for t in gathered.brief if t[0] in WRITERS]
    rest = [t for t in gathered.brief if t not in first]
    chars = 0
    for section, text in first + rest:
        chars += len(text)
        if chars > BRIEF_CHARS and (section, text) not in first:
            break
        extras.append(("brief", "", f"{section}: {text}"))
    hand = [e for e in extras if e[2].startswith(tuple(f"{w}:" for w in WRITERS))]
    later = [e for e in extras if e not in hand]
    nearby = [("nearby", i, compact(n, named=False, render=render)) for i, n in gathered.nearby.items()]
    recent = [("recent", ref, gathered.recent[n]["content"]) for n, ref in enumerate(events)]
    ordered = hand + nearby + later + recent

    def messages(kept: list[tuple[str, str, Any]]) -> list[dict[str, str]]:
        user = dict(core)
        for part, key, value in kept:
            if part == "brief":
                user.setdefault("brief", []).append(value)
            else:
                user.setdefault(part, {})[key] = value
        return [{"role": "system", "content": system}, {"role": "user", "content": dumps(user)}]

    base = estimate_messages(messages([]))
    if budget is not None and base > budget:
        raise PromptTooLarge(base, budget)
    kept: list[tuple[str, str, Any]] = []
    total = base
    skipped: list[tuple[str, str, Any]] = []
    fill = min((b for b in (budget, target) if b is not None), default=None)
    for item in ordered:
        cost = estimate(dumps({item[1]: item[2]} if item[1] else item[2])) + 1
        if fill is None or total + cost <= fill:
            kept.append(item)
            total += cost
        else:
            skipped.append(item)
    msgs = messages(kept)
    tokens = estimate_messages(msgs)
    while fill is not None and tokens > max(fill, base) and kept:
        skipped.append(kept.pop())
        msgs = messages(kept)
        tokens = estimate_messages(msgs)
    shown = {**gathered.named, **{i: gathered.nearby[i] for p, i, _ in kept if p == "nearby"}}
    squeezed = bool(skipped) and budget is not None and (target is None or budget < target)
    return Prompt(msgs, tokens, budget, _left_out(skipped), squeezed,
                  {ref: events[ref] for p, ref, _ in kept if p == "recent"}, shown)


def _left_out(skipped: list[tuple[str, str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for part, _key, _value in skipped:
        counts[part] = counts.get(part, 0) + 1
    names = {"nearby": "node(s) around the named ones", "brief": "brief item(s)",
             "recent": "recent event(s)"}
    return [f"{n} {names[p]}" for p, n in counts.items()]

