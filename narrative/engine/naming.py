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

Nodes that have ended (used up, expired with their scene, deleted) keep their names:
a command asking about the past (``history``, ``why``, ``get --at``, ``log NODE``,
``reset --before``: ``ended=True``, the default with ``must_exist=False``) finds them
by any name or alias they had when they ended, from the catalog's table of removals
on the story line (one indexed query, never a walk of the history). A live node wins
over an ended one of the same name; two ended ones are listed, each "ended in EVENT".
A command acting on the present names an ended node in its refusal, with the event
that ended it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.ids import LAYERS, id_problem, node_path, normalize_name
from narrative.nodefile import names_of
from narrative.store import WorldRepo, WorldView, scan_for_reader

SUGGEST_CUTOFF: Final = 50
"""rapidfuzz WRatio score (0-100) below which a name is too far off to suggest; at 50
"lin yaun" still finds "lin yuan" and "林源" finds "林远", while unrelated names stay out."""
SUGGEST_LIMIT: Final = 3


@dataclass(frozen=True)
class Ended:
    """A node the story line removed, by the event that removed it."""

    id: str
    name: str
    commit: str
    event_id: str | None
    content: str

    @property
    def label(self) -> str:
        """``筑基丹 (zhu-ji-dan, ended in 3f2a1b0c9d 'Lu Qingyun swallows the pill')``."""
        content = self.content.splitlines()[0] if self.content else ""
        return f"{self.name} ({self.id}, ended in {self.commit[:10]} {content!r})"

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name,
                "ended_by": {"id": self.event_id, "commit": self.commit, "content": self.content}}


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
            self._view = WorldView(self.wr, self.tree, scan_for_reader(self.wr, self.tree))
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

    def ended(self, text: str) -> list[Ended]:
        """The ended nodes ``text`` names (as an id, a name or an alias), newest end first;
        nodes back in the world (re-created since, or by hand) are not among them."""
        from narrative.engine.eventgraph import tip_of

        text = text.strip()
        norm = normalize_name(text)
        ids = [i for i in dict.fromkeys((text, text.lower())) if id_problem(i) is None]
        if (not norm and not ids) or self.tree is None:
            return []
        tip = tip_of(self.wr)
        if tip is None:
            return []
        rows = self.wr.catalog.graph.ended_by_names(tip.id, [norm] if norm else [], ids)
        by_id = [r for r in rows if r.name in ids]  # an id before a name, as for live nodes
        out: list[Ended] = []
        seen: set[str] = set()
        for r in sorted(by_id or rows, key=lambda r: -r.seq):
            if r.node in seen or self.view.exists(r.node):
                continue
            seen.add(r.node)
            out.append(self._ended(r.node, r.commit, r.seq))
        return out

    def _ended(self, node_id: str, commit: str, seq: int) -> Ended:
        graph = self.wr.catalog.graph
        name = node_id
        for w in graph.commit_writes(commit, seq):
            if w.target == node_id and w.field == "" and isinstance(w.old, dict):
                name = str(w.old.get("name") or node_id)
        event = graph.event_info(commit)
        return Ended(node_id, name, commit, event.id if event else None,
                     event.content if event else "")

    def resolve(self, text: str, *, must_exist: bool = True, context: str | None = None,
                ended: bool | None = None) -> str:
        """The id of the one node ``text`` names; see the module docstring for the rules.

        ``context`` (e.g. ``--set 'x.state.mood'``) starts the error message, so the
        user sees which of several flags named nothing. ``ended``: whether a node that
        has ended may be the answer (by default when ``must_exist`` is False).
        """
        where = f"{context}: " if context else ""
        text_ = text.strip()
        found = self.candidates(text_)
        if len(found) == 1:
            return found[0]
        if found:
            listed = [f"{node_id} ({self.display_name(node_id)})" for node_id in found]
            raise InvalidInputError(
                f"{where}{text!r} names {len(found)} nodes: {', '.join(listed)}",
                hint=f"use the id of the one you mean; to tell them apart by name for good, "
                     f"change the name or alias one of them shares: narr edit {found[0]} "
                     "(its name and aliases fields; the next event records the edit)")
        if ended is None:
            ended = not must_exist
        is_id = id_problem(text_) is None
        gone = self.ended(text_) if self.tree is not None else []
        if gone and ended:
            if len(gone) == 1:
                return gone[0].id
            raise InvalidInputError(
                f"{where}{text!r} names {len(gone)} nodes that have ended: "
                + ", ".join(g.label for g in gone), hint="use the id of the one you mean")
        if gone and (must_exist or gone[0].id != text_):
            one = gone[0]
            raise NotFoundError(
                f"{where}{text!r} is no longer in the world: {one.label}",
                hint="{0} tells its story; {1} shows it as it was",
                steps=[Step("history", {"node": one.id}),
                       Step("get_node", {"node": one.id, "at": f"{one.commit[:10]}~1"})])
        if not must_exist and is_id:
            return text_
        raise NotFoundError(f"{where}no node named {text!r} in the world", **self.hint(text))

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
        """``"name (id)"`` of the nodes whose name, alias or id is nearest to ``text``; an
        ended node is marked so (``"name (id, ended)"``), a live one coming first."""
        from rapidfuzz import fuzz, process

        names = self.all_names()
        gone = self._ended_names(set().union(*names.values()) if names else set())
        choices = list(dict.fromkeys([*names, *gone]))
        hits = process.extract(normalize_name(text), choices, scorer=fuzz.WRatio,
                               limit=SUGGEST_LIMIT * 2, score_cutoff=SUGGEST_CUTOFF)
        out: list[str] = []
        for choice, _score, _ in hits:
            for node_id in sorted(names.get(choice, ())):
                label = f"{self.display_name(node_id)} ({node_id})"
                if label not in out:
                    out.append(label)
            for node_id in sorted(gone.get(choice, ())):
                found = self.ended(node_id)
                label = f"{found[0].name if found else choice} ({node_id}, ended)"
                if label not in out:
                    out.append(label)
        return out[:SUGGEST_LIMIT]

    def _ended_names(self, live: set[str]) -> dict[str, set[str]]:
        """Normalised name or id -> ended nodes carrying it (those not in the world again)."""
        from narrative.engine.eventgraph import tip_of

        out: dict[str, set[str]] = {}
        if self.tree is None:
            return out
        tip = tip_of(self.wr)
        if tip is None:
            return out
        for norm, node_id in self.wr.catalog.graph.ended_names(tip.id):
            if node_id not in live:
                out.setdefault(norm, set()).add(node_id)
                out.setdefault(node_id, set()).add(node_id)
        return out

    def hint(self, text: str) -> dict[str, Any]:
        """The hint of a name no node carries (``hint`` and ``steps``, an error's arguments)."""
        near = self.suggest(text)
        if near:
            return {"hint": f"did you mean {' or '.join(near)}? {{0}} lists the nodes",
                    "steps": [Step("list_nodes")]}
        return {"hint": "{0} lists the nodes; {1} makes one",
                "steps": [Step("list_nodes"), Step("new_node", {"layer": "LAYER", "name": "NAME"})]}


def resolve_node(wr: WorldRepo, text: str, *, must_exist: bool = True,
                 ended: bool | None = None) -> str:
    """The id of the node ``text`` names (its id, name or alias); raises when none or several.
    ``ended``: an ended node may be the answer (by default when ``must_exist`` is False)."""
    return Names(wr).resolve(text, must_exist=must_exist, ended=ended)
