"""Document structure from each format's own markup: Markdown heading tokens, the HTML element tree, PDF
outlines and font layout. Every parser returns :class:`Block` lists that the section splitter consumes."""

from adaptive_retrieval.components.indexing.structure.blocks import Block, Parsed, blocks_from_headings

__all__ = ["Block", "Parsed", "blocks_from_headings"]
