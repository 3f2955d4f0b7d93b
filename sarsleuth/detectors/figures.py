"""What every number a finding states is: its definition, in one place.

A figure is a statistic of a series over a span (the peak of %util from
the first to the last sample of an episode, the median await in the 15
minutes before it), a value at a named time, a duration and the samples
behind it, a count of log lines, a ratio of two figures, a limit read from
the inputs (or a default, said as assumed).  Detectors measure their
numbers here (:func:`measure`) and keep the definitions on the finding
(``Finding.figures``); the audit (:mod:`sarsleuth.analysis.audit`) takes
each definition and measures it again from the case's data with the same
function, so a number a story states is the number the data gives, by one
definition.

Series are read as the detectors read them (:meth:`Context.series`: on
the host's clock, counter anomalies left out); a few figures are of a
series derived from others (:data:`DERIVED`: the CPU time not idle, the
memory available as a share of RAM), defined here once.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sarsleuth.detectors.series import fmt_elapsed
from sarsleuth.model import iso

#: What a figure may be (see :func:`evaluate`).
STATISTICS = ("max", "min", "mean", "median", "usual", "first", "last", "sum", "at", "samples", "elapsed",
              "ratio", "share", "lines", "limit", "ncpu", "link", "step")

#: How far back the usual level of a series is looked for, before each
#: sample: this long, and never fewer than :data:`PRIOR_ROWS` of its rows
#: (at sysstat's ten minutes, a quarter of an hour is the one row before,
#: which may already be the rise).
PRIOR_WINDOW = "15min"
PRIOR_ROWS = 6


def prior_window(index) -> pd.Timedelta:
    """:data:`PRIOR_WINDOW`, or :data:`PRIOR_ROWS` of the series' usual step when longer."""
    window = pd.Timedelta(PRIOR_WINDOW)
    if len(index) > 2:
        steps = np.diff(np.asarray(index, dtype="datetime64[ns]").astype(np.int64))
        steps = steps[steps > 0]
        if len(steps):
            window = max(window, pd.Timedelta(int(np.median(steps)) * PRIOR_ROWS, unit="ns"))
    return window


@dataclass(frozen=True)
class Figure:
    """One number a finding states, with how it was obtained.

    ``series``: ``(section, metric, device)`` of the host's series (a
    derived one's name in :data:`DERIVED`); for a ``share``, the
    numerator's, and ``per`` the denominator's.  ``start``/``end``: the
    span, both ends included (sample times); ``at``: the time the value
    was read at (for ``max``/``min``/``first``/``last`` the sample that
    holds it).  ``samples``: the valid samples of the span.  ``of``: the
    figures a ``ratio`` divides.  ``kinds``: the event kinds of ``lines``.
    ``origin``: for a limit, ``file:line`` it was read from, or
    ``assumed`` (a default).  ``fmt``/``scale``: how the finding writes it
    (``.2f``, ``,.0f``, ``elapsed``), after multiplying by ``scale``."""

    name: str
    stat: str
    value: float | None
    host: object = None
    series: tuple = ()
    per: tuple = ()
    start: object = None
    end: object = None
    at: object = None
    samples: int = 0
    of: tuple = ()
    kinds: tuple = ()
    origin: str = ""
    fmt: str = ".2f"
    scale: float = 1.0
    factor: float = 1.0      # a ratio's: ``factor * a / b`` (kB over bytes: 1024)

    def text(self, fmt: str | None = None) -> str:
        """The number as the finding writes it (``fmt``: with other digits)."""
        return said(self.value, fmt or self.fmt, self.scale)

    def to_dict(self) -> dict:
        out = {"name": self.name, "stat": self.stat, "value": _plain(self.value)}
        for key in ("series", "per", "of", "kinds"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        for key in ("start", "end", "at"):
            if getattr(self, key) is not None:
                out[key] = iso(getattr(self, key))
        if self.stat not in ("limit", "ncpu", "ratio"):
            out["samples"] = int(self.samples)
        if self.origin:
            out["origin"] = self.origin
        if self.factor != 1.0:
            out["factor"] = self.factor
        return out


def said(value, fmt: str = ".2f", scale: float = 1.0) -> str:
    """A figure's value as a finding writes it."""
    if value is None or value != value:
        return "?"
    if fmt == "elapsed":
        return fmt_elapsed(float(value))
    return format(float(value) * scale, fmt)


def _plain(value):
    if value is None:
        return None
    f = float(value)
    return int(f) if f == f and f.is_integer() and abs(f) < 2**53 else round(f, 6)


# ----------------------------------------------------------------- series
def _busy(ctx, host, device):
    """The CPU time doing work: 100 - %idle - %iowait (a CPU waiting for
    I/O is idle as far as work goes: %iowait is the disk's story)."""
    idle = ctx.series("cpu", "%idle", device=device, host=host)
    if idle is None:
        return None
    iowait = ctx.series("cpu", "%iowait", device=device, host=host)
    spare = idle + iowait.reindex(idle.index).fillna(0) if iowait is not None else idle
    return 100 - spare


def ram_kb(ctx, host):
    """The host's RAM in kB at each sample of its sar memory figures, or
    None.  sar's %memused is kbmemused over the kernel's MemTotal in every
    sysstat version, while what kbmemused counts changed (kbmemfree +
    kbmemused is the total only in files of sysstat before 11.7.4), so the
    total is kbmemused * 100 / %memused, taken at the sample where
    %memused is highest (sar text prints it to two decimals: the least
    relative rounding there)."""
    total = ctx.series("memory", "kbmemtotal", host=host)
    if total is not None:
        return total
    used, pct = ctx.series("memory", "kbmemused", host=host), ctx.series("memory", "%memused", host=host)
    if used is not None and pct is not None:
        pct = pct.reindex(used.index)
        if (pct > 0).any():
            at = pct.idxmax()
            return used * 0 + round(float(used[at]) * 100 / float(pct[at]))
    free = ctx.series("memory", "kbmemfree", host=host)
    if free is None or used is None:
        return None
    return (free + used).dropna()


def _avail_pct(ctx, host, device):
    """Memory available as a share of RAM: kbavail, or kbmemfree +
    kbcached + kbbuffers where sysstat has no kbavail (before 11.x) or the
    kernel none (before Linux 3.14)."""
    total = ram_kb(ctx, host)
    if total is None:
        return None
    avail = ctx.series("memory", "kbavail", host=host)
    free = ctx.series("memory", "kbmemfree", host=host)
    if avail is not None and free is not None:
        # sadc stores 0 where the kernel had no MemAvailable (before Linux
        # 3.14) and sar prints that 0 while memory is free: not recorded
        avail = avail[~((avail == 0) & (free.reindex(avail.index) > 0))]
        avail = avail if len(avail) else None
    if avail is None:
        if free is None:
            return None
        avail = free.copy()
        for extra in (ctx.series("memory", "kbcached", host=host), ctx.series("memory", "kbbuffers", host=host)):
            if extra is not None:
                avail = avail.add(extra, fill_value=0)
    return (avail / total.reindex(avail.index) * 100).dropna()


def _retrans_pct(ctx, host, device):
    """TCP segments retransmitted as a share of the segments sent, sample
    by sample (sysstat names the first retrans/s, retrseg/s in 12.7.6)."""
    _key, again = first_of(ctx, host, "net-etcp", ("retrans/s", "retrseg/s"))
    sent = ctx.series("net-tcp", "oseg/s", host=host)
    if again is None or sent is None:
        return None
    sent = sent.reindex(again.index)
    return (100.0 * again / sent.where(sent > 0)).dropna()


#: Series made of others: (section, name) -> how (ctx, host, device) reads it.
DERIVED = {("cpu", "%busy"): _busy, ("memory", "%avail"): _avail_pct, ("net-etcp", "%retrans"): _retrans_pct,
           ("memory", "kbram"): lambda ctx, host, device: ram_kb(ctx, host)}


def series_of(ctx, host, key: tuple):
    """The host's series ``(section, metric, device)``, as detectors read
    it (derived ones included), or None."""
    section, metric, device = (tuple(key) + ("",))[:3]
    how = DERIVED.get((section, metric))
    if how is not None:
        return how(ctx, host, device)
    return ctx.series(section, metric, device=device, host=host)


def link_capacity_bps(ctx, host, iface) -> float | None:
    """An interface's capacity in bits/s: ``--link-speed`` if given, else
    what sar's own figures say (%ifutil is the larger of the receive and
    send rates over the interface's speed; the median ratio over the
    samples above 10 %, so that the rounding of one sample does not
    matter)."""
    if ctx.link_speed_bps:
        return float(ctx.link_speed_bps)
    util = ctx.series("net-dev", "%ifutil", device=iface, host=host)
    rx = ctx.series("net-dev", "rxkB/s", device=iface, host=host)
    tx = ctx.series("net-dev", "txkB/s", device=iface, host=host)
    if util is None or rx is None or tx is None:
        return None
    rate = rx.combine(tx, max) * 1024.0
    util = util.reindex(rate.index)   # sources may sample at different times
    ok = (util > 10).fillna(False)
    if not ok.any():
        return None
    return float((rate[ok] / (util[ok] / 100.0)).median()) * 8


def first_of(ctx, host, section: str, metrics, device: str = ""):
    """``(key, series)`` of the first of ``metrics`` the host recorded
    (sysstat renamed some: aqu-sz/avgqu-sz, retrans/s/retrseg/s), or
    ``(None, None)``."""
    for metric in metrics:
        s = ctx.series(section, metric, device=device, host=host)
        if s is not None:
            return (section, metric, device), s
    return None, None


def span_of(series, start, end):
    """The samples of ``series`` from ``start`` to ``end``, both included."""
    idx = series.index
    return series[(idx >= start) & (idx <= end)]


# --------------------------------------------------------------- measuring
def evaluate(ctx, fig: Figure, known: dict | None = None):
    """``(value, at, samples)`` of a figure's definition, from the case's
    data (``known``: the finding's other figures, by name, for a ratio)."""
    stat = fig.stat
    if stat == "ratio":
        a, b = (known or {}).get(fig.of[0]), (known or {}).get(fig.of[1])
        if a is None or b is None or not b.value:
            return None, None, 0
        return fig.factor * float(a.value) / float(b.value), None, 0
    if stat == "ncpu":
        # the CPUs the machine ran on at ``at`` (a restart record may say another count), else the file's
        counts = ctx.ncpu_at(fig.host, pd.DatetimeIndex([fig.at])) if fig.at is not None else None
        n = counts[0] if counts is not None and counts[0] == counts[0] else ctx.ncpu(fig.host)
        return (float(n) if n else None), fig.at, 0
    if stat == "limit":
        return _limit_value(ctx, fig), None, 0
    if stat == "link":
        return link_capacity_bps(ctx, fig.host, fig.series[2] if len(fig.series) > 2 else ""), None, 0
    if stat == "lines":
        return _lines(ctx, fig)
    if stat == "elapsed" and not fig.series:
        return (pd.Timestamp(fig.end) - pd.Timestamp(fig.start)).total_seconds(), None, 2
    if stat == "step":
        times = ctx.sample_times(fig.host)
        return (float(np.median(times.diff().dt.total_seconds().to_numpy()[1:])) if len(times) > 1 else None,
                None, len(times))
    s = series_of(ctx, fig.host, fig.series)
    if s is None:
        return None, None, 0
    if stat == "at":
        hit = s[s.index == fig.at]
        return (float(hit.iloc[0]), fig.at, 1) if len(hit) else (None, fig.at, 0)
    w = span_of(s, fig.start, fig.end).dropna()
    n = len(w)
    if stat == "elapsed":
        return (pd.Timestamp(fig.end) - pd.Timestamp(fig.start)).total_seconds(), None, n
    if stat == "samples":
        return float(n), None, n
    if not n:
        return None, None, 0
    if stat == "share":
        per = series_of(ctx, fig.host, fig.per)
        if per is None:
            return None, None, n
        total = float(span_of(per, fig.start, fig.end).reindex(w.index).sum())
        return (100.0 * float(w.sum()) / total if total else 0.0), None, n
    if stat in ("max", "min"):
        k = int(np.nanargmax(w.to_numpy()) if stat == "max" else np.nanargmin(w.to_numpy()))
        return float(w.iloc[k]), w.index[k], n
    if stat in ("first", "last"):
        k = 0 if stat == "first" else -1
        return float(w.iloc[k]), w.index[k], n
    if stat == "sum":
        # a rate a second over its rows: each row counts for the seconds it
        # covers (a row of a minute at 2.07/s is 124, not 2.07)
        seconds = pd.Series(ctx.row_seconds(s, fig.host), index=s.index).reindex(w.index)
        return float((w * seconds.fillna(1.0)).sum()), None, n
    value = {"mean": w.mean, "median": w.median, "usual": lambda: usual_level(w)}[stat]()
    return float(value), None, n


# ---------------------------------------------------------------- baselines
def usual_level(w) -> float:
    """A stretch's usual level, where nothing came before it: its low
    quartile, or the median of its last quarter when lower (a recording
    that starts inside an incident has its calm after it)."""
    v = w.to_numpy(dtype=float)
    v = v[~np.isnan(v)]
    if not len(v):
        return float("nan")
    return float(min(np.quantile(v, 0.25), np.median(v[-max(1, len(v) // 4):])))


def prior_levels(series, segments, fallback: bool = True) -> np.ndarray:
    """The usual level before each sample: the median of the samples of
    the :func:`prior_window` before it in its stretch of records
    (``segments``), else (``fallback``) the stretch's :func:`usual_level`,
    NaN without it.  One definition with :func:`baseline_at`, which says
    it as a figure."""
    out = np.empty(len(series), dtype=float)
    seg = np.asarray(segments)
    window = prior_window(series.index)
    for sid in np.unique(seg):
        at = np.flatnonzero(seg == sid)
        part = series.iloc[at]
        prior = part.rolling(window, closed="left", min_periods=1).median().to_numpy(dtype=float)
        out[at] = np.where(np.isnan(prior), usual_level(part) if fallback else np.nan, prior)
    return out


def baseline_at(ctx, name: str, host, key: tuple, series, t, segments, fmt: str = ".2f",
                fallback: bool = True) -> Figure | None:
    """The usual level of ``series`` before ``t``, as a figure: the median
    of its samples of the :func:`prior_window` before ``t`` in the stretch
    of records holding ``t`` (``segments``: the series' own), else
    (``fallback``) the stretch's :func:`usual_level` (see :func:`prior_levels`)."""
    if series is None or not len(series):
        return None
    seg = np.asarray(segments)
    pos = min(int(np.searchsorted(series.index, t)), len(series) - 1)
    stretch = series.iloc[np.flatnonzero(seg == seg[pos])]
    before = stretch[(stretch.index < t) & (stretch.index >= t - prior_window(series.index))].dropna()
    if len(before):
        return measure(ctx, name, "median", host, key, before.index[0], before.index[-1], fmt=fmt)
    if not fallback:
        return None
    return measure(ctx, name, "usual", host, key, stretch.index[0], stretch.index[-1], fmt=fmt)


def measure(ctx, name: str, stat: str, host, series: tuple = (), start=None, end=None, at=None, *,
            per: tuple = (), of: tuple = (), known: dict | None = None, kinds: tuple = (),
            origin: str = "", fmt: str = ".2f", scale: float = 1.0, factor: float = 1.0) -> Figure | None:
    """A figure measured from the case's data by its definition (None
    when the data hold nothing for it)."""
    fig = Figure(name=name, stat=stat, value=None, host=host, series=tuple(series), per=tuple(per), start=start,
                 end=end, at=at, of=tuple(of), kinds=tuple(kinds), origin=origin, fmt=fmt, scale=scale,
                 factor=factor)
    value, when, samples = evaluate(ctx, fig, known)
    if value is None:
        return None
    return replace(fig, value=value, at=when if when is not None else at, samples=samples)


def given(name: str, value: float, *, origin: str, fmt: str = ",.0f", host=None, scale: float = 1.0,
          limit: str = "") -> Figure:
    """A limit the finding states: read from the inputs (``origin`` its
    ``file:line``, ``limit`` its name among the host's limits, read again
    by the audit), a default (``origin`` ``assumed``), what the data showed
    (``inferred``) or a detector's threshold (``threshold``)."""
    return Figure(name=name, stat="limit", value=float(value), host=host, origin=origin, fmt=fmt, scale=scale,
                  series=("limit", limit) if limit else ())


def _limit_value(ctx, fig: Figure):
    if fig.series[:1] != ("limit",):
        return fig.value          # a default, what the data showed, a rule, a sum of limits: nothing to read again
    lim = ctx.limit(fig.host, fig.series[1])
    return None if lim is None or lim.number() is None else float(lim.number())


def _lines(ctx, fig: Figure):
    """Log lines of ``kinds`` the host logged from ``start`` to ``end``."""
    ev = ctx.events_of(*fig.kinds)
    if ev is None or not len(ev):
        return 0.0, None, 0
    host = ev["host"]
    rows = ev[(host == fig.host) | (host.isna() if fig.host is None else False)]
    ts = rows["timestamp"]
    if fig.start is not None:
        try:
            rows = rows[(ts >= fig.start) & (ts <= fig.end)]
        except TypeError:
            return None, None, 0
    n = int(rows["count"].fillna(1).sum()) if "count" in rows else len(rows)
    return float(n), None, len(rows)


@dataclass
class Figures:
    """The figures of one finding, in the order it states them."""

    items: list = field(default_factory=list)

    def add(self, fig: Figure | None) -> Figure | None:
        if fig is not None:
            self.items = [f for f in self.items if f.name != fig.name] + [fig]
        return fig

    def __getitem__(self, name: str) -> Figure:
        return self.by_name()[name]

    def get(self, name: str):
        return self.by_name().get(name)

    def __contains__(self, name: str) -> bool:
        return name in self.by_name()

    def by_name(self) -> dict:
        return {f.name: f for f in self.items}

    def metrics(self) -> dict:
        """The finding's metrics: each figure's value under its name."""
        return {f.name: float(f.value) for f in self.items if f.value is not None}


def already_above(ctx, figs: Figures, host, key: tuple, t, label: str, base: Figure | None, unit: str = "") -> str:
    """What a finding's first sample said when the series crept over its
    threshold before it took off (its onset later): ``ldavg-1 6.41,
    already above its usual 0.99``, the value a figure of its own."""
    fig = figs.add(measure(ctx, "value_at_start", "at", host, key, at=t, fmt=base.fmt if base else ".2f"))
    if fig is None:
        return ""
    usual = f", already above its usual {base.text()}{unit}" if base is not None else ", already above its usual level"
    return f"{label} {fig.text()}{unit}{usual}"
