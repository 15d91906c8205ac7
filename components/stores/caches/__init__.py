"""The per-process caches the stores keep: vectors by id, search points, and the write generation that empties them."""
