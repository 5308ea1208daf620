"""Reaching the Dask scheduler ``--address`` names: the address checked by scheme and form, then
the server there asked for Dask's greeting within a timeout, before a Dask client is made.

A Dask client pointed at something that is not a scheduler fails badly: at a listener that
accepts and says nothing it waits past its own timeout (killed at 600 s in a test), and at an
HTTP or any other server it takes the first bytes it reads for a message length (an allocation of
3 EiB, "Maximum allowed dimension exceeded"), then stalls 20 s more closing. A scheduler greets
each connection at once with a handshake (distributed's TCP framing: an 8-byte length, a frame
count, the frames' lengths, then a msgpack map that names its Python version), so
:func:`probe` reads that greeting itself, bounded in time and size, and says what it found.
Only TCP is spoken: ``HOST:PORT`` or ``tcp://HOST:PORT`` (TLS and UCX need a security or
transport setup costsim does not make).
"""

from __future__ import annotations

import re
import socket
import struct
import time

MAX_GREETING_BYTES = 1 << 16  # a scheduler's handshake is about 60 bytes
MAX_GREETING_FRAMES = 64
_ADDRESS = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://)?"
                      r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]@?#]+):(?P<port>[0-9]{1,5})")
EXAMPLE = "e.g. 10.0.0.5:8786 or tcp://10.0.0.5:8786, as `dask scheduler` prints it"


class SchedulerProblem(ValueError):
    """What is wrong with an address or the server at it (the message says what to do)."""


def parse_address(address: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT`` or ``tcp://HOST:PORT`` (an IPv6 host in brackets);
    SchedulerProblem for another scheme or anything else."""
    text = address.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else "tcp"
    if scheme != "tcp":
        why = ("a web address: a scheduler's dashboard (port 8787) is not the scheduler"
               if scheme in ("http", "https") else
               f"{scheme}:// needs a security or transport setup costsim does not make")
        raise SchedulerProblem(f"--address {address!r}: costsim reaches a Dask scheduler over TCP only ({why}); "
                               f"give HOST:PORT or tcp://HOST:PORT ({EXAMPLE})")
    m = _ADDRESS.fullmatch(text)
    port = int(m.group("port")) if m else 0
    if m is None or not 0 < port < 65536:
        raise SchedulerProblem(f"--address {address!r} is not HOST:PORT of a Dask scheduler ({EXAMPLE})")
    return m.group("host").strip("[]"), port


def _read(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes, or TimeoutError at ``deadline`` (monotonic seconds), or EOFError."""
    out = bytearray()
    while len(out) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


def is_greeting(body: bytes) -> bool:
    """Whether ``body`` (what follows the 8-byte length) is a Dask handshake: a frame count, the
    frames' lengths, and a first frame that is a msgpack map naming the peer's Python."""
    import msgpack  # distributed's own dependency: there whenever Dask is

    if len(body) < 16:
        return False
    (count,) = struct.unpack_from("<Q", body)
    head = 8 * (1 + count)
    if not 1 <= count <= MAX_GREETING_FRAMES or head > len(body):
        return False
    lengths = struct.unpack_from(f"<{count}Q", body, 8)
    if head + sum(lengths) > len(body):
        return False
    try:
        message = msgpack.unpackb(body[head:head + lengths[0]], raw=False)
    except Exception:  # noqa: BLE001 — any bytes at all may come from a server that is not Dask
        return False
    return isinstance(message, dict) and "python" in message


def probe(address: str, timeout_s: float) -> None:
    """Connect to ``address`` and read a Dask scheduler's greeting within ``timeout_s`` seconds;
    SchedulerProblem saying what was there instead (nothing listening, silence, other bytes)."""
    host, port = parse_address(address)
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as err:
        raise SchedulerProblem(f"cannot reach the Dask scheduler at {address}: {err.strerror or err}; start it "
                               f"(`dask scheduler`) or check the address ({EXAMPLE})") from None
    not_dask = (f"the server at {address} is not a Dask scheduler: it {{what}}, where a scheduler greets each "
                f"client at once; check the address ({EXAMPLE}; 8787 is its dashboard)")
    with sock:
        try:
            (size,) = struct.unpack("<Q", _read(sock, 8, deadline))
            if not 0 < size <= MAX_GREETING_BYTES:
                raise SchedulerProblem(not_dask.format(what="answered with bytes that are not Dask's handshake"))
            if not is_greeting(_read(sock, size, deadline)):
                raise SchedulerProblem(not_dask.format(what="answered with bytes that are not Dask's handshake"))
        except TimeoutError:  # socket.timeout is TimeoutError
            raise SchedulerProblem(not_dask.format(what=f"accepted the connection and sent nothing for "
                                                        f"{timeout_s:g} s")) from None
        except EOFError:
            raise SchedulerProblem(not_dask.format(what="closed the connection without a word")) from None
        except OSError as err:
            raise SchedulerProblem(f"lost the connection to {address} while it was greeting: {err.strerror or err}; "
                                   "try again, or check the address") from None
