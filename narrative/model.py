"""The data model: world nodes, changes, deltas and event records (pydantic).

These models are the contract with everything outside narr: node files users
edit by hand, deltas that programs and language models propose, and event
records sealed in commits. ``schemas/*.json`` is generated from them
(:func:`json_schemas`) and a test fails when the two drift apart.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic._internal._model_construction import ModelMetaclass  # the one way to wrap a call

from narrative.errors import InvalidInputError
from narrative.ids import (
    ID_PATTERN,
    MAX_ID_LENGTH,
    MAX_NAME,
    OPTIONAL_FIELDS,
    Layer,
    Lifecycle,
    id_problem,
    name_problem,
    pointer,
)

FORMAT_VERSION = 1


def _safe_id(value: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _short_name(value: str) -> str:
    from pydantic_core import PydanticCustomError

    problem = name_problem(value)
    if problem is not None:
        raise PydanticCustomError("name_too_long", problem)  # said as it is, no "Value error, "
    return value


_REL_TYPE_RE = re.compile(r"^[^\s:/~]{1,64}$")


def _rel_type(value: str) -> str:
    if not _REL_TYPE_RE.fullmatch(value):
        raise ValueError(
            f"relation type {value!r} must be 1-64 characters without spaces, ':', '/' or '~'"
        )
    return value


def _pointer(value: str) -> str:
    if value and not value.startswith("/"):
        raise ValueError(f"field {value!r} is not a JSON pointer (it must start with '/')")
    return value


def _dotted(value: Any) -> Any:
    """``state.location`` as ``/state/location``: ops take a field as every command does."""
    if isinstance(value, str) and value and not value.startswith("/") and "/" not in value \
            and all(value.split(".")):
        return pointer(*value.split("."))
    return value


NodeId = Annotated[
    str,
    AfterValidator(_safe_id),
    Field(pattern=ID_PATTERN, max_length=MAX_ID_LENGTH, description="A safe slug, also the file name."),
]
RelationType = Annotated[str, AfterValidator(_rel_type), Field(pattern=r"^[^\s:/~]{1,64}$")]
Pointer = Annotated[str, AfterValidator(_pointer), Field(description="A JSON pointer into the node.")]
OpField = Annotated[Pointer, BeforeValidator(_dotted), Field(
    min_length=2, description="A JSON pointer into the node (/state/location; state.location reads as it).")]
if TYPE_CHECKING:
    from typing import TypeAlias

    JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
else:
    JSON = Any  # validated as it comes: a node's values are whatever its JSON holds
"""A JSON value (what a node's state, traits and attributes hold): a type checker sees the
union of JSON's kinds; pydantic takes any value, as a node file may hold any JSON."""
JsonObject = dict[str, JSON]
Name = Annotated[str, Field(min_length=1), AfterValidator(_short_name)]
"""A name or an alias: at most ``MAX_NAME`` characters (a rule of the value, told in the
descriptions; the answers' shapes keep their schemas)."""


PRONOUNS = ("she", "he", "they", "it")
"""The values of a character's ``traits.pronouns`` (also written "she/her", "he/him" ...)."""


def pronouns_problem(value: Any) -> str | None:
    """Why ``value`` is no ``pronouns`` trait narr knows (None: it is one)."""
    if isinstance(value, str) and value.strip().lower().split("/")[0].strip() in PRONOUNS:
        return None
    shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return f"pronouns {shown} is not one narr knows: {', '.join(PRONOUNS)} (or she/her, he/him ...)"


class Node(BaseModel):
    """One node of the world graph, stored as ``world/<layer>/[xx/]<id>.json``."""

    model_config = ConfigDict(extra="forbid", title="narr world node")

    id: NodeId
    name: Annotated[Name, Field(
        description=f"Display name, in the story's language (at most {MAX_NAME} characters).")]
    layer: Layer
    kind: str = Field(default="", description="Free text inside the layer: person, sword, place...")
    aliases: list[Name] = Field(
        default_factory=list,
        description=f"Other names the story uses, any language (each at most {MAX_NAME} characters).",
    )
    summary: str = ""
    lifecycle: Lifecycle = Field(
        default="permanent",
        description="permanent: until expired; scene: until a scene closes; event: until the next event.",
    )
    created_by_event: str | None = Field(
        default=None, description="Id of the event that created the node; null for genesis or hand-made."
    )
    traits: JsonObject = Field(
        default_factory=dict, description="The baseline: only the user changes it, never a diffuser."
    )
    state: JsonObject = Field(default_factory=dict, description="What events change.")
    relations: dict[RelationType, dict[NodeId, JsonObject]] = Field(
        default_factory=dict,
        description="Edges of the world graph: type -> target id -> attributes.",
    )
    # The fields below are written only when they hold something (OPTIONAL_FIELDS), so the
    # files of worlds made before them keep their bytes and their history its meaning.
    tags: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Labels the writer sorts by (a card's tags, a note's #tags). Absent when empty.",
    )
    sections: dict[Annotated[str, Field(min_length=1)], str] = Field(
        default_factory=dict,
        description="More of the node's lore, title -> text: the other facets of it a source "
                    "kept apart (lorebook entries about the same thing, a note's headings). "
                    "Absent when empty.",
    )
    always_in_view: bool = Field(
        default=False,
        description="True: narr brief always includes the node, whatever the focus (a "
                    "lorebook's constant entry, a rule of the world). Absent when false.",
    )
    extensions: JsonObject = Field(
        default_factory=dict,
        description="Other tools' data, by namespace (sillytavern, obsidian): what an import "
                    "kept that has no field of its own, so an export can give it back. Absent "
                    "when empty.",
    )

    @field_validator("traits")
    @classmethod
    def _known_pronouns(cls, value: dict[str, Any]) -> dict[str, Any]:
        # "he", "she", "they", "it" (or "she/her" ...): what the rules bind "he" and 他 by; a value
        # they would not understand would leave every pronoun of the character unbound, unseen
        problem = pronouns_problem(value.get("pronouns", "he")) if "pronouns" in value else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("relations")
    @classmethod
    def _drop_empty_types(cls, value: dict[str, dict[str, JsonObject]]) -> dict[str, Any]:
        # A relation type with no targets carries nothing; one canonical form keeps diffs exact.
        return {rtype: targets for rtype, targets in value.items() if targets}

    @model_serializer(mode="wrap")
    def _drop_unused(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key in OPTIONAL_FIELDS:
                if key in data and not data[key]:
                    del data[key]
        return data



class Change(BaseModel):
    """One field-level change: a diffusion (made by the engine) or an edit (made by hand).

    A missing ``old_value`` means the field was absent (creation), a missing
    ``new_value`` that it is gone (removal); both differ from ``null``.
    """

    model_config = ConfigDict(extra="forbid", title="narr change")

    target: NodeId
    field: Pointer
    old_value: Any = None
    new_value: Any = None
    side: Literal["theirs", "resolved"] | None = Field(
        default=None,
        description="In a merge event: the change came from the merged branch (theirs) or "
                    "resolves a conflict (resolved); absent elsewhere.",
    )

    @property
    def has_old(self) -> bool:
        return "old_value" in self.model_fields_set

    @property
    def has_new(self) -> bool:
        return "new_value" in self.model_fields_set

    @property
    def created(self) -> bool:
        """The field (or, with ``field`` "", the node) did not exist before."""
        return not self.has_old

    @property
    def removed(self) -> bool:
        """The field (or the node) is gone: not the same as a ``new_value`` of null."""
        return not self.has_new

    @property
    def old(self) -> Any:
        """``old_value``, or ``...`` (narrative.fields.ABSENT) when the field was absent."""
        return self.old_value if self.has_old else ...

    @property
    def new(self) -> Any:
        """``new_value``, or ``...`` (narrative.fields.ABSENT) when the field is gone."""
        return self.new_value if self.has_new else ...

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            if not self.has_old:
                data.pop("old_value", None)
            if not self.has_new:
                data.pop("new_value", None)
            if self.side is None:
                data.pop("side", None)
        return data


def make_change(target: str, field: str, old: Any = ..., new: Any = ...) -> Change:
    """A :class:`Change` where ``...`` (Ellipsis) stands for "absent"."""
    kwargs: dict[str, Any] = {"target": target, "field": field}
    if old is not ...:
        kwargs["old_value"] = old
    if new is not ...:
        kwargs["new_value"] = new
    return Change.model_construct(_fields_set=set(kwargs), **kwargs)


# --- delta operations -------------------------------------------------------------------


def _op_required(schema: dict[str, Any]) -> None:
    """``op`` has a default so that ``SetOp(target=..., field=..., value=...)`` needs no
    ``op="set"``; in JSON it names the operation and stays required (a delta is read by its
    ``op``), so the published schema says so."""
    schema.get("properties", {}).get("op", {}).pop("default", None)
    required = schema.setdefault("required", [])
    if "op" not in required:
        required.insert(0, "op")


class InvalidOpError(InvalidInputError):
    """An op built in Python with a missing or malformed field (``validation``: pydantic's report)."""

    def __init__(self, validation: ValidationError, kind: str) -> None:
        from narrative.errors import validation_error

        named = validation_error(validation, kind)
        super().__init__(named.message, details=named.details)
        self.validation = validation


class _OpMeta(ModelMetaclass):
    """Ops built by calling the class (``SetOp(target=..., ...)``, as a program does) raise narr's
    :class:`InvalidOpError`, so ``except NarrError`` catches every mistake a caller can make;
    validating JSON (``Delta.model_validate``) keeps pydantic's own error for its readers."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise InvalidOpError(exc, cls.__name__) from None


class _Op(BaseModel, metaclass=_OpMeta):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_op_required)


class SetOp(_Op):
    """Set a field of a node (intermediate objects are created as needed)."""

    op: Literal["set"] = "set"
    target: NodeId
    field: OpField
    value: JSON


class UnsetOp(_Op):
    """Remove a field of a node."""

    op: Literal["unset"] = "unset"
    target: NodeId
    field: OpField


class RelateOp(_Op):
    """Add the edge ``source -type-> target``; on an existing edge, merge ``attrs`` into its own."""

    op: Literal["relate"] = "relate"
    source: NodeId
    type: RelationType
    target: NodeId
    attrs: JsonObject = Field(default_factory=dict)


class UnrelateOp(_Op):
    """Remove the edge ``source -type-> target``."""

    op: Literal["unrelate"] = "unrelate"
    source: NodeId
    type: RelationType
    target: NodeId


class CreateOp(_Op):
    """Create a whole node; its ``created_by_event`` is set to the event that creates it."""

    op: Literal["create"] = "create"
    node: Node


class ExpireOp(_Op):
    """End a node: its file goes, and so do the relations that point at it."""

    op: Literal["expire"] = "expire"
    target: NodeId


Op = Annotated[
    SetOp | UnsetOp | RelateOp | UnrelateOp | CreateOp | ExpireOp, Field(discriminator="op")
]


class Delta(BaseModel):
    """What a diffuser proposes for one event; the engine validates it whole, then applies it."""

    model_config = ConfigDict(extra="forbid", title="narr delta")

    ops: list[Op] = Field(default_factory=list)
    narrative_text: str | None = None
    timestamp: str | None = Field(default=None, description="Story time of the event.")
    close_scene: bool = False
    causes: list[str] = Field(
        default_factory=list, description="Ids of earlier events this one follows from."
    )


# --- event record -----------------------------------------------------------------------


class Scene(BaseModel):
    """A scene of a chapter: where it lies in the chapter's text and which sentences it holds."""

    model_config = ConfigDict(extra="forbid", title="narr scene")

    number: int = Field(ge=1)
    title: str | None = Field(default=None, description="The heading that opened it, if any.")
    start: int = Field(ge=0, description="Offset of its first character in the chapter's text.")
    end: int = Field(ge=0, description="Offset just past its last character.")
    first_sentence: int = Field(ge=1, description="The number of its first sentence in the chapter.")
    sentences: int = Field(ge=0)


class ChapterData(BaseModel):
    """A chapter as its own commit records it: the whole text, its scenes, its summary.

    The events told in it follow that commit on the story line, each naming it
    (:class:`InChapter`), so the chapter's first and last event are read from the line.
    """

    model_config = ConfigDict(extra="forbid", title="narr chapter")

    number: int = Field(ge=1)
    title: str | None = None
    text: str
    language: str = Field(description="en, zh, or mixed: the language its summary is in.")
    scenes: list[Scene] = Field(default_factory=list)
    sentences: int = Field(ge=0)
    events: int = Field(ge=0, description="How many events the chapter was recorded as.")
    summary: str = ""
    nodes: list[str] = Field(default_factory=list,
                             description="The nodes its events changed (for the brief).")
    digest: str = Field(description="sha256 of the text: the same draft recorded twice is seen.")
    key: str | None = Field(default=None, description="The idempotency key it was recorded with.")


class InChapter(BaseModel):
    """Where an event stands in the chapter it was told in."""

    model_config = ConfigDict(extra="forbid", title="narr place in a chapter")

    chapter: str = Field(description="The id of the chapter's own record.")
    number: int = Field(ge=1, description="The chapter's number.")
    sentence: int = Field(ge=1, description="The sentence's number in the chapter (from 1).")
    scene: int = Field(ge=1)


class EventRecord(BaseModel):
    """The record sealed in an event's commit (its message body)."""

    model_config = ConfigDict(extra="forbid", title="narr event record")

    narr: int = Field(default=FORMAT_VERSION, description="Record format version.")
    kind: Literal["genesis", "event", "merge", "chapter"] = "event"
    id: str
    parent: str | None
    content: str
    diffusions: list[Change] = Field(default_factory=list)
    edits: list[Change] = Field(default_factory=list)
    narrative_text: str | None = None
    timestamp: str | None = None
    created_at: str
    close_scene: bool = False
    diffuser: str | None = None
    causes: list[str] = Field(default_factory=list)
    reverts: str | None = None
    replay_of: str | None = None
    merged: str | None = Field(
        default=None, description="A merge event: the branch merged (its tip is the second parent).")
    explicit: list[Op] = Field(
        default_factory=list,
        description="The changes the user spelled out (--set, --delta ...), kept so a replay "
                    "through a diffuser can run the same request again.",
    )
    joined: dict[str, str] = Field(
        default_factory=dict,
        description="A merge event: nodes both lines created under different ids for one "
                    "name, the merged line's id -> the id kept. Later merges of that line "
                    "apply it again. Written only when not empty.",
    )
    chapter: ChapterData | None = Field(
        default=None, description="A chapter's own record (kind chapter). Written only when set.")
    in_chapter: InChapter | None = Field(
        default=None, description="An event told in a chapter: which one, and at which sentence. "
                                  "Written only when set.")


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas published under ``schemas/``, keyed by file name."""
    out: dict[str, dict[str, Any]] = {}
    for name, model in (("node", Node), ("delta", Delta), ("event", EventRecord)):
        schema = model.model_json_schema(mode="validation")
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"https://narr.invalid/schemas/{name}.schema.json"
        out[f"{name}.schema.json"] = schema
    return out
