"""Papermill batch runner.

Executes the book's notebooks (all, or a subset) under a named parameter profile into an output
tree that the book is then built from::

    <output>/chapters/<part>/<nb>.ipynb      executed notebooks (only complete ones ever land here)
    <output>/_results/<part>/<nb>/           each notebook's result files (comparisons.csv, …)
    <output>/.stamps/<part>/<nb>.json        input hash of the last successful run
    <output>/.failed/<part>/<nb>.ipynb       the partially executed notebook of a failed run

A notebook is skipped when its inputs — the notebook, its parameters, the ``qlib`` sources, the
device and data directory (and, for the appendix, every other notebook's results) — hash to the
stamp of its last successful run, unless ``force``. Every selected notebook runs even when an earlier
one fails; the outcome lists one line per failure.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from . import profiles as _profiles
from .compare import FILENAME as COMPARISONS_FILE

AGGREGATOR_PARTS = ("appendix",)  # notebooks that read every other notebook's results


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------
def find_root(start: Path | None = None) -> Path:
    """The book root: the first folder upwards from ``start`` (default: cwd) holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").is_file() and (p / "chapters").is_dir():
            return p
    raise FileNotFoundError(f"no book root (a folder with _toc.yml and chapters/) above {here}")


def _toc_entries(node: Any) -> Iterable[tuple[str, str]]:
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
    chosen = []
    for nb in all_nbs:
        for pat in pats:
            pat = pat.removeprefix("chapters/")
            if nb == pat or nb.startswith(pat) or fnmatch.fnmatch(nb, pat) or nb == pat + ".ipynb":
                chosen.append(nb)
                break
    if not chosen:
        raise ValueError(f"no notebook matches {pats}; known: {', '.join(all_nbs)}")
    return chosen


# ---------------------------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------------------------
def _hash_files(files: Iterable[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.relative_to(base).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def qlib_source_hash() -> str:
    pkg = Path(__file__).resolve().parents[1]
    return _hash_files((p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts), pkg)


def _results_hash(results: Path, exclude: Path) -> str:
    files = [p for p in results.rglob(COMPARISONS_FILE) if exclude not in p.parents] if results.is_dir() else []
    return _hash_files(files, results)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    notebook: str
    status: str  # "ran", "skipped", "failed"
    seconds: float = 0.0
    error: str = ""


@dataclass
class RunReport:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> str:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in ("ran", "skipped", "failed")}
        lines = [f"{counts['ran']} ran, {counts['skipped']} skipped, {counts['failed']} failed"]
        lines += [f"FAILED {o.notebook}: {o.error}" for o in self.failures]
        return "\n".join(lines)


def _error_line(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    line = f"{name}: {value}".strip().splitlines()
    return line[0][:300] if line else name


def _mark_injected(nb_path: Path) -> None:
    """Hide papermill's injected-parameters cell in the book (tag it remove-cell)."""
    nb = json.loads(nb_path.read_text())
    for cell in nb.get("cells", []):
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def run(
    *,
    root: Path | None = None,
    profile: str = "default",
    only: Iterable[str] | None = None,
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    output_dir: str | os.PathLike | None = None,
    force: bool = False,
    timeout: int | None = None,
    progress: bool = True,
    log=print,
) -> RunReport:
    """Execute the selected notebooks under ``profile``; see the module docstring."""
    import papermill as pm
    from tqdm.auto import tqdm

    if device not in ("auto", "cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
    root = find_root(root)
    params_by_nb = _profiles.load(root, profile)
    selected = select(notebooks(root), only)
    missing = [nb for nb in selected if nb not in params_by_nb]
    if missing:
        raise ValueError(f"profiles/{profile}.yml has no entry for: {', '.join(missing)}")

    out = Path(output_dir or root / "_build" / "book").resolve()
    results = out / "_results"
    data = str(Path(data_dir).expanduser().resolve()) if data_dir else os.environ.get("QLIB_DATA_DIR", "")
    if data:
        os.environ["QLIB_DATA_DIR"] = data  # loaders in the kernels read it
    src_hash = qlib_source_hash()

    report = RunReport()
    bar = tqdm(selected, desc=f"profile {profile}", unit="nb", disable=not progress, file=sys.stderr)
    for nb in bar:
        bar.set_postfix_str(nb)
        src = root / "chapters" / nb
        rel = Path(nb)
        target = out / "chapters" / rel
        stamp_file = out / ".stamps" / rel.with_suffix(".json")
        nb_results = results / rel.with_suffix("")
        params = dict(params_by_nb[nb])
        params.update(
            profile=profile,
            device=device,
            data_dir=data or None,
            out_dir=str(nb_results),
            results_dir=str(results),
        )
        h = hashlib.sha256()
        h.update(src.read_bytes())
        h.update(json.dumps(params, sort_keys=True, default=str).encode())
        h.update(src_hash.encode())
        if rel.parts[0] in AGGREGATOR_PARTS:
            h.update(_results_hash(results, nb_results).encode())
        stamp = h.hexdigest()

        if not force and target.is_file() and stamp_file.is_file():
            if json.loads(stamp_file.read_text()).get("hash") == stamp:
                report.outcomes.append(Outcome(nb, "skipped"))
                log(f"[skip] {nb} (inputs unchanged)")
                continue

        tmp = out / ".tmp" / rel
        tmp.parent.mkdir(parents=True, exist_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        log(f"[run ] {nb}")
        try:
            pm.execute_notebook(
                str(src),
                str(tmp),
                parameters=params,
                kernel_name="python3",
                cwd=str(target.parent),
                progress_bar=False,
                execution_timeout=timeout,
                report_mode=False,
            )
            _mark_injected(tmp)
            os.replace(tmp, target)  # atomic: the book only ever sees complete notebooks
            stamp_file.parent.mkdir(parents=True, exist_ok=True)
            stamp_file.write_text(json.dumps({"hash": stamp, "profile": profile, "when": time.time()}))
            dt = time.perf_counter() - t0
            report.outcomes.append(Outcome(nb, "ran", dt))
            log(f"[ ok ] {nb} ({dt:.1f} s)")
        except Exception as exc:  # papermill raises PapermillExecutionError, kernels may die, …
            dt = time.perf_counter() - t0
            failed = out / ".failed" / rel
            failed.parent.mkdir(parents=True, exist_ok=True)
            if tmp.exists():
                os.replace(tmp, failed)
            for stale in (target, stamp_file):  # never leave a stale result in the book
                if stale.exists():
                    stale.unlink()
            msg = _error_line(exc)
            report.outcomes.append(Outcome(nb, "failed", dt, msg))
            log(f"[FAIL] {nb} ({dt:.1f} s): {msg}  — see {failed}")
            if not getattr(exc, "ename", None):
                log(traceback.format_exc(limit=3))
    shutil.rmtree(out / ".tmp", ignore_errors=True)
    return report


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------
STATIC = ("_config.yml", "_toc.yml", "references.bib")


def _prune_toc(node: Any, out: Path) -> Any:
    """Drop glob entries that match no executed notebook (a part run with ``--only`` builds too)."""
    if isinstance(node, list):
        kept = [_prune_toc(c, out) for c in node]
        return [c for c in kept if c is not None]
    if isinstance(node, dict):
        if "glob" in node and not any(out.glob(node["glob"])):
            return None
        new = {}
        for k, v in node.items():
            v = _prune_toc(v, out) if isinstance(v, (list, dict)) else v
            if k in ("sections", "chapters", "parts") and not v:
                continue
            new[k] = v
        return new
    return node


def stage(root: Path, out: Path) -> None:
    """Copy the book's static sources (config, bibliography, Markdown pages and assets below
    ``chapters/``) next to the executed notebooks in ``out``, with a table of contents pruned of
    globs that match no executed notebook."""
    for name in STATIC:
        if name != "_toc.yml":
            shutil.copy2(root / name, out / name)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    (out / "_toc.yml").write_text(yaml.safe_dump(_prune_toc(toc, out), sort_keys=False))
    for p in (root / "chapters").rglob("*"):
        if p.is_file() and p.suffix != ".ipynb" and not any(part.startswith(".") or part == "_results" for part in p.parts):
            dest = out / p.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)


def build(*, root: Path | None = None, output_dir: str | os.PathLike | None = None, html_parent: Path | None = None) -> int:
    """Build the HTML book from the executed notebooks (warnings are errors, full rebuild).

    The HTML lands in ``<html_parent>/_build/html`` (default: the book root, i.e. ``_build/html``).
    Returns jupyter-book's exit status.
    """
    import subprocess

    root = find_root(root)
    out = Path(output_dir or root / "_build" / "book").resolve()
    out.mkdir(parents=True, exist_ok=True)
    stage(root, out)
    parent = Path(html_parent or root).resolve()
    html = parent / "_build" / "html"
    if html.exists():
        shutil.rmtree(html)
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", "--all", "-W", "-n", "--keep-going",
           "--path-output", str(parent), str(out)]
    return subprocess.call(cmd)
