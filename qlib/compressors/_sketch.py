"""Count-Sketch (Charikar et al. 2002), the linear sketch of paper 002's baselines: the server sums the
clients' sketches and decodes once; the error of that mean measured from the sketch of the rows' mean
(:class:`~qlib.compressors._fast_errors.ShortcutCompressor`)."""

from __future__ import annotations

import torch

from .. import _kernels
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..devices import resolve
from ..validation import check_alloc, check_int, check_seed, skip_nested
from ._base import FLOAT_BITS, Message, check_rows, fixed_bits
from ._fast_errors import ShortcutCompressor
from ._stages import MeanError, Stage

__all__ = ["CountSketch"]


class CountSketch(ShortcutCompressor):
    """Count-Sketch with ``rows`` rows of ``c = ⌊b·d/(32·rows)⌋`` 32-bit counters (so ≈ ``b`` bits per
    coordinate). The hashes come from the seed and are shared by all clients, so the server sums the
    clients' sketches and decodes once (:meth:`mean`); estimate = median over rows of
    ``σ_j(i)·T[j, h_j(i)]`` (with ``rows = 1``, the authors' DRIVE setting, it is unbiased)."""

    name = "Count-Sketch"
    shared_stage = Stage.MEAN  # (no shortcut per row)

    def __init__(self, bits: float, rows: int = 1):
        self.bits = _eden_theory.check_bits(bits)
        self.rows = check_int("rows", rows, low=1)

    def columns(self, d: int) -> int:
        """``c``, the counters per row of the sketch of a vector of ``d >= 1`` coordinates."""
        d = check_int("d", d, low=1)
        return max(1, int(self.bits * d) // (FLOAT_BITS * self.rows))

    def hash_draw(self, seed: int, d: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor, int]:
        """The seed's hashes of ``d`` coordinates: ``h`` (``rows × d`` counters in ``[0, c)``), the sign bytes
        (``⌈rows·d/8⌉`` values in [0, 255]; entry ``8 i + j`` of the flattened ``rows × d`` has the sign of
        bit ``j`` of byte ``i``, set: −1) and ``c`` (:meth:`columns`)."""
        seed, d, device = check_seed("seed", seed), check_int("d", d, low=1), resolve(device)
        check_alloc("rows", self.rows * d, 8 + 8, value=self.rows, what=f"the hashes and signs of {d} coordinates")
        g = _h.generator(seed, "sketch", device)
        c = self.columns(d)
        h = torch.randint(0, c, (self.rows, d), generator=g, device=device)
        # the signs: one random byte per 8 signs, bit j of byte i for entry 8 i + j (the sketch is float64
        # whatever the input, so the signs do not depend on its dtype; qlib.hadamard.rademacher draws 32-bit
        # words, which would give other signs)
        byts = torch.randint(0, 256, ((self.rows * d + 7) // 8,), generator=g, device=device, dtype=torch.int16)
        return h, byts, c

    def _hashes(self, seed, d, device):
        h, byts, c = self.hash_draw(seed, d, device)
        n = self.rows * d
        bits = (byts.unsqueeze(-1) >> torch.arange(8, device=device, dtype=torch.int16)) & 1
        sg = (1 - 2 * bits.reshape(-1)[:n]).to(torch.float64).reshape(self.rows, d)
        return h, sg, c

    def _compress(self, x, seed, hashes=None):
        batch, d = x.shape[:-1], x.shape[-1]
        h, sg, c = self._hashes(seed, d, x.device) if hashes is None else hashes
        flat = x.reshape(-1, d)
        check_alloc("rows", flat.shape[0] * self.rows * c, x.element_size(), value=self.rows, what="the sketches")
        T = torch.zeros((flat.shape[0], self.rows, c), dtype=x.dtype, device=x.device)
        for j in range(self.rows):
            T[:, j].index_add_(1, h[j], flat * sg[j].to(x.dtype))
        nb = fixed_bits(batch, FLOAT_BITS * self.rows * c)
        return Message(self.name, {"T": T.reshape(*batch, self.rows, c)}, nb, seed, tuple(x.shape))

    def _decode(self, T, seed, d, hashes=None):
        h, sg, _ = self._hashes(seed, d, T.device) if hashes is None else hashes
        est = torch.stack([T[..., j, :][..., h[j]] * sg[j].to(T.dtype) for j in range(self.rows)], -2)
        return est[..., 0, :] if self.rows == 1 else est.median(-2).values

    def _fields(self, shape):
        return {"T": ("float", (*shape[:-1], self.rows, self.columns(shape[-1])), None, None)}

    def _decompress(self, m):
        return self._decode(m.data["T"], m.seed, m.shape[-1])

    def mean(self, xs, seed):
        xs, seed = check_rows(xs), check_seed("seed", seed)
        with skip_nested():  # the hashes drawn once, for the clients and the server (the same draw)
            hs = self._hashes(seed, xs.shape[-1], xs.device)
            m = self._compress(xs, seed, hs)
            return self._decode(m.data["T"].mean(0), seed, xs.shape[-1], hs), m.total_bits

    def mean_by_linearity(self, row_mean: torch.Tensor, n_clients: int, seed: int) -> tuple[torch.Tensor, int]:
        """:meth:`mean` of ``n_clients`` rows whose mean is ``row_mean`` (a vector of ``d``), from one sketch:
        the sketch is linear, so the mean of the clients' sketches is the sketch of their mean, with the
        same hashes. The same estimate and bits as :meth:`mean` up to float rounding (the counters summed
        in another order: ~1e-7 relative in float32); one scatter of ``d`` values instead of one per
        client (Figure 8's sweep, :func:`qlib.compressors.squared_errors`)."""
        row_mean = _eden_theory.check_vectors(row_mean, "row_mean")
        if row_mean.dim() != 1:
            raise ValueError(f"row_mean must be a vector (the mean of the rows), got shape {tuple(row_mean.shape)}")
        n_clients = check_int("n_clients", n_clients, low=1)
        seed = check_seed("seed", seed)
        d = row_mean.shape[-1]
        with skip_nested():
            hs = self._hashes(seed, d, row_mean.device)
            m = self._compress(row_mean.unsqueeze(0), seed, hs)
            return self._decode(m.data["T"][0], seed, d, hs), n_clients * m.total_bits

    def _stage_mean_error(self, st, xmean):
        """From the sketch of the rows' mean (the sketch is linear: :meth:`mean_by_linearity`): one scatter per
        budget instead of one per client; with one row of counters on the compiled path, the sketch, its
        decoding and the distance in one pass (``sketch_mean_dist``: the same estimate, bit for bit)."""
        m, n = st.row_mean(), st.batch[0]
        if self.rows == 1 and st.kernel is not None and xmean.dtype == torch.float64 and xmean.device.type == "cpu":
            h, byts, cols = self.hash_draw(st.seed, st.d, m.device)
            err = st.kernel.sketch_mean_dist(_kernels.rows(m, st.d).reshape(-1), h.numpy().reshape(-1),
                                             byts.numpy(), cols, xmean.contiguous().numpy())
            return MeanError(torch.tensor(err, dtype=torch.float64), n * FLOAT_BITS * cols)
        est, nb = self.mean_by_linearity(m, n, st.seed)
        return MeanError(st.mean_dist(est.unsqueeze(0), xmean), nb)
