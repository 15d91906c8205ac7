"""Graph stores: the ``GraphStore`` contract, the SQLite store (schema, reads, writes, read cache, file location) and
the Neo4j store. Public names: :mod:`adaptive_retrieval.components.stores`."""
