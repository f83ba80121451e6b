"""Former home of the read commands, kept so that old imports work for one more release.

Use :mod:`narrative.engine.log`, :mod:`narrative.engine.nodes`,
:mod:`narrative.engine.status` and :mod:`narrative.store.history` instead.
"""

from narrative.engine.log import Entry, entry, log, show
from narrative.engine.nodes import get_node, get_value, list_nodes, locate, parse_field
from narrative.engine.status import Status, hand_edit_problems, require_valid_worktree, status
from narrative.store.history import find_event, index_all_events, resolve
from narrative.store.move import finish_interrupted

__all__ = ["Entry", "Status", "entry", "find_event", "finish_interrupted", "get_node", "get_value",
           "hand_edit_problems", "index_all_events", "list_nodes", "locate", "log", "parse_field",
           "require_valid_worktree", "resolve", "show", "status"]
