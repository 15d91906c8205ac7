"""Which files a list of paths names for indexing: the supported files under each folder, without leaving it.

A symbolic link inside a folder may point anywhere: ``docs/notes.md -> ~/.ssh/config.md`` was indexed (its
content then served to every client of the index) although the user only named ``docs/``. Links met while walking
a folder are not followed unless asked (``follow_symlinks=True``, the CLI's ``--follow-symlinks``); each one is
reported with where it points and why it was skipped. A path named on the command line is the user's choice and is
read even when it is a link.

Usage::

    found = find_files(["docs/"])
    found.files            # [Path('/abs/docs/a.md'), ...]
    found.skipped_links    # [SkippedLink(path='/abs/docs/notes.md', target='/home/u/.ssh/config.md', reason=...)]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES

OUTSIDE = "it points outside the folder (pass --follow-symlinks to index what links point to)"
INSIDE = "it points inside the folder, where its target is indexed as itself"
BROKEN = "it points to nothing"


@dataclass(frozen=True)
class SkippedLink:
    """A symbolic link met while walking a folder and not followed: the link, where it points, why."""

    path: str
    target: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """As plain data (the result of ``index_paths`` is JSON-ready)."""
        return asdict(self)


@dataclass
class FoundFiles:
    """The supported files a list of paths names (absolute, sorted, each once) and the links not followed."""

    files: list[Path] = field(default_factory=list)
    skipped_links: list[SkippedLink] = field(default_factory=list)


def _supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def _inside(target: Path, root: Path) -> bool:
    return target == root or root in target.parents


class _Walk:
    def __init__(self, follow_symlinks: bool) -> None:
        self.follow = follow_symlinks
        self.found = FoundFiles()
        self.real: set[Path] = set()  # files added, by the file they are (a file and a link to it count once)
        self.walked: set[Path] = set()  # folders walked, by their real path (a link loop ends here)

    def add(self, path: Path) -> None:
        real = path.resolve()
        if real not in self.real:
            self.real.add(real)
            self.found.files.append(path)

    def skip(self, link: Path, target: Path, reason: str) -> None:
        if target.is_dir() or _supported(link) or _supported(target) or reason == BROKEN:
            self.found.skipped_links.append(SkippedLink(str(link), str(target), reason))

    def link(self, link: Path, root: Path) -> None:
        target = link.resolve()
        if not target.exists():
            self.skip(link, target, BROKEN)
        elif _inside(target, root):
            self.skip(link, target, INSIDE)  # the walk reaches the target itself: once, under its own name
        elif not self.follow:
            self.skip(link, target, OUTSIDE)
        elif target.is_dir():
            self.walk(link, root)
        elif _supported(link) or _supported(target):
            # Followed: indexed under the link's own name, the one the user sees in the folder.
            self.add(link if _supported(link) else target)

    def walk(self, folder: Path, root: Path) -> None:
        if folder.resolve() in self.walked:
            return
        self.walked.add(folder.resolve())
        for current, folders, names in os.walk(folder, followlinks=False):
            here = Path(current)
            folders.sort()
            for name in list(folders):
                if (here / name).is_symlink():
                    self.link(here / name, root)
            for name in sorted(names):
                path = here / name
                if path.is_symlink():
                    self.link(path, root)
                elif _supported(path) and path.is_file():
                    self.add(path)


def find_files(paths: Iterable[str | os.PathLike[str]], follow_symlinks: bool = False) -> FoundFiles:
    """The supported files under ``paths`` (files or folders, recursive), as absolute paths, sorted, each once.

    :param follow_symlinks: follow links met inside a folder (to files and folders, anywhere); off, they are
        listed in ``skipped_links`` with where they point.
    :raises FileNotFoundError: when a path does not exist.
    """
    walk = _Walk(follow_symlinks)
    for raw in paths:
        path = Path(raw).expanduser().resolve()  # named by the user: a link here is followed
        if not path.exists():
            msg = f"{path} does not exist"
            raise FileNotFoundError(msg)
        if path.is_dir():
            walk.walk(path, path)
        elif _supported(path) and path.is_file():
            walk.add(path)
    walk.found.files.sort()
    return walk.found
