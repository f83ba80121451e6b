"""Shared fixtures: git isolated from the machine, sample worlds in both layouts, a CLI runner.

Every test sees a fresh HOME with a fixed git identity and no system or global
git configuration, so results never depend on who runs them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from helpers import CLI
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev", max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

GIT_NAME = "Test Author"
GIT_EMAIL = "author@example.invalid"


@pytest.fixture(scope="session", autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {GIT_NAME}\n\temail = {GIT_EMAIL}\n[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith(("GIT_", "NARR_")) or key in ("EDITOR", "VISUAL"):
            del os.environ[key]
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
    os.environ["NARR_LOCK_TIMEOUT"] = "0.3"
    levels = pygit2.enums.ConfigLevel
    saved_paths = {lvl: pygit2.settings.search_path[lvl]
                   for lvl in (levels.SYSTEM, levels.XDG, levels.GLOBAL)}
    pygit2.settings.search_path[levels.SYSTEM] = str(home / "nosystem")
    pygit2.settings.search_path[levels.XDG] = str(home / ".config")
    pygit2.settings.search_path[levels.GLOBAL] = str(home)
    yield home
    for lvl, value in saved_paths.items():
        pygit2.settings.search_path[lvl] = value
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(params=["flat", "sharded"])
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(tmp_path: Path, layout: str) -> Path:
    """A sample world in the parametrised layout."""
    from narrative.engine.init import init_world

    root = tmp_path / "world"
    init_world(root, sample=True, layout=layout)  # type: ignore[arg-type]
    return root


@pytest.fixture
def flat_world(tmp_path: Path) -> Path:
    from narrative.engine.init import init_world

    root = tmp_path / "flat-world"
    init_world(root, sample=True, layout="flat")
    return root


@pytest.fixture
def narr(world: Path) -> CLI:
    return CLI(world)


