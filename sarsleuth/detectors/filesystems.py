"""Filesystems that give up: ext2/3/4 errors, a journal aborted, a
read-only remount; XFS metadata I/O errors, corruption and shutdowns;
btrfs errors and forced read-only."""
from __future__ import annotations

import re

from sarsleuth.detectors.event_bursts import bursts, lines_of, listed
from sarsleuth.detectors.series import fmt_time
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.knowledge import kb_entry
from sarsleuth.knowledge.signatures import fields_of

#: filesystem names as titles write them
_FS_NAMES = {"EXT2": "ext2", "EXT3": "ext3", "EXT4": "ext4", "JBD": "ext3", "JBD2": "ext4", "XFS": "XFS",
             "BTRFS": "btrfs", "F2FS": "f2fs"}


def mount_point(facts, device: str) -> str | None:
    """Where a bundle says ``device`` (a kernel name: ``sda1``, ``dm-0``) is
    mounted: ``/dev/sda1``, or the device-mapper name ``dm-N`` stands for."""
    if facts is None:
        return None
    names = [f"/dev/{device}"]
    if device.startswith("dm-") and device[3:].isdigit():
        mapped = facts.disk_names().get(f"dev253-{device[3:]}")
        if mapped:
            names += [f"/dev/mapper/{mapped}", f"/dev/{mapped}"]
    for name in names:
        found = facts.mounts.get(name)
        if found is not None:
            return found.value
    return None


#: btrfs's per-device error counters (fs/btrfs/volumes.c
#: btrfs_dev_stat_inc_and_print): printed at each increment, so a line is
#: the counter, not one more error beside the line that reported it.
_COUNTERS = re.compile(r"bdev (\S+) errs: wr (\d+), rd (\d+), flush (\d+), corrupt (\d+), gen (\d+)")
#: An error btrfs repaired from another copy: scrub's "fixed up error at
#: logical %llu on dev %s" (fs/btrfs/scrub.c), the read path's "read
#: error corrected: ino %llu off %llu (dev %s sector %llu)".
#: A filesystem that could not be mounted (XFS's log mount in
#: fs/xfs/xfs_log.c, btrfs's open_ctree): what needs it is not there.
_NOT_MOUNTED = re.compile(r"log mount(?:/recovery)? failed|open_ctree failed")
_CORRECTED = re.compile(r"(?:fixed up error at logical \d+ on (?:dev|mirror) (\S+)"
                        r"|read error corrected: ino \d+ off \d+ \(dev (\S+) sector \d+\))")


def _quoted(text: str, most: int = 60) -> str:
    """A message as a title quotes it: whole, or cut at a word with an ellipsis."""
    text = text.strip()
    if len(text) <= most:
        return text
    return text[:most].rsplit(" ", 1)[0].rstrip(",;:") + "…"


class _Fs:
    def __init__(self):
        self.fs = None
        self.reported = 0          # error lines, the counters' and the repairs' aside
        self.corrected = 0
        self.corrected_on: dict = {}
        self.counters: dict = {}   # {device: [first total, last total]}
        self.not_mounted: str | None = None
        self.functions: dict = {}
        self.comms: dict = {}
        self.texts: dict = {}
        self.readonly_at = None
        self.shutdown: str | None = None
        self.journal_aborted = False

    @property
    def errors(self) -> int:
        """Errors, each once: the lines reporting them, the counters'
        increase (their first line is an increment too) or the repairs,
        whichever says more."""
        counted = sum(last - first + 1 for first, last in self.counters.values())
        return max(self.reported, counted, self.corrected)

    @property
    def unrepaired(self) -> int:
        return self.errors - self.corrected

    @property
    def gave_up(self) -> bool:
        return (self.readonly_at is not None or self.shutdown is not None or self.journal_aborted
                or self.not_mounted is not None)


class FilesystemError(Detector):
    """A filesystem that found errors and protected itself, per device:
    ``EXT4-fs error (device sda1): ext4_lookup:1601: inode #...: comm
    nginx: ...``, ``Aborting journal on device dm-0-8.``, ``EXT4-fs (sda1):
    Remounting filesystem read-only``; XFS ``metadata I/O error``,
    ``Corruption detected``, ``Shutting down filesystem``; btrfs errors and
    ``forced readonly``: the functions and programs that hit the errors, and
    when it went read-only or shut down.

    Why it matters: from the remount or shutdown on, every write there
    fails (EROFS, EIO): databases, queues, logs and uploads stop until the
    filesystem is repaired and mounted again.
    """

    id = "filesystem-error"
    summary = "filesystem errors, journal aborts, read-only remounts and XFS shutdowns, per device"
    inputs = ("events:fs-error", "events:fs-readonly")
    category = "filesystem-error"
    defaults = {"burst_gap_seconds": 1800.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("fs-error", "fs-readonly"), self.params["burst_gap_seconds"]):
            devices: dict = {}
            nameless = []          # 2.6 ext3's "Remounting filesystem read-only" names no device
            for row in b.rows.sort_values(["timestamp", "line"], kind="stable").itertuples(index=False):
                f = fields_of(row.kind, str(row.message)) or {}
                if not f.get("device"):
                    nameless.append(row)
                    continue
                self._read(devices.setdefault(f["device"], _Fs()), row, f)
            for row in nameless:
                target = devices[next(iter(devices))] if len(devices) == 1 else devices.setdefault("?", _Fs())
                self._read(target, row, fields_of(row.kind, str(row.message)) or {})
            out.append(self._finding(ctx, b, devices))
        return out

    @staticmethod
    def _read(fs: _Fs, row, f: dict) -> None:
        fs.fs = fs.fs or _FS_NAMES.get(f.get("fs", ""))
        when = row.timestamp
        if row.kind == "fs-readonly":
            if f.get("journal"):
                fs.journal_aborted = True
            elif f.get("shutdown") or f.get("why"):
                why = f.get("why") if f.get("why") != "xfs_do_force_shutdown" else None
                if why and fs.shutdown in (None, "forced"):
                    fs.shutdown = why
                elif fs.shutdown is None:
                    fs.shutdown = "forced"
                fs.readonly_at = fs.readonly_at if fs.readonly_at is not None else when
            else:
                fs.readonly_at = fs.readonly_at if fs.readonly_at is not None else when
            return
        n = lines_of(row)
        error = f.get("error") or ""
        counted = _COUNTERS.search(error)
        if counted:
            total = sum(int(v) for v in counted.groups()[1:])
            first_last = fs.counters.setdefault(counted.group(1), [total, total])
            first_last[0], first_last[1] = min(first_last[0], total), max(first_last[1], total)
            return
        not_mounted = _NOT_MOUNTED.search(error)
        if not_mounted:
            fs.not_mounted = fs.not_mounted or not_mounted.group(0)
            return
        repaired = _CORRECTED.search(error)
        if repaired:
            fs.corrected += n
            on = repaired.group(1) or repaired.group(2)
            fs.corrected_on[on] = fs.corrected_on.get(on, 0) + n
            return
        fs.reported += n
        for key, into in (("function", fs.functions), ("function_old", fs.functions), ("comm", fs.comms)):
            if f.get(key):
                into[f[key]] = into.get(f[key], 0) + n
        if error and not f.get("function"):
            text = _quoted(error)
            fs.texts[text] = fs.texts.get(text, 0) + n

    def _finding(self, ctx, b, devices: dict):
        facts = ctx.facts(b.host)
        parts, readonly, shutdown = [], False, False
        for dev, fs in sorted(devices.items(), key=lambda kv: (kv[1].readonly_at is None, -kv[1].errors)):
            mount = mount_point(facts, dev) if dev != "?" else None
            name = (f"{fs.fs} " if fs.fs else "") + ("on " + dev if dev != "?" else
                                                     "(device not named)" if fs.fs else "a filesystem") + (
                f" ({mount})" if mount else "")
            said = []
            if fs.errors:
                what = [f"in {listed(sorted(fs.functions, key=lambda k: -fs.functions[k]), 2)}"] if fs.functions else []
                what += [f"comm {listed(sorted(fs.comms, key=lambda k: -fs.comms[k]), 2)}"] if fs.comms else []
                if not what and fs.texts:
                    what = [f"'{sorted(fs.texts, key=lambda k: -fs.texts[k])[0]}'"]
                repaired = ""
                if fs.corrected:
                    on = listed(sorted(fs.corrected_on, key=lambda k: -fs.corrected_on[k]), 2)
                    repaired = (", all" if not fs.unrepaired else f", {fs.corrected:,}") + f" corrected from another copy on {on}"
                said.append(f"{fs.errors:,} error(s)" + (f" ({'; '.join(what)})" if what else "") + repaired)
            if fs.journal_aborted:
                said.append("journal aborted")
            if fs.not_mounted:
                said.append(f"not mounted ('{fs.not_mounted}')")
            if fs.shutdown:
                shutdown = True
                said.append(f"shut down ({fs.shutdown})" + (f" at {fmt_time(fs.readonly_at)}"
                                                             if fs.readonly_at is not None and b.aligned else ""))
            elif fs.readonly_at is not None:
                readonly = True
                said.append("remounted read-only" + (f" at {fmt_time(fs.readonly_at)}" if b.aligned else ""))
            parts.append(f"{name}: {', '.join(said)}")
        errors = sum(fs.errors for fs in devices.values())
        named = sorted(d for d in devices if d != "?")
        gave_up = readonly or shutdown or any(fs.journal_aborted or fs.not_mounted for fs in devices.values())
        corrected = sum(fs.corrected for fs in devices.values())
        needs_repair = any(fs.gave_up or fs.unrepaired for fs in devices.values())
        return self.finding(
            title="; ".join(parts[:4]) + (f"; and {len(parts) - 4} more" if len(parts) > 4 else ""),
            # errors all repaired from another copy lost nothing: a device to watch
            severity="critical" if gave_up else "high" if needs_repair else "medium",
            start=b.start, end=b.end, host=b.host, aligned=b.aligned,
            metrics={"errors": errors, "readonly": readonly or shutdown, "shutdown": shutdown,
                     "journal_aborted": any(fs.journal_aborted for fs in devices.values()),
                     "not_mounted": int(any(fs.not_mounted for fs in devices.values())),
                     "devices": len(devices), "corrected": corrected, "needs_repair": int(needs_repair)},
            explanation=None if needs_repair else kb_entry(self.id)["explanation_corrected"],
            evidence=evidence_from_events(ctx.clock, b.rows, 6),
            refs={"devices": named, **({"device": named[0]} if named else {})},
        )
