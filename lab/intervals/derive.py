"""A recorded case as a host sampling at a coarser interval would have
given it: every sa file replaced by the one ``sadc`` would have written
every N seconds (:func:`lab.intervals.safile.at_interval`), every other
file unchanged.

A sosreport also holds what its sar plugin printed from the sa file
(``sos_commands/sar/sarDD``: ``sar -A -f saDD``; ``saDD.xml``:
``sadf -x -- -A saDD``): those are printed again by the same commands
from the derived file, in the case's zone and the C locale as sos ran
them, after checking that the same commands on the recorded file print
exactly what the bundle holds (else the case is refused, naming the
member).

A case recorded with ``sadc`` also running at another interval (the long
cases: every minute and every 10 minutes, as a host's timer runs it) keeps
those files as ``intervals/<N>s/<member path>`` beside the case; at that
interval they replace the archive's member of the same path instead of a
derived one.

Derived cases are kept in a cache keyed by the digest of the case's
files, the interval and this code, so that scoring the lab again costs
only the analysis.  Archives are written as gzipped tar (fast to write) (members, their
names and modification times as recorded).
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
from pathlib import Path

from lab.intervals import safile

HERE = Path(__file__).resolve().parent
LAB = HERE.parent
SA_MAGIC = b"\x96\xd5\x75\x21"      # sysstat_magic 0xd596, format 0x2175, little-endian
NOT_INPUTS = ("truth.toml", "recorded.md")
_SOS_SAR = re.compile(r"^(?P<top>[^/]+/)sos_commands/sar/(?:sar(?P<day>\d\d)|sa(?P<xday>\d\d)\.xml)$")


class DeriveError(RuntimeError):
    """A case that cannot be given at another interval: names the file."""


def default_cache() -> Path:
    base = os.environ.get("SARSLEUTH_LAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sarsleuth-lab")
    return Path(base)


def case_inputs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_INPUTS)


def recorded_intervals(folder: Path) -> list[int]:
    """The intervals a case kept files of ``sadc`` at (``intervals/600s``)."""
    found = folder / "intervals"
    if not found.is_dir():
        return []
    return sorted(int(d.name[:-1]) for d in found.iterdir() if re.fullmatch(r"\d+s", d.name) and d.is_dir())


def _recorded_files(folder: Path, seconds: int) -> dict[str, Path]:
    """Member path -> the file sadc wrote at ``seconds``, for a case that
    kept them."""
    root = folder / "intervals" / f"{seconds}s"
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def _digest(paths: list[Path], seconds: int) -> str:
    h = hashlib.sha256(f"interval {seconds}\n".encode())
    for code in (HERE / "safile.py", HERE / "derive.py"):
        h.update(code.read_bytes())
    for p in paths:
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def case_zone(folder: Path) -> str:
    """The staged host's zone (its scenario's ``[host] tz``)."""
    truth = tomllib.loads((folder / "truth.toml").read_text())
    scenario = (truth.get("recorded") or {}).get("scenario")
    if scenario and (LAB.parent / scenario).exists():
        return tomllib.loads((LAB.parent / scenario).read_text())["host"].get("tz", "UTC")
    return "UTC"


def derived_case(folder: Path, seconds: int, cache: Path | None = None) -> Path:
    """The folder of ``folder``'s inputs at ``seconds`` (derived once, then
    taken from the cache)."""
    inputs = case_inputs(folder)
    recorded = _recorded_files(folder, seconds)
    cache = cache or default_cache()
    out = cache / f"{folder.name}-{seconds}s-{_digest(inputs + list(recorded.values()), seconds)}"
    if out.is_dir():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache))
    try:
        tz = case_zone(folder)
        replace = {name: p.read_bytes() for name, p in recorded.items()}
        used = set().union(*(_derive_file(p, work, seconds, tz, replace) for p in inputs))
        if set(replace) - used:
            raise DeriveError(f"{folder.name}: intervals/{seconds}s/{sorted(set(replace) - used)[0]} replaces "
                              "no sa file of the case's archives")
        try:
            work.rename(out)
        except OSError:          # another process derived it meanwhile
            if not out.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _derive_file(src: Path, dst_dir: Path, seconds: int, tz: str, replace: dict[str, bytes]) -> set[str]:
    """Writes ``src`` at ``seconds`` into ``dst_dir``; returns the members
    it replaced with a recorded file."""
    with open(src, "rb") as fh:
        head = fh.read(4)
    if head == SA_MAGIC:
        data = replace.get(src.name) or _sa_at(src.read_bytes(), src.name, seconds)
        (dst_dir / src.name).write_bytes(data)
        os.utime(dst_dir / src.name, (src.stat().st_mtime, src.stat().st_mtime))
        return {src.name} & set(replace)
    elif tarfile.is_tarfile(src):
        name = re.sub(r"\.tar(\.\w+)?$", "", src.name) + ".tar.gz"
        return _derive_tar(src, dst_dir / name, seconds, tz, replace)
    else:
        shutil.copy2(src, dst_dir / src.name)
    return set()


def _sa_at(data: bytes, name: str, seconds: int) -> bytes:
    try:
        return safile.at_interval(safile.read(data, name), seconds)
    except safile.SaFormatError as exc:
        raise DeriveError(str(exc)) from None


def _derive_tar(src: Path, dst: Path, seconds: int, tz: str, replace: dict[str, bytes]) -> set[str]:
    """Two passes over the archive, decompressed once into a temporary
    plain tar (its members read at random, its member list parsed once):
    the sa files and the sar outputs of a sosreport first (small), then
    every member copied into the new one."""
    with tempfile.TemporaryFile() as plain:
        with tarfile.open(src) as stream:
            stream.fileobj.seek(0)                  # opening read the first header
            shutil.copyfileobj(stream.fileobj, plain, 1 << 20)      # the decompressed bytes, as they are
        plain.seek(0)
        with tarfile.open(fileobj=plain) as tin:
            return _derive_members(src, tin, tin.getmembers(), dst, seconds, tz, replace)


def _derive_members(src: Path, tin: tarfile.TarFile, members: list, dst: Path, seconds: int, tz: str,
                    replace: dict[str, bytes]) -> set[str]:
    found: dict[str, bytes] = {}
    for m in members:
        if m.isfile() and (_SOS_SAR.match(m.name) or m.size < (64 << 20)):
            head = tin.extractfile(m).read(4)
            if head == SA_MAGIC or _SOS_SAR.match(m.name):
                found[m.name] = head + tin.extractfile(m).read()[4:]
    derived = {name: replace[name] if name in replace else _sa_at(d, f"{src.name}!{name}", seconds)
               for name, d in found.items() if d[:4] == SA_MAGIC}
    for name, d in found.items():
        hit = _SOS_SAR.match(name)
        if not hit:
            continue
        day = hit["day"] or hit["xday"]
        sa_name = next((n for n in (f"{hit['top']}var/log/sysstat/sa{day}", f"{hit['top']}var/log/sa/sa{day}")
                        if n in derived), None)
        if sa_name is None:
            continue
        argv = ["sar", "-A", "-f"] if hit["day"] else ["sadf", "-x", "--", "-A"]
        if not _same_records(_printed(argv, found[sa_name], tz), d):
            raise DeriveError(f"{src.name}!{name}: `{' '.join(argv)} {sa_name.split('/')[-1]}` on the recorded "
                              "file does not print what the bundle holds: cannot print it for another interval")
        derived[name] = _printed(argv, derived[sa_name], tz)
    with tarfile.open(dst, "w:gz", compresslevel=1, format=tarfile.PAX_FORMAT) as tout:
        for m in members:
            if m.name in derived:
                m.size = len(derived[m.name])
                tout.addfile(m, io.BytesIO(derived[m.name]))
            else:
                tout.addfile(m, tin.extractfile(m) if m.isfile() else None)
    mtime = src.stat().st_mtime
    os.utime(dst, (mtime, mtime))
    return set(replace) & set(found)


_NUMBER = re.compile(rb"(?:^|\s)-?\d+(?:\.\d+)?(?:\s|$)")
_STAMP = re.compile(rb'^(\d\d:\d\d:\d\d) |<timestamp [^>]*time="(\d\d:\d\d:\d\d)"')


def _same_records(printed: bytes, bundled: bytes) -> bool:
    """Does the bundle hold what sysstat prints from the copied sa file?
    sos copies the sa file, then runs sar or sadf on the live one: while
    sadc still writes, the output it keeps may hold a record or two more
    than the copy (and averages over them).  The records the copy holds
    must be printed exactly; those after its last, and the averages, are
    left out of the comparison."""
    if printed == bundled:
        return True
    stamps = [m.group(1) or m.group(2) for m in map(_STAMP.search, printed.splitlines()) if m]
    if not stamps:
        return False
    last = max(stamps)

    def kept(text: bytes) -> tuple[list[bytes], set[bytes]]:
        out, headers, skipping = [], set(), False
        for line in text.splitlines():
            m = _STAMP.search(line)
            if skipping:
                skipping = b"</timestamp>" not in line
                continue
            if line.startswith(b"Average:") or not line.strip():     # the averages' block ends in a blank line
                continue
            if m and (m.group(1) or m.group(2)) > last:
                skipping = m.group(2) is not None        # an XML record goes on to its closing tag
                continue
            if m and m.group(1) and not _NUMBER.search(line[m.end():]):
                # a section's header: sar repeats some (per-CPU interrupts) once more for a record
                # that follows, stamped with the time before it
                headers.add(line[m.end():].strip())
                continue
            out.append(line)
        return out, headers
    return kept(printed) == kept(bundled)


def _printed(argv: list[str], sa: bytes, tz: str) -> bytes:
    """What sysstat prints from an sa file, as sos's sar plugin runs it."""
    if not shutil.which(argv[0]):
        raise DeriveError(f"{argv[0]} (sysstat) is not installed: a sosreport's sar output cannot be printed "
                          "for another interval")
    with tempfile.NamedTemporaryFile(suffix=".sa") as fh:
        fh.write(sa)
        fh.flush()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": tz}
        out = subprocess.run(argv + [fh.name], capture_output=True, env=env)
    if out.returncode:
        raise DeriveError(f"`{' '.join(argv)}` failed on the derived file: {out.stderr.decode(errors='replace')[:200]}")
    return out.stdout
