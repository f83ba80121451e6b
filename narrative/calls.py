"""The library's functions of the operations' rows: one per row, with its name and arguments.

Written from the table (:mod:`narrative.operations`) by ``python tools/names_table.py``; do not
edit. Each function checks its arguments as every other door does (one
:class:`~narrative.errors.InvalidInputError` naming the field), runs the row on the open world
and returns the row's answer, a model whose fields a type checker sees. A node is named by its
id, its name or an alias; a list argument may be any sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

from narrative.fields import ABSENT
from narrative.library import run_row

if TYPE_CHECKING:
    from pathlib import Path

    from narrative.answer_models import (
        AdoptAnswer,
        ChainDroppedAnswer,
        CheckAnswer,
        CloneAnswer,
        ConnectAnswer,
        EditDroppedAnswer,
        EditRestoredAnswer,
        EditsAnswer,
        GcAnswer,
        GetValueAnswer,
        GraphAnswer,
        GraphSizesAnswer,
        InitAnswer,
        NewAnswer,
        PathAnswer,
        PullAnswer,
        PushAnswer,
        ReflogAnswer,
        StoryAnswer,
    )
    from narrative.engine.audit import AuditReport
    from narrative.engine.branches import BranchCreated, BranchDeleted, Branches, RemoteBranches, Switched
    from narrative.engine.brief import Brief
    from narrative.engine.chains import Chains
    from narrative.engine.chapter_answers import ChapterAnswer, ChaptersAnswer
    from narrative.engine.doctor import DoctorAnswer
    from narrative.engine.event import EventResult, RevertResult
    from narrative.engine.failed_answers import FailedDropped, FailedEvents
    from narrative.engine.history_of import NodeHistory
    from narrative.engine.log import LogEntries, ShownCommit, ShownEvent
    from narrative.engine.merge import Conflicts, MergeAborted, MergeResult, Resolved
    from narrative.engine.nodes import EditedNodeFile, NodeFile, NodeList
    from narrative.engine.reset import ResetResult
    from narrative.engine.search import SearchResult
    from narrative.engine.status import Status
    from narrative.engine.threads import Threads
    from narrative.engine.why import WhyResult
    from narrative.model import JSON
    from narrative.operations.chapters import AddedParams
    from narrative.store import WorldRepo


def status(world: WorldRepo) -> Status:
    """Where the story stands: branch, last event, hand edits not yet recorded."""
    return cast("Status", run_row(world, "status"))


def list_nodes(
    world: WorldRepo,
    *,
    limit: int | None = None,
    cursor: str | None = None,
    layer: str | None = None,
) -> NodeList:
    """Every node of the world (hand edits included), sorted by id.

    ``limit``: at most this many items; ``cursor``: where the page starts: the ``next`` of the page
    before (left out: the first page); ``layer``: only the nodes of this layer.
    """
    return cast("NodeList", run_row(world, "list_nodes", limit=limit, cursor=cursor, layer=layer))


def get_node(world: WorldRepo, node: str, *, at: str | None = None) -> NodeFile:
    """One node as its file holds it, now or at a revision.

    ``node``: a node's id, name or alias; ``at``: read the world as it was at this revision.
    """
    return cast("NodeFile", run_row(world, "get_node", node=node, at=at))


def get_value(world: WorldRepo, node: str, field: str, *, at: str | None = None) -> GetValueAnswer:
    """One field's value of a node, now or at a revision.

    ``node``: a node's id, name or alias; ``field``: state.location or /state/location; ``at``: read
    the world as it was at this revision.
    """
    return cast("GetValueAnswer", run_row(world, "get_value", node=node, field=field, at=at))


def path(
    world: WorldRepo,
    node: str,
    *,
    layer: Literal["character", "item", "ambient", "background"] | None = None,
) -> PathAnswer:
    """The path of a node's file, relative to the world's root (where a new node's would go, given its
    layer).

    ``node``: a node's id, name or alias; ``layer``: for a node that does not exist yet: the layer
    it will live in.
    """
    return cast("PathAnswer", run_row(world, "path", node=node, layer=layer))


def log(
    world: WorldRepo,
    rev: str = "HEAD",
    *,
    limit: int | None = None,
    cursor: str | None = None,
    n: int | None = None,
) -> LogEntries:
    """Events newest first along the story line from rev.

    ``rev``: where the line starts (a revision, or A..B); ``limit``: at most this many items;
    ``cursor``: where the page starts: the ``next`` of the page before (left out: the first page);
    ``n``: at most this many events.
    """
    return cast("LogEntries", run_row(world, "log", rev=rev, limit=limit, cursor=cursor, n=n))


def show(world: WorldRepo, rev: str = "HEAD") -> ShownEvent | ShownCommit:
    """One event: its words, its changes and what caused them.

    ``rev``: a revision: an event id, a commit, HEAD~N, a branch.
    """
    return cast("ShownEvent | ShownCommit", run_row(world, "show", rev=rev))


def why(world: WorldRepo, node: str, field: str, *, at: str | None = None) -> WhyResult:
    """Why a node's field holds its value: the events that set it and their causes.

    ``node``: a node's id, name or alias; ``field``: state.location or /state/location; ``at``: read
    the world as it was at this revision.
    """
    return cast("WhyResult", run_row(world, "why", node=node, field=field, at=at))


def history(world: WorldRepo, node: str, *, at: str | None = None) -> NodeHistory:
    """What happened to a node, oldest first.

    ``node``: a node's id, name or alias; ``at``: read the world as it was at this revision.
    """
    return cast("NodeHistory", run_row(world, "history", node=node, at=at))


def search(world: WorldRepo, q: str, *, limit: int = 20) -> SearchResult:
    """Nodes and events whose words match the query.

    ``q``: words to look for.
    """
    return cast("SearchResult", run_row(world, "search", q=q, limit=limit))


def brief(
    world: WorldRepo,
    goal: str | None = None,
    *,
    focus: Sequence[str] = (),
    pov: str | None = None,
    budget: int = 4000,
    at: str | None = None,
) -> Brief:
    """The pack of world state to write or play the next event from.

    ``goal``: what the next event is about; ``focus``: nodes the brief must include; ``pov``: only
    what this character knows; ``budget``: tokens, about; ``at``: read the world as it was at this
    revision.
    """
    return cast("Brief", run_row(world, "brief", goal=goal, focus=focus, pov=pov, budget=budget, at=at))


def threads(world: WorldRepo, *, all: bool = False, at: str | None = None) -> Threads:
    """Open story threads, stalest first, with what each waits for.

    ``all``: resolved threads too; ``at``: read the world as it was at this revision.
    """
    return cast("Threads", run_row(world, "threads", all=all, at=at))


def audit(
    world: WorldRepo,
    text: str,
    *,
    at: str | None = None,
    budget: float | None = None,
) -> AuditReport:
    """The actions in a chapter that the world contradicts; writes nothing.

    ``text``: the chapter; ``at``: read the world as it was at this revision; ``budget``: seconds
    the audit may take (default 120).
    """
    return cast("AuditReport", run_row(world, "audit", text=text, at=at, budget=budget))


def world_graph(
    world: WorldRepo,
    *,
    format: Literal["dot", "mermaid", "graphml", "json"] = "dot",
    around: str | None = None,
    depth: int = 1,
    at: str | None = None,
) -> GraphAnswer:
    """The world graph (nodes, their relations and reference fields) as dot, mermaid, graphml or
    node-link JSON text, now or at a revision.

    ``around``: only the nodes near this one; ``depth``: with around: how many steps away to keep;
    ``at``: read the world as it was at this revision.
    """
    return cast("GraphAnswer", run_row(
        world, "world_graph",
        format=format,
        around=around,
        depth=depth,
        at=at,
    ))


def event_graph(
    world: WorldRepo,
    *,
    format: Literal["dot", "mermaid", "graphml", "json"] = "dot",
    around: str | None = None,
    depth: int = 1,
) -> GraphAnswer:
    """The event graph of the story line (which event depends on which) as dot, mermaid, graphml or
    node-link JSON text.

    ``around``: only the events causally near this one (a revision); ``depth``: with around: how
    many steps away to keep.
    """
    return cast("GraphAnswer", run_row(world, "event_graph", format=format, around=around, depth=depth))


def graph_sizes(world: WorldRepo) -> GraphSizesAnswer:
    """How many nodes and edges the world graph and the event graph hold."""
    return cast("GraphSizesAnswer", run_row(world, "graph_sizes"))


def connect(world: WorldRepo, source: str, target: str) -> ConnectAnswer:
    """The shortest chains of relations between two nodes, either way round.

    ``source``: a node's id, name or alias; ``target``: a node's id, name or alias.
    """
    return cast("ConnectAnswer", run_row(world, "connect", source=source, target=target))


def failed(world: WorldRepo, *, limit: int | None = None, cursor: str | None = None) -> FailedEvents:
    """Events that could not be recorded, kept with their error; newest first.

    ``limit``: at most this many items; ``cursor``: where the page starts: the ``next`` of the page
    before (left out: the first page).
    """
    return cast("FailedEvents", run_row(world, "failed", limit=limit, cursor=cursor))


def retry(
    world: WorldRepo,
    which: str = "1",
    *,
    dry_run: bool = False,
    diffuser: str | None = None,
) -> EventResult:
    """Run a failed event again (1: the newest); it is forgotten once recorded.

    ``which``: the failed event: its number (1: the newest) or the start of its key; ``dry_run``:
    show what it would change; record nothing; ``diffuser``: run it through this diffuser instead of
    its own.
    """
    return cast("EventResult", run_row(world, "retry", which=which, dry_run=dry_run, diffuser=diffuser))


def drop_failed(world: WorldRepo, which: str) -> FailedDropped:
    """Forget a failed event for good (its words are answered one last time).

    ``which``: the failed event: its number (1: the newest) or the start of its key.
    """
    return cast("FailedDropped", run_row(world, "drop_failed", which=which))


def chapter(
    world: WorldRepo,
    text: str,
    *,
    dry_run: bool = False,
    accept: Literal["all"] | Sequence[int] | None = None,
    reject: Sequence[int] = (),
    added: Sequence[AddedParams] = (),
    number: int | None = None,
    title: str | None = None,
    story_time: str | None = None,
    diffuser: str | None = None,
    key: str | None = None,
    budget: float | None = None,
) -> ChapterAnswer:
    """Review a chapter sentence by sentence (dry_run: every change numbered with its sentence, the
    contradictions), or record it as one unit with the changes accepted; a key makes a retried call
    record nothing twice.

    ``text``: the chapter: plain text or Markdown; ``dry_run``: review only: the scenes, every
    proposed change numbered with its sentence, the contradictions; ``accept``: the changes of the
    review to record: "all" or their numbers; ``reject``: changes to leave out; ``added``: changes
    added by hand, each at its sentence; ``number``: the chapter's number (default: its heading's,
    else the next); ``story_time``: the story time the chapter begins at; ``key``: idempotency key:
    a chapter recorded with it is not recorded again; ``budget``: seconds the review may take
    (default 120).
    """
    return cast("ChapterAnswer", run_row(
        world, "chapter",
        text=text,
        dry_run=dry_run,
        accept=accept,
        reject=reject,
        added=added,
        number=number,
        title=title,
        story_time=story_time,
        diffuser=diffuser,
        key=key,
        budget=budget,
    ))


def chapters(
    world: WorldRepo,
    rev: str = "HEAD",
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> ChaptersAnswer:
    """The chapters of a story line, newest first, with their summaries (those a merge brought too,
    marked with their line).

    ``rev``: the story line's tip; ``limit``: at most this many items; ``cursor``: where the page
    starts: the ``next`` of the page before (left out: the first page).
    """
    return cast("ChaptersAnswer", run_row(world, "chapters", rev=rev, limit=limit, cursor=cursor))


def story(world: WorldRepo, *, start: str | None = None, end: str | None = None) -> StoryAnswer:
    """The book so far: the story line's events oldest first, with story time, narrative text and the
    chapters that tell them.

    ``start``: start after this event (left out: the beginning); ``end``: end with this event (left
    out: HEAD).
    """
    return cast("StoryAnswer", run_row(world, "story", start=start, end=end))


def chains(world: WorldRepo) -> Chains:
    """Abandoned chains of events (left by reset), which replay can bring back."""
    return cast("Chains", run_row(world, "chains"))


def reset(
    world: WorldRepo,
    rev: str | None = None,
    *,
    before: str | None = None,
    chapter: int | None = None,
    keep_edits: bool = False,
    hard: bool = False,
) -> ResetResult:
    """Move the story back to rev (or to just before a node was made); the undone events stay as a
    chain for replay.

    ``before``: back to just before this node was created; ``chapter``: back to just before this
    chapter began.
    """
    return cast("ResetResult", run_row(
        world, "reset",
        rev=rev,
        before=before,
        chapter=chapter,
        keep_edits=keep_edits,
        hard=hard,
    ))


def revert(world: WorldRepo, rev: str, *, content: str | None = None) -> RevertResult:
    """Record an event that undoes an earlier one.

    ``rev``: a revision: an event id, a commit, HEAD~N, a branch.
    """
    return cast("RevertResult", run_row(world, "revert", rev=rev, content=content))


def drop_chain(world: WorldRepo, which: str, *, force: bool = False) -> ChainDroppedAnswer:
    """Delete an abandoned chain; refused while it alone keeps events (force: drop them too).

    ``which``: the chain's number or name (as chains lists them); ``force``: drop it even when some
    of its events are kept by no other ref (they are lost).
    """
    return cast("ChainDroppedAnswer", run_row(world, "drop_chain", which=which, force=force))


def branches(world: WorldRepo, *, limit: int | None = None, cursor: str | None = None) -> Branches:
    """The story's branches and which one is current.

    ``limit``: at most this many items; ``cursor``: where the page starts: the ``next`` of the page
    before (left out: the first page).
    """
    return cast("Branches", run_row(world, "branches", limit=limit, cursor=cursor))


def remote_branches(
    world: WorldRepo,
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> RemoteBranches:
    """The remotes' branches as last fetched, and the local branch following each.

    ``limit``: at most this many items; ``cursor``: where the page starts: the ``next`` of the page
    before (left out: the first page).
    """
    return cast("RemoteBranches", run_row(world, "remote_branches", limit=limit, cursor=cursor))


def create_branch(world: WorldRepo, name: str, rev: str | None = None) -> BranchCreated:
    """Make a branch at rev (the current event by default); the current one stays.

    ``name``: a branch's name; ``rev``: where it starts (left out: the current event).
    """
    return cast("BranchCreated", run_row(world, "create_branch", name=name, rev=rev))


def delete_branch(world: WorldRepo, name: str) -> BranchDeleted:
    """Delete a branch; its events stay kept when no other branch has them.

    ``name``: a branch's name.
    """
    return cast("BranchDeleted", run_row(world, "delete_branch", name=name))


def switch(world: WorldRepo, name: str, *, create: bool = False, set_aside: bool = False) -> Switched:
    """Make a branch current (create: a new one here); hand edits move along or are set aside.

    ``name``: a branch's name; ``create``: create the branch at the current event first;
    ``set_aside``: set uncommitted hand edits aside instead of refusing.
    """
    return cast("Switched", run_row(world, "switch", name=name, create=create, set_aside=set_aside))


def merge(world: WorldRepo, branch: str) -> MergeResult:
    """Merge a story line into the current one, node by node and field by field; it stops with nothing
    written on a conflict.

    ``branch``: the story line to merge: a branch, a remote's (origin/main), any revision.
    """
    return cast("MergeResult", run_row(world, "merge", branch=branch))


def continue_merge(world: WorldRepo) -> MergeResult:
    """Seal the stopped merge once every conflict is resolved."""
    return cast("MergeResult", run_row(world, "continue_merge"))


def abort_merge(world: WorldRepo) -> MergeAborted:
    """Forget the stopped merge (the world never changed)."""
    return cast("MergeAborted", run_row(world, "abort_merge"))


def conflicts(world: WorldRepo) -> Conflicts:
    """The conflicts of the merge in progress, with the resolutions chosen so far."""
    return cast("Conflicts", run_row(world, "conflicts"))


def resolve(
    world: WorldRepo,
    node: str,
    field: str,
    *,
    take: Literal["ours", "theirs"] | None = None,
    value: JSON = ABSENT,
) -> Resolved:
    """Choose a conflict's outcome: take ours or theirs, or give the value.

    ``node``: a node's id, name or alias; ``field``: the conflict's field: state.mood or
    /state/mood; "" is the whole node; ``take``: keep this line's value (ours) or take the merged
    one's (theirs); ``value``: the value to set instead (given: any JSON, null too).
    """
    return cast("Resolved", run_row(world, "resolve", node=node, field=field, take=take, value=value))


def edit_node(world: WorldRepo, node: str, file: dict[str, JSON]) -> EditedNodeFile:
    """Write a node's file as a hand edit (validated first); the next event records it.

    ``node``: a node's id, name or alias; ``file``: the node, as in its file.
    """
    return cast("EditedNodeFile", run_row(world, "edit_node", node=node, file=file))


def new_node(
    world: WorldRepo,
    layer: Literal["character", "item", "ambient", "background"],
    name: str,
    *,
    kind: str = "",
    aliases: Sequence[str] = (),
    lifecycle: Literal["permanent", "scene", "event"] = "permanent",
    summary: str = "",
    force: bool = False,
    pronouns: str | None = None,
) -> NewAnswer:
    """Make a node as a hand edit, its id made from its name (the next event records it); a name the
    world already uses is refused.

    ``layer``: the node's layer; ``name``: its name; ``kind``: what it is within its layer: place,
    weapon, secret, sect ...; ``aliases``: other names it goes by; ``lifecycle``: how long it lasts:
    for good, to the scene's end, for one event; ``summary``: one line about it; ``force``: make it
    even when its id is taken by a node of the same words (it gets -2); ``pronouns``: a character's
    pronouns (she, he, they, it): what "he", "her" and 他 bind by.
    """
    return cast("NewAnswer", run_row(
        world, "new_node",
        layer=layer,
        name=name,
        kind=kind,
        aliases=aliases,
        lifecycle=lifecycle,
        summary=summary,
        force=force,
        pronouns=pronouns,
    ))


def init(
    world: WorldRepo | Path,
    directory: str | None = None,
    *,
    sample: bool = False,
    layout: Literal["flat", "sharded"] = "flat",
    name: str | None = None,
    language: str | None = None,
    rules: Literal["en", "zh", "both"] | None = None,
    here: bool = False,
) -> InitAnswer:
    """Create a new world: a git repository with narr.toml, world/ and a genesis commit.

    ``directory``: where the world goes, relative to the directory narr runs in (left out: that
    directory); ``sample``: start from the sample story world; ``layout``: flat:
    world/<layer>/<id>.json; sharded: world/<layer>/<xx>/<id>.json; ``name``: the world's name
    (default: the directory's); ``language``: the story's main language, e.g. en or zh; ``rules``:
    narr's generic rules; ``here``: make the existing git repository (history kept) a world, with a
    genesis commit on top.
    """
    return cast("InitAnswer", run_row(
        world, "init",
        directory=directory,
        sample=sample,
        layout=layout,
        name=name,
        language=language,
        rules=rules,
        here=here,
    ))


def edits(world: WorldRepo) -> EditsAnswer:
    """Hand edits set aside by a reset or a switch, newest first, with their changes."""
    return cast("EditsAnswer", run_row(world, "edits"))


def restore_edits(world: WorldRepo, which: str = "1", *, force: bool = False) -> EditRestoredAnswer:
    """Put set-aside hand edits back (1: the newest); the next event records them.

    ``which``: the set-aside edits: their number (1: the newest), origin/N, or their ref; ``force``:
    let the set-aside values win collisions (the current edits are set aside first).
    """
    return cast("EditRestoredAnswer", run_row(world, "restore_edits", which=which, force=force))


def drop_edits(world: WorldRepo, which: str) -> EditDroppedAnswer:
    """Forget set-aside hand edits for good.

    ``which``: the set-aside edits: their number (1: the newest), origin/N, or their ref.
    """
    return cast("EditDroppedAnswer", run_row(world, "drop_edits", which=which))


def reflog(world: WorldRepo, *, limit: int | None = None) -> ReflogAnswer:
    """Where HEAD has been: every event, reset, replay and switch, newest first.

    ``limit``: at most this many entries.
    """
    return cast("ReflogAnswer", run_row(world, "reflog", limit=limit))


def check(
    world: WorldRepo,
    rev: str | None = None,
    *,
    history_only: bool = False,
    full: bool = False,
) -> CheckAnswer:
    """Check that every event explains its commit and every node is valid; writes nothing but the mark
    of a check that passed.

    ``rev``: check the story line up to this revision (left out: HEAD); ``history_only``: check the
    events only, not every node; ``full``: walk every event, not only those since the last check
    that passed.
    """
    return cast("CheckAnswer", run_row(world, "check", rev=rev, history_only=history_only, full=full))


def adopt(world: WorldRepo) -> AdoptAnswer:
    """Make plain git commits on top of the last event hand edits again (the commits are kept)."""
    return cast("AdoptAnswer", run_row(world, "adopt"))


def gc(world: WorldRepo) -> GcAnswer:
    """Pack the repository (git gc); nothing narr keeps is pruned."""
    return cast("GcAnswer", run_row(world, "gc"))


def doctor(world: WorldRepo | Path, *, llm_timeout: float = 30.0) -> DoctorAnswer:
    """Check the libraries narr needs, the machine and the world; name each problem's fix.

    ``llm_timeout``: seconds to wait for the llm diffuser's server (asked only when configured).
    """
    return cast("DoctorAnswer", run_row(world, "doctor", llm_timeout=llm_timeout))


def clone(world: WorldRepo | Path, url: str, directory: str | None = None) -> CloneAnswer:
    """Copy the world at a URL (or path) into a new directory, every writer's undone chains and
    set-aside edits included.

    ``url``: the world to copy: any git URL, or a path; ``directory``: where the copy goes, relative
    to the directory narr runs in (left out: named after the URL).
    """
    return cast("CloneAnswer", run_row(world, "clone", url=url, directory=directory))


def push(
    world: WorldRepo,
    remote: str | None = None,
    branch: str | None = None,
    *,
    edits: bool | None = None,
) -> PushAnswer:
    """Send a story line (fast-forward only) and one's undone chains and set-aside edits to a remote
    the world names.

    ``remote``: the remote (left out: the branch's upstream, else origin); ``branch``: the story
    line to send (left out: the current); ``edits``: send one's set-aside edits too (left out: git
    config narr.pushEdits, else yes).
    """
    return cast("PushAnswer", run_row(world, "push", remote=remote, branch=branch, edits=edits))


def pull(world: WorldRepo, remote: str | None = None, branch: str | None = None) -> PullAnswer:
    """Fetch from a remote, then fast-forward or merge its story line into the current one (stopping at
    conflicts, as merge does).

    ``remote``: the remote (left out: the branch's upstream, else origin); ``branch``: the remote's
    story line to bring in (left out: the one the current branch follows).
    """
    return cast("PullAnswer", run_row(world, "pull", remote=remote, branch=branch))
