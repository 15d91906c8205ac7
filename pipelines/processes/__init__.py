"""Processes: who owns a local store and how to reach it, the store host and the workers of ``serve --workers N``,
process groups, thread limits, garbage collection, and importing Haystack without torch."""
