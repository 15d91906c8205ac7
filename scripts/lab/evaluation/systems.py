"""The retrieval systems ``scripts/lab/evaluate.py`` compares: stock Haystack baselines and the adaptive pipelines.

Every system indexes the passages of an :class:`~evaluation.data.EvalSet` and answers a question
with a ranked list of passage ids (chunks mapped back through ``meta["passage_id"]``) and its wall time.

- Stock systems (``stock_bm25``, ``stock_dense``, ``stock_hybrid_rrf``, ``stock_hybrid_mmr``) use Haystack's
  own components: ``InMemoryDocumentStore``, ``DocumentSplitter``, the sentence-transformers embedders on the
  packaged all-MiniLM-L6-v2 folder (torch fp32), ``DocumentJoiner(join_mode="reciprocal_rank_fusion")`` and
  ``SentenceTransformersDiversityRanker(strategy="maximum_margin_relevance")``. Chunks carry the passage title
  as their first line, so BM25 and the embedders all see it.
- ``adaptive`` loads ``yaml/indexing.yaml`` and ``yaml/query.yaml`` over its own Qdrant folder; text passages
  enter the indexing pipeline at its document joiner (before cleaning and section splitting), file passages at
  its file router. The index is cached per corpus and pipeline fingerprint.

Usage::

    stock = StockSystems(top_k=10, fetch_k=20)
    stock.index(evalset)
    ranked, ms = stock.search("stock_hybrid_rrf", "Who directed ...?")
    adaptive = AdaptiveSystem(Path(".adaptive/eval-hotpot"))
    adaptive.index(evalset)
    ranked, ms, result = adaptive.search("Who directed ...?")
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline
from haystack.components.converters import PyPDFToDocument, TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner, DocumentSplitter
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from tqdm import tqdm

from adaptive_retrieval.components.routing import INTENTS, load_profiles_file
from adaptive_retrieval.pipelines import QueryResult
from evaluation.data import EvalSet, Passage
from evaluation.metrics import passage_ranking

logger = logging.getLogger(__name__)

STOCK_SYSTEMS: tuple[str, ...] = ("stock_bm25", "stock_dense", "stock_hybrid_rrf", "stock_hybrid_mmr")
ADAPTIVE = "adaptive"
ALL_SYSTEMS: tuple[str, ...] = (*STOCK_SYSTEMS, ADAPTIVE)
PASSAGE_KEY = "passage_id"


def eval_folder(root: Path, name: str) -> Path:
    """The folder of one evaluation's indexes: ``root/eval-<name as a slug>`` (shared by evaluate and calibrate)."""
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-")
    return Path(root) / f"eval-{slug}"


def minilm_dir() -> str:
    """The packaged all-MiniLM-L6-v2 folder (sentence-transformers layout) the stock systems load."""
    from adaptive_retrieval.components.models import packaged_minilm_dir

    return str(packaged_minilm_dir())


def _file_documents(passages: list[Passage]) -> list[Document]:
    """Convert file passages with Haystack's stock converters (PDF, else plain text), tagging each with its id."""
    docs: list[Document] = []
    pdf, text = PyPDFToDocument(), TextFileToDocument()
    for p in passages:
        assert p.path is not None
        converter = pdf if p.path.lower().endswith(".pdf") else text
        out = converter.run(sources=[p.path], meta=[{PASSAGE_KEY: p.id, "title": p.title}])["documents"]
        docs.extend(out)
    return DocumentCleaner().run(documents=docs)["documents"] if docs else []


def stock_chunks(passages: list[Passage], split_words: int = 180, overlap_words: int = 20) -> list[Document]:
    """Chunks for the stock systems: stock converters and ``DocumentSplitter`` (words), title as first line."""
    docs = [Document(content=p.content, meta={PASSAGE_KEY: p.id, "title": p.title}) for p in passages if not p.path]
    docs.extend(_file_documents([p for p in passages if p.path]))
    splitter = DocumentSplitter(split_by="word", split_length=split_words, split_overlap=overlap_words)
    chunks = splitter.run(documents=docs)["documents"]
    out = []
    for chunk in chunks:
        title = chunk.meta.get("title") or ""
        # A passage with a title alone (CACM) is its title: not written twice.
        content = f"{title}\n{chunk.content}" if title and chunk.content != title else chunk.content
        out.append(Document(content=content, meta={PASSAGE_KEY: chunk.meta[PASSAGE_KEY], "title": title}))
    return out


class StockSystems:
    """The four stock Haystack baselines over one in-memory store (embeddings cached on disk per corpus).

    :param top_k: chunks each system returns.
    :param fetch_k: candidates each retriever of the hybrids contributes.
    :param mmr_lambda: λ of the stock diversity ranker (its own default is 0.5).
    :param cache_dir: where the embedded store is saved, keyed by the corpus fingerprint (``None``: no cache).
    """

    def __init__(
        self,
        top_k: int = 10,
        fetch_k: int = 20,
        mmr_lambda: float = 0.5,
        cache_dir: Path | None = None,
        model_dir: str | None = None,
    ) -> None:
        self.top_k = top_k
        self.fetch_k = fetch_k
        self.mmr_lambda = mmr_lambda
        self.cache_dir = cache_dir
        self.model_dir = model_dir or minilm_dir()
        self.store: InMemoryDocumentStore | None = None
        self.pipelines: dict[str, Pipeline] = {}

    def _text_embedder(self) -> Any:
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersTextEmbedder,
        )

        return SentenceTransformersTextEmbedder(model=self.model_dir, local_files_only=True, progress_bar=False)

    def index(self, evalset: EvalSet, progress_bar: bool = False) -> dict[str, Any]:
        """Chunk and embed the passages (or load them from the cache); returns counts and seconds taken."""
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        start = time.perf_counter()
        cache = self.cache_dir / f"stock-{evalset.fingerprint()[:16]}.json" if self.cache_dir else None
        cached = bool(cache and cache.exists())
        if cache is not None and cached:
            self.store = InMemoryDocumentStore.load_from_disk(str(cache))
        else:
            chunks = stock_chunks(evalset.passages)
            embedder = SentenceTransformersDocumentEmbedder(
                model=self.model_dir, local_files_only=True, batch_size=32, progress_bar=progress_bar
            )
            embedder.warm_up()
            embedded = embedder.run(documents=chunks)["documents"]
            self.store = InMemoryDocumentStore()
            self.store.write_documents(embedded)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                self.store.save_to_disk(str(cache))
        self._build()
        return {
            "chunks": self.store.count_documents(),
            "seconds": time.perf_counter() - start,
            "cached": cached,
        }

    def _build(self) -> None:
        from haystack_integrations.components.rankers.sentence_transformers import (
            SentenceTransformersDiversityRanker,
        )

        store = self.store
        bm25 = Pipeline()
        bm25.add_component("bm25", InMemoryBM25Retriever(store, top_k=self.top_k))

        dense = Pipeline()
        dense.add_component("embedder", self._text_embedder())
        dense.add_component("dense", InMemoryEmbeddingRetriever(store, top_k=self.top_k))
        dense.connect("embedder.embedding", "dense.query_embedding")

        def hybrid(top_k: int | None) -> Pipeline:
            p = Pipeline()
            p.add_component("embedder", self._text_embedder())
            p.add_component("dense", InMemoryEmbeddingRetriever(store, top_k=self.fetch_k))
            p.add_component("bm25", InMemoryBM25Retriever(store, top_k=self.fetch_k))
            p.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=top_k))
            p.connect("embedder.embedding", "dense.query_embedding")
            p.connect("dense.documents", "joiner.documents")
            p.connect("bm25.documents", "joiner.documents")
            return p

        rrf = hybrid(self.top_k)
        mmr = hybrid(None)
        mmr.add_component(
            "ranker",
            SentenceTransformersDiversityRanker(
                model=self.model_dir,
                top_k=self.top_k,
                strategy="maximum_margin_relevance",
                lambda_threshold=self.mmr_lambda,
            ),
        )
        mmr.connect("joiner.documents", "ranker.documents")
        self.pipelines = {
            "stock_bm25": bm25,
            "stock_dense": dense,
            "stock_hybrid_rrf": rrf,
            "stock_hybrid_mmr": mmr,
        }
        for pipeline in self.pipelines.values():
            pipeline.warm_up()

    def run(self, system: str, question: str) -> list[Document]:
        """The ranked chunks ``system`` returns for ``question``."""
        pipeline = self.pipelines.get(system)
        if pipeline is None:
            msg = f"Unknown or unindexed stock system {system!r}; known: {list(STOCK_SYSTEMS)} (call index() first)"
            raise ValueError(msg)
        inputs: dict[str, dict[str, Any]] = {}
        for name, sockets in pipeline.inputs().items():
            for socket in ("text", "query"):
                if socket in sockets:
                    inputs.setdefault(name, {})[socket] = question
        result = pipeline.run(inputs)
        last = "ranker" if "ranker" in result else "joiner" if "joiner" in result else next(iter(result))
        return result[last]["documents"]

    def search(self, system: str, question: str) -> tuple[list[str], float]:
        """Ranked passage ids and wall milliseconds for ``question``."""
        start = time.perf_counter()
        docs = self.run(system, question)
        elapsed = (time.perf_counter() - start) * 1000
        return passage_ranking(docs, PASSAGE_KEY), elapsed


def without_channels(text: str, channels: list[str] | tuple[str, ...]) -> str:
    """Query-pipeline YAML with retrieval ``channels`` removed: their components, every connection to or from
    them, their inputs on the joiner and their weights in the router's profiles (renormalised per intent)."""
    from haystack.marshal import YamlMarshaller

    data = YamlMarshaller().unmarshal(text)
    drop = set(channels)
    unknown = drop - set(data["components"])
    if unknown:
        msg = f"No channel component(s) {sorted(unknown)} in the query pipeline"
        raise ValueError(msg)
    for name in drop:
        del data["components"][name]
    data["connections"] = [
        c
        for c in data["connections"]
        if c["sender"].split(".", 1)[0] not in drop and c["receiver"].split(".", 1)[0] not in drop
    ]
    for component in data["components"].values():
        params = component.get("init_parameters") or {}
        # The joiner's inputs and the router's channel set (it weighs exactly the pipeline's channels).
        if component.get("type", "").endswith(("WeightedRRFJoiner", "IntentRouter")) and params.get("channels"):
            params["channels"] = [c for c in params["channels"] if c not in drop]
        # The router's profiles lose the channel and are renormalised per intent, so that soft routing mixes
        # exactly the profiles a pipeline without the channel would have.
        for profile in (params.get("profiles") or {}).values():
            weights = {c: w for c, w in profile["weights"].items() if c not in drop}
            total = sum(weights.values())
            if total > 0:
                profile["weights"] = {c: w / total for c, w in weights.items()}
    return YamlMarshaller().marshal(data)


def with_fixed_profile(text: str, profile: dict[str, Any]) -> str:
    """Query-pipeline YAML whose router gives every intent ``profile`` (weights only for the pipeline's channels):
    the same pipeline, one strategy for every query. The router still finds section references (``structural``)."""
    from haystack.marshal import YamlMarshaller

    data = YamlMarshaller().unmarshal(text)
    routers = [c for c in data["components"].values() if c.get("type", "").endswith("IntentRouter")]
    if len(routers) != 1:
        msg = f"Expected one IntentRouter in the query pipeline, found {len(routers)}"
        raise ValueError(msg)
    params = routers[0].setdefault("init_parameters", {})
    channels = params.get("channels")
    weights = {c: float(w) for c, w in profile["weights"].items() if channels is None or c in channels}
    total = sum(weights.values())
    if total <= 0:
        msg = f"The fixed profile gives no weight to the pipeline's channels {channels}"
        raise ValueError(msg)
    fixed = {**profile, "weights": {c: w / total for c, w in weights.items()}}
    intents = list(params.get("profiles") or params.get("exemplars") or INTENTS)
    params["profiles"] = {intent: copy.deepcopy(fixed) for intent in intents}
    return YamlMarshaller().marshal(data)


def read_fixed_profile(source: str) -> dict[str, Any]:
    """The fixed profile ``--fixed-profile`` names: ``packaged`` (the profiles file's ``fixed_profile``), or a JSON
    file holding a profile or a profiles file."""
    data = load_profiles_file() if source == "packaged" else json.loads(Path(source).read_text(encoding="utf-8"))
    profile = data.get("fixed_profile", {}).get("profile") if "fixed_profile" in data else data
    if not isinstance(profile, dict) or "weights" not in profile:
        raise SystemExit(f"--fixed-profile {source}: no fixed profile (calibrate_profiles.py --fixed --write fits one)")
    return profile


def _entry_joiner(pipeline: Pipeline) -> str:
    """Name of the indexing pipeline's ``DocumentJoiner`` that collects converted documents (the text entry)."""
    for name, instance in pipeline.walk():
        if isinstance(instance, DocumentJoiner):
            return name
    msg = "The indexing pipeline has no DocumentJoiner to feed Documents into"
    raise ValueError(msg)


class AdaptiveSystem:
    """Our pipelines from YAML over a private Qdrant folder ``root/<fingerprint>``, built once per corpus.

    :param root: folder for this evaluation's indexes (e.g. ``.adaptive/eval-hotpot``); never the demo's store.
    :param query_yaml: query pipeline YAML (name or path).
    :param indexing_yaml: indexing pipeline YAML (name or path).
    """

    def __init__(self, root: Path, query_yaml: str = "query", indexing_yaml: str = "indexing") -> None:
        from adaptive_retrieval.pipelines import resolve_yaml

        self.root = Path(root)
        self.query_yaml = resolve_yaml(query_yaml)
        self.indexing_yaml = resolve_yaml(indexing_yaml)
        self.pipeline: Pipeline | None = None
        self.store_path: Path | None = None

    def key(self, evalset: EvalSet) -> str:
        """Cache key: the corpus fingerprint plus the indexing YAML (a changed pipeline re-indexes)."""
        digest = hashlib.sha256(evalset.fingerprint().encode())
        digest.update(self.indexing_yaml.read_bytes())
        return digest.hexdigest()[:16]

    def index(self, evalset: EvalSet, batch: int = 256, force: bool = False) -> dict[str, Any]:
        """Index the passages through the indexing YAML (skipped when this corpus is already indexed)."""
        from adaptive_retrieval.pipelines import load_pipeline, optimize_store, store_of

        folder = self.root / self.key(evalset)
        marker = folder / "index.json"
        self.store_path = folder / "qdrant"
        if marker.exists() and not force:
            stats = json.loads(marker.read_text())
            stats["cached"] = True
        else:
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            start = time.perf_counter()
            indexing = load_pipeline(self.indexing_yaml, path=str(self.store_path))
            for _, instance in indexing.walk():
                if hasattr(instance, "progress_bar"):
                    instance.progress_bar = False
            entry = _entry_joiner(indexing)
            texts = [p for p in evalset.passages if not p.path]
            files = [p for p in evalset.passages if p.path]
            written = 0
            # One bar over the whole corpus (the components' own bars are off: they would restart every batch).
            bar = tqdm(total=len(texts), desc=f"index {evalset.name}", unit="passage", mininterval=10)
            for offset in range(0, len(texts), batch):
                docs = [
                    Document(content=p.content, meta={PASSAGE_KEY: p.id, "title": p.title, "source": f"eval:{p.id}"})
                    for p in texts[offset : offset + batch]
                ]
                result = indexing.run({"file_router": {"sources": []}, entry: {"documents": docs}})
                written += result["writer"]["documents_written"]
                bar.update(len(docs))
            bar.close()
            for offset in range(0, len(files), 8):
                group = files[offset : offset + 8]
                result = indexing.run(
                    {
                        "file_router": {
                            "sources": [Path(p.path) for p in group if p.path],
                            "meta": [{PASSAGE_KEY: p.id, "title": p.title} for p in group],
                        }
                    }
                )
                written += result["writer"]["documents_written"]
            optimize_store(store_of(indexing))
            stats = {
                "passages": len(evalset.passages),
                "chunks": store_of(indexing).count_documents(),
                "written": written,
                "seconds": round(time.perf_counter() - start, 2),
            }
            marker.write_text(json.dumps(stats))
            stats["cached"] = False
            # Other fingerprints of this evaluation are stale: keep the disk small.
            for sibling in self.root.iterdir():
                if sibling.is_dir() and sibling != folder:
                    shutil.rmtree(sibling, ignore_errors=True)
        self.pipeline = self.load_query()
        return stats

    def load_query(
        self, drop_channels: tuple[str, ...] = (), fixed_profile: dict[str, Any] | None = None, **overrides: Any
    ) -> Pipeline:
        """A fresh query pipeline over this index (``overrides``: extra store parameters; ``drop_channels``:
        retrieval channels removed, for an ablation in the same run; ``fixed_profile``: every intent's profile
        replaced by this one, so the strategy no longer depends on the routing)."""
        from adaptive_retrieval.pipelines import loads_pipeline

        if self.store_path is None:
            msg = "Call index() first"
            raise ValueError(msg)
        text = self.query_yaml.read_text(encoding="utf-8")
        if drop_channels:
            text = without_channels(text, drop_channels)
        if fixed_profile is not None:
            text = with_fixed_profile(text, fixed_profile)
        pipeline = loads_pipeline(text, path=str(self.store_path), **overrides)
        pipeline.warm_up()
        return pipeline

    def search(self, question: str, pipeline: Pipeline | None = None) -> tuple[list[str], float, QueryResult]:
        """Ranked passage ids, wall milliseconds and the full :func:`run_query` result."""
        from adaptive_retrieval.pipelines import run_query

        pipeline = pipeline or self.pipeline
        if pipeline is None:
            msg = "Call index() first"
            raise ValueError(msg)
        start = time.perf_counter()
        result = run_query(pipeline, question)
        elapsed = (time.perf_counter() - start) * 1000
        return passage_ranking(result.documents, PASSAGE_KEY), elapsed, result
