"""The shapes of the operations' answers, typed: each key, its type, and which keys may be left out.

These models describe the JSON that :data:`narrative.api.OPERATIONS` answer (the same the
CLI's ``--json`` prints): :func:`json_schemas` turns them into ``schemas/answers/*.schema.json``
(``python -m narrative.schemas``), a test validates real answers against those files, and an
answer with a key no type here names fails that test. Values the world itself decides (a node's
state, an op's value) are ``Any``; containers whose members are another module's free-form
record (a hand edit, a finding) are typed as JSON objects.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from narrative.answers import MAYBE, Answer, Shape
from narrative.engine.branches import Branch
from narrative.engine.chains import Chain
from narrative.engine.failed_answers import FailedItem
from narrative.engine.merge import MergeOutcome
from narrative.engine.reset import Undone
from narrative.errors import Door
from narrative.model import JSON, Node
from narrative.shapes import Change, EventRef, Obj

# --- answers only the CLI gives --------------------------------------------------------------


class ErrorAnswer(Shape):
    """Every failure, on every transport: ``type`` the error's class (``Unauthorized`` and
    ``InternalError`` when no narr error stands behind it, their ``exit_code`` null);
    ``conflicts`` those a merge, a replay or a pull stopped at."""

    error: str
    type: str
    exit_code: int | None
    details: list[str]
    hint: str | None
    conflicts: Annotated[list[Obj] | None, MAYBE] = None


class InitAnswer(Answer):
    NAME: ClassVar[str] = "init"

    root: str
    commit: str
    id: str
    nodes: int
    layout: str


class CheckProblem(Shape):
    """``fix``: the narr commands that repair it, in order."""

    commit: str | None
    event: str | None
    content: str | None
    problem: str
    fix: list[str]


class CheckAnswer(Answer):
    """``since``: the verified tip the events were checked from (null: all of them)."""

    NAME: ClassVar[str] = "check"

    ok: bool
    events: int
    commits: int
    since: str | None
    checked_events: int
    nodes: int
    problems: list[CheckProblem]
    worktree_problems: list[str]
    warnings: list[str]


class NewAnswer(Answer):
    """A node ``narr new`` made: ``path`` its file, relative to the world's root."""

    NAME: ClassVar[str] = "new"

    id: str
    path: str
    name: str
    layer: str
    kind: str
    aliases: list[str]
    warnings: list[str]


class PathAnswer(Answer):
    NAME: ClassVar[str] = "path"

    id: str
    path: str


class GetValueAnswer(Answer):
    NAME: ClassVar[str] = "get_value"

    node: str
    field: str
    value: JSON


class SetAsideItem(Shape):
    """Hand edits a reset or a switch set aside: ``remote`` set when they came from one;
    ``raw_files`` those whose text is not a node; ``restored_at`` when they were put back."""

    n: int
    remote: str | None
    ref: str
    commit: str
    created_at: str | None
    reason: str | None
    head: str | None
    paths: list[str]
    changes: list[Change]
    raw_files: list[str]
    restored_at: str | None


class EditsAnswer(Answer):
    NAME: ClassVar[str] = "edits"

    items: list[SetAsideItem]


class GcAnswer(Answer):
    NAME: ClassVar[str] = "gc"

    bytes_before: int
    bytes_after: int
    loose_before: int
    loose_after: int


class EditRestoredAnswer(Answer):
    """``set_aside``: where the current edits went when the restored ones won a collision."""

    NAME: ClassVar[str] = "edit_restored"

    ref: str
    changes: list[Change]
    collisions: list[Obj]
    paths: list[str]
    set_aside: str | None
    warnings: list[str]


class EditDroppedAnswer(Answer):
    """``kept_as``: the abandoned chain made to keep the events only these edits held."""

    NAME: ClassVar[str] = "edit_dropped"
    VERSION: ClassVar[int] = 2  # 2: kept_as

    dropped: str
    kept_as: str | None


class ChainDroppedAnswer(Answer):
    """``lost``: the events no other ref holds, gone with the chain."""

    NAME: ClassVar[str] = "chain_dropped"

    dropped: str
    ref: str
    tip: str
    lost: list[Undone]


class ReflogEntry(Shape):
    n: int
    old: str
    new: str
    message: str
    when: str
    content: str


class ReflogAnswer(Answer):
    NAME: ClassVar[str] = "reflog"

    items: list[ReflogEntry]


class ImportAnswer(Answer):
    """What ``narr import`` read and did: ``commit``, ``id`` and ``content`` its event's (null on
    a dry run or when nothing changed), ``edits`` hand edits that event recorded (those waiting
    in the world, and what SillyTavern changed in a book or card narr exported); ``similar``
    names alike kept apart, ``missing`` links to notes that are nowhere; the lists of entries
    are the importer's own records."""

    NAME: ClassVar[str] = "import"
    VERSION: ClassVar[int] = 2

    commit: str | None
    id: str | None
    content: str | None
    dry_run: bool
    sources: list[Obj]
    created: list[Obj]
    existing: list[Obj]
    related: list[Obj]
    ambiguous: list[Obj]
    similar: list[Obj]
    missing: list[Obj]
    entries: list[Obj]
    skipped: list[Obj]
    warnings: list[str]
    edits: list[Change]


class ExportWrittenAnswer(Shape):
    """An export written to a file (``-o``): ``what`` it holds, in words."""

    path: str
    what: str
    bytes: int


class AdoptedCommit(Shape):
    commit: str
    subject: str


class AdoptEvent(Shape):
    commit: str
    id: str | None
    content: str


class AdoptAnswer(Answer):
    """Plain commits made hand edits again: the branch moved ``from`` the last of them ``to`` the
    last event (``event``), the commits kept under ``kept_as``; ``world_paths`` are hand edits
    now, ``other_paths`` uncommitted changes outside world/."""

    NAME: ClassVar[str] = "adopt"

    branch: str
    from_: str = Field(alias="from")
    to: str
    event: AdoptEvent
    adopted: list[AdoptedCommit]
    kept_as: str
    world_paths: list[str]
    other_paths: list[str]
    warnings: list[str]


class Fetched(Shape):
    """How many of the remote writers' narr refs came, by kind."""

    abandoned: int
    edits: int
    adopted: int
    replayed: int


class CloneAnswer(Answer):
    """``branch``, ``commit``: the clone's story line and its tip (null for a world with none);
    ``branches`` the remote's story lines; ``warnings`` links and re-encoding attributes found
    in what came, and records that could not be read."""

    NAME: ClassVar[str] = "clone"

    path: str
    url: str
    remote: str
    branch: str | None
    commit: str | None
    content: str
    branches: list[str]
    fetched: Fetched
    events: int
    warnings: list[str]


class RefusedRef(Shape):
    ref: str
    reason: str


class PushAnswer(Answer):
    """``refused`` the narr refs the remote would not take; ``deleted`` one's own narr refs
    dropped here and so deleted there; ``edits`` whether set-aside edits were sent."""

    NAME: ClassVar[str] = "push"
    VERSION: ClassVar[int] = 2

    remote: str
    branch: str
    commit: str
    status: Literal["new", "updated", "up to date"]
    narr_refs: int
    refused: list[RefusedRef]
    upstream_set: bool
    edits: bool
    deleted: list[str]


class PullAnswer(Answer):
    """``merge`` null when the story line was up to date already."""

    NAME: ClassVar[str] = "pull"
    VERSION: ClassVar[int] = 2

    remote: str
    branch: str
    status: Literal["up to date", "fast-forward", "merged"]
    commit: str
    fetched: Fetched
    merge: MergeOutcome | None
    warnings: list[str]


class GraphSize(Shape):
    nodes: int
    edges: int


class GraphSizesAnswer(Answer):
    NAME: ClassVar[str] = "graph_sizes"

    world: GraphSize
    events: GraphSize


class GraphAnswer(Answer):
    """A graph exported: ``output`` the text of its ``format`` (json: networkx's node-link
    form, as text)."""

    NAME: ClassVar[str] = "graph"

    graph: Literal["world", "events"]
    format: Literal["dot", "mermaid", "graphml", "json"]
    nodes: int
    edges: int
    output: str


class Hop(Shape):
    """An edge walked: a relation by its ``type``, or a reference field (``field``) by its label."""

    type: str
    direction: Literal["forward", "backward"]
    field: Annotated[str | None, MAYBE] = None


class Step(Shape):
    """One step of a chain, with every edge between its two nodes."""

    from_: str = Field(alias="from")
    to: str
    relations: list[Hop]


class ConnectAnswer(Answer):
    """The shortest chains between two nodes: ``length`` the steps of each (null: none)."""

    NAME: ClassVar[str] = "connect"

    source: str
    target: str
    length: int | None
    paths: list[list[Step]]



class CommitLine(Shape):
    commit: str
    content: str


class BookEvent(Shape):
    """An event of the book: ``number`` its place among the events (reverts not counted),
    ``story_time`` the time in force, ``scene_break`` where a closed scene breaks, ``line``
    the branch a merge brought it from (null: the story line's own), ``chapter`` and
    ``sentence`` where it stands in the chapter it was told in."""

    number: int
    id: str | None
    commit: str
    content: str
    timestamp: str | None
    story_time: str | None
    narrative_text: str | None
    close_scene: bool
    scene_break: Literal["before", "after"] | None
    reverted_by: CommitLine | None
    line: str | None
    chapter: int | None
    sentence: int | None


class BookChapter(Shape):
    """A chapter of the book, told by its own ``text``; ``at`` the index in ``events`` of
    the first event after it begins, ``events`` how many of them it was recorded as."""

    number: int
    id: str
    commit: str
    title: str | None
    heading: str
    summary: str
    timestamp: str | None
    story_time: str | None
    line: str | None
    events: int
    at: int
    text: str | None


class BookMerge(Shape):
    commit: str
    id: str | None
    content: str


class BookRevert(Shape):
    """An event that undoes an earlier one (``reverts``, its id): no chapter of its own."""

    commit: str
    id: str | None
    content: str
    reverts: str


class StoryAnswer(Answer):
    """The book: the events after ``from`` (null: from the beginning) up to ``to``, the chapters
    that tell them and the merges that brought some; ``skipped`` the commits on the line that are
    not events."""

    NAME: ClassVar[str] = "story"
    VERSION: ClassVar[int] = 2

    world: str
    from_: EventRef | None = Field(alias="from")
    to: EventRef
    events: list[BookEvent]
    chapters: list[BookChapter]
    merges: list[BookMerge]
    skipped: list[CommitLine]
    reverts: list[BookRevert]


class ReadAt(Shape):
    """The commit an export read."""

    commit: str
    id: str | None
    content: str
    timestamp: str | None


class CodexAt(ReadAt):
    story_time: str | None


class HandEditMark(Shape):
    id: str
    edit: Literal["new", "modified", "deleted"]


class CodexRelation(Shape):
    type: str
    target: str
    name: str | None
    attrs: Obj


class CodexIncoming(Shape):
    type: str
    source: str
    name: str | None
    attrs: Obj


class CodexEntry(Shape):
    """A node of the bible, its relations out and in (each naming the other node);
    ``edited`` how a hand edit changed it, if one did."""

    id: str
    name: str
    layer: str
    kind: str
    aliases: list[str]
    lifecycle: str
    summary: str
    created_by_event: str | None
    tags: list[str]
    always_in_view: bool
    traits: Obj
    state: Obj
    sections: Obj
    extensions: Obj
    relations: list[CodexRelation]
    incoming: list[CodexIncoming]
    edited: Literal["new", "modified", "deleted"] | None


class CodexAnswer(Answer):
    """The story bible: ``at`` the commit read (null in a world without one),
    ``hand_edits_included`` whether uncommitted edits are in it."""

    NAME: ClassVar[str] = "codex"

    world: str
    at: CodexAt | None
    hand_edits_included: bool
    hand_edits: list[HandEditMark]
    nodes: list[CodexEntry]

    def to_markdown(self) -> str:
        """The bible as Markdown, in the layout ``narr import`` reads back."""
        from narrative.engine.codex import render_markdown

        return render_markdown(self.to_json())


class _Document(Answer):
    """An answer that carries a document made of JSON already (a book, a card), sent as it is:
    pydantic's serializer would look again at each of its values, seconds for a world of a few
    thousand nodes."""

    DOCUMENT: ClassVar[str]

    def to_json(self, door: Door = "cli") -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True,
                               exclude={self.DOCUMENT}, context={"door": door})
        data[self.DOCUMENT] = getattr(self, self.DOCUMENT)
        return data


class LorebookAnswer(_Document):
    """The world as a SillyTavern World Info book: ``lorebook`` the file itself (what ``narr
    export lorebook`` prints), ``at`` the commit read (null: none yet), ``pov`` the character
    whose knowledge it keeps to, ``left_out`` the nodes that character does not know."""

    NAME: ClassVar[str] = "lorebook"
    DOCUMENT: ClassVar[str] = "lorebook"

    world: str
    at: ReadAt | None
    pov: str | None
    left_out: int
    lorebook: Obj

    def text(self) -> str:
        """The book as its file holds it."""
        import json

        return json.dumps(self.lorebook, ensure_ascii=False, indent=2) + "\n"


class CardAnswer(_Document):
    """One node as a SillyTavern character card: ``card`` the card's JSON itself (what ``narr
    export card`` prints) in its ``spec``, the world as its character book."""

    NAME: ClassVar[str] = "card"
    DOCUMENT: ClassVar[str] = "card"

    node: str
    spec: Literal["v2", "v3"]
    card: Obj

    def text(self) -> str:
        """The card as its JSON file holds it."""
        import json

        return json.dumps(self.card, ensure_ascii=False, indent=2) + "\n"


class VaultNoteText(Shape):
    """A note of the vault: ``path`` inside the vault, ``text`` the note (Markdown)."""

    id: str
    path: str
    text: str


class VaultNotesAnswer(Answer):
    """The world as an Obsidian vault, every note with its text (what ``narr export vault``
    writes into its folder, the folder's own marker aside)."""

    NAME: ClassVar[str] = "vault_notes"

    world: str
    at: ReadAt | None
    notes: list[VaultNoteText]


class VaultNote(Shape):
    id: str
    path: str


class VaultAnswer(Shape):
    """An Obsidian vault written: each node's note (``path`` inside ``folder``), and the notes
    of the last export that no node has now, removed."""

    folder: str
    at: ReadAt | None
    notes: list[VaultNote]
    removed: list[str]


class StudioAnswer(Shape):
    """The studio's address (with the world's token), its server, and whether a browser
    opened it."""

    url: str
    port: int
    pid: int
    opened: bool


class Watcher(Shape):
    """The server's file watcher: ``trusted`` when its view can stand in for a walk."""

    running: bool
    trusted: bool
    pending_paths: int
    full_scans: int
    hinted_scans: int
    last_full_reason: str
    events: int


class AutostartWait(Shape):
    """Automatic starts that failed in a row, and when the next command may try again (Unix
    times)."""

    failures: int
    failed_at: Annotated[float | None, MAYBE] = None
    retry_at: float


class ServerAnswer(Shape):
    """This world's server, every key always there: null what is not known. ``stopped`` true
    when ``--stop`` stopped one; ``state`` ``running``, or ``stopped`` by SIGSTOP or Ctrl-Z
    (commands run without it); what the server's record says (``pid`` to ``memory_mib``, its
    resident memory) when one runs, ``started_by`` what started it (``a narr command``,
    ``narr serve``, ``narr serve --detach``, ``narr studio``); ``requests`` to ``watcher``
    only when asked (``--status``), ``idle_s`` seconds since its last request; ``current``
    whether it runs this narr's code (null: not asked); ``autostart`` the failed automatic
    starts being waited out (null: none); ``autostart_off`` why none starts by itself (null:
    one does)."""

    running: bool
    stopped: bool
    state: Literal["running", "stopped"] | None
    pid: int | None
    process: str | None
    version: str | None
    socket: str | None
    root: str | None
    git_dir: str | None
    port: int | None
    host: str | None
    started: float | None
    auto: bool | None
    started_by: str | None
    idle_minutes: float | None
    memory_mib: float | None
    requests: int | None
    active: int | None
    idle_s: float | None
    exits_at: float | None
    watcher: Watcher | None
    current: bool | None
    autostart: AutostartWait | None
    autostart_off: str | None


# --- the studio's reads (narrative.serve.studio): the page's own, typed as the rest ----------


class StudioNodeRow(Shape):
    """A node as the studio lists or draws it; ``degree`` (its neighbours) only when drawn,
    ``edited`` how a hand edit changed it (modified, new, deleted) or None."""

    id: str
    name: str
    layer: str
    kind: str
    lifecycle: str
    edited: str | None
    aliases: list[str]
    degree: Annotated[int | None, MAYBE] = None
    cluster: Annotated[str | None, MAYBE] = None


class StudioEdge(Shape):
    """An edge drawn: a relation, or a reference field naming a node (``field`` its pointer)."""

    source: str
    target: str
    type: str
    kind: Literal["relation", "reference"]
    field: Annotated[str | None, MAYBE] = None


class StudioCluster(Shape):
    """Nodes drawn as one (``key`` ``layer:character``, ``kind:person``, ``place:ferry``),
    ``layer`` the one most of them are in."""

    key: str
    by: Literal["layer", "kind", "place"]
    label: str
    count: int
    layer: str


class StudioClusterEdge(Shape):
    """How many relations go from ``source`` to ``target`` (a cluster's key or a node drawn)."""

    source: str
    target: str
    count: int


class StudioGraph(Shape):
    nodes: list[StudioNodeRow]
    edges: list[StudioEdge]
    clusters: list[StudioCluster]
    cluster_edges: list[StudioClusterEdge]


class StudioWorldAnswer(Shape):
    """The world cut for drawing (``/api/graph/world``): ``nodes`` those listed, ``graph`` those drawn."""

    at: str | None
    total: int
    matched: int
    nodes: list[StudioNodeRow]
    truncated: bool
    graph: StudioGraph
    focus: str | None
    depth: int
    facets: dict[str, dict[str, int]]
    group: Literal["layer", "kind", "place"] | None


class StudioEvent(Shape):
    commit: str
    id: str | None
    seq: int | None
    kind: str
    content: str
    timestamp: str | None
    created_at: str | None
    close_scene: bool
    causes: int


class StudioCause(Shape):
    source: str
    target: str
    label: str


class StudioEventsAnswer(Shape):
    """The story line, newest first (``/api/graph/events``), its causal edges, chains and branches."""

    branch: str | None
    events: list[StudioEvent]
    total: int
    edges: list[StudioCause]
    chains: list[Chain]
    branches: list[Branch]


class StudioLinesAnswer(Shape):
    """The story-line panel: ``merge`` the conflicts of a merge in progress (as ``narr conflicts``
    gives them), ``edited_files`` the hand edits a switch would set aside."""

    branch: str | None
    branches: list[Branch]
    set_aside: list[SetAsideItem]
    merge: Obj | None
    edited_files: int


class StudioDiffusersAnswer(Shape):
    """The diffusers the composer offers; ``problem`` why there is no default, when there is none."""

    names: list[str]
    default: str | None
    problem: str | None


class StudioName(Shape):
    name: str
    aliases: list[str]
    layer: str


class StudioOffer(Shape):
    """What a node's form offers: the state and trait keys other nodes of its kind have (how
    many of a sample), the fields holding a node's id, the relation types in use."""

    fields: dict[str, dict[str, int]]
    references: list[str]
    relation_types: list[str]


class StudioNodeAnswer(Shape):
    """A node for the inspector: the names of the nodes it names, the fields holding an id
    (``links``), a digest of its file now and what its form offers (None for a past node)."""

    node: Node
    names: dict[str, StudioName]
    links: dict[str, str]
    file: str | None
    offer: StudioOffer | None


class StudioChange(Shape):
    """A change a passage made; a whole node's (``field`` "") carries only its ``name``."""

    target: str
    field: str
    by: Literal["diffusion", "hand edit"]
    old: Annotated[Any | None, MAYBE] = None
    new: Annotated[Any | None, MAYBE] = None


class StudioPassage(Shape):
    """An event as prose: ``pieces`` its narrative text (its words when ``told`` is false),
    cut at the world's names (``[text, node id or null]``); ``time_key`` its story time as a
    sortable key, null when the time does not parse; ``sentence`` the sentence of its recorded
    chapter it was told at (null outside one)."""

    commit: str
    id: str | None
    number: int
    content: str
    sentence: int | None
    told: bool
    pieces: list[list[Any]]
    story_time: str | None
    time_key: list[int] | None
    changes: list[StudioChange]
    more_changes: int
    reverted: bool


class StudioScene(Shape):
    """``pieces`` the scene's own prose when its chapter is recorded, else null."""

    number: int
    story_time: str | None
    pieces: list[list[Any]] | None
    passages: list[StudioPassage]


class StudioChapter(Shape):
    """A recorded chapter (``recorded`` true, its own number), or events told outside any
    recorded chapter (``recorded`` false, numbered 1, 2, ... in order). A recorded chapter's
    ``heading`` is how it is named, ``summary`` its record's, ``line`` the branch a merge
    brought it from (null: the story line's own); all three null for the others."""

    number: int
    title: str | None
    recorded: bool
    heading: str | None
    summary: str | None
    line: str | None
    scenes: list[StudioScene]


class StudioManuscriptAnswer(Shape):
    """The story line as prose (``/api/studio/manuscript``): chapters from their records
    (``source`` records) or the events as one chapter (``source`` events); ``names`` the name
    of every node marked or changed."""

    source: Literal["records", "events"]
    chapters: list[StudioChapter]
    total: int
    shown: int
    names: dict[str, str]


class StudioMention(Shape):
    commit: str
    number: int
    chapter: int
    scene: int
    excerpt: list[list[Any]]


class StudioMentionsAnswer(Shape):
    """The passages that name a node (``/api/studio/mentions/NODE``), the last of them."""

    node: str
    passages: list[StudioMention]
    total: int


class StudioNamesAnswer(Shape):
    """The name shown in place of each id asked for that is a node (the others left out)."""

    names: dict[str, StudioName]


class StudioProblem(Shape):
    text: str
    path: str | None
    node: str | None


class StudioProblemsAnswer(Shape):
    """``narr status``'s problems placed on their file and node, and the failed events."""

    problems: list[StudioProblem]
    failed: list[FailedItem]


class StudioWhereAnswer(Shape):
    """Where the story stands, as a page compares it: HEAD and the story line, the rest digests."""

    head: str | None
    branch: str | None
    edits: str
    kept: str
    failed: str
    edited: int


ANSWERS: dict[str, Any] = {}
"""The type of each operation's answer not yet told by its row, by operation name."""

CLI_ANSWERS: dict[str, Any] = {
    "error": ErrorAnswer, "export_written": ExportWrittenAnswer,
    "vault": VaultAnswer, "studio": StudioAnswer, "server": ServerAnswer,
}
"""The type of answers only the CLI gives (and the error every transport gives), by name."""

STUDIO_ANSWERS: dict[str, Any] = {
    "studio_world": StudioWorldAnswer, "studio_events": StudioEventsAnswer,
    "studio_lines": StudioLinesAnswer, "studio_diffusers": StudioDiffusersAnswer,
    "studio_node": StudioNodeAnswer, "studio_names": StudioNamesAnswer,
    "studio_problems": StudioProblemsAnswer, "studio_where": StudioWhereAnswer,
    "studio_manuscript": StudioManuscriptAnswer, "studio_mentions": StudioMentionsAnswer,
}
"""The type of each read the studio's page makes over HTTP, by name."""
