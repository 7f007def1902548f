"""Reading specification XML with lxml, every failure turned into a :class:`SpecError`.

Shared by the loaders of every protocol family. Element names are compared without their
namespace because the 0-10 and 1.0 files carry ``xmlns="http://www.amqp.org/schema/amqp.xsd"``
and users' own copies may or may not.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from lxml import etree

from .errors import SpecError

__all__ = ["attr", "children", "fail", "line_of", "local", "parse", "text_of"]

# One parser for all files: no network, no entity expansion from outside the file.
_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, remove_comments=True, huge_tree=False
)


def parse(path: Path | str) -> etree._Element:
    """Parse ``path`` and return its root element, or raise SpecError naming file and line."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SpecError(name, None, f"cannot read: {exc.strerror or exc}") from None
    if not data.strip():
        raise SpecError(name, 1, "empty file, not a specification")
    try:
        root = etree.fromstring(data, _PARSER, base_url=name)
    except etree.XMLSyntaxError as exc:
        line: int | None = exc.lineno if isinstance(exc.lineno, int) and exc.lineno else None
        message = exc.msg.split(", line ")[0] if exc.msg else "malformed XML"
        raise SpecError(name, line, f"malformed XML: {message}") from None
    if local(root) != "amqp":
        raise SpecError(name, line_of(root), f"root element is <{local(root)}>, not <amqp>")
    return root


def line_of(element: etree._Element) -> int | None:
    """The element's line in its file (lxml-stubs types ``sourceline`` loosely)."""
    line: object = element.sourceline
    return line if isinstance(line, int) else None


def local(element: etree._Element) -> str:
    """The element's tag without its namespace."""
    tag: object = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return ""
    return tag.rsplit("}", 1)[-1]


def children(element: etree._Element, tag: str) -> list[etree._Element]:
    """Direct children of ``element`` whose local name is ``tag``."""
    return [child for child in element if local(child) == tag]


def attr(element: etree._Element, name: str, path: str, *, required: bool = True) -> str:
    """An attribute's value; a missing required one is a SpecError at the element's line."""
    value = element.get(name)
    if value is None:
        if required:
            fail(path, element, f"<{local(element)}> has no '{name}' attribute")
        return ""
    return value


def text_of(element: etree._Element) -> str:
    """All text inside ``element``, whitespace collapsed to single spaces."""
    return " ".join("".join(str(t) for t in element.itertext()).split())


def fail(path: str, element: etree._Element | None, message: str) -> NoReturn:
    """Raise a SpecError at ``element``'s line."""
    raise SpecError(path, line_of(element) if element is not None else None, message)
