"""The private wire between a store host and its workers: length-prefixed pickles over a Unix socket.

A call is ``(method, args, kwargs)``; an answer is ``("ok", value)`` or ``("error", exception)``. Pickle is only
safe between processes that trust each other: the socket lives in a folder only its user can enter (``0700``) and
is itself ``0600``, and the host checks each peer's user id (``SO_PEERCRED``) before reading a byte from it.

Usage::

    send_message(sock, ("search_dense", (vector,), {"top_k": 10}))
    status, value = recv_message(sock)
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!Q")
#: Largest message accepted (a whole ``filter_documents`` of a big index travels in one answer).
MAX_MESSAGE_BYTES = 4 * 1024**3


class WireClosedError(ConnectionError):
    """The other end closed the connection (between two messages, or in the middle of one)."""


def send_message(sock: socket.socket, message: Any) -> None:
    """Send one pickled message with its length."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise WireClosedError("the store host's connection closed")
        got += n
    return bytes(buffer)


def recv_message(sock: socket.socket) -> Any:
    """Receive one message sent by :func:`send_message`."""
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if size > MAX_MESSAGE_BYTES:
        raise WireClosedError(f"a message of {size} bytes is over the limit of {MAX_MESSAGE_BYTES}")
    return pickle.loads(_recv_exactly(sock, size))  # a peer of the same user (same_user)


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket (Linux ``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def same_user(sock: socket.socket) -> bool:
    """Whether the peer runs as this process's user."""
    return peer_uid(sock) == os.getuid()
