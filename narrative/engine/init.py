"""``narr init``: a new world repository with its genesis commit."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from narrative.config import CONFIG_FILE, WorldConfig
from narrative.errors import InvalidInputError, InvalidWorldError
from narrative.ids import LAYERS, LAYOUTS, WORLD_DIR, Layout, new_event_id, node_path
from narrative.model import EventRecord
from narrative.nodefile import NodeDict, dump, parse_json, validate
from narrative.store import records
from narrative.store.worldrepo import WorldRepo, init_repository, open_repository

if TYPE_CHECKING:
    import pygit2

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


def _copy_rules(rules: str, root: Path) -> list[str]:
    """Copy a generic rule set into ``root/rules``; the repository-relative paths written."""
    from narrative.diffusers.rulefile import RULES_DIR

    target = root / RULES_DIR
    target.mkdir(parents=True, exist_ok=True)
    out = []
    for src in sorted(generic_rules_dir(rules).glob("*.toml")):
        shutil.copy2(src, target / src.name)
        out.append(f"{RULES_DIR}/{src.name}")
    return out


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
    extra: list[tuple[Path, str]] = []
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

    created_root = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        repo = init_repository(root)
        (root / CONFIG_FILE).write_text(config.render(), encoding="utf-8")
        (root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
        paths = [CONFIG_FILE, ".gitignore"]
        for layer in LAYERS:  # where nodes go, ready for an editor (git tracks no empty folder)
            (root / WORLD_DIR / layer).mkdir(parents=True, exist_ok=True)
        for node in nodes:
            rel = node_path(node["id"], node["layer"], layout)
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(dump(node))
            paths.append(rel)
        if rules is not None:
            paths.extend(_copy_rules(rules, root))
        for src, rel_name in extra:
            dst = root / rel_name
            if src.is_dir():
                shutil.copytree(src, dst)
                paths.extend(p.relative_to(root).as_posix() for p in dst.rglob("*") if p.is_file())
            else:
                shutil.copy2(src, dst)
                paths.append(rel_name)
        index = repo.index
        for rel in paths:
            index.add(rel)
        index.write()
        tree = index.write_tree()
        wr = WorldRepo(root, repo, config)
        commit, event_id = _genesis(wr, tree, None, [], when)
        repo.create_reference_direct("refs/heads/main", commit, True,
                               message=f"narr init: genesis of {config.name}")
        _catalog(wr, tree, commit, event_id)
    except BaseException:
        if created_root:
            shutil.rmtree(root, ignore_errors=True)
        else:  # the directory was empty: leave it empty again
            for child in root.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
    return InitResult(root, str(commit), event_id, len(nodes), layout)


def _init_here(root: Path, *, layout: Layout, name: str | None, language: str | None,
               when: datetime | None, rules: str | None) -> InitResult:
    """Make the git repository at ``root`` a world: narr.toml, world/ and a genesis commit on
    top of its history, which stays as it was (narr log shows it as plain git commits).

    Refused unless the working tree is clean: the genesis commit must hold exactly what
    narr adds, never a half-finished change of the user's.
    """
    repo = open_repository(root)
    if repo is None:
        raise InvalidInputError(f"{root} is not the top of a git repository",
                                hint="narr init DIR makes a new one; git init first to use --here")
    if (root / CONFIG_FILE).exists():
        raise InvalidInputError(f"{root} is already a narr world ({CONFIG_FILE} exists)")
    if (root / WORLD_DIR).exists():
        raise InvalidInputError(f"{root}/{WORLD_DIR} already exists; narr keeps the story there",
                                hint="move it aside, then run narr init --here again")
    if repo.head_is_unborn:
        raise InvalidInputError(f"{root} has no commits yet", hint="narr init DIR makes a new world")
    dirty = [path for path, flags in repo.status().items() if flags != 0 and not flags & (1 << 14)]
    if dirty:
        raise InvalidInputError(f"{root} has uncommitted changes ({len(dirty)} file(s), "
                                f"first {sorted(dirty)[0]})", hint="commit or stash them first")
    head = repo.head.peel()
    config = WorldConfig(name=name or root.name, language=language or ("zh" if rules == "zh" else "en"),
                         layout=layout, diffuser="rules")
    made: list[Path] = []
    try:
        (root / CONFIG_FILE).write_text(config.render(), encoding="utf-8")
        made.append(root / CONFIG_FILE)
        paths = [CONFIG_FILE]
        if not (root / ".gitignore").exists():
            (root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
            made.append(root / ".gitignore")
            paths.append(".gitignore")
        made.append(root / WORLD_DIR)
        for layer in LAYERS:
            (root / WORLD_DIR / layer).mkdir(parents=True, exist_ok=True)
        if rules is not None:
            from narrative.diffusers.rulefile import RULES_DIR

            if (root / RULES_DIR).exists():
                raise InvalidInputError(f"{root}/{RULES_DIR} already exists; leave out --rules "
                                        "or move it aside")
            made.append(root / RULES_DIR)
            paths.extend(_copy_rules(rules, root))
        index = repo.index
        index.read()
        for rel in paths:
            index.add(rel)
        tree = index.write_tree()
        wr = WorldRepo(root, repo, config)
        commit, event_id = _genesis(wr, tree, "HEAD", [head.id], when)
        index.write()
        _catalog(wr, tree, commit, event_id)
    except BaseException:
        for path in reversed(made):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        raise
    return InitResult(root, str(commit), event_id, 0, layout)


def _genesis(wr: WorldRepo, tree: pygit2.Oid, ref: str | None, parents: list[pygit2.Oid],
             when: datetime | None) -> tuple[pygit2.Oid, str]:
    """Commit the genesis record on ``tree`` (moving ``ref`` if given): (commit id, event id)."""
    from narrative.engine.event import iso, now_utc

    event_id = new_event_id()
    when = when or now_utc()
    record = EventRecord(kind="genesis", id=event_id, parent=None,
                         content=f"Genesis: {wr.config.name}", created_at=iso(when))
    sig = wr.signature(when)
    return wr.repo.create_commit(ref, sig, sig, records.encode(record), tree, parents), event_id


def _catalog(wr: WorldRepo, tree: pygit2.Oid, commit: pygit2.Oid, event_id: str) -> None:
    """Bring the new world's catalog to its genesis, then let the handle go."""
    wr.catalog.sync(wr.repo, wr.world_tree_id(wr.repo[tree]), wr.config.layout)  # type: ignore[arg-type]
    from narrative.store.history import summary_row_of

    wr.catalog.remember_event(event_id, str(commit), summary_row_of(wr.repo[commit]))  # type: ignore[arg-type]
    wr.close()
