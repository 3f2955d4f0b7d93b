"""Writing a case directory whole or not at all.

A case is written into a private folder beside the one asked for
(``.NAME.sarsleuth-PID-XXXX.tmp``, so a rename can put it in place), then
renamed into place under a lock on the parent folder, swapping out the
earlier case it replaces in one step (``renameat2(RENAME_EXCHANGE)``, two
renames with interrupts held where the system lacks it).  An interrupted
run (Ctrl-C, SIGTERM) removes its private folder and leaves the final name
as it was; a folder left by a run that was killed outright is removed by the
next run writing there.  The marker written last lists every part with its
size and BLAKE2b digest, so a reader can tell a part that is not what was
written (cut, bit-flipped, replaced).
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

from sarsleuth.errors import UsageError
from sarsleuth.inputs.folders import walk_tree
from sarsleuth.saved_cases.layout import MARKER

_DIGEST_CHUNK = 1 << 20


class Staging:
    """Where a case is being written (``dir``), and its final place."""

    def __init__(self, target: Path):
        self.target = target
        _remove_stale(target)
        self.dir = tempfile.mkdtemp(prefix=f".{target.name}.sarsleuth-{os.getpid()}-", suffix=".tmp",
                                    dir=target.parent)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(self.dir, 0o777 & ~mask)       # as mkdir would have made it

    def commit(self) -> None:
        """Put the case in place (the earlier one there goes); refused when
        something else took the place meanwhile."""
        with _locked(self.target.parent), _interrupts_held():
            problem = place_problem(self.target)
            if problem:
                raise UsageError(f"{self.target}: {problem}")
            if self.target.is_dir() and any(self.target.iterdir()):
                _exchange(self.dir, self.target)     # the earlier case is now in self.dir
            else:
                if self.target.is_dir():
                    self.target.rmdir()
                os.rename(self.dir, self.target)
                self.dir = None
        self.discard()

    def discard(self) -> None:
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


@contextlib.contextmanager
def writing(target):
    """Turn a write that fails (a full or read-only filesystem, under
    pyarrow or our own code) into one line naming the case's folder."""
    try:
        yield
    except OSError as exc:
        errno = getattr(exc, "errno", None)
        reason = os.strerror(errno) if errno else (exc.strerror or str(exc).splitlines()[0])
        raise UsageError(f"{target}: cannot write the case: {reason}") from None


def place_problem(target: Path) -> str | None:
    """Why a case may not be written at ``target`` (None: absent, an empty
    folder or an earlier case)."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        return "cannot write a case: not a directory"
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).is_file():
        return "cannot write a case: the directory is not empty and holds no earlier case"
    return None


def write_marker(base, info: dict) -> None:
    """The marker, written last: ``info`` and every part with its size and digest."""
    base = Path(base)
    parts = {}
    for here, dirs, files in walk_tree(base):
        dirs.sort()
        for name in sorted(files):
            full = Path(here) / name
            if full.name != MARKER:
                parts[full.relative_to(base).as_posix()] = {"bytes": full.stat().st_size, "blake2b": digest(full)}
    text = json.dumps({**info, "parts": parts}, indent=1, ensure_ascii=False) + "\n"
    (base / MARKER).write_text(text, "utf-8")


def digest(path) -> str:
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as fh:
        while chunk := fh.read(_DIGEST_CHUNK):
            h.update(chunk)
    return h.hexdigest()


_STAGED = re.compile(r"^\.(?P<name>.+)\.sarsleuth-(?P<pid>\d+)-[^/]*\.tmp$")


def _remove_stale(target: Path) -> None:
    """Private folders of runs that were killed before they could remove them."""
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        m = _STAGED.match(entry.name)
        if m and m.group("name") == target.name and entry.is_dir(follow_symlinks=False) \
                and not _alive(int(m.group("pid"))):
            shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _locked(folder: Path):
    """An exclusive lock on ``folder`` (two runs commit one after the other)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def _interrupts_held():
    """Ctrl-C and SIGTERM wait until the case is in place (between two
    renames the final name would be empty)."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (AttributeError, ValueError, OSError):
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: Path) -> None:
    """Swap two folders in one step where the system can, else in two."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(str(b)), _RENAME_EXCHANGE) == 0:
            return
    aside = f"{a[:-len('.tmp')]}-old.tmp"       # a stale folder's name, should the run die here
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)
