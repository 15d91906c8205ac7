"""The wheel's contents: every package of the source tree, the package data and the pipelines' YAML."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_and_the_yaml_are_declared() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {f"adaptive_retrieval.{p}" for p in find_packages(str(ROOT), include=["components*", "pipelines*"])}
    # Hayhooks wrapper folders have no __init__.py (Hayhooks loads them by path) but must ship too, and so must
    # the data folders (no Python in them).
    wrappers = {
        f"adaptive_retrieval.pipelines.serving.wrappers.{w.parent.name}"
        for w in (ROOT / "pipelines" / "serving" / "wrappers").glob("*/pipeline_wrapper.py")
    }
    data = {f"adaptive_retrieval.components.{d.parent.name}.data" for d in (ROOT / "components").glob("*/data")}
    assert wrappers == {
        f"adaptive_retrieval.pipelines.serving.wrappers.{name}" for name in ("query", "indexing", "diagrams")
    }
    # Hayhooks serves every folder of the directory it is given: that one holds the wrappers' folders only.
    assert sorted(
        p.name for p in (ROOT / "pipelines" / "serving" / "wrappers").iterdir() if p.name != "__pycache__"
    ) == [
        "diagrams",
        "indexing",
        "query",
    ]
    declared = set(config["packages"])
    expected = found | wrappers | data | {"adaptive_retrieval.yaml"}
    assert declared == expected, "a new subpackage must be listed in pyproject.toml"
    assert config["package-dir"]["adaptive_retrieval.yaml"] == "yaml"
    assert {p.name for p in (ROOT / "yaml").glob("*.yaml")} == {"indexing.yaml", "query.yaml", "query_ppr.yaml"}


def test_the_installed_wrappers_folder_holds_only_pipeline_wrappers() -> None:
    """A one-process server serves every folder of the installed ``adaptive_retrieval/pipelines/serving/wrappers``
    as a Hayhooks pipeline: a data folder shipped there (the YAML once was) stops ``serve --workers 1`` of a wheel
    install."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    prefix = "adaptive_retrieval.pipelines.serving.wrappers."
    served = {p for p in config["packages"] if p.startswith(prefix)}
    assert served, "no wrapper package is declared"
    for package in served:
        folder = ROOT / "pipelines" / "serving" / "wrappers" / package.removeprefix(prefix)
        assert (folder / "pipeline_wrapper.py").is_file(), f"{package} ships in the served folder but is no wrapper"
