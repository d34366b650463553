"""Small decorator registries keyed by config strings (verl's `register_adv_est` pattern).

Swappable parts (environments, skill extractors, talent miners, routing estimators, stages)
each get one `Registry`; a config string picks the implementation.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Generic, TypeVar

from talentrl_cli.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        if name not in self._items:
            close = difflib.get_close_matches(name, list(self._items), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else None
            known = ", ".join(sorted(self._items)) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r} (known: {known})", hint)
        return self._items[name]

    def values(self) -> list[T]:
        return [self._items[name] for name in sorted(self._items)]

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items
