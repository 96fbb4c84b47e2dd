"""Typed configuration: TOML files with environment overrides.

A process has one configuration object made of sections (dataclasses). Values come from, in
order of precedence: environment variables ``<PREFIX>__<SECTION>__<KEY>`` (e.g.
``JOYNR_CC__ROUTING__CLEANUP_INTERVAL_S=10``), the TOML file, the dataclass defaults.
Unknown sections or keys and values of the wrong type are errors that name the culprit: a typo
in a configuration file must not be silently ignored.

In an environment variable a single value (number, boolean, string, path) is written as it is
(``10``, ``true``, ``mqtt://broker:1883``); a list or a table is written as one TOML value,
exactly as on the right of ``=`` in the file: ``["a", "b"]``, ``[]``, ``{ a = "mqtt://h:1883" }``,
``[{ a = 1 }, { b = 2 }]``. Nothing else is accepted (no comma-separated form), and the text
must be that one value (no further keys or tables). An error about a value from the
environment names the variable, one about a value from the file names the file and key.

A section may list settings that an earlier version named in seconds and names in
milliseconds now (``RENAMED_SECONDS``: old name -> new name); the old name is still read, times
1,000, with a warning that says to rename it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pyjoynr.runtime.logs import get_logger

__all__ = ["ConfigError", "load_config", "read_toml"]

log = get_logger(__name__)

T = TypeVar("T")


class ConfigError(ValueError):
    """The configuration is not usable; the message names the file, key and problem."""


class _VariableError(ConfigError):
    """A value from an environment variable is not usable; the message names the variable
    (and not the file)."""


#: the longest offending text an error message shows (then cut, with its length)
_SHOWN_CHARS = 60


def _shown(value: Any) -> str:
    """``value`` for an error message: its repr (escaped, one line), cut when very long."""
    if isinstance(value, str) and len(value) > _SHOWN_CHARS:
        return f"{value[:_SHOWN_CHARS]!r}... ({len(value)} characters)"
    text = repr(value)
    if len(text) > _SHOWN_CHARS + 2:
        return f"{text[:_SHOWN_CHARS]}... ({len(text)} characters)"
    return text


_EXAMPLES: dict[Any, tuple[str, str]] = {
    str: ('"a"', '"b"'), Path: ('"a"', '"b"'), int: ("1", "2"), float: ("0.5", "2.0"),
    bool: ("true", "false"),
}


def _example(annotation: Any, second: bool = False) -> str:
    """A TOML value of type ``annotation``, for the syntax shown in error messages."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return _example(next(a for a in args if a is not type(None)), second)
    if origin in (list, tuple):
        return f"[{_example(args[0])}, {_example(args[0], True)}]"
    if origin in (dict, Mapping):
        return f"{{ x = {_example(args[1])}, y = {_example(args[1], True)} }}"
    pair = _EXAMPLES.get(annotation, ('"a"', '"b"'))
    return pair[1] if second else pair[0]


def _syntax(annotation: Any) -> str:
    """How a value of the list or table type ``annotation`` is written."""
    if typing.get_origin(annotation) in (list, tuple):
        return f"a list is written as a TOML array, e.g. {_example(annotation)}"
    return f"a table is written as an inline TOML table, e.g. {_example(annotation)}"


def _containers(annotation: Any) -> list[Any]:
    """The list and table types ``annotation`` is or (as a union) includes."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        return [option for arg in typing.get_args(annotation) for option in _containers(arg)]
    return [annotation] if origin in (list, tuple, dict, Mapping) else []


def _toml_value(text: str) -> Any:
    """The one TOML value ``text`` is; None when it is not valid TOML or is more than one
    value (e.g. a value followed by further keys or tables: ``["a"]\nother = 1``)."""
    try:
        document = tomllib.loads(f"value = {text.strip()}")
    except tomllib.TOMLDecodeError:
        return None
    return document["value"] if list(document) == ["value"] else None


def _from_environment(text: str, annotation: Any, variable: str) -> Any:
    """The value of the environment variable ``variable`` (its ``text``) for a setting of type
    ``annotation``: a list or table is one TOML value, checked like one from the file; any
    other setting takes the text as it is. ConfigError naming the variable if unusable."""
    containers = _containers(annotation)
    if not containers:
        return _convert(text, annotation, variable)
    options = typing.get_args(annotation)
    if type(None) in options and text.strip().lower() in ("", "none"):
        return None
    value = _toml_value(text)
    shapes = tuple(list if typing.get_origin(c) in (list, tuple) else dict for c in containers)
    if not isinstance(value, shapes):
        raise ConfigError(f"{variable}: {' or '.join(_syntax(c) for c in containers)}; "
                          f"got {_shown(text)}")
    return _convert(value, annotation, variable)


def _convert(value: Any, annotation: Any, where: str) -> Any:
    """Check a value (from TOML, or a single value's text from the environment) against its
    annotation."""
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
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {_syntax(annotation)}; got {_shown(value)}")
        key_type, value_type = typing.get_args(annotation)
        return {
            _convert(k, key_type, f"{where}.{k}"): _convert(v, value_type, f"{where}.{k}")
            for k, v in value.items()
        }
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {_syntax(annotation)}; got {_shown(value)}")
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
        raise ConfigError(f"{where}: expected true or false, got {_shown(value)}")
    if annotation is int:
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                raise ConfigError(f"{where}: expected an integer, got {_shown(value)}") from None
        if type(value) is int:
            return value
        raise ConfigError(f"{where}: expected an integer, got {_shown(value)}")
    if annotation is float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise ConfigError(f"{where}: expected a number, got {_shown(value)}") from None
        if type(value) in (int, float):
            return float(value)
        raise ConfigError(f"{where}: expected a number, got {_shown(value)}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: expected a string, got {_shown(value)}")
    if annotation is Path:
        if isinstance(value, str):
            return Path(value)
        raise ConfigError(f"{where}: expected a path string, got {_shown(value)}")
    raise ConfigError(f"{where}: unsupported setting type {annotation!r}")  # a programming error


def _build(cls: type[T], data: Mapping[str, Any], env: Mapping[str, str], prefix: str,
           where: str, *, known: set[str]) -> T:
    """``cls`` from ``data`` and the environment; every environment key it could read is
    added to ``known``."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    renamed: Mapping[str, str] = getattr(cls, "RENAMED_SECONDS", {})
    unknown = sorted(set(data) - set(fields) - set(renamed))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    variables: dict[str, str] = {}  # setting -> the environment variable it came from
    earlier = _in_seconds(renamed, data, env, prefix, where, known=known)
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
            try:
                values[name] = _from_environment(env[key], annotation, key)
            except ConfigError as exc:
                raise _VariableError(str(exc)) from None
            variables[name] = key
        elif name in earlier:  # (from the environment, it overrides the file's new name)
            values[name], origin = earlier[name]
            if origin.startswith(prefix):
                variables[name] = origin
        elif name in data:
            values[name] = _convert(data[name], annotation, sub_where)
    try:
        config = cls(**values)
    except (TypeError, ValueError) as exc:
        raise _refused(str(exc), where or "configuration", fields, variables) from None
    return config


def _in_seconds(renamed: Mapping[str, str], data: Mapping[str, Any], env: Mapping[str, str],
                prefix: str, where: str, *, known: set[str]) -> dict[str, tuple[int, str]]:
    """The settings of a section that an earlier version named in seconds (``renamed``: that
    name -> the name now, in milliseconds) and that the file or the environment still gives:
    new name -> (the value in milliseconds, where it came from), each read with a warning.
    The environment overrides the file whichever name each uses; one source giving a setting
    under both names is an error naming both."""
    found: dict[str, tuple[int, str]] = {}
    for old, new in renamed.items():
        variable, new_variable = f"{prefix}__{old.upper()}", f"{prefix}__{new.upper()}"
        known.add(variable)
        key = f"{where}.{old}" if where else old
        for origin, both in ((variable, variable in env and new_variable in env),
                             (key, old in data and new in data)):
            if both:
                raise ConfigError(f"{origin}: {old} (seconds) is {new} (milliseconds) now; "
                                  "give only that")
        if new_variable in env:
            continue  # the new name, from the environment: it overrides either in the file
        if variable in env:
            try:
                seconds = _from_environment(env[variable], float, variable)
            except ConfigError as exc:
                raise _VariableError(str(exc)) from None
            origin = variable
        elif old in data:
            seconds = _convert(data[old], float, key)
            origin = key
        else:
            continue
        if not math.isfinite(seconds):
            raise ConfigError(f"{origin}: {old} must be a finite number of seconds, got "
                              f"{_shown(seconds)}")
        found[new] = (round(seconds * 1000), origin)
        log.warning("%s: %s (seconds) is %s (milliseconds) now: read as %s = %d; rename it",
                    origin, old, new, new, found[new][0])
    return found


def _refused(reason: str, where: str, fields: Iterable[str],
             variables: Mapping[str, str]) -> ConfigError:
    """The error for a section its own checks refused (``reason``, which names settings of
    ``fields``): it names the variables of those of them that came from the environment
    (``variables``: setting -> variable); only them, and not the file, when every setting it
    names did."""
    mentioned = [name for name in fields
                 if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", reason)]
    named = [name for name in mentioned if name in variables]
    if named and len(named) == len(mentioned):
        return _VariableError(f"{', '.join(variables[n] for n in named)}: {reason}")
    if named:
        origins = ", ".join(f"{name} from {variables[name]}" for name in named)
        return ConfigError(f"{where}: {reason} ({origins})")
    if variables:
        return ConfigError(f"{where}: {reason} (environment overrides of this section: "
                           f"{', '.join(variables[n] for n in sorted(variables))})")
    return ConfigError(f"{where}: {reason}")


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
        if isinstance(exc, _VariableError):  # about a variable: not the file's fault
            raise ConfigError(str(exc)) from None
        raise ConfigError(f"{source}: {exc}") from None
    unknown = sorted(key for key in environment
                     if key.startswith(f"{env_prefix}__") and key not in known)
    if unknown:
        raise ConfigError(f"unknown environment override(s) {', '.join(unknown)}: no such "
                          f"setting ({env_prefix}__<SECTION>__<KEY>, see the configuration "
                          "file for the keys)")
    return config
