"""What every section of the settings file shares: the error that names file and field, and the reading of a table
into its dataclass with unknown keys and wrong types named precisely."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from ragpipe.core import InputError

Resolve = Callable[[str], Path]  # a path as written in the file -> a path (relative ones against the file's directory)


class SettingsError(InputError, ValueError):
    """A settings file that cannot be used; the message names the file and the field."""


def names(options: dict[str, str]) -> str:
    """'a', 'b' or 'c': the names a setting accepts, for its error message."""
    quoted = [f"'{n}'" for n in options]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def build(cls: type, data: dict[str, Any], where: str, source: Path) -> Any:
    """Instantiate a settings dataclass, naming unknown keys and wrong types precisely."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SettingsError(
            f"{source}: unknown key(s) {', '.join(f'[{where}].{k}' for k in unknown)}; "
            f"allowed: {', '.join(sorted(known))}"
        )
    kwargs: dict[str, Any] = {}
    defaults = known
    for name, value in data.items():
        f = defaults[name]
        default = f.default if f.default is not dataclasses.MISSING else None
        if default is None and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        if dataclasses.is_dataclass(default):
            if not isinstance(value, dict):
                raise SettingsError(f"{source}: [{where}.{name}] must be a table")
            kwargs[name] = build(type(default), value, f"{where}.{name}", source)
            continue
        if isinstance(default, tuple):
            kinds = {type(v) for v in default}
            if not isinstance(value, list) or (kinds and not all(type(v) in kinds for v in value)):
                of = f" of {' or '.join(sorted(k.__name__ for k in kinds))}" if kinds else ""
                raise SettingsError(f"{source}: [{where}].{name} must be a list{of}, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool) or isinstance(value, bool):
            if not isinstance(value, bool) or not isinstance(default, (bool, type(None))):
                raise SettingsError(f"{source}: [{where}].{name} has the wrong type: {value!r}")
        elif isinstance(default, float) and isinstance(value, int):
            value = float(value)
        elif default is not None and not isinstance(value, type(default)):
            raise SettingsError(f"{source}: [{where}].{name} must be {type(default).__name__}, got {value!r}")
        kwargs[name] = value
    return cls(**kwargs)


def table(value: Any, where: str, source: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError(f"{source}: [{where}] must be a table")
    return dict(value)
