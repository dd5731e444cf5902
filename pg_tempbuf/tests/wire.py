"""Just enough of PostgreSQL's frontend/backend protocol (version 3) to bind a named portal
and run it later, after other statements: libpq has no call that separates Bind from
Execute.  Trust authentication over the cluster's Unix socket only."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path


class WireError(Exception):
    """The server answered with an ErrorResponse."""


@dataclass
class Results:
    rows: list[list[str | None]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def _cstr(text: str) -> bytes:
    return text.encode() + b"\0"


class WireSession:
    def __init__(self, socket_dir: Path, port: int, user: str, database: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(socket_dir / f".s.PGSQL.{port}"))
        body = struct.pack("!i", 196608) + _cstr("user") + _cstr(user) + _cstr("database") + _cstr(database) + b"\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        self._until_ready()

    def close(self) -> None:
        self.sock.sendall(b"X" + struct.pack("!i", 4))
        self.sock.close()

    def __enter__(self) -> WireSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, kind: bytes, body: bytes) -> None:
        self.sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

    def _recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise WireError("connection closed")
            data += chunk
        return data

    def _until_ready(self) -> Results:
        results = Results()
        error: str | None = None
        while True:
            kind = self._recv_exact(1)
            (length,) = struct.unpack("!i", self._recv_exact(4))
            body = self._recv_exact(length - 4)
            if kind == b"D":
                (ncols,) = struct.unpack("!h", body[:2])
                pos, row = 2, []
                for _ in range(ncols):
                    (size,) = struct.unpack("!i", body[pos : pos + 4])
                    pos += 4
                    row.append(None if size < 0 else body[pos : pos + size].decode())
                    pos += max(size, 0)
                results.rows.append(row)
            elif kind in (b"E", b"N"):
                fields = dict((f[:1], f[1:].decode()) for f in body.split(b"\0") if f)
                text = fields.get(b"M", "")
                if kind == b"E" and error is None:
                    error = f"{fields.get(b'C', '')}: {text}"
                elif kind == b"N":
                    results.notices.append(text)
            elif kind == b"Z":
                if error is not None:
                    raise WireError(error)
                return results

    def simple(self, sql: str) -> Results:
        """A simple-protocol Query message (any number of statements)."""
        self._send(b"Q", _cstr(sql))
        return self._until_ready()

    def bind_change_execute(self, query: str, change: str) -> Results:
        """Parse and bind query as portal p, then run change in the unnamed portal, then
        execute p, all before one Sync: one implicit transaction.  Returns p's rows."""
        self._send(b"P", _cstr("q") + _cstr(query) + struct.pack("!h", 0))
        self._send(b"B", _cstr("p") + _cstr("q") + struct.pack("!hhh", 0, 0, 0))
        self._send(b"P", _cstr("") + _cstr(change) + struct.pack("!h", 0))
        self._send(b"B", _cstr("") + _cstr("") + struct.pack("!hhh", 0, 0, 0))
        self._send(b"E", _cstr("") + struct.pack("!i", 0))
        self._send(b"E", _cstr("p") + struct.pack("!i", 0))
        self._send(b"S", b"")
        return self._until_ready()
