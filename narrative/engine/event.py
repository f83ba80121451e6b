"""``narr event``: one story event becomes one commit.

The order matters and is the whole design: find the user's hand edits, let the
diffuser propose a delta against the world *as edited*, validate everything,
expire what the event outlives, and only then write. Any failure before the
commit leaves the world and its history exactly as they were, and keeps the
request so it can be retried.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import PrivateAttr

from narrative import fields, invocation
from narrative.answers import MAYBE, Answer, Said, Shape
from narrative.delta import overlay
from narrative.delta.draft import Draft
from narrative.delta.preconditions import Contradiction, same_field
from narrative.delta.proposal import Diffuser, Proposal, merge
from narrative.delta.request import EventRequest
from narrative.engine import failed
from narrative.errors import (
    BusyError,
    ConflictError,
    DiffuserError,
    InvalidInputError,
    InvalidWorldError,
    NarrError,
    NothingToDoError,
    Step,
    StorageError,
)
from narrative.ids import new_event_id
from narrative.model import JSON, Change, EventRecord
from narrative.nodefile import MAX_DEPTH, WRAPPER_DEPTH, json_problem
from narrative.shapes import Proposal as ProposalShown
from narrative.shapes import Record
from narrative.store import (
    WorldRepo,
    WorldView,
    auto_gc,
    last_record,
    record_json,
    refuse_if_called_off,
    scan_for_event,
    seal,
    writing,
)

if TYPE_CHECKING:
    from narrative.engine.proposing import Asked

FLAT_LAYER_WARNING = 3000

class Contradicted(Shape):
    """One of the user's own changes that the world contradicts: written (the writer's word
    wins), and named with the fact that contradicts it."""

    kind: Literal["contradicted"]
    where: str
    change: str
    node: str
    field: str
    value: Annotated[JSON | None, MAYBE] = None
    wanted: str
    fact: str


class EventResult(Record, Answer):
    """A recorded (or, with ``dry_run``, a shown) event: its record and its commit (null on a
    dry run), the nodes it ``created`` and ``expired`` (and why), ``warnings``, the user's own
    changes the world ``contradicted``, and, when a diffuser ran, its ``proposal``: what it
    proposed and what became of each op."""

    NAME: ClassVar[str] = "event"
    VERSION: ClassVar[int] = 3  # 2: what chapters add (a chapter's record, where an event was
    # told); 3: a held-back change is a typed object, its command worded by the door

    dry_run: bool
    created: list[str]
    expired: dict[str, str]
    warnings: list[str]
    contradicted: list[Contradicted]
    proposal: Annotated[ProposalShown | None, MAYBE] = None
    _record: EventRecord | None = PrivateAttr(default=None)
    _proposed: Proposal | None = PrivateAttr(default=None)
    _kept_paths: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def of(cls, record: EventRecord, commit: str | None, *, dry_run: bool = False,
           created: Iterable[str] = (), expired: Mapping[str, str] | None = None,
           warnings: Iterable[str] = (), proposal: Proposal | None = None,
           contradicted: Iterable[Contradiction] = ()) -> Self:
        """The answer for ``record`` (sealed as ``commit``, None before or without it), with
        the diffuser's ``proposal`` when one ran."""
        data: dict[str, Any] = {"commit": commit, **record_json(record), "dry_run": dry_run,
                                "created": list(created), "expired": dict(expired or {}),
                                "warnings": list(warnings),
                                "contradicted": [c.to_json() for c in contradicted]}
        if proposal is not None:
            data["proposal"] = {
                "diffuser": record.diffuser,
                "ops": [op.model_dump(mode="json") for op in proposal.delta.ops],
                "notes": proposal.notes,
                "held": [held_json(h, record.content, dry_run) for h in proposal.held],
                **proposal.model_dump(mode="json", include={"proposed", "arbitration", "refused"})}
        made = cls.model_validate(data)
        made._record, made._proposed = record, proposal
        return made

    @classmethod
    def retold(cls, other: EventResult) -> Self:
        """``other`` as this kind of answer (a revert is an event told as ``revert``)."""
        made = cls.model_validate(other.to_json())
        made._record, made._proposed = other._record, other._proposed
        made._kept_paths = list(other._kept_paths)
        return made

    @property
    def record(self) -> EventRecord:
        """The event's record, as its commit seals it."""
        if self._record is None:
            from narrative.model import EventRecord

            self._record = EventRecord.model_validate(
                self.model_dump(mode="json", exclude_unset=True,
                                exclude={"commit", "dry_run", "created", "expired", "warnings",
                                         "contradicted", "proposal"}))
        return self._record

    @property
    def kept_paths(self) -> list[str]:
        """Files changed while the event was recorded: kept as hand edits, not written over."""
        return self._kept_paths

    @property
    def rendered_text(self) -> str | None:
        """The narrative text the diffuser wrote (``render``), whether or not the event kept it."""
        return self._proposed.narrative_text if self._proposed is not None else None


class RevertResult(EventResult):
    """An event that undoes an earlier one (its ``reverts``), recorded as any event is."""

    NAME: ClassVar[str] = "revert"
    VERSION: ClassVar[int] = 3  # 2: what chapters add (a chapter's record, where an event was
    # told); 3: a held-back change is a typed object, its command worded by the door


def held_json(held: Any, content: str, dry_run: bool) -> dict[str, Any]:
    """A held-back change with the one command that applies it, and the same as the ``event``
    operation's arguments (``apply``) for a program.

    On a dry run it is the same words again with ``--accept N``; once the event is
    recorded, a new event with exactly those changes as flags (``--diffuser explicit``), or
    as a delta on stdin when one creates a node.
    """
    import shlex

    from narrative.delta.flags_text import op_flags

    flags = [f for op in held.ops for f in op_flags(op)]
    if dry_run:
        command = f"narr event --accept {held.n} {shlex.quote(content)}"
    elif any(not op_flags(op) for op in held.ops):
        # a node to create has no flag: the changes go in as a delta on stdin, never as the
        # recorded words again (which would record them a second time)
        import json

        delta = json.dumps({"ops": [op.model_dump(mode="json") for op in held.ops]},
                           ensure_ascii=False)
        command = (f"echo {shlex.quote(delta)} | "
                   + shlex.join(["narr", "event", held.words, "--diffuser", "explicit", "--delta", "-"]))
    else:
        command = shlex.join(["narr", "event", held.words, "--diffuser", "explicit", *flags])
    if dry_run:
        arguments: dict[str, Any] = {"content": content, "accept": [held.n]}
    else:
        arguments = {"content": held.words, "diffuser": "explicit",
                     "ops": [op.model_dump(mode="json") for op in held.ops]}
    step = Step("event", arguments, cli=command)  # each door words it: a tool, a route, this line
    return {**held.model_dump(mode="json"), "flags": flags, "command": Said.of("{0}", step),
            "apply": {"operation": "event", "arguments": arguments}}


@contextmanager
def names_then_event(wr: WorldRepo, diffuser: Diffuser | None = None) -> Iterator[None]:
    """Around an event's name resolution and the event itself: the write lock, when it is free
    now, so the scan a name takes (the world as edited) is the event's own too, a walk of the
    world, not two, and no other event comes between. A busy lock is left to the event, which
    waits for it and keeps its words when it cannot have it (see
    :func:`narrative.store.worktree.scan_for_event`). A diffuser asked without the lock (a
    model: :mod:`narrative.engine.proposing`) gets none here either."""
    from narrative.engine import proposing

    held = not proposing.unlocked(wr, diffuser) and wr.lock.try_acquire()
    try:
        yield
    finally:
        if held:
            wr.lock.release()


_KEPT_INSTEAD: ContextVar[str | None] = ContextVar("narr_kept_instead", default=None)


def keep_instead(reason: str) -> None:
    """From now on in this context, keep each event (``narr failed``, failed with ``reason``)
    rather than record it. A client whose server stopped while it ran an event cannot know
    whether the server will still record it: it keeps the words, and the server's own run
    forgets that copy if it does record the event (:func:`failed.forget_same`)."""
    _KEPT_INSTEAD.set(reason)


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_event(wr: WorldRepo, request: EventRequest, *, dry_run: bool = False,
              diffuser: Diffuser | None = None, when: datetime | None = None,
              keep_failed: bool = True) -> EventResult:
    """Record one event. On a user-caused failure nothing changes and the request is kept.

    The diffuser is ``diffuser`` if given, else the one ``request.diffuser``
    names (``"rules"``, ``"llm"``...), else none: only the request's own delta.
    """
    if not request.content.strip():
        raise InvalidInputError("an event needs content: say what happens")
    problem = json_problem(request.model_dump(mode="python", exclude={"edits"}),
                           MAX_DEPTH + WRAPPER_DEPTH)  # each node's depth is checked by the draft
    if problem:  # bytes a terminal passed that are not UTF-8, or values JSON cannot hold
        raise InvalidInputError(f"the event cannot be stored: {problem}", hint="nothing was changed")
    if diffuser is None and request.diffuser:
        from narrative.diffusers.base import get_diffuser

        diffuser = get_diffuser(request.diffuser, wr)
    try:
        held_back = _KEPT_INSTEAD.get()
        if held_back is not None and not dry_run:
            raise StorageError(held_back)
        result = _run(wr, request, dry_run=dry_run, diffuser=diffuser, when=when,
                      keep_failed=keep_failed)
    except (InvalidInputError, InvalidWorldError, DiffuserError, BusyError, ConflictError,
            StorageError) as exc:
        if keep_failed and not dry_run and not getattr(exc, "recorded", False):
            failed.save(wr, request, exc.message, exc.details,
                         raw_reply=getattr(exc, "raw_reply", None), kind=type(exc).__name__)
            again = Step("retry", cli="narr event --retry")
            if isinstance(exc, BusyError | ConflictError | StorageError):
                exc.add_hint("the event is kept: {0} runs it again", again)
            elif isinstance(exc, InvalidInputError):
                exc.add_hint("the event is kept ({0}): fix the world and run {1}, or type it "
                             "again with its changes corrected", Step("failed"), again)
            else:
                exc.add_hint("the event is kept: fix the problem and run {0}", again)
        raise
    return result


def _run(wr: WorldRepo, request: EventRequest, *, dry_run: bool, diffuser: Diffuser | None,
         when: datetime | None, keep_failed: bool) -> EventResult:
    """The event under the write lock; a slow diffuser asked before it, without it, and asked
    once more if the world moved under its proposal (:mod:`narrative.engine.proposing`)."""
    from narrative.engine import proposing

    tries = 2 if proposing.unlocked(wr, diffuser) else 1
    moved: list[str] = []
    for attempt in range(1, tries + 1):
        asked = None
        if diffuser is not None and tries == 2:
            asked = _ask_unlocked(wr, request, diffuser, keep=keep_failed and not dry_run)
        try:
            with writing(wr) as recovered:
                result = _run_locked(wr, request, dry_run=dry_run, diffuser=diffuser, when=when,
                                     asked=asked, last=attempt == tries)
                result.warnings[:0] = recovered
                gone = failed.forget_same(wr, request) if keep_failed and not dry_run else []
                if any(failed.same_changes(item, request) for item in gone):
                    result.warnings.append("a failed event kept with the same words and changes is "
                                           "recorded now, so it is forgotten")
                elif gone:
                    result.warnings.append("the failed event kept with these words is recorded now "
                                           "(its changes fixed), so it is forgotten")
        except proposing.Moved as exc:
            moved = exc.ids
            continue
        if moved:
            result.warnings.append(f"{', '.join(moved)} changed while the model was asked, so it "
                                   "was asked again from the world as it then stood")
        return result
    raise AssertionError("the last try holds the event back rather than asking again")


def _ask_unlocked(wr: WorldRepo, request: EventRequest, diffuser: Diffuser, *,
                  keep: bool) -> Asked:
    """The diffuser's proposal, asked with no lock held; Ctrl-C meanwhile keeps the event."""
    from narrative.engine import proposing

    try:
        return proposing.ask(wr, request, diffuser, lambda view, req: _briefed(wr, view, req, diffuser))
    except KeyboardInterrupt:
        if keep:
            failed.save(wr, request, "interrupted (Ctrl-C) while the diffuser was asked",
                        kind="DiffuserError")
        raise


def _briefed(wr: WorldRepo, view: WorldView, request: EventRequest,
             diffuser: Diffuser) -> EventRequest:
    """The request as the diffuser gets it: with the brief, for a diffuser that works from one
    (the very pack narr brief gives for the event's words, from the world as this event finds it)."""
    budget = getattr(diffuser, "brief_budget", None)
    if not isinstance(budget, int) or budget <= 0:
        return request
    from narrative.engine.brief import brief

    pack = brief(wr, request.content, budget=budget, view=view, include_failed=False)
    return request.model_copy(update={"brief": pack.to_json()})


def keep_unread(wr: WorldRepo, request: EventRequest, exc: NarrError, unread: list[str]) -> None:
    """Keep an event whose changes could not be read (``--delta FILE`` missing, unreadable, not
    JSON): its words are kept for ``narr failed`` with the flags as typed, and ``exc`` says so."""
    failed.save(wr, request, exc.message, exc.details, kind=type(exc).__name__, unread=unread)
    exc.add_hint("the event's words are kept ({0}): fix the file and type the event again",
                 Step("failed"))


def retry(wr: WorldRepo, which: str | None = None, *, dry_run: bool = False,
          diffuser: Diffuser | None = None, when: datetime | None = None) -> EventResult:
    """Run a failed event again (the newest by default); it is forgotten once it is recorded.

    ``diffuser`` None means the diffuser the failed request named (if any).
    """
    if not failed.load_all(wr):
        raise NothingToDoError("no failed event to retry")
    item = failed.pick(wr, which)
    if item.unread:
        raise InvalidInputError(
            f"this event's changes could not be read when it was typed ({item.error}), so it "
            "cannot run again as it was asked",
            hint=f"type it again with the changes fixed: narr event {shlex.quote(item.request.content)} "
                 f"{shlex.join(item.unread)}; {{0}} forgets it",
            steps=[Step("drop_failed", {"which": which or "1"}, cli="narr failed drop")])
    try:
        result = run_event(wr, item.request, dry_run=dry_run, diffuser=diffuser, when=when,
                           keep_failed=False)
    except (InvalidInputError, InvalidWorldError, DiffuserError) as exc:
        if not dry_run:  # the kept event now carries the latest failure (and raw reply)
            failed.update(wr, item, exc.message, exc.details, getattr(exc, "raw_reply", None),
                          type(exc).__name__)
        raise
    if not dry_run:
        failed.discard(wr, item.key)
        failed.forget_same(wr, item.request)
    return result


def _run_locked(wr: WorldRepo, request: EventRequest, *, dry_run: bool,
                diffuser: Diffuser | None, when: datetime | None, asked: Asked | None = None,
                last: bool = True) -> EventResult:
    warnings: list[str] = []
    wr.require_branch()
    head = wr.head_commit()
    if head is None:
        raise InvalidWorldError("this world has no genesis commit", hint="narr init")
    edits = scan_for_event(wr, head.tree)
    edits.raise_problems()  # a broken or linked file first: the more telling problem
    from narrative.engine.adopt import unadopted

    if (buried := unadopted(wr, head)) is not None:
        raise buried
    view = WorldView(wr, head.tree, edits)
    if request.edits:
        _raise_if(overlay.lay(view, request.edits), "the event's own hand edits do not apply")

    _raise_if(same_field(request.delta.ops), "the event's changes are not valid")
    delta = request.delta
    proposal: Proposal | None = None
    if diffuser is not None:
        # every proposal is arbitrated (no duplicate nodes) and screened (guard rails) first
        from narrative.delta.screen import review  # with the arbiter: only when a diffuser runs

        if asked is not None:  # proposed without the lock: still made from the world as it is?
            from narrative.engine import proposing

            if changed := proposing.moved(asked, str(head.id), edits, view):
                raise proposing.held_back(changed) if last else proposing.Moved(changed)
            proposed = asked.proposal
        else:
            proposed = diffuser.propose(view, _briefed(wr, view, request, diffuser))
        proposal = review(view, proposed, request)
        delta = merge(proposal.delta, request.delta)
        if proposal.narrative_text and not delta.narrative_text:
            delta = delta.model_copy(update={"narrative_text": proposal.narrative_text})
    close_scene = request.close_scene or delta.close_scene

    event_id = invocation.reserved_event_id() or new_event_id()
    draft = Draft(view, event_id)
    draft.apply(delta, proposed=len(proposal.delta.ops) if proposal is not None else 0)
    _raise_if(draft.problems, "the event's changes are not valid")
    # a chapter's own commit is no event of the story: nothing's lifecycle ends with it
    draft.finish(close_scene=close_scene, lifecycles=request.chapter is None)
    _raise_if(draft.problems, "the event's changes are not valid")
    dangling = draft.edit_problems
    if dangling:  # a hand-edited file is what is wrong: an invalid world, not invalid input
        raise InvalidWorldError(dangling[0] + (f" (and {len(dangling) - 1} more)" if len(dangling) > 1
                                               else ""), details=dangling,
                                hint="fix the file ({0} lists every problem); nothing was changed",
                                steps=[Step("status")])
    warnings.extend(draft.warnings)
    warnings.extend(c.describe() for c in draft.contradictions)
    if request.render and diffuser is not None and diffuser.name in ("rules", "explicit", "none"):
        warnings.append(f"the {diffuser.name} diffuser writes no narrative text; --render needs "
                        "one that does (llm, or an exec program that returns narrative_text)")

    edit_changes: list[Change] = []
    for node_id, e in edits.edits.items():
        edit_changes.extend(fields.node_changes(node_id, e.old, e.new))
    when = when or now_utc()
    parent = last_record(head)
    record = EventRecord(
        kind="chapter" if request.chapter is not None else "event",
        id=event_id,
        parent=parent.id if parent else None,
        content=request.content,
        diffusions=draft.diffusions(),
        edits=edit_changes,
        narrative_text=request.narrative_text or delta.narrative_text,
        timestamp=request.timestamp or delta.timestamp,
        created_at=iso(when),
        close_scene=close_scene,
        diffuser=diffuser.name if diffuser is not None else None,
        causes=list(dict.fromkeys([*request.causes, *delta.causes])),
        explicit=list(request.delta.ops),
        replay_of=request.replay_of,
        reverts=request.reverts,
        chapter=request.chapter,
        in_chapter=request.in_chapter,
    )
    if dry_run:
        return EventResult.of(record, None, dry_run=True, created=sorted(draft.created),
                              expired=draft.expired, warnings=warnings, proposal=proposal,
                              contradicted=draft.contradictions)

    refuse_if_called_off()  # its caller gone while the diffuser was asked: write nothing
    sealed = seal(view, draft.finals(), record, when=when)
    for path in sealed.kept:
        warnings.append(f"{path} changed while the event was being recorded; "
                        "your version is kept as a hand edit")
    warnings.extend(_flat_warnings(view, draft))
    result = EventResult.of(record, sealed.commit, created=sorted(draft.created),
                            expired=draft.expired, warnings=warnings, proposal=proposal,
                            contradicted=draft.contradictions)
    result._kept_paths = list(sealed.kept)
    if wr.batch is None:
        auto_gc(wr)
    return result


def _raise_if(problems: list[str], summary: str) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInputError(f"{summary}: {problems[0]}{more}", details=problems,
                                hint="nothing was changed")


def _flat_warnings(view: WorldView, draft: Draft) -> list[str]:
    if view.layout != "flat" or not draft.created:
        return []
    out = []
    cache = view.wr.catalog
    created = [draft.nodes[i] for i in draft.created]
    for layer in sorted({node["layer"] for node in created if node is not None}):
        n = cache.count(layer)
        if n > FLAT_LAYER_WARNING:
            out.append(
                f"world/{layer}/ holds {n} node files; past a few thousand every event rewrites "
                "a large tree: a world this size is better in the sharded layout "
                "(narr init --layout sharded)"
            )
    return out
