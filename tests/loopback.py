"""``require_loopback_udp(*ips)`` skips a test unless this machine lets a bare UDP socket bind
127.0.0.1 and each of ``ips`` (on Linux all of 127/8 is local; elsewhere often only 127.0.0.1).
The probe binds port 0, so it never collides with a port a test uses: once it passed, an error
from the project's own sockets (UdpTransport and what builds on it) fails the test."""
from __future__ import annotations

import socket

import pytest


def loopback_udp_absent_reason(*ips: str) -> str | None:
    """Why UDP on these loopback addresses cannot work here (None if it can)."""
    for ip in ("127.0.0.1", *ips):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind((ip, 0))
        except OSError as e:
            return f"cannot bind a UDP socket to {ip}: {e}"
    return None


def require_loopback_udp(*ips: str) -> None:
    why = loopback_udp_absent_reason(*ips)
    if why:
        pytest.skip(why)
