"""``python -m adaptive_retrieval.pipelines.cli``: the ``adaptive-retrieval`` command."""

from adaptive_retrieval.pipelines.cli.main import run

run()
