"""The settings module names every environment variable the library reads, and the README's table is its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adaptive_retrieval.components import settings
from tests.script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = [p for folder in ("components", "pipelines") for p in (ROOT / folder).rglob("*.py")]
#: A quoted name of one of the package's variables (or of a library's variable the package reads).
NAME = re.compile(r"[\"']((?:ADAPTIVE|QDRANT|NEO4J|HAYHOOKS|XDG)_[A-Z0-9_]+)[\"']")
#: A read of the environment (writes, ``os.environ[...] = ``, and ``setdefault`` are not reads).
READ = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=)")


def test_every_variable_named_in_the_library_is_a_setting() -> None:
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in LIBRARY
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in settings.SETTINGS and not name.endswith("_ENV")  # a Python constant named in __all__
    }
    assert not unknown, f"add these to components/settings.py: {sorted(unknown)}"


def test_only_the_settings_module_reads_the_environment() -> None:
    readers = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in LIBRARY
        if path.name != "settings.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if READ.search(line) and not line.lstrip().startswith("#")
    ]
    assert not readers, f"read these through components/settings.py: {readers}"


def test_the_readme_table_is_generated_from_the_settings() -> None:
    table = load_script("settings_table")
    readme = (ROOT / "pipelines" / "README.md").read_text(encoding="utf-8")
    assert table.with_table(readme) == readme, "run: python scripts/settings_table.py --readme"


def test_defaults_and_typed_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADAPTIVE_MAX_UPLOAD_MB", raising=False)
    assert settings.number("ADAPTIVE_MAX_UPLOAD_MB") == 50.0
    monkeypatch.setenv("ADAPTIVE_MAX_UPLOAD_MB", " 12.5 ")
    assert settings.number("ADAPTIVE_MAX_UPLOAD_MB") == 12.5
    monkeypatch.setenv("ADAPTIVE_CORS_ORIGINS", "https://a.example, ,https://b.example")
    assert settings.items("ADAPTIVE_CORS_ORIGINS") == ("https://a.example", "https://b.example")
    monkeypatch.setenv("ADAPTIVE_ORT_SPIN", "TRUE")
    assert settings.flag("ADAPTIVE_ORT_SPIN")
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", "   ")
    assert settings.text("ADAPTIVE_QDRANT_PATH") is None and not settings.is_set("ADAPTIVE_QDRANT_PATH")


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1", "0"])
def test_a_bad_number_names_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ADAPTIVE_MAX_FILE_CHUNKS", value)
    with pytest.raises(ValueError, match=r"\$ADAPTIVE_MAX_FILE_CHUNKS must be"):
        settings.number("ADAPTIVE_MAX_FILE_CHUNKS", strict=True)


def test_a_whole_number_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPTIVE_UPLOAD_QUEUE", "2.5")
    with pytest.raises(ValueError, match=r"\$ADAPTIVE_UPLOAD_QUEUE must be a whole number >= 1"):
        settings.whole("ADAPTIVE_UPLOAD_QUEUE", minimum=1)


def test_an_unknown_name_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="not a setting"):
        settings.text("ADAPTIVE_NO_SUCH_THING")
