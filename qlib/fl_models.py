"""The models of the federated experiments (paper 002 §5.3, App. I.4–I.7), inputs images
(B, C, H, W) or token ids (B, T): LeNet-5, a fully connected network, a 2-layer CNN (the EMNIST model
of Reddi et al. 2021 without dropout), ResNet-9 and a character LSTM.

Every model is a pure function of its parameters (no running statistics, no dropout), so that
:mod:`qlib.fedavg` can train the clients of a round at once with ``torch.func.functional_call``
under ``vmap``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .validation import check_alloc, check_choice, check_int, check_tensor

__all__ = ["LeNet5", "MLP", "CNN2", "ResNet9", "CharLSTM"]


class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998) for 28×28 inputs (first convolution padded by 2), ReLU, max-pool."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, size: int = 28):
        """``size``: the input side, 28 (MNIST: the first convolution padded by 2) or 32 (CIFAR)."""
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        size = check_choice("size", check_int("size", size, low=1), (28, 32))
        check_alloc("in_channels and n_classes", in_channels * 6 * 25 + 84 * n_classes + 100_000, 4,
                    value=(in_channels, n_classes), what="the parameters (float32)")
        pad = 2 if size == 28 else 0
        self.c1 = nn.Conv2d(in_channels, 6, 5, padding=pad)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(_images(x))), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x.flatten(1))))))


def _images(x) -> torch.Tensor:
    """A batch of images (B, C, H, W) (or one, (C, H, W)), floating: kind and shape only — the forward pass of
    every local step (under ``torch.func.vmap`` in the batched FedAvg, where a pass over the values cannot
    run); the data are checked once, when the clients' data are built."""
    return check_tensor("x", x, ndim=(3, 4), finite=False, convert=False)


class MLP(nn.Module):
    """A fully connected network on flattened inputs (one hidden ReLU layer)."""

    def __init__(self, in_features: int = 784, hidden: int = 200, n_classes: int = 10):
        super().__init__()
        in_features = check_int("in_features", in_features, low=1)
        hidden = check_int("hidden", hidden, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        check_alloc("in_features, hidden and n_classes", (in_features + 1 + n_classes) * hidden + n_classes, 4,
                    value=(in_features, hidden, n_classes), what="the parameters (float32)")
        self.f1 = nn.Linear(in_features, hidden)
        self.f2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = check_tensor("x", x, finite=False, convert=False)
        if x.ndim < 2 or math.prod(x.shape[1:]) != self.f1.in_features:
            raise ValueError(f"x must be a batch (B, ...) of {self.f1.in_features} features each, got shape "
                             f"{tuple(x.shape)}")
        return self.f2(F.relu(self.f1(x.flatten(1))))


class CNN2(nn.Module):
    """The EMNIST CNN of Reddi et al. 2021 (two 3×3 convolutions 32/64, max-pool, dense 128),
    without its dropout layers (dropout would need per-client random streams inside vmap)."""

    def __init__(self, n_classes: int = 62):
        super().__init__()
        n_classes = check_int("n_classes", n_classes, low=1)
        check_alloc("n_classes", 129 * n_classes + 1_200_000, 4, value=n_classes, what="the parameters (float32)")
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.f1 = nn.Linear(12 * 12 * 64, 128)
        self.f2 = nn.Linear(128, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(_images(x))))), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


def _conv_bn(cin, cout, pool=False):
    # GroupNorm instead of BatchNorm: no running statistics, so the model is a pure function of its
    # parameters (needed by functional_call under vmap); one group per 32 channels
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.GroupNorm(max(1, cout // 32), cout), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class ResNet9(nn.Module):
    """ResNet-9 (the DAWNBench CIFAR network: prep 64, layer 128 + residual, layer 256, layer 512 +
    residual, global max-pool, linear) with GroupNorm in place of BatchNorm (see :func:`_conv_bn`)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10):
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        check_alloc("in_channels and n_classes", in_channels * 64 * 9 + 513 * n_classes + 7_000_000, 4,
                    value=(in_channels, n_classes), what="the parameters (float32)")
        self.prep = _conv_bn(in_channels, 64)
        self.l1 = _conv_bn(64, 128, pool=True)
        self.r1 = nn.Sequential(_conv_bn(128, 128), _conv_bn(128, 128))
        self.l2 = _conv_bn(128, 256, pool=True)
        self.l3 = _conv_bn(256, 512, pool=True)
        self.r3 = nn.Sequential(_conv_bn(512, 512), _conv_bn(512, 512))
        self.fc = nn.Linear(512, n_classes)

    def forward(self, x):
        x = self.l1(self.prep(_images(x)))
        x = x + self.r1(x)
        x = self.l3(self.l2(x))
        x = x + self.r3(x)
        return self.fc(torch.amax(x, dim=(-2, -1)))


class CharLSTM(nn.Module):
    """The Shakespeare next-character model of Reddi et al. 2021 (paper 002 §5.3, Figures 3/9): embedding 8,
    two LSTM layers of 256 units, a dense layer over the vocabulary; predicts every next character of the
    sequence. ``vocab`` 88: LEAF's 86 characters, padding (0) and out-of-vocabulary (87), the ids of
    :func:`qlib.data.load_shakespeare` and :mod:`qlib.shakespeare`; 822,040 parameters (Reddi et al.'s
    vocabulary of 90 gives about 820 K). (Run it with ``batched=False``: recurrent kernels do not batch
    over clients.)"""

    def __init__(self, vocab: int = 88, embed: int = 8, hidden: int = 256):
        super().__init__()
        vocab = check_int("vocab", vocab, low=1)
        embed = check_int("embed", embed, low=1)
        hidden = check_int("hidden", hidden, low=1)
        check_alloc("vocab, embed and hidden", vocab * embed + 4 * hidden * (embed + 3 * hidden + 4) + (hidden + 1) * vocab,
                    4, value=(vocab, embed, hidden), what="the parameters (float32)")
        self.emb = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        x = check_tensor("x", x, ndim=2, floating=False, finite=False, convert=False)
        if x.is_floating_point():
            raise TypeError(f"x must be a tensor of token ids (integers), got dtype {x.dtype}")
        if x.is_cuda:
            # cuDNN's fused LSTM reads its weights' storage (``flatten_parameters`` → ``data_ptr``), which the
            # tensors of torch.func's transforms (``grad`` and ``vmap`` of the FedAvg engine) do not have: the
            # run fails with "Cannot access data pointer of Tensor that doesn't have storage" (seen on an H200,
            # benchmarks/results/gpu-2026-11-28). Without cuDNN, torch's LSTM is composed of matrix products
            # and pointwise gates, which both transforms handle; the same numbers as the CPU path.
            with torch.backends.cudnn.flags(enabled=False):
                h, _ = self.lstm(self.emb(x))
        else:
            h, _ = self.lstm(self.emb(x))
        return self.out(h).transpose(1, 2)  # (B, vocab, T): cross-entropy over every position
