"""``llm``: a language model proposes the event's delta, through any OpenAI-compatible server.

The model gets the event, the context pack and the delta's JSON Schema, and must
answer with one JSON delta. Its answer is trusted no further than any other
diffuser's: it is parsed, validated with the same pydantic models, and checked
against the world (ids that exist) before the engine sees it; an operation on
``traits`` is dropped by the same review as every diffuser's, the rest kept.
A model that gets it wrong is told exactly what is wrong and gets *one* repair
attempt, since most mistakes (an invented id, a missing field) are fixed by
being named; a second failure ends the event cleanly with the raw reply kept,
because an endless loop of attempts would only spend the user's time and money.

Endpoints, models and keys come from the user's own configuration
(:mod:`narrative.userconfig`), never from the world.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative import fields, safejson
from narrative.delta.parse import validate_delta
from narrative.diffusers.base import Proposal, register
from narrative.diffusers.chat import MAX_KEPT_BODY, ChatClient, Reply
from narrative.diffusers.context import build_context
from narrative.errors import DiffuserError, InvalidInputError
from narrative.model import CreateOp, Delta, Op, SetOp, UnsetOp
from narrative.userconfig import LLMSettings, load_user_config

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World

SYSTEM_PROMPT = """\
You are the diffuser of narr, a narrative engine. The story's world is a graph of nodes \
(layers: character, item, ambient, background). For one story event you propose the \
changes the event makes to the world, as one JSON delta.

Rules:
- Answer with one JSON object matching the JSON Schema below, and nothing else.
- Name nodes by their id: the keys of "nodes" in the context. Never invent an id for an \
existing node.
- "set"/"unset" change a field by JSON pointer: /state/..., /name, /aliases, /summary, \
/lifecycle or /relations/TYPE/TARGET. Never /traits, /id, /layer or /created_by_event.
- Follow the world's conventions: look at how the nodes in the context store their state \
(for example, a location is the id of a place node).
- "relate"/"unrelate" add or remove the edge source -type-> target; both must exist or be \
created by an earlier op.
- "create" brings something new into the story, with a fresh lowercase id (a-z, 0-9, '-'), \
a layer and a lifecycle: "event" for something momentary, "scene" for something that lasts \
until the scene ends, "permanent" otherwise. "expire" ends a node for good.
- Change only what the event says or clearly implies. An event that changes nothing is \
{"ops": []}.
- "explicit_changes" are the user's own changes for this event, applied after yours: do \
not repeat them.
- "causes": ids of recent events this one follows from, if any.
- "brief" lists what the story must keep consistent around this event, each item with \
the reason it is there: hand edits (the writer's corrections: they override the history), \
where everyone is, who holds and knows what, who is dead, the last events, open threads. \
Never contradict it.
- {narrative_rule}

JSON Schema of the delta:
{schema}"""

NO_RENDER = 'Leave "narrative_text" null.'
RENDER = ('Also write "narrative_text": two to five sentences of story prose in the language '
          '"{language}" that tell this event, consistent with your changes and with the '
          "characters' traits.")

REPAIR_PROMPT = """\
That reply cannot be used:
{problems}
Answer again with the whole corrected JSON object, and nothing else."""

_REFUSAL_START = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i can(no|')t|i cannot|i won'?t|i'm unable|i am unable|"
    r"as an ai|抱歉|对不起|我不能|我无法|很抱歉)", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


BRIEF_BUDGET = 3000  # characters of brief items in the prompt


class LLMDiffuser:
    """Asks a chat-completions server for the delta; settings are read when an event runs.

    The engine hands it the brief for the event (``brief_budget`` asks for one), the
    same deterministic pack ``narr brief CONTENT`` prints, next to the context pack
    whose nodes give the ids to name.
    """

    name = "llm"
    brief_budget = BRIEF_BUDGET

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self._settings = settings

    def propose(self, world: World, request: EventRequest) -> Proposal:
        # Read here, not when the diffuser is built, so a missing or broken setting fails
        # the event (which is then kept for --retry) instead of failing before it exists.
        settings = self._settings if self._settings is not None else load_user_config().llm
        client = ChatClient.from_settings(settings)
        render = settings.render or request.render
        pack = build_context(world, request).to_json()
        schema = Delta.model_json_schema(mode="validation")
        messages = build_messages(pack, request, schema, render=render)

        reply = client.complete(messages, schema)
        outcome = read_reply(reply, world, request)
        notes: list[str] = []
        if outcome.problems:
            first, first_reply = outcome, reply
            messages += [{"role": "assistant", "content": reply.content or ""},
                         {"role": "user", "content": REPAIR_PROMPT.format(
                             problems="\n".join(f"- {p}" for p in first.problems))}]
            reply = client.complete(messages, schema)
            outcome = read_reply(reply, world, request)
            if outcome.problems:
                raise _gave_up(first, outcome, first_reply, reply)
            notes.append(f"the first reply was unusable ({first.problems[0]}); the model repaired it")
        assert outcome.delta is not None
        return _proposal(outcome.delta, reply, client, pack, render=render, notes=notes)


def build_messages(pack: dict[str, Any], request: EventRequest, schema: dict[str, Any], *,
                   render: bool) -> list[dict[str, str]]:
    """The system prompt (rules and schema) and the user turn (event and context, as JSON)."""
    language = pack.get("world", {}).get("language") or "en"
    rule = RENDER.format(language=language) if render else NO_RENDER
    system = SYSTEM_PROMPT.replace("{narrative_rule}", rule).replace(
        "{schema}", json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    user: dict[str, Any] = {
        "event": request.content,
        "story_time": request.timestamp,
        "explicit_changes": [op.model_dump(mode="json") for op in request.delta.ops],
        "context": pack,
    }
    if request.brief is not None:
        user["brief"] = [{"section": i["section"], "reason": i["reason"], "text": i["text"]}
                         for i in request.brief.get("items", [])]
    return [{"role": "system", "content": system},
            {"role": "user", "content": json.dumps(user, ensure_ascii=False, indent=1)}]


@dataclass
class Outcome:
    """One reply, read: a delta, or what is wrong with it (``kind``: empty, garbage, invalid)."""

    delta: Delta | None = None
    problems: list[str] = field(default_factory=list)
    kind: str = ""


def read_reply(reply: Reply, world: World, request: EventRequest) -> Outcome:
    """Parse, validate and check one reply; a refusal ends the exchange at once."""
    if reply.refusal or reply.finish_reason == "content_filter":
        _refused(reply.refusal or "(the server's content filter stopped the reply)", reply)
    cut = reply.finish_reason == "length"
    cut_note = " (the reply was cut off at the server's token limit)" if cut else ""
    text = reply.content or ""
    if not text.strip():
        return Outcome(problems=[f"the reply is empty{cut_note}"], kind="empty")
    obj, error = parse_json_reply(text)
    if error is not None:
        if _REFUSAL_START.match(text) and "{" not in text:
            _refused(text.strip(), reply)
        return Outcome(problems=[f"the reply is not JSON: {error}{cut_note}"], kind="garbage")
    if isinstance(obj, dict) and isinstance(obj.get("delta"), dict) and "ops" not in obj:
        # {"delta": {...}, "narrative_text": ...}: a proposal-shaped answer, also accepted
        obj = {**obj["delta"], **({"narrative_text": obj["narrative_text"]}
                                  if obj.get("narrative_text") else {})}
    try:
        delta = validate_delta(obj, "reply")
    except InvalidInputError as exc:
        return Outcome(problems=[d.removeprefix("reply: ") for d in exc.details] or [exc.message],
                       kind="invalid")
    problems = world_problems(world, delta, request.delta)
    if problems:
        return Outcome(delta=delta, problems=problems, kind="invalid")
    return Outcome(delta=delta)


def parse_json_reply(text: str) -> tuple[Any, str | None]:
    """The JSON object in a reply, tolerating what chat models wrap around it (fences, <think>)."""
    text = _THINK.sub("", text).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return safejson.loads(text), None
    except safejson.JSONLimitError:
        return None, "nested too deeply"
    except ValueError as exc:
        error = str(exc)
    start = text.find("{")
    if start > 0:  # prose around the object: take the first complete object
        try:
            obj, _end = json.JSONDecoder().raw_decode(text, start)
            return obj, None
        except (ValueError, RecursionError):
            pass
    return None, error


def world_problems(world: World, delta: Delta, explicit: Delta) -> list[str]:
    """What the engine would refuse in this delta (missing ids, ...), found in a dry draft.

    An operation on a field no diffuser may change (``/traits``, ``/id``, ...) is no
    problem of the reply: the review drops it with a note and keeps the rest, as it
    does for every diffuser, so it costs neither a repair nor the event.
    """
    from narrative.delta.draft import Draft

    probe = Draft(world, "probe")
    for i, op in enumerate(delta.ops, 1):
        if not fixed_field(op):
            probe.apply_op(op, f"op {i} ({op.op})")
    for op in explicit.ops:  # the model may point at a node the user creates in this event
        if isinstance(op, CreateOp):
            probe.apply_op(op, "explicit create")
    probe.validate()
    return list(probe.problems)


FIXED_FIELDS = frozenset({"traits", "id", "layer", "created_by_event"})


def fixed_field(op: Op) -> bool:
    """Whether ``op`` sets or unsets a field that only the user (or narr) changes."""
    if not isinstance(op, SetOp | UnsetOp):
        return False
    tokens = fields.split(op.field)
    return bool(tokens) and tokens[0] in FIXED_FIELDS


def _refused(text: str, reply: Reply) -> None:
    raise DiffuserError(f"the model refused: {text[:300]}",
                        hint="reword the event, or use another model or diffuser",
                        raw_reply=(reply.content or reply.body)[:MAX_KEPT_BODY])


def _gave_up(first: Outcome, second: Outcome, first_reply: Reply, reply: Reply) -> DiffuserError:
    what = {"garbage": "is not JSON", "empty": "is empty"}.get(second.kind, "is not a valid delta")
    details = [f"first reply: {p}" for p in first.problems] + \
              [f"repaired reply: {p}" for p in second.problems]

    def raw(r: Reply) -> str:
        return (r.content if r.content is not None else r.body)[:MAX_KEPT_BODY // 2]

    return DiffuserError(
        f"the model's reply {what}, even after one repair attempt: {second.problems[0]}",
        details=details,
        hint="both raw replies are kept with the event; a larger model, or another diffuser, "
             "may do better",
        raw_reply=f"{raw(reply)}\n\n--- the first reply, before the repair ---\n{raw(first_reply)}",
    )


def _proposal(delta: Delta, reply: Reply, client: ChatClient, pack: dict[str, Any], *,
              render: bool, notes: list[str]) -> Proposal:
    """The checked delta as a proposal: prose only when asked, causes only among recent events."""
    known = {e["id"] for e in pack.get("recent_events", [])}
    causes = [c for c in delta.causes if c in known]
    dropped = [c for c in delta.causes if c not in known]
    text = delta.narrative_text if render else None
    out_notes = [f"{client.model or 'the model'} proposed {len(delta.ops)} operation(s)",
                 *client.notes, *notes]
    if dropped:
        out_notes.append(f"dropped causes that are not recent events: {', '.join(dropped)}")
    if render and not text:
        out_notes.append("the model wrote no narrative text")
    clean = delta.model_copy(update={"narrative_text": None, "causes": causes})
    return Proposal(delta=clean, narrative_text=text, causes=[], notes=out_notes,
                    raw_reply=reply.content)


register("llm", lambda wr: LLMDiffuser())
