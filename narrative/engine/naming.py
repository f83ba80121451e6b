"""From what a user types to a node id: the id itself, or a name or alias in any script.

Every command and flag that names a node goes through :func:`resolve_node` (or a
:class:`Names` when one command resolves several), so "林远", "lin yuan", "Lin Yuan"
and "lin-yuan" mean the same node everywhere. The rules, in order:

1. an id of a node in the world wins over any name (ids are what files are called);
2. a name or alias, compared as :func:`narrative.ids.normalize_name` compares them
   (Unicode-normalised, case-folded, spaces collapsed), hand-edited names included:
   the store's :class:`~narrative.store.view.WorldView` lays the edited files over the
   committed catalog;
3. a name two nodes carry is refused, listing both, so that nothing changes on a guess;
4. otherwise the text is unknown and the hint offers the nearest names (rapidfuzz).

Commands that may name a node that is no longer (or not yet) in the world, such as
``history`` of an ended node or ``--relate`` to a node ``--create`` makes in the same
event, pass ``must_exist=False``: a well-formed id nobody carries as a name is then
returned as it is, and the command says what it knows about it.
"""

from __future__ import annotations

from typing import Final

from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import LAYERS, id_problem, node_path, normalize_name
from narrative.nodefile import names_of
from narrative.store import worktree
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

SUGGEST_CUTOFF: Final = 50
"""rapidfuzz WRatio score (0-100) below which a name is too far off to suggest; at 50
"lin yaun" still finds "lin yuan" and "林源" finds "林远", while unrelated names stay out."""
SUGGEST_LIMIT: Final = 3


class Names:
    """The names of the world as the user sees it now (committed nodes plus hand edits)."""

    def __init__(self, wr: WorldRepo) -> None:
        # No finish_interrupted() here: the command that follows finishes an interrupted
        # write itself and reports it; a name lookup only needs the committed catalog.
        self.wr = wr
        head = wr.head_commit()
        self.tree = head.tree if head is not None else None
        self._view: WorldView | None = None

    @property
    def view(self) -> WorldView:
        """The edited world; scanning for hand edits costs a walk, so only when a name is asked."""
        if self._view is None:
            self._view = WorldView(self.wr, self.tree, worktree.scan_for_reader(self.wr, self.tree))
        return self._view

    def _file_of(self, node_id: str) -> bool:
        """Whether the working tree holds a file for ``node_id``: an id named as it is needs
        no walk of the world (most commands are given ids)."""
        layout = self.wr.config.layout
        return any(self.wr.abs(node_path(node_id, layer, layout)).is_file() for layer in LAYERS)

    def candidates(self, text: str) -> list[str]:
        """Ids of the nodes ``text`` names: the node with that id, else every carrier of the name."""
        for node_id in (text, text.lower()):
            if id_problem(node_id) is None and self._file_of(node_id):
                return [node_id]
        for node_id in (text, text.lower()):
            if id_problem(node_id) is None and self.view.exists(node_id):
                return [node_id]
        norm = normalize_name(text)
        if not norm or self.tree is None:
            return []
        return sorted(self.view.ids_by_name([norm]).get(norm, set()))

    def resolve(self, text: str, *, must_exist: bool = True, context: str | None = None) -> str:
        """The id of the one node ``text`` names; see the module docstring for the rules.

        ``context`` (e.g. ``--set 'x.state.mood'``) starts the error message, so the
        user sees which of several flags named nothing.
        """
        where = f"{context}: " if context else ""
        found = self.candidates(text.strip())
        if len(found) == 1:
            return found[0]
        if found:
            listed = [f"{node_id} ({self.display_name(node_id)})" for node_id in found]
            raise InvalidInputError(
                f"{where}{text!r} names {len(found)} nodes: {', '.join(listed)}",
                hint=f"use the id of the one you mean; to tell them apart by name for good, "
                     f"change the name or alias one of them shares: narr edit {found[0]} "
                     "(its name and aliases fields; the next event records the edit)")
        if not must_exist and id_problem(text.strip()) is None:
            return text.strip()
        raise NotFoundError(f"{where}no node named {text!r} in the world", hint=self.hint(text))

    def display_name(self, node_id: str) -> str:
        node = self.view.get(node_id)
        return str(node.get("name", "")) if node else ""

    def all_names(self) -> dict[str, set[str]]:
        """Normalised name, alias or id -> the ids carrying it."""
        out: dict[str, set[str]] = {}
        if self.tree is None:
            return out
        edited = self.view.edits
        for norm, node_id in self.view.catalog().names():
            if node_id not in edited:
                out.setdefault(norm, set()).add(node_id)
                out.setdefault(node_id, set()).add(node_id)
        for node_id, edit in edited.items():
            if edit.new is not None:
                for norm in names_of(edit.new):
                    out.setdefault(norm, set()).add(node_id)
                out.setdefault(node_id, set()).add(node_id)
        return out

    def suggest(self, text: str) -> list[str]:
        """``"name (id)"`` of the nodes whose name, alias or id is nearest to ``text``."""
        from rapidfuzz import fuzz, process

        names = self.all_names()
        hits = process.extract(normalize_name(text), list(names), scorer=fuzz.WRatio,
                               limit=SUGGEST_LIMIT * 2, score_cutoff=SUGGEST_CUTOFF)
        out: list[str] = []
        for choice, _score, _ in hits:
            for node_id in sorted(names[choice]):
                label = f"{self.display_name(node_id)} ({node_id})"
                if label not in out:
                    out.append(label)
        return out[:SUGGEST_LIMIT]

    def hint(self, text: str) -> str:
        near = self.suggest(text)
        if near:
            return f"did you mean {' or '.join(near)}? narr nodes lists the nodes"
        return "narr nodes lists the nodes; narr new LAYER NAME makes one"


def resolve_node(wr: WorldRepo, text: str, *, must_exist: bool = True) -> str:
    """The id of the node ``text`` names (its id, name or alias); raises when none or several."""
    return Names(wr).resolve(text, must_exist=must_exist)
