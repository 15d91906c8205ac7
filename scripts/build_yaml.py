"""Write yaml/indexing.yaml, yaml/query.yaml and yaml/query_ppr.yaml from the Python builders (check the round trip).

python scripts/build_yaml.py [--out yaml]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import yaml
from adaptive_retrieval.components.routing.profiles import (
    GLOBAL_SHARES,
    PPR_SHARES,
    default_fallback_profile,
    default_profiles,
    with_channel_share,
)
from adaptive_retrieval.pipelines import (
    build_indexing_pipeline,
    build_query_pipeline,
    dump_pipeline,
    dumps_pipeline,
    loads_pipeline,
)
from adaptive_retrieval.pipelines.store_config import make_store


def ppr_profiles() -> dict:
    """The default profiles with the opt-in channels at their shares: graph_global at :data:`GLOBAL_SHARES`, then
    graph_ppr at :data:`PPR_SHARES`."""
    with_global = with_channel_share(default_profiles(), "graph_global", GLOBAL_SHARES)
    return with_channel_share(with_global, "graph_ppr", PPR_SHARES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "yaml"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("build_yaml")
    # The stores keep no folder (path: null): they read $ADAPTIVE_QDRANT_PATH / $ADAPTIVE_GRAPH_PATH when they open,
    # so the YAML is the same on every machine. The query side opens with create: false (a missing index is an
    # error). Never opened here: building a pipeline does not touch the stores.
    store, reader = make_store(), make_store(create=False)
    for name, pipeline in (
        ("indexing", build_indexing_pipeline(store)),
        ("query", build_query_pipeline(reader)),
        # The opt-in pipeline with every channel: the personalised-PageRank walk (issue 18) and graph_global.
        # Its profiles are its own, so the router would not take the packaged fallback for plain searches: given here.
        (
            "query_ppr",
            build_query_pipeline(
                reader,
                opt_in=("graph_global", "graph_ppr"),
                profiles=ppr_profiles(),
                fallback_profile=default_fallback_profile(),
            ),
        ),
    ):
        path = dump_pipeline(pipeline, Path(args.out) / f"{name}.yaml")
        text = path.read_text(encoding="utf-8")
        if dumps_pipeline(loads_pipeline(text)) != text:
            msg = f"{path}: YAML round trip is not stable"
            raise SystemExit(msg)
        if "!!" in text or not isinstance(yaml.safe_load(text), dict):
            msg = f"{path}: the YAML is not plain data (a plain YAML reader would refuse it)"
            raise SystemExit(msg)
        log.info("wrote %s (round trip stable)", path)


if __name__ == "__main__":
    main()
