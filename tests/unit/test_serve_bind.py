"""The socket `engram serve` binds before anything else starts."""

from __future__ import annotations

import socket

import pytest

from app.serve import PortUnavailable, bind


def test_the_listening_socket_is_tcp_with_nodelay_so_responses_never_wait_for_a_delayed_ack() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        # asyncio sets TCP_NODELAY on accepted connections only when the socket's proto says TCP.
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert sock.get_inheritable()  # the workers share it
        with socket.create_connection(sock.getsockname()[:2], timeout=2):
            pass  # listening already: connections queue until the server accepts them
    finally:
        sock.close()


def test_a_busy_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PortUnavailable, match=f"port {port} on 127.0.0.1 is already in use"):
            bind("127.0.0.1", port)
