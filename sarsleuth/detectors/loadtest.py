"""Load-test detectors over parsed ab/wrk/wrk2/httperf/tsar reports."""
from __future__ import annotations

import numpy as np

from sarsleuth.detectors.ab_lengths import length_failures, report_figure as _num
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence
from sarsleuth.detectors.series import severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.network import link_capacity_Bps


def _label(report: dict) -> str:
    tool = report.get("tool", "load test")
    conc = report.get("concurrency") or report.get("connections")
    cmd = report.get("command")
    bits = [tool]
    if conc:
        bits.append(f"c={conc}")
    if cmd:
        bits.append(f"`{cmd}`")
    return " ".join(bits)


def _evidence(report: dict, text: str, *keys: str) -> list:
    """The line of the first of ``keys`` the report read with a value
    (not zero), verbatim (the parsers note each value's line); else the
    report's first line and ``text``."""
    lines = report.get("value_lines") or {}
    for key in keys:
        where = lines.get(key)
        if where and report.get(key):
            return [Evidence(str(report.get("path", "")), where["line"], where["text"])]
    return [Evidence(str(report.get("path", "")), report.get("line"), text)]


def _times(report: dict):
    return report.get("start"), report.get("end") or report.get("start")


def _aligned(report: dict) -> bool:
    """A report placed by file mtime is not on the incident clock."""
    return report.get("time_from") in ("report", "window", "sar-match") and report.get("start") is not None


def _total_requests(r: dict) -> float:
    for key in ("requests_completed", "requests_total", "requests", "replies"):
        if r.get(key):
            return float(r[key])
    return 0.0


class LoadtestErrors(Detector):
    """Failed requests, non-2xx responses, socket errors and aborted runs in a
    load-test report, with the breakdown.

    Why it matters: a run with errors measures failures, not capacity; the
    breakdown says what refused (connect, read, timeout, length...).
    """

    id = "loadtest-errors"
    summary = "load-test failures: failed/non-2xx/socket errors/aborts, with the breakdown"
    inputs = ("reports",)
    category = "load-test-failure"
    defaults = {"min_error_fraction": 0.001}

    def run(self, ctx: Context):
        out = []
        for r in ctx.reports:
            failed = _num(r, "failed_requests")
            non2xx = _num(r, "non_2xx")
            breakdown = {}
            for group in ("failed_breakdown", "socket_errors", "errors"):
                for k, v in (r.get(group) or {}).items():
                    if v:
                        breakdown[f"{group.split('_')[0]}_{k}"] = float(v)
            sock = sum(v for k, v in breakdown.items() if k.startswith("socket_"))
            httperf_errors = _num(r, "errors_total")
            total = _total_requests(r)
            # ab counts a non-2xx reply as a Length failure too, and one bad
            # request in several failure buckets: the requests that failed
            # are at most max(failed, non-2xx), never the sum.  Socket
            # errors (wrk) and httperf errors count connections, not
            # requests, so they are said as counts, not as a share.
            bad_requests = max(failed, non2xx, 0)
            aborted = bool(r.get("aborted"))
            share = min(1.0, bad_requests / total) if total else None
            conn_share = min(1.0, (sock + httperf_errors) / total) if total else None
            if not aborted and bad_requests + sock + httperf_errors == 0:
                continue
            # wrk records no latency for a request it timed out (src/wrk.c): its latency
            # figures leave them out, so even a few timeouts change what they say
            unseen = float((r.get("socket_errors") or {}).get("timeout") or 0) if str(r.get("tool", "")).startswith(
                "wrk") else 0.0
            if not aborted and total and max(share or 0, conn_share or 0) < self.params["min_error_fraction"] \
                    and not unseen:
                continue
            frac = share if bad_requests else None
            # ab counts a request once in every failure kind it hits: its
            # "Failed requests" can exceed the requests made, and then no
            # share can be read from it; the largest kind is a floor
            counted_twice = bool(total) and bad_requests > total
            if counted_twice:
                kinds = [v for k, v in breakdown.items() if k.startswith("failed_")] + [non2xx]
                frac = min(1.0, max(kinds) / total) if max(kinds) else None
            parts = []
            if failed:
                parts.append(f"{failed:.0f} failed")
            if non2xx:
                parts.append(f"{non2xx:.0f} non-2xx")
            if sock:
                parts.append(f"{sock:.0f} socket errors" + (" and no request answered"
                                                            if r.get("requests_total") == 0 else ""))
            if httperf_errors:
                parts.append(f"{httperf_errors:.0f} errors")
            if aborted:
                # what it did before giving up is the run's key fact
                done, asked = r.get("requests_completed"), r.get("requests")
                after = (f" after {done:.0f} of {asked:.0f} requests" if done is not None and asked and asked != done
                         else f" after {done:.0f} requests" if done is not None else "")
                parts.append(f"aborted{after}: " + str(r.get("abort_error") or "run did not finish"))
            if unseen:
                slowest = _num(r, "latency_max_s")
                parts.append(f"the {unseen:.0f} timed out are left out of its latency figures"
                             + (f" (its max {slowest * 1000:.2f} ms is not the slowest)" if slowest else ""))
            detail = ", ".join(f"{k.split('_', 1)[1]} {v:.0f}" for k, v in breakdown.items())
            length_only = bool(failed) and not (non2xx or sock or httperf_errors or aborted) and set(breakdown) == {
                "failed_length"} and breakdown["failed_length"] == failed
            said = length_failures(r, failed, total) if length_only else None
            undecided = bool(said) and said[0] is None
            length_only = bool(said and said[0])
            if said is not None:
                parts = said[1]
                frac = None if length_only else frac
            worst = max(frac or 0, conn_share or 0)
            # a run that gave up, or in which no request was answered, failed whole
            failed_share = 1.0 if aborted or (not total and sock + httperf_errors) else worst
            sev = "high" if failed_share >= 0.1 else severity_for(worst, [(0.01, "medium")])
            sev = "low" if length_only else ("medium" if undecided else sev)
            start, end = _times(r)
            if counted_twice:
                share_text = (f" of {total:.0f} requests ({detail}): ab counts a request in each kind of failure it "
                              "hits, so more failures than requests"
                              + (f"; at least {frac * 100:.1f} % of the requests failed" if frac else ""))
            else:
                share_text = f" ({frac * 100:.1f} % of {total:.0f} requests)" if frac else ""
            out.append(self.finding(
                title=f"{_label(r)}: " + ", ".join(parts) + share_text,
                severity=sev, start=start, end=end, aligned=_aligned(r),
                metrics={"failed_requests": failed, "non_2xx": non2xx, "socket_errors": sock,
                         "errors_total": httperf_errors, "error_fraction": frac, "failed_share": failed_share,
                         "aborted": aborted, "timeouts_not_in_latency": unseen,
                         "failures_counted_twice": counted_twice, "length_only": int(length_only),
                         "length_share": (failed / total if total else None) if length_only else None, **breakdown},
                explanation=kb_entry(self.id)["explanation_length"] if length_only else None,
                evidence=_evidence(r, ", ".join(parts) + (f" [{detail}]" if detail else ""),
                                   "failed_requests", "non_2xx", "socket_errors", "errors_total", "abort_error"),
            ))
        return out


class LoadtestTailLatency(Detector):
    """p99/p50 and max/p50 latency ratios of a load-test report.

    Why it matters: report 001's first run had p50 18 ms but p99 264 ms
    (14x) and max 1026 ms: queueing somewhere that the mean hides.
    """

    id = "loadtest-tail-latency"
    summary = "long latency tail in a load test: p99/p50 and max/p50 ratios"
    inputs = ("reports",)
    category = "load-test-failure"
    defaults = {"p99_over_p50": 10.0, "max_over_p50": 50.0, "min_p99_s": 0.05}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for r in ctx.reports:
            p50, p99, mx = _num(r, "latency_p50_s"), _num(r, "latency_p99_s"), _num(r, "latency_max_s")
            if p50 <= 0 or p99 <= 0:
                continue
            r99, rmax = p99 / p50, (mx / p50 if mx else 0.0)
            if p99 < p["min_p99_s"] or (r99 < p["p99_over_p50"] and rmax < p["max_over_p50"]):
                continue
            start, end = _times(r)
            out.append(self.finding(
                title=f"{_label(r)}: long latency tail, p99 {_ms(p99)} = {r99:.1f} x p50 {_ms(p50)}"
                      + (f", max {_ms(mx)}" if mx else ""),
                severity="medium" if r99 >= 2 * p["p99_over_p50"] else "low",
                start=start, end=end, aligned=_aligned(r),
                metrics={"latency_p50_s": p50, "latency_p99_s": p99, "latency_max_s": mx or None,
                         "p99_over_p50": r99, "max_over_p50": rmax or None},
                evidence=_evidence(r, f"50% {_ms(p50)}, 99% {_ms(p99)}, max {_ms(mx)}",
                                   "latency_p99_s"),
            ))
        return out


#: At most this many requests in service at once is "one at a time".
ONE_AT_A_TIME = 1.5


def _served_at_once(r: dict):
    """How many requests the server had in service at once, estimated as
    the rate it answered times its fastest answer (a request that found no
    queue took the service time; at P in parallel the server answers P per
    service time), with the run's concurrency: ``(estimate, fastest_s,
    concurrency, how)``, or None when the report lacks a figure (ab prints
    the fastest as Connection Times' ``Total: min``; wrk prints none).
    A run that failed requests is not measured: a refusal is answered fast."""
    fastest = (r.get("connection_times_s") or {}).get("total", {}).get("min")
    rate = _num(r, "requests_per_sec")
    if not fastest or rate <= 0 or _num(r, "failed_requests") or _num(r, "non_2xx"):
        return None
    concurrency, how = _num(r, "concurrency"), "Concurrency Level"
    mean, across = _num(r, "time_per_request_mean_s"), _num(r, "time_per_request_across_s")
    if not concurrency and mean and across:
        # ab prints the mean as concurrency x the mean across all requests
        concurrency, how = round(mean / across), "Time per request, mean over mean across all"
    return rate * float(fastest), float(fastest), concurrency, how


class LoadtestStall(Detector):
    """A load test whose requests all waited about as long: the median at a
    second or more and the 99th percentile within a small factor of it
    (p50 = p99 = 5.01 s), often with timeouts.

    Why it matters: a server that answers slowly spreads its latencies; one
    that stopped answering (frozen, SIGSTOPped, stuck behind a lock or a
    stalled disk) holds every request until it comes back or the client
    gives up, so the percentiles collapse onto the length of the stall.  A
    tail detector sees no tail there (p99/p50 = 1): the stall is the
    finding.  A run with a long tail over a normal median is not one (its
    typical request was answered).
    """

    id = "loadtest-stall"
    summary = "load test whose every request waited about as long, a second or more: the server stopped answering"
    inputs = ("reports",)
    category = "service-failure"
    defaults = {"min_p50_s": 1.0, "max_p99_over_p50": 1.5, "max_in_service": ONE_AT_A_TIME}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for r in ctx.reports:
            p50, p99 = _num(r, "latency_p50_s"), _num(r, "latency_p99_s")
            if p50 < p["min_p50_s"] or p99 <= 0 or p99 / p50 > p["max_p99_over_p50"]:
                continue
            at_once = _served_at_once(r)
            if at_once is not None and at_once[0] <= p["max_in_service"]:
                continue    # a server answering one at a time, not a frozen one (loadtest-serialized)
            timeouts = float((r.get("socket_errors") or {}).get("timeout") or 0)
            failed = max(_num(r, "failed_requests"), _num(r, "non_2xx"))
            start, end = _times(r)
            spread = f"p50 and p99 {_s(p50)}" if _s(p50) == _s(p99) else f"p50 {_s(p50)}, p99 {_s(p99)}"
            said = f"every request waited about {_s(p50)} ({spread})"
            title = f"{_label(r)}: {said}" + (f", {timeouts:.0f} timed out" if timeouts else "")
            out.append(self.finding(
                title=title, severity="high" if timeouts or failed else "medium", start=start, end=end,
                aligned=_aligned(r),
                metrics={"latency_p50_s": p50, "latency_p99_s": p99, "p99_over_p50": p99 / p50, "stall_s": p50,
                         "timeouts": timeouts, "failed_requests": failed},
                evidence=_evidence(r, f"50% {_s(p50)}, 99% {_s(p99)}" + (f", timeout {timeouts:.0f}" if timeouts else ""),
                                   "latency_p50_s", "latency_p99_s", "socket_errors"),
            ))
        return out


class LoadtestBehindRate(Detector):
    """A constant-rate load test (wrk2 ``-R``) that could not send at the
    rate asked, with its median latency (its mean, without ``--latency``)
    at a second or more.

    Why it matters: wrk2 times each request from when it should have been
    sent, so a server that falls behind the asked rate shows a queue that
    grows through the run (median 11.7 s, max 23.4 s at 97k of 110k/s
    asked): the run measured that queue, not the service.  The rate reached
    is the report's ``Requests/sec``, or, when the paste ends before it,
    its threads' average ``Req/Sec`` times the threads (said so).
    """

    id = "loadtest-behind-rate"
    summary = "constant-rate load test (wrk2 -R) that fell behind its asked rate: the latencies measure a queue"
    inputs = ("reports",)
    category = "load-test-failure"
    defaults = {"min_shortfall": 0.1, "min_p50_s": 1.0}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for r in ctx.reports:
            target = _num(r, "target_rate_per_sec")
            reached, how = _num(r, "requests_per_sec"), "Requests/sec"
            if not reached and _num(r, "req_per_thread_avg") and _num(r, "threads"):
                reached, how = _num(r, "req_per_thread_avg") * _num(r, "threads"), "its threads' Req/Sec x threads"
            p50, typical = _num(r, "latency_p50_s"), "median"
            if not p50:         # a run without --latency prints its mean only
                p50, typical = _num(r, "latency_avg_s"), "mean"
            if target <= 0 or reached <= 0 or p50 < p["min_p50_s"]:
                continue
            shortfall = 1.0 - reached / target
            if shortfall < p["min_shortfall"]:
                continue
            worst = _num(r, "latency_max_s") or _num(r, "latency_p100_s")
            start, end = _times(r)
            # without Requests/sec (a report cut before its totals) the rate is its threads' mean x threads
            reached_said = (f"{_rate(reached)}/s reached" if how == "Requests/sec" else
                            f"about {_rate(reached)}/s reached (its threads' Req/Sec x {_num(r, 'threads'):.0f}, no "
                            "Requests/sec line)")
            title = (f"{_label(r)}: {reached_said} of {_rate(target)}/s asked ({shortfall * 100:.0f} % "
                     f"short), {typical} latency {_s(p50)}" + (f", max {_s(worst)}" if worst else ""))
            out.append(self.finding(
                title=title, severity="medium", start=start, end=end, aligned=_aligned(r),
                metrics={"target_rate_per_sec": target, "reached_rate_per_sec": reached, "shortfall": shortfall,
                         "first_step_per_sec": float(round(reached)),     # the rate to try first, whole
                         "reached_estimated": int(how != "Requests/sec"),
                         "latency_p50_s": p50, "latency_max_s": worst or None},
                evidence=_evidence(r, f"-R {_rate(target)}, reached {_rate(reached)}/s ({how}), {typical} {_s(p50)}",
                                   "requests_per_sec", "req_per_thread_avg", "latency_p50_s"),
            ))
        return out


class LoadtestLinkSaturation(Detector):
    """A load test's transfer rate against the network link's capacity.

    Capacity comes from ``--link-speed`` or from sar's %ifutil on the server.
    When sar shows the server sending k times one client's rate at a time the
    report does not date, the run is placed in that window and the clients
    are summed, as report 001's author did (two clients x 1.04 GB/s = the
    20 Gbit/s NIC).
    """

    id = "loadtest-link-saturation"
    summary = "load-test throughput at the network link's capacity (clients summed)"
    inputs = ("reports", "metrics")
    category = "network-saturation"
    defaults = {"saturation_fraction": 0.8, "min_rate_Bps": 10e6, "max_clients": 8,
                "match_tolerance": 0.15, "framing_overhead": 0.04}

    def run(self, ctx: Context):
        out = []
        for r in ctx.reports:
            rate = _num(r, "transfer_rate_Bps")
            if rate < self.params["min_rate_Bps"]:
                continue
            match = self._server_window(ctx, rate)
            cap = ctx.link_speed_bps / 8.0 if ctx.link_speed_bps else (match["capacity_Bps"] if match else None)
            if not cap:
                continue
            clients = match["clients"] if match else 1
            total = rate * clients
            frac = total / cap
            if frac < self.params["saturation_fraction"]:
                continue
            start, end = _times(r)
            aligned = _aligned(r)
            if match and not aligned:
                start, end, aligned = match["start"], match["end"], True
                r["time_from"] = "sar-match"
            who = f"{clients} clients x " if clients > 1 else ""
            title = (f"{_label(r)}: {who}{rate / 1e9:.2f} GB/s = {total * 8 / 1e9:.1f} Gbit/s, "
                     f"{frac * 100:.0f} % of the {cap * 8 / 1e9:.0f} Gbit/s link")
            ev = _evidence(r, f"Transfer rate {rate / 1024:.2f} KB/s per client", "transfer_rate_Bps")
            if match:
                row = ctx.printed.row_line("net-dev", match["host"], match["start"], device=match["iface"])
                ev.append(Evidence(*row) if row else Evidence(
                    match["path"], None, f"{match['iface']} sent {match['server_Bps'] / 1e9:.2f} GB/s "
                    f"(%ifutil {match['ifutil']:.1f}) from {match['start']:%H:%M:%S} to {match['end']:%H:%M:%S}"))
            explanation = ("The network link, not CPU or the application, bounds this test's throughput.")
            if match and r.get("time_from") == "sar-match":
                explanation += (" The report carries no time; it was placed where sar shows the server sending "
                                f"{clients} x its rate.")
            out.append(self.finding(
                title=title, severity="high" if frac >= 0.95 else "medium", start=start, end=end,
                host=match["host"] if match else None, aligned=aligned,
                metrics={"transfer_rate_Bps": rate, "clients": clients, "total_Bps": total,
                         "link_capacity_bps": cap * 8, "fraction_of_link": frac},
                evidence=ev, explanation=explanation,
            ))
        return out

    def _server_window(self, ctx: Context, rate: float) -> dict | None:
        """Where sar shows an interface sending a whole multiple k of one
        client's ``rate`` (k concurrent clients, 1 <= k <= max_clients):
        the window, k and the link capacity.  The busiest match wins."""
        best = None
        for host in ctx.hosts("net-dev"):
            for iface in ctx.devices("net-dev", "txkB/s", host=host):
                tx = ctx.series("net-dev", "txkB/s", device=iface, host=host)
                rx = ctx.series("net-dev", "rxkB/s", device=iface, host=host)
                if tx is None:
                    continue
                sent = tx.combine(rx, max) * 1024.0 if rx is not None else tx * 1024.0
                # wire bytes carry TCP/IP framing on top of the HTTP bytes ab counts
                ratio = sent / (rate * (1 + self.params["framing_overhead"]))
                k = np.rint(ratio)
                ok = (k >= 1) & (k <= self.params["max_clients"]) & ((ratio - k).abs() <= self.params["match_tolerance"] * k)
                if not ok.any():
                    continue
                counts = k[ok].value_counts()
                clients = int(max(counts.index, key=lambda c: (counts[c] * c, c)))
                busy = sent[ok & (k == clients)]
                server = float(busy.median())
                util = ctx.series("net-dev", "%ifutil", device=iface, host=host)
                cand = {"host": host, "iface": iface, "start": busy.index.min(), "end": busy.index.max(),
                        "server_Bps": server, "clients": clients, "capacity_Bps": link_capacity_Bps(ctx, host, iface),
                        "ifutil": float(util.reindex(busy.index).max()) if util is not None else float("nan"),
                        "path": ctx.printed.source_with("net-dev", host)}
                if best is None or server > best["server_Bps"]:
                    best = cand
        return best


def _rate(per_second: float) -> str:
    """A request rate as wrk prints one: 97.0k, 850."""
    return f"{per_second / 1000:.1f}k" if per_second >= 10000 else f"{per_second:,.0f}"


def _ms(seconds) -> str:
    """A latency in milliseconds with the digits it needs: 585 ms, 2.5 ms,
    0.15 ms (a sub-millisecond p50 is not "0 ms")."""
    ms = float(seconds or 0) * 1000
    if ms >= 10 or ms == 0:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2f} ms"


def _s(seconds) -> str:
    """A latency of a second or more in seconds, as wrk prints it: 5.01 s."""
    return f"{float(seconds or 0):.2f} s"
