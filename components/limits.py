"""Limits shared by the query-side components and the pipelines' input validation, so that each has one value.

``MAX_QUERY_CHARS`` is the default of ``OnnxTextEmbedder(max_chars=...)`` and ``IntentRouter(max_query_chars=...)``
and the limit :mod:`adaptive_retrieval.pipelines.validation` applies on every entry point (REST, MCP, chat, CLI,
``run_query``): a query is a question or keywords, not a document; the model reads 256 tokens of it anyway.
"""

#: Longest query text, in characters.
MAX_QUERY_CHARS = 4000
