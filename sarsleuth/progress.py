"""Progress of long work on standard error: the bytes of the inputs read
(:class:`Reading`, for a case or one parsed file) and the steps of a fleet
(:func:`progress_bar`).

Shown with rich only when standard error is a terminal and nobody asked for
quiet, so pipes, ``--format json`` and tests see nothing of it; and for
reading, only once it has taken :data:`SHOW_AFTER_S` seconds, so a small
file's run prints nothing but its result.

Readers do not know who shows their progress: they are handed a callable
(``ParseOptions.progress``, a :class:`Reading`'s :meth:`~Reading.within`)
and tell it how far they are in the file they read, in their own units
(bytes of a log read, including compressed ones; bytes of an sa file's
records); the Reading turns it into bytes of the file on disk and of all
the inputs.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable

from sarsleuth.safe_text import one_line

#: Seconds of reading before the progress shows.
SHOW_AFTER_S = 2.0

class Reading:
    """Bytes read of the inputs, overall and of the file being read."""

    def __init__(self, sizes, enabled: bool = True, clock: Callable[[], float] = time.monotonic):
        sizes = list(sizes)
        self.total, self.files = sum(s or 0 for s in sizes), len(sizes)
        self.enabled = enabled
        self.clock = clock
        self.started = clock()
        self.done_files = self.done_bytes = 0
        self.name, self.size, self.inside = "", 0, 0
        self.bars = None

    def open(self, name: str, size: int | None) -> None:
        """Reading of a file begins (``size`` on disk, None when unknown)."""
        self.name, self.size, self.inside = str(name), size or 0, 0
        self._tick()

    def within(self, done: int, total: int | None) -> None:
        """The reader is ``done`` of ``total`` (its own units) into its file."""
        if total:
            self.inside = int(self.size * min(max(done / total, 0.0), 1.0))
            self._tick()

    def close(self) -> None:
        """The file opened last is read."""
        self.done_bytes += self.size
        self.done_files += 1
        self.size = self.inside = 0
        self._tick()

    def _tick(self) -> None:
        if not self.enabled:
            return
        if self.bars is None:
            if self.clock() - self.started < SHOW_AFTER_S:
                return
            try:
                self.bars = _Bars(self.total)
            except Exception:  # noqa: BLE001 - a progress display must never break a run
                self.enabled = False
                return
        self.bars.show(self)

    def stop(self) -> None:
        if self.bars is not None:
            self.bars.stop()
            self.bars = None


@contextmanager
def reading(sizes, enabled: bool = True):
    """A :class:`Reading` of files of these sizes (hand its ``within`` to the
    readers); nothing is shown when ``enabled`` is false or standard error
    is no terminal."""
    state = Reading(sizes, enabled and _terminal())
    try:
        yield state
    finally:
        state.stop()


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Bars:
    """Two rich bars: every input, and the file being read."""

    def __init__(self, total: int):
        # here, not at the top: rich is 20 ms of start-up, and most runs show
        # no bar (a pipe, --quiet, or done within 2 s)
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, \
            TransferSpeedColumn
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
        self.overall = self.progress.add_task("", total=total or None)
        self.current = self.progress.add_task("", total=None)
        self.progress.start()

    def show(self, r: Reading) -> None:
        from rich.markup import escape
        name = r.name.rsplit("/", 1)[-1]
        self.progress.update(self.overall, completed=r.done_bytes + r.inside,
                             description=f"read {r.done_files} of {r.files} file(s)")
        self.progress.update(self.current, completed=r.inside, total=r.size or None,
                             description=escape(one_line(name))[:40], visible=bool(r.size))

    def stop(self) -> None:
        self.progress.stop()


def progress_bar(enabled: bool, total: int, describe: Callable[[int, str], str]) -> Callable[[str], None]:
    """A bar over steps (the hosts of a fleet): a callback to call once per
    finished step with its name; ``describe(done, name)`` is the bar's label
    after that step.  Shown only on a terminal and for more than one step."""
    if not enabled or total < 2 or not _terminal():
        return lambda _name: None
    from rich.console import Console
    from rich.progress import Progress
    prog = Progress(console=Console(stderr=True), transient=True)
    task = prog.add_task(describe(0, ""), total=total)
    prog.start()
    done = [0]

    def step(name: str) -> None:
        done[0] += 1
        prog.update(task, advance=1, description=describe(done[0], name))
        if done[0] >= total:
            prog.stop()
    return step
