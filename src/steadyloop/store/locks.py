"""Which logged runs are live right now: a lock each live run holds while it runs.

A status row cannot say whether a run is live: a process killed with `kill -9` leaves "running"
behind for ever. So a run that starts or resumes takes a lock, and the operating system drops
it when the process dies, however it dies. The locks are byte-range locks on one small file
beside the run log (`runs.db-lock`), one byte per run at an offset hashed from the run id.
Open-file-description locks (Linux) conflict between two stores in one process as well as
between processes; elsewhere POSIX record locks stand in, which see other processes only. Runs
of one store in one process are told apart by the set of ids it holds.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import sys
import threading
from pathlib import Path

__all__ = ["RunLocks"]

_SET_LOCK = getattr(fcntl, "F_OFD_SETLK", fcntl.F_SETLK)
_OFFSETS = 1 << 62


class RunLocks:
    """The live-run locks of one run log; `claim` and `release` are thread-safe."""

    def __init__(self, log_path: Path) -> None:
        self.path = log_path.with_name(log_path.name + "-lock")
        self._fd: int | None = None
        self._held: set[str] = set()
        self._guard = threading.Lock()

    def claim(self, run_id: str) -> bool:
        """Takes run `run_id`'s lock; False when a live run (here or elsewhere) holds it."""
        with self._guard:
            if run_id in self._held:
                return False
            if not _lock(self._file(), _offset(run_id), fcntl.F_WRLCK):
                return False
            self._held.add(run_id)
            return True

    def release(self, run_id: str) -> None:
        """Drops run `run_id`'s lock (a no-op when it is not held here)."""
        with self._guard:
            if run_id in self._held and self._fd is not None:
                self._held.discard(run_id)
                _lock(self._fd, _offset(run_id), fcntl.F_UNLCK)

    def close(self) -> None:
        """Drops every lock this store holds."""
        with self._guard:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None
            self._held.clear()

    def _file(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._fd


def _offset(run_id: str) -> int:
    digest = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % _OFFSETS


def _lock(fd: int, offset: int, kind: int) -> bool:
    """Sets (or clears) a one-byte lock without waiting; False when another holder has it."""
    # struct flock with l_pid 0, as open-file-description locks require; macOS orders it
    # l_start, l_len, l_pid, l_type, l_whence, Linux l_type, l_whence, l_start, l_len, l_pid.
    if sys.platform == "darwin":
        request = struct.pack("@qqihh", offset, 1, 0, kind, os.SEEK_SET)
    else:
        request = struct.pack("@hhqqi4x", kind, os.SEEK_SET, offset, 1, 0)
    try:
        fcntl.fcntl(fd, _SET_LOCK, request)
    except (BlockingIOError, PermissionError):
        return False
    return True
