"""The manual's generated reference: every command with its help, every schema with its fields."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from narrative.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import docs_hooks  # noqa: E402


def test_the_command_reference_has_every_command_and_option() -> None:
    text = docs_hooks.commands_markdown()
    headings = re.findall(r"^## `(narr[^`]*)`", text, flags=re.MULTILINE)
    expected = ["narr", *(" ".join(("narr", *p)) for p in docs_hooks.command_paths(main))]
    assert headings == expected
    assert {"narr event", "narr export lorebook", "narr chains drop", "narr serve"} <= set(headings)
    sections = dict(zip(headings, re.split(r"^## `narr[^`]*`.*$", text, flags=re.MULTILINE)[1:],
                        strict=True))
    for path in docs_hooks.command_paths(main):
        command: click.Command = main
        for name in path:
            assert isinstance(command, click.Group)
            command = command.commands[name]
        section = sections[" ".join(("narr", *path))]
        assert f"Usage: narr {' '.join(path)} " in section
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in section, (path, param.opts)
                first_words = " ".join((param.help or "").split()[:3])
                assert first_words in " ".join(section.split()), (path, param.opts)


def test_a_new_command_is_in_the_reference_by_itself() -> None:
    @click.group()
    def fake() -> None:
        """A stand-in."""

    @fake.command("brand-new")
    @click.option("--shiny", help="Make it shine.")
    def brand_new(shiny: str) -> None:
        """Do the new thing."""

    text = docs_hooks.commands_markdown(fake)
    assert "## `narr brand-new`" in text and "Do the new thing." in text and "--shiny" in text
    assert "Make it shine." in text


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").glob("*.schema.json")), ids=lambda p: p.name)
def test_the_format_reference_has_every_field_of_every_schema(path: Path) -> None:
    text = docs_hooks.formats_markdown()
    schema = json.loads(path.read_text(encoding="utf-8"))
    name = path.name.removesuffix(".schema.json")
    part = text.split(f"{{ #{name} }}", 1)[1].split("\n## ", 1)[0]
    for definition in [schema, *schema.get("$defs", {}).values()]:
        for field in definition.get("properties", {}):
            assert f"| `{field}` |" in part, (name, field)
    for defname in schema.get("$defs", {}):
        assert f"{{ #{name}-{defname.lower()} }}" in part
    # every link to a definition lands on a heading of the same schema
    for target in re.findall(r"\]\(#([\w-]+)\)", part):
        assert f"{{ #{target} }}" in part, target


def test_the_answer_reference_has_every_answer_its_version_and_fields() -> None:
    """Every answer narr gives has a typed model, a schema and a section of the reference with
    each field; each answer only the CLI gives names the commands that print it; the agents'
    page links the list."""
    from narrative.answer_models import CLI_ANSWERS, STUDIO_ANSWERS
    from narrative.answers import VERSIONS, schema
    from narrative.schemas import answer_types

    assert set(VERSIONS) == answer_types().keys()
    assert set(docs_hooks.ANSWER_COMMANDS) == CLI_ANSWERS.keys()
    text = docs_hooks.answers_markdown()
    for name in VERSIONS:
        path = ROOT / "schemas" / "answers" / f"{name}.schema.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        assert f"| [`{schema(name)}`](#{name}) |" in text, name
        if name in STUDIO_ANSWERS:  # named with the route that gives it
            assert f"| [`{schema(name)}`](#{name}) | `GET /api/" in text, name
        part = text.split(f"## {schema(name)} {{ #{name} }}", 1)[1].split("\n## ", 1)[0]
        for definition in [document, *document.get("$defs", {}).values()]:
            for field in definition.get("properties", {}):
                assert f"| `{field}` |" in part, (name, field)
        for target in re.findall(r"\]\(#([\w-]+)\)", part):
            assert f"{{ #{target} }}" in part, target
    assert "(reference/answers.md)" in (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")


def test_the_http_reference_has_every_route() -> None:
    from narrative.serve.http import openapi

    text = docs_hooks.http_markdown()
    for path, methods in openapi()["paths"].items():
        for method in methods:
            assert f"| {method.upper()} | `{path}` |" in text, (method, path)
    assert "| 401 |" in text


def test_the_library_reference_has_every_exported_name() -> None:
    import inspect

    import narrative
    from narrative import api

    text = docs_hooks.library_markdown()
    for name in narrative.__all__:
        obj = getattr(api, name)
        assert f" {{ #{name} }}" in text, name
        if inspect.isfunction(obj):  # with its signature and what it is for
            assert obj.__doc__, f"narrative.{name} has no docstring"
            assert f"### `{name}(" in text, name
    assert "Exit code 11" in text.split("{ #NotFoundError }", 1)[1].split("###", 1)[0]
    assert "- `ops.give(item: str, from_: str | None, to: str) -> list[Op]`" in text
    assert "| `content` | <code>str</code> |" in text.split("{ #EventRequest }", 1)[1].split("###", 1)[0]


def test_links_to_repository_files_point_at_their_copies() -> None:
    page = "See [the rules](../sample-world/rules/README.md), [a schema](../schemas/node.schema.json),"
    page += " [all schemas](../schemas/), [a page](server.md) and [a site](https://example.org/x.md)."
    fixed = docs_hooks._relink(page, "words-to-changes.md", "docs/words-to-changes.md")
    assert "(repo/sample-world/rules/README.md)" in fixed and "(repo/schemas/node.schema.json)" in fixed
    assert "(reference/formats.md)" in fixed and "(server.md)" in fixed
    assert "(https://example.org/x.md)" in fixed
    back = docs_hooks._relink("[perf](../docs/performance.md#x)", "repo/benchmarks/README.md",
                              "benchmarks/README.md")
    assert back == "[perf](../../performance.md#x)"


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    """What CI runs: a broken link, an anchor nothing has or a page left out of the nav fails."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="the docs extra is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    result = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr
    reference = (tmp_path / "site" / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    assert "narr event" in reference and "--close-scene" in reference
    assert (tmp_path / "site" / "studio-world.png").is_file()
    assert (tmp_path / "site" / "repo" / "schemas" / "node.schema.json").is_file()


def test_the_readme_is_a_front_page_whose_links_lead_into_the_manual() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    targets = re.findall(r"\]\(((?:docs|schemas)/[^)#]*)", text)
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []
    assert "```console" in text  # one real session, run by tests/test_doc_sessions.py
