"""The common output of the structure parsers: text blocks, each under its heading path."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Block:
    """Text under one heading path (``["3 Method", "3.2 Termination"]``; ``[]`` before the first heading)."""

    path: tuple[str, ...]
    text: str


@dataclass
class Parsed:
    """A parsed document: its title when the format states one, and its blocks in reading order."""

    title: str | None = None
    blocks: list[Block] = field(default_factory=list)

    def to_meta(self) -> list[dict[str, object]]:
        """Blocks as plain dictionaries (they travel in ``Document.meta["structure"]``)."""
        return [{"section_path": list(b.path), "text": b.text} for b in self.blocks]


def blocks_from_headings(items: list[tuple[int, str] | str]) -> list[Block]:
    """Blocks from a reading-order stream of ``(level, heading)`` tuples and text strings.

    A heading closes every open heading at its level or deeper; consecutive texts under the same path are joined
    with blank lines; empty texts are dropped (a heading with no text of its own yields no block).
    """
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []
    pending: list[str] = []

    def flush() -> None:
        text = "\n\n".join(p for p in pending if p.strip()).strip()
        if text:
            blocks.append(Block(tuple(t for _, t in stack), text))
        pending.clear()

    for item in items:
        if isinstance(item, tuple):
            flush()
            level, title = item
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
        else:
            pending.append(item)
    flush()
    return blocks
