"""The user's own settings: where a language model lives, which program to run.

Endpoints, API keys and commands are read only from here, never from a world:
a world's ``narr.toml`` is tracked and cloned, and cloning someone's story must
never run their code or send its events to a server they chose. So these come
from a TOML file in the user's config directory and from environment variables,
the variables winning over the file::

    # ~/.config/narr/config.toml  ($XDG_CONFIG_HOME/narr/config.toml; NARR_CONFIG overrides)
    [llm]
    base_url = "http://127.0.0.1:11434/v1"   # NARR_LLM_BASE_URL
    model = "qwen2.5:7b"                     # NARR_LLM_MODEL
    api_key_env = "OPENAI_API_KEY"           # NARR_LLM_API_KEY_ENV: the *name* of the variable
    timeout = 120                            # NARR_LLM_TIMEOUT (seconds)
    response_format = "auto"                 # NARR_LLM_RESPONSE_FORMAT
    temperature = 0.2                        # NARR_LLM_TEMPERATURE; "omit" sends none
    render = false                           # NARR_LLM_RENDER: always write narrative text
    max_tokens = 512                         # NARR_LLM_MAX_TOKENS: the longest reply asked for
    context = 4096                           # NARR_LLM_CONTEXT: the model's context, in tokens
                                             # (unset: asked of the server where it tells)

    [exec]
    command = ["python3", "/home/me/bin/exec-diffuser.py"]   # NARR_EXEC_COMMAND (a shell-like string);
                                                             # "./x.sh" is next to this file
    timeout = 30                                             # NARR_EXEC_TIMEOUT (seconds)

    [diffuser]
    default = "llm"            # NARR_DIFFUSER_DEFAULT: yours, over every world's
    allow_world = ["llm"]      # NARR_DIFFUSER_ALLOW_WORLD: what a world may pick by default

    [narr]
    autoServe = false          # no server starts by itself (git config narr.autoServe wins)
    serveIdle = 15             # minutes without a request before such a server exits

The ``[narr]`` table is read before narr itself starts, by the thin client
(:mod:`narrative.serve.autostart`), as git config's ``narr.*`` keys are.

The key itself is never stored in a file narr reads: ``api_key_env`` names the
environment variable that holds it.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from narrative import invocation
from narrative.errors import InvalidInputError

ResponseFormat = Literal["auto", "json_schema", "json_object_schema", "ollama_format", "json_object",
                         "none"]

ENV_PREFIX = "NARR_"


class LLMSettings(BaseModel):
    """How to reach an OpenAI-compatible chat-completions server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:11434/v1")
    model: str | None = None
    api_key_env: str | None = Field(default=None, description="Name of the variable holding the key.")
    timeout: float = Field(default=120.0, gt=0)
    response_format: ResponseFormat = "auto"
    temperature: float | None = Field(
        default=0.2, ge=0, description='"omit" (None) sends no temperature: some models refuse one.')
    render: bool = False
    max_tokens: int = Field(
        default=512, ge=16, le=1_000_000,
        description="The longest reply asked for, in tokens: a delta of one event, with room to "
                    "spare; a reply cut off there is asked once more with twice the room.")
    context: int | None = Field(
        default=None, ge=256, le=100_000_000,
        description="The model's context in tokens, prompt and reply together; unset, it is asked "
                    "of the server (llama.cpp, Ollama, LM Studio, vLLM tell it).")

    @field_validator("temperature", mode="before")
    @classmethod
    def _omit(cls, value: Any) -> Any:
        # Reasoning models (OpenAI's o-series) reject any temperature; TOML has no null.
        if isinstance(value, str):
            if value.strip().lower() == "omit":
                return None
            try:
                return float(value)
            except ValueError:
                raise ValueError('a number of 0 or more, or "omit" to send none') from None
        return value

    def api_key(self) -> str | None:
        """The key, read from the variable ``api_key_env`` names (None when none is named)."""
        if not self.api_key_env:
            return None
        return invocation.getenv(self.api_key_env) or None


class ExecSettings(BaseModel):
    """Which program the ``exec`` diffuser runs, and for how long at most."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = None
    timeout: float = Field(default=60.0, gt=0)

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        # A string is split the way a shell would (no expansion, no shell run).
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"cannot split the command: {exc}") from None
        if isinstance(value, list):
            value = [invocation.expanduser(v) if isinstance(v, str) else v for v in value] or None
        return value


class DiffuserSettings(BaseModel):
    """Which diffuser runs when an event names none, and what a world may choose for you."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: str | None = Field(
        default=None, description="Your default, over any world's (e.g. 'llm').")
    allow_world: list[str] = Field(
        default_factory=list,
        description="Diffusers beyond the offline ones that a world's narr.toml may pick as its "
                    "default (e.g. ['llm']): a cloned world never reaches a server or runs a "
                    "program unless you allowed it.",
    )

    @field_validator("allow_world", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        if isinstance(value, str):  # from NARR_DIFFUSER_ALLOW_WORLD="llm,exec"
            return [v.strip() for v in value.split(",") if v.strip()]
        return value


class UserConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    llm: LLMSettings = Field(default_factory=LLMSettings)
    exec: ExecSettings = Field(default_factory=ExecSettings)
    diffuser: DiffuserSettings = Field(default_factory=DiffuserSettings)
    path: Path | None = Field(default=None, description="The config file read, if there was one.")
    sources: dict[str, str] = Field(
        default_factory=dict, description="'llm.model' -> where it came from (a file or a variable)."
    )


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$NARR_CONFIG``, else ``$XDG_CONFIG_HOME/narr/config.toml``, else ``~/.config/narr/config.toml``."""
    env = invocation.environ() if env is None else env
    if env.get("NARR_CONFIG"):
        return invocation.absolute(invocation.expanduser(env["NARR_CONFIG"]))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(invocation.expanduser("~"), ".config")
    return invocation.absolute(base) / "narr" / "config.toml"


S = TypeVar("S", LLMSettings, ExecSettings, DiffuserSettings)


def load_user_config(env: Mapping[str, str] | None = None) -> UserConfig:
    """The user's settings: the config file, then ``NARR_LLM_*`` / ``NARR_EXEC_*`` on top."""
    env = invocation.environ() if env is None else env
    path = config_path(env)
    raw = _read(path)
    sources: dict[str, str] = {}
    llm = _section(raw, "llm", LLMSettings, env, path, sources)
    exec_ = _section(raw, "exec", ExecSettings, env, path, sources)
    if exec_.command:
        exec_ = exec_.model_copy(update={"command": resolve_command(exec_.command, path.parent)})
    diffuser = _section(raw, "diffuser", DiffuserSettings, env, path, sources)
    return UserConfig(llm=llm, exec=exec_, diffuser=diffuser,
                      path=path if raw is not None else None, sources=sources)


def resolve_command(command: list[str], base: Path) -> list[str]:
    """``./x.sh`` or ``bin/x`` as a path under ``base``, the user's config directory.

    Resolved against narr's working directory, a relative command would run a
    script inside the world whenever narr is started from the world's root, and a
    cloned world can carry any script. A bare name (``python3``) is still looked up
    on PATH; arguments are passed as they are.
    """
    program = command[0]
    if os.path.isabs(program) or ("/" not in program and os.sep not in program):
        return command
    return [os.path.normpath(base / program), *command[1:]]


def _section(raw: dict[str, Any] | None, section: str, model: type[S], env: Mapping[str, str],
             path: Path, sources: dict[str, str]) -> S:
    table = (raw or {}).get(section, {})
    if not isinstance(table, dict):
        raise InvalidInputError(f"{path}: [{section}] must be a table")
    values = dict(table)
    sources.update({f"{section}.{k}": str(path) for k in table})
    for key in model.model_fields:
        var = f"{ENV_PREFIX}{section.upper()}_{key.upper()}"
        if env.get(var, "") != "":
            values[key] = env[var]
            sources[f"{section}.{key}"] = var
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        lines = []
        for e in exc.errors(include_url=False):
            key = ".".join(str(p) for p in e["loc"])
            where = sources.get(f"{section}.{key}", str(path))
            lines.append(f"{where}: {section}.{key}: {e['msg'].removeprefix('Value error, ')}")
        raise InvalidInputError(lines[0], details=lines) from None


def _read(path: Path) -> dict[str, Any] | None:
    """The file's tables, or None when there is no file (which is fine: nothing configured)."""
    from narrative.bounded import MAX_SETTINGS
    from narrative.bounded import read as read_bounded

    try:
        text = read_bounded(path, MAX_SETTINGS).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot read the narr config file ({exc})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
