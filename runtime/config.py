"""Typed configuration: TOML files with environment overrides.

A process has one configuration object made of sections (dataclasses). Values come from, in
order of precedence: environment variables ``<PREFIX>__<SECTION>__<KEY>`` (e.g.
``JOYNR_CC__ROUTING__CLEANUP_INTERVAL_S=10``), the TOML file, the dataclass defaults.
Unknown sections or keys and values of the wrong type are errors that name the culprit: a typo
in a configuration file must not be silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["ConfigError", "load_config", "read_toml"]

T = TypeVar("T")


class ConfigError(ValueError):
    """The configuration is not usable; the message names the file, key and problem."""


def _convert(value: Any, annotation: Any, where: str) -> Any:
    """Check (TOML) or parse (environment strings) a value against its annotation."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        options = typing.get_args(annotation)
        is_empty = value is None or (isinstance(value, str) and value.lower() in ("", "none"))
        if is_empty and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError("; ".join(errors))
    if origin in (dict, Mapping):
        if isinstance(value, str):
            value = _parse_inline_table(value, where)
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, got {type(value).__name__}")
        key_type, value_type = typing.get_args(annotation)
        return {
            _convert(k, key_type, f"{where}.{k}"): _convert(v, value_type, f"{where}.{k}")
            for k, v in value.items()
        }
    if origin in (list, tuple):
        if isinstance(value, str):
            value = [item.strip() for item in value.split(",") if item.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        (item_type, *_) = typing.get_args(annotation)
        items = [_convert(item, item_type, f"{where}[{i}]") for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    return _convert_scalar(value, annotation, where)


def _convert_scalar(value: Any, annotation: Any, where: str) -> Any:
    if annotation is bool:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if annotation is int:
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                raise ConfigError(f"{where}: expected an integer, got {value!r}") from None
        if type(value) is int:
            return value
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if annotation is float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise ConfigError(f"{where}: expected a number, got {value!r}") from None
        if type(value) in (int, float):
            return float(value)
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if annotation is Path:
        if isinstance(value, str):
            return Path(value)
        raise ConfigError(f"{where}: expected a path string, got {value!r}")
    raise ConfigError(f"{where}: unsupported setting type {annotation!r}")  # a programming error


def _parse_inline_table(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{where}: expected an inline TOML table like {{a = \"b\"}}: {exc}"
        ) from None


def _build(cls: type[T], data: Mapping[str, Any], env: Mapping[str, str], prefix: str,
           where: str, *, known: set[str]) -> T:
    """``cls`` from ``data`` and the environment; every environment key it could read is
    added to ``known``."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name in fields:
        annotation = hints[name]
        key = f"{prefix}__{name.upper()}"
        sub_where = f"{where}.{name}" if where else name
        if dataclasses.is_dataclass(annotation):
            section = data.get(name, {})
            if not isinstance(section, dict):
                raise ConfigError(f"{sub_where}: expected a [{name}] table")
            section_cls: Any = annotation
            values[name] = _build(section_cls, section, env, key, sub_where, known=known)
            continue
        known.add(key)
        if key in env:
            values[name] = _convert(env[key], annotation, f"{sub_where} (from ${key})")
        elif name in data:
            values[name] = _convert(data[name], annotation, sub_where)
    try:
        config = cls(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where or 'configuration'}: {exc}") from None
    return config


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The TOML document in ``path``; ConfigError naming the file when it is missing or bad."""
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load_config(
    cls: type[T],
    path: Path | None,
    *,
    env_prefix: str,
    env: Mapping[str, str] | None = None,
) -> T:
    """Load ``cls`` (a dataclass of section dataclasses) from ``path`` and the environment.

    An environment variable that starts with ``<env_prefix>__`` but names no setting is an
    error, like an unknown key in the file (a typo must not be ignored)."""
    data = read_toml(path, "configuration file") if path is not None else {}
    source = f"{path}" if path else "defaults"
    environment = os.environ if env is None else env
    known: set[str] = set()
    try:
        config = _build(cls, data, environment, env_prefix, "", known=known)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    unknown = sorted(key for key in environment
                     if key.startswith(f"{env_prefix}__") and key not in known)
    if unknown:
        raise ConfigError(f"unknown environment override(s) {', '.join(unknown)}: no such "
                          f"setting ({env_prefix}__<SECTION>__<KEY>, see the configuration "
                          "file for the keys)")
    return config
