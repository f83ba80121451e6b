"""The supported surface of narr for programs and agents.

Everything a ``narr`` command does is one call here, on a world opened once::

    import narrative as narr

    with narr.open_world("my-world") as world:
        narr.event(world, "Lin Yuan walks to the ferry",
                   narr.SetOp(target="lin-yuan", field="/state/location", value="ferry"))
        narr.get_value(world, "lin-yuan", "state.location")            # "ferry"
        narr.reset(world, "HEAD~1")

Names here keep working from one release to the next (a test holds them);
modules under ``narrative.engine``, ``narrative.store`` and ``narrative.delta``
may move. Errors are the typed ones of :mod:`narrative.errors`, each with
``message``, ``details``, ``hint`` and the exit code the CLI gives it. The
library never prints and never exits.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from narrative import ops
from narrative.delta.draft import Draft
from narrative.delta.proposal import Diffuser, Proposal
from narrative.delta.request import EventRequest
from narrative.delta.world import DictWorld, World
from narrative.diffusers.base import default_name as default_diffuser
from narrative.diffusers.base import get_diffuser, register
from narrative.engine import chains as _chains
from narrative.engine import replay as _replay
from narrative.engine.adopt import AdoptResult, adopt
from narrative.engine.audit import AuditReport, Finding, audit
from narrative.engine.bible import ImportResult, import_bible
from narrative.engine.book import Book, book
from narrative.engine.branches import (
    create_branch,
    delete_branch,
    list_branches,
    list_remote_branches,
    reflog,
    switch,
)
from narrative.engine.brief import Brief, brief
from narrative.engine.chapter import AddedChange, ChapterResult, ChapterReview
from narrative.engine.chapter import record as record_chapter
from narrative.engine.chapter import retry as retry_chapter
from narrative.engine.chapter import review as review_chapter
from narrative.engine.chapters import ChapterInfo
from narrative.engine.check import CheckReport, check
from narrative.engine.codex import Codex, codex
from narrative.engine.doctor import DoctorReport, doctor
from narrative.engine.event import EventResult, retry, run_event
from narrative.engine.eventgraph import EventInfo
from narrative.engine.failed import listing as failed_events
from narrative.engine.graphs import Connection, GraphExport, connect, export_graph
from narrative.engine.history_of import NodeHistory, history_of
from narrative.engine.init import InitResult, init_world
from narrative.engine.log import Entry, log, log_of, node_log, show
from narrative.engine.lorebook import CardExport, LorebookExport, export_card, export_lorebook
from narrative.engine.merge import MergeResult, continue_merge, merge
from narrative.engine.merge import abort as abort_merge
from narrative.engine.merge import conflicts as merge_conflicts
from narrative.engine.merge import resolve as resolve_conflict
from narrative.engine.naming import resolve_node
from narrative.engine.new import NewNode, new_node
from narrative.engine.nodes import get_node, get_value, list_nodes
from narrative.engine.remote import CloneResult, PullResult, PushResult, clone, pull, push
from narrative.engine.replay import Chain, ReplayResult, drop_chain
from narrative.engine.reset import ResetResult, reset
from narrative.engine.revert import revert
from narrative.engine.search import SearchResult, search
from narrative.engine.setaside import RestoreResult, list_set_asides, restore
from narrative.engine.status import Status, status
from narrative.engine.studio import EventView, WorldGraphView, event_view, world_view
from narrative.engine.threads import Threads, threads
from narrative.engine.vault import VaultExport, export_vault
from narrative.engine.why import WhyResult, why
from narrative.errors import (
    BusyError,
    CheckFailedError,
    ConflictError,
    ContinuityError,
    DiffuserError,
    InvalidInputError,
    InvalidWorldError,
    NarrError,
    NotAWorldError,
    NotFoundError,
    NothingToDoError,
    RequirementError,
)
from narrative.fields import FieldConflict
from narrative.model import (
    Change,
    CreateOp,
    Delta,
    EventRecord,
    ExpireOp,
    Node,
    Op,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.nodefile import NodeDict
from narrative.operations import Operation
from narrative.store.batch import batch
from narrative.store.worldrepo import WorldRepo


def open_world(path: str | os.PathLike[str] = ".", *, lock_timeout: float | None = None) -> WorldRepo:
    """The world containing ``path`` (searching upwards, as git does); close it when done, or
    use it as a context manager (``with narr.open_world(path) as world: ...``).

    ``lock_timeout``: seconds a write waits for another writer before :class:`BusyError`
    (default: ``NARR_LOCK_TIMEOUT``, else a few seconds)."""
    world = WorldRepo.open(path)
    if lock_timeout is not None:
        if lock_timeout < 0:
            world.close()
            raise InvalidInputError(f"lock_timeout must be 0 or more seconds, not {lock_timeout}")
        world.lock.timeout = lock_timeout
    return world


def list_chains(world: WorldRepo) -> list[Chain]:
    """Abandoned chains (left by :func:`reset`), newest first."""
    return [Chain.from_json(c) for c in _chains.list_chains(world)]


def list_chapters(world: WorldRepo, rev: str | None = None) -> list[ChapterInfo]:
    """The chapters of the story line (ending at HEAD, or ``rev``), oldest first, those a merge
    brought included (each with the branch it came from)."""
    from narrative.engine.chapters import chapters_on_line

    return chapters_on_line(world, rev, merged=True)


def replay(world: WorldRepo, chain: Chain | str | int, *, reuse: bool = False,
           diffuser_name: str | None = None, to: str | None = None,
           again: bool = False) -> ReplayResult:
    """Run ``chain`` (a :class:`Chain`, its number or its name) again on top of HEAD, up to
    and including event ``to`` if given; ``reuse`` the recorded deltas instead of diffusing.
    Events the story already holds a replay of are left out unless ``again``."""
    which = chain.selector if isinstance(chain, Chain) else str(chain)
    return _replay.replay(world, which, reuse=reuse, diffuser_name=diffuser_name, to=to,
                          again=again)


def event(world: WorldRepo, content: str, *ops: Op | Sequence[Op], diffuser: str | None = None,
          close_scene: bool = False, timestamp: str | None = None, causes: Iterable[str] = (),
          dry_run: bool = False, when: datetime | None = None) -> EventResult:
    """Record one event: ``content`` in words, ``ops`` the changes you spell out yourself.

    Each of ``ops`` is an op (``SetOp(...)``) or a list of them, as the :mod:`narrative.ops`
    helpers return. ``diffuser`` names what turns the words into further changes
    (``"rules"``, ``"llm"``, ...; :func:`default_diffuser` is what ``narr event`` would
    pick); without it only ``ops`` change the world. On an error nothing changes and
    the request is kept for :func:`retry`.
    """
    from pydantic import ValidationError

    from narrative.errors import validation_error

    try:
        request = EventRequest(content=content, delta=Delta(ops=_flat_ops(ops)),
                               diffuser=diffuser, close_scene=close_scene, timestamp=timestamp,
                               causes=list(causes))
    except ValidationError as exc:
        raise validation_error(exc, "event") from None
    return run_event(world, request, dry_run=dry_run, when=when)


def _flat_ops(ops: tuple[Any, ...]) -> list[Op]:
    """The ops a caller passed, lists (a helper's answer) spread and dicts (an op's JSON) read:
    anything else is named here, by its place, rather than deep in a validation report."""
    from pydantic import TypeAdapter, ValidationError

    from narrative.errors import validation_error
    from narrative.model import _Op

    flat: list[Op] = []
    for i, given in enumerate(ops):
        items = given if isinstance(given, list | tuple) else [given]
        for item in items:
            if isinstance(item, dict):
                try:
                    item = TypeAdapter(Op).validate_python(item)
                except ValidationError as exc:
                    raise validation_error(exc, f"op {i + 1}") from None
            if not isinstance(item, _Op):
                raise InvalidInputError(
                    f"op {i + 1}: {type(item).__name__} {str(item)[:60]!r} is not an op",
                    hint="build ops with narr.SetOp(...), narr.RelateOp(...) or the narr.ops "
                         "helpers (which return lists: pass them as they are)")
            flat.append(item)  # type: ignore[arg-type]
    return flat



# --- the operations table -----------------------------------------------------------------------
# One row per thing a program can ask of a world: the HTTP API, the MCP tools and the OpenAPI
# document are generated from it (narrative.operations says how).

def _operations() -> tuple[Operation, ...]:
    from narrative import operations as o
    from narrative.answers import schema

    def op(name: str, summary: str, params: type[o.Params], run: Any, method: str, path: str,
           **kw: Any) -> Operation:
        """The answer's version is in narrative.answers (a test holds the shapes)."""
        return Operation(name=name, summary=summary, params=params, run=run,
                         schema=schema(name), method=method, path=path, **kw)

    write = {"writes": True, "idempotent": False}
    return (
        op("status", "Where the story stands: branch, last event, hand edits not yet recorded.",
           o.NoParams, o.run_status, "GET", "/api/status"),
        op("list_nodes", "Every node of the world (hand edits included), sorted by id.",
           o.ListNodesParams, o.run_list_nodes, "GET", "/api/nodes"),
        op("get_node", "One node as its file holds it, now or at a revision.",
           o.GetNodeParams, o.run_get_node, "GET", "/api/nodes/{node}"),
        op("log", "Events newest first along the story line from rev.",
           o.LogParams, o.run_log, "GET", "/api/log"),
        op("show", "One event: its words, its changes and what caused them.",
           o.ShowParams, o.run_show, "GET", "/api/show/{rev}"),
        op("branches", "The story's branches and which one is current.",
           o.NoParams, o.run_branches, "GET", "/api/branches"),
        op("chains", "Abandoned chains of events (left by reset), which replay can bring back.",
           o.NoParams, o.run_chains, "GET", "/api/chains"),
        op("why", "Why a node's field holds its value: the events that set it and their causes.",
           o.WhyParams, o.run_why, "GET", "/api/why/{node}"),
        op("history", "What happened to a node, oldest first.",
           o.HistoryParams, o.run_history, "GET", "/api/history/{node}"),
        op("search", "Nodes and events whose words match the query.",
           o.SearchParams, o.run_search, "GET", "/api/search"),
        op("brief", "The pack of world state to write or play the next event from.",
           o.BriefParams, o.run_brief, "GET", "/api/brief"),
        op("threads", "Open story threads, stalest first, with what each waits for.",
           o.ThreadsParams, o.run_threads, "GET", "/api/threads"),
        op("audit", "The actions in a chapter that the world contradicts; writes nothing.",
           o.AuditParams, o.run_audit, "POST", "/api/audit"),
        op("event", "Record one event: its words, the changes spelt out, and what the diffuser adds "
           "(dry_run: only show them).", o.EventParams, o.run_event, "POST", "/api/events", **write),
        op("chapter", "Review a chapter sentence by sentence (dry_run: every change numbered with "
           "its sentence, the contradictions), or record it as one unit with the changes "
           "accepted; a key makes a retried call record nothing twice.",
           o.ChapterParams, o.run_chapter, "POST", "/api/chapters", **write),
        op("reset", "Move the story back to rev (or to just before a node was made); the undone "
           "events stay as a chain for replay.", o.ResetParams, o.run_reset, "POST", "/api/reset",
           writes=True, destructive=True, idempotent=False),
        op("revert", "Record an event that undoes an earlier one.",
           o.RevertParams, o.run_revert, "POST", "/api/revert", **write),
        op("replay", "Run an abandoned chain again on top of the story.",
           o.ReplayParams, o.run_replay, "POST", "/api/replay", **write),
        op("edit_node", "Write a node's file as a hand edit (validated first); the next event "
           "records it.", o.EditNodeParams, o.run_edit_node, "PUT", "/api/nodes/{node}",
           writes=True, destructive=True, idempotent=True, body="file"),
    )


OPERATIONS: tuple[Operation, ...] = _operations()
"""Every operation a program can ask of a world, in the order the API documents them."""


def operation(name: str) -> Operation:
    """The operation called ``name``; :class:`NotFoundError` naming the known ones otherwise."""
    for op in OPERATIONS:
        if op.name == name:
            return op
    raise NotFoundError(f"no operation {name!r}",
                        hint="the operations are " + ", ".join(o.name for o in OPERATIONS))

__all__ = [
    "OPERATIONS",
    "AddedChange",
    "AdoptResult",
    "AuditReport",
    "Book",
    "Brief",
    "BusyError",
    "CardExport",
    "Chain",
    "Change",
    "ChapterInfo",
    "ChapterResult",
    "ChapterReview",
    "CheckFailedError",
    "CheckReport",
    "CloneResult",
    "Codex",
    "ConflictError",
    "Connection",
    "ContinuityError",
    "CreateOp",
    "Delta",
    "DictWorld",
    "Diffuser",
    "DiffuserError",
    "DoctorReport",
    "Draft",
    "Entry",
    "EventInfo",
    "EventRecord",
    "EventRequest",
    "EventResult",
    "EventView",
    "ExpireOp",
    "FieldConflict",
    "Finding",
    "GraphExport",
    "ImportResult",
    "InitResult",
    "InvalidInputError",
    "InvalidWorldError",
    "LorebookExport",
    "MergeResult",
    "NarrError",
    "NewNode",
    "Node",
    "NodeDict",
    "NodeHistory",
    "NotAWorldError",
    "NotFoundError",
    "NothingToDoError",
    "Op",
    "Operation",
    "Proposal",
    "PullResult",
    "PushResult",
    "RelateOp",
    "ReplayResult",
    "RequirementError",
    "ResetResult",
    "RestoreResult",
    "SearchResult",
    "SetOp",
    "Status",
    "Threads",
    "UnrelateOp",
    "UnsetOp",
    "VaultExport",
    "WhyResult",
    "World",
    "WorldGraphView",
    "WorldRepo",
    "abort_merge",
    "adopt",
    "audit",
    "batch",
    "book",
    "brief",
    "check",
    "clone",
    "codex",
    "connect",
    "continue_merge",
    "create_branch",
    "default_diffuser",
    "delete_branch",
    "doctor",
    "drop_chain",
    "event",
    "event_view",
    "export_card",
    "export_graph",
    "export_lorebook",
    "export_vault",
    "failed_events",
    "get_diffuser",
    "get_node",
    "get_value",
    "history_of",
    "import_bible",
    "init_world",
    "list_branches",
    "list_chains",
    "list_chapters",
    "list_nodes",
    "list_remote_branches",
    "list_set_asides",
    "log",
    "log_of",
    "merge",
    "merge_conflicts",
    "new_node",
    "node_log",
    "open_world",
    "operation",
    "ops",
    "pull",
    "push",
    "record_chapter",
    "reflog",
    "register",
    "replay",
    "reset",
    "resolve_conflict",
    "resolve_node",
    "restore",
    "retry",
    "retry_chapter",
    "revert",
    "review_chapter",
    "run_event",
    "search",
    "show",
    "status",
    "switch",
    "threads",
    "why",
    "world_view",
]
