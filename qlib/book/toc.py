"""The book's table of contents: its root, its notebooks in order, a selection of them, the pages
``_toc.yml`` names, each notebook's id and the notebooks whose results it reads.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from pathlib import Path
from typing import Any, Iterable

import yaml

__all__ = ["AGGREGATOR_PARTS", "find_root", "notebooks", "select", "toc_pages", "chapter_id", "dependencies"]

AGGREGATOR_PARTS = ("appendix",)  # notebooks that read every other notebook's results


def find_root(start: Path | None = None) -> Path:
    """The book root: the first folder upwards from ``start`` (default: cwd) holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").is_file() and (p / "chapters").is_dir():
            return p
    raise FileNotFoundError(f"no book root (a folder with _toc.yml and chapters/) above {here}")


def _toc_entries(node: Any) -> Iterable[tuple[str, str]]:
    """``("file" | "glob", entry)`` for every entry of a ``_toc.yml`` tree (its ``root`` is a file)."""
    if isinstance(node, dict):
        for key in ("root", "file", "glob"):
            if key in node and isinstance(node[key], str):
                yield key if key != "root" else "file", node[key]
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                yield from _toc_entries(child)
    elif isinstance(node, list):
        for child in node:
            yield from _toc_entries(child)


def notebooks(root: Path) -> list[str]:
    """Notebook paths below ``chapters/`` in table-of-contents order."""
    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out: list[str] = []
    for kind, entry in _toc_entries(toc):
        if kind == "file":
            cands = [root / (entry if entry.endswith(".ipynb") else entry + ".ipynb")]
        else:
            cands = sorted(p for p in root.glob(entry) if p.suffix in ("", ".ipynb"))
            cands = [p if p.suffix else p.with_suffix(".ipynb") for p in cands]
        for p in cands:
            if p.is_file() and p.suffix == ".ipynb":
                rel = p.relative_to(root / "chapters").as_posix()
                if rel not in out:
                    out.append(rel)
    return out


def select(all_nbs: list[str], only: Iterable[str] | None) -> list[str]:
    """Notebooks matching any of ``only`` (a prefix such as ``eden/``, a path, or a glob)."""
    pats = [p.strip() for p in (only or []) if p and p.strip()]
    if not pats:
        return list(all_nbs)

    def matches(nb: str, pat: str) -> bool:
        pat = pat.removeprefix("chapters/")
        return nb == pat or nb.startswith(pat) or fnmatch.fnmatch(nb, pat) or nb == pat + ".ipynb"

    for pat in pats:  # a pattern that selects nothing is a typo: stop before anything runs
        if not any(matches(nb, pat) for nb in all_nbs):
            short = {nb.split("-", 1)[0]: nb for nb in all_nbs}  # eden/02 → eden/02-rotation-and-scale.ipynb
            cands = {**short, **{nb.removesuffix(".ipynb"): nb for nb in all_nbs}}
            close = difflib.get_close_matches(pat.removeprefix("chapters/").removesuffix(".ipynb"), list(cands),
                                              n=1, cutoff=0.6)
            hint = f"; did you mean {cands[close[0]].removesuffix('.ipynb')!r}?" if close else ""
            raise ValueError(f"--only {pat!r} matches no notebook{hint} (known: {', '.join(all_nbs)})")
    return [nb for nb in all_nbs if any(matches(nb, pat) for pat in pats)]


def toc_pages(root: Path) -> list[str]:
    """Every page the table of contents names, as a path without suffix relative to the book root
    (``chapters/intro/index``, ``chapters/eden/01-estimator-vnmse``), globs expanded against ``root``."""
    root = Path(root)
    out: list[str] = []
    for kind, entry in _toc_entries(yaml.safe_load((root / "_toc.yml").read_text())):
        if kind == "file":
            names = [entry.removesuffix(".ipynb").removesuffix(".md")]
        else:
            names = sorted({p.relative_to(root).with_suffix("").as_posix() for p in root.glob(entry)
                            if p.suffix in (".ipynb", ".md") and p.is_file()})
        out += [n for n in names if n not in out]
    return out


def chapter_id(nb: str) -> str:
    """The id a notebook is known by (its path below ``chapters/`` without ``.ipynb``)."""
    return nb[: -len(".ipynb")] if nb.endswith(".ipynb") else nb


def dependencies(root: Path, nb: str) -> list[str]:
    """Notebooks whose results ``nb`` reads, declared in its metadata as
    ``{"qlib": {"depends": ["<part>/<nb>.ipynb", …]}}``; the runner runs them first and re-runs
    ``nb`` whenever one of them re-ran."""
    meta = json.loads((Path(root) / "chapters" / nb).read_text()).get("metadata", {})
    deps = (meta.get("qlib") or {}).get("depends") or []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ValueError(f"chapters/{nb}: metadata qlib.depends must be a list of notebook paths, got {deps!r}")
    return deps
