"""SIGTERM unwinds the program as Ctrl-C does.

A service manager or ``timeout`` stops a run with SIGTERM, whose default
ends the process on the spot: private copies of streams and archive members
stayed in the temporary folder, and a case being saved was left half
written.  While a command runs, SIGTERM raises :class:`Terminated` where the
program is, so every ``finally`` on the way removes what the run made.
"""
from __future__ import annotations

import signal
import threading


class Terminated(BaseException):
    """SIGTERM (a BaseException, as KeyboardInterrupt is, which typer would
    turn into Ctrl-C's exit code)."""


def terminate_as_interrupt():
    """Turn SIGTERM into :class:`Terminated` while a command runs; returns
    what puts the earlier handler back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def raise_terminated(_signum, _frame):
        raise Terminated()
    try:
        before = signal.signal(signal.SIGTERM, raise_terminated)
    except (ValueError, OSError):
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, before)
