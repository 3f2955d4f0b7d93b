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
made in a private temporary folder; :func:`write_tarball` packs it.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import socket
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from sarsleuth.inputs.collect import commands, host_files, nginx, processes
from sarsleuth.inputs.collect.host_files import Host
from sarsleuth.inputs.collect.manifest import Budget, Manifest
from sarsleuth.inputs.collect.plan import Caps, Window, knowledge, size_bytes, window
from sarsleuth.version import __version__

__all__ = ["Caps", "Collected", "Window", "collect", "size_bytes", "window", "write_tarball"]


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


def _member(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # who owned the files on the host is not the bundle's business
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if not info.issym():
        info.mode = 0o755 if info.isdir() else 0o644
    return info


def write_tarball(collected: Collected, out) -> None:
    """The bundle's folder as a gzip-compressed tar, onto the binary file
    ``out``."""
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
        tar.add(collected.folder, arcname=collected.folder.name, filter=_member)
