"""Everything that touches git, SQL and the world's files: the store, and its face.

Nothing above the store imports its modules: they ask this package for the names of
:data:`FACE`, each in the engine's own terms (open a world, scan the hand edits, seal an
event, move HEAD, set edits aside, keep a chain ...), and each loads its module only when
it is first used, so a command imports only what it needs. What the engine holds of git
are the store's own small values (:mod:`~narrative.store.objects`: a ``Commit`` and a
``Tree``, ids as text), never a pygit2 object, and it never names a file under
``.git/narr/``: those belong to :class:`~narrative.store.private.PrivateState`
(``WorldRepo.private``). tests/test_layers.py fails on an import of a store module from
above, on ``.repo``, on a pygit2 name and on a file written anywhere else.
"""

from __future__ import annotations

from narrative.lazy import attach

FACE: dict[str, str] = {
    # the world: opening it, its settings, where a server keeps its handles
    "WorldRepo": ".worldrepo",
    "load_config": ".worldrepo",
    "RepositoryPool": ".worldrepo",
    "use_pool": ".worldrepo",
    # git's commits and trees, as the store's own small values
    "Commit": ".objects",
    "Tree": ".objects",
    # the world an event reads (HEAD's nodes with the hand edits laid over them)
    "WorldView": ".view",
    # narr's own files under .git/narr/ (WorldRepo.private)
    "PrivateState": ".private",
    "ServerState": ".private",
    # many events as one write
    "batched": ".batch:batch",
    # the working tree: hand edits found and read
    "HandEdits": ".worktree",
    "scan_edits": ".worktree:scan",
    "scan_for_event": ".worktree",
    "scan_for_reader": ".worktree",
    "changed_files": ".worktree:changed_paths",
    "odd_json_entries": ".worktree",
    # the world's files, never through a link
    "hazards": ".confine",
    "committed_links": ".confine",
    "inside": ".confine",
    # the one node writer
    "write_node": ".nodefiles",
    "file_digest": ".nodefiles",
    # a server's file watcher
    "WorldWatcher": ".watch",
    "keep_watching": ".watch",
    "file_sig": ".watch",
    # inotify, read in the thread that asks (a server also watches narr's own files)
    "Inotify": ".inotify",
    "WatchTrouble": ".inotify:Trouble",
    "can_watch_files": ".inotify:available",
    # the story line: revisions, what a reset undoes
    "resolve_rev": ".history:resolve",
    "peel_commit": ".history",
    "find_event": ".history",
    "first_parent": ".history",
    "is_ancestor": ".history",
    "last_record": ".history",
    "merge_base": ".history",
    "chain_commits": ".history",
    "content_of": ".history",
    "index_all_events": ".history",
    "plain_world_commits": ".history",
    "reverted_by": ".history",
    "commit_summaries": ".history:summaries",
    "commit_summary": ".history:summary",
    "told_on_line": ".history",
    "replayed_copies": ".history",
    "undone_chain": ".history",
    "unreadable_records": ".history",
    # event records in commit messages
    "decode_record": ".records:decode",
    "decode_raw_record": ".records:decode_raw",
    "has_marker": ".records",
    "record_json": ".records",
    "subject_of": ".records",
    "summary_row": ".records",
    "unreadable_record": ".records:unreadable",
    # the world as a commit holds it
    "changed_nodes": ".snapshots",
    "changed_world_paths": ".snapshots",
    "node_file": ".snapshots",
    "nodes_in": ".snapshots",
    "world_files": ".snapshots",
    # sealing an event
    "seal": ".commit",
    # moving HEAD, the working tree and the index as one journaled step
    "Move": ".move",
    "plan_move": ".move:plan",
    "move_head": ".move:move",
    "writing": ".move",
    "finish_interrupted": ".move",
    "paths_between": ".move:changed_paths",
    "index_to": ".move",
    "journaled": ".move",
    # the journal that makes a move atomic
    "SYMBOLIC": ".journal",
    # gc
    "auto_gc": ".maintenance",
    "gc": ".maintenance",
    # narr's own refs: abandoned chains, set-aside edits, replay marks
    "ABANDONED": ".refs",
    "REMOTES": ".refs",
    "keep_abandoned": ".refs",
    "held_only_by": ".refs",
    "abandoned_refs": ".refs",
    "drop_abandoned": ".refs",
    "chain_label": ".refs",
    "chain_name": ".refs",
    "chain_numbers": ".refs",
    "mark_replayed": ".refs",
    "replayed_marks": ".refs",
    "was_replayed": ".refs:replayed",
    "SetAside": ".refs",
    "set_aside_edits": ".refs:set_aside",
    "set_aside_refs": ".refs",
    "load_set_aside": ".refs",
    "delete_set_aside_ref": ".refs:drop_set_aside",
    "keep_adopted": ".refs",
    "ref_exists": ".refs:exists",
    "ref_targets": ".refs:targets",
    "dangling_refs": ".refs:dangling",
    "dropped_refs": ".refs:dropped",
    "is_own_ref": ".refs:is_own",
    "fetched_refs": ".refs",
    "names_under": ".refs",
    "remote_of": ".refs",
    "head_reflog": ".refs",
    "valid_branch_name": ".refs",
    # story branches
    "HEADS": ".branches",
    "REMOTE_HEADS": ".branches",
    "branches_at": ".branches:at_commit",
    "new_branch_ref": ".branches:create",
    "delete_branch_ref": ".branches:delete",
    "branch_exists": ".branches:exists",
    "local_branches": ".branches:local",
    "branch_tip": ".branches:tip",
    "branch_tips_but": ".branches:tips_but",
    "remote_branch_refs": ".branches:remote_refs",
    # sharing a world
    "REMOTE_KINDS": ".remote:KINDS",
    "remote_cleared": ".remote:cleared",
    "clone_repository": ".remote:clone",
    "fetch_remote": ".remote:fetch",
    "push_remote": ".remote:push",
    "default_remote": ".remote",
    "dropped_there": ".remote",
    "push_edits_setting": ".remote",
    "remote_branches_named": ".remote",
    "remove_clone": ".remote",
    "set_upstream": ".remote",
    "tracking_ref": ".remote",
    "upstream": ".remote",
    # a merge's conflicts and the joins merges made
    "joins_since": ".mergestate",
    "resolution_key": ".mergestate",
    "unresolved_conflicts": ".mergestate:unresolved",
    # the derived catalog
    "Catalog": ".catalog",
    "NodeRow": ".catalog",
    "Verified": ".catalog",
    "searchable_text": ".catalog",
    "EventInfo": ".catalog.story",
    "Write": ".catalog.story",
    # what shell completion offers
    "Files": ".completion",
    "NodeSource": ".completion",
    "branch_names": ".completion",
    "chain_labels": ".completion",
    "node_document": ".completion",
    "node_names": ".completion",
    # a new world
    "new_world": ".create",
    "world_here": ".create",
    # the git and SQLite narr needs
    "git_library": ".environment",
    "git_program": ".environment",
    "sqlite_library": ".environment",
    # a failure of the machine or the repository, named
    "environment_error": ".failures",
    "is_damage": ".failures",
    # the world's write lock
    "Abandoned": ".lock",
    "call_off_writes": ".lock",
    "give_up_waiting": ".lock",
    "refuse_if_called_off": ".lock",
    "running_command": ".lock",
    # work a server does after it answered
    "collecting": ".deferred",
    # files written outside the world (exports)
    "export_places": ".outfiles:places",
    "export_target": ".outfiles:target",
    "write_file": ".outfiles",
    "write_folder": ".outfiles",
    # names the chapters' use cases read
    "read_bounded_stream": "narrative.bounded:read_stream",
    "MAX_TEXT": "narrative.bounded",
    "read_bounded": "narrative.bounded:read",
    "MAX_RULES_FILE": "narrative.bounded",
    "load_review": ".drafts",
    "save_review": ".drafts",
    "drop_pending": ".drafts",
    "save_pending": ".drafts",
    "load_pending": ".drafts",
    "seal_chain": ".commit",
    "ChapterRow": ".catalog.chapters",
    "Span": ".catalog.chapters",
    "HandEdit": ".worktree",
    "MAX_SETTINGS": "narrative.bounded",
    # names the chapters' use cases read
    "recent_event": ".history",
    "let_go": ".watch",
}
"""The store's face: each name, and where it is defined (``.module`` or ``.module:attribute``)."""

__getattr__, __dir__, __all__ = attach(__name__, FACE)

# --- names for type checkers, written from the table by tools/names_table.py ---
TYPE_CHECKING = False
if TYPE_CHECKING:
    from narrative.bounded import MAX_RULES_FILE as MAX_RULES_FILE
    from narrative.bounded import MAX_SETTINGS as MAX_SETTINGS
    from narrative.bounded import MAX_TEXT as MAX_TEXT
    from narrative.bounded import read as read_bounded
    from narrative.bounded import read_stream as read_bounded_stream
    from narrative.store.batch import batch as batched
    from narrative.store.branches import HEADS as HEADS
    from narrative.store.branches import REMOTE_HEADS as REMOTE_HEADS
    from narrative.store.branches import at_commit as branches_at
    from narrative.store.branches import create as new_branch_ref
    from narrative.store.branches import delete as delete_branch_ref
    from narrative.store.branches import exists as branch_exists
    from narrative.store.branches import local as local_branches
    from narrative.store.branches import remote_refs as remote_branch_refs
    from narrative.store.branches import tip as branch_tip
    from narrative.store.branches import tips_but as branch_tips_but
    from narrative.store.catalog import Catalog as Catalog
    from narrative.store.catalog import NodeRow as NodeRow
    from narrative.store.catalog import Verified as Verified
    from narrative.store.catalog import searchable_text as searchable_text
    from narrative.store.catalog.chapters import ChapterRow as ChapterRow
    from narrative.store.catalog.chapters import Span as Span
    from narrative.store.catalog.story import EventInfo as EventInfo
    from narrative.store.catalog.story import Write as Write
    from narrative.store.commit import seal as seal
    from narrative.store.commit import seal_chain as seal_chain
    from narrative.store.completion import Files as Files
    from narrative.store.completion import NodeSource as NodeSource
    from narrative.store.completion import branch_names as branch_names
    from narrative.store.completion import chain_labels as chain_labels
    from narrative.store.completion import node_document as node_document
    from narrative.store.completion import node_names as node_names
    from narrative.store.confine import committed_links as committed_links
    from narrative.store.confine import hazards as hazards
    from narrative.store.confine import inside as inside
    from narrative.store.create import new_world as new_world
    from narrative.store.create import world_here as world_here
    from narrative.store.deferred import collecting as collecting
    from narrative.store.drafts import drop_pending as drop_pending
    from narrative.store.drafts import load_pending as load_pending
    from narrative.store.drafts import load_review as load_review
    from narrative.store.drafts import save_pending as save_pending
    from narrative.store.drafts import save_review as save_review
    from narrative.store.environment import git_library as git_library
    from narrative.store.environment import git_program as git_program
    from narrative.store.environment import sqlite_library as sqlite_library
    from narrative.store.failures import environment_error as environment_error
    from narrative.store.failures import is_damage as is_damage
    from narrative.store.history import chain_commits as chain_commits
    from narrative.store.history import content_of as content_of
    from narrative.store.history import find_event as find_event
    from narrative.store.history import first_parent as first_parent
    from narrative.store.history import index_all_events as index_all_events
    from narrative.store.history import is_ancestor as is_ancestor
    from narrative.store.history import last_record as last_record
    from narrative.store.history import merge_base as merge_base
    from narrative.store.history import peel_commit as peel_commit
    from narrative.store.history import plain_world_commits as plain_world_commits
    from narrative.store.history import recent_event as recent_event
    from narrative.store.history import replayed_copies as replayed_copies
    from narrative.store.history import resolve as resolve_rev
    from narrative.store.history import reverted_by as reverted_by
    from narrative.store.history import summaries as commit_summaries
    from narrative.store.history import summary as commit_summary
    from narrative.store.history import told_on_line as told_on_line
    from narrative.store.history import undone_chain as undone_chain
    from narrative.store.history import unreadable_records as unreadable_records
    from narrative.store.inotify import Inotify as Inotify
    from narrative.store.inotify import Trouble as WatchTrouble
    from narrative.store.inotify import available as can_watch_files
    from narrative.store.journal import SYMBOLIC as SYMBOLIC
    from narrative.store.lock import Abandoned as Abandoned
    from narrative.store.lock import call_off_writes as call_off_writes
    from narrative.store.lock import give_up_waiting as give_up_waiting
    from narrative.store.lock import refuse_if_called_off as refuse_if_called_off
    from narrative.store.lock import running_command as running_command
    from narrative.store.maintenance import auto_gc as auto_gc
    from narrative.store.maintenance import gc as gc
    from narrative.store.mergestate import joins_since as joins_since
    from narrative.store.mergestate import resolution_key as resolution_key
    from narrative.store.mergestate import unresolved as unresolved_conflicts
    from narrative.store.move import Move as Move
    from narrative.store.move import changed_paths as paths_between
    from narrative.store.move import finish_interrupted as finish_interrupted
    from narrative.store.move import index_to as index_to
    from narrative.store.move import journaled as journaled
    from narrative.store.move import move as move_head
    from narrative.store.move import plan as plan_move
    from narrative.store.move import writing as writing
    from narrative.store.nodefiles import file_digest as file_digest
    from narrative.store.nodefiles import write_node as write_node
    from narrative.store.objects import Commit as Commit
    from narrative.store.objects import Tree as Tree
    from narrative.store.outfiles import places as export_places
    from narrative.store.outfiles import target as export_target
    from narrative.store.outfiles import write_file as write_file
    from narrative.store.outfiles import write_folder as write_folder
    from narrative.store.private import PrivateState as PrivateState
    from narrative.store.private import ServerState as ServerState
    from narrative.store.records import decode as decode_record
    from narrative.store.records import decode_raw as decode_raw_record
    from narrative.store.records import has_marker as has_marker
    from narrative.store.records import record_json as record_json
    from narrative.store.records import subject_of as subject_of
    from narrative.store.records import summary_row as summary_row
    from narrative.store.records import unreadable as unreadable_record
    from narrative.store.refs import ABANDONED as ABANDONED
    from narrative.store.refs import REMOTES as REMOTES
    from narrative.store.refs import SetAside as SetAside
    from narrative.store.refs import abandoned_refs as abandoned_refs
    from narrative.store.refs import chain_label as chain_label
    from narrative.store.refs import chain_name as chain_name
    from narrative.store.refs import chain_numbers as chain_numbers
    from narrative.store.refs import dangling as dangling_refs
    from narrative.store.refs import drop_abandoned as drop_abandoned
    from narrative.store.refs import drop_set_aside as delete_set_aside_ref
    from narrative.store.refs import dropped as dropped_refs
    from narrative.store.refs import exists as ref_exists
    from narrative.store.refs import fetched_refs as fetched_refs
    from narrative.store.refs import head_reflog as head_reflog
    from narrative.store.refs import held_only_by as held_only_by
    from narrative.store.refs import is_own as is_own_ref
    from narrative.store.refs import keep_abandoned as keep_abandoned
    from narrative.store.refs import keep_adopted as keep_adopted
    from narrative.store.refs import load_set_aside as load_set_aside
    from narrative.store.refs import mark_replayed as mark_replayed
    from narrative.store.refs import names_under as names_under
    from narrative.store.refs import remote_of as remote_of
    from narrative.store.refs import replayed as was_replayed
    from narrative.store.refs import replayed_marks as replayed_marks
    from narrative.store.refs import set_aside as set_aside_edits
    from narrative.store.refs import set_aside_refs as set_aside_refs
    from narrative.store.refs import targets as ref_targets
    from narrative.store.refs import valid_branch_name as valid_branch_name
    from narrative.store.remote import KINDS as REMOTE_KINDS
    from narrative.store.remote import cleared as remote_cleared
    from narrative.store.remote import clone as clone_repository
    from narrative.store.remote import default_remote as default_remote
    from narrative.store.remote import dropped_there as dropped_there
    from narrative.store.remote import fetch as fetch_remote
    from narrative.store.remote import push as push_remote
    from narrative.store.remote import push_edits_setting as push_edits_setting
    from narrative.store.remote import remote_branches_named as remote_branches_named
    from narrative.store.remote import remove_clone as remove_clone
    from narrative.store.remote import set_upstream as set_upstream
    from narrative.store.remote import tracking_ref as tracking_ref
    from narrative.store.remote import upstream as upstream
    from narrative.store.snapshots import changed_nodes as changed_nodes
    from narrative.store.snapshots import changed_world_paths as changed_world_paths
    from narrative.store.snapshots import node_file as node_file
    from narrative.store.snapshots import nodes_in as nodes_in
    from narrative.store.snapshots import world_files as world_files
    from narrative.store.view import WorldView as WorldView
    from narrative.store.watch import WorldWatcher as WorldWatcher
    from narrative.store.watch import file_sig as file_sig
    from narrative.store.watch import keep_watching as keep_watching
    from narrative.store.watch import let_go as let_go
    from narrative.store.worktree import HandEdit as HandEdit
    from narrative.store.worktree import HandEdits as HandEdits
    from narrative.store.worktree import changed_paths as changed_files
    from narrative.store.worktree import odd_json_entries as odd_json_entries
    from narrative.store.worktree import scan as scan_edits
    from narrative.store.worktree import scan_for_event as scan_for_event
    from narrative.store.worktree import scan_for_reader as scan_for_reader
    from narrative.store.worldrepo import RepositoryPool as RepositoryPool
    from narrative.store.worldrepo import WorldRepo as WorldRepo
    from narrative.store.worldrepo import load_config as load_config
    from narrative.store.worldrepo import use_pool as use_pool

    __all__ = [
        "ABANDONED",
        "HEADS",
        "MAX_RULES_FILE",
        "MAX_SETTINGS",
        "MAX_TEXT",
        "REMOTES",
        "REMOTE_HEADS",
        "REMOTE_KINDS",
        "SYMBOLIC",
        "Abandoned",
        "Catalog",
        "ChapterRow",
        "Commit",
        "EventInfo",
        "Files",
        "HandEdit",
        "HandEdits",
        "Inotify",
        "Move",
        "NodeRow",
        "NodeSource",
        "PrivateState",
        "RepositoryPool",
        "ServerState",
        "SetAside",
        "Span",
        "Tree",
        "Verified",
        "WatchTrouble",
        "WorldRepo",
        "WorldView",
        "WorldWatcher",
        "Write",
        "abandoned_refs",
        "auto_gc",
        "batched",
        "branch_exists",
        "branch_names",
        "branch_tip",
        "branch_tips_but",
        "branches_at",
        "call_off_writes",
        "can_watch_files",
        "chain_commits",
        "chain_label",
        "chain_labels",
        "chain_name",
        "chain_numbers",
        "changed_files",
        "changed_nodes",
        "changed_world_paths",
        "clone_repository",
        "collecting",
        "commit_summaries",
        "commit_summary",
        "committed_links",
        "content_of",
        "dangling_refs",
        "decode_raw_record",
        "decode_record",
        "default_remote",
        "delete_branch_ref",
        "delete_set_aside_ref",
        "drop_abandoned",
        "drop_pending",
        "dropped_refs",
        "dropped_there",
        "environment_error",
        "export_places",
        "export_target",
        "fetch_remote",
        "fetched_refs",
        "file_digest",
        "file_sig",
        "find_event",
        "finish_interrupted",
        "first_parent",
        "gc",
        "git_library",
        "git_program",
        "give_up_waiting",
        "has_marker",
        "hazards",
        "head_reflog",
        "held_only_by",
        "index_all_events",
        "index_to",
        "inside",
        "is_ancestor",
        "is_damage",
        "is_own_ref",
        "joins_since",
        "journaled",
        "keep_abandoned",
        "keep_adopted",
        "keep_watching",
        "last_record",
        "let_go",
        "load_config",
        "load_pending",
        "load_review",
        "load_set_aside",
        "local_branches",
        "mark_replayed",
        "merge_base",
        "move_head",
        "names_under",
        "new_branch_ref",
        "new_world",
        "node_document",
        "node_file",
        "node_names",
        "nodes_in",
        "odd_json_entries",
        "paths_between",
        "peel_commit",
        "plain_world_commits",
        "plan_move",
        "push_edits_setting",
        "push_remote",
        "read_bounded",
        "read_bounded_stream",
        "recent_event",
        "record_json",
        "ref_exists",
        "ref_targets",
        "refuse_if_called_off",
        "remote_branch_refs",
        "remote_branches_named",
        "remote_cleared",
        "remote_of",
        "remove_clone",
        "replayed_copies",
        "replayed_marks",
        "resolution_key",
        "resolve_rev",
        "reverted_by",
        "running_command",
        "save_pending",
        "save_review",
        "scan_edits",
        "scan_for_event",
        "scan_for_reader",
        "seal",
        "seal_chain",
        "searchable_text",
        "set_aside_edits",
        "set_aside_refs",
        "set_upstream",
        "sqlite_library",
        "subject_of",
        "summary_row",
        "told_on_line",
        "tracking_ref",
        "undone_chain",
        "unreadable_record",
        "unreadable_records",
        "unresolved_conflicts",
        "upstream",
        "use_pool",
        "valid_branch_name",
        "was_replayed",
        "world_files",
        "world_here",
        "write_file",
        "write_folder",
        "write_node",
        "writing",
    ]
del TYPE_CHECKING
# --- end of the names written from the table ---
