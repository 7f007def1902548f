"""Reading YAML with the line of every mapping, so that every error names ``path:line``."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from .model import ScenarioError

__all__ = ["Located", "read_yaml"]


class Located(dict[Hashable, Any]):
    """A YAML mapping that knows its line and the line of each of its keys (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        """The line of ``key`` if the mapping has it, else the mapping's own line."""
        return self.key_lines.get(key, self.line)


class _Problem(Exception):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings are :class:`Located`; duplicate or non-string keys are
    errors (YAML would silently keep the last of two equal keys)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Located:
        self.flatten_mapping(node)
        mapping = Located()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise _Problem(line, f"keys are strings, not {key!r}")
            if key in mapping:
                raise _Problem(line, f"key {key!r} appears twice in this mapping")
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_lines[key] = line
        return mapping


def _construct_located(loader: _Loader, node: yaml.MappingNode) -> Located:
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_located)


def read_yaml(path: Path) -> Any:
    """The document in ``path``, mappings as :class:`Located`; ScenarioError if unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(path, None, f"cannot read the file: {exc}") from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
    except _Problem as problem:
        raise ScenarioError(path, problem.line, problem.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ScenarioError(path, mark.line + 1 if mark else None, f"bad YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, None, f"bad YAML: {exc}") from None
