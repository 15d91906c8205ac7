"""Serving: the REST/chat/MCP app of ``adaptive-retrieval serve`` (Hayhooks' app), its HTTP guard, request checks,
uploads, and ``wrappers/``, the folder of Hayhooks pipeline wrappers it serves (nothing else lives there: Hayhooks
serves every folder of the directory it is pointed at)."""
