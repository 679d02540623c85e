"""Test configuration: the network is blocked for this process and every child Python process
(notebook kernels) except loopback; shared fixtures for the book root and the data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NETBLOCK = Path(__file__).resolve().parent / "netblock"

# Block the network in this process and in children (kernels) before anything else is imported.
os.environ["QLIB_BLOCK_NETWORK"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NETBLOCK), os.environ.get("PYTHONPATH", "")]))
sys.path.insert(0, str(NETBLOCK))
import _netblock  # noqa: E402

_netblock.install()


@pytest.fixture(autouse=True)
def _downloads_off(monkeypatch):
    """Every test starts with downloads not allowed (``QLIB_DOWNLOAD`` unset), whatever an earlier
    test left in the environment: a missing data file must fail as missing, never reach the network."""
    monkeypatch.setenv("QLIB_DOWNLOAD", "0")
    monkeypatch.delenv("QLIB_DOWNLOAD")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread for every in-process test: on a shared 2-core CPU two spinning threads ran small
    batched ops up to 80x slower. Set before each test and restored after it, so that a test which changes
    the count (the runner's in-process paths) cannot change the tests after it: under pytest-xdist a
    worker's order of tests is not the serial one, and a test's speed should not depend on the test before it."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The offline datasets: $QLIB_DATA_DIR, else ../shared/data beside the repository."""
    cand = os.environ.get("QLIB_DATA_DIR") or str(ROOT.parent / "shared" / "data")
    path = Path(cand).resolve()
    if not (path / "mnist").is_dir():
        pytest.fail(f"offline data directory {path} not found: set QLIB_DATA_DIR (CI uses ../shared/data)")
    return path


@pytest.fixture(scope="session")
def qmis_tiny_study():
    """A real synthetic study of paper 001 at a tiny size (two laws, 6 runs, 8 epochs, the discriminator
    trained for one epoch): the claims tests of quantized-MIS chapters 03 and 04 share it."""
    import warnings

    from qlib.discriminator import DiscriminatorConfig
    from qlib.repro.quantized_mis import study

    kw = dict(runs=6, epochs=8, n=16, n_val=12, lr=1e-2, grid=[(1.5, 6), (3.0, 8)],
              discriminator=DiscriminatorConfig(epochs=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return study.run_study(study.StudyConfig(**kw))
