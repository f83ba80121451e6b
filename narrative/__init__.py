"""narr: a git-backed, versioned narrative engine.

The world graph is a directory of JSON node files; every story event is a git
commit that records its field-level changes. This package is the library; the
``narr`` command is a thin layer over it (:mod:`narrative.cli`).

The supported surface is :mod:`narrative.api`, re-exported here on first use
(``narrative.open_world``, ``narrative.event``...). Importing the package itself
stays cheap on purpose: git, pydantic and networkx are loaded by the modules
that need them, so ``narr --version`` and a thin client start fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a thin client's start)
if TYPE_CHECKING:
    from typing import Any

    from narrative.api import *  # noqa: F403  (the names below, typed for type checkers)
del TYPE_CHECKING, annotations  # the two names the lines above bind are no part of the package

__version__ = "0.1.0"

# The names of narrative.api, spelt out so that looking up anything else (a submodule
# being imported, a misspelling) never loads the library. A test keeps the two equal.
_API = frozenset({
    "BusyError", "Change", "CheckFailedError", "CheckReport", "ConflictError", "CreateOp", "Delta",
    "DictWorld", "Diffuser", "DiffuserError", "Draft", "Entry", "EventRecord", "EventRequest",
    "EventResult", "ExpireOp", "InitResult", "InvalidInputError", "InvalidWorldError", "NarrError",
    "Node", "NotAWorldError", "NotFoundError", "NothingToDoError", "Op", "Proposal", "RelateOp",
    "ReplayResult", "ResetResult", "RestoreResult", "SetOp", "Status", "UnrelateOp", "UnsetOp",
    "World", "WorldRepo", "batch", "check", "create_branch", "default_diffuser", "delete_branch",
    "event", "failed_events", "get_diffuser", "get_node", "get_value", "init_world",
    "list_branches", "list_chains", "list_nodes", "list_set_asides", "log", "open_world", "reflog",
    "register", "replay", "reset", "restore", "retry", "revert", "run_event", "show", "status",
    "switch", "Brief", "brief", "Connection", "GraphExport", "connect", "export_graph",
    "NodeHistory", "history_of", "SearchResult", "search", "WhyResult", "why", "Book", "book",
    "Codex", "codex", "Threads", "threads",
    "AuditReport", "ContinuityError", "Finding", "audit",
    "resolve_node", "NewNode", "new_node",
    "ImportResult", "import_bible",
    "LorebookExport", "export_lorebook", "CardExport", "export_card", "VaultExport", "export_vault",
    "AdoptResult", "adopt",
    "log_of", "node_log", "drop_chain",
    "FieldConflict", "MergeResult", "merge", "abort_merge", "merge_conflicts", "continue_merge",
    "resolve_conflict",
    "clone", "CloneResult", "pull", "PullResult", "push", "PushResult", "list_remote_branches",
    "EventView", "WorldGraphView", "event_view", "world_view",
    "DoctorReport", "doctor", "RequirementError",
    "OPERATIONS", "Operation", "operation", "Chain", "ops", "EventInfo", "NodeDict",
    "AddedChange", "ChapterInfo", "ChapterResult", "ChapterReview", "list_chapters",
    "record_chapter", "retry_chapter", "review_chapter",
})
__all__ = sorted(_API)  # ``from narrative import *`` loads the library, as any use of a name does


def __getattr__(name: str) -> Any:
    if name in _API:
        from narrative import api

        return getattr(api, name)
    raise AttributeError(f"module 'narrative' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
