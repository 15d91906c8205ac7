"""The ``adaptive-retrieval`` command (:mod:`~adaptive_retrieval.pipelines.cli.main`): its arguments, commands, output
format and the ``models`` commands."""
