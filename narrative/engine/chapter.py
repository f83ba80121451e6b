"""``narr chapter``: a whole chapter in, every change it proposes reviewed, the chapter recorded
as one unit.

A writer works a chapter at a time; narr's unit is the event. A chapter draft is cut into
scenes and sentences (:mod:`narrative.engine.scenes`) and read sentence by sentence on a copy
of the world as the chapter changes it (:mod:`narrative.engine.reading`): each sentence is
proposed exactly as ``narr event`` would propose it (the world's diffuser, then the review
every proposal goes through), with the continuity checks of ``narr audit``, so "he picks up
the ring" after "Lin Yuan walks to the ferry" is read with Lin Yuan at the ferry.

:func:`review` writes nothing: it numbers every change the chapter proposes (its sentence,
old -> new, the rule and the words that made it), and lists the contradictions found and the
changes held back, whatever held them back. :func:`record` takes the writer's decisions (the
changes accepted, those rejected, changes added by hand at a sentence) and records the
chapter as one unit: the chapter's own commit (its number, title, whole text, scenes,
summary; the hand edits the world held), then one event per sentence that changes something,
its words as the event's content and its place in the chapter in its record. Every commit is
built in memory and the story moves once, so a crash or an error half-way leaves the world
and its history as they were (:func:`narrative.store.commit.seal_chain`); the draft and the
decisions are kept until then, for :func:`retry`.

The changes a recording writes are those the writer saw: the numbered changes accepted, in
the order of the words, validated again on the world as the recorded sentences leave it (a
change that needs one the writer rejected is refused, naming both). A review made with a
model (whose answers differ from run to run) is kept, and a recording of the same chapter on
the same world takes its proposals from it.

Where the record lives: in the commits themselves (a ``chapter`` record, and ``in_chapter``
in each event's), so it travels with clone, push and pull, is sealed by the commits' hashes,
goes with the events into the chain a reset keeps, and comes back with them on a replay; the
catalog only indexes it (:mod:`narrative.store.catalog.chapters`).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from narrative import fields
from narrative.delta.draft import Draft
from narrative.delta.screen import Reviewed
from narrative.engine.calloff import CalledOff
from narrative.engine.chapters import heading as chapter_heading
from narrative.engine.deadline import DEFAULT_BUDGET, Deadline
from narrative.engine.reading import Finding, Reading
from narrative.engine.scenes import ChapterText, Sentence, check_text, split
from narrative.errors import (
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    NarrError,
    NothingToDoError,
    Step,
)
from narrative.ids import new_event_id
from narrative.model import (
    Change,
    ChapterData,
    CreateOp,
    EventRecord,
    ExpireOp,
    InChapter,
    Op,
    RelateOp,
    Scene,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.nodefile import NodeDict
from narrative.store import (
    HandEdits,
    WorldRepo,
    drop_pending,
    is_ancestor,
    last_record,
    load_pending,
    load_review,
    save_pending,
    save_review,
    scan_for_event,
    scan_for_reader,
)

if TYPE_CHECKING:
    from narrative.delta.proposal import Diffuser
    from narrative.store import Commit, WorldView

Accept = Literal["all"] | Iterable[int]
__all__ = ["DEFAULT_BUDGET", "AddedChange", "ChapterResult", "ChapterReview", "ProposedChange",
           "SentenceReview", "dry_run_answer", "parse_numbers", "record", "retry", "review"]


@dataclass(frozen=True)
class AddedChange:
    """A change the writer adds by hand at a sentence (``--set 7:lin-yuan.state.mood=calm``):
    recorded with that sentence's event, after what the diffuser proposed there."""

    sentence: int
    op: Op

    def to_json(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "op": self.op.model_dump(mode="json")}


@dataclass
class ProposedChange:
    """One numbered change of a review: an operation a sentence proposes (or its closing the
    scene), what it does to the world as the chapter has left it, and what made it."""

    n: int
    sentence: int
    scene: int
    op: Op | None  # None: the sentence closes the scene
    changes: list[Change]  # old -> new, on the world as the chapter has left it
    rule: str | None
    source: str | None
    words: str

    @property
    def kind(self) -> str:
        return "close_scene" if self.op is None else self.op.op

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "sentence": self.sentence, "scene": self.scene, "kind": self.kind,
                "op": self.op.model_dump(mode="json") if self.op is not None else None,
                "changes": [c.model_dump(mode="json") for c in self.changes],
                "rule": self.rule, "source": self.source, "words": self.words}


@dataclass
class SentenceReview:
    """What one sentence proposes: its numbered changes, those added by hand, what follows
    from them (an ending lifecycle), what was held back, and what contradicts the world."""

    sentence: Sentence
    changes: list[int] = field(default_factory=list)
    added: list[Op] = field(default_factory=list)
    effects: list[Change] = field(default_factory=list)  # not made by one op: expiries, drops
    expired: dict[str, str] = field(default_factory=dict)  # node -> why it ends here
    held: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    remarks: list[Finding] = field(default_factory=list)  # audit's notes: odd, not wrong

    def to_json(self) -> dict[str, Any]:
        return {**self.sentence.to_json(), "changes": self.changes,
                "added": [op.model_dump(mode="json") for op in self.added],
                "effects": [c.model_dump(mode="json") for c in self.effects],
                "expired": self.expired, "held": self.held, "notes": self.notes,
                "findings": [f.to_json() for f in self.findings],
                "remarks": [f.to_json() for f in self.remarks]}


@dataclass
class ChapterReview:
    """A chapter read on the world, nothing written: every change numbered, every
    contradiction and held-back change with its sentence."""

    number: int
    title: str | None
    language: str
    digest: str
    head: str
    diffuser: str | None
    scenes: list[dict[str, Any]]
    sentences: list[SentenceReview]
    changes: list[ProposedChange]
    review_id: str
    text: str = ""
    edits: int = 0  # hand edits the chapter's own commit would record
    warnings: list[str] = field(default_factory=list)
    replaces: dict[str, Any] | None = None  # a chapter of this number already on the line

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self.sentences for f in s.findings]

    @property
    def held(self) -> list[dict[str, Any]]:
        return [h for s in self.sentences for h in s.held]

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "title": self.title, "language": self.language,
                "heading": chapter_heading(self.number, self.title, self.language),
                "digest": self.digest, "head": self.head, "diffuser": self.diffuser,
                "review": self.review_id, "edits": self.edits, "scenes": self.scenes,
                "sentences": [s.to_json() for s in self.sentences],
                "changes": [c.to_json() for c in self.changes],
                "findings": [f.to_json() for f in self.findings], "held": self.held,
                "warnings": self.warnings, "replaces": self.replaces}


@dataclass
class ChapterResult:
    """A chapter recorded (or, ``already``, found recorded with the same key), or with
    ``dry_run`` only reviewed (``chapter`` None: nothing was written)."""

    review: ChapterReview | None
    chapter: dict[str, Any] | None  # id, commit, number, title, summary, events, first, last
    events: list[dict[str, Any]] = field(default_factory=list)  # id, commit, sentence, content
    accepted: list[int] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    head: str | None = None
    already: bool = False
    warnings: list[str] = field(default_factory=list)
    kept_paths: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "chapter": self.chapter, "events": self.events,
                "accepted": self.accepted,
                "rejected": self.rejected, "head": self.head, "already": self.already,
                "warnings": self.warnings, "kept_paths": self.kept_paths,
                "review": self.review.to_json() if self.review is not None else None}


def dry_run_answer(review: ChapterReview) -> dict[str, Any]:
    """A review in the shape of a recording's answer: nothing recorded."""
    return ChapterResult(review, None, head=review.head, warnings=list(review.warnings),
                         dry_run=True).to_json()


# --- what the writer says -------------------------------------------------------------------

_REVIEW = Step("chapter", {"dry_run": True}, cli="narr chapter FILE --dry-run")
"""The review of a chapter, which numbers its sentences and its proposed changes."""
_RANGE = re.compile(r"^\s*(\d{1,7})\s*(?:-\s*(\d{1,7}))?\s*$")


def parse_numbers(spec: str, what: str = "--accept") -> set[int]:
    """``1,3-7`` as the numbers it names; ``all`` is the caller's to read."""
    out: set[int] = set()
    for part in spec.split(","):
        if not part.strip():
            continue
        m = _RANGE.match(part)
        if m is None:
            raise InvalidInputError(f"{what} {spec!r}: {part.strip()!r} is not a number or a range",
                                    hint=f"{what} all, or numbers and ranges: {what} 1,3-7")
        low = int(m.group(1))
        high = int(m.group(2) or low)
        if low < 1 or high < low or high - low > 100_000:
            raise InvalidInputError(f"{what} {spec!r}: {part.strip()!r} is not a range from low "
                                    "to high, from 1")
        out.update(range(low, high + 1))
    return out


def _decide(review: ChapterReview, accept: Accept, reject: Iterable[int]) -> tuple[set[int], set[int]]:
    """The numbers accepted and rejected, every one of them a change the review proposes."""
    known = {c.n for c in review.changes}
    rejected = set(reject)
    accepted = set(known) if accept == "all" else set(accept)
    unknown = sorted((accepted | rejected) - known)
    if unknown:
        listed = ", ".join(map(str, unknown[:10])) + (" ..." if len(unknown) > 10 else "")
        raise InvalidInputError(
            f"the review proposes {len(known)} change{'' if len(known) == 1 else 's'}"
            + (f" (1 to {max(known)})" if known else "")
            + f"; there is no change {listed}",
            hint="{0} lists them with their numbers", steps=[_REVIEW])
    both = sorted(accepted & rejected)
    if both and accept != "all":
        raise InvalidInputError(f"change {both[0]} is both accepted and rejected")
    return accepted - rejected, rejected


# --- reading --------------------------------------------------------------------------------

@dataclass
class _Read:
    """A reading's result: the review's parts, and the proposals to keep."""

    sentences: list[SentenceReview]
    changes: list[ProposedChange]
    proposals: dict[int, Reviewed]
    warnings: list[str]
    named: bool


def _chapter_number(wr: WorldRepo, head: Commit, chapter: ChapterText, number: int | None
                    ) -> tuple[int, dict[str, Any] | None]:
    """The chapter's number (given, its heading's, or the next on the line) and the chapter
    of that number the line holds already, if any."""
    from narrative.engine.chapters import chapters_on_line

    line = chapters_on_line(wr, head.id)
    if number is None:
        number = chapter.number
    if number is None:
        number = max((c.number for c in line), default=0) + 1
    if number < 1:
        raise InvalidInputError(f"a chapter's number is 1 or more, not {number}")
    same = [c for c in line if c.number == number]
    return number, same[-1].to_json() if same else None


def _review_id(chapter: ChapterText, number: int, title: str | None, name: str, head: str,
               edits: HandEdits, added: Sequence[AddedChange], at: str | None) -> str:
    """What a review was read from, as a digest: the same id is the same reading."""
    parts = {"text": _digest(chapter.text), "number": number, "title": title, "diffuser": name,
             "head": head, "edits": sorted((p, o or "") for p, o in edits.raw.items()),
             "added": [a.to_json() for a in added], "at": at}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _pointer_of(op: Op) -> tuple[str, str]:
    """The node and field an operation writes."""
    if isinstance(op, SetOp | UnsetOp):
        return op.target, op.field
    if isinstance(op, RelateOp | UnrelateOp):
        return op.source, fields.pointer("relations", op.type, op.target)
    if isinstance(op, CreateOp):
        return op.node.id, ""
    assert isinstance(op, ExpireOp)
    return op.target, ""


def _attribute(ops: list[Op], diffusions: list[Change]) -> tuple[list[list[Change]], list[Change]]:
    """Which of the sentence's changes each operation made (the last operation on a field
    owns it), and those no operation made (lifecycles ending, relations dropped with a node)."""
    owned: list[list[Change]] = [[] for _ in ops]
    rest: list[Change] = []
    for ch in diffusions:
        owner = None
        for i, op in enumerate(ops):
            target, ptr = _pointer_of(op)
            if target != ch.target:
                continue
            if ptr == ch.field or (ptr and ch.field.startswith(ptr + "/")) or (
                    ptr == "" and isinstance(op, CreateOp | ExpireOp)):
                owner = i
        if owner is None:
            rest.append(ch)
        else:
            owned[owner].append(ch)
    return owned, rest


def _held(held: Any, sentence: int) -> dict[str, Any]:
    """A held-back change, with the flags that add it by hand at its sentence."""
    from narrative.delta.flags_text import op_flags

    flags: list[str] = []
    for op in held.ops:
        pair = op_flags(op)
        if pair:
            flags += [pair[0], f"{sentence}:{pair[1]}"]
    return {**held.model_dump(mode="json"), "sentence": sentence, "flags": flags}


class _Chapter:
    """One chapter being reviewed or recorded on one world: its text cut, its number, how it is
    read, and the world it is read against."""

    def __init__(self, wr: WorldRepo, text: str, *, number: int | None, title: str | None,
                 diffuser: str | None, added: Sequence[AddedChange], at: str | None,
                 for_event: bool) -> None:
        from narrative.diffusers.base import default_name, get_diffuser
        from narrative.diffusers.rulefile import rule_set
        from narrative.engine.eventgraph import tip_of

        check_text(text)
        if at is not None and not at.strip():
            raise InvalidInputError("--at needs a story time (\"Day 3, dusk\"); leave it out for none")
        self.wr = wr
        head = tip_of(wr)
        if head is None:
            raise InvalidWorldError("this world has no genesis commit", hint="narr init")
        self.head = head
        self.loaded = rule_set(wr.root)
        self.text = split(text, self.loaded.lexicon)
        if not self.text.sentences:
            raise InvalidInputError("the chapter holds no sentence (only headings and scene breaks)")
        self.number, self.replaces = _chapter_number(wr, head, self.text, number)
        self.title = title.strip() if title is not None and title.strip() else self.text.title
        self.name = diffuser or default_name(wr)
        self.diffuser: Diffuser = get_diffuser(self.name, wr)
        self.at = at
        last = self.text.sentences[-1].number
        self.added: dict[int, list[Op]] = {}
        for a in added:
            if not 1 <= a.sentence <= last:
                raise InvalidInputError(
                    f"a change added at sentence {a.sentence}: the chapter has sentences 1 to {last}",
                    hint="{0} numbers them", steps=[_REVIEW])
            self.added.setdefault(a.sentence, []).append(a.op)
        self.added_list = list(added)
        if for_event:
            from narrative.engine.adopt import unadopted

            wr.require_branch()
            edits = scan_for_event(wr, head.tree)
            edits.raise_problems()
            if (buried := unadopted(wr, head)) is not None:
                raise buried
        else:
            edits = scan_for_reader(wr, head.tree)
        self.edits = edits
        self.review_id = _review_id(self.text, self.number, self.title, self.name, head.id,
                                    edits, self.added_list, at)
        self.chapter_id = new_event_id()

    def reading(self) -> Reading:
        """A fresh copy of the world to read the chapter on (the hand edits copied, not shared),
        as the chapter's own commit leaves it: the hand edits in, the relations they would
        leave dangling dropped."""
        import dataclasses

        edits = dataclasses.replace(self.edits, edits=dict(self.edits.edits))
        reading = Reading(self.wr, self.head.id, self.head.tree, edits, self.loaded, self.diffuser)
        if self.edits.edits:
            opening, _ = self.opening()
            for node_id, node in opening.nodes.items():
                reading.view.lay(node_id, node)
        return reading

    def opening(self) -> tuple[Draft, WorldView]:
        """The chapter's own commit as a draft: the hand edits, what they leave dangling
        dropped, nothing ended (no event of the story)."""
        from narrative.store import WorldView

        start = WorldView(self.wr, self.head.tree, self.edits)
        draft = Draft(start, self.chapter_id)
        draft.finish(close_scene=False, lifecycles=False)
        return draft, start

    def read(self, deadline: Deadline, saved: dict[int, Reviewed] | None = None,
             checks: bool = True) -> _Read:
        """Every sentence proposed in order, each laid over the copy before the next."""
        reading = self.reading()
        sentences: list[SentenceReview] = []
        changes: list[ProposedChange] = []
        proposals: dict[int, Reviewed] = {}
        warnings: list[str] = []
        named = False
        all_sentences = self.text.sentences
        budget = getattr(self.diffuser, "brief_budget", None)
        for s in all_sentences:
            deadline.check(s.number - 1, len(all_sentences))
            # a kept review's sentence that proposed nothing proposes nothing now either
            given = saved.get(s.number, Reviewed()) if saved is not None else None
            brief = None
            if given is None and isinstance(budget, int) and budget > 0:
                from narrative.engine.brief import brief as make_brief

                brief = make_brief(self.wr, s.text, budget=budget, view=reading.view,
                                   include_failed=False).to_json()
            step = reading.propose(s.number, s.text, given=given, checks=checks, brief=brief)
            named = named or step.named
            review = SentenceReview(s, findings=step.findings, remarks=step.notes)
            sentences.append(review)
            proposal = step.proposal
            if proposal is not None and (proposal.delta.ops or proposal.held
                                         or proposal.delta.close_scene):
                proposals[s.number] = proposal
            ops = step.ops
            extra = self.added.get(s.number, [])
            review.added = list(extra)
            if proposal is not None:
                review.held = [_held(h, s.number) for h in proposal.held]
                review.notes = list(proposal.notes)
            close = step.close_scene
            if not ops and not extra and not close:
                reading.done(s.text)
                continue
            draft = reading.draft([*ops, *extra], close, "chapter", proposed=len(ops))
            if draft.problems:
                if extra:
                    raise InvalidInputError(
                        f"sentence {s.number}: the changes added there are not valid: "
                        f"{draft.problems[0]}", details=draft.problems,
                        hint="fix the --set or --relate for that sentence; nothing was changed")
                warnings.append(f"sentence {s.number}: left out what it would change: "
                                f"{draft.problems[0]}")
                reading.done(s.text)
                continue
            diffusions = draft.diffusions()
            owned, rest = _attribute([*ops, *extra], diffusions)
            origins = proposal.origins if proposal is not None else []
            for i, op in enumerate(ops):
                if not owned[i]:
                    continue  # it changes nothing here: already so
                origin = next((o for o in origins if o.op == op), None)
                n = len(changes) + 1
                changes.append(ProposedChange(
                    n, s.number, s.scene, op, owned[i],
                    origin.rule if origin else None,
                    origin.source if origin else self.name,
                    origin.words if origin else s.text))
                review.changes.append(n)
            if close:
                n = len(changes) + 1
                ended = [c for c in rest if c.field == "" and not c.has_new]
                changes.append(ProposedChange(n, s.number, s.scene, None, ended, None, self.name,
                                              s.text))
                review.changes.append(n)
                rest = [c for c in rest if c not in ended]
            review.effects = rest
            review.expired = dict(draft.expired)
            reading.lay(s.number, draft.nodes, diffusions)
            reading.done(s.text)
        if not named:
            warnings.append("no sentence names a node of this world: is the chapter in the "
                            "world's language, and are its people and places nodes?")
        return _Read(sentences, changes, proposals, warnings, named)

    def review(self, read: _Read) -> ChapterReview:
        out = ChapterReview(
            number=self.number, title=self.title, language=self.text.language,
            digest=_digest(self.text.text), head=self.head.id, diffuser=self.name,
            scenes=[sc.to_json() for sc in self.text.scenes], sentences=read.sentences,
            changes=read.changes, review_id=self.review_id, text=self.text.text,
            edits=len(self.edits.edits), warnings=list(read.warnings), replaces=self.replaces)
        if self.replaces is not None:
            out.warnings.insert(0, f"chapter {self.number} is on the story line already "
                                   f"({_named(self.replaces)}): narr reset --chapter "
                                   f"{self.number} first to record it again")
        return out

    def saved(self) -> dict[int, Reviewed] | None:
        """The proposals of this very review, kept from a run of a model (whose answers
        differ from run to run); the rules read the same words the same way, so they read
        again."""
        if self.name == "rules":
            return None
        kept = load_review(self.wr, self.review_id)
        if kept is None:
            return None
        try:
            return {int(n): Reviewed.model_validate(p) for n, p in kept["proposals"].items()}
        except (KeyError, TypeError, ValueError):
            return None

    def keep(self, read: _Read) -> None:
        if self.name == "rules":
            return
        save_review(self.wr, self.review_id, {"proposals": {
            str(n): p.model_dump(mode="json") for n, p in read.proposals.items()}})


def _named(chapter: dict[str, Any]) -> str:
    named = chapter_heading(int(chapter["number"]), chapter.get("title"),
                            str(chapter.get("language") or "en"))
    return f"{named}, {str(chapter['commit'])[:10]}"


def _deadline(budget: float | None) -> Deadline:
    return Deadline(budget, "the chapter's review",
                    "give it more time (--budget SECONDS) or split the chapter")


def review(wr: WorldRepo, text: str, *, number: int | None = None, title: str | None = None,
           diffuser: str | None = None, added: Sequence[AddedChange] = (), at: str | None = None,
           budget: float | None = DEFAULT_BUDGET) -> ChapterReview:
    """Read chapter ``text`` on the world (HEAD with the hand edits) and number every change
    it proposes; write nothing (the review is kept when a model made it). ``number`` and
    ``title`` default to what its heading says (the number: the next on the line);
    ``diffuser`` to the world's; ``added`` are changes the writer adds at a sentence."""
    chapter = _Chapter(wr, text, number=number, title=title, diffuser=diffuser, added=added,
                       at=at, for_event=False)
    read = chapter.read(_deadline(budget))
    chapter.keep(read)
    return chapter.review(read)


def record(wr: WorldRepo, text: str, *, accept: Accept = "all", reject: Iterable[int] = (),
           added: Sequence[AddedChange] = (), number: int | None = None, title: str | None = None,
           diffuser: str | None = None, at: str | None = None, key: str | None = None,
           budget: float | None = DEFAULT_BUDGET, when: datetime | None = None) -> ChapterResult:
    """Record chapter ``text`` as one unit with the changes ``accept``ed (``"all"``, or their
    numbers in the review) but those in ``reject``, and the ``added`` ones.

    All of it or nothing: on an error nothing changes and the draft and decisions are kept
    for :func:`retry`. ``key``: a chapter recorded with the same key on this story line is
    not recorded again (the answer says ``already``)."""
    from narrative.store import writing

    if key is not None and (not key.strip() or len(key) > 200):
        raise InvalidInputError("an idempotency key is 1 to 200 characters")
    reject = set(reject)
    accept_list: Literal["all"] | list[int] = "all" if accept == "all" else sorted(set(accept))
    the_key = key or str(uuid.uuid4())
    pending = {"text": text, "number": number, "title": title, "diffuser": diffuser, "at": at,
               "key": the_key, "accept": accept_list, "reject": sorted(reject),
               "added": [a.to_json() for a in added], "budget": budget}
    check_text(text)
    with writing(wr) as recovered:
        found = _recorded(wr, the_key)
        if found is not None:
            drop_pending(wr)
            found.warnings[:0] = recovered
            return found
        save_pending(wr, pending)
        try:
            chapter = _Chapter(wr, text, number=number, title=title, diffuser=diffuser,
                               added=added, at=at, for_event=True)
            if chapter.replaces is not None:
                raise ConflictError(
                    f"chapter {chapter.number} is on the story line already "
                    f"({_named(chapter.replaces)})",
                    hint="{0} rewinds to before it (its events kept as a chain), then record "
                         "it again; or give this one another number",
                    steps=[Step("reset", {"chapter": chapter.number})])
            result = _record(chapter, accept_list, reject, budget, when, the_key)
        except CalledOff:
            drop_pending(wr)  # nobody is there to retry it
            raise
        except NarrError as exc:
            if not getattr(exc, "recorded", False):
                exc.add_hint("the chapter and your decisions are kept: {0} records it once "
                             "the problem is fixed", Step("chapter", cli="narr chapter --retry"))
            raise
        drop_pending(wr)
        result.warnings[:0] = recovered
        return result


def retry(wr: WorldRepo, *, when: datetime | None = None,
          budget: float | None = None) -> ChapterResult:
    """Record the kept chapter (one whose recording failed or was cut short), as it was
    decided; a chapter that was recorded after all is found, not recorded twice."""
    kept = load_pending(wr)
    if kept is None:
        raise NothingToDoError("no chapter is waiting to be recorded")
    try:
        added = [AddedChange(int(a["sentence"]), _op(a["op"])) for a in kept.get("added") or []]
        accept = kept.get("accept", "all")
        return record(wr, str(kept["text"]), accept="all" if accept == "all" else list(accept),
                      reject=list(kept.get("reject") or []), added=added,
                      number=kept.get("number"), title=kept.get("title"),
                      diffuser=kept.get("diffuser"), at=kept.get("at"), key=kept.get("key"),
                      budget=budget if budget is not None else kept.get("budget", DEFAULT_BUDGET),
                      when=when)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"the kept chapter cannot be read ({exc})",
                                hint="record it again from its file") from None


def _op(data: Any) -> Op:
    from pydantic import TypeAdapter

    op: Op = TypeAdapter(Op).validate_python(data)
    return op


def _recorded(wr: WorldRepo, key: str) -> ChapterResult | None:
    """The chapter recorded with ``key`` on the current story line, if there is one."""
    from narrative.engine.chapters import chapter_info

    head = wr.head_commit()
    if head is None:
        return None
    wr.catalog.graph.follow_chain(head)
    for commit in wr.catalog.chapters.with_key(key):
        if is_ancestor(wr, commit, head.id):
            info = chapter_info(wr, commit, head.id)
            return ChapterResult(None, info, [], head=head.id, already=True,
                                 warnings=[f"this chapter was recorded already with this key "
                                           f"({_named(info)}): nothing was written again"])
    return None


def _record(chapter: _Chapter, accept: Literal["all"] | list[int], reject: set[int],
            budget: float | None, when: datetime | None, key: str) -> ChapterResult:
    from narrative.engine.event import iso, now_utc
    from narrative.store import seal_chain

    deadline = _deadline(budget)
    saved = chapter.saved()
    read = chapter.read(deadline, saved=saved, checks=saved is None)
    if not read.named and not chapter.added:
        raise InvalidInputError(
            "no sentence of the chapter names a node of this world, so it changes nothing",
            hint="is it in the world's language, and are its people and places nodes ({0})? "
                 "nothing was changed", steps=[Step("new_node", cli="narr new")])
    review = chapter.review(read)
    accepted, rejected = _decide(review, accept, reject)
    deadline.check(len(chapter.text.sentences), len(chapter.text.sentences))
    by_sentence: dict[int, list[ProposedChange]] = {}
    for c in read.changes:
        by_sentence.setdefault(c.sentence, []).append(c)

    when = when or now_utc()
    stamp = iso(when)
    chapter_id = chapter.chapter_id
    last = last_record(chapter.head)
    parent = last.id if last is not None else None
    reading = chapter.reading()  # the copy the recorded sentences are laid on
    steps: list[tuple[dict[str, NodeDict | None], EventRecord]] = []
    events: list[dict[str, Any]] = []
    all_changes: list[Change] = []
    touched: list[str] = []
    for s in chapter.text.sentences:
        numbered = by_sentence.get(s.number, [])
        ops = [c.op for c in numbered if c.n in accepted and c.op is not None]
        close = any(c.n in accepted and c.op is None for c in numbered)
        extra = chapter.added.get(s.number, [])
        if not ops and not extra and not close:
            continue
        event_id = new_event_id()
        draft = reading.draft([*ops, *extra], close, event_id, proposed=len(ops))
        if draft.problems:
            names = [str(c.n) for c in numbered if c.n in accepted and c.op is not None]
            gone_for = sorted(rejected & {c.n for c in read.changes if c.sentence < s.number})
            raise InvalidInputError(
                f"sentence {s.number} cannot be recorded as reviewed (changes "
                f"{', '.join(names) or 'added by hand'}): {draft.problems[0]}",
                details=draft.problems,
                hint=(f"it may need a change you rejected ({', '.join(map(str, gone_for))}); "
                      if gone_for else "") + "nothing was changed")
        diffusions = draft.diffusions()
        if not diffusions:
            continue  # with what was rejected before it, it changes nothing now
        record = EventRecord(
            id=event_id, parent=parent, content=s.text, diffusions=diffusions,
            created_at=stamp, close_scene=close, diffuser=chapter.name,
            explicit=list(extra),
            in_chapter=InChapter(chapter=chapter_id, number=chapter.number,
                                 sentence=s.number, scene=s.scene))
        steps.append((dict(draft.nodes), record))
        events.append({"id": event_id, "sentence": s.number, "scene": s.scene,
                       "content": s.text, "changes": len(diffusions)})
        all_changes.extend(diffusions)
        touched.extend(ch.target for ch in diffusions)
        parent = event_id
        reading.lay(s.number, draft.nodes, diffusions)

    warnings = list(review.warnings)
    summary = _summary(chapter, reading, all_changes, warnings)
    # the chapter's own commit: the hand edits the world holds, the relations they leave
    # dangling dropped (as an event would), nothing else
    opening, start = chapter.opening()
    problems = opening.problems + opening.edit_problems
    if problems:
        raise InvalidWorldError(problems[0], details=problems,
                                hint="fix the file ({0} lists every problem); nothing "
                                     "was changed", steps=[Step("status")])
    edit_changes: list[Change] = []
    for node_id, e in chapter.edits.edits.items():
        edit_changes.extend(fields.node_changes(node_id, e.old, e.new))
    data = ChapterData(
        number=chapter.number, title=chapter.title, text=chapter.text.text,
        language=chapter.text.language,
        scenes=[Scene.model_validate(sc.to_json()) for sc in chapter.text.scenes],
        sentences=len(chapter.text.sentences), events=len(steps), summary=summary,
        nodes=sorted(set(touched)), digest=review.digest, key=key)
    heading = chapter_heading(chapter.number, chapter.title, chapter.text.language)
    opening_record = EventRecord(
        kind="chapter", id=chapter_id, parent=last.id if last is not None else None,
        content=heading, diffusions=opening.diffusions(), edits=edit_changes,
        timestamp=chapter.at, created_at=stamp, diffuser=chapter.name, chapter=data)
    if steps:
        steps[0][1].parent = chapter_id
    finals = {**{i: e.new for i, e in chapter.edits.edits.items()}, **opening.nodes}
    sealed = seal_chain(start, [(finals, opening_record), *steps], when=when,
                        message=f"narr chapter: {heading}")
    for event, commit in zip(events, sealed.commits[1:], strict=True):
        event["commit"] = commit
    info = {"id": chapter_id, "commit": sealed.commits[0], "number": chapter.number,
            "title": chapter.title, "heading": heading, "summary": summary,
            "language": chapter.text.language, "sentences": len(chapter.text.sentences),
            "scenes": len(chapter.text.scenes), "events": len(steps),
            "first": events[0] if events else None, "last": events[-1] if events else None,
            "key": data.key, "line": None}
    for path in sealed.kept:
        warnings.append(f"{path} changed while the chapter was being recorded; your version "
                        "is kept as a hand edit")
    return ChapterResult(review, info, events, sorted(accepted), sorted(rejected),
                         head=sealed.commit, warnings=warnings, kept_paths=sealed.kept)


def _summary(chapter: _Chapter, reading: Reading, changes: list[Change],
             warnings: list[str]) -> str:
    from narrative.engine import summary

    view = reading.view

    def node(node_id: str) -> dict[str, Any] | None:
        found = view.get(node_id)
        if found is None:
            for ch in reversed(changes):
                if ch.target == node_id and ch.field == "" and isinstance(ch.old, dict):
                    return ch.old
            return None
        return dict(found)

    text = summary.offline(changes, node, chapter.text.language)
    if chapter.name == "llm":
        try:
            return summary.by_model(chapter.text.text, text, chapter.text.language)
        except NarrError as exc:
            warnings.append(f"the model did not write the chapter's summary ({exc.message}); "
                            "it is made from the changes")
    return text
