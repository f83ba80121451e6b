"""User-level settings: a file in the user's config dir, environment variables on top, never the world."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from narrative.errors import InvalidInputError
from narrative.userconfig import config_path, load_user_config


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with only HOME set, as a base for each case."""
    return {"HOME": str(tmp_path / "home")}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_where_the_file_is(home: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", home["HOME"])
    assert config_path(home) == Path(home["HOME"]) / ".config" / "narr" / "config.toml"
    assert config_path({**home, "XDG_CONFIG_HOME": "/xdg"}) == Path("/xdg/narr/config.toml")
    env = {**home, "XDG_CONFIG_HOME": "/xdg", "NARR_CONFIG": "/etc/n.toml"}
    assert config_path(env) == Path("/etc/n.toml")


def test_nothing_configured(home: dict[str, str]) -> None:
    config = load_user_config(home)
    assert config.path is None
    assert config.llm.base_url is None and config.llm.model is None and config.llm.api_key_env is None
    assert config.llm.timeout == 120 and config.llm.response_format == "auto" and config.llm.render is False
    assert config.exec.command is None and config.exec.timeout == 60


def test_file_then_environment(home: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path / "xdg" / "narr" / "config.toml", """
[llm]
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5:7b"
api_key_env = "MY_KEY"
timeout = 30
render = true

[exec]
command = "python3 '~/my tools/diffuse.py' --fast"
timeout = 2.5

[something-else]
ignored = true
""")
    env = {**home, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "NARR_LLM_MODEL": "llama3.2",
           "NARR_LLM_TIMEOUT": "0.5", "NARR_LLM_RENDER": "false", "NARR_EXEC_TIMEOUT": ""}
    config = load_user_config(env)
    assert config.path == path
    assert config.llm.base_url == "http://127.0.0.1:11434/v1" and config.llm.model == "llama3.2"
    assert config.llm.timeout == 0.5 and config.llm.render is False
    assert config.exec.command == ["python3", os.path.expanduser("~/my tools/diffuse.py"), "--fast"]
    assert config.exec.timeout == 2.5  # an empty variable does not override
    assert config.sources["llm.model"] == "NARR_LLM_MODEL"
    assert config.sources["llm.base_url"] == str(path)


def test_temperature_can_be_omitted(home: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path / "c.toml", '[llm]\ntemperature = "omit"\n')
    assert load_user_config({**home, "NARR_CONFIG": str(path)}).llm.temperature is None
    env = {**home, "NARR_LLM_TEMPERATURE": "omit"}
    assert load_user_config(env).llm.temperature is None
    assert load_user_config({**env, "NARR_LLM_TEMPERATURE": "0.7"}).llm.temperature == 0.7
    assert load_user_config(home).llm.temperature == 0.2


def test_api_key_is_read_from_the_named_variable(home: dict[str, str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_user_config({**home, "NARR_LLM_API_KEY_ENV": "SOME_KEY"})
    monkeypatch.delenv("SOME_KEY", raising=False)
    assert config.llm.api_key() is None
    monkeypatch.setenv("SOME_KEY", "k-123")
    assert config.llm.api_key() == "k-123"


@pytest.mark.parametrize(("text", "env", "message"), [
    ("[llm]\nbase-url = 'x'\n", {}, "{path}: llm.base-url: Extra inputs are not permitted"),
    ("[llm]\ntimeout = 'soon'\n", {},
     "{path}: llm.timeout: Input should be a valid number, unable to parse string as a number"),
    ("", {"NARR_LLM_TIMEOUT": "-1"}, "NARR_LLM_TIMEOUT: llm.timeout: Input should be greater than 0"),
    ("", {"NARR_LLM_RESPONSE_FORMAT": "yaml"},
     "NARR_LLM_RESPONSE_FORMAT: llm.response_format: Input should be 'auto', 'json_schema', "
     "'json_object_schema', 'ollama_format', 'json_object' or 'none'"),
    ("", {"NARR_LLM_MAX_TOKENS": "0"},
     "NARR_LLM_MAX_TOKENS: llm.max_tokens: Input should be greater than or equal to 16"),
    ("[llm]\ncontext = 100\n", {},
     "{path}: llm.context: Input should be greater than or equal to 256"),
    ("[llm]\ntemperature = 'warm'\n", {},
     '{path}: llm.temperature: a number of 0 or more, or "omit" to send none'),
    ("", {"NARR_LLM_TEMPERATURE": "-1"},
     "NARR_LLM_TEMPERATURE: llm.temperature: Input should be greater than or equal to 0"),
    ("", {"NARR_EXEC_COMMAND": "python3 'unclosed"},
     "NARR_EXEC_COMMAND: exec.command: cannot split the command: No closing quotation"),
    ("llm = 3\n", {}, "{path}: [llm] must be a table"),
    ("[llm\n", {}, "{path}: Expected ']' at the end of a table declaration (at line 1, column 5)"),
])
def test_bad_settings_are_named(home: dict[str, str], tmp_path: Path, text: str, env: dict[str, str],
                                message: str) -> None:
    path = write(tmp_path / "c.toml", text)
    with pytest.raises(InvalidInputError) as info:
        load_user_config({**home, "NARR_CONFIG": str(path), **env})
    assert info.value.message == message.format(path=path)
    assert info.value.exit_code == 12


def test_world_settings_are_not_user_settings(flat_world: Path, home: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the world's narr.toml nor any file in it is read, wherever narr runs from."""
    toml = flat_world / "narr.toml"
    toml.write_text(toml.read_text(encoding="utf-8") +
                    '\n[llm]\nbase_url = "http://evil.invalid/v1"\n[exec]\ncommand = "rm -rf ~"\n',
                    encoding="utf-8")
    write(flat_world / "config.toml", '[llm]\nbase_url = "http://evil.invalid/v1"\n')
    write(flat_world / ".config" / "narr" / "config.toml", '[llm]\nbase_url = "http://evil.invalid/v1"\n')
    monkeypatch.chdir(flat_world)
    config = load_user_config(home)
    assert config.llm.base_url is None and config.exec.command is None


def test_a_relative_command_is_resolved_against_the_config_directory(home: dict[str, str],
                                                                      tmp_path: Path) -> None:
    path = write(tmp_path / "conf" / "narr.toml", '[exec]\ncommand = "./tools/x.sh ./arg"\n')
    env = {**home, "NARR_CONFIG": str(path)}
    assert load_user_config(env).exec.command == [str(tmp_path / "conf" / "tools" / "x.sh"), "./arg"]
    assert load_user_config({**env, "NARR_EXEC_COMMAND": "../x.sh"}).exec.command == [
        str(tmp_path / "x.sh")]
    assert load_user_config({**env, "NARR_EXEC_COMMAND": "python3 x.py"}).exec.command == [
        "python3", "x.py"]  # a bare name is looked up on PATH
    assert load_user_config({**env, "NARR_EXEC_COMMAND": "/bin/true"}).exec.command == ["/bin/true"]
