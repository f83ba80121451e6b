"""``narr.toml``: the world's own settings, tracked in the world repository.

Only settings that belong to the story live here (name, language, layout,
default diffuser). Anything that could run code or reach a network (commands,
endpoints, keys) is user-level configuration and is never read from a world.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

import tomli_w

from narrative.errors import InvalidWorldError
from narrative.ids import LAYOUTS, Layout

CONFIG_FILE = "narr.toml"


@dataclass(frozen=True)
class WorldConfig:
    name: str
    language: str = "en"
    layout: Layout = "flat"
    diffuser: str = "rules"
    references: dict[str, str] = field(default_factory=dict)
    """Reference fields the world declares (``[references]``): JSON pointer -> edge label."""
    pov: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``[pov]``: what a point of view sees of others. ``inner``: fields (``state.plan``) and
    relation types (``relations.suspects``) that are inner life beyond narr's own list (of
    characters; ``KIND:state.field`` of the nodes of one kind); ``outward``: entries this
    world shows a bystander after all; ``hidden``: state fields that, when set, hide their
    node from whoever stands beside it."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def reference_labels(self) -> dict[str, str]:
        """Every reference field of this world, narr's own first: pointer -> edge label."""
        from narrative.fields import REFERENCE_LABELS

        return {**REFERENCE_LABELS, **self.references}

    def render(self) -> str:
        """The text of a fresh ``narr.toml``."""
        return (
            "# narr world settings, tracked with the story (never endpoints, keys or commands:\n"
            "# those live in your own ~/.config/narr/config.toml)\n"
            "[world]\n"
            f"name = {_toml_str(self.name)}\n"
            "# the language of the story's text (context for diffusers that write prose)\n"
            f"language = {_toml_str(self.language)}\n"
            "# flat: world/<layer>/<id>.json; sharded: world/<layer>/<xx>/<id>.json (large worlds)\n"
            f"layout = {_toml_str(self.layout)}\n"
            "\n"
            "[diffuser]\n"
            "# what turns an event's words into changes when no --diffuser is given:\n"
            "# rules (offline, rules/*.toml), explicit (only the flags), or llm / exec when\n"
            "# the user allows them ([diffuser] allow_world in their own config)\n"
            f"default = {_toml_str(self.diffuser)}\n"
        )


def _toml_str(value: str) -> str:
    """``value`` as a TOML string, by tomli-w: control characters must be escaped too.

    The file is written from a template (its comments guide the user), so only the
    values go through the TOML writer.
    """
    return tomli_w.dumps({"v": value}).removeprefix("v = ").rstrip("\n")


KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "world": ("name", "language", "layout"),
    "diffuser": ("default",),
    "import": ("user",),  # what {{user}} stands for in the cards and lorebooks narr import reads
    "references": (),
    "pov": ("inner", "outward", "hidden"),
}
FREE_TABLES = frozenset({"references"})  # tables whose keys are the world's own (field names)
MAX_LABEL = 40


def unknown_keys(raw: dict[str, Any]) -> list[str]:
    """Keys of ``narr.toml`` narr does not read: most likely misspelt, so never silent."""
    out = []
    for key, value in raw.items():
        if key not in KNOWN_KEYS:
            out.append(key)
        elif key in FREE_TABLES:
            continue
        elif isinstance(value, dict):
            out.extend(f"{key}.{sub}" for sub in value if sub not in KNOWN_KEYS[key])
    return out


def known_keys() -> str:
    return ", ".join([*(f"{table}.{key}" for table, keys in KNOWN_KEYS.items() for key in keys),
                      *(f"[{table}]" for table in sorted(FREE_TABLES))])


def _references(raw: Any, source: str) -> dict[str, str]:
    """``[references]``: ``"state.home" = "lives at"`` declares that ``state.home`` holds a
    node's id, drawn as an edge labelled "lives at". Fields live under state or traits."""
    from narrative.fields import REFERENCE_ROOTS, escape, split

    if not isinstance(raw, dict):
        raise InvalidWorldError(f"{source}: [references] must be a table of "
                                '"field" = "label" (e.g. "state.home" = "lives at")')
    out: dict[str, str] = {}
    for key, label in raw.items():
        try:
            ptr = key if key.startswith("/") else "".join("/" + escape(p) for p in key.split("."))
            tokens = split(ptr)
        except ValueError:
            tokens = []
        if len(tokens) < 2 or tokens[0] not in REFERENCE_ROOTS or any(not t for t in tokens):
            raise InvalidWorldError(
                f"{source}: references: {key!r} must be a field under "
                f"{' or '.join(REFERENCE_ROOTS)} (e.g. state.home)")
        if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL or "\n" in label:
            raise InvalidWorldError(f"{source}: references: {key!r}: the label must be a line of "
                                    f"text of at most {MAX_LABEL} characters (e.g. \"lives at\")")
        out[ptr] = label.strip()
    return out


POV_ROOTS = ("state", "traits", "relations")


def _pov(raw: Any, source: str) -> dict[str, tuple[str, ...]]:
    """``[pov]``: lists of ``state.FIELD``, ``traits.FIELD`` or ``relations.TYPE`` entries
    (``hidden``: state or traits fields only)."""
    if not isinstance(raw, dict):
        raise InvalidWorldError(f"{source}: [pov] must be a table (inner = [\"state.plan\"])")
    out: dict[str, tuple[str, ...]] = {}
    for key in KNOWN_KEYS["pov"]:
        entries = raw.get(key, [])
        roots = POV_ROOTS if key != "hidden" else POV_ROOTS[:2]
        if not isinstance(entries, list):
            raise InvalidWorldError(f"{source}: pov.{key} must be a list of fields "
                                    f"(e.g. [\"{roots[0]}.plan\"])")
        for entry in entries:
            kind, colon, tail = entry.rpartition(":") if isinstance(entry, str) else ("", "", "")
            root, dot, rest = tail.partition(".")
            if not dot or root not in roots or not rest or "/" in rest or "." in rest or (
                    colon and not kind.strip()):
                raise InvalidWorldError(
                    f"{source}: pov.{key}: {entry!r} must be "
                    + " or ".join(f"{r}.{'TYPE' if r == 'relations' else 'FIELD'}" for r in roots)
                    + ", for one kind of node KIND:FIELD (e.g. state.plan, crowd:state.mood)")
        out[key] = tuple(entries)
    return out


def parse_config(text: str, source: str = CONFIG_FILE) -> WorldConfig:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidWorldError(f"{source}: {exc}") from None
    world = raw.get("world", {})
    diffuser = raw.get("diffuser", {})
    if not isinstance(world, dict) or not isinstance(diffuser, dict):
        raise InvalidWorldError(f"{source}: [world] and [diffuser] must be tables")
    layout = world.get("layout", "flat")
    if layout not in LAYOUTS:
        raise InvalidWorldError(
            f"{source}: world.layout is {layout!r}; expected one of {', '.join(LAYOUTS)}"
        )
    name = world.get("name", "")
    language = world.get("language", "en")
    default = diffuser.get("default", "rules")
    for key, value in (("world.name", name), ("world.language", language),
                       ("diffuser.default", default)):
        if not isinstance(value, str):
            raise InvalidWorldError(f"{source}: {key} must be a string")
    references = _references(raw.get("references", {}), source)
    return WorldConfig(name=name, language=language, layout=layout, diffuser=default,
                       references=references, pov=_pov(raw.get("pov", {}), source), raw=raw)
