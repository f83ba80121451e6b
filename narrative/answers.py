"""The name and version of every JSON answer narr gives: ``"schema": "narr.NAME/VERSION"``.

The CLI's ``--json``, the HTTP API and the MCP tools all answer a JSON object whose
``"schema"`` field names its shape (a list comes as ``{"schema": ..., "items": [...]}``), so a
program can tell which shape it got and the same operation answers the same JSON through each
transport. A change of shape bumps the number here (tests/test_answer_shapes.py fails until it
does); an old number is never reused for a new shape.
"""

from __future__ import annotations

from typing import Any

VERSIONS: dict[str, int] = {
    # the operations of narrative.api.OPERATIONS: the CLI, HTTP and MCP alike
    "status": 2, "list_nodes": 1, "get_node": 1, "log": 2, "show": 2, "branches": 1,
    "chains": 2, "why": 2, "history": 2, "search": 1, "brief": 2, "threads": 1, "audit": 1,
    "event": 2, "reset": 1, "revert": 2, "replay": 2, "edit_node": 1, "chapter": 1,
    # answers only the CLI gives
    "adopt": 1, "branch_created": 1, "branch_deleted": 1, "remote_branches": 1,
    "chain_dropped": 1, "chapters": 1, "check": 1, "clone": 1, "codex": 1, "conflicts": 1, "doctor": 1,
    "edits": 1, "edit_restored": 1, "edit_dropped": 2, "error": 1, "export_written": 1,
    "failed": 1, "failed_dropped": 1, "gc": 1, "get_value": 1, "graph": 1, "graph_sizes": 1,
    "connect": 1, "import": 2, "init": 1, "merge": 2, "merge_aborted": 1, "new": 1,
    "path": 1, "pull": 2, "push": 2, "reflog": 1, "resolve": 1, "server": 3, "story": 2,
    "studio": 1, "switch": 1, "vault": 2,
    # the studio page's own reads over HTTP
    "studio_world": 2, "studio_events": 1, "studio_lines": 1, "studio_diffusers": 1,
    "studio_node": 2, "studio_names": 1, "studio_problems": 1, "studio_where": 1,
    "studio_manuscript": 2, "studio_mentions": 1,
}


def schema(name: str) -> str:
    """``narr.NAME/VERSION`` of the answer called ``name``."""
    return f"narr.{name}/{VERSIONS[name]}"


def answer(schema: str, value: Any) -> dict[str, Any]:
    """``value`` (a result with ``to_json``, a dict or a list) named by its schema."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, list):
        return {"schema": schema, "items": value}
    assert isinstance(value, dict), type(value)
    return {"schema": schema, **value}
