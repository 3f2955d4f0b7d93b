"""Units that did not start because a device they need never appeared.

systemd waits for a device (a disk, a LUKS volume opened at boot, a
network volume) as long as its job timeout, then says "Timed out waiting
for device /dev/mapper/crypt-..." and fails every unit that requires it,
each with "Dependency failed for DESCRIPTION." and "UNIT: Job UNIT/start
failed with result 'dependency'." (src/core/job.c).  Those units did not
fail: the device is the failure, and they are what it stopped.
"""
from __future__ import annotations


def blocked_by_devices(units: dict, same_moment_s: float) -> None:
    """Fold into each device that timed out (a unit with ``device`` set)
    the units of ``units`` whose only result is 'dependency', told within
    ``same_moment_s`` of it: they become its ``blocked`` list and their
    lines its evidence, and are taken out of ``units``."""
    devices = [unit for unit in units.values() if unit.device]
    for device in devices:
        for name, unit in list(units.items()):
            if unit.device or set(unit.results) != {"dependency"} or not _together(device, unit, same_moment_s):
                continue
            device.blocked.append(name)
            device.rows += unit.rows
            del units[name]


def _together(a, b, seconds: float) -> bool:
    return any(abs((x - y).total_seconds()) <= seconds for x in a.failed_at for y in b.failed_at)
