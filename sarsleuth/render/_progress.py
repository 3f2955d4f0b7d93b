"""One progress bar for long work (files of a case, hosts of a fleet): rich
on standard error, only when it is a terminal and there is more than one
step, so pipes, JSON output and tests see nothing of it."""
from __future__ import annotations

import sys
from typing import Callable


def progress_bar(enabled: bool, total: int, describe: Callable[[int, str], str]) -> Callable[[str], None]:
    """A callback to call once per finished step with its name;
    ``describe(done, name)`` is the bar's label after that step."""
    if not enabled or total < 2 or not sys.stderr.isatty():
        return lambda _name: None
    from rich.console import Console
    from rich.progress import Progress
    prog = Progress(console=Console(stderr=True), transient=True)
    task = prog.add_task(describe(0, ""), total=total)
    prog.start()
    done = [0]

    def advance(name: str) -> None:
        done[0] += 1
        prog.update(task, advance=1, description=describe(done[0], name))
        if done[0] >= total:
            prog.stop()
    return advance
