"""Disks that fail under the software: ATA, SCSI sense, the block layer's
failed requests, NVMe timeouts and resets (machine checks and memory
errors are in ``machine_check.py``).  What each kernel line says is read
through its definition's fields (``knowledge/signatures.toml``); a report's
lines after its first (an ATA exception's failed command and error bits, a
sense key's additional sense) are its ``detail``."""
from __future__ import annotations

import re

from sarsleuth.detectors.event_bursts import bursts, lines_of
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.report_lines import count_into, lines_of_report, most_counted, over_span
from sarsleuth.knowledge.signatures import all_fields_of, fields_of


#: ATA error bits (libata-eh.c ata_eh_link_report) and what they mean
_ATA_MEDIA = {"UNC", "IDNF", "AMNF"}
_ATA_LINK = {"ICRC"}
#: block layer statuses (blk_errors[]) by what they mean
_BLK_MEDIA = {"critical medium"}
_BLK_TIMEOUT = {"timeout"}
_BLK_LINK = {"recoverable transport"}
_BLK_GONE = {"device offline"}
#: devices whose errors are not a disk's own: their backing file or server
_VIRTUAL = re.compile(r"^(?:loop|nbd|zram|ram|md)\d")
#: SCSI opcodes of the data commands (SPC/SBC), as the block layer names their operations
_SCSI_OPS = {"8": "READ", "28": "READ", "a8": "READ", "88": "READ", "a": "WRITE", "2a": "WRITE", "aa": "WRITE",
             "8a": "WRITE", "35": "FLUSH", "91": "FLUSH"}
_PARTITION = re.compile(r"^((?:sd|vd|xvd|hd)[a-z]+)\d+$|^((?:nvme\d+n\d+|mmcblk\d+))p\d+$")


def _lba(f: dict) -> int:
    """The sector a failed ATA command names in its result taskfile: 48-bit
    (its high bytes in the hob registers), or 28-bit (bits 24-27 in the
    device register)."""
    high = (int(f["hob_lbah"], 16) << 40) | (int(f["hob_lbam"], 16) << 32) | (int(f["hob_lbal"], 16) << 24)
    low = (int(f["lbah"], 16) << 16) | (int(f["lbam"], 16) << 8) | int(f["lbal"], 16)
    return (high or ((int(f["device"], 16) & 0x0F) << 24)) | low


def _disk_of(device: str) -> str:
    """The disk a partition is on (``sda1`` -> ``sda``, ``nvme0n1p2`` ->
    ``nvme0n1``); other names as they are."""
    m = _PARTITION.match(device)
    return (m.group(1) or m.group(2)) if m else device


class _Disk:
    """What a burst says of one disk (or ATA port, or NVMe controller)."""

    def __init__(self):
        self.media = self.io = self.timeouts = self.link = self.refused = self.resets = self.buffer = 0
        self.sense_alone = 0
        self.gone: list[str] = []
        self.sectors: dict = {}
        self.ops: dict = {}
        self.commands: dict = {}
        self.bits: dict = {}
        self.sense: dict = {}          # what the drive said failed (additional sense, status)
        self.keys: dict = {}           # SCSI sense keys
        self.partitions: set = set()
        self.hsm = 0                   # ATA protocol violations (Emask 0x2)
        self.bus = 0                   # ATA bus errors (Emask 0x10): the SATA link dropped
        self.virtual = 0               # requests a hypervisor's storage failed (a VM's disk)
        self.driver_sectors: set = set()   # failed requests the driver told (NVMe's LBA) before the block layer

    def said(self) -> str:
        parts = []
        why = most_counted(self.sense, 1) or most_counted(self.keys, 1) or most_counted(self.bits, 1)
        if self.io:
            ops = "/".join(most_counted(self.ops, 2))
            sectors = most_counted(self.sectors, 3)
            head = (f"{self.io:,} failed {ops + '(s)' if ops else 'request(s)'}"
                    + (f" at sector{'s' if len(sectors) > 1 else ''} {', '.join(map(str, sectors))}" if sectors else "")
                    + (f" and {len(self.sectors) - len(sectors)} more" if len(self.sectors) > len(sectors) else ""))
            if self.media:
                head += f": media error ({why[0]})" if why else ": media error"
            elif self.virtual:
                head += f" ({why[0]}: a VM's disk)" if why else ""
            parts.append(head)
        elif self.media:
            sectors = most_counted(self.sectors, 3)
            parts.append(f"{self.media:,} media error(s)" + (f" ({why[0]})" if why else "")
                         + (f" at sector{'s' if len(sectors) > 1 else ''} {', '.join(map(str, sectors))}"
                            if sectors else ""))
        if self.commands:
            bits = " ".join(most_counted(self.bits, 3))
            parts.append(", ".join(f"{c} failed {n:,} x" for c, n in sorted(self.commands.items(),
                                                                              key=lambda kv: -kv[1])[:2])
                         + (f" ({bits})" if bits else ""))
        if self.link:
            parts.append(f"{self.link:,} transfer(s) corrupted on the link (ICRC: cable or port, not the media)")
        if self.bus:
            parts.append(f"{self.bus:,} ATA bus error(s) (the SATA link dropped and was reset: cable, port, backplane "
                         "or power, not the media)")
        if self.hsm:
            parts.append(f"{self.hsm:,} HSM violation(s) (the drive or its controller broke the ATA protocol: "
                         "cable, backplane, controller or firmware, not the media)")
        if self.timeouts:
            parts.append(f"{self.timeouts:,} command timeout(s)")
        if self.resets:
            parts.append(f"{self.resets:,} controller reset(s)")
        if self.refused and not (self.media or self.io or self.link or self.timeouts):
            parts.append(f"{self.refused:,} command(s) the drive refused (ABRT)")
        parts += self.gone
        if self.buffer:
            parts.append(f"{self.buffer:,} Buffer I/O error(s) on {', '.join(sorted(self.partitions))}")
        # parts apart from the lists inside them (sectors, partitions)
        return "; ".join(parts)

    def take(self, port: "_Disk") -> None:
        """An ATA port's report of the same failures: its commands, error
        bits and link errors join the disk's; its media errors are the
        ones the disk's sense data tells again."""
        self.media = max(self.media, port.media)
        self.link += port.link
        self.timeouts += port.timeouts
        self.hsm += port.hsm
        self.refused += port.refused
        for name in ("commands", "bits"):
            for k, n in getattr(port, name).items():
                count_into(getattr(self, name), k, n)


class DiskError(Detector):
    """A disk that fails: ATA exceptions (``failed command: READ FPDMA
    QUEUED``, ``error: { UNC }``), SCSI ``Medium Error`` / ``Unrecovered read
    error``, the block layer's failed requests (``I/O error, dev sda, sector
    N``; ``critical medium error``), ``Buffer I/O error``, NVMe timeouts,
    aborts, resets and controllers that went away, per disk, with the
    sectors and commands that failed.

    Why it matters: reads that fail return EIO to the program (a database
    page, a file the web server serves), writes that fail lose data and make
    the filesystem give up; a disk with unreadable sectors keeps growing
    them.  Which kind it is tells what to replace: UNC / Medium Error is the
    media, ICRC the cable or port, timeouts and resets the drive or its
    controller.
    """

    id = "disk-error"
    summary = "failing disks: ATA exceptions, SCSI medium errors, block I/O errors, NVMe timeouts and resets"
    inputs = ("events:ata-error", "events:scsi-medium-error", "events:block-io-error", "events:nvme-error",
              "events:hyperv-storage-error")
    category = "hardware-error"
    defaults = {"burst_gap_seconds": 1800.0}

    def run(self, ctx: Context):
        out = []
        events = ctx.events_of("ata-error", "scsi-medium-error", "block-io-error", "nvme-error",
                               "hyperv-storage-error")
        for b in bursts(events, self.params["burst_gap_seconds"]):
            disks: dict = {}
            for row in b.rows.itertuples(index=False):
                n = lines_of(row)
                read = {"ata-error": self._ata, "scsi-medium-error": self._scsi, "block-io-error": self._block,
                        "nvme-error": self._nvme, "hyperv-storage-error": self._hyperv}[row.kind]
                read(disks, row, n)
            # a loop or network block device has no media of its own: its
            # errors are its backing file's or server's, or a probe of one
            # that is not set up (sos's `parted -s /dev/loop11`)
            disks = {d: v for d, v in disks.items() if not _VIRTUAL.match(d)}
            if disks:
                out.append(self._finding(ctx, b, disks))
        return out

    @staticmethod
    def _ata(disks, row, n):
        """One libata error report (or several a paste ran together): each
        failed command with the error bits and Emask text after it, until
        the next one, counted once."""
        port = None
        failed: list[set] = [set()]      # the errors of each failed command, in order
        where: list = [None]             # the sector each failed at (its result taskfile's LBA)
        disk, commands = None, 0
        for line in lines_of_report(row):
            f = {k: v for found in all_fields_of("ata-error", line) for k, v in found.items()}
            if f.get("port") and port is None:
                port = f["port"] + (f".{f['dev']}" if f.get("dev") else "")
                disk = disks.setdefault(port, _Disk())
            if disk is None:
                continue
            if f.get("command"):
                count_into(disk.commands, f["command"], n)
                commands += 1
                if commands > 1:
                    failed.append(set())
                    where.append(None)
            if f.get("lbal") is not None:
                where[-1] = _lba(f)
            if f.get("errors"):
                failed[-1] |= set(f["errors"].split())
            if f.get("emask_text") == "timeout":
                disk.timeouts += n
            if f.get("emask_text") == "media error":
                failed[-1].add("UNC")
            if f.get("emask_text") == "HSM violation":
                disk.hsm += n
            if f.get("emask_text") in ("ATA bus error", "host bus error"):
                disk.bus += n
        if disk is None:
            return
        for errors, sector in zip(failed, where):
            for bit in errors:
                count_into(disk.bits, bit, n)
            if errors & _ATA_MEDIA:
                disk.media += n
                if sector is not None:
                    count_into(disk.sectors, sector, n)
            if errors & _ATA_LINK:
                disk.link += n
            if errors and errors <= {"ABRT"}:
                disk.refused += n

    @staticmethod
    def _scsi(disks, row, n):
        lines = lines_of_report(row)
        first = fields_of("scsi-medium-error", lines[0]) or {}
        if not first.get("device"):
            return
        disk = disks.setdefault(first["device"], _Disk())
        if first.get("sense_key"):
            disk.media += n
        else:
            # an additional sense on a line of its own: the sense key's
            # event tells the same failure when the log has it
            disk.sense_alone += n
        for line in lines:
            f = fields_of("scsi-medium-error", line) or {}
            if f.get("sense_key"):
                count_into(disk.keys, f["sense_key"], n)
            if f.get("asc"):
                count_into(disk.sense, f["asc"], n)

    @staticmethod
    def _block(disks, row, n):
        f = fields_of("block-io-error", str(row.message)) or {}
        device = f.get("device")
        if not device:
            return
        disk = disks.setdefault(_disk_of(device), _Disk())
        if not f.get("status"):
            # the page cache's side of a failed request ("Buffer I/O error",
            # "lost page write"): the same failure, and data lost on a write
            disk.buffer += n
            disk.partitions.add(device)
            return
        status = f.get("status")
        sector = int(f["sector"]) if f.get("sector") else None
        if sector is not None and sector in disk.driver_sectors:
            # the block layer's line for a request the driver already told: one failure, said twice
            if f.get("op"):
                count_into(disk.ops, f["op"], 0)
            return
        if status in _BLK_MEDIA:
            disk.media += n
            count_into(disk.sense, "critical medium error", n)
        elif status in _BLK_TIMEOUT:
            disk.timeouts += n
        elif status in _BLK_LINK:
            disk.link += n
        elif status in _BLK_GONE:
            disk.gone.append("offline")
        disk.io += n
        if f.get("sector"):
            count_into(disk.sectors, int(f["sector"]), n)
        if f.get("op"):
            count_into(disk.ops, f["op"], n)

    @staticmethod
    def _hyperv(disks, row, n):
        f = fields_of("hyperv-storage-error", str(row.message)) or {}
        if not f.get("device"):
            return
        disk = disks.setdefault(f["device"], _Disk())
        disk.io += n
        disk.virtual += n
        count_into(disk.ops, _SCSI_OPS.get(f["cmd"], f"command 0x{f['cmd']}"), n)
        srb = int(f["srb"], 16) & 0x3F
        count_into(disk.sense, "failed by the Hyper-V host" if srb == 0x04 else "aborted by the Hyper-V host", n)

    @staticmethod
    def _nvme(disks, row, n):
        f = fields_of("nvme-error", str(row.message)) or {}
        name = f.get("namespace") or f.get("controller")
        if not name:
            return
        disk = disks.setdefault(name, _Disk())
        if f.get("timeout"):
            disk.timeouts += n
            if f.get("action") in ("reset controller", "disable controller"):
                disk.resets += n
        if f.get("down"):
            disk.resets += n
            if "controller down (CSTS=0xffffffff: gone from the PCIe bus)" not in disk.gone \
                    and f.get("csts") == "0xffffffff":
                disk.gone.append("controller down (CSTS=0xffffffff: gone from the PCIe bus)")
        if f.get("removed"):
            disk.gone.append("removed by the driver")
        if f.get("status"):
            if "Unrecovered" in f["status"] or "Media" in f["status"]:
                disk.media += n
            disk.io += n
            count_into(disk.sense, f["status"], n)
            if f.get("lba"):
                count_into(disk.sectors, int(f["lba"]), n)
                # the block layer counts 512-byte sectors: the LBA itself, or 8 of them for 4 KiB blocks
                disk.driver_sectors.update({int(f["lba"]), int(f["lba"]) * 8})
            if f.get("opname"):
                count_into(disk.ops, f["opname"], n)

    def _finding(self, ctx, b, disks: dict):
        for d in disks.values():
            if not d.keys:
                d.media += d.sense_alone
        # an ATA port and the one SCSI disk of the burst are one drive
        ports = sorted(d for d in disks if d.startswith("ata"))
        drives = [d for d in disks if not d.startswith("ata") and not _VIRTUAL.match(d)]
        shown = {d: d for d in disks}
        if len(ports) == 1 and len(drives) == 1 and not drives[0].startswith("nvme"):
            shown[drives[0]] = f"{drives[0]} ({ports[0]})"
            disks[drives[0]].take(disks.pop(ports[0]))
        order = sorted(disks, key=lambda d: (d.startswith("ata"), -(disks[d].media + disks[d].io), d))
        media = sum(d.media for d in disks.values())
        io = sum(d.io for d in disks.values())
        title = ("Disks " if len(order) > 1 else "Disk ") + "; ".join(
            f"{shown[d]}: {disks[d].said()}" for d in order[:4] if disks[d].said())
        if len(order) > 4:
            title += f"; and {len(order) - 4} more device(s)"
        gone = any(d.gone for d in disks.values())
        only_refused = all(not (d.media or d.io or d.link or d.hsm or d.bus or d.timeouts or d.resets or d.gone
                                or d.buffer)
                           for d in disks.values())
        lost = any(d.buffer for d in disks.values())
        severity = ("low" if only_refused else "high" if media or gone or lost or io >= 10
                    else "medium")
        named = [d for d in order if not d.startswith("ata")]
        # an ATA port's name (ata1.00) is no block device to run smartctl on
        device = named[0] if named else None
        controller = next((d for d in order if d.startswith("nvme")), None)
        return self.finding(
            title=title + over_span(b), severity=severity, start=b.start, end=b.end, host=b.host, aligned=b.aligned,
            metrics={"media_errors": media, "io_errors": io,
                     "timeouts": sum(d.timeouts for d in disks.values()),
                     "interface_errors": sum(d.link + d.hsm + d.bus for d in disks.values()),
                     "resets": sum(d.resets for d in disks.values()),
                     "devices": len(named) or len(order), "device_gone": gone,
                     "virtual_disk_errors": sum(d.virtual for d in disks.values())},
            evidence=evidence_from_events(ctx.clock, b.rows, 6),
            refs={"devices": named or order, **({"device": device} if device else {}), "ports": ports,
                  **({"controller": re.sub(r"n\d+$", "", controller)} if controller else {}),
                  "sectors": sorted({s for d in disks.values() for s in d.sectors})[:20]},
        )
