"""Builders and runners of the indexing and query pipelines, YAML loading, store configuration, calibration,
validation and limits; the rooms above them, each importing only rooms below it: ``processes/`` (store ownership,
workers), ``serving/`` (the app and its Hayhooks wrappers), ``cli/`` (the command); ``diagrams/`` (mermaid) imports
only this floor.

The public entry points, imported on first use (nothing else loads with them)::

    from adaptive_retrieval.pipelines import index_paths, load_pipeline, run_query

    index_paths(load_pipeline("indexing", path="idx/qdrant"), ["docs/"])
    result = run_query(load_pipeline("query", path="idx/qdrant"), "What does the with statement do?")
    result.verdict, result.documents

Besides these, for evaluation and benchmarks: ``query_inputs`` (a query pipeline's inputs for a query text),
``stage_timings`` (milliseconds per component of the runs in a ``with`` block), ``resolve_yaml``, ``store_of`` and
``optimize_store`` (an indexing pipeline's store, its HNSW build after a bulk write), ``file_hash``, ``NO_PASSAGE``
(the text answer when nothing matched), and the gate's self-calibration steps (``pseudo_queries``,
``collect_signals``, ``fit_samples``, ``DEFAULT_QUERIES``).
"""

from typing import TYPE_CHECKING

import adaptive_retrieval.components  # noqa: F401  (sets the offline defaults before Haystack is imported)
from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "yaml_io": [
        "load_pipeline",
        "loads_pipeline",
        "dump_pipeline",
        "dumps_pipeline",
        "PipelineLoadError",
        "resolve_yaml",
    ],
    "query_pipeline": ["build_query_pipeline", "run_query", "NoChannelAnsweredError", "query_inputs"],
    "query_result": ["QueryResult", "GateOutcome"],
    "text_answer": ["answer_text", "NO_PASSAGE"],
    "indexing_pipeline": ["build_indexing_pipeline", "store_of"],
    "indexer": ["Indexer", "index_paths", "delete_sources", "optimize_store"],
    "index_files": ["file_hash"],
    "gate_calibration": ["calibrate_pipeline", "collect_signals", "fit_samples", "pseudo_queries", "DEFAULT_QUERIES"],
    "store_config": ["make_store", "make_graph_store"],
    "timing": ["stage_timings"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.pipelines.gate_calibration import DEFAULT_QUERIES as DEFAULT_QUERIES
    from adaptive_retrieval.pipelines.gate_calibration import calibrate_pipeline as calibrate_pipeline
    from adaptive_retrieval.pipelines.gate_calibration import collect_signals as collect_signals
    from adaptive_retrieval.pipelines.gate_calibration import fit_samples as fit_samples
    from adaptive_retrieval.pipelines.gate_calibration import pseudo_queries as pseudo_queries
    from adaptive_retrieval.pipelines.index_files import file_hash as file_hash
    from adaptive_retrieval.pipelines.indexer import Indexer as Indexer
    from adaptive_retrieval.pipelines.indexer import delete_sources as delete_sources
    from adaptive_retrieval.pipelines.indexer import index_paths as index_paths
    from adaptive_retrieval.pipelines.indexer import optimize_store as optimize_store
    from adaptive_retrieval.pipelines.indexing_pipeline import build_indexing_pipeline as build_indexing_pipeline
    from adaptive_retrieval.pipelines.indexing_pipeline import store_of as store_of
    from adaptive_retrieval.pipelines.query_pipeline import NoChannelAnsweredError as NoChannelAnsweredError
    from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline as build_query_pipeline
    from adaptive_retrieval.pipelines.query_pipeline import query_inputs as query_inputs
    from adaptive_retrieval.pipelines.query_pipeline import run_query as run_query
    from adaptive_retrieval.pipelines.query_result import GateOutcome as GateOutcome
    from adaptive_retrieval.pipelines.query_result import QueryResult as QueryResult
    from adaptive_retrieval.pipelines.store_config import make_graph_store as make_graph_store
    from adaptive_retrieval.pipelines.store_config import make_store as make_store
    from adaptive_retrieval.pipelines.text_answer import NO_PASSAGE as NO_PASSAGE
    from adaptive_retrieval.pipelines.text_answer import answer_text as answer_text
    from adaptive_retrieval.pipelines.timing import stage_timings as stage_timings
    from adaptive_retrieval.pipelines.yaml_io import PipelineLoadError as PipelineLoadError
    from adaptive_retrieval.pipelines.yaml_io import dump_pipeline as dump_pipeline
    from adaptive_retrieval.pipelines.yaml_io import dumps_pipeline as dumps_pipeline
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline as load_pipeline
    from adaptive_retrieval.pipelines.yaml_io import loads_pipeline as loads_pipeline
    from adaptive_retrieval.pipelines.yaml_io import resolve_yaml as resolve_yaml

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
