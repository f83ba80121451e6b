"""MkDocs hooks: the reference pages, made from the code at build time, and the repository files
the manual links to.

The command reference is every click command's own ``--help``, so a new command, option or help
text is in the manual the next time it is built, with nothing to keep in step by hand. The data
format reference is the JSON Schemas of ``schemas/`` (themselves generated from the models), read
field by field; the HTTP reference is the OpenAPI description the server serves; the library
reference is every name the package exports, its signature and docstring, read with ``inspect``;
the answers reference is every ``--json``, HTTP and MCP answer's schema. Pages link to files
beside ``docs/`` (``../schemas/node.schema.json``, ``../sample-world/rules/README.md``) as they
would on a repository's web page; the site gets a copy of each under ``repo/`` and the links are
pointed there. Nothing here reaches the network.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
# Files outside docs/ that a page may link to; the site copies them under repo/.
REPO_FILES = ("sample-world/rules/README.md", "examples/exec-diffuser.py", "benchmarks/README.md",
              "benchmarks/results/latest.md", "benchmarks/results/as-installed.md")
REFERENCE_COMMANDS = "reference/commands.md"
REFERENCE_FORMATS = "reference/formats.md"
REFERENCE_HTTP = "reference/http.md"
REFERENCE_LIBRARY = "reference/library.md"
REFERENCE_ANSWERS = "reference/answers.md"
HELP_WIDTH = 100


def command_paths(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command under ``group``, a group before its subcommands, by name."""
    for name in sorted(group.commands):
        command = group.commands[name]
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from command_paths(command, (*path, name))


def _help(main: click.Group, path: tuple[str, ...]) -> str:
    ctx = click.Context(main, info_name="narr", max_content_width=HELP_WIDTH, terminal_width=HELP_WIDTH)
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command.get_help(ctx)


def _find(main: click.Group, path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _anchor(path: tuple[str, ...]) -> str:
    return "-".join(("narr", *path))


def commands_markdown(main: click.Group | None = None) -> str:
    """The command reference: a section per command, its short help, then its ``--help``."""
    if main is None:
        from narrative.cli import main as narr_main

        main = narr_main
    paths = list(command_paths(main))
    out = ["# Commands", "",
           "Every command's `--help`, as `narr COMMAND --help` prints it, made from the commands "
           "themselves when the manual is built. [The commands](../commands.md) shows them at a "
           "glance, with what they share: `--json`, `-C`, colours, pagers, exit codes.", ""]
    out += ["| command | what it does |", "| --- | --- |"]
    for path in [(), *paths]:
        title = " ".join(("narr", *path))
        short = _find(main, path).get_short_help_str(HELP_WIDTH * 2).replace("|", "\\|")
        out.append(f"| [`{title}`](#{_anchor(path) if path else 'narr'}) | {short} |")
    out.append("")
    for path in [(), *paths]:
        title = " ".join(("narr", *path))
        command = _find(main, path)
        out += [f"## `{title}` {{ #{_anchor(path) if path else 'narr'} }}", ""]
        short = command.get_short_help_str(HELP_WIDTH * 2)
        if short:
            out += [short, ""]
        if isinstance(command, click.Group) and path:
            subs = ", ".join(f"[`{sub}`](#{_anchor((*path, sub))})" for sub in sorted(command.commands))
            out += [f"Subcommands: {subs}.", ""]
        out += ["```text", _help(main, path).rstrip("\n"), "```", ""]
    return "\n".join(out)


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'], ensure_ascii=False)}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(s) for s in schema[key])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type(schema['items'])}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    return str(kind)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").replace("``", "`").split())


def _object(schema: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if schema.get("description"):
        lines += [_cell(schema["description"]), ""]
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        lines += ["| field | type | required | default | meaning |", "| --- | --- | --- | --- | --- |"]
        for name, prop in properties.items():
            default = f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else ""
            lines.append(f"| `{name}` | {_type(prop)} | {'yes' if name in required else ''} | {default} | "
                         f"{_cell(prop.get('description', ''))} |")
        lines.append("")
    elif "properties" not in schema and ("anyOf" in schema or "oneOf" in schema or "enum" in schema):
        lines += [f"One of: {_type(schema)}.", ""]
    if schema.get("additionalProperties") is False and properties:
        lines += ["No other field is accepted.", ""]
    return lines


def formats_markdown(schemas: Path = SCHEMAS) -> str:
    """The data formats: each JSON Schema's fields, then the definitions it refers to."""
    files = sorted(schemas.glob("*.schema.json"))
    out = ["# Data formats", "",
           "The JSON Schemas narr validates against, field by field, made from `schemas/` when the "
           "manual is built (`narr schema NAME` prints each; `python -m narrative.schemas` "
           "regenerates them from the models). Point an editor's JSON Schema support at the files "
           "themselves. The answers of `--json`, the HTTP API and the MCP tools are in "
           "[Answers](answers.md).", ""]
    for path in files:
        name = path.name.removesuffix(".schema.json")
        out.append(f"- [`{name}`](#{name}): {json.loads(path.read_text(encoding='utf-8')).get('title', '')}")
    out.append("")
    return _fields(out, files, lambda name, path: (
        f"`narr schema {name}`; the file is [`schemas/{path.name}`](../repo/schemas/{path.name})."))


ANSWER_COMMANDS: dict[str, tuple[str, ...]] = {
    "error": ("narr ... --json", "HTTP", "MCP"),
    "export_written": ("narr export ... -o FILE",),
    "vault": ("narr export vault",), "studio": ("narr studio",),
    "server": ("narr serve --status", "--stop", "--detach"),
}
"""The commands that print each answer only the CLI gives (a test keeps it to CLI_ANSWERS)."""


def answers_markdown(schemas: Path = SCHEMAS / "answers") -> str:
    """Every JSON answer (``narr.NAME/VERSION``): who gives it, then its fields."""
    from narrative.api import OPERATIONS
    from narrative.serve.http import openapi

    operations: dict[str, list[Any]] = {}  # by answer: retry answers as event does
    for row in OPERATIONS:
        operations.setdefault(row.answer_name, []).append(row)
    routes = {answer["description"]: f"`{method.upper()} {path}`"  # the studio's own reads
              for path, methods in openapi()["paths"].items() for method, route in methods.items()
              if (answer := route.get("responses", {}).get("200", {})).get("description", "")
              .startswith("narr.studio_")}
    files = sorted(schemas.glob("*.schema.json"))
    out = ["# Answers", "",
           "Every JSON answer narr gives: a command's `--json`, an HTTP route's, an MCP tool's, and "
           "the one error shape of all three. Each is an object whose `schema` field names its "
           "shape and version (a list comes as `items`); a change of shape bumps the version. Made "
           "from `schemas/answers/` when the manual is built (`python -m narrative.schemas` "
           "regenerates them from `narrative/answer_models.py`); the schemas are closed, so an "
           "answer has no key its schema does not name. See [Agents and programs](../agents.md).",
           "", "| answer | given by | what it is |", "| --- | --- | --- |"]
    for path in files:
        name = path.name.removesuffix(".schema.json")
        schema = json.loads(path.read_text(encoding="utf-8"))
        rows = operations.get(name, [])
        op = rows[0] if rows else None
        served = [row for row in rows if row.served]
        by = (", ".join(f"`{row.method} {row.path}`" for row in served)
              + ("" if name == "edit_node" else ", MCP, the CLI")
              if served else "the CLI and the library (no server runs it)"
              if op is not None else routes.get(str(schema.get("title")), "") + " (the studio)"
              if name.startswith("studio_")
              else ", ".join(f"`{c}`" for c in ANSWER_COMMANDS.get(name, ())))
        about = _cell(op.summary if op is not None else
                      str(schema.get("description", "")).split("\n\n", 1)[0])
        out.append(f"| [`{schema.get('title', name)}`](#{name}) | {by} | {about} |")
    out.append("")
    return _fields(out, files, lambda name, path: (
        f"The file is [`schemas/answers/{path.name}`](../repo/schemas/answers/{path.name})."))


def _fields(out: list[str], files: list[Path], where: Any) -> str:
    """``out`` followed by a section per schema file: ``where(name, path)``, its fields, then
    the definitions it refers to."""
    for path in files:
        schema = json.loads(path.read_text(encoding="utf-8"))
        name = path.name.removesuffix(".schema.json")
        out += [f"## {schema.get('title', name)} {{ #{name} }}", "", where(name, path), ""]
        out += _object(schema)
        for defname, definition in schema.get("$defs", {}).items():
            out += [f"### {defname} {{ #{name}-{defname.lower()} }}", ""]
            out += _object(definition)
    text = "\n".join(out)
    # a $ref's anchor names the definition inside the schema that holds it
    return _scope_refs(text, files)


def _scope_refs(text: str, files: list[Path]) -> str:
    pieces = re.split(r"(?m)^(## .* \{ #([\w-]+) \})$", text)
    result = [pieces[0]]
    for i in range(1, len(pieces), 3):
        heading, name, body = pieces[i], pieces[i + 1], pieces[i + 2]
        body = re.sub(r"\]\(#([\w-]+)\)", lambda m, n=name: f"](#{n}-{m.group(1)})", body)
        result += [heading, body]
    return "".join(result)


def http_markdown(description: dict[str, Any] | None = None) -> str:
    """The JSON API of ``narr serve --port``: every route of the server's OpenAPI description."""
    if description is None:
        from narrative.serve.http import openapi

        description = openapi()
    out = ["# HTTP API", "",
           "The JSON API that `narr serve --port N` adds (see [A server](../server.md)), made from the "
           "OpenAPI description the server itself serves at `/api/openapi.json` when the manual is "
           "built. " + html.escape(_cell(description.get("info", {}).get("description", ""))), "",
           "| method | path | what it does | parameters | body |", "| --- | --- | --- | --- | --- |"]
    for path, methods in description.get("paths", {}).items():
        for method, operation in methods.items():
            params = ", ".join(f"`{p['name']}`" + ("" if p.get("in") == "path" else " (query)")
                               for p in operation.get("parameters", []))
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            out.append(f"| {method.upper()} | `{path}` | {_cell(operation.get('summary', ''))} | {params} | "
                       f"{_cell(body.get('schema', {}).get('description', ''))} |")
    out.append("")
    responses: dict[str, str] = {}
    for methods in description.get("paths", {}).values():
        for operation in methods.values():
            for status, answer in operation.get("responses", {}).items():
                responses.setdefault(status, answer.get("description", ""))
    if responses:
        out += ["Answers:", "", "| status | meaning |", "| --- | --- |"]
        out += [f"| {status} | {_cell(text)} |" for status, text in sorted(responses.items())]
        out.append("")
    return "\n".join(out)


class _Bare(str):
    """An annotation postponed as a string (``from __future__ import annotations``), shown as
    written rather than quoted."""

    def __repr__(self) -> str:
        return str(self)


def _signature(obj: Any) -> str:
    import inspect

    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    bare = [p.replace(annotation=_Bare(p.annotation)) if isinstance(p.annotation, str) else p
            for p in sig.parameters.values()]
    returns = sig.return_annotation
    return str(sig.replace(parameters=bare,
                           return_annotation=_Bare(returns) if isinstance(returns, str) else returns))


def _doc_markdown(doc: str) -> str:
    """A docstring's reST-isms as Markdown: ``code`` and :role:`name` become `code`."""
    doc = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", doc)
    return re.sub(r"``([^`]+)``", r"`\1`", doc)


def _class_fields(cls: type) -> list[tuple[str, str]]:
    """A result's or request's fields and their types, as the class declares them."""
    import dataclasses

    if dataclasses.is_dataclass(cls):
        return [(f.name, str(f.type)) for f in dataclasses.fields(cls) if not f.name.startswith("_")]
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        return [(name, str(getattr(cls, "__annotations__", {}).get(name, field.annotation)))
                for name, field in model_fields.items()]
    return [(name, str(kind)) for name, kind in getattr(cls, "__annotations__", {}).items()
            if not name.startswith("_")]


def _code_cell(text: str) -> str:
    """Code in a table cell: a backslash-escaped ``|`` inside backticks would show its backslash."""
    return f"<code>{html.escape(text).replace('|', '&#124;')}</code>"


def _methods(cls: type) -> list[str]:
    """The methods and properties a class defines itself, each with its docstring's first line."""
    import inspect

    lines = []
    for name, member in vars(cls).items():
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        what = f"`{name}`" if isinstance(member, property) else f"`{name}{_signature(member)}`"
        first = (inspect.getdoc(member) or "").split("\n\n", 1)[0].replace("\n", " ")
        lines.append(f"- {what}" + (f": {_doc_markdown(first)}" if first else ""))
    return [*lines, ""] if lines else []


ALIASES = {"JSON": "A JSON value, as a node's state, traits and attributes hold it: to a type "
                   "checker the union of JSON's kinds (an object, a list, a string, a number, a "
                   "boolean, null); at run time any value."}
"""What the library's type aliases stand for (at run time they are ``typing.Any``)."""


def library_markdown() -> str:
    """The library reference: every name ``import narrative`` offers, grouped by what it is."""
    import dataclasses
    import inspect

    import narrative
    from narrative import api

    groups: dict[str, list[str]] = {"Functions": [], "Results": [], "Requests, changes and records": [],
                                    "Errors": [], "Interfaces and other names": []}
    for name in sorted(narrative.__all__, key=str.lower):
        obj = getattr(api, name)
        if inspect.isfunction(obj):
            groups["Functions"].append(name)
        elif inspect.isclass(obj) and issubclass(obj, narrative.NarrError):
            groups["Errors"].append(name)
        elif inspect.isclass(obj) and dataclasses.is_dataclass(obj):
            groups["Results"].append(name)
        elif inspect.isclass(obj) and hasattr(obj, "model_fields"):
            groups["Requests, changes and records"].append(name)
        else:
            groups["Interfaces and other names"].append(name)
    out = ["# The library", "",
           "Every name `import narrative` offers (the package loads the library on first use), made "
           "from the code itself when the manual is built. [The library](../library.md) shows them "
           "at work.", ""]
    for title, names in groups.items():
        out += [f"## {title}", ""]
        for name in names:
            obj = getattr(api, name)
            heading = f"`{name}{_signature(obj)}`" if inspect.isfunction(obj) else f"`{name}`"
            out += [f"### {heading} {{ #{name} }}", ""]
            if inspect.isclass(obj) and issubclass(obj, narrative.NarrError):
                out += [f"Exit code {obj.exit_code} (a subclass of `{obj.__mro__[1].__name__}`).", ""]
            doc = inspect.getdoc(obj) if not inspect.ismodule(obj) else (obj.__doc__ or "").strip()
            if obj is typing.Any:  # a type alias for type checkers (narr.JSON), any value at run time
                out += [ALIASES[name], ""]
                continue
            generated = inspect.isclass(obj) and (doc or "").startswith(f"{name}(")  # a dataclass's
            if doc and not generated and (inspect.isfunction(obj) or doc != inspect.getdoc(type(obj))):
                out += [_doc_markdown(doc), ""]
            if inspect.ismodule(obj):
                members = [n for n, f in vars(obj).items() if inspect.isfunction(f)
                           and not n.startswith("_") and f.__module__ == obj.__name__]
                out += [f"- `{name}.{n}{_signature(getattr(obj, n))}`" for n in sorted(members)] + [""]
            elif inspect.isclass(obj) and not issubclass(obj, BaseException):
                fields = _class_fields(obj)
                if fields:
                    out += ["| field | type |", "| --- | --- |"]
                    out += [f"| `{field}` | {_code_cell(kind)} |" for field, kind in fields] + [""]
                out += _methods(obj)
    return "\n".join(out)


# --- hooks -------------------------------------------------------------------------------------

_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def _relink(markdown: str, page_src: str, page_in_repo: str) -> str:
    """Point links to repository files (as seen from ``page_in_repo``) at their copies under repo/."""
    here = posixpath.dirname(page_in_repo)
    page_dir = posixpath.dirname(page_src)

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        in_repo = posixpath.normpath(posixpath.join(here, target))
        if in_repo.startswith("docs/"):
            new = posixpath.relpath(in_repo.removeprefix("docs/"), page_dir or ".")
        elif in_repo in REPO_FILES or (in_repo.startswith("schemas/") and in_repo.endswith(".json")):
            new = posixpath.relpath(f"repo/{in_repo}", page_dir or ".")
        elif in_repo == "schemas":
            new = posixpath.relpath(REFERENCE_FORMATS, page_dir or ".")
        else:
            return match.group(0)
        return f"{match.group(1)}{new}{match.group(3) or ''}{match.group(4)}"

    return _LINK.sub(fix, markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, REFERENCE_COMMANDS, content=commands_markdown()))
    files.append(File.generated(config, REFERENCE_FORMATS, content=formats_markdown()))
    files.append(File.generated(config, REFERENCE_HTTP, content=http_markdown()))
    files.append(File.generated(config, REFERENCE_LIBRARY, content=library_markdown()))
    files.append(File.generated(config, REFERENCE_ANSWERS, content=answers_markdown()))
    for name in REPO_FILES:
        files.append(File.generated(config, f"repo/{name}", abs_src_path=str(ROOT / name)))
    for path in sorted([*SCHEMAS.glob("*.json"), *SCHEMAS.glob("answers/*.json")]):
        rel = path.relative_to(SCHEMAS).as_posix()
        files.append(File.generated(config, f"repo/schemas/{rel}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    src = page.file.src_uri
    in_repo = src.removeprefix("repo/") if src.startswith("repo/") else f"docs/{src}"
    return _relink(markdown, src, in_repo)
