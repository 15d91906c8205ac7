"""The indexing inputs of ``bad_inputs.py`` (issue 41): symbolic links, markup nested past a parser's limit, files
edited while they are indexed, a full disk on every route, Unicode forms in file names and text, byte-order marks.

Each case indexes into a folder of its own under the run's temporary folder (the Python and CLI cases) or uploads
to the running server, and checks what was kept: a link that leaves its folder is not followed and is said to be
skipped, every paragraph of deep markup is found, the text indexed is the text recorded, a refusal for a full disk
wrote nothing, a word written in one Unicode form is found in another. The full-disk cases mount a small tmpfs and
serve an index from it (root only; left out otherwise).

Usage (found by ``bad_inputs.py`` by its name)::

    cases()      # the Case list
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from bad_inputs import Case, Context, Outcome, with_timeout
from bad_inputs_cases import TRACEBACK, _cli_outcome, _reason, py, rest

UP, Q, FILES, SOURCES = "/indexing/run", "/query/run", "/v1/files", "/sources"
MB = 1024 * 1024


def _note(word: str, title: str = "Note") -> str:
    return f"# {title}\n\nThe {word} lives here. {word} is a rare word planted by the bad-input script.\n"


# -- Python: one indexing pipeline over a store of the cases' own ------------------------------------------------


def _indexing(ctx: Context) -> Any:
    """The indexing pipeline over ``<tmp>/ix/qdrant`` (loaded once)."""
    if "ix" not in ctx.state:
        from adaptive_retrieval.pipelines import load_pipeline

        pipeline = load_pipeline("indexing", path=str(ctx.folder / "ix" / "qdrant"))
        for _, instance in pipeline.walk():
            if hasattr(instance, "progress_bar"):
                instance.progress_bar = False
        ctx.state["ix"] = pipeline
    return ctx.state["ix"]


def _texts(ctx: Context, source: Path | str) -> str:
    from adaptive_retrieval.pipelines import store_of

    store = store_of(_indexing(ctx))
    docs = store.filter_documents({"field": "meta.source", "operator": "==", "value": str(source)})
    return " ".join(d.content or "" for d in docs)


def _case_dir(ctx: Context, label: str) -> Path:
    folder = ctx.folder / "cases" / hashlib.sha256(label.encode()).hexdigest()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _index(ctx: Context, paths: list[Path], **kwargs: Any) -> dict[str, Any]:
    from adaptive_retrieval.pipelines import index_paths

    return index_paths(_indexing(ctx), paths, **kwargs)


def pyx(label: str, expect: str, build: Callable[[Context, Path], Any], check: Any = None) -> Case:
    """A Python case with a folder of its own: ``build(ctx, folder)`` prepares files and indexes them."""
    return py(label, expect, lambda ctx: build(ctx, _case_dir(ctx, label)), check)


# -- symbolic links ----------------------------------------------------------------------------------------------


def _linked(folder: Path) -> Path:
    """``folder/docs`` with a note and links: to a file outside, a folder outside, a file inside, nowhere, a loop."""
    outside = folder / "outside"
    (outside / "dir").mkdir(parents=True, exist_ok=True)
    (outside / "secret.md").write_text(_note("kestrelsecret"), encoding="utf-8")
    (outside / "dir" / "far.md").write_text(_note("heronfar"), encoding="utf-8")
    docs = folder / "docs"
    (docs / "sub").mkdir(parents=True, exist_ok=True)
    (docs / "note.md").write_text(_note("puffinnote"), encoding="utf-8")
    for link, target in (
        (docs / "secret.md", outside / "secret.md"),
        (docs / "elsewhere", outside / "dir"),
        (docs / "sub" / "again.md", docs / "note.md"),
        (docs / "gone.md", folder / "nothing.md"),
        (docs / "sub" / "loop", docs),
    ):
        if not link.is_symlink():
            link.symlink_to(target)
    return docs


def _links_skipped(*names: str) -> Callable[[dict[str, Any]], bool]:
    def check(counts: dict[str, Any]) -> bool:
        skipped = {Path(link["path"]).name for link in counts.get("links_skipped", [])}
        return set(names) <= skipped and counts["indexed"] == 1

    return check


def symlink_cases() -> list[Case]:
    def plain(ctx: Context, folder: Path) -> dict[str, Any]:
        counts = _index(ctx, [_linked(folder)])
        counts["leaked"] = "kestrelsecret" in _texts(ctx, folder / "docs" / "secret.md")
        return counts

    def follow(ctx: Context, folder: Path) -> dict[str, Any]:
        return _index(ctx, [_linked(folder)], follow_symlinks=True)

    def named(ctx: Context, folder: Path) -> dict[str, Any]:
        return _index(ctx, [_linked(folder) / "secret.md"])  # named on purpose: read

    def only_links(ctx: Context, folder: Path) -> dict[str, Any]:
        docs = folder / "only"
        docs.mkdir(exist_ok=True)
        target = folder / "target.md"
        target.write_text(_note("ternlinked"), encoding="utf-8")
        if not (docs / "link.md").is_symlink():
            (docs / "link.md").symlink_to(target)
        return _index(ctx, [docs])

    def link_dir_arg(ctx: Context, folder: Path) -> dict[str, Any]:
        docs = _linked(folder)
        alias = folder / "alias"
        if not alias.is_symlink():
            alias.symlink_to(docs)
        return _index(ctx, [alias])  # the folder named is a link: followed, its inner links are not

    cases = [
        pyx("links: out of the folder not followed", "ok", plain, lambda c: not c["leaked"] and c["indexed"] == 1),
        pyx("links: each one listed", "ok", plain, _links_skipped("secret.md", "elsewhere", "again.md", "gone.md")),
        pyx("links: followed when asked", "ok", follow, lambda c: c["indexed"] == 3),
        pyx("links: a named link is read", "ok", named, lambda c: c["indexed"] == 1),
        pyx(
            "links: a folder of links only",
            "ok",
            only_links,
            lambda c: c["files"] == 0 and len(c["links_skipped"]) == 1,
        ),
        pyx("links: a linked folder named", "ok", link_dir_arg, _links_skipped("secret.md", "elsewhere")),
    ]

    def cli_prepare(ctx: Context, folder: Path) -> list[str]:
        return ["index", "--store", str(folder / "store"), str(_linked(folder))]

    def cli_follow(ctx: Context, folder: Path) -> list[str]:
        return ["index", "--store", str(folder / "store"), "--follow-symlinks", str(_linked(folder))]

    def cli_only(ctx: Context, folder: Path) -> list[str]:
        docs = folder / "only"
        docs.mkdir(exist_ok=True)
        if not (docs / "x.md").is_symlink():
            (docs / "x.md").symlink_to(_linked(folder) / "note.md")
        return ["index", "--store", str(folder / "store"), str(docs)]

    cases += [
        clix(
            "cli links: not followed, said",
            "ok",
            cli_prepare,
            lambda out, err: "skipped:" in err and "1 indexed" in out,
        ),
        clix("cli links: --follow-symlinks", "ok", cli_follow, lambda out, err: "3 indexed" in out),
        clix("cli links: only links, nothing to index", "error", cli_only),
    ]
    return cases


def clix(
    label: str,
    expect: str,
    argv: Callable[[Context, Path], list[str]],
    check: Callable[[str, str], bool] | None = None,
    env: Callable[[Context], dict[str, str]] | None = None,
) -> Case:
    """A CLI case with a folder of its own: ``argv(ctx, folder)`` prepares files and returns the arguments."""

    def call(ctx: Context) -> Outcome:
        args = argv(ctx, _case_dir(ctx, label))
        try:
            done = subprocess.run(
                [ctx.cli, *args],
                capture_output=True,
                text=True,
                timeout=ctx.timeout,
                cwd=ctx.folder,
                env={**os.environ, **(env(ctx) if env else {})},
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Outcome("timeout", f"no exit within {ctx.timeout:.0f} s")
        outcome = _cli_outcome(done.returncode, done.stderr, done.stdout)
        if outcome.kind == "ok" and check is not None:
            outcome.passed = check(done.stdout, done.stderr)
        return outcome

    return Case("cli", label, expect, call)


# -- markup nested past the parser's limit -----------------------------------------------------------------------


def _paragraphs(word: str, n: int = 400) -> list[str]:
    return [f"Paragraph {i} of the {word} report, marker {word}{i}." for i in range(n)]


DEEP_PAGES: dict[str, Callable[[str], str]] = {
    "400 unclosed <p><font>": lambda w: "".join(f"<p><font>{p}" for p in _paragraphs(w)),
    "300 nested divs": lambda w: "<div>" * 300 + "".join(f"<p>{p}</p>" for p in _paragraphs(w)) + "</div>" * 300,
    "3000 nested divs": lambda w: "<div>" * 3000 + "".join(f"<p>{p}</p>" for p in _paragraphs(w)) + "</div>" * 3000,
    "20000 nested spans": lambda w: "<span>" * 20000 + " ".join(_paragraphs(w, 200)) + "</span>" * 20000,
    "1000 nested lists": lambda w: "<ul><li>" * 1000 + "".join(f"<p>{p}</p>" for p in _paragraphs(w)),
    "2500 nested tables": lambda w: "<table><tr><td>" * 2500 + "".join(f"<p>{p}</p>" for p in _paragraphs(w)),
    "3000 unclosed <b> after a heading": lambda w: "<h1>Deep</h1>" + "".join(f"<b>{p}" for p in _paragraphs(w)),
    "deep inside <main>": lambda w: "<nav>menu</nav><main>" + "<div>" * 2600 + " ".join(_paragraphs(w)) + "</main>",
    "deep inside a section": lambda w: "<section>" * 2200 + "<h2>Part</h2>" + " ".join(_paragraphs(w, 100)),
    "deep with an XHTML declaration": lambda w: (
        '<?xml version="1.0" encoding="utf-8"?><html><body>' + "<div>" * 2100 + " ".join(_paragraphs(w, 100))
    ),
}


def _last_marker(word: str, page: str) -> str:
    n = 200 if "spans" in page else 100 if ("section" in page or "XHTML" in page) else 400
    return f"{word}{n - 1}."


def deep_markup_cases() -> list[Case]:
    cases = []
    for i, (label, page) in enumerate(DEEP_PAGES.items()):
        word = f"deepmark{chr(97 + i)}"

        def build(ctx: Context, folder: Path, page: Callable[[str], str] = page, word: str = word) -> dict[str, Any]:
            path = folder / "legacy.html"
            path.write_text(page(word), encoding="utf-8")
            counts = _index(ctx, [path])
            counts["text"] = _texts(ctx, path)
            return counts

        marker = _last_marker(word, label)
        cases.append(
            pyx(
                f"deep markup: {label}",
                "ok",
                build,
                lambda c, w=word, m=marker: (
                    c["indexed"] == 1 and not c["partial"] and f"{w}0." in c["text"] and m in c["text"]
                ),
            )
        )
        cases.append(
            rest(
                "POST",
                UP,
                "ok",
                f"upload deep markup: {label}",
                lambda r: r.json()["result"]["indexed"] == 1 and not r.json()["result"].get("partial"),
                files=[("files", (f"deep-{i}.html", page(f"updeep{chr(97 + i)}")))],
            )
        )
        uploaded = _last_marker(f"updeep{chr(97 + i)}", label)
        cases.append(
            rest(
                "POST",
                Q,
                "ok",
                f"upload deep markup kept: {label}",
                lambda r, m=uploaded: any(m in (d["content"] or "") for d in r.json()["result"]["documents"]),
                json={"query": uploaded.rstrip("."), "top_k": 10},
            )
        )
    return cases


# -- files edited while they are indexed ---------------------------------------------------------------------------


def _edited(then: Callable[[Path], None], after: Callable[[Path], None] | None = None) -> Callable[..., Any]:
    """Index a note whose file ``then`` changes just before its batch runs; ``after`` changes it once the run is
    over; index again. Returns both runs' counts and the text indexed."""

    def build(ctx: Context, folder: Path) -> dict[str, Any]:
        note = folder / "note.md"
        note.write_text(_note("originalword"), encoding="utf-8")
        first = _index(ctx, [folder], check=lambda batch: then(note))
        if after is not None:
            after(note)
        second = _index(ctx, [folder]) if note.exists() else {"indexed": 0, "skipped": 0, "failed": []}
        return {"first": first, "second": second, "text": _texts(ctx, note)}

    return build


def _write(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def edit_cases() -> list[Case]:
    revert = _write(_note("originalword"))
    return [
        pyx(
            "edit while indexed, reverted after",
            "ok",
            _edited(_write(_note("editedword")), revert),
            lambda r: r["second"]["indexed"] == 1 and "originalword" in r["text"] and "editedword" not in r["text"],
        ),
        pyx(
            "edit while indexed, kept",
            "ok",
            _edited(_write(_note("editedword"))),
            lambda r: r["second"]["skipped"] == 1 and "editedword" in r["text"],
        ),
        pyx(
            "deleted while indexed",
            "ok",
            _edited(lambda p: p.unlink()),
            lambda r: r["first"]["indexed"] == 0 and r["first"]["failed"] and not r["text"],
        ),
        pyx(
            "emptied while indexed",
            "ok",
            _edited(_write("")),
            lambda r: r["first"]["indexed"] == 0 and "empty" in r["first"]["failed"][0]["reason"],
        ),
        pyx(
            "made binary while indexed",
            "ok",
            _edited(lambda p: p.write_bytes(b"\x00\x01\x02" * 100)),
            lambda r: r["first"]["indexed"] == 0 and "binary" in r["first"]["failed"][0]["reason"],
        ),
        pyx(
            "made UTF-16 while indexed",
            "ok",
            _edited(lambda p: p.write_bytes(_note("sixteenword").encode("utf-16"))),
            lambda r: r["first"]["indexed"] == 1 and "sixteenword" in r["text"],
        ),
        pyx(
            "edit while indexed, edited again after",
            "ok",
            _edited(_write(_note("editedword")), _write(_note("thirdword"))),
            lambda r: r["second"]["indexed"] == 1 and "thirdword" in r["text"],
        ),
    ]


# -- byte-order marks ----------------------------------------------------------------------------------------------

BOMS = {
    "UTF-8 BOM": lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),
    "UTF-16 LE": lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
    "UTF-16 BE": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "UTF-32 LE": lambda t: b"\xff\xfe\x00\x00" + t.encode("utf-32-le"),
    "UTF-32 BE": lambda t: b"\x00\x00\xfe\xff" + t.encode("utf-32-be"),
}
BAD_BOMS = {
    "UTF-16 BOM, odd length": b"\xff\xfe" + "text".encode("utf-16-le") + b"\x41",
    "UTF-16 BOM only": b"\xff\xfe",
    "UTF-8 BOM, then Latin-1": b"\xef\xbb\xbf" + "caf\xe9".encode("latin-1"),
    "UTF-32 BOM, truncated": b"\x00\x00\xfe\xff\x00\x00",
}


def bom_cases() -> list[Case]:
    cases = []
    for i, (label, encode) in enumerate(BOMS.items()):
        for suffix in (".md", ".txt", ".html"):
            word = f"bomword{i}{suffix[1:]}"
            text = _note(word) if suffix != ".html" else f"<h1>Note</h1><p>The {word} lives here.</p>"

            def build(ctx: Context, folder: Path, data: bytes = encode(text), suffix: str = suffix) -> dict[str, Any]:
                path = folder / f"bom{suffix}"
                path.write_bytes(data)
                counts = _index(ctx, [path])
                counts["text"] = _texts(ctx, path)
                return counts

            cases.append(
                pyx(
                    f"BOM {label} {suffix}",
                    "ok",
                    build,
                    lambda c, w=word: c["indexed"] == 1 and w in c["text"] and "\ufeff" not in c["text"],
                )
            )
        upword = f"upbom{i}"
        cases.append(
            rest(
                "POST",
                UP,
                "ok",
                f"upload BOM {label}",
                lambda r: r.json()["result"]["indexed"] == 1,
                files=[("files", (f"bom{i}.txt", encode(_note(upword))))],
            )
        )
        cases.append(
            rest(
                "POST",
                Q,
                "ok",
                f"upload BOM kept: {label}",
                lambda r, w=upword: any(w in (d["content"] or "") for d in r.json()["result"]["documents"]),
                json={"query": upword, "top_k": 3},
            )
        )
    for label, data in BAD_BOMS.items():

        def refused(ctx: Context, folder: Path, data: bytes = data) -> None:
            path = folder / "bad.txt"
            path.write_bytes(data)
            counts = _index(ctx, [path])
            if counts["failed"] and not counts["indexed"]:
                raise ValueError(counts["failed"][0]["reason"])  # refused with its reason: a clean error

        cases.append(pyx(f"bad BOM: {label}", "error", refused))
        cases.append(rest("POST", UP, "error", f"upload bad BOM: {label}", files=[("files", ("bad.txt", data))]))
    return cases


# -- Unicode forms in file names and text -------------------------------------------------------------------------

#: (label, the word as written in the file, the word as queried); NFKC makes them meet.
FORMS = [
    ("NFD text, NFC query", unicodedata.normalize("NFD", "crèmeux brûlant"), "crèmeux brûlant"),
    ("NFC text, NFD query", "fondueux gratiné", unicodedata.normalize("NFD", "fondueux gratiné")),
    ("fullwidth text, ASCII query", "ｎａｒｗｈａｌｕｓ", "narwhalus"),
    ("ASCII text, fullwidth query", "walrusinus", "ｗａｌｒｕｓｉｎｕｓ"),
    ("ligature text", "ﬁnchﬂock", "finchflock"),
    ("ligature query", "finchflight", "ﬁnchﬂight"),
    ("circled letters", "ⓚⓞⓐⓛⓐⓢⓘ", "koalasi"),
    ("mathematical bold", "𝐛𝐨𝐥𝐝𝐥𝐲𝐱", "boldlyx"),
    ("halfwidth katakana", "ｶﾀｶﾅﾃｽﾄ", "カタカナテスト"),
    ("modifier letters", "ᵖᵘᶠᶠⁱⁿˣ", "puffinx"),
]
NAME_FORMS = [
    ("NFD file name", unicodedata.normalize("NFD", "résumé-nfd.md")),
    ("NFC file name", "résumé-nfc.md"),
    ("fullwidth file name", "ｆｕｌｌ.md"),
    ("RTL file name", "ملاحظات.md"),
    ("zero-width joiner in name", "a\u200db.md"),
    ("combining-only start", "\u0301accent.md"),
]


def unicode_cases() -> list[Case]:
    cases = []
    for i, (label, written, queried) in enumerate(FORMS):
        marker = f"formmark{i}"
        body = f"# Forms\n\nThe {marker} note says {written} plainly.\n"
        cases.append(
            rest(
                "POST",
                UP,
                "ok",
                f"upload Unicode form: {label}",
                lambda r: r.json()["result"]["indexed"] == 1,
                files=[("files", (f"form{i}.md", body))],
            )
        )
        cases.append(
            rest(
                "POST",
                Q,
                "ok",
                f"query Unicode form: {label}",
                # Found by BM25 (the word, not the marker, is queried): the query was folded as the text was.
                lambda r, m=marker: any(
                    m in (d["content"] or "") and "sparse" in d["provenance"] for d in r.json()["result"]["documents"]
                ),
                json={"query": queried, "top_k": 3},
            )
        )
    for i, (label, name) in enumerate(NAME_FORMS):
        word = f"namemark{i}"

        def build(ctx: Context, folder: Path, name: str = name, word: str = word) -> dict[str, Any]:
            path = folder / name
            path.write_text(_note(word), encoding="utf-8")
            counts = _index(ctx, [folder])
            counts["text"] = _texts(ctx, path.resolve())
            return counts

        cases.append(pyx(f"index {label}", "ok", build, lambda c, w=word: c["indexed"] == 1 and w in c["text"]))
        cases.append(
            rest(
                "POST",
                UP,
                "ok",
                f"upload {label}",
                lambda r: r.json()["result"]["indexed"] == 1,
                files=[("files", (name, _note(f"upname{i}")))],
            )
        )

    # NFC and NFD of one name, on disk: two files, two sources, neither lost.
    def both(ctx: Context, folder: Path) -> dict[str, Any]:
        for form, word in (("NFC", "nfcword"), ("NFD", "nfdword")):
            (folder / unicodedata.normalize(form, "café.md")).write_text(_note(word), encoding="utf-8")
        counts = _index(ctx, [folder])
        counts["texts"] = [_texts(ctx, p.resolve()) for p in sorted(folder.iterdir())]
        return counts

    cases.append(
        pyx(
            "NFC and NFD names side by side",
            "ok",
            both,
            lambda c: c["indexed"] == 2 and sum("nfcword" in t or "nfdword" in t for t in c["texts"]) == 2,
        )
    )
    return cases


# -- a full disk on every route ------------------------------------------------------------------------------------


class FullDisk:
    """A 384 MB tmpfs holding an index served by its own ``adaptive-retrieval serve`` and a second index for the
    CLI, both indexed, then filled to just above the free-space margin."""

    margin_mb = 8
    room = 48 * 1024

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.disk = ctx.folder / "fulldisk"
        self.server: subprocess.Popen | None = None
        self.filler = self.disk / "filler"
        self.url = ""

    @property
    def env(self) -> dict[str, str]:
        return {"ADAPTIVE_MIN_FREE_MB": str(self.margin_mb), "ADAPTIVE_UPLOAD_DIR": str(self.disk / "uploads")}

    def start(self) -> None:
        from adaptive_retrieval.pipelines.serving import free_port

        self.disk.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384m", "tmpfs", str(self.disk)], check=True)
        atexit.register(self.stop)
        env = {**os.environ, **self.env}
        env.pop("ADAPTIVE_API_TOKEN", None)
        source = self.disk / "seed.md"
        source.write_text(_note("fullseed"), encoding="utf-8")
        subprocess.run([self.ctx.cli, "index", "--store", str(self.disk / "cli"), str(source)], env=env, check=True)
        port = free_port()
        log = (self.ctx.folder / "fulldisk-server.log").open("w")
        self.server = subprocess.Popen(
            [self.ctx.cli, "serve", "--store", str(self.disk / "served"), "--port", str(port), "--workers", "1"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if len(httpx.get(f"{self.url}/status", timeout=5).json().get("pipelines", [])) >= 3:
                    break
            time.sleep(0.5)
        for name, word in (("kept.md", "fullkept"), ("spare.md", "fullspare")):
            first = httpx.post(f"{self.url}{UP}", files=[("files", (name, _note(word)))], timeout=300)
            first.raise_for_status()
        self.fill()

    def fill(self, below_margin: bool = False) -> bool:
        """Fill the disk to just above the margin (what a batch needs is refused, a delete still fits), or below it
        (every write refused)."""
        from adaptive_retrieval.components.stores import free_bytes

        self.filler.unlink(missing_ok=True)
        leave = self.margin_mb * MB - MB if below_margin else self.margin_mb * MB + self.room
        with self.filler.open("wb") as handle:
            os.posix_fallocate(handle.fileno(), 0, free_bytes(self.disk) - leave)
        return True

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGINT)
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self.server = None
        subprocess.run(["umount", str(self.disk)], check=False, capture_output=True)


def _full(ctx: Context) -> FullDisk:
    if "full" not in ctx.state:
        full = FullDisk(ctx)
        ctx.state["full"] = full
        full.start()
    return ctx.state["full"]


def full_rest(label: str, expect: str, method: str, path: str, check: Any = None, **kw: Any) -> Case:
    """A request to the server whose disk is full: a 507 with its reason is the clean refusal."""

    def call(ctx: Context) -> Outcome:
        def run() -> Outcome:
            full = _full(ctx)
            response = httpx.request(method, f"{full.url}{path}", timeout=ctx.timeout, **kw)
            head = f"{response.status_code} {response.text[:200]}"
            if response.status_code == 507 and _reason(response) and TRACEBACK not in response.text:
                return Outcome("error", head)
            if response.status_code >= 500:
                return Outcome("crash", head)
            if response.status_code >= 400:
                return Outcome("error", head) if _reason(response) else Outcome("unclear", head)
            return Outcome("ok", head, check(response, full) if check else True)

        return with_timeout(run, ctx.timeout + 300)

    return Case("rest", label, expect, call)


def full_check(label: str, check: Callable[[FullDisk], bool], interface: str = "rest") -> Case:
    """What a refusal left behind (files, records), judged on the full disk's folders."""

    def call(ctx: Context) -> Outcome:
        full = _full(ctx)
        try:
            return Outcome("ok", label, check(full))
        except Exception as err:  # a check that cannot run is a harness failure, counted as such
            return Outcome("crash", f"{type(err).__name__}: {err}")

    return Case(interface, label, "ok", call)


def _uploads(full: FullDisk) -> list[str]:
    return sorted(p.name for p in (full.disk / "uploads").iterdir())


def full_disk_cases() -> list[Case]:
    if os.geteuid() != 0:
        return []  # mounting the tmpfs needs root
    both = ["kept.md", "spare.md"]
    cases = [
        full_rest(
            "full disk: upload a new file", "error", "POST", UP, files=[("files", ("fresh.md", _note("fullfresh")))]
        ),
        full_check("full disk: the refused upload left no file", lambda f: _uploads(f) == both),
        full_rest(
            "full disk: upload replacing a file",
            "error",
            "POST",
            UP,
            files=[("files", ("kept.md", _note("fullreplaced")))],
        ),
        full_check(
            "full disk: the replaced file is back",
            lambda f: "fullkept" in (f.disk / "uploads" / "kept.md").read_text(encoding="utf-8"),
        ),
        full_rest(
            "full disk: upload two files",
            "error",
            "POST",
            UP,
            files=[("files", ("two-a.md", _note("fulltwoa"))), ("files", ("two-b.md", _note("fulltwob")))],
        ),
        full_rest(
            "full disk: v1/files",
            "error",
            "POST",
            FILES,
            files={"file": ("viafiles.md", _note("fullviafiles"))},
            data={"purpose": "assistants"},
        ),
        full_rest(
            "full disk: queries still answer",
            "ok",
            "POST",
            Q,
            lambda r, f: any("fullkept" in (d["content"] or "") for d in r.json()["result"]["documents"]),
            json={"query": "fullkept", "top_k": 3},
        ),
        full_check("full disk: uploads/ holds no partial file", lambda f: _uploads(f) == both),
        # Above the margin a delete still fits (and frees space); below it, it is refused too.
        full_rest(
            "full disk: delete above the margin",
            "ok",
            "DELETE",
            SOURCES,
            lambda r, f: r.json()["deleted"][0]["documents_removed"] >= 1 and _uploads(f) == ["kept.md"],
            params={"source": "spare.md"},
        ),
        full_check("full disk: filled below the margin", lambda f: f.fill(below_margin=True)),
        full_rest("full disk: delete below the margin", "error", "DELETE", SOURCES, params={"source": "kept.md"}),
        full_rest(
            "full disk: the refused delete kept the source",
            "ok",
            "POST",
            Q,
            lambda r, f: (
                any("fullkept" in (d["content"] or "") for d in r.json()["result"]["documents"])
                and _uploads(f) == ["kept.md"]
            ),
            json={"query": "fullkept", "top_k": 3},
        ),
        full_check(
            "full disk: cli index refused",
            lambda f: _cli_full(f, "index", str(f.disk / "cli"), _file(f, "clinew.md")) == 1,
            interface="cli",
        ),
        full_check(
            "full disk: cli delete refused",
            lambda f: _cli_full(f, "delete", str(f.disk / "cli"), str(f.disk / "seed.md")) == 1,
            interface="cli",
        ),
        full_check(
            "full disk: cli stats refused", lambda f: _cli_full(f, "stats", str(f.disk / "cli")) == 1, interface="cli"
        ),
        full_check("full disk: python index_paths refused", _python_full, interface="python"),
        full_check("full disk: space freed, nothing refused is redone or left unfinished", _freed),
    ]
    return cases


def _file(full: FullDisk, name: str) -> str:
    path = full.ctx.folder / "fulldisk-sources" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_note(name.split(".")[0]), encoding="utf-8")
    return str(path)


def _cli_full(full: FullDisk, command: str, store: str, *args: str) -> int:
    """Run a CLI command on the full disk: a clean 'free disk space' error (exit 1) is what is expected."""
    done = subprocess.run(
        [full.ctx.cli, command, "--store", store, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **full.env},
        timeout=full.ctx.timeout,
        check=False,
    )
    if TRACEBACK in done.stderr or "free disk space" not in done.stderr:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr[-300:]}")
    return done.returncode


def _python_full(full: FullDisk) -> bool:
    """index_paths on the full disk (in a subprocess: the CLI's store is not open here) refuses, no traceback."""
    code = (
        "import sys\n"
        "from adaptive_retrieval.pipelines import index_paths, load_pipeline\n"
        "try:\n"
        "    index_paths(load_pipeline('indexing', path=sys.argv[1]), [sys.argv[2]])\n"
        "    print('INDEXED')\n"
        "except Exception as err:\n"
        "    print('REFUSED', 'free disk space' in f'{err} {err.__cause__}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(full.disk / "cli"), _file(full, "pyfull.md")],
        capture_output=True,
        text=True,
        env={**os.environ, **full.env},
        timeout=full.ctx.timeout,
        check=False,
    )
    return "REFUSED True" in done.stdout and TRACEBACK not in done.stderr


def _freed(full: FullDisk) -> bool:
    """With space back, an unrelated upload indexes one file and redoes none of the refused ones."""
    full.free()
    try:
        response = httpx.post(f"{full.url}{UP}", files=[("files", ("later.md", _note("fulllater")))], timeout=300)
        result = response.json()["result"]
        listed = _uploads(full)
        served = result["indexed"] == 1 and result["redone"] == 0 and listed == ["kept.md", "later.md"]
        stats = subprocess.run(
            [full.ctx.cli, "stats", "--store", str(full.disk / "cli")], capture_output=True, text=True, check=False
        )
        return served and stats.returncode == 0 and "1 complete" in stats.stdout  # the CLI's index: the seed only
    finally:
        full.stop()


def cases() -> list[Case]:
    """Every indexing case: Python ones run before the main server starts, the others after it."""
    return [*symlink_cases(), *deep_markup_cases(), *edit_cases(), *bom_cases(), *unicode_cases(), *full_disk_cases()]


if __name__ == "__main__":
    print(f"{len(cases())} indexing cases")
