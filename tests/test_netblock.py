"""The tests' network block: what is closed in Python, and in the network namespace when there is one."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

IN_NETNS = os.environ.get("QLIB_NETNS") == "1"
FAR = ("203.0.113.1", 80)  # TEST-NET-3: never routable


def test_python_sockets_and_dns_are_blocked():
    with pytest.raises(ConnectionRefusedError, match="blocked"):
        socket.create_connection(FAR, timeout=2)
    with pytest.raises(ConnectionRefusedError, match="blocked"):
        socket.getaddrinfo("pypi.org", 443)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, pytest.raises(ConnectionRefusedError, match="sendto"):
        s.sendto(b"x", FAR)


def test_loopback_still_works():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    with socket.create_connection(srv.getsockname(), timeout=2):
        pass
    srv.close()


@pytest.mark.skipif(not IN_NETNS, reason="no network namespace on this machine (tests/netns-run said why)")
def test_children_that_bypass_sitecustomize_cannot_reach_the_network():
    code = "import socket\ntry:\n    socket.create_connection(('203.0.113.1', 80), timeout=3)\nexcept OSError as e:\n    print('blocked', e.errno)\n"
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=30).stdout
    assert out.startswith("blocked")
    if shutil.which("curl"):
        assert subprocess.run(["curl", "-sS", "--max-time", "3", "http://203.0.113.1/"], capture_output=True).returncode != 0
