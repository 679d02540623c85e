"""Simulation 2 of paper 003 (§6, Table 1): discretising MNIST and its diversity constant C(P).

Protocol (paper 003 §6 and its footnote 2): fit MiniBatchKMeans with K = 20, 50, 100 clusters on three
disjoint sets of 1000 held-out training images; C(P) is computed from the cluster frequencies of
the remaining images, either of the cluster index (:func:`cluster_law`, the reading the book
compares with Table 1) or of the (cluster, label) pair (:func:`cluster_label_law`, the law of the
discretised data point); the Δ column of Table 1 is C(P)/(2√n) (the upper bound of Corollary 5.4.1).

Classifier (paper: 784-256-256-10 ReLU network, cross-entropy, Adam lr 0.01, 500 iterations; the
paper does not say how discretised images are formed nor how models are tested). Our documented
reading: a discretised image is replaced by its cluster centroid and keeps its label; training is
full batch; accuracies are reported on the raw MNIST test images, on the discretised test images
and on the training set. A discretised training set has at most K×10 distinct (image, label) pairs,
so it is trained as a weighted set of distinct pairs (the same full-batch gradient, much cheaper).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from qlib.validation import check_alloc, check_array, check_callable, check_float, check_int, check_seed

from ..devices import resolve
from .bounds import C_P


def check_features(X, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """A finite non-empty (N, d) real matrix of images (d = ``n_features`` when given), returned as given
    (``np.asarray``, its dtype kept: a float32 MNIST matrix is neither copied nor changed). ``name``: what
    the messages call it."""
    if X is None or isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be an (N, d) array of floats, got {type(X).__name__}")
    try:
        arr = np.asarray(X)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise ValueError(f"{name} must be a rectangular (N, d) array of floats: {exc}") from None
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be an (N, d) array of floats, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty (N, d) array, got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} columns (the features the clustering was fitted on), "
                         f"got shape {arr.shape}")
    return arr


def check_labels(y, n: int, name: str = "y", *, high: int | None = None) -> np.ndarray:
    """Integer class labels >= 0 (<= ``high``), one per row of the matching matrix (``n`` rows).
    ``name``: what the messages call them."""
    n = check_int("n", n, low=1)
    arr = check_array(name, y, ndim=1, dtype="int", low=0, high=high)
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have one label per row (n = {n}), got {arr.shape[0]}")
    return arr


def _check_km(km):
    if not hasattr(km, "predict") or not hasattr(km, "n_features_in_"):
        raise TypeError(f"km must be a fitted k-means model (see fit_kmeans), got {type(km).__name__}")
    return km


def flatten_images(images: np.ndarray) -> np.ndarray:
    """(N, 28, 28) uint8 → (N, 784) float32 in [0, 1] (an (N, 784) array of pixel values is also accepted)."""
    if isinstance(images, np.ndarray) and images.dtype == np.uint8:  # the common case: no int64 copy
        arr = images
        if arr.ndim not in (2, 3) or arr.size == 0:
            raise ValueError(f"images must be a non-empty (N, 28, 28) or (N, 784) array, got shape {arr.shape}")
    else:
        arr = check_array("images", images, ndim=(2, 3), dtype="int", low=0, high=255)
    return (arr.astype(np.float32) / 255.0).reshape(len(arr), -1)


def split_for_clustering(n_total: int, n_fit: int, n_clusterings: int, seed: int = 0):
    """Disjoint index sets: ``n_clusterings`` fitting sets of ``n_fit`` images, and the rest."""
    n_total = check_int("n_total", n_total, low=1)
    n_fit = check_int("n_fit", n_fit, low=1)
    n_clusterings = check_int("n_clusterings", n_clusterings, low=1)
    seed = check_seed("seed", seed)
    if n_fit * n_clusterings > n_total:
        raise ValueError(f"n_fit * n_clusterings = {n_fit * n_clusterings} exceeds n_total = {n_total}")
    check_alloc("n_total", n_total, 8 * 2, value=n_total, what="a permutation of the images")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_total)
    fits = [perm[i * n_fit:(i + 1) * n_fit] for i in range(n_clusterings)]
    return fits, perm[n_clusterings * n_fit:]


def fit_kmeans(X: np.ndarray, K: int, seed: int = 0):
    """MiniBatchKMeans with K clusters (scikit-learn, as in the paper; clustering not optimised).

    Runs single-threaded: on a shared 2-core machine the OpenMP pool is 10x slower under load.
    """
    # deferred: scikit-learn and threadpoolctl are optional (the book extra)
    from sklearn.cluster import MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    X = check_features(X, "X")
    K = check_int("K", K, low=1, high=len(X))
    seed = check_seed("seed", seed)
    with threadpool_limits(1):
        return MiniBatchKMeans(n_clusters=K, random_state=seed, n_init=3, batch_size=1024).fit(X)


def cluster_law(km, X: np.ndarray) -> np.ndarray:
    """Frequencies of the cluster indices of the rows of X (atoms of mass 0 dropped)."""
    km = _check_km(km)
    lab = km.predict(check_features(X, "X", km.n_features_in_))
    f = np.bincount(lab, minlength=km.n_clusters).astype(np.float64)
    f = f[f > 0]
    return f / f.sum()


def cluster_label_law(km, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Frequencies of the (cluster, label) pairs — the law of the discretised data point (labels 0..9)."""
    km = _check_km(km)
    X = check_features(X, "X", km.n_features_in_)
    y = check_labels(y, len(X), high=9)
    lab = km.predict(X) * 10 + y
    f = np.bincount(lab).astype(np.float64)
    f = f[f > 0]
    return f / f.sum()


def delta_bound_column(C: float, n: int) -> float:
    """Table 1's Δ column: the Corollary 5.4.1 upper bound C(P)/(2√n)."""
    C = check_float("C", C, low=0.0)
    n = check_int("n", n, low=1, integral_float=True)
    return C / (2 * math.sqrt(n))


def discretise(km, X: np.ndarray) -> np.ndarray:
    """Replace each image by its cluster centroid (our reading of 'discretised dataset')."""
    km = _check_km(km)
    return km.cluster_centers_[km.predict(check_features(X, "X", km.n_features_in_))].astype(np.float32)


def distinct_pairs(X: np.ndarray, y: np.ndarray):
    """Distinct (row, label) pairs with their multiplicities (for weighted full-batch training)."""
    X = check_features(X, "X")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    y = check_labels(y, len(X))
    key = np.concatenate([X, y.astype(X.dtype)[:, None]], axis=1)
    u, inv, cnt = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return u[:, :-1], u[:, -1].astype(np.int64), cnt.astype(np.float32)


def train_mlp_classifier(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, *,
                         hidden: int = 256, iters: int = 500, lr: float = 0.01, seed: int = 0,
                         device: str = "auto"):
    """784-h-h-10 ReLU network, weighted cross-entropy, full-batch Adam. Returns a predict function."""
    X = check_features(X, "X")
    y = check_labels(y, len(X), high=9)
    if weights is not None:
        weights = check_array("weights", weights, ndim=1, low=0.0)
        if weights.shape[0] != len(X):
            raise ValueError(f"weights must have one entry per row of X ({len(X)}), got {weights.shape[0]}")
        if not weights.sum() > 0:
            raise ValueError("weights must have a positive sum")
    hidden = check_int("hidden", hidden, low=1)
    iters = check_int("iters", iters, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    seed = check_seed("seed", seed)
    dev = resolve(device)
    g = torch.Generator().manual_seed(int(seed))
    torch_X = torch.as_tensor(X, dtype=torch.float32, device=dev)
    torch_y = torch.as_tensor(y, dtype=torch.int64, device=dev)
    w = torch.ones(len(X)) if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    w = (w / w.sum()).to(dev)
    dims = [X.shape[1], hidden, hidden, 10]
    check_alloc("hidden", (X.shape[1] + hidden + 10) * hidden * 4 + 3 * len(X) * hidden, 4, value=hidden,
                what="the network's weights (with Adam's moments) and hidden activations")
    params = []
    for a, b in zip(dims[:-1], dims[1:]):  # PyTorch-default (Kaiming-uniform) initialisation
        bound = 1 / math.sqrt(a)
        params.append(((torch.rand(a, b, generator=g) * 2 - 1) * bound).to(dev).requires_grad_(True))
        params.append(((torch.rand(b, generator=g) * 2 - 1) * bound).to(dev).requires_grad_(True))
    opt = torch.optim.Adam(params, lr=lr)

    def forward(inp):
        h = inp
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i < len(params) - 2:
                h = torch.relu(h)
        return h

    for _ in range(int(iters)):
        opt.zero_grad(set_to_none=True)
        loss = (torch.nn.functional.cross_entropy(forward(torch_X), torch_y, reduction="none") * w).sum()
        loss.backward()
        opt.step()

    def predict(Xq: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = [forward(torch.as_tensor(Xq[i:i + 10000], dtype=torch.float32, device=dev)).argmax(1).cpu().numpy()
                   for i in range(0, len(Xq), 10000)]
        return np.concatenate(out)

    return predict


def accuracy(predict, X: np.ndarray, y: np.ndarray) -> float:
    """Fraction of the rows of X whose prediction equals the label in y."""
    predict = check_callable("predict", predict)
    X = check_features(X, "X")
    y = check_labels(y, len(X))
    return float(np.mean(predict(X) == y))


__all__ = [
    "flatten_images", "split_for_clustering", "fit_kmeans", "cluster_law", "cluster_label_law",
    "delta_bound_column", "discretise", "distinct_pairs", "train_mlp_classifier", "accuracy", "C_P",
    "check_features", "check_labels",
]
