"""Imported at start-up by every Python process with this folder on PYTHONPATH (the notebook kernels
the book tests start): with QLIB_BLOCK_NETWORK=1 the network is blocked except loopback."""

import os

if os.environ.get("QLIB_BLOCK_NETWORK") == "1":
    import _netblock

    _netblock.install()
