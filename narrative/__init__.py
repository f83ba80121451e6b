"""narr: a git-backed, versioned narrative engine.

The world graph is a directory of JSON node files; every story event is a git
commit that records its field-level changes. This package is the library; the
``narr`` command is a thin layer over it (:mod:`narrative.cli`).

The library's names (``narrative.open_world``, ``narrative.event``...) are one table,
``_FACE``, each loaded from its own module on first use: importing the package
stays cheap on purpose (no git, pydantic or networkx), so ``narr --version``, a thin
client and a program that only opens a world start fast.
"""

from narrative.lazy import attach

__version__ = "0.1.0"

_FACE: dict[str, str] = {
    # the library's own functions
    "event": "narrative.library",
    "list_chains": "narrative.library",
    "list_chapters": "narrative.library",
    "open_world": "narrative.library",
    "operation": "narrative.operations",
    "replay": "narrative.library",
    # the operations' rows: one function each, with the row's name, arguments and answer
    "status": "narrative.calls",
    "list_nodes": "narrative.calls",
    "get_node": "narrative.calls",
    "log": "narrative.calls",
    "show": "narrative.calls",
    "why": "narrative.calls",
    "history": "narrative.calls",
    "search": "narrative.calls",
    "brief": "narrative.calls",
    "threads": "narrative.calls",
    "audit": "narrative.calls",
    "failed": "narrative.calls",
    "retry": "narrative.calls",
    "drop_failed": "narrative.calls",
    "chapter": "narrative.calls",
    "chains": "narrative.calls",
    "reset": "narrative.calls",
    "revert": "narrative.calls",
    "drop_chain": "narrative.calls",
    "branches": "narrative.calls",
    "remote_branches": "narrative.calls",
    "create_branch": "narrative.calls",
    "delete_branch": "narrative.calls",
    "switch": "narrative.calls",
    "merge": "narrative.calls",
    "continue_merge": "narrative.calls",
    "abort_merge": "narrative.calls",
    "conflicts": "narrative.calls",
    "resolve": "narrative.calls",
    "new_node": "narrative.calls",
    "edit_node": "narrative.calls",
    "edits": "narrative.calls",
    "restore_edits": "narrative.calls",
    "drop_edits": "narrative.calls",
    "reflog": "narrative.calls",
    "check": "narrative.calls",
    "adopt": "narrative.calls",
    "gc": "narrative.calls",
    # a world, opened
    "WorldRepo": "narrative.store",
    "batch": "narrative.store:batched",
    # the use cases and their results
    "AdoptResult": "narrative.engine.adopt",
    "AuditReport": "narrative.engine.audit",
    "Finding": "narrative.engine.audit",
    "ImportResult": "narrative.engine.bible",
    "import_bible": "narrative.engine.bible",
    "Book": "narrative.engine.book",
    "book": "narrative.engine.book",
    "list_branches": "narrative.engine.branches",
    "list_remote_branches": "narrative.engine.branches",
    "Brief": "narrative.engine.brief",
    "AddedChange": "narrative.engine.chapter",
    "ChapterResult": "narrative.engine.chapter",
    "ChapterReview": "narrative.engine.chapter",
    "record_chapter": "narrative.engine.chapter:record",
    "retry_chapter": "narrative.engine.chapter:retry",
    "review_chapter": "narrative.engine.chapter:review",
    "ChapterInfo": "narrative.engine.chapters",
    "CheckReport": "narrative.engine.check",
    "Codex": "narrative.engine.codex",
    "codex": "narrative.engine.codex",
    "DoctorReport": "narrative.engine.doctor",
    "doctor": "narrative.engine.doctor",
    "EventResult": "narrative.engine.event",
    "run_event": "narrative.engine.event",
    "EventInfo": "narrative.engine.eventgraph",
    "failed_events": "narrative.engine.failed:listing",
    "Connection": "narrative.engine.graphs",
    "GraphExport": "narrative.engine.graphs",
    "connect": "narrative.engine.graphs",
    "export_graph": "narrative.engine.graphs",
    "NodeHistory": "narrative.engine.history_of",
    "history_of": "narrative.engine.history_of",
    "InitResult": "narrative.engine.init",
    "init_world": "narrative.engine.init",
    "Entry": "narrative.engine.log",
    "log_of": "narrative.engine.log",
    "node_log": "narrative.engine.log",
    "CardExport": "narrative.engine.lorebook",
    "LorebookExport": "narrative.engine.lorebook",
    "export_card": "narrative.engine.lorebook",
    "export_lorebook": "narrative.engine.lorebook",
    "MergeResult": "narrative.engine.merge",
    "merge_conflicts": "narrative.engine.merge:conflicts",
    "resolve_conflict": "narrative.engine.merge:resolve",
    "resolve_node": "narrative.engine.naming",
    "NewNode": "narrative.engine.new",
    "get_value": "narrative.engine.nodes",
    "CloneResult": "narrative.engine.remote",
    "PullResult": "narrative.engine.remote",
    "PushResult": "narrative.engine.remote",
    "clone": "narrative.engine.remote",
    "pull": "narrative.engine.remote",
    "push": "narrative.engine.remote",
    "Chain": "narrative.engine.chains",
    "ChainEnd": "narrative.engine.chains",
    "Chains": "narrative.engine.chains",
    "Branch": "narrative.engine.branches",
    "Branches": "narrative.engine.branches",
    "NodeRow": "narrative.engine.nodes",
    "NodeList": "narrative.engine.nodes",
    "NodeFile": "narrative.engine.nodes",
    "EditedNodeFile": "narrative.engine.nodes",
    "LogEntries": "narrative.engine.log",
    "ShownEvent": "narrative.engine.log",
    "ShownCommit": "narrative.engine.log",
    "FailedSummary": "narrative.engine.failed_answers",
    "FailedItem": "narrative.engine.failed_answers",
    "FailedEvents": "narrative.engine.failed_answers",
    "FailedDropped": "narrative.engine.failed_answers",
    "StoryTime": "narrative.engine.status",
    "StoryTimeSince": "narrative.engine.status",
    "WhyChange": "narrative.engine.why",
    "RevertResult": "narrative.engine.event",
    "ReplayConflict": "narrative.engine.replay",
    "Undone": "narrative.engine.reset",
    "HistoryEvent": "narrative.engine.history_of",
    "BriefItem": "narrative.engine.brief",
    "BriefEvent": "narrative.engine.brief",
    "BriefHead": "narrative.engine.brief",
    "ThreadRow": "narrative.engine.threads",
    "Answer": "narrative.answers",
    "Items": "narrative.answers",
    "Shape": "narrative.answers",
    "Record": "narrative.shapes",
    "PlainCommit": "narrative.shapes",
    "StoredRecord": "narrative.shapes",
    "EventRef": "narrative.shapes",
    "ReplayResult": "narrative.engine.replay",
    "ResetResult": "narrative.engine.reset",
    "SearchResult": "narrative.engine.search",
    "RestoreResult": "narrative.engine.setaside",
    "list_set_asides": "narrative.engine.setaside",
    "restore": "narrative.engine.setaside",
    "Status": "narrative.engine.status",
    "EventView": "narrative.engine.studio",
    "WorldGraphView": "narrative.engine.studio",
    "event_view": "narrative.engine.studio",
    "world_view": "narrative.engine.studio",
    "Threads": "narrative.engine.threads",
    "VaultExport": "narrative.engine.vault",
    "export_vault": "narrative.engine.vault",
    "WhyResult": "narrative.engine.why",
    # the answers of the rows that have no use case's class of their own above
    "ChapterAnswer": "narrative.engine.chapter_answers",
    "AddedParams": "narrative.operations.chapters",
    "RemoteBranches": "narrative.engine.branches",
    "BranchCreated": "narrative.engine.branches",
    "BranchDeleted": "narrative.engine.branches",
    "Switched": "narrative.engine.branches",
    "MergeAborted": "narrative.engine.merge",
    "Conflicts": "narrative.engine.merge",
    "Resolved": "narrative.engine.merge",
    "AdoptAnswer": "narrative.answer_models",
    "ChainDroppedAnswer": "narrative.answer_models",
    "CheckAnswer": "narrative.answer_models",
    "EditDroppedAnswer": "narrative.answer_models",
    "EditRestoredAnswer": "narrative.answer_models",
    "EditsAnswer": "narrative.answer_models",
    "GcAnswer": "narrative.answer_models",
    "NewAnswer": "narrative.answer_models",
    "ReflogAnswer": "narrative.answer_models",
    "GetValueAnswer": "narrative.answer_models",
    "PathAnswer": "narrative.answer_models",
    "InitAnswer": "narrative.answer_models",
    "CloneAnswer": "narrative.answer_models",
    "PushAnswer": "narrative.answer_models",
    "PullAnswer": "narrative.answer_models",
    "GraphAnswer": "narrative.answer_models",
    "GraphSizesAnswer": "narrative.answer_models",
    "ConnectAnswer": "narrative.answer_models",
    "StoryAnswer": "narrative.answer_models",
    "ChaptersAnswer": "narrative.engine.chapter_answers",
    "DoctorAnswer": "narrative.engine.doctor",
    "path": "narrative.calls",
    "story": "narrative.calls",
    "chapters": "narrative.calls",
    "init": "narrative.calls",
    "world_graph": "narrative.calls",
    "event_graph": "narrative.calls",
    "graph_sizes": "narrative.calls",
    # the operations table
    "OPERATIONS": "narrative.operations",
    "Operation": "narrative.operations",
    # what a diffuser reads and returns
    "Draft": "narrative.delta.draft",
    "Diffuser": "narrative.delta.proposal",
    "Proposal": "narrative.delta.proposal",
    "EventRequest": "narrative.delta.request",
    "DictWorld": "narrative.delta.world",
    "World": "narrative.delta.world",
    # the diffusers
    "get_diffuser": "narrative.diffusers.base",
    "register": "narrative.diffusers.base",
    "default_diffuser": "narrative.diffusers.base:default_name",
    # the data: nodes, changes, ops, event records
    "Change": "narrative.model",
    "CreateOp": "narrative.model",
    "Delta": "narrative.model",
    "EventRecord": "narrative.model",
    "ExpireOp": "narrative.model",
    "Node": "narrative.model",
    "JSON": "narrative.model",
    "Op": "narrative.model",
    "RelateOp": "narrative.model",
    "SetOp": "narrative.model",
    "UnrelateOp": "narrative.model",
    "UnsetOp": "narrative.model",
    "NodeDict": "narrative.nodefile",
    "FieldConflict": "narrative.fields",
    "ops": "narrative.ops:",
    # errors a user can cause
    "BusyError": "narrative.errors",
    "CheckFailedError": "narrative.errors",
    "ConflictError": "narrative.errors",
    "ContinuityError": "narrative.errors",
    "DiffuserError": "narrative.errors",
    "InvalidInputError": "narrative.errors",
    "InvalidWorldError": "narrative.errors",
    "NarrError": "narrative.errors",
    "NotAWorldError": "narrative.errors",
    "NotFoundError": "narrative.errors",
    "NothingToDoError": "narrative.errors",
    "RequirementError": "narrative.errors",
}
"""The library: each supported name and where it is defined (``module:attribute``). Names here
keep working from one release to the next (tests/test_api.py holds them); modules under
``narrative.engine``, ``narrative.store`` and ``narrative.delta`` may move."""

__getattr__, __dir__, __all__ = attach(__name__, _FACE)
del attach  # the package offers its names, and nothing else

# --- names for type checkers, written from the table by tools/names_table.py ---
TYPE_CHECKING = False
if TYPE_CHECKING:
    from narrative import ops as ops
    from narrative.answer_models import AdoptAnswer as AdoptAnswer
    from narrative.answer_models import ChainDroppedAnswer as ChainDroppedAnswer
    from narrative.answer_models import CheckAnswer as CheckAnswer
    from narrative.answer_models import CloneAnswer as CloneAnswer
    from narrative.answer_models import ConnectAnswer as ConnectAnswer
    from narrative.answer_models import EditDroppedAnswer as EditDroppedAnswer
    from narrative.answer_models import EditRestoredAnswer as EditRestoredAnswer
    from narrative.answer_models import EditsAnswer as EditsAnswer
    from narrative.answer_models import GcAnswer as GcAnswer
    from narrative.answer_models import GetValueAnswer as GetValueAnswer
    from narrative.answer_models import GraphAnswer as GraphAnswer
    from narrative.answer_models import GraphSizesAnswer as GraphSizesAnswer
    from narrative.answer_models import InitAnswer as InitAnswer
    from narrative.answer_models import NewAnswer as NewAnswer
    from narrative.answer_models import PathAnswer as PathAnswer
    from narrative.answer_models import PullAnswer as PullAnswer
    from narrative.answer_models import PushAnswer as PushAnswer
    from narrative.answer_models import ReflogAnswer as ReflogAnswer
    from narrative.answer_models import StoryAnswer as StoryAnswer
    from narrative.answers import Answer as Answer
    from narrative.answers import Items as Items
    from narrative.answers import Shape as Shape
    from narrative.calls import abort_merge as abort_merge
    from narrative.calls import adopt as adopt
    from narrative.calls import audit as audit
    from narrative.calls import branches as branches
    from narrative.calls import brief as brief
    from narrative.calls import chains as chains
    from narrative.calls import chapter as chapter
    from narrative.calls import chapters as chapters
    from narrative.calls import check as check
    from narrative.calls import conflicts as conflicts
    from narrative.calls import continue_merge as continue_merge
    from narrative.calls import create_branch as create_branch
    from narrative.calls import delete_branch as delete_branch
    from narrative.calls import drop_chain as drop_chain
    from narrative.calls import drop_edits as drop_edits
    from narrative.calls import drop_failed as drop_failed
    from narrative.calls import edit_node as edit_node
    from narrative.calls import edits as edits
    from narrative.calls import event_graph as event_graph
    from narrative.calls import failed as failed
    from narrative.calls import gc as gc
    from narrative.calls import get_node as get_node
    from narrative.calls import graph_sizes as graph_sizes
    from narrative.calls import history as history
    from narrative.calls import init as init
    from narrative.calls import list_nodes as list_nodes
    from narrative.calls import log as log
    from narrative.calls import merge as merge
    from narrative.calls import new_node as new_node
    from narrative.calls import path as path
    from narrative.calls import reflog as reflog
    from narrative.calls import remote_branches as remote_branches
    from narrative.calls import reset as reset
    from narrative.calls import resolve as resolve
    from narrative.calls import restore_edits as restore_edits
    from narrative.calls import retry as retry
    from narrative.calls import revert as revert
    from narrative.calls import search as search
    from narrative.calls import show as show
    from narrative.calls import status as status
    from narrative.calls import story as story
    from narrative.calls import switch as switch
    from narrative.calls import threads as threads
    from narrative.calls import why as why
    from narrative.calls import world_graph as world_graph
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
    from narrative.engine.audit import AuditReport as AuditReport
    from narrative.engine.audit import Finding as Finding
    from narrative.engine.bible import ImportResult as ImportResult
    from narrative.engine.bible import import_bible as import_bible
    from narrative.engine.book import Book as Book
    from narrative.engine.book import book as book
    from narrative.engine.branches import Branch as Branch
    from narrative.engine.branches import BranchCreated as BranchCreated
    from narrative.engine.branches import BranchDeleted as BranchDeleted
    from narrative.engine.branches import Branches as Branches
    from narrative.engine.branches import RemoteBranches as RemoteBranches
    from narrative.engine.branches import Switched as Switched
    from narrative.engine.branches import list_branches as list_branches
    from narrative.engine.branches import list_remote_branches as list_remote_branches
    from narrative.engine.brief import Brief as Brief
    from narrative.engine.brief import BriefEvent as BriefEvent
    from narrative.engine.brief import BriefHead as BriefHead
    from narrative.engine.brief import BriefItem as BriefItem
    from narrative.engine.chains import Chain as Chain
    from narrative.engine.chains import ChainEnd as ChainEnd
    from narrative.engine.chains import Chains as Chains
    from narrative.engine.chapter import AddedChange as AddedChange
    from narrative.engine.chapter import ChapterResult as ChapterResult
    from narrative.engine.chapter import ChapterReview as ChapterReview
    from narrative.engine.chapter import record as record_chapter
    from narrative.engine.chapter import retry as retry_chapter
    from narrative.engine.chapter import review as review_chapter
    from narrative.engine.chapter_answers import ChapterAnswer as ChapterAnswer
    from narrative.engine.chapter_answers import ChaptersAnswer as ChaptersAnswer
    from narrative.engine.chapters import ChapterInfo as ChapterInfo
    from narrative.engine.check import CheckReport as CheckReport
    from narrative.engine.codex import Codex as Codex
    from narrative.engine.codex import codex as codex
    from narrative.engine.doctor import DoctorAnswer as DoctorAnswer
    from narrative.engine.doctor import DoctorReport as DoctorReport
    from narrative.engine.doctor import doctor as doctor
    from narrative.engine.event import EventResult as EventResult
    from narrative.engine.event import RevertResult as RevertResult
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
    from narrative.engine.log import log_of as log_of
    from narrative.engine.log import node_log as node_log
    from narrative.engine.lorebook import CardExport as CardExport
    from narrative.engine.lorebook import LorebookExport as LorebookExport
    from narrative.engine.lorebook import export_card as export_card
    from narrative.engine.lorebook import export_lorebook as export_lorebook
    from narrative.engine.merge import Conflicts as Conflicts
    from narrative.engine.merge import MergeAborted as MergeAborted
    from narrative.engine.merge import MergeResult as MergeResult
    from narrative.engine.merge import Resolved as Resolved
    from narrative.engine.merge import conflicts as merge_conflicts
    from narrative.engine.merge import resolve as resolve_conflict
    from narrative.engine.naming import resolve_node as resolve_node
    from narrative.engine.new import NewNode as NewNode
    from narrative.engine.nodes import EditedNodeFile as EditedNodeFile
    from narrative.engine.nodes import NodeFile as NodeFile
    from narrative.engine.nodes import NodeList as NodeList
    from narrative.engine.nodes import NodeRow as NodeRow
    from narrative.engine.nodes import get_value as get_value
    from narrative.engine.remote import CloneResult as CloneResult
    from narrative.engine.remote import PullResult as PullResult
    from narrative.engine.remote import PushResult as PushResult
    from narrative.engine.remote import clone as clone
    from narrative.engine.remote import pull as pull
    from narrative.engine.remote import push as push
    from narrative.engine.replay import ReplayConflict as ReplayConflict
    from narrative.engine.replay import ReplayResult as ReplayResult
    from narrative.engine.reset import ResetResult as ResetResult
    from narrative.engine.reset import Undone as Undone
    from narrative.engine.search import SearchResult as SearchResult
    from narrative.engine.setaside import RestoreResult as RestoreResult
    from narrative.engine.setaside import list_set_asides as list_set_asides
    from narrative.engine.setaside import restore as restore
    from narrative.engine.status import Status as Status
    from narrative.engine.status import StoryTime as StoryTime
    from narrative.engine.status import StoryTimeSince as StoryTimeSince
    from narrative.engine.studio import EventView as EventView
    from narrative.engine.studio import WorldGraphView as WorldGraphView
    from narrative.engine.studio import event_view as event_view
    from narrative.engine.studio import world_view as world_view
    from narrative.engine.threads import ThreadRow as ThreadRow
    from narrative.engine.threads import Threads as Threads
    from narrative.engine.vault import VaultExport as VaultExport
    from narrative.engine.vault import export_vault as export_vault
    from narrative.engine.why import WhyChange as WhyChange
    from narrative.engine.why import WhyResult as WhyResult
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
    from narrative.model import JSON as JSON
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
    from narrative.operations.chapters import AddedParams as AddedParams
    from narrative.shapes import EventRef as EventRef
    from narrative.shapes import PlainCommit as PlainCommit
    from narrative.shapes import Record as Record
    from narrative.shapes import StoredRecord as StoredRecord
    from narrative.store import WorldRepo as WorldRepo
    from narrative.store import batched as batch

    __all__ = [
        "JSON",
        "OPERATIONS",
        "AddedChange",
        "AddedParams",
        "AdoptAnswer",
        "AdoptResult",
        "Answer",
        "AuditReport",
        "Book",
        "Branch",
        "BranchCreated",
        "BranchDeleted",
        "Branches",
        "Brief",
        "BriefEvent",
        "BriefHead",
        "BriefItem",
        "BusyError",
        "CardExport",
        "Chain",
        "ChainDroppedAnswer",
        "ChainEnd",
        "Chains",
        "Change",
        "ChapterAnswer",
        "ChapterInfo",
        "ChapterResult",
        "ChapterReview",
        "ChaptersAnswer",
        "CheckAnswer",
        "CheckFailedError",
        "CheckReport",
        "CloneAnswer",
        "CloneResult",
        "Codex",
        "ConflictError",
        "Conflicts",
        "ConnectAnswer",
        "Connection",
        "ContinuityError",
        "CreateOp",
        "Delta",
        "DictWorld",
        "Diffuser",
        "DiffuserError",
        "DoctorAnswer",
        "DoctorReport",
        "Draft",
        "EditDroppedAnswer",
        "EditRestoredAnswer",
        "EditedNodeFile",
        "EditsAnswer",
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
        "GcAnswer",
        "GetValueAnswer",
        "GraphAnswer",
        "GraphExport",
        "GraphSizesAnswer",
        "HistoryEvent",
        "ImportResult",
        "InitAnswer",
        "InitResult",
        "InvalidInputError",
        "InvalidWorldError",
        "Items",
        "LogEntries",
        "LorebookExport",
        "MergeAborted",
        "MergeResult",
        "NarrError",
        "NewAnswer",
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
        "PathAnswer",
        "PlainCommit",
        "Proposal",
        "PullAnswer",
        "PullResult",
        "PushAnswer",
        "PushResult",
        "Record",
        "ReflogAnswer",
        "RelateOp",
        "RemoteBranches",
        "ReplayConflict",
        "ReplayResult",
        "RequirementError",
        "ResetResult",
        "Resolved",
        "RestoreResult",
        "RevertResult",
        "SearchResult",
        "SetOp",
        "Shape",
        "ShownCommit",
        "ShownEvent",
        "Status",
        "StoredRecord",
        "StoryAnswer",
        "StoryTime",
        "StoryTimeSince",
        "Switched",
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
        "branches",
        "brief",
        "chains",
        "chapter",
        "chapters",
        "check",
        "clone",
        "codex",
        "conflicts",
        "connect",
        "continue_merge",
        "create_branch",
        "default_diffuser",
        "delete_branch",
        "doctor",
        "drop_chain",
        "drop_edits",
        "drop_failed",
        "edit_node",
        "edits",
        "event",
        "event_graph",
        "event_view",
        "export_card",
        "export_graph",
        "export_lorebook",
        "export_vault",
        "failed",
        "failed_events",
        "gc",
        "get_diffuser",
        "get_node",
        "get_value",
        "graph_sizes",
        "history",
        "history_of",
        "import_bible",
        "init",
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
        "path",
        "pull",
        "push",
        "record_chapter",
        "reflog",
        "register",
        "remote_branches",
        "replay",
        "reset",
        "resolve",
        "resolve_conflict",
        "resolve_node",
        "restore",
        "restore_edits",
        "retry",
        "retry_chapter",
        "revert",
        "review_chapter",
        "run_event",
        "search",
        "show",
        "status",
        "story",
        "switch",
        "threads",
        "why",
        "world_graph",
        "world_view",
    ]
del TYPE_CHECKING
# --- end of the names written from the table ---
