"""``narr init``: a new world repository with its genesis commit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from narrative.config import CONFIG_FILE, WorldConfig
from narrative.errors import InvalidInputError, InvalidWorldError
from narrative.ids import LAYOUTS, WORLD_DIR, Layout, new_event_id
from narrative.model import EventRecord
from narrative.nodefile import NodeDict, parse_json, validate
from narrative.store import new_world, world_here

RULE_SETS: tuple[str, ...] = ("en", "zh", "both")

GITIGNORE = """\
# editor leftovers must never look like hand edits of the world
*.swp
*.swo
*~
.#*
\\#*#
.DS_Store
"""


@dataclass
class InitResult:
    root: Path
    commit: str
    event_id: str
    nodes: int
    layout: Layout


def sample_world_dir() -> Path:
    """The sample world shipped with narr (in a wheel, or beside the package in a checkout)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_sample_world", here.parent / "sample-world"):
        if (candidate / WORLD_DIR).is_dir():
            return candidate
    raise InvalidWorldError("the sample world is missing from this installation of narr")


def read_seed_nodes(source: Path) -> list[NodeDict]:
    """Every node file under ``source/world``, validated (layout-independent: any depth)."""
    nodes: list[NodeDict] = []
    seen: dict[str, Path] = {}
    for path in sorted((source / WORLD_DIR).rglob("*.json")):
        rel = path.relative_to(source).as_posix()
        node = validate(parse_json(path.read_bytes(), rel), rel, path.read_text("utf-8"))
        if node["id"] in seen:
            raise InvalidWorldError(f"{rel}: node id {node['id']!r} also used by {seen[node['id']]}")
        seen[node["id"]] = path
        nodes.append(node)
    return nodes


def generic_rules_dir(rules: str) -> Path:
    """narr's generic rule set for a language (``en``, ``zh`` or ``both``), shipped in the package."""
    if rules not in RULE_SETS:
        raise InvalidInputError(f"unknown rule set {rules!r}; expected one of {', '.join(RULE_SETS)}")
    found = Path(__file__).resolve().parent.parent / "rules_generic" / rules
    if not found.is_dir():
        raise InvalidWorldError("the generic rules are missing from this installation of narr")
    return found


def _rule_copies(rules: str) -> list[tuple[Path, str]]:
    """The files of a generic rule set and where each goes in a world (``rules/...``)."""
    from narrative.diffusers.rulefile import RULES_DIR

    return [(src, f"{RULES_DIR}/{src.name}") for src in sorted(generic_rules_dir(rules).glob("*.toml"))]


def init_world(directory: str | Path, *, sample: bool = False, layout: Layout = "flat",
               name: str | None = None, language: str | None = None,
               when: datetime | None = None, rules: str | None = None,
               here: bool = False) -> InitResult:
    """Create a world in ``directory``: a new repository, or with ``here`` an existing one.

    ``rules`` (``en``, ``zh``, ``both``) gives a new world narr's generic rules, so plain
    events change it from the first one; the sample world brings its own.
    """
    if layout not in LAYOUTS:
        raise InvalidInputError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    if rules is not None:
        generic_rules_dir(rules)
        if sample:
            raise InvalidInputError("--rules is for a world of your own; the sample brings its rules")
    root = Path(directory).resolve()
    if here:
        if sample:
            raise InvalidInputError("--here turns your repository into a world; it takes no --sample")
        return _init_here(root, layout=layout, name=name, language=language, when=when, rules=rules)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidInputError(f"{root} exists and is not empty",
                                hint="narr init creates a world in a new or empty directory")
    nodes: list[NodeDict] = []
    extra: list[tuple[Path, str]] = []  # the sample's other files: (source, path in the world)
    src_config: WorldConfig | None = None
    if sample:
        source = sample_world_dir()
        nodes = read_seed_nodes(source)
        if (source / CONFIG_FILE).is_file():
            from narrative.config import parse_config

            src_config = parse_config((source / CONFIG_FILE).read_text("utf-8"))
        for item in sorted(source.iterdir()):
            if item.name not in (WORLD_DIR, CONFIG_FILE):
                extra.append((item, item.name))
    config = WorldConfig(
        name=name or (src_config.name if src_config else root.name),
        language=language or (src_config.language if src_config else
                              "zh" if rules == "zh" else "en"),
        layout=layout,
        diffuser=src_config.diffuser if src_config else "rules",
    )

    copies = [*(_rule_copies(rules) if rules is not None else []), *extra]
    when = _now(when)
    genesis = _genesis(config, when)
    commit = new_world(root, config, genesis, gitignore=GITIGNORE, nodes=nodes,
                              copies=copies, when=when)
    return InitResult(root, commit, genesis.id, len(nodes), layout)


def _init_here(root: Path, *, layout: Layout, name: str | None, language: str | None,
               when: datetime | None, rules: str | None) -> InitResult:
    """Make the git repository at ``root`` a world: narr.toml, world/ and a genesis commit on
    top of its history, which stays as it was (narr log shows it as plain git commits)."""
    from narrative.diffusers.rulefile import RULES_DIR

    config = WorldConfig(name=name or root.name, language=language or ("zh" if rules == "zh" else "en"),
                         layout=layout, diffuser="rules")
    when = _now(when)
    genesis = _genesis(config, when)
    commit = world_here(root, config, genesis, gitignore=GITIGNORE,
                               rules=_rule_copies(rules) if rules is not None else None,
                               rules_dir=RULES_DIR, when=when)
    return InitResult(root, commit, genesis.id, 0, layout)


def _genesis(config: WorldConfig, when: datetime) -> EventRecord:
    """The record a world's history starts with."""
    from narrative.engine.event import iso

    return EventRecord(kind="genesis", id=new_event_id(), parent=None,
                       content=f"Genesis: {config.name}", created_at=iso(when))


def _now(when: datetime | None) -> datetime:
    from narrative.engine.event import now_utc

    return when or now_utc()
