"""Build the effective `Settings`: CLI flags > env `REPO_SANDBOX_<SECTION>_<KEY>` > TOML file > defaults."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from repo_sandbox.config.model import Settings
from repo_sandbox.policy.exec_model import EXEC_CHECK_LATER

ENV_PREFIX: Final = "REPO_SANDBOX_"
"""Prefix of the environment variables that override config keys."""

ENV_ALIASES: Final[dict[str, tuple[str, str]]] = {"TRACE_SANITIZE": ("audit", "redact")}
"""Other env names for a key (as in the source documents); the REPO_SANDBOX_ name wins when both are set.
Values are parsed strictly (true/false/1/0/yes/no/on/off): anything else is a ConfigError, never "off"."""

Source = str
"""Where a value came from, for error messages: a file path, an env var name or a CLI flag."""


class ConfigError(ValueError):
    """The operator's configuration is invalid; the message names the file (or variable) and the key."""


def _section_models() -> dict[str, type[BaseModel]]:
    sections: dict[str, type[BaseModel]] = {}
    for name, field in Settings.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            sections[name] = annotation
    return sections


def _parse_env_value(raw: str, annotation: Any) -> Any:
    """Env values are strings; lists accept JSON (`["a","b"]`) or comma-separated text, tables a JSON object
    (`REPO_SANDBOX_EXEC_RULES='{"md5sum": {"flags": ["-b"]}}'`)."""
    origin = getattr(annotation, "__origin__", None)
    if origin is dict:
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON object: {exc.msg}") from exc
    if origin is list:
        stripped = raw.strip()
        if stripped.startswith("["):
            try:
                return json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"invalid JSON list: {exc.msg}") from exc
        return [item.strip() for item in stripped.split(",") if item.strip()]
    return raw


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only with a config file: serving without one starts faster

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: config file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from exc


def _near_section(section: str, sections: Iterable[str]) -> list[str]:
    """The known section a misspelt one most likely meant (difflib loads only for such a variable)."""
    import difflib

    return difflib.get_close_matches(section, list(sections), n=1, cutoff=0.8)


def _env_overrides(env: Mapping[str, str]) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], Source]]:
    sections = _section_models()
    data: dict[str, dict[str, Any]] = {}
    sources: dict[tuple[str, str], Source] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        section, _, key = rest.partition("_")
        if section not in sections or not key:
            if key and (near := _near_section(section, sections)):
                raise ConfigError(
                    f"{name}: unknown section '{section}' (did you mean {ENV_PREFIX}{near[0].upper()}_{key.upper()}?)"
                )
            continue  # e.g. REPO_SANDBOX_TOKEN: not a config key
        fields = sections[section].model_fields
        if key not in fields:
            raise ConfigError(f"{name}: unknown key '{key}' in section [{section}]")
        try:
            value = _parse_env_value(raw, fields[key].annotation)
        except ConfigError as exc:
            raise ConfigError(f"{name}: {exc}") from exc
        data.setdefault(section, {})[key] = value
        sources[(section, key)] = name
    for alias, (section, key) in ENV_ALIASES.items():
        if alias in env and key not in data.get(section, {}):
            data.setdefault(section, {})[key] = env[alias].strip()
            sources[(section, key)] = alias
    return data, sources


def _format_validation_error(exc: ValidationError, sources: Mapping[tuple[str, str], Source], default: Source) -> str:
    lines: list[str] = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        section = loc[0] if loc else ""
        key = loc[1] if len(loc) > 1 else ""
        where = sources.get((section, key), default)
        label = f"[{section}] {'.'.join(loc[1:])}" if key else f"[{section}]"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append(f"{where}: {label}: {message}")
    return "\n".join(lines)


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[tuple[str, str], Any] | None = None,
    cwd: Path | None = None,
    exec_check_later: bool = False,
) -> Settings:
    """Merge defaults, the TOML file, env overrides and CLI overrides, then validate (`exec_check_later`: all
    but the command policy's check, see `policy.exec_model.EXEC_CHECK_LATER`).

    Raises:
        ConfigError: naming the file, env var or flag and the key that is wrong.
    """
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    merged: dict[str, dict[str, Any]] = {}
    sources: dict[tuple[str, str], Source] = {}
    file_label = "defaults"
    root_base = cwd
    if config_path is not None:
        path = Path(config_path)
        file_label = str(path)
        root_base = (cwd / path).parent
        for section, values in _read_toml(cwd / path).items():
            if not isinstance(values, dict):
                raise ConfigError(f"{path}: '{section}' must be a [section] table")
            merged[section] = dict(values)  # pyright: ignore[reportUnknownArgumentType]
            for key in values:  # pyright: ignore[reportUnknownVariableType]
                sources[(section, str(key))] = file_label  # pyright: ignore[reportUnknownArgumentType]
    env_data, env_sources = _env_overrides(env)
    for section, values in env_data.items():
        merged.setdefault(section, {}).update(values)
        if section == "workspace" and "root" in values:
            root_base = cwd
    sources.update(env_sources)
    for (section, key), value in (overrides or {}).items():
        merged.setdefault(section, {})[key] = value
        sources[(section, key)] = f"--{key.replace('_', '-')}"
        if (section, key) == ("workspace", "root"):
            root_base = cwd
    if exec_check_later:
        merged.setdefault("exec", {})  # validated here with the context (a default would be built without it)
    try:
        settings = Settings.model_validate(merged, context={EXEC_CHECK_LATER: exec_check_later})
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, sources, file_label)) from exc
    root = (root_base / settings.workspace.root).resolve()
    if not root.is_dir():
        where = sources.get(("workspace", "root"), file_label)
        raise ConfigError(f"{where}: [workspace] root: not a directory: {settings.workspace.root}")
    settings.workspace.root = str(root)
    settings.workspace.mark_root_given(("workspace", "root") in sources)
    audit_path = settings.audit.path
    if audit_path not in ("", "-"):
        from_file = config_path is not None and sources.get(("audit", "path")) == file_label
        base = (cwd / Path(config_path)).parent if from_file and config_path is not None else cwd
        settings.audit.path = str(base / Path(audit_path).expanduser())
    return settings
