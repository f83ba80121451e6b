"""A program that reads a narr world's answers field by field, as a type checker sees them.

Each function of the library is one row of the operations table (the same name and arguments
as the MCP tool and the HTTP route) and returns that row's answer as a model: its fields are
typed, so ``mypy --strict`` (and an editor) knows a brief's items, a status's hand edits, the
value a ``why`` explains and each node of a listing. A node's values are JSON (``narr.JSON``).
The test suite runs it on the sample world and type-checks it, with no expression of type
``Any`` allowed (the ``mypy:`` line below).

    python examples/reader.py PATH-TO-WORLD
"""

# mypy: disallow-any-expr

from __future__ import annotations

import sys

import narrative as narr


def describe(value: narr.JSON) -> str:
    """A node's value in a few words: JSON is all it can be."""
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(value)) + "}"
    if isinstance(value, list):
        return f"{len(value)} items"
    return repr(value)


def read(path: str) -> list[str]:
    """What the world at ``path`` says, one line a fact."""
    seen: list[str] = []
    with narr.open_world(path) as world:
        where: narr.Status = narr.status(world)
        head = where.head.content if where.head is not None else "(no event yet)"
        seen.append(f"status: on {where.branch}, at {head!r}, {len(where.edits)} hand edits")
        for change in where.edits:
            seen.append(f"  edited {change.target} {change.field}: {describe(change.new_value)}")

        nodes: narr.NodeList = narr.list_nodes(world, layer="character")
        first: narr.NodeRow = nodes[0]
        seen.append(f"nodes: {len(nodes)} characters, the first {first.name} ({first.id})")
        page = narr.list_nodes(world, limit=2)
        seen.append(f"a page of nodes: {[row.id for row in page]}, next {page.next}")

        pack: narr.Brief = narr.brief(world, "the ferry at dusk", focus=["Lin Yuan"], budget=1500)
        sections = sorted({item.section for item in pack.items})
        seen.append(f"brief: {len(pack.items)} items in {', '.join(sections)}; {pack.used} "
                    f"of {pack.budget} characters")
        about: list[str] = []
        for item in pack.items:
            if item.node is not None and item.node not in about:
                about.append(item.node)
        seen.append(f"  about {', '.join(about[:3])}")

        reason: narr.WhyResult = narr.why(world, "lin-yuan", "state.location")
        told = reason.event.content if reason.event is not None else reason.source
        seen.append(f"why: Lin Yuan is at {describe(reason.value)} since {told!r}")

        node: narr.NodeFile = narr.get_node(world, "Lin Yuan")
        seen.append(f"get_node: {node.node.name} in {node.path}, "
                    f"mood {describe(node.node.state.get('mood'))}")
    return seen


if __name__ == "__main__":
    for line in read(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(line)
