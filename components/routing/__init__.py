"""Query intent routing: rules, an exemplar-embedding classifier and per-intent strategy profiles."""
