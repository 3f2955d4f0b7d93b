"""The tarball ``sarsleuth collect`` writes: the collected folder packed
as a gzip-compressed tar, written whole or not at all, readable by its
owner only (it holds the host's logs)."""
from __future__ import annotations

import tarfile
from pathlib import Path

from sarsleuth.inputs import collect as collecting
from sarsleuth.render.files import atomic_output, check_destination


def _member(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # who owned each file on the host is not the bundle's business
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if not info.issym():
        info.mode = 0o755 if info.isdir() else 0o644
    return info


def write_tarball(collected, output: Path | None = None) -> Path:
    """Pack ``collected`` (:class:`sarsleuth.inputs.collect.Collected`) into
    ``output`` (default: the folder's name with ``.tar.gz``, here)."""
    output = Path(output) if output is not None else Path(f"{collected.folder.name}.tar.gz")
    with atomic_output(output, binary=True, mode=0o600) as fh:
        with tarfile.open(fileobj=fh, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
            tar.add(collected.folder, arcname=collected.folder.name, filter=_member)
    return output


def collect_to_tarball(since, window, output, root, max_size, say) -> Path:
    """``sarsleuth collect``: this host into a tarball, what could not be
    read said (``say``) line by line, then what was written."""
    span, caps = collecting.window(since, window), collecting.Caps.of(max_size)
    if output is not None:
        check_destination(Path(output), [])
    with collecting.privately(span, root, caps) as got:
        for line in got.manifest.problems():
            say(line)
        output = write_tarball(got, output)
    say(f"wrote {output} ({span.text()}): {got.manifest.summary()}")
    return output
