"""From a live host to a bundle ``analyze`` reads: ``sarsleuth collect``
and ``analyze --here``.

What is gathered, and where each piece goes, is data
(``knowledge/collect.toml``): the sa files of the days the window covers,
the journal of the window, ``dmesg -T`` and ``dmesg``, the syslog and
package logs whose span meets the window, nginx's configuration and error
logs (:mod:`.nginx`), a ``ps`` snapshot, ``sysctl -a``, the limits of the
processes the bundle layout keeps limits of, the host's facts.  Everything
lands at the path a sosreport keeps it at (``bundle_layout.toml`` reads
them), in one folder ``sarsleuth-HOST-YYYYMMDD-HHMMSS`` beside a manifest of
what was taken, cut and not read, and why.

Nothing is written on the host but the bundle: files are read, commands
only print, each within its caps (:class:`~.plan.Caps`).  The folder is
made in a private temporary folder (:func:`privately`);
``render/collected.py`` packs it into the tarball.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sarsleuth.errors import UsageError
from sarsleuth.inputs.collect import commands, host_files, nginx, processes
from sarsleuth.inputs.collect.host_files import Host
from sarsleuth.inputs.collect.manifest import Budget, Manifest
from sarsleuth.inputs.collect.plan import Caps, Window, knowledge, window
from sarsleuth.version import __version__

__all__ = ["Caps", "Collected", "Window", "collect", "here_or_not", "privately", "window"]


@dataclass
class Collected:
    folder: Path                 # the bundle's folder
    manifest: Manifest
    host: str

    def names(self) -> dict:
        """{file in the folder: how the host names it}, for the outputs (the
        folder itself is the bundle of ``<this host>``)."""
        return {str(self.folder): "<this host>",
                **{str(self.folder / rel): name for rel, name in self.manifest.names.items()}}


def _folder_name(host: str, at: dt.datetime) -> str:
    safe = re.sub(r"[^A-Za-z0-9.-]+", "-", host).strip("-.") or "host"
    return f"{knowledge()['bundle']['prefix']}{safe}-{at.strftime('%Y%m%d-%H%M%S')}"


def collect(into: Path, span: Window, root: str = "/", caps: Caps | None = None) -> Collected:
    """Gather the host (the files under ``root``; ``/proc`` and the
    commands are the running system's) into a new folder in ``into``."""
    caps = caps or Caps.of()
    root_given = os.path.realpath(root) != "/"
    root = os.path.realpath(root) if root_given else "/"
    started = dt.datetime.now().astimezone()
    host_name = socket.gethostname()
    folder = Path(into) / _folder_name(host_name, started)
    folder.mkdir(mode=0o700)
    manifest = Manifest()
    host = Host(root, folder, span, caps, Budget(caps.total_bytes, time.monotonic() + caps.total_seconds), manifest)
    plan = knowledge()
    for entry in plan["command"]:
        commands.run_entry(host, entry, root_given)
    taken_days: dict = {}
    for entry in plan["file"]:
        if entry["select"] == "day":
            host_files.by_day(host, entry, taken_days)
        elif entry["select"] == "rotated":
            host_files.rotated(host, entry)
        else:
            host_files.always(host, entry)
    running = processes.running()
    nginx.gather(host, running, root_given)
    processes.keep_limits(host, running)
    own = folder / plan["bundle"]["manifest"]
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(manifest.document(
        collected_by=f"sarsleuth {__version__}", host=host_name, root=root,
        started=started.isoformat(timespec="seconds"),
        finished=dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        window={"asked": span.asked, "start": span.start.isoformat(timespec="seconds"),
                "end": span.end.isoformat(timespec="seconds")},
        caps={"file_bytes": caps.file_bytes, "sa_file_bytes": caps.sa_file_bytes, "output_bytes": caps.output_bytes,
              "total_bytes": caps.total_bytes, "command_seconds": caps.command_seconds,
              "total_seconds": caps.total_seconds}), "utf-8")
    return Collected(folder, manifest, host_name)


@contextlib.contextmanager
def privately(span: Window, root=None, caps: Caps | None = None):
    """The host collected into a private temporary folder, removed when the
    block ends (whatever ends it)."""
    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a folder")
    with tempfile.TemporaryDirectory(prefix="sarsleuth-collect-") as private:
        yield collect(Path(private), span, str(root or "/"), caps)


@contextlib.contextmanager
def here_or_not(here: bool, since=None, between=None, root=None, say=None):
    """``analyze --here``: ([the collected folder], {file: its name on the
    host}) while the block runs, what could not be read said first; else
    nothing to add."""
    if not here:
        yield [], {}
        return
    with privately(window(since, between), root) as got:
        for line in got.manifest.problems():
            if say is not None:
                say(f"--here: {line}")
        yield [got.folder], got.names()
