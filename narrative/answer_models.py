"""The shapes of the operations' answers, typed: each key, its type, and which keys may be left out.

These TypedDicts describe the JSON that :data:`narrative.api.OPERATIONS` answer (the same the
CLI's ``--json`` prints): :func:`json_schemas` turns them into ``schemas/answers/*.schema.json``
(``python -m narrative.schemas``), a test validates real answers against those files, and an
answer with a key no type here names fails that test. Values the world itself decides (a node's
state, an op's value) are ``Any``; containers whose members are another module's free-form
record (a hand edit, a finding) are typed as JSON objects.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict

from narrative.model import Node, Op

_CLOSED = ConfigDict(extra="forbid")
Obj = dict[str, Any]


@with_config(_CLOSED)
class Change(TypedDict):
    """A field that changed: ``old_value`` absent when it was made, ``new_value`` when removed;
    ``side`` in a merge (ours, theirs, resolved), ``path`` the file of a hand edit."""

    target: str
    field: str
    old_value: NotRequired[Any]
    new_value: NotRequired[Any]
    side: NotRequired[str]
    path: NotRequired[str]


@with_config(_CLOSED)
class EventRef(TypedDict):
    """An event as other answers name it."""

    commit: str
    id: str | None
    kind: str
    content: str
    timestamp: str | None


@with_config(_CLOSED)
class SceneRecord(TypedDict):
    """A scene of a chapter: its place in the chapter's text and its sentences."""

    number: int
    title: str | None
    start: int
    end: int
    first_sentence: int
    sentences: int


@with_config(_CLOSED)
class ChapterRecord(TypedDict):
    """A chapter's own record (its commit's): the text, the scenes, the summary."""

    number: int
    title: str | None
    text: str
    language: str
    scenes: list[SceneRecord]
    sentences: int
    events: int
    summary: str
    nodes: list[str]
    digest: str
    key: str | None


@with_config(_CLOSED)
class InChapterRef(TypedDict):
    """Where an event told in a chapter stands in it."""

    chapter: str
    number: int
    sentence: int
    scene: int


@with_config(_CLOSED)
class StoredRecord(TypedDict):
    """An event's record as its commit holds it: what every event answer carries."""

    narr: int
    kind: str
    id: str
    parent: str | None
    content: str
    diffusions: list[Change]
    edits: list[Change]
    narrative_text: str | None
    timestamp: str | None
    created_at: str
    close_scene: bool
    diffuser: str | None
    causes: list[str]
    reverts: str | None
    replay_of: str | None
    merged: str | None
    explicit: list[Op]
    joined: NotRequired[dict[str, str]]
    chapter: NotRequired[ChapterRecord]
    in_chapter: NotRequired[InChapterRef]


@with_config(_CLOSED)
class Record(StoredRecord):
    """An event's record, as ``narr show`` gives it: the stored record and its commit's id."""

    commit: str | None


@with_config(_CLOSED)
class PlainCommit(TypedDict):
    """A commit made without narr (plain git) on the story line: no record, its message."""

    commit: str
    kind: str
    id: None
    content: str
    diffusions: list[Change]
    edits: list[Change]


@with_config(_CLOSED)
class Proposal(TypedDict):
    """What the diffuser proposed and what became of each op."""

    diffuser: str | None
    ops: list[Op]
    notes: list[str]
    held: list[Obj]
    proposed: list[Obj]  # as the diffuser proposed them, valid or not
    arbitration: list[Obj]
    refused: list[Obj]


@with_config(_CLOSED)
class Contradicted(TypedDict):
    """One of the user's own changes that the world contradicts: written (the writer's word
    wins), and named with the fact that contradicts it."""

    kind: Literal["contradicted"]
    where: str
    change: str
    node: str
    field: str
    value: NotRequired[Any]
    wanted: str
    fact: str


@with_config(_CLOSED)
class EventAnswer(Record):
    """A recorded (or, with ``dry_run``, a shown) event; ``proposal`` when a diffuser ran;
    ``contradicted`` the user's own changes that the world contradicts."""

    dry_run: bool
    created: list[str]
    expired: dict[str, str]
    warnings: list[str]
    contradicted: list[Contradicted]
    proposal: NotRequired[Proposal]


class _Versioned(TypedDict):
    schema: str


@with_config(_CLOSED)
class StatusAnswer(_Versioned):
    branch: str | None
    head: Record | PlainCommit | None
    edits: list[Change]
    problems: list[str]
    outside_world: list[str]
    failed_events: list[Obj]
    reformat: list[str]
    warnings: list[str]
    story_time: Obj | None


@with_config(_CLOSED)
class NodeRow(TypedDict):
    id: str
    layer: str
    kind: str
    name: str
    lifecycle: str
    edited: str | None


@with_config(_CLOSED)
class ListNodesAnswer(_Versioned):
    items: list[NodeRow]


@with_config(_CLOSED)
class NodeFileAnswer(_Versioned):
    """A node's file: where it is and what it holds (get_node, edit_node)."""

    path: str
    node: Node


@with_config(_CLOSED)
class LogAnswer(_Versioned):
    items: list[Record | PlainCommit]


@with_config(_CLOSED)
class ShowRecord(_Versioned, Record):
    pass


@with_config(_CLOSED)
class ShowCommit(_Versioned, PlainCommit):
    pass


ShowAnswer = ShowRecord | ShowCommit


@with_config(_CLOSED)
class Branch(TypedDict):
    name: str
    current: bool
    commit: str
    content: str


@with_config(_CLOSED)
class BranchesAnswer(_Versioned):
    items: list[Branch]


@with_config(_CLOSED)
class ChainEnd(TypedDict):
    commit: str
    id: str | None
    content: str
    created_at: str | None


@with_config(_CLOSED)
class Chain(TypedDict):
    n: int
    name: str
    key: str
    ref: str
    remote: str | None
    tip: str
    tip_event: str | None
    length: int
    first: ChainEnd | None
    last: ChainEnd | None
    abandoned_at: str | None
    base: str | None
    replayed: bool
    replayed_events: int


@with_config(_CLOSED)
class ChainsAnswer(_Versioned):
    items: list[Chain]


@with_config(_CLOSED)
class WhyChange(Change):
    by: str


@with_config(_CLOSED)
class ToldAt(TypedDict):
    """The chapter an event was told in, and its sentence there."""

    number: int
    sentence: int
    scene: int
    id: str
    commit: str | None
    heading: str


@with_config(_CLOSED)
class WhyAnswer(_Versioned):
    """``value`` absent when the field is; ``change`` and the values it wrote when an event set it."""

    node: str
    field: str
    source: str
    value: NotRequired[Any]
    event: EventRef | None
    change: NotRequired[WhyChange]
    old_value: NotRequired[Any]
    new_value: NotRequired[Any]
    uncommitted: Obj | None
    ancestry: list[Obj]
    merged_from: EventRef | None
    ended: Obj | None
    chapter: ToldAt | None


@with_config(_CLOSED)
class HistoryEvent(EventRef):
    mentioned: bool
    changes: list[Obj]
    chapter: ToldAt | None


@with_config(_CLOSED)
class HistoryAnswer(_Versioned):
    node: str
    name: str | None
    exists: bool
    at_genesis: bool
    ended: Obj | None
    events: list[HistoryEvent]


@with_config(_CLOSED)
class SearchAnswer(_Versioned):
    query: str
    mode: str
    hits: list[Obj]


@with_config(_CLOSED)
class BriefEvent(TypedDict):
    """An event a brief shows; ``content`` None and ``withheld`` when the point of view does not
    know its words."""

    id: str | None
    commit: str
    content: str | None
    withheld: NotRequired[bool]


@with_config(_CLOSED)
class BriefHead(EventRef):
    withheld: NotRequired[bool]


@with_config(_CLOSED)
class BriefChapter(TypedDict):
    """The chapter a brief's summary item stands for."""

    number: int
    commit: str


@with_config(_CLOSED)
class BriefItem(TypedDict):
    """One line of the brief: the node or event it is about, or the fix of a health warning."""

    section: str
    reason: str
    text: str
    node: NotRequired[str]
    event: NotRequired[BriefEvent]
    fix: NotRequired[str | None]
    chapter: NotRequired[BriefChapter]


@with_config(_CLOSED)
class BriefAnswer(_Versioned):
    goal: str | None
    pov: str | None
    at: str | None
    budget: int
    used: int
    dropped: int
    head: BriefHead | None
    story_time: str | None
    focus: list[str]
    items: list[BriefItem]
    language: str


@with_config(_CLOSED)
class Thread(TypedDict):
    id: str
    name: str
    status: str
    payoff: str | None
    depends_on: list[str]
    waiting_on: list[str]
    concerns: list[str]
    last_moved: EventRef | None
    events_since: int
    edited: bool


@with_config(_CLOSED)
class ThreadsAnswer(_Versioned):
    head: EventRef | None
    threads: list[Thread]
    resolved_left_out: int
    secrets: list[Obj]


@with_config(_CLOSED)
class AuditAnswer(_Versioned):
    at: str | None
    commit: str | None
    sentences: int
    ok: bool
    findings: list[Obj]
    notes: list[Obj]
    warnings: list[str]


@with_config(_CLOSED)
class VersionedEvent(_Versioned, EventAnswer):
    pass


@with_config(_CLOSED)
class Undone(TypedDict):
    commit: str
    id: str | None
    content: str


# "from" is a keyword: the functional form
ResetAnswer = TypedDict("ResetAnswer", {
    "schema": str, "branch": str | None, "from": str, "to": str, "event": Obj, "warnings": list[str],
    "undone": list[Undone], "restored_edits": list[Obj], "carried_edits": list[Obj],
    "collisions": list[Obj], "set_aside": str | None, "abandoned": str | None,
    "kept_paths": list[str]})
with_config(_CLOSED)(ResetAnswer)


@with_config(_CLOSED)
class ReplayConflict(TypedDict):
    message: str
    conflicts: list[Obj]


@with_config(_CLOSED)
class ReplayAnswer(_Versioned):
    """``conflict`` when the replay stopped at one."""

    chain: str
    total: int
    fast_forward: bool
    head: str | None
    skipped: list[Obj]
    warnings: list[str]
    events: list[EventAnswer]
    different: list[Obj]
    conflict: NotRequired[ReplayConflict]


@with_config(_CLOSED)
class ProposedChangeJson(TypedDict):
    """One numbered change of a chapter's review: the op (null: the sentence closes the scene),
    what it does (old -> new), and the rule and words that made it."""

    n: int
    sentence: int
    scene: int
    kind: str
    op: Op | None
    changes: list[Change]
    rule: str | None
    source: str | None
    words: str


@with_config(_CLOSED)
class SentenceReviewJson(TypedDict):
    """A sentence of a chapter's review: where it lies, its numbered changes, those added by
    hand, what follows from them, what was held back and what contradicts the world."""

    number: int
    scene: int
    start: int
    end: int
    text: str
    changes: list[int]
    added: list[Op]
    effects: list[Change]
    expired: dict[str, str]
    held: list[Obj]
    notes: list[str]
    findings: list[Obj]
    remarks: list[Obj]


@with_config(_CLOSED)
class ChapterReviewJson(TypedDict):
    """A chapter read on the world, nothing written."""

    number: int
    title: str | None
    language: str
    heading: str
    digest: str
    head: str
    diffuser: str | None
    review: str
    edits: int
    scenes: list[SceneRecord]
    sentences: list[SentenceReviewJson]
    changes: list[ProposedChangeJson]
    findings: list[Obj]
    held: list[Obj]
    warnings: list[str]
    replaces: Obj | None


@with_config(_CLOSED)
class ToldEvent(TypedDict):
    """An event a chapter was recorded as."""

    id: str
    commit: NotRequired[str]
    sentence: int
    scene: int
    content: str
    changes: int


class _ChapterShown(TypedDict):
    """What every answer says of a chapter: its own commit and record's number, title, summary."""

    id: str
    commit: str
    number: int
    title: str | None
    heading: str
    summary: str
    language: str
    sentences: int
    events: int
    key: str | None
    line: str | None


@with_config(_CLOSED)
class ChapterListed(_ChapterShown):
    """A chapter as a list shows it: ``events_on_line`` those still on the story line, ``line``
    the branch a merge brought it from (null: the line's own)."""

    events_on_line: int
    first: Obj | None
    last: Obj | None


@with_config(_CLOSED)
class ChapterRecorded(_ChapterShown):
    """A chapter just recorded: its own commit, the events it became."""

    scenes: int
    first: ToldEvent | None
    last: ToldEvent | None


@with_config(_CLOSED)
class ChapterAnswer(_Versioned):
    """A chapter reviewed (``dry_run``: ``chapter`` null, nothing written) or recorded as one
    unit (``already``: found recorded with the same key, nothing written again)."""

    dry_run: bool
    chapter: ChapterRecorded | ChapterListed | None
    events: list[ToldEvent]
    accepted: list[int]
    rejected: list[int]
    head: str | None
    already: bool
    warnings: list[str]
    kept_paths: list[str]
    review: ChapterReviewJson | None


@with_config(_CLOSED)
class ChaptersAnswer(_Versioned):
    """``narr log --chapters``: the chapters, newest first."""

    items: list[ChapterListed]


# --- answers only the CLI gives --------------------------------------------------------------


@with_config(_CLOSED)
class ErrorAnswer(_Versioned):
    """Every failure, on every transport: ``type`` the error's class (``Unauthorized`` and
    ``InternalError`` when no narr error stands behind it, their ``exit_code`` null);
    ``conflicts`` those a merge, a replay or a pull stopped at."""

    error: str
    type: str
    exit_code: int | None
    details: list[str]
    hint: str | None
    conflicts: NotRequired[list[Obj]]


@with_config(_CLOSED)
class InitAnswer(_Versioned):
    root: str
    commit: str
    id: str
    nodes: int
    layout: str


@with_config(_CLOSED)
class CheckProblem(TypedDict):
    """``fix``: the narr commands that repair it, in order."""

    commit: str | None
    event: str | None
    content: str | None
    problem: str
    fix: list[str]


@with_config(_CLOSED)
class CheckAnswer(_Versioned):
    """``since``: the verified tip the events were checked from (null: all of them)."""

    ok: bool
    events: int
    commits: int
    since: str | None
    checked_events: int
    nodes: int
    problems: list[CheckProblem]
    worktree_problems: list[str]
    warnings: list[str]


@with_config(_CLOSED)
class DoctorFinding(TypedDict):
    name: str
    status: Literal["ok", "warning", "problem", "skipped"]
    found: str | None
    problem: str | None
    fix: str | None
    kind: str | None
    exit_code: int


@with_config(_CLOSED)
class DoctorAnswer(_Versioned):
    ok: bool
    exit_code: int
    path: str
    world: str | None
    findings: list[DoctorFinding]


@with_config(_CLOSED)
class NewAnswer(_Versioned):
    """A node ``narr new`` made: ``path`` its file, relative to the world's root."""

    id: str
    path: str
    name: str
    layer: str
    kind: str
    aliases: list[str]
    warnings: list[str]


@with_config(_CLOSED)
class PathAnswer(_Versioned):
    id: str
    path: str


@with_config(_CLOSED)
class GetValueAnswer(_Versioned):
    node: str
    field: str
    value: Any


@with_config(_CLOSED)
class BranchCreatedAnswer(_Versioned):
    name: str
    commit: str
    content: str


@with_config(_CLOSED)
class BranchDeletedAnswer(_Versioned):
    """``kept_as``: the ref its events stay under when no other branch has them."""

    name: str
    commit: str
    kept_as: str | None


@with_config(_CLOSED)
class SwitchAnswer(_Versioned):
    """``set_aside``: where hand edits the switch moved past were kept; ``tracking``: the
    remote branch a new branch was made from."""

    branch: str
    commit: str
    content: str
    set_aside: str | None
    warnings: list[str]
    tracking: str | None


@with_config(_CLOSED)
class FailedItem(TypedDict):
    """An event narr could not make, its words kept: ``unread`` the change flags as typed
    when they could not be read; ``raw_reply`` what a diffuser answered that was refused."""

    n: int
    key: str
    saved_at: str
    content: str
    error: str
    details: list[str]
    diffuser: str | None
    raw_reply: str | None
    unread: list[str]


@with_config(_CLOSED)
class FailedAnswer(_Versioned):
    items: list[FailedItem]


@with_config(_CLOSED)
class SetAsideItem(TypedDict):
    """Hand edits a reset or a switch set aside: ``remote`` set when they came from one;
    ``raw_files`` those whose text is not a node; ``restored_at`` when they were put back."""

    n: int
    remote: str | None
    ref: str
    commit: str
    created_at: str | None
    reason: str | None
    head: str | None
    paths: list[str]
    changes: list[Change]
    raw_files: list[str]
    restored_at: str | None


@with_config(_CLOSED)
class EditsAnswer(_Versioned):
    items: list[SetAsideItem]


@with_config(_CLOSED)
class GcAnswer(_Versioned):
    bytes_before: int
    bytes_after: int
    loose_before: int
    loose_after: int


@with_config(_CLOSED)
class MergeOutcome(TypedDict):
    """A merge as :class:`MergeAnswer` tells it, without its ``schema`` (a pull's ``merge``)."""

    branch: str
    commit: str | None
    fast_forward: bool
    warnings: list[str]
    joined: list[dict[str, str]]
    kept_edits: list[str]
    record: StoredRecord | None


@with_config(_CLOSED)
class MergeAnswer(_Versioned, MergeOutcome):
    """``record`` the merge event's, or on a fast-forward the new tip's (null when that is
    a plain commit); ``joined`` the nodes made on both
    sides that became one; ``kept_edits`` nodes whose hand edits stay uncommitted."""


@with_config(_CLOSED)
class EditRestoredAnswer(_Versioned):
    """``set_aside``: where the current edits went when the restored ones won a collision."""

    ref: str
    changes: list[Change]
    collisions: list[Obj]
    paths: list[str]
    set_aside: str | None
    warnings: list[str]


@with_config(_CLOSED)
class EditDroppedAnswer(_Versioned):
    """``kept_as``: the abandoned chain made to keep the events only these edits held."""

    dropped: str
    kept_as: str | None


@with_config(_CLOSED)
class FailedSummary(TypedDict):
    key: str
    saved_at: str
    content: str
    error: str


@with_config(_CLOSED)
class FailedDroppedAnswer(_Versioned):
    dropped: FailedSummary


@with_config(_CLOSED)
class ChainDroppedAnswer(_Versioned):
    """``lost``: the events no other ref holds, gone with the chain."""

    dropped: str
    ref: str
    tip: str
    lost: list[Undone]


@with_config(_CLOSED)
class ReflogEntry(TypedDict):
    n: int
    old: str
    new: str
    message: str
    when: str
    content: str


@with_config(_CLOSED)
class ReflogAnswer(_Versioned):
    items: list[ReflogEntry]


@with_config(_CLOSED)
class ImportAnswer(_Versioned):
    """What ``narr import`` read and did: ``commit``, ``id`` and ``content`` its event's (null on
    a dry run or when nothing changed), ``edits`` hand edits that event recorded (those waiting
    in the world, and what SillyTavern changed in a book or card narr exported); ``similar``
    names alike kept apart, ``missing`` links to notes that are nowhere; the lists of entries
    are the importer's own records."""

    commit: str | None
    id: str | None
    content: str | None
    dry_run: bool
    sources: list[Obj]
    created: list[Obj]
    existing: list[Obj]
    related: list[Obj]
    ambiguous: list[Obj]
    similar: list[Obj]
    missing: list[Obj]
    entries: list[Obj]
    skipped: list[Obj]
    warnings: list[str]
    edits: list[Change]


@with_config(_CLOSED)
class ExportWrittenAnswer(_Versioned):
    """An export written to a file (``-o``): ``what`` it holds, in words."""

    path: str
    what: str
    bytes: int


@with_config(_CLOSED)
class AdoptedCommit(TypedDict):
    commit: str
    subject: str


@with_config(_CLOSED)
class AdoptEvent(TypedDict):
    commit: str
    id: str | None
    content: str


# "from" is a keyword: the functional form
AdoptAnswer = TypedDict("AdoptAnswer", {
    "schema": str, "branch": str, "from": str, "to": str, "event": AdoptEvent,
    "adopted": list[AdoptedCommit], "kept_as": str, "world_paths": list[str],
    "other_paths": list[str], "warnings": list[str]})
"""Plain commits made hand edits again: the branch moved ``from`` the last of them ``to`` the
last event (``event``), the commits kept under ``kept_as``; ``world_paths`` are hand edits
now, ``other_paths`` uncommitted changes outside world/."""
with_config(_CLOSED)(AdoptAnswer)


@with_config(_CLOSED)
class Fetched(TypedDict):
    """How many of the remote writers' narr refs came, by kind."""

    abandoned: int
    edits: int
    adopted: int
    replayed: int


@with_config(_CLOSED)
class CloneAnswer(_Versioned):
    """``branch``, ``commit``: the clone's story line and its tip (null for a world with none);
    ``branches`` the remote's story lines; ``warnings`` links and re-encoding attributes found
    in what came, and records that could not be read."""

    path: str
    url: str
    remote: str
    branch: str | None
    commit: str | None
    content: str
    branches: list[str]
    fetched: Fetched
    events: int
    warnings: list[str]


@with_config(_CLOSED)
class RefusedRef(TypedDict):
    ref: str
    reason: str


@with_config(_CLOSED)
class PushAnswer(_Versioned):
    """``refused`` the narr refs the remote would not take; ``deleted`` one's own narr refs
    dropped here and so deleted there; ``edits`` whether set-aside edits were sent."""

    remote: str
    branch: str
    commit: str
    status: Literal["new", "updated", "up to date"]
    narr_refs: int
    refused: list[RefusedRef]
    upstream_set: bool
    edits: bool
    deleted: list[str]


@with_config(_CLOSED)
class PullAnswer(_Versioned):
    """``merge`` null when the story line was up to date already."""

    remote: str
    branch: str
    status: Literal["up to date", "fast-forward", "merged"]
    commit: str
    fetched: Fetched
    merge: MergeOutcome | None
    warnings: list[str]


@with_config(_CLOSED)
class RemoteBranch(TypedDict):
    """A remote's branch as last fetched; ``followed_by`` the local branch that follows it."""

    name: str
    remote: str
    commit: str
    content: str
    followed_by: str | None


@with_config(_CLOSED)
class RemoteBranchesAnswer(_Versioned):
    items: list[RemoteBranch]


@with_config(_CLOSED)
class MergeConflict(TypedDict):
    """A field both lines changed: ``base``, ``ours``, ``theirs`` absent where the field is;
    ``resolution`` the value chosen, absent when none is or when the choice is to leave the
    field out (``resolved`` says which)."""

    node: str
    field: str
    base: NotRequired[Any]
    ours: NotRequired[Any]
    theirs: NotRequired[Any]
    resolved: bool
    resolution: NotRequired[Any]


@with_config(_CLOSED)
class ConflictsAnswer(_Versioned):
    """The stopped merge (``ours``, ``theirs``, ``base`` its commits) and each conflict
    (conflicts, and resolve after a choice)."""

    branch: str
    ours: str
    theirs: str
    base: str
    conflicts: list[MergeConflict]
    unresolved: int


@with_config(_CLOSED)
class MergeAbortedAnswer(_Versioned):
    branch: str
    aborted: Literal[True]


@with_config(_CLOSED)
class GraphSize(TypedDict):
    nodes: int
    edges: int


@with_config(_CLOSED)
class GraphSizesAnswer(_Versioned):
    world: GraphSize
    events: GraphSize


@with_config(_CLOSED)
class GraphAnswer(_Versioned):
    """A graph exported: ``output`` the text of its ``format`` (json: networkx's node-link
    form, as text)."""

    graph: Literal["world", "events"]
    format: Literal["dot", "mermaid", "graphml", "json"]
    nodes: int
    edges: int
    output: str


@with_config(_CLOSED)
class Hop(TypedDict):
    """An edge walked: a relation by its ``type``, or a reference field (``field``) by its label."""

    type: str
    direction: Literal["forward", "backward"]
    field: NotRequired[str]


Step = TypedDict("Step", {"from": str, "to": str, "relations": list[Hop]})
"""One step of a chain, with every edge between its two nodes."""
with_config(_CLOSED)(Step)


@with_config(_CLOSED)
class ConnectAnswer(_Versioned):
    """The shortest chains between two nodes: ``length`` the steps of each (null: none)."""

    source: str
    target: str
    length: int | None
    paths: list[list[Step]]



@with_config(_CLOSED)
class CommitLine(TypedDict):
    commit: str
    content: str


@with_config(_CLOSED)
class BookEvent(TypedDict):
    """An event of the book: ``number`` its place among the events (reverts not counted),
    ``story_time`` the time in force, ``scene_break`` where a closed scene breaks, ``line``
    the branch a merge brought it from (null: the story line's own), ``chapter`` and
    ``sentence`` where it stands in the chapter it was told in."""

    number: int
    id: str | None
    commit: str
    content: str
    timestamp: str | None
    story_time: str | None
    narrative_text: str | None
    close_scene: bool
    scene_break: Literal["before", "after"] | None
    reverted_by: CommitLine | None
    line: str | None
    chapter: int | None
    sentence: int | None


@with_config(_CLOSED)
class BookChapter(TypedDict):
    """A chapter of the book, told by its own ``text``; ``at`` the index in ``events`` of
    the first event after it begins, ``events`` how many of them it was recorded as."""

    number: int
    id: str
    commit: str
    title: str | None
    heading: str
    summary: str
    timestamp: str | None
    story_time: str | None
    line: str | None
    events: int
    at: int
    text: str | None


@with_config(_CLOSED)
class BookMerge(TypedDict):
    commit: str
    id: str | None
    content: str


@with_config(_CLOSED)
class BookRevert(TypedDict):
    """An event that undoes an earlier one (``reverts``, its id): no chapter of its own."""

    commit: str
    id: str | None
    content: str
    reverts: str


StoryAnswer = TypedDict("StoryAnswer", {
    "schema": str, "world": str, "from": EventRef | None, "to": EventRef,
    "events": list[BookEvent], "chapters": list[BookChapter], "merges": list[BookMerge],
    "skipped": list[CommitLine], "reverts": list[BookRevert]})
"""The book: the events after ``from`` (null: from the beginning) up to ``to``, the chapters
that tell them and the merges that brought some; ``skipped`` the commits on the line that are
not events."""
with_config(_CLOSED)(StoryAnswer)


@with_config(_CLOSED)
class ReadAt(TypedDict):
    """The commit an export read."""

    commit: str
    id: str | None
    content: str
    timestamp: str | None


@with_config(_CLOSED)
class CodexAt(ReadAt):
    story_time: str | None


@with_config(_CLOSED)
class HandEditMark(TypedDict):
    id: str
    edit: Literal["new", "modified", "deleted"]


@with_config(_CLOSED)
class CodexRelation(TypedDict):
    type: str
    target: str
    name: str | None
    attrs: Obj


@with_config(_CLOSED)
class CodexIncoming(TypedDict):
    type: str
    source: str
    name: str | None
    attrs: Obj


@with_config(_CLOSED)
class CodexEntry(TypedDict):
    """A node of the bible, its relations out and in (each naming the other node);
    ``edited`` how a hand edit changed it, if one did."""

    id: str
    name: str
    layer: str
    kind: str
    aliases: list[str]
    lifecycle: str
    summary: str
    created_by_event: str | None
    tags: list[str]
    always_in_view: bool
    traits: Obj
    state: Obj
    sections: Obj
    extensions: Obj
    relations: list[CodexRelation]
    incoming: list[CodexIncoming]
    edited: Literal["new", "modified", "deleted"] | None


@with_config(_CLOSED)
class CodexAnswer(_Versioned):
    """The story bible: ``at`` the commit read (null in a world without one),
    ``hand_edits_included`` whether uncommitted edits are in it."""

    world: str
    at: CodexAt | None
    hand_edits_included: bool
    hand_edits: list[HandEditMark]
    nodes: list[CodexEntry]


@with_config(_CLOSED)
class VaultNote(TypedDict):
    id: str
    path: str


@with_config(_CLOSED)
class VaultAnswer(_Versioned):
    """An Obsidian vault written: each node's note (``path`` inside ``folder``), and the notes
    of the last export that no node has now, removed."""

    folder: str
    at: ReadAt | None
    notes: list[VaultNote]
    removed: list[str]


@with_config(_CLOSED)
class StudioAnswer(_Versioned):
    """The studio's address (with the world's token), its server, and whether a browser
    opened it."""

    url: str
    port: int
    pid: int
    opened: bool


@with_config(_CLOSED)
class Watcher(TypedDict):
    """The server's file watcher: ``trusted`` when its view can stand in for a walk."""

    running: bool
    trusted: bool
    pending_paths: int
    full_scans: int
    hinted_scans: int
    last_full_reason: str
    events: int


@with_config(_CLOSED)
class AutostartWait(TypedDict):
    """Automatic starts that failed in a row, and when the next command may try again (Unix
    times)."""

    failures: int
    failed_at: NotRequired[float]
    retry_at: float


@with_config(_CLOSED)
class ServerAnswer(_Versioned):
    """This world's server, every key always there: null what is not known. ``stopped`` true
    when ``--stop`` stopped one; ``state`` ``running``, or ``stopped`` by SIGSTOP or Ctrl-Z
    (commands run without it); what the server's record says (``pid`` to ``memory_mib``, its
    resident memory) when one runs, ``started_by`` what started it (``a narr command``,
    ``narr serve``, ``narr serve --detach``, ``narr studio``); ``requests`` to ``watcher``
    only when asked (``--status``), ``idle_s`` seconds since its last request; ``current``
    whether it runs this narr's code (null: not asked); ``autostart`` the failed automatic
    starts being waited out (null: none); ``autostart_off`` why none starts by itself (null:
    one does)."""

    running: bool
    stopped: bool
    state: Literal["running", "stopped"] | None
    pid: int | None
    process: str | None
    version: str | None
    socket: str | None
    root: str | None
    git_dir: str | None
    port: int | None
    host: str | None
    started: float | None
    auto: bool | None
    started_by: str | None
    idle_minutes: float | None
    memory_mib: float | None
    requests: int | None
    active: int | None
    idle_s: float | None
    exits_at: float | None
    watcher: Watcher | None
    current: bool | None
    autostart: AutostartWait | None
    autostart_off: str | None


# --- the studio's reads (narrative.serve.studio): the page's own, typed as the rest ----------


@with_config(_CLOSED)
class StudioNodeRow(TypedDict):
    """A node as the studio lists or draws it; ``degree`` (its neighbours) only when drawn,
    ``edited`` how a hand edit changed it (modified, new, deleted) or None."""

    id: str
    name: str
    layer: str
    kind: str
    lifecycle: str
    edited: str | None
    aliases: list[str]
    degree: NotRequired[int]
    cluster: NotRequired[str]


@with_config(_CLOSED)
class StudioEdge(TypedDict):
    """An edge drawn: a relation, or a reference field naming a node (``field`` its pointer)."""

    source: str
    target: str
    type: str
    kind: Literal["relation", "reference"]
    field: NotRequired[str]


@with_config(_CLOSED)
class StudioCluster(TypedDict):
    """Nodes drawn as one (``key`` ``layer:character``, ``kind:person``, ``place:ferry``),
    ``layer`` the one most of them are in."""

    key: str
    by: Literal["layer", "kind", "place"]
    label: str
    count: int
    layer: str


@with_config(_CLOSED)
class StudioClusterEdge(TypedDict):
    """How many relations go from ``source`` to ``target`` (a cluster's key or a node drawn)."""

    source: str
    target: str
    count: int


@with_config(_CLOSED)
class StudioGraph(TypedDict):
    nodes: list[StudioNodeRow]
    edges: list[StudioEdge]
    clusters: list[StudioCluster]
    cluster_edges: list[StudioClusterEdge]


@with_config(_CLOSED)
class StudioWorldAnswer(_Versioned):
    """The world cut for drawing (``/api/graph/world``): ``nodes`` those listed, ``graph`` those drawn."""

    at: str | None
    total: int
    matched: int
    nodes: list[StudioNodeRow]
    truncated: bool
    graph: StudioGraph
    focus: str | None
    depth: int
    facets: dict[str, dict[str, int]]
    group: Literal["layer", "kind", "place"] | None


@with_config(_CLOSED)
class StudioEvent(TypedDict):
    commit: str
    id: str | None
    seq: int | None
    kind: str
    content: str
    timestamp: str | None
    created_at: str | None
    close_scene: bool
    causes: int


@with_config(_CLOSED)
class StudioCause(TypedDict):
    source: str
    target: str
    label: str


@with_config(_CLOSED)
class StudioEventsAnswer(_Versioned):
    """The story line, newest first (``/api/graph/events``), its causal edges, chains and branches."""

    branch: str | None
    events: list[StudioEvent]
    total: int
    edges: list[StudioCause]
    chains: list[Chain]
    branches: list[Branch]


@with_config(_CLOSED)
class StudioLinesAnswer(_Versioned):
    """The story-line panel: ``merge`` the conflicts of a merge in progress (as ``narr conflicts``
    gives them), ``edited_files`` the hand edits a switch would set aside."""

    branch: str | None
    branches: list[Branch]
    set_aside: list[SetAsideItem]
    merge: Obj | None
    edited_files: int


@with_config(_CLOSED)
class StudioDiffusersAnswer(_Versioned):
    """The diffusers the composer offers; ``problem`` why there is no default, when there is none."""

    names: list[str]
    default: str | None
    problem: str | None


@with_config(_CLOSED)
class StudioName(TypedDict):
    name: str
    aliases: list[str]
    layer: str


@with_config(_CLOSED)
class StudioOffer(TypedDict):
    """What a node's form offers: the state and trait keys other nodes of its kind have (how
    many of a sample), the fields holding a node's id, the relation types in use."""

    fields: dict[str, dict[str, int]]
    references: list[str]
    relation_types: list[str]


@with_config(_CLOSED)
class StudioNodeAnswer(_Versioned):
    """A node for the inspector: the names of the nodes it names, the fields holding an id
    (``links``), a digest of its file now and what its form offers (None for a past node)."""

    node: Node
    names: dict[str, StudioName]
    links: dict[str, str]
    file: str | None
    offer: StudioOffer | None


@with_config(_CLOSED)
class StudioChange(TypedDict):
    """A change a passage made; a whole node's (``field`` "") carries only its ``name``."""

    target: str
    field: str
    by: Literal["diffusion", "hand edit"]
    old: NotRequired[Any]
    new: NotRequired[Any]


@with_config(_CLOSED)
class StudioPassage(TypedDict):
    """An event as prose: ``pieces`` its narrative text (its words when ``told`` is false),
    cut at the world's names (``[text, node id or null]``); ``time_key`` its story time as a
    sortable key, null when the time does not parse; ``sentence`` the sentence of its recorded
    chapter it was told at (null outside one)."""

    commit: str
    id: str | None
    number: int
    content: str
    sentence: int | None
    told: bool
    pieces: list[list[Any]]
    story_time: str | None
    time_key: list[int] | None
    changes: list[StudioChange]
    more_changes: int
    reverted: bool


@with_config(_CLOSED)
class StudioScene(TypedDict):
    """``pieces`` the scene's own prose when its chapter is recorded, else null."""

    number: int
    story_time: str | None
    pieces: list[list[Any]] | None
    passages: list[StudioPassage]


@with_config(_CLOSED)
class StudioChapter(TypedDict):
    """A recorded chapter (``recorded`` true, its own number), or events told outside any
    recorded chapter (``recorded`` false, numbered 1, 2, ... in order). A recorded chapter's
    ``heading`` is how it is named, ``summary`` its record's, ``line`` the branch a merge
    brought it from (null: the story line's own); all three null for the others."""

    number: int
    title: str | None
    recorded: bool
    heading: str | None
    summary: str | None
    line: str | None
    scenes: list[StudioScene]


@with_config(_CLOSED)
class StudioManuscriptAnswer(_Versioned):
    """The story line as prose (``/api/studio/manuscript``): chapters from their records
    (``source`` records) or the events as one chapter (``source`` events); ``names`` the name
    of every node marked or changed."""

    source: Literal["records", "events"]
    chapters: list[StudioChapter]
    total: int
    shown: int
    names: dict[str, str]


@with_config(_CLOSED)
class StudioMention(TypedDict):
    commit: str
    number: int
    chapter: int
    scene: int
    excerpt: list[list[Any]]


@with_config(_CLOSED)
class StudioMentionsAnswer(_Versioned):
    """The passages that name a node (``/api/studio/mentions/NODE``), the last of them."""

    node: str
    passages: list[StudioMention]
    total: int


@with_config(_CLOSED)
class StudioNamesAnswer(_Versioned):
    """The name shown in place of each id asked for that is a node (the others left out)."""

    names: dict[str, StudioName]


@with_config(_CLOSED)
class StudioProblem(TypedDict):
    text: str
    path: str | None
    node: str | None


@with_config(_CLOSED)
class StudioProblemsAnswer(_Versioned):
    """``narr status``'s problems placed on their file and node, and the failed events."""

    problems: list[StudioProblem]
    failed: list[FailedItem]


@with_config(_CLOSED)
class StudioWhereAnswer(_Versioned):
    """Where the story stands, as a page compares it: HEAD and the story line, the rest digests."""

    head: str | None
    branch: str | None
    edits: str
    kept: str
    failed: str
    edited: int


ANSWERS: dict[str, Any] = {
    "status": StatusAnswer, "list_nodes": ListNodesAnswer, "get_node": NodeFileAnswer,
    "log": LogAnswer, "show": ShowAnswer, "branches": BranchesAnswer, "chains": ChainsAnswer,
    "why": WhyAnswer, "history": HistoryAnswer, "search": SearchAnswer, "brief": BriefAnswer,
    "threads": ThreadsAnswer, "audit": AuditAnswer, "event": VersionedEvent, "reset": ResetAnswer,
    "revert": VersionedEvent, "replay": ReplayAnswer, "edit_node": NodeFileAnswer,
    "chapter": ChapterAnswer,
}
"""The type of each operation's answer, by operation name."""

CLI_ANSWERS: dict[str, Any] = {
    "error": ErrorAnswer, "init": InitAnswer, "check": CheckAnswer, "doctor": DoctorAnswer,
    "new": NewAnswer, "path": PathAnswer, "get_value": GetValueAnswer,
    "branch_created": BranchCreatedAnswer, "branch_deleted": BranchDeletedAnswer,
    "switch": SwitchAnswer, "failed": FailedAnswer, "edits": EditsAnswer, "gc": GcAnswer,
    "merge": MergeAnswer, "edit_restored": EditRestoredAnswer, "edit_dropped": EditDroppedAnswer,
    "failed_dropped": FailedDroppedAnswer, "chain_dropped": ChainDroppedAnswer, "reflog": ReflogAnswer,
    "import": ImportAnswer, "export_written": ExportWrittenAnswer, "adopt": AdoptAnswer,
    "clone": CloneAnswer, "push": PushAnswer, "pull": PullAnswer,
    "remote_branches": RemoteBranchesAnswer, "conflicts": ConflictsAnswer,
    "resolve": ConflictsAnswer, "merge_aborted": MergeAbortedAnswer,
    "graph_sizes": GraphSizesAnswer, "graph": GraphAnswer, "connect": ConnectAnswer,
    "story": StoryAnswer, "chapters": ChaptersAnswer, "codex": CodexAnswer,
    "vault": VaultAnswer, "studio": StudioAnswer,
    "server": ServerAnswer,
}
"""The type of answers only the CLI gives (and the error every transport gives), by name."""

STUDIO_ANSWERS: dict[str, Any] = {
    "studio_world": StudioWorldAnswer, "studio_events": StudioEventsAnswer,
    "studio_lines": StudioLinesAnswer, "studio_diffusers": StudioDiffusersAnswer,
    "studio_node": StudioNodeAnswer, "studio_names": StudioNamesAnswer,
    "studio_problems": StudioProblemsAnswer, "studio_where": StudioWhereAnswer,
    "studio_manuscript": StudioManuscriptAnswer, "studio_mentions": StudioMentionsAnswer,
}
"""The type of each read the studio's page makes over HTTP, by name."""


def answer_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the answer called ``name``: its ``schema`` field the one value it has."""
    import copy

    return copy.deepcopy(_answer_schema(name))


@functools.cache
def _answer_schema(name: str) -> dict[str, Any]:
    """Made once per process: an MCP client lists the tools, with these, at every connection."""
    from narrative.answers import schema as versioned

    schema = TypeAdapter({**ANSWERS, **CLI_ANSWERS, **STUDIO_ANSWERS}[name]).json_schema(mode="validation")
    defs = schema.get("$defs", {})
    shapes = [defs[branch["$ref"].rsplit("/", 1)[1]] for branch in schema.get("anyOf", [])] or [schema]
    for shape in shapes:  # an answer of more than one shape (show: a record or a plain commit)
        shape["properties"]["schema"] = {"const": versioned(name), "type": "string"}
    schema["type"] = "object"  # every answer is an object (an MCP tool's output schema must say so)
    schema["title"] = versioned(name)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://narr.invalid/schemas/answers/{name}.schema.json"
    return schema


def json_schemas() -> dict[str, dict[str, Any]]:
    """Every answer's schema, keyed by its file name under ``schemas/``."""
    return {f"answers/{name}.schema.json": answer_schema(name)
            for name in {**ANSWERS, **CLI_ANSWERS, **STUDIO_ANSWERS}}
