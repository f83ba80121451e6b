"""The rule file format of the ``rules`` diffuser, and how a world's rule files are read.

Rules are part of the story world, so they live in the world repository, beside
``world/`` rather than inside it (``world/`` holds only node files):
``rules/*.toml`` (comments make a rule set readable) or ``rules/*.json``, read in
file-name order. Both parse into the same :class:`RuleFile`, whose JSON Schema is
``schemas/rules.schema.json``. A rule is declarative data, never code: cloning a
world and running its rules cannot run anything of the world author's.

A file looks like this (TOML)::

    unless = ["not", "never", "没有"]            # words that stop any rule of the file

    [vars]                                      # variables shared by the file's rules
    who = { layer = "character" }
    place = { kind = "place" }

    [[rules]]
    id = "go"
    summary = "Someone goes to a place"
    match = ["{who} (~walk|~go) (to|into) {place}", "{who}(来到|走到){place}"]
    require = ["who.state.health != dead"]
    do = [{ set = "who.state.location", value = "{place}" }]

``match`` patterns are text with ``{var}`` slots, ``(a|b)`` alternatives and
``~verb`` for every form of an English verb (:mod:`narrative.diffusers.patterns`);
a slot is filled by a node the event names by name or alias. ``require`` lists
preconditions (:class:`Requirement`) that ``narr audit`` checks before the actions:
``require = ["giver.relations.holds.{item}", "giver.state.health != dead"]``.
``do`` lists actions; every name in them is a variable, bound to a node id: a
slot, a fixed node (``{ id = "qingyun-sect" }``), a node named by a field of
another (``{ from = "item.state.holder" }``) or a node created by an earlier
action (``as``). An action that needs a variable the event did not bind is
skipped, so one rule can cover "Lin Yuan goes to ..." and "Lin Yuan and Su Qing go
to ...". Values are templates: ``"{place}"`` is the bound id, ``"{who.state.mood}"``
the JSON value of a field, ``"Crowd at {place.name}"`` text.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from narrative import safejson
from narrative.delta.draft import SETTABLE
from narrative.diffusers import classes as word_classes
from narrative.diffusers import patterns
from narrative.diffusers.clauses import CueSet, Lexicon, lexicon, shipped
from narrative.errors import InvalidWorldError
from narrative.ids import ID_PATTERN, Layer, Lifecycle, id_problem

RULES_DIR = "rules"
RULE_SUFFIXES = (".toml", ".json")

VAR_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_EXPR = r"[a-z][a-z0-9_]*(?:\.[^{}.]+)*"
TEMPLATE_RE = re.compile(r"\{\{|\}\}|\{(" + _EXPR + r")\}")
EDGE_RE = re.compile(r"^([a-z][a-z0-9_]*|\*):([^\s:/~]{1,64}):([a-z][a-z0-9_]*|\*)$")

VarName = Annotated[str, Field(pattern=VAR_RE.pattern, description="A variable name.")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class VarSpec(_Strict):
    """How a variable is bound: a slot's constraints, a fixed node, or a field of another node."""

    layer: Layer | list[Layer] | None = Field(
        default=None, description="A slot only takes nodes of this layer (or one of these).")
    kind: str | list[str] | None = Field(
        default=None, description="A slot only takes nodes of this kind (or one of these).")
    id: str | None = Field(
        default=None, pattern=ID_PATTERN, description="Always this node (bound only when it exists).")
    from_: str | None = Field(
        default=None, alias="from",
        description="'var.field.path': the node whose id is stored in that field of another node.")

    @model_validator(mode="after")
    def _one_way(self) -> VarSpec:
        ways = [self.id is not None, self.from_ is not None,
                self.layer is not None or self.kind is not None]
        if sum(ways) > 1:
            raise ValueError("a variable is a slot (layer/kind), a fixed node (id) or derived (from), "
                             "not several")
        if self.from_ is not None and not re.match(r"^[a-z][a-z0-9_]*\.[^{}]+$", self.from_):
            raise ValueError(f"from {self.from_!r} must be 'var.field.path' (e.g. item.state.holder)")
        return self

    def accepts(self, node: dict[str, Any]) -> bool:
        """Whether a slot with these constraints can be filled by ``node``."""
        for key, want in (("layer", self.layer), ("kind", self.kind)):
            if want is None:
                continue
            allowed = [want] if isinstance(want, str) else list(want)
            if node.get(key) not in allowed:
                return False
        return True


def _field_path(value: str) -> str:
    var, _, path = value.partition(".")
    if not VAR_RE.match(var) or not path or any(p == "" for p in path.split(".")):
        raise ValueError(f"{value!r} must be 'var.field.path' (e.g. who.state.location)")
    head = path.split(".")[0]
    if head not in SETTABLE:
        raise ValueError(
            f"{value!r}: a rule may change {', '.join(SETTABLE)} of a node; "
            f"not {head!r} (traits are the user's baseline, id/layer/created_by_event are narr's)")
    return value


def _edge(value: str, wildcard: bool) -> str:
    m = EDGE_RE.match(value)
    if not m:
        raise ValueError(f"{value!r} must be 'source:type:target' with variable names "
                         "(e.g. who:knows:secret)")
    if not wildcard and "*" in (m.group(1), m.group(3)):
        raise ValueError(f"{value!r}: '*' is only allowed in unrelate")
    if m.group(1) == "*" and m.group(3) == "*":
        raise ValueError(f"{value!r}: only one side may be '*'")
    return value


_PATH = r"^[a-z][a-z0-9_]*(\.[^.]+)+$"


class SetAction(_Strict):
    """Set a field: ``{ set = "who.state.location", value = "{place}" }``."""

    set: str = Field(pattern=_PATH, description="'var.field.path'")
    value: Any

    @field_validator("set")
    @classmethod
    def _path(cls, value: str) -> str:
        return _field_path(value)


class UnsetAction(_Strict):
    """Remove a field: ``{ unset = "who.state.wounds" }`` (skipped when it is absent)."""

    unset: str = Field(pattern=_PATH, description="'var.field.path'")

    @field_validator("unset")
    @classmethod
    def _path(cls, value: str) -> str:
        return _field_path(value)


class RelateAction(_Strict):
    """Add an edge: ``{ relate = "who:knows:secret", attrs = { how = "told" } }``."""

    relate: str = Field(pattern=r"^[a-z][a-z0-9_]*:[^\s:/~]{1,64}:[a-z][a-z0-9_]*$",
                        description="'source:type:target', source and target being variables")
    attrs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("relate")
    @classmethod
    def _check_edge(cls, value: str) -> str:
        return _edge(value, wildcard=False)


class UnrelateAction(_Strict):
    """Remove an edge; ``*`` on one side removes every such edge (``"*:holds:item"``)."""

    unrelate: str = Field(pattern=EDGE_RE.pattern,
                          description="'source:type:target'; '*' on one side: every such edge")

    @field_validator("unrelate")
    @classmethod
    def _check_edge(cls, value: str) -> str:
        return _edge(value, wildcard=True)


class NodeTemplate(_Strict):
    """A node to create; every string in it (keys of ``relations`` included) is a template."""

    id: str = Field(description="A template that renders to a safe id, e.g. 'crowd-{place}'.")
    name: str = Field(min_length=1)
    layer: Layer
    kind: str = ""
    aliases: list[str] = Field(default_factory=list)
    summary: str = ""
    lifecycle: Lifecycle = "permanent"
    state: dict[str, Any] = Field(default_factory=dict)
    relations: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_template(cls, value: str) -> str:
        literal = TEMPLATE_RE.sub("x", value)
        if id_problem(literal) is not None:
            raise ValueError(f"id template {value!r} would not give a safe id "
                             "(lowercase ASCII letters, digits, '-' and '_')")
        return value


class CreateAction(_Strict):
    """Create a node (a duplicate of an existing one becomes a reference to it)."""

    create: NodeTemplate
    as_: str | None = Field(default=None, alias="as", pattern=VAR_RE.pattern,
                            description="A variable bound to the new node for later actions.")


class ExpireAction(_Strict):
    """End a node: ``{ expire = "item" }``."""

    expire: str = Field(pattern=VAR_RE.pattern)


class CloseSceneAction(_Strict):
    """The event closes the scene: ``scene`` nodes expire."""

    close_scene: Literal[True]


_ACTIONS = ("set", "unset", "relate", "unrelate", "create", "expire", "close_scene")


def _action_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in _ACTIONS:
            if key in value:
                return key
        return None
    for key in _ACTIONS:
        if hasattr(value, key):
            return key
    return None


Action = Annotated[
    Annotated[SetAction, Tag("set")] | Annotated[UnsetAction, Tag("unset")]
    | Annotated[RelateAction, Tag("relate")] | Annotated[UnrelateAction, Tag("unrelate")]
    | Annotated[CreateAction, Tag("create")] | Annotated[ExpireAction, Tag("expire")]
    | Annotated[CloseSceneAction, Tag("close_scene")],
    Discriminator(_action_tag, custom_error_type="action",
                  custom_error_message="an action has one of the keys " + ", ".join(_ACTIONS)),
]


_REQ_VAR = r"[a-z][a-z0-9_]{0,39}"
_REQ_SEGMENT = r"(?:\{" + _REQ_VAR + r"\}|[^\s.{}!=\"]{1,64})"
REQUIRE_RE = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<var>" + _REQ_VAR + r")(?P<path>(?:\." + _REQ_SEGMENT + r"){1,8})"
    r"\s*(?:(?P<op>==|!=)\s*(?P<value>\S.*?))?\s*$")
_BARE_VALUE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,79}$")
_VAR_VALUE = re.compile(r"^\{(" + _REQ_VAR + r")\}$")


class Requirement:
    """One precondition of a rule, parsed: ``[!]var.field.path [(==|!=) value]``.

    The format is deliberately tiny (a path, an optional comparison, no code): a
    world's rules are data a stranger wrote. ``path`` segments may be ``{var}``,
    the id bound to a variable (``giver.relations.holds.{item}``). ``value`` is
    ``{var}``, a JSON literal (``"dead"``, ``3``, ``true``, ``null``) or a bare word
    (``dead``), which is a string.

    - ``var.path``: the field (or relation) is there, and not ``null`` or ``false``.
    - ``!var.path``: it is not.
    - ``var.path == value`` / ``!= value``: compared with the value. A field the
      world does not have contradicts neither: the world says nothing about it.
    """

    def __init__(self, text: str) -> None:
        m = REQUIRE_RE.match(text)
        if m is None:
            raise ValueError(f"require {text!r} must be '[!]var.field.path [== or != value]' "
                             "(e.g. giver.relations.holds.{item}, who.state.health != dead)")
        self.text = text.strip()
        self.negated = bool(m.group("neg"))
        self.var: str = m.group("var")
        self.path: tuple[str, ...] = tuple(m.group("path")[1:].split("."))
        self.op: str | None = m.group("op")
        if self.negated and self.op:
            raise ValueError(f"require {text!r}: '!' and a comparison do not go together "
                             "(write 'x != y')")
        self.value: Any = None
        self.value_var: str | None = None
        if self.op is not None:
            raw = m.group("value")
            var = _VAR_VALUE.match(raw)
            if var:
                self.value_var = var.group(1)
            else:
                try:
                    self.value = safejson.loads(raw)
                except ValueError:
                    if not _BARE_VALUE.match(raw):
                        raise ValueError(f"require {text!r}: {raw!r} is not a value "
                                         "(a {var}, a JSON literal or one bare word)") from None
                    self.value = raw

    @property
    def names(self) -> set[str]:
        """The variables the requirement reads."""
        out = {self.var} | {s[1:-1] for s in self.path if s.startswith("{")}
        return out | ({self.value_var} if self.value_var else set())


def _requirement(text: str) -> str:
    Requirement(text)  # raises ValueError naming the problem
    return text


RequireText = Annotated[str, AfterValidator(_requirement)]


class Rule(_Strict):
    """One rule: when a pattern matches the event text, its actions are proposed."""

    id: str = Field(pattern=ID_PATTERN, max_length=80)
    summary: str = ""
    group: str | None = Field(
        default=None,
        description="Rules of one group never fire on overlapping words: the longest match wins.")
    match: list[str] = Field(
        min_length=1,
        description="Patterns; the first that matches a span wins. Words, {var} slots, (a|b) "
                    "alternatives; 'walk*' takes any ending; '~go' is every form of an English "
                    "verb (go, goes, went, gone, going; '~pick up': picks up, picked up ...).")
    unless: list[str] = Field(default_factory=list,
                              description="Words that, inside the matched words, stop the rule.")
    vars: dict[VarName, VarSpec] = Field(default_factory=dict)
    require: list[RequireText] = Field(
        default_factory=list, max_length=16,
        description="Preconditions, checked before the actions (narr audit reports those the "
                    "world contradicts): '[!]var.field.path [== or != value]', a path segment "
                    "may be '{var}' (giver.relations.holds.{item}, who.state.health != dead, "
                    "who.state.location == {place}). A requirement whose variables are not "
                    "bound, or that compares a field the node lacks, is not contradicted.")
    guard: list[RequireText] = Field(
        default_factory=list, max_length=16,
        description="Preconditions without which the words cannot be right, written as "
                    "'require' is: where the world contradicts one, the change is held back "
                    "for the user to accept, not written ('Ana lost the Key' while Ben holds "
                    "it: who.relations.holds.{item}).")
    do: list[Action] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for text in value:
            patterns.parse(text)  # raises ValueError naming the problem
        return value


class ClassTable(_Strict):
    """One class of a ``[classes]`` table written as a table."""

    en: list[str] = Field(default_factory=list, description="English entries.")
    zh: list[str] = Field(default_factory=list, description="Chinese entries.")
    summary: str = ""


class RuleFile(_Strict):
    """A file of rules under ``rules/``."""

    model_config = ConfigDict(title="narr rule file")

    unless: list[str] = Field(default_factory=list, description="Added to every rule's unless.")
    vars: dict[VarName, VarSpec] = Field(default_factory=dict,
                                         description="Variables shared by the file's rules.")
    rules: list[Rule] = Field(default_factory=list)
    cues: CueSet | None = Field(
        default=None, description="Cue words added to narr's own (see narrative/diffusers/cues.toml): "
                                  "words that make a clause negated, reported, hypothetical ...")
    classes: dict[str, list[str] | ClassTable] | None = Field(
        default=None,
        description="Verb classes to add to narr's own (narrative/diffusers/classes.toml), or new "
                    "ones: a list of entries, or a table with 'en' and 'zh' lists. A pattern names a "
                    "class with @name.")

    @field_validator("classes")
    @classmethod
    def _classes(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        raw = {k: (v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v)
               for k, v in value.items()}
        problems = word_classes.check_table(raw)
        if problems:
            raise ValueError(problems[0][2])
        return raw


class LoadedRule:
    """A rule with what it needs from its file: the file name, merged vars and unless words."""

    def __init__(self, rule: Rule, source: str, file: RuleFile) -> None:
        self.rule = rule
        self.source = source
        self.vars: dict[str, VarSpec] = {**file.vars, **rule.vars}
        self.unless = [*file.unless, *rule.unless]
        self.patterns = [patterns.parse(p) for p in rule.match]
        self.requires = [Requirement(r) for r in rule.require]
        self.guards = [Requirement(r) for r in rule.guard]
        self.needs = _needed(rule, self.vars) | _derived_from(
            {n for r in [*self.requires, *self.guards] for n in r.names}, self.vars)
        self.each = {s for p in self.patterns for s in p.slots
                     if per_subject(rule, s, self.vars)}
        """Slots that a list of names fills one by one (see :func:`per_subject`)."""
        self.each_object = {p.parts[-1].slot for p in self.patterns
                            if p.parts[-1].slot is not None and p.parts[-1].slot not in self.each
                            and per_object(rule, p.parts[-1].slot, self.vars)}
        """Last slots that a list fills one by one (see :func:`per_object`)."""


def per_subject(rule: Rule, var: str, known: dict[str, VarSpec]) -> bool:
    """Whether the actions about ``var`` concern it alone, so a list there means each of them.

    "Lin Yuan, Su Qing and Old Zhou go to the ferry" moves all three: every action
    naming ``who`` sets or unsets one of its fields, or relates it to something
    (``who:knows:secret``). A rule that also writes ``var`` somewhere else (a
    holder: ``item.state.holder = "{who}"``), moves an edge away from others
    (``*:holds:item``) or derives a variable from it is about one of them only.
    """
    if any(spec.from_ is not None and spec.from_.split(".")[0] == var for spec in known.values()):
        return False
    return _about_it_alone(rule, var, lambda src, dst: src == var and dst not in (var, "*"),
                           ends=False)


def per_object(rule: Rule, var: str, known: dict[str, VarSpec]) -> bool:
    """Whether the actions about ``var`` touch that node alone, so a list there means each.

    "Ana took the key and the lantern" takes both: every action naming ``item`` writes a
    field of it, ends it, or makes or removes an edge to it (``who:holds:item``,
    ``*:holds:item``), and no value is written from it or derived from it.
    """
    used_names = {n for action in rule.do for n in _names_used(action)}
    if any(spec.from_ is not None and spec.from_.split(".")[0] == var
           for name, spec in known.items() if name in used_names):
        return False
    return _about_it_alone(rule, var, lambda src, dst: dst == var and src != var, ends=True)


def _about_it_alone(rule: Rule, var: str, edge_ok: Callable[[str, str], bool], *,
                    ends: bool) -> bool:
    """Whether some action names ``var`` and every one that does writes a field of ``var`` (from
    no value made of it), makes or removes an edge ``edge_ok(source, target)`` allows (with no
    attribute made of it), or, with ``ends``, ends a node."""
    used = False
    for action in rule.do:
        if var not in _names_used(action):
            continue
        used = True
        if isinstance(action, SetAction | UnsetAction):
            path = action.set if isinstance(action, SetAction) else action.unset
            if path.split(".")[0] != var or (isinstance(action, SetAction)
                                            and var in template_names(action.value)):
                return False
        elif isinstance(action, RelateAction | UnrelateAction):
            edge = action.relate if isinstance(action, RelateAction) else action.unrelate
            src, _, dst = edge.split(":")
            if not edge_ok(src, dst) or (isinstance(action, RelateAction)
                                         and var in template_names(action.attrs)):
                return False
        elif not (ends and isinstance(action, ExpireAction)):
            return False
    return used


def _needed(rule: Rule, known: dict[str, VarSpec]) -> set[str]:
    """The variables a rule's actions use, with those their derived variables are read from."""
    return _derived_from({n for action in rule.do for n in _names_used(action)}, known)


def _derived_from(names: set[str], known: dict[str, VarSpec]) -> set[str]:
    """``names`` with every variable their derived variables are read from."""
    needs: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in needs:
            continue
        needs.add(name)
        spec = known.get(name)
        if spec is not None and spec.from_ is not None:
            todo.append(spec.from_.split(".")[0])
    return needs


def parse_rule_file(data: bytes, source: str) -> RuleFile:
    """A rule file from its bytes; errors name the file, the rule and the field."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidWorldError(f"{source}: not UTF-8 text") from None
    try:
        raw: Any = safejson.loads(text) if source.endswith(".json") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise InvalidWorldError(f"{source}: {exc}") from None
    if isinstance(raw, dict) and "classes" in raw:
        _check_classes(raw["classes"], text, source)
    try:
        parsed = RuleFile.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{source}: {_where(raw, e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
        more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
        raise InvalidWorldError(lines[0] + more, details=lines,
                                hint="see schemas/rules.schema.json for the rule file format") from None
    _check_references(parsed, source)
    return parsed


def _check_classes(table: Any, text: str, source: str) -> None:
    """Refuse a ``[classes]`` table with a bad entry, naming the file, the line and the class."""
    problems = word_classes.check_table(table)
    if not problems:
        return
    lines = [f"{source}:{_line_of(text, name, entry)}: {message}" for name, entry, message in problems]
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    raise InvalidWorldError(lines[0] + more, details=lines,
                            hint="see narrative/diffusers/classes.toml for how a class entry is "
                                 "written")


def _line_of(text: str, name: str, entry: str) -> int:
    """The line where ``entry`` of class ``name`` is written (the class's line if not found)."""
    start = 0
    for key in (f"classes.{name}", f"\n{name}", f'"{name}"'):
        at = text.find(key)
        if at >= 0:
            start = at
            break
    if entry:
        for quoted in (json.dumps(entry, ensure_ascii=False), f"'{entry}'", entry):
            at = text.find(quoted, start)
            if at >= 0:
                return text.count("\n", 0, at) + 1
    return text.count("\n", 0, start + 1) + 1 if start else 1


def _where(raw: Any, loc: tuple[Any, ...]) -> str:
    """``rule 'go' /do/0/set`` rather than ``rules/3/do/0/set``."""
    parts = [str(p) for p in loc]
    if len(parts) >= 2 and parts[0] == "rules" and parts[1].isdigit():
        try:
            rule_id = raw["rules"][int(parts[1])].get("id", parts[1])
        except (KeyError, IndexError, TypeError, AttributeError):
            rule_id = parts[1]
        return f"rule {rule_id!r} /" + "/".join(parts[2:])
    return "/" + "/".join(parts)


def _check_references(file: RuleFile, source: str) -> None:
    """Every variable an action uses can be bound: a slot, a fixed id, ``from`` or ``as``."""
    seen: set[str] = set()
    for rule in file.rules:
        if rule.id in seen:
            raise InvalidWorldError(f"{source}: rule {rule.id!r} is defined twice")
        seen.add(rule.id)
        known = {**file.vars, **rule.vars}
        bound = {s for p in rule.match for s in patterns.parse(p).slots}
        for i, action in enumerate(rule.do):
            for name in sorted(_names_used(action)):
                problem = _unbindable(name, known, bound, set())
                if problem:
                    raise InvalidWorldError(f"{source}: rule {rule.id!r} /do/{i}: {problem}")
            if isinstance(action, CreateAction) and action.as_:
                bound.add(action.as_)
        slots = {s for p in rule.match for s in patterns.parse(p).slots}
        for key, texts in (("require", rule.require), ("guard", rule.guard)):
            for i, text in enumerate(texts):
                for name in sorted(Requirement(text).names):
                    problem = _unbindable(name, known, slots, set())
                    if problem:
                        raise InvalidWorldError(f"{source}: rule {rule.id!r} /{key}/{i}: {problem}")


def _unbindable(name: str, known: dict[str, VarSpec], bound: set[str], seen: set[str]) -> str | None:
    if name in bound:
        return None
    spec = known.get(name)
    if spec is None or (spec.id is None and spec.from_ is None):
        return (f"variable {name!r} is never bound (not a slot of any pattern, "
                "not a fixed id or derived in vars, not created with 'as')")
    if spec.from_ is not None:
        if name in seen:
            return f"variable {name!r} is derived from itself"
        return _unbindable(spec.from_.split(".")[0], known, bound, seen | {name})
    return None


def _names_used(action: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(action, SetAction | UnsetAction):
        path = action.set if isinstance(action, SetAction) else action.unset
        names.add(path.split(".")[0])
    if isinstance(action, RelateAction | UnrelateAction):
        edge = action.relate if isinstance(action, RelateAction) else action.unrelate
        src, _, dst = edge.split(":")
        names |= {src, dst} - {"*"}
    if isinstance(action, ExpireAction):
        names.add(action.expire)
    values: Any = None
    if isinstance(action, SetAction):
        values = action.value
    elif isinstance(action, RelateAction):
        values = action.attrs
    elif isinstance(action, CreateAction):
        values = action.create.model_dump()
    names |= template_names(values)
    return names


def template_names(value: Any) -> set[str]:
    """Variable names used in the ``{...}`` templates of a JSON value (keys included)."""
    out: set[str] = set()
    if isinstance(value, str):
        for m in TEMPLATE_RE.finditer(value):
            if m.group(1):
                out.add(m.group(1).split(".")[0])
    elif isinstance(value, dict):
        for k, v in value.items():
            out |= template_names(k) | template_names(v)
    elif isinstance(value, list):
        for v in value:
            out |= template_names(v)
    return out


def load_rules(root: Path) -> list[LoadedRule]:
    """Every rule under ``root/rules``, in file-name order then file order."""
    return rule_set(root).rules


def load_rule_set(root: Path) -> tuple[list[LoadedRule], tuple[str, ...]]:
    """The rules under ``root/rules``, and the ``[cues]`` tables of their files (as JSON)."""
    loaded = rule_set(root)
    return loaded.rules, loaded.cues


def load_rules_and_classes(root: Path) -> tuple[list[LoadedRule], tuple[str, ...],
                                                tuple[word_classes.ClassSpec, ...]]:
    """The rules under ``root/rules``, the ``[cues]`` tables of their files (as JSON) and the
    verb classes they add to (a class a pattern names must exist)."""
    loaded = rule_set(root)
    return loaded.rules, loaded.cues, loaded.classes


@dataclass(frozen=True)
class RuleSet:
    """A world's rules as read from ``rules/``: shared by every event that reads the same files,
    so none of it may be changed.

    What matching needs of them is built here once, on first use, and kept with the set:
    the class table (narr's classes with the files' own), the cue lexicon (narr's cue
    words with the files' ``[cues]`` and the classes), and the vocabulary of every word,
    phrase and class member the patterns use. An event on the same files (a served
    one, or the next sentence of ``narr audit``) compiles none of it again.
    """

    rules: list[LoadedRule]
    cues: tuple[str, ...]  # the files' [cues] tables, as JSON
    cue_sources: tuple[str, ...]  # the files they come from
    classes: tuple[word_classes.ClassSpec, ...] = ()  # the files' [classes] entries
    class_sources: tuple[str, ...] = ()  # the files they come from

    @cached_property
    def table(self) -> word_classes.ClassTable:
        """narr's verb classes with the files' own entries."""
        return word_classes.table(self.classes)

    @cached_property
    def lexicon(self) -> Lexicon:
        """narr's cue words with the files' own, and the classes' phrases that are cues."""
        if not self.cues and not self.classes:
            return lexicon()
        return Lexicon((shipped(), *(CueSet.model_validate_json(e) for e in self.cues)), self.table)

    @cached_property
    def vocabulary(self) -> patterns.Vocabulary:
        """Every word, phrase and class member the rules' patterns use."""
        return patterns.vocabulary([p for r in self.rules for p in r.patterns], self.table)


_FileKey = tuple[str, int, int, bytes]  # source, size, mtime, content hash
_EMPTY = RuleSet([], (), ())
_KEPT_SETS = 32  # rule sets kept (one per world a process serves, and its recent edits)
_KEPT_FILES = 512
_sets: OrderedDict[tuple[_FileKey, ...], RuleSet] = OrderedDict()
_files: OrderedDict[_FileKey, tuple[RuleFile, list[LoadedRule]]] = OrderedDict()
_cache_lock = threading.Lock()


def rule_set(root: Path) -> RuleSet:
    """The rules under ``root/rules``, parsed once per content.

    Parsing and compiling a world's rule files cost an event most of its time (65%
    of the time-travel tests' CLI time), and a server runs many events on the same
    files. Every call still reads each file and hashes it, so an edit is seen at
    the next event however it was made: same size and the same mtime too (an edit
    within the file system's clock tick, a tool that restores times). A file is
    parsed again only when its path, size, mtime or content differs from every
    version kept; the rest of the set is reused.
    """
    from narrative.store import MAX_RULES_FILE, inside, read_bounded

    directory = inside(root, RULES_DIR)  # a world's rules are read from the world only
    if not directory.is_dir():
        return _EMPTY
    keyed: list[tuple[_FileKey, bytes]] = []
    for path in sorted(directory.iterdir()):
        if path.suffix not in RULE_SUFFIXES:
            continue
        inside(root, f"{RULES_DIR}/{path.name}")
        if not path.is_file():
            continue
        st = path.stat()
        data = read_bounded(path, MAX_RULES_FILE, label=f"{RULES_DIR}/{path.name}",
                            error=InvalidWorldError)
        digest = hashlib.blake2b(data, digest_size=20).digest()
        keyed.append(((f"{RULES_DIR}/{path.name}", st.st_size, st.st_mtime_ns, digest), data))
    key = tuple(k for k, _ in keyed)
    with _cache_lock:
        found = _sets.get(key)
        if found is not None:
            _sets.move_to_end(key)
            return found
    made = _assemble([(k, _parsed(k, data)) for k, data in keyed])
    with _cache_lock:
        _sets[key] = made
        while len(_sets) > _KEPT_SETS:
            _sets.popitem(last=False)
    return made


def _parsed(key: _FileKey, data: bytes) -> tuple[RuleFile, list[LoadedRule]]:
    with _cache_lock:
        found = _files.get(key)
        if found is not None:
            _files.move_to_end(key)
            return found
    source = key[0]
    file = parse_rule_file(data, source)
    made = (file, [LoadedRule(rule, source, file) for rule in file.rules])
    with _cache_lock:
        _files[key] = made
        while len(_files) > _KEPT_FILES:
            _files.popitem(last=False)
    return made


def _assemble(files: list[tuple[_FileKey, tuple[RuleFile, list[LoadedRule]]]]) -> RuleSet:
    out: list[LoadedRule] = []
    cues: list[str] = []
    cue_sources: list[str] = []
    added: list[word_classes.ClassSpec] = []
    class_sources: list[str] = []
    seen: dict[str, str] = {}
    for key, (file, loaded) in files:
        source = key[0]
        if file.cues is not None:
            cues.append(file.cues.model_dump_json(exclude_defaults=True))
            cue_sources.append(source)
        if file.classes:
            added.extend(word_classes.specs_of(file.classes, source))
            class_sources.append(source)
        for rule in loaded:
            if rule.rule.id in seen:
                raise InvalidWorldError(
                    f"{source}: rule {rule.rule.id!r} is also defined in {seen[rule.rule.id]}")
            seen[rule.rule.id] = source
            out.append(rule)
    known = word_classes.shipped_names() | {s.name for s in added}
    for rule in out:
        for i, pattern in enumerate(rule.patterns):
            missing = sorted(pattern.classes - known)
            if missing:
                raise InvalidWorldError(
                    f"{rule.source}: rule {rule.rule.id!r} /match/{i}: no class "
                    f"@{missing[0]} (add it in a [classes] table, or use one of narr's: "
                    f"{', '.join('@' + n for n in sorted(known))})")
    return RuleSet(out, tuple(cues), tuple(cue_sources), tuple(added), tuple(class_sources))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a rule file (``schemas/rules.schema.json``)."""
    schema = RuleFile.model_json_schema(mode="validation", by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://narr.invalid/schemas/rules.schema.json"
    return schema
