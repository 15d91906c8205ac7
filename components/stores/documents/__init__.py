"""Document stores: the Qdrant Edge store in process (its shards, searches, filters, conversion, checks and errors),
the remote store the workers of ``serve --workers N`` use (and its wire format), and the vector-search interface the
channels search through. Public names: :mod:`adaptive_retrieval.components.stores`."""
