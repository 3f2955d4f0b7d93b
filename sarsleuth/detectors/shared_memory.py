"""Memory that ran out into shared memory (a tmpfs, /dev/shm): what sar's
rows say of it, for the memory detectors' titles.  Pages in a tmpfs are
page cache no reclaim can drop and no process's RSS holds: no OOM kill
frees them."""
from __future__ import annotations

from sarsleuth.detectors.figures import Figures, measure, series_of


_GIB = 1.0 / (1 << 20)


#: How much memory must have gone (and gone to shared memory) for it to be
#: what ran out, in kB (256 MiB): less is the page cache's own coming and going.
MATERIAL_KB = 262_144


def shared_memory_grew(ctx, host, began, end, figs: Figures) -> str:
    """What to say when the memory that ran out went to shared memory
    (tmpfs, /dev/shm): sar's kbshmem rose by most of what kbavail lost; on
    a sysstat that records no kbshmem, kbcached did while the memory the
    processes use (kbmemused) did not grow, which only shared memory does
    (tmpfs pages are page cache that no reclaim can drop, so MemAvailable
    does not count them).  No process's RSS holds them, and the OOM killer
    cannot free them by killing their writer.  '' when it did not."""
    for metric in ("kbshmem", "kbcached"):
        key = ("memory", metric, "")
        if series_of(ctx, host, key) is None or series_of(ctx, host, ("memory", "kbavail", "")) is None:
            continue
        was = measure(ctx, f"{metric}_before_fall", "at", host, key, at=began, fmt=".1f", scale=_GIB)
        peak = measure(ctx, f"peak_{metric}", "max", host, key, began, end, fmt=".1f", scale=_GIB)
        had = measure(ctx, "kbavail_before_fall", "at", host, ("memory", "kbavail", ""), at=began, fmt=".1f",
                      scale=_GIB)
        left = measure(ctx, "min_kbavail", "min", host, ("memory", "kbavail", ""), began, end, fmt=".1f", scale=_GIB)
        if None in (was, peak, had, left):
            continue
        grew, lost = peak.value - was.value, had.value - left.value
        # measured from where memory was already short, a cache's wobble is half of nothing
        if lost < MATERIAL_KB or grew < max(lost / 2, MATERIAL_KB):
            continue
        if metric == "kbcached" and _processes_grew(ctx, host, began, end, grew):
            return ""   # processes grew too: cache beside them is not what ran out
        for fig in (was, peak, had, left):
            figs.add(fig)
        fell = f"as kbavail fell from {had.text()} GiB to {left.text()} GiB"
        if metric == "kbshmem":
            return (f"shared memory (kbshmem) up from {was.text()} GiB to {peak.text()} GiB {fell}: files in a tmpfs "
                    "or /dev/shm, held by no process's RSS, that no OOM kill frees")
        return (f"page cache (kbcached) up from {was.text()} GiB to {peak.text()} GiB {fell} while the processes' "
                "memory (kbmemused) did not grow: most likely files in a tmpfs or /dev/shm, held by no process's "
                "RSS, that no OOM kill frees")
    return _cache_pushed_into_swap(ctx, host, began, end, figs)


def _processes_grew(ctx, host, began, end, cache_grew: float) -> bool:
    """Did the processes' memory (kbmemused) grow by half of what the cache
    grew by, or is it unknown?  Then the cache is not what ran out."""
    used = ("memory", "kbmemused", "")
    was = measure(ctx, "kbmemused_before_fall", "at", host, used, at=began)
    peak = measure(ctx, "peak_kbmemused", "max", host, used, began, end)
    return was is None or peak is None or peak.value - was.value >= cache_grew / 2


def _cache_pushed_into_swap(ctx, host, began, end, figs: Figures) -> str:
    """The same told by swap where kbavail does not show the fall (an OOM
    kill of a large process gave its memory back before the next sample):
    the page cache grew by at least half of what went to swap while the
    processes' memory did not grow.  Cache the kernel can drop is dropped
    before the processes' pages are written to swap; cache that pushed them
    out is shared memory."""
    cached, swap = ("memory", "kbcached", ""), ("swap", "kbswpused", "")
    if any(series_of(ctx, host, k) is None for k in (cached, swap)):
        return ""
    was = measure(ctx, "kbcached_before_fall", "at", host, cached, at=began, fmt=".1f", scale=_GIB)
    peak = measure(ctx, "peak_kbcached", "max", host, cached, began, end, fmt=".1f", scale=_GIB)
    swap_was = measure(ctx, "kbswpused_before", "at", host, swap, at=began, fmt=".1f", scale=_GIB)
    swap_peak = measure(ctx, "peak_kbswpused", "max", host, swap, began, end, fmt=".1f", scale=_GIB)
    if None in (was, peak, swap_was, swap_peak):
        return ""
    grew, pushed = peak.value - was.value, swap_peak.value - swap_was.value
    if pushed <= 0 or grew < pushed / 2 or _processes_grew(ctx, host, began, end, grew):
        return ""
    for fig in (was, peak, swap_was, swap_peak):
        figs.add(fig)
    return (f"page cache (kbcached) up from {was.text()} GiB to {peak.text()} GiB while swap in use rose from "
            f"{swap_was.text()} GiB to {swap_peak.text()} GiB and the processes' memory (kbmemused) did not grow: "
            "most likely files in a tmpfs or /dev/shm, held by no process's RSS, that no OOM kill frees")
