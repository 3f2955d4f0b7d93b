"""TIME_WAIT sockets (sar -n SOCK tcp-tw) against the table's cap.

A closed TCP connection stays in TIME_WAIT 60 s on the end that closed it
first; the kernel keeps at most ``net.ipv4.tcp_max_tw_buckets`` of them and
destroys the rest early (kernels since 4.x only count it, as the SNMP
counter TCPTimeWaitOverflow, which a bundle's ``netstat -s`` or ``nstat``
shows as it stood when the bundle was made).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sarsleuth.analysis.load_tests import targets_host
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import limit_evidence, metric_evidence
from sarsleuth.detectors.figures import Figures, given, measure
from sarsleuth.detectors.series import episodes, fmt_time, peak_ref, severity_for
from sarsleuth.model import Evidence, iso


class TcpTimewait(Detector):
    """Sockets in TIME_WAIT (sar -n SOCK tcp-tw) near
    ``net.ipv4.tcp_max_tw_buckets``: the host's own value when a bundle
    records it (quoted, with its file and line), the config file's, else
    180000, a common kernel default, said as assumed in the title and never
    as the host's.

    Why it matters: once the table is full the kernel destroys TIME_WAIT
    sockets early (kernels before 4.x log 'time wait bucket table overflow',
    later ones only count TCPTimeWaitOverflow), so the count holds flat at
    the limit: where no bundle gives the limit, that flat top is the sign.
    """

    id = "tcp-timewait"
    summary = ("TIME_WAIT sockets (tcp-tw) near net.ipv4.tcp_max_tw_buckets, or fewer than a load test against "
               "the host itself must have left")
    inputs = ("metrics", "reports")
    category = "socket-exhaustion"
    defaults = {"tcp_max_tw_buckets": 180000, "warn_fraction": 0.8, "min_rise_factor": 5.0,
                "min_tw": 5000, "max_gap_samples": 1, "min_duration_seconds": 0.0,
                "cap_min_tw": 1000, "cap_samples": 5, "cap_tolerance": 0.05}

    def run(self, ctx: Context):
        out = []
        p = self.params
        key = ("net-sock", "tcp-tw", "")
        for host in ctx.hosts("net-sock"):
            tw = ctx.series(*key, host=host)
            if tw is None or len(tw) < 2:
                continue
            limit, limit_ev, origin = float(p["tcp_max_tw_buckets"]), [], "config"
            configured = ctx.limit(host, "net.ipv4.tcp_max_tw_buckets")
            default = p["tcp_max_tw_buckets"] == self.defaults["tcp_max_tw_buckets"]
            # the host's own value, unless the user's config says otherwise
            if configured is not None and configured.number() and default:
                limit, limit_ev = configured.number(), [limit_evidence(configured)]
                origin = f"{configured.path}:{configured.line}"
            elif default:
                origin = "assumed"
            seg = np.asarray(ctx.stretches(tw, host))
            first = float(tw.iloc[0])
            if origin == "assumed":
                capped = self._cap(ctx, host, tw, first)
                counter = overflow_counter(ctx, host, capped[2]) if capped is not None else None
                # a flat top the kernel counted no overflow for is no table at its cap
                if capped is not None and not none_counted(counter):
                    out.append(self._capped_finding(ctx, host, tw, first, *capped, counter=counter))
                    continue
            near = tw >= p["warn_fraction"] * limit
            # a climb far above where its stretch of records started is worth
            # saying even well below the limit (low severity then): it is
            # where a connection flood shows first
            starts = tw.groupby(seg).transform("first")
            climb = tw >= np.maximum(p["min_tw"], p["min_rise_factor"] * np.maximum(starts, 1.0))
            for ep in episodes(tw, (near | climb).to_numpy(), p["max_gap_samples"],
                               min_duration_seconds=p["min_duration_seconds"], segments=seg):
                figs = Figures()
                peak = figs.add(measure(ctx, "peak_tcp_tw", "max", host, key, ep.start, ep.end, fmt=",.0f"))
                stretch = tw.index[seg == seg[tw.index.get_loc(ep.start)]]
                was = figs.add(measure(ctx, "first_tcp_tw", "first", host, key, stretch[0], ep.start, fmt=",.0f"))
                name = "tcp_max_tw_buckets" if origin != "assumed" else "assumed_tcp_max_tw_buckets"
                cap = figs.add(given(name, limit, origin=origin, host=host,
                                     limit="net.ipv4.tcp_max_tw_buckets" if limit_ev else ""))
                frac = figs.add(measure(ctx, "fraction_of_limit", "ratio", host, of=(peak.name, cap.name),
                                        known=figs.by_name(), fmt=".0f", scale=100))
                sev = severity_for(frac.value, [(0.98, "high"), (0.6, "medium")], "low")
                said = {"assumed": f"tcp_max_tw_buckets: the kernel default, {cap.text()}, assumed",
                        "config": f"tcp_max_tw_buckets {cap.text()}, as the config file gives"
                        }.get(origin, f"tcp_max_tw_buckets {cap.text()}")
                counter = overflow_counter(ctx, host, ep.end)
                counted, counter_ev = with_overflows(figs, counter, host)
                out.append(self.finding(
                    title=f"TIME_WAIT sockets climbed to {peak.text()} ({frac.text()} % of {said}){counted}",
                    severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-sock", host, peak.at,
                                                 f"tcp-tw {was.text()} at {fmt_time(was.at)} -> {peak.text()} at "
                                                 f"{fmt_time(peak.at)}")] + limit_ev + counter_ev,
                ))
        # a climb judged against the assumed default says little where a
        # load test against the host tells how many it must have left
        told = {f.host for f in out if not f.metrics.get("assumed_tcp_max_tw_buckets")}
        hosts = set(ctx.hosts("net-sock")) | {facts.host for facts in ctx.host_facts if facts.host}
        if len(hosts) == 1 and not hosts & told:
            # a load test's report names no host: it is the one host's
            host = next(iter(hosts))
            under = self._closed_by_runs(ctx, host)
            if under:
                out = [f for f in out if f.host != host] + under
        return out

    def _closed_by_runs(self, ctx, host) -> list:
        """A load test run against this very host that opens a connection
        for each request (``ab`` without ``-k``, ``wrk -H 'Connection:
        close'``) has both ends of every connection here: whichever end
        closes first keeps it in TIME_WAIT for 60 s (the kernel's fixed
        TCP_TIMEWAIT_LEN), so the host holds a TIME_WAIT socket for each
        request of the last 60 s, unless its table is full.  A sar row far
        under that count (half or less) is a table at its cap; without a
        row, a run that closed more in 60 s than the host's known
        ``tcp_max_tw_buckets`` overflowed it."""
        runs = [r for r in ctx.reports if _connection_per_request(r)
                and targets_host(r.get("url") or f"//{r.get('server_hostname') or ''}", host)]
        if not runs:
            return []
        tw = ctx.series("net-sock", "tcp-tw", host=host)
        if tw is not None and len(tw):
            # a table at its cap holds there: a count that climbs past it
            # while the runs still close connections was no cap (a lossy
            # path closes fewer than the run's average rate says, in bursts)
            last = max(pd.Timestamp(r["end"]) for r in runs) + pd.Timedelta(seconds=TIMEWAIT_SECONDS)
            for t, count in tw.items():
                closed = sum(_closed_within(r, t) for r in runs)
                if count >= self.params["cap_min_tw"] and closed >= 2 * count:
                    try:
                        later = tw[(tw.index > t) & (tw.index <= last)]
                    except TypeError:          # a wall clock beside an aware one
                        later = tw.iloc[:0]
                    if len(later) and float(later.max()) > count * (1 + self.params["cap_tolerance"]):
                        continue
                    counter = overflow_counter(ctx, host, last)
                    if none_counted(counter):
                        return []          # the kernel destroyed none early: fewer closed than the rate says
                    return [self._under_runs(ctx, host, tw, t, closed, runs, counter)]
        configured = ctx.limit(host, "net.ipv4.tcp_max_tw_buckets")
        if configured is None or not configured.number():
            return []
        for r in runs:
            closed = _closed_within(r, pd.Timestamp(r["end"]))
            if closed > configured.number():
                counter = overflow_counter(ctx, host, pd.Timestamp(r["end"]))
                if none_counted(counter):
                    continue
                return [self._over_limit(host, r, closed, configured, counter)]
        return []

    def _under_runs(self, ctx, host, tw, t, closed, runs, counter=None):
        key = ("net-sock", "tcp-tw", "")
        figs = Figures()
        held = figs.add(measure(ctx, "peak_tcp_tw", "at", host, key, at=t, fmt=",.0f"))
        left = figs.add(given("run_timewait_expected", closed, origin="inferred", host=host))
        figs.add(given("inferred_tcp_max_tw_buckets", held.value, origin="inferred", host=host))
        figs.add(given("fraction_of_limit", 1.0, origin="inferred", host=host, fmt=".0f"))
        figs.add(given("limit_inferred", 1, origin="inferred", host=host, fmt="d"))
        names = ", ".join(f"`{r.get('command') or r.get('tool')}`" for r in runs[:2])
        seconds = float(ctx.row_seconds(tw, host)[tw.index.get_loc(t)])
        counted, counter_ev = with_overflows(figs, counter, host)
        return self.finding(
            title=(f"TIME_WAIT sockets at {held.text()} at {fmt_time(t)} where the load test's connections to "
                   f"this host in the 60 s before would have left {left.text()}: a table full at its cap "
                   f"(tcp_max_tw_buckets is likely {held.text()}; not recorded: inferred){counted}"),
            severity="high", start=t, end=t, host=host, figures=figs,
            refs={"peak_time": iso(t), **({"sample_seconds": seconds} if seconds == seconds else {})},
            explanation=(f"{names} ran against this host with a new connection for each request: both ends of "
                         "each connection are on this host, and the end that closes first keeps it in TIME_WAIT "
                         "for 60 s. sar counted far fewer: the kernel destroyed the rest early, its TIME_WAIT "
                         "table full (net.ipv4.tcp_max_tw_buckets)."),
            evidence=[metric_evidence(ctx, "net-sock", host, t, f"tcp-tw {held.text()} at {fmt_time(t)}")]
            + [Evidence(str(r.get("path", "")), r.get("line"), r.get("command") or r.get("tool")) for r in runs[:2]]
            + counter_ev,
        )

    def _over_limit(self, host, run, closed, configured, counter=None):
        figs = Figures()
        left = figs.add(given("run_timewait_expected", closed, origin="inferred", host=host))
        cap = figs.add(given("tcp_max_tw_buckets", configured.number(), origin=f"{configured.path}:{configured.line}",
                             host=host, limit="net.ipv4.tcp_max_tw_buckets"))
        figs.add(given("fraction_of_limit", closed / cap.value, origin="inferred", host=host, fmt=".0f", scale=100))
        command = run.get("command") or run.get("tool")
        start, end = pd.Timestamp(run["start"]), pd.Timestamp(run["end"])
        counted, counter_ev = with_overflows(figs, counter, host)
        return self.finding(
            title=(f"TIME_WAIT table overflowed: `{command}` closed {left.text()} connections to this host within "
                   f"60 s, each held in TIME_WAIT 60 s, past tcp_max_tw_buckets {cap.text()}{counted}"),
            severity="high", start=start, end=end, host=host, figures=figs,
            aligned=run.get("time_from") in ("report", "window", "sar-match"),
            explanation=("The run opened a new connection for each request against this very host: the end that "
                         "closes first keeps each in TIME_WAIT for 60 s. Past net.ipv4.tcp_max_tw_buckets the "
                         "kernel destroys them early (netstat -s: TCPTimeWaitOverflow)."),
            evidence=[Evidence(str(run.get("path", "")), run.get("line"), command), limit_evidence(configured)]
            + counter_ev,
        )

    def _cap(self, ctx, host, tw, first):
        """(cap, first sample at it, last) when TIME_WAIT climbed far from
        where it started and then held at one value for ``cap_samples``
        samples or more while connections went on opening (sar -n TCP
        active/s + passive/s adding up to half the table or more): a table
        at its limit holds exactly its size (closing connections skip
        TIME_WAIT), where a steady flow wanders around its level and the
        sockets of a burst that ended hold still until they expire together.
        None otherwise."""
        peak = float(tw.max())
        if peak < self._climbed(first):
            return None
        at = tw[tw >= peak - max(2.0, 0.001 * peak)]
        # held at one value longer than a TIME_WAIT lasts is no burst that
        # ended (its sockets expire together within 60 s): at a minute's
        # rows, three rows at the cap are two minutes of it
        held = (at.index[-1] - at.index[0]).total_seconds() if len(at) > 1 else 0.0
        if len(at) < self.params["cap_samples"] and not (len(at) > 1 and held > TIMEWAIT_SECONDS):
            return None
        opened = 0.0
        for metric in ("active/s", "passive/s"):
            rate = ctx.series("net-tcp", metric, host=host)
            if rate is None:
                return None
            # each row's rate over the seconds it covers (its own interval:
            # the first row inside counts too, a 10 s row as 10 s)
            inside = np.asarray((rate.index > at.index[0]) & (rate.index <= at.index[-1]))
            seconds = np.nan_to_num(np.asarray(ctx.row_seconds(rate, host), dtype=float)[inside])
            opened += float((rate.to_numpy(dtype=float)[inside] * seconds).sum())
        if opened < 0.5 * peak:
            return None
        return peak, at.index[0], at.index[-1]

    def _climbed(self, first: float) -> float:
        """The count past which TIME_WAIT has climbed from where it started."""
        return max(self.params["cap_min_tw"], self.params["min_rise_factor"] * max(first, 1.0))

    @staticmethod
    def _refs(tw, peak_time) -> dict:
        step = tw.index.to_series().diff().dt.total_seconds().median()
        return {"peak_time": iso(peak_time), **({"sample_seconds": float(step)} if step == step and step else {})}

    def _capped_finding(self, ctx, host, tw, first, cap, start, end, counter=None):
        key = ("net-sock", "tcp-tw", "")
        figs = Figures()
        was = figs.add(measure(ctx, "first_tcp_tw", "first", host, key, tw.index[0], start, fmt=",.0f"))
        held = figs.add(measure(ctx, "peak_tcp_tw", "max", host, key, start, end, fmt=",.0f"))
        figs.add(given("inferred_tcp_max_tw_buckets", cap, origin="inferred", host=host))
        figs.add(given("fraction_of_limit", 1.0, origin="inferred", host=host, fmt=".0f"))
        figs.add(given("limit_inferred", 1, origin="inferred", host=host, fmt="d"))
        long = figs.add(measure(ctx, "seconds_at_cap", "elapsed", host, key, start, end, fmt="elapsed"))
        counted, counter_ev = with_overflows(figs, counter, host)
        return self.finding(
            title=(f"TIME_WAIT sockets held at {held.text()} for {long.text()} ({long.samples} samples): a table "
                   f"full at its cap (tcp_max_tw_buckets is likely {held.text()}; not recorded: inferred from the "
                   f"flat top){counted}"),
            severity="high", start=tw.index[tw >= self._climbed(first)][0], end=end, host=host, figures=figs,
            refs=self._refs(tw, start),
            evidence=[metric_evidence(ctx, "net-sock", host, start,
                                      f"tcp-tw {was.text()} at {fmt_time(was.at)} -> {held.text()} at "
                                      f"{fmt_time(start)}, still {held.text()} at {fmt_time(end)}")] + counter_ev,
        )


#: Seconds a closed TCP connection stays in TIME_WAIT (TCP_TIMEWAIT_LEN, fixed in Linux).
TIMEWAIT_SECONDS = 60.0


def _connection_per_request(r: dict) -> bool:
    """Does a load test open a connection for each request: ab without
    keep-alive (``-k``), wrk with a ``Connection: close`` header."""
    command = str(r.get("command") or "")
    if r.get("tool") == "ab":
        return bool(command) and r.get("keepalive_requests") is None and not re.search(r"\s-\w*k", command)
    if r.get("tool") in ("wrk", "wrk2"):
        return bool(re.search(r"connection:\s*close", command, re.I))
    return False


def _closed_within(r: dict, t) -> float:
    """The requests (each a connection) of run ``r`` completed in the
    TIME_WAIT span before ``t``, spread evenly over the run."""
    n = next((float(r[k]) for k in ("requests_completed", "requests_total") if r.get(k)), 0.0)
    if not n or r.get("start") is None or r.get("end") is None:
        return 0.0
    try:
        start, end, t = pd.Timestamp(r["start"]), pd.Timestamp(r["end"]), pd.Timestamp(t)
        lo = max(start, t - pd.Timedelta(seconds=TIMEWAIT_SECONDS))
        hi = min(end, t)
    except (TypeError, ValueError):
        return 0.0
    span = max((end - start).total_seconds(), 1.0)
    return n * max(0.0, (hi - lo).total_seconds()) / span if hi >= lo else 0.0


#: The kernel's count of TIME_WAIT sockets it destroyed early, its table full, as nstat names it.
OVERFLOW_COUNTER = "TcpExtTCPTimeWaitOverflow"


def overflow_counter(ctx: Context, host, end):
    """TCPTimeWaitOverflow as the host's bundle recorded it, when it speaks
    for a finding ending at ``end``: the counter runs since boot, so the
    bundle must have been made after ``end`` (when it says when) with no
    restart in between.  None otherwise."""
    facts = ctx.facts(host)
    counter = facts.counters.get(OVERFLOW_COUNTER) if facts is not None else None
    if counter is None or counter.number() is None:
        return None
    if facts.collected:
        try:
            made, end = pd.Timestamp(facts.collected), pd.Timestamp(end)
            if made < end:
                return None
            restarts = ctx.restarts(host)
            if len(restarts) and bool(((restarts > end) & (restarts <= made)).any()):
                return None
        except (TypeError, ValueError):
            return None
    return counter


def none_counted(counter) -> bool:
    """Did the kernel count no overflow at all?  Then no table was at its cap."""
    return counter is not None and counter.number() == 0


def with_overflows(figs: Figures, counter, host) -> tuple[str, list]:
    """What a finding about a full table adds from a counter above zero:
    (its words for the title, its evidence)."""
    if counter is None or not counter.number():
        return "", []
    n = figs.add(given("timewait_overflows", counter.number(), origin=counter.where(), host=host,
                       limit=OVERFLOW_COUNTER))
    return (f"; the kernel counted {n.text()} TIME_WAIT overflows since boot (TCPTimeWaitOverflow when the "
            f"bundle was made)"), [limit_evidence(counter)]
