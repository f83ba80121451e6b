"""``narr init``: a new world repository with its genesis commit."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from narrative.config import CONFIG_FILE, WorldConfig
from narrative.errors import InvalidInputError, InvalidWorldError
from narrative.ids import LAYERS, LAYOUTS, WORLD_DIR, Layout, new_event_id, node_path
from narrative.model import EventRecord
from narrative.nodefile import NodeDict, dump, parse_json, validate
from narrative.store import records
from narrative.store.worldrepo import WorldRepo, init_repository

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


def init_world(directory: str | Path, *, sample: bool = False, layout: Layout = "flat",
               name: str | None = None, language: str | None = None,
               when: datetime | None = None) -> InitResult:
    if layout not in LAYOUTS:
        raise InvalidInputError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    root = Path(directory).resolve()
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
        language=language or (src_config.language if src_config else "en"),
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
        event_id = new_event_id()
        from narrative.engine.event import iso, now_utc

        when = when or now_utc()
        record = EventRecord(kind="genesis", id=event_id, parent=None,
                             content=f"Genesis: {config.name}", created_at=iso(when))
        sig = wr.signature(when)
        commit = repo.create_commit(None, sig, sig, records.encode(record), tree, [])
        repo.create_reference_direct("refs/heads/main", commit, True,
                               message=f"narr init: genesis of {config.name}")
        wr.catalog.sync(repo, wr.world_tree_id(repo[tree]), layout)  # type: ignore[arg-type]
        wr.catalog.remember_event(event_id, str(commit))
        wr.close()
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
