"""``llm``: a language model proposes the event's delta, through any OpenAI-compatible server.

The model gets the event, the nodes it names and what is around them, as a prompt
sized for a local model's context (:mod:`narrative.diffusers.prompt`), and must
answer with one JSON delta. Its answer is trusted no further than any other
diffuser's: it is parsed, validated with the same pydantic models, and checked
against the world (ids that exist, fields that must name a node naming one:
:mod:`narrative.diffusers.refcheck`) before the engine sees it; an operation on
``traits`` is dropped by the same review as every diffuser's, the rest kept.
A model that gets it wrong is told exactly what is wrong and gets *one* repair
attempt, since most mistakes (an invented id, a place given as words) are fixed by
being named; a second failure ends the event cleanly with the raw reply kept,
because an endless loop of attempts would only spend the user's time and money.

A reply cut off at ``max_tokens`` is no mistake of the model's to repair: a repair
would be cut off at the same place. It is asked once more with twice the room (as
far as the context allows), and a second cut is reported with the setting to raise.

The model is asked while the world is not locked (:attr:`LLMDiffuser.proposes_unlocked`):
other commands go on meanwhile, and the engine checks the proposal again against
the world as it stands when it applies it.

Endpoints, models and keys come from the user's own configuration
(:mod:`narrative.userconfig`), never from the world.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative import fields, safejson
from narrative.delta.parse import validate_delta
from narrative.diffusers import prompt as prompts
from narrative.diffusers import refcheck
from narrative.diffusers.base import Proposal, register
from narrative.diffusers.chat import CONTEXT_FIX, MAX_KEPT_BODY, ChatClient, Reply
from narrative.diffusers.tokens import PER_MESSAGE, estimate, estimate_messages
from narrative.errors import DiffuserError, InvalidInputError
from narrative.model import CreateOp, Delta, Op, SetOp, UnsetOp
from narrative.nodefile import NodeDict
from narrative.userconfig import LLMSettings, load_user_config

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World

REPAIR_PROMPT = """\
That reply cannot be used:
{problems}
Answer again with the whole corrected JSON object, and nothing else."""

_REFUSAL_START = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i can(no|')t|i cannot|i won'?t|i'm unable|i am unable|"
    r"as an ai|抱歉|对不起|我不能|我无法|很抱歉)", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


BRIEF_BUDGET = 3000  # characters of the brief narr computes; the prompt keeps what fits
MARGIN = 16  # tokens of slack between the estimate and the context's end


@dataclass
class Usage:
    """What one proposal cost: for ``narr doctor`` and the benchmark, never for the world."""

    prompt_tokens: int  # narr's estimate of the first request's prompt
    counted_prompt_tokens: int | None = None  # the server's own count, where it says
    completion_tokens: int | None = None
    requests: int = 0


class LLMDiffuser:
    """Asks a chat-completions server for the delta; settings are read when an event runs.

    The engine hands it the brief for the event (``brief_budget`` asks for one), the
    same deterministic pack ``narr brief CONTENT`` prints; the prompt keeps the items
    that are not the named nodes again.
    """

    name = "llm"
    brief_budget = BRIEF_BUDGET
    proposes_unlocked = True

    def __init__(self, settings: LLMSettings | None = None,
                 references: Collection[str] = tuple(fields.REFERENCE_LABELS)) -> None:
        self._settings = settings
        self.references = list(references)
        self.last: Usage | None = None

    @property
    def settings(self) -> LLMSettings:
        """The settings it was made with, else yours, read each time: a missing or broken
        setting fails the event (which is then kept for --retry), not the diffuser's making."""
        return self._settings if self._settings is not None else load_user_config().llm

    def propose(self, world: World, request: EventRequest) -> Proposal:
        settings = self.settings
        client = ChatClient.from_settings(settings)
        client.unenforced = prompts.PLAIN
        render = settings.render or request.render
        context, source = client.context_size()
        budget = prompt_budget(context, client.max_tokens)
        gathered = prompts.gather(world, request, self.references)
        prompt = self._prompt(gathered, request, world, client, render=render, budget=budget,
                              context=context, source=source)
        self.last = Usage(prompt.tokens)
        schema = Delta.model_json_schema(mode="validation")
        exchange = _Exchange(client, schema, context)
        messages = prompt.messages
        reply = exchange.ask(messages)
        self._count(reply, client, first=True)
        outcome = read_reply(reply, world, request, self.references, prompt.shown)
        notes: list[str] = list(exchange.notes)
        if prompt.squeezed:
            notes.append("left out of the prompt to fit the model's context: "
                         + ", ".join(prompt.left_out))
        if outcome.problems:
            first, first_reply = outcome, reply
            messages = self._repair(messages, reply, first.problems, gathered, request, world,
                                    client, render=render, budget=budget, first=first)
            reply = exchange.ask(messages)
            self._count(reply, client, first=False)
            outcome = read_reply(reply, world, request, self.references, prompt.shown)
            if outcome.problems:
                raise _gave_up(first, outcome, first_reply, reply)
            notes.append(f"the first reply was unusable ({first.problems[0]}); the model repaired it")
        assert outcome.delta is not None
        return _proposal(outcome.delta, reply, client, prompt.events, render=render,
                         notes=notes + outcome.notes)

    def _prompt(self, gathered: prompts.Gathered, request: EventRequest, world: World,
                client: ChatClient, *, render: bool, budget: int | None, context: int | None,
                source: str) -> prompts.Prompt:
        try:
            return prompts.build(gathered, request, language=world.language or "en", render=render,
                                 references=self.references,
                                 budget=budget)
        except prompts.PromptTooLarge as exc:
            raise too_large(exc.needed, context, source, client.max_tokens) from None

    def _repair(self, messages: list[dict[str, str]], reply: Reply, problems: list[str],
                gathered: prompts.Gathered, request: EventRequest, world: World, client: ChatClient,
                *, render: bool, budget: int | None, first: Outcome) -> list[dict[str, str]]:
        """The conversation for the repair turn, its first prompt made smaller where the turn
        would not fit the context otherwise."""
        turn = [{"role": "assistant", "content": _clip_echo(reply.content or "", client.max_tokens)},
                {"role": "user", "content": REPAIR_PROMPT.format(
                    problems="\n".join(f"- {p}" for p in problems))}]
        if budget is None or estimate_messages(messages + turn) <= budget:
            return messages + turn
        room = budget - sum(PER_MESSAGE + estimate(m["content"]) for m in turn)
        try:
            smaller = prompts.build(gathered, request, language=world.language or "en",
                                    render=render, references=self.references, budget=room)
        except prompts.PromptTooLarge:
            raise DiffuserError(
                f"the model's reply cannot be used ({problems[0]}), and the model's context has "
                "no room left to ask for a repair", details=first.problems,
                hint=f"{CONTEXT_FIX}; the raw reply is kept with the event",
                raw_reply=(reply.content or reply.body)[:MAX_KEPT_BODY]) from None
        return smaller.messages + turn

    def _count(self, reply: Reply, client: ChatClient, *, first: bool) -> None:
        if self.last is None:
            return
        if first:
            self.last.counted_prompt_tokens = reply.prompt_tokens
        if reply.completion_tokens is not None:
            self.last.completion_tokens = (self.last.completion_tokens or 0) + reply.completion_tokens
        self.last.requests = client.requests


def _clip_echo(text: str, max_tokens: int) -> str:
    """An unusable reply as the repair turn shows it back: whole when it is within the reply's
    max_tokens, as a reply is; a server that sent more than it was asked for gets its start
    shown, not all of it again (it would fill the context)."""
    if estimate(text) <= max_tokens:
        return text
    return text[:3 * max_tokens] + " …(cut here)"


def prompt_budget(context: int | None, max_tokens: int) -> int | None:
    """Tokens the prompt may take: the context less the reply's room (None: no context known)."""
    if context is None:
        return None
    return context - max_tokens - MARGIN


def too_large(needed: int, context: int | None, source: str, max_tokens: int) -> DiffuserError:
    return DiffuserError(
        f"the prompt for this event needs about {needed} tokens, and the model's context "
        f"({context} tokens, by {source}) leaves {max(0, (context or 0) - max_tokens - MARGIN)} "
        f"once the reply has its {max_tokens}: nothing was sent",
        hint=CONTEXT_FIX)


class _Exchange:
    """One request, and once more with twice the room when the reply was cut off."""

    def __init__(self, client: ChatClient, schema: dict[str, Any], context: int | None) -> None:
        self.client = client
        self.schema = schema
        self.context = context
        self.notes: list[str] = []

    def ask(self, messages: list[dict[str, str]]) -> Reply:
        limit = self.client.max_tokens
        reply = self.client.complete(messages, self.schema)
        if not reply.cut or reply.refusal:
            return reply
        bigger = 2 * limit
        if self.context is not None:
            used = reply.prompt_tokens or estimate_messages(messages)
            bigger = min(bigger, self.context - used - MARGIN)
        if bigger > limit:
            self.notes.append(f"the reply was cut off at {limit} tokens; asked again with room "
                              f"for {bigger}")
            first = reply
            reply = self.client.complete(messages, self.schema, max_tokens=bigger)
            if not reply.cut:
                return reply
            raise DiffuserError(
                f"the model's reply was cut off at its token limit twice ({limit}, then {bigger} "
                "tokens): nothing was written",
                hint="raise [llm] max_tokens (NARR_LLM_MAX_TOKENS) if the event has much to change; "
                     "a model that writes on without end does better with a server that holds it "
                     "to the schema (response_format json_schema), or is too small for the task",
                raw_reply=_both(reply, first))
        raise DiffuserError(
            f"the model's reply was cut off at its token limit ({limit} tokens), and the "
            "model's context has no room for a longer one: nothing was written",
            hint=CONTEXT_FIX, raw_reply=(reply.content or reply.body)[:MAX_KEPT_BODY])


def _both(reply: Reply, first: Reply) -> str:
    def raw(r: Reply) -> str:
        return (r.content if r.content is not None else r.body)[:MAX_KEPT_BODY // 2]

    return f"{raw(reply)}\n\n--- the first reply, cut off sooner ---\n{raw(first)}"


@dataclass
class Outcome:
    """One reply, read: a delta, or what is wrong with it (``kind``: empty, garbage, invalid)."""

    delta: Delta | None = None
    problems: list[str] = field(default_factory=list)
    kind: str = ""
    notes: list[str] = field(default_factory=list)


def read_reply(reply: Reply, world: World, request: EventRequest,
               references: Collection[str] = tuple(fields.REFERENCE_LABELS),
               shown: Mapping[str, NodeDict] | None = None) -> Outcome:
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
    delta, problems, notes = refcheck.check(world, delta, request.delta, references, shown or {})
    problems = world_problems(world, delta, request.delta) + problems
    if problems:
        return Outcome(delta=delta, problems=problems, kind="invalid", notes=notes)
    return Outcome(delta=delta, notes=notes)


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


def _proposal(delta: Delta, reply: Reply, client: ChatClient, events: Mapping[str, str], *,
              render: bool, notes: list[str]) -> Proposal:
    """The checked delta as a proposal: prose only when asked, causes only among the recent
    events the prompt showed (by their reference, ``e1``, or their id)."""
    known = {**events, **{i: i for i in events.values()}}
    causes = list(dict.fromkeys(known[c] for c in delta.causes if c in known))
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


register("llm", lambda wr: LLMDiffuser(references=list(wr.config.reference_labels)))
