"""Stage 2, settle the clock: every source on one clock (each host's zone,
the years and dates that were guessed, dmesg's uptime anchors, which host
each file belongs to: :func:`sarsleuth.timebase.settle`), then the user's
``--window`` placed on it."""
from __future__ import annotations

from dataclasses import dataclass, field

from sarsleuth.analysis import user_window
from sarsleuth.inputs.parsers import registry
from sarsleuth.timebase import settle
from sarsleuth.timebase.clock import Clock


@dataclass
class Settled:
    clock: Clock
    window: tuple | None = None
    #: "--window ... holds no data: ...", when the window misses every input
    empty_window: str | None = None
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def settle_clock(sources, hosts, options, placed_by: tuple = ("--window", "--tz")) -> Settled:
    """One clock for ``sources`` (``hosts``: the bundles' HostFacts, whose
    zones count for their hosts; ``options``: the run's
    :class:`~sarsleuth.options.Options`; ``placed_by``: the command's
    options that place a file dated by its modification time)."""
    settled = settle(sources, registry(), tz=options.tz, placed_by=placed_by,
                     host_zones={h.host: (h.timezone, h.timezone_from) for h in hosts if h.timezone},
                     host_boots={h.host: (h.booted, h.booted_from) for h in hosts if h.host and h.booted},
                     host_collected={h.host: h.collected for h in hosts if h.host and h.collected})
    out = Settled(clock=settled.clock, warnings=list(settled.warnings), notes=list(settled.notes))
    given, said = user_window.dated(options.window, sources, out.clock.zone)
    if said:
        out.notes.append(said)
    out.window = user_window.window_on_clock(given, out.clock.zone)
    out.notes.extend(user_window.window_readings(given, out.clock.zone))
    if out.window is not None:
        placed = user_window.place_untimed_reports(sources, out.window)
        # their place is the window now, not the file's modification time
        out.notes = [n for n in out.notes if not any(n.startswith(f"{path}: placed at its file's modification time")
                                                     for path in placed)]
        out.empty_window = user_window.window_misses(sources, out.window, out.clock.zone, given)
    return out
