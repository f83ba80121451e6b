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

from narrative import _FACE
from narrative.lazy import attach

__getattr__, __dir__, __all__ = attach("narrative", _FACE, here=__name__)

# --- names for type checkers, written from the table by tools/names_table.py ---
TYPE_CHECKING = False
if TYPE_CHECKING:
    from narrative import ops as ops
    from narrative.answers import Answer as Answer
    from narrative.answers import Items as Items
    from narrative.answers import Shape as Shape
    from narrative.delta.draft import Draft as Draft
    from narrative.delta.proposal import Diffuser as Diffuser
    from narrative.delta.proposal import Proposal as Proposal
    from narrative.delta.request import EventRequest as EventRequest
    from narrative.delta.world import DictWorld as DictWorld
    from narrative.delta.world import World as World
    from narrative.diffusers.base import default_name as default_diffuser
    from narrative.diffusers.base import get_diffuser as get_diffuser
    from narrative.diffusers.base import register as register
    from narrative.engine.adopt import AdoptResult as AdoptResult
    from narrative.engine.adopt import adopt as adopt
    from narrative.engine.audit import AuditReport as AuditReport
    from narrative.engine.audit import Finding as Finding
    from narrative.engine.audit import audit as audit
    from narrative.engine.bible import ImportResult as ImportResult
    from narrative.engine.bible import import_bible as import_bible
    from narrative.engine.book import Book as Book
    from narrative.engine.book import book as book
    from narrative.engine.branches import Branch as Branch
    from narrative.engine.branches import Branches as Branches
    from narrative.engine.branches import create_branch as create_branch
    from narrative.engine.branches import delete_branch as delete_branch
    from narrative.engine.branches import list_branches as list_branches
    from narrative.engine.branches import list_remote_branches as list_remote_branches
    from narrative.engine.branches import reflog as reflog
    from narrative.engine.branches import switch as switch
    from narrative.engine.brief import Brief as Brief
    from narrative.engine.brief import BriefEvent as BriefEvent
    from narrative.engine.brief import BriefHead as BriefHead
    from narrative.engine.brief import BriefItem as BriefItem
    from narrative.engine.brief import brief as brief
    from narrative.engine.chains import Chain as Chain
    from narrative.engine.chains import ChainEnd as ChainEnd
    from narrative.engine.chains import Chains as Chains
    from narrative.engine.chapter import AddedChange as AddedChange
    from narrative.engine.chapter import ChapterResult as ChapterResult
    from narrative.engine.chapter import ChapterReview as ChapterReview
    from narrative.engine.chapter import record as record_chapter
    from narrative.engine.chapter import retry as retry_chapter
    from narrative.engine.chapter import review as review_chapter
    from narrative.engine.chapters import ChapterInfo as ChapterInfo
    from narrative.engine.check import CheckReport as CheckReport
    from narrative.engine.check import check as check
    from narrative.engine.codex import Codex as Codex
    from narrative.engine.codex import codex as codex
    from narrative.engine.doctor import DoctorReport as DoctorReport
    from narrative.engine.doctor import doctor as doctor
    from narrative.engine.event import EventResult as EventResult
    from narrative.engine.event import RevertResult as RevertResult
    from narrative.engine.event import retry as retry
    from narrative.engine.event import run_event as run_event
    from narrative.engine.eventgraph import EventInfo as EventInfo
    from narrative.engine.failed import listing as failed_events
    from narrative.engine.failed_answers import FailedDropped as FailedDropped
    from narrative.engine.failed_answers import FailedEvents as FailedEvents
    from narrative.engine.failed_answers import FailedItem as FailedItem
    from narrative.engine.failed_answers import FailedSummary as FailedSummary
    from narrative.engine.graphs import Connection as Connection
    from narrative.engine.graphs import GraphExport as GraphExport
    from narrative.engine.graphs import connect as connect
    from narrative.engine.graphs import export_graph as export_graph
    from narrative.engine.history_of import HistoryEvent as HistoryEvent
    from narrative.engine.history_of import NodeHistory as NodeHistory
    from narrative.engine.history_of import history_of as history_of
    from narrative.engine.init import InitResult as InitResult
    from narrative.engine.init import init_world as init_world
    from narrative.engine.log import Entry as Entry
    from narrative.engine.log import LogEntries as LogEntries
    from narrative.engine.log import ShownCommit as ShownCommit
    from narrative.engine.log import ShownEvent as ShownEvent
    from narrative.engine.log import log as log
    from narrative.engine.log import log_of as log_of
    from narrative.engine.log import node_log as node_log
    from narrative.engine.log import show as show
    from narrative.engine.lorebook import CardExport as CardExport
    from narrative.engine.lorebook import LorebookExport as LorebookExport
    from narrative.engine.lorebook import export_card as export_card
    from narrative.engine.lorebook import export_lorebook as export_lorebook
    from narrative.engine.merge import MergeResult as MergeResult
    from narrative.engine.merge import abort as abort_merge
    from narrative.engine.merge import conflicts as merge_conflicts
    from narrative.engine.merge import continue_merge as continue_merge
    from narrative.engine.merge import merge as merge
    from narrative.engine.merge import resolve as resolve_conflict
    from narrative.engine.naming import resolve_node as resolve_node
    from narrative.engine.new import NewNode as NewNode
    from narrative.engine.new import new_node as new_node
    from narrative.engine.nodes import EditedNodeFile as EditedNodeFile
    from narrative.engine.nodes import NodeFile as NodeFile
    from narrative.engine.nodes import NodeList as NodeList
    from narrative.engine.nodes import NodeRow as NodeRow
    from narrative.engine.nodes import get_node as get_node
    from narrative.engine.nodes import get_value as get_value
    from narrative.engine.nodes import list_nodes as list_nodes
    from narrative.engine.remote import CloneResult as CloneResult
    from narrative.engine.remote import PullResult as PullResult
    from narrative.engine.remote import PushResult as PushResult
    from narrative.engine.remote import clone as clone
    from narrative.engine.remote import pull as pull
    from narrative.engine.remote import push as push
    from narrative.engine.replay import ReplayConflict as ReplayConflict
    from narrative.engine.replay import ReplayResult as ReplayResult
    from narrative.engine.replay import drop_chain as drop_chain
    from narrative.engine.reset import ResetResult as ResetResult
    from narrative.engine.reset import Undone as Undone
    from narrative.engine.reset import reset as reset
    from narrative.engine.revert import revert as revert
    from narrative.engine.search import SearchResult as SearchResult
    from narrative.engine.search import search as search
    from narrative.engine.setaside import RestoreResult as RestoreResult
    from narrative.engine.setaside import list_set_asides as list_set_asides
    from narrative.engine.setaside import restore as restore
    from narrative.engine.status import Status as Status
    from narrative.engine.status import StoryTime as StoryTime
    from narrative.engine.status import StoryTimeSince as StoryTimeSince
    from narrative.engine.status import status as status
    from narrative.engine.studio import EventView as EventView
    from narrative.engine.studio import WorldGraphView as WorldGraphView
    from narrative.engine.studio import event_view as event_view
    from narrative.engine.studio import world_view as world_view
    from narrative.engine.threads import ThreadRow as ThreadRow
    from narrative.engine.threads import Threads as Threads
    from narrative.engine.threads import threads as threads
    from narrative.engine.vault import VaultExport as VaultExport
    from narrative.engine.vault import export_vault as export_vault
    from narrative.engine.why import WhyChange as WhyChange
    from narrative.engine.why import WhyResult as WhyResult
    from narrative.engine.why import why as why
    from narrative.errors import BusyError as BusyError
    from narrative.errors import CheckFailedError as CheckFailedError
    from narrative.errors import ConflictError as ConflictError
    from narrative.errors import ContinuityError as ContinuityError
    from narrative.errors import DiffuserError as DiffuserError
    from narrative.errors import InvalidInputError as InvalidInputError
    from narrative.errors import InvalidWorldError as InvalidWorldError
    from narrative.errors import NarrError as NarrError
    from narrative.errors import NotAWorldError as NotAWorldError
    from narrative.errors import NotFoundError as NotFoundError
    from narrative.errors import NothingToDoError as NothingToDoError
    from narrative.errors import RequirementError as RequirementError
    from narrative.fields import FieldConflict as FieldConflict
    from narrative.library import event as event
    from narrative.library import list_chains as list_chains
    from narrative.library import list_chapters as list_chapters
    from narrative.library import open_world as open_world
    from narrative.library import replay as replay
    from narrative.model import Change as Change
    from narrative.model import CreateOp as CreateOp
    from narrative.model import Delta as Delta
    from narrative.model import EventRecord as EventRecord
    from narrative.model import ExpireOp as ExpireOp
    from narrative.model import Node as Node
    from narrative.model import Op as Op
    from narrative.model import RelateOp as RelateOp
    from narrative.model import SetOp as SetOp
    from narrative.model import UnrelateOp as UnrelateOp
    from narrative.model import UnsetOp as UnsetOp
    from narrative.nodefile import NodeDict as NodeDict
    from narrative.operations import OPERATIONS as OPERATIONS
    from narrative.operations import Operation as Operation
    from narrative.operations import operation as operation
    from narrative.shapes import EventRef as EventRef
    from narrative.shapes import PlainCommit as PlainCommit
    from narrative.shapes import Record as Record
    from narrative.shapes import StoredRecord as StoredRecord
    from narrative.store import WorldRepo as WorldRepo
    from narrative.store import batched as batch

    __all__ = [
        "OPERATIONS",
        "AddedChange",
        "AdoptResult",
        "Answer",
        "AuditReport",
        "Book",
        "Branch",
        "Branches",
        "Brief",
        "BriefEvent",
        "BriefHead",
        "BriefItem",
        "BusyError",
        "CardExport",
        "Chain",
        "ChainEnd",
        "Chains",
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
        "EditedNodeFile",
        "Entry",
        "EventInfo",
        "EventRecord",
        "EventRef",
        "EventRequest",
        "EventResult",
        "EventView",
        "ExpireOp",
        "FailedDropped",
        "FailedEvents",
        "FailedItem",
        "FailedSummary",
        "FieldConflict",
        "Finding",
        "GraphExport",
        "HistoryEvent",
        "ImportResult",
        "InitResult",
        "InvalidInputError",
        "InvalidWorldError",
        "Items",
        "LogEntries",
        "LorebookExport",
        "MergeResult",
        "NarrError",
        "NewNode",
        "Node",
        "NodeDict",
        "NodeFile",
        "NodeHistory",
        "NodeList",
        "NodeRow",
        "NotAWorldError",
        "NotFoundError",
        "NothingToDoError",
        "Op",
        "Operation",
        "PlainCommit",
        "Proposal",
        "PullResult",
        "PushResult",
        "Record",
        "RelateOp",
        "ReplayConflict",
        "ReplayResult",
        "RequirementError",
        "ResetResult",
        "RestoreResult",
        "RevertResult",
        "SearchResult",
        "SetOp",
        "Shape",
        "ShownCommit",
        "ShownEvent",
        "Status",
        "StoredRecord",
        "StoryTime",
        "StoryTimeSince",
        "ThreadRow",
        "Threads",
        "Undone",
        "UnrelateOp",
        "UnsetOp",
        "VaultExport",
        "WhyChange",
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
del TYPE_CHECKING
# --- end of the names written from the table ---
