"""Block the network except loopback: connections, UDP datagrams and DNS lookups of other hosts fail
loudly. This is Python-level only: the C type ``_socket.socket`` cannot be patched, and a child process
that does not import ``sitecustomize`` (``python -I``, curl) is not covered — for those the test command
runs in a network namespace with only loopback (``tests/netns-run``) where the OS allows it."""

import ipaddress
import socket

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True

    _connect = socket.socket.connect
    _connect_ex = socket.socket.connect_ex

    def _allowed(address) -> bool:
        if isinstance(address, tuple) and address:
            host = address[0]
            if host in ("localhost",):
                return True
            try:
                return ipaddress.ip_address(host).is_loopback
            except ValueError:
                return False
        return True  # AF_UNIX paths

    def _guard(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _allowed(address):
            raise ConnectionRefusedError(f"network access blocked in tests: connect to {address!r}")
        return _connect(self, address)

    def _guard_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _allowed(address):
            raise ConnectionRefusedError(f"network access blocked in tests: connect to {address!r}")
        return _connect_ex(self, address)

    socket.socket.connect = _guard
    socket.socket.connect_ex = _guard_ex

    _sendto = socket.socket.sendto

    def _guard_sendto(self, data, *args):
        address = args[-1] if args else None
        if self.family in (socket.AF_INET, socket.AF_INET6) and address is not None and not _allowed(address):
            raise ConnectionRefusedError(f"network access blocked in tests: sendto {address!r}")
        return _sendto(self, data, *args)

    socket.socket.sendto = _guard_sendto

    _getaddrinfo = socket.getaddrinfo

    def _guard_getaddrinfo(host, *args, **kwargs):
        if host not in (None, "localhost", "127.0.0.1", "::1", "") and not str(host).startswith("127."):
            raise ConnectionRefusedError(f"network access blocked in tests: DNS lookup of {host!r}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = _guard_getaddrinfo
