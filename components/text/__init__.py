"""Text helpers shared by index time and query time: keys that merge spelling variants, stop words, sentence
splitting, name reading and heading numbers. Pure functions, no Haystack components, no model.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.text import content_words, normalise_key

``normalise_key`` and ``title_aliases`` (the keys entity names and titles merge under), ``query_names`` (the
names a query mentions), ``content_words`` and ``stems`` (the words and stems the gate compares). The stop-word
list itself stays at ``text.stopwords.stopwords``: a package attribute named like its module is replaced by the
module once that loads.
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "keys": ["normalise_key", "title_aliases"],
    "names": ["query_names"],
    "terms": ["content_words", "stems"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.text.keys import normalise_key as normalise_key
    from adaptive_retrieval.components.text.keys import title_aliases as title_aliases
    from adaptive_retrieval.components.text.names import query_names as query_names
    from adaptive_retrieval.components.text.terms import content_words as content_words
    from adaptive_retrieval.components.text.terms import stems as stems

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
