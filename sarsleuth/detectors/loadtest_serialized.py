"""A load test whose server answered one request at a time (ab reports)."""
from __future__ import annotations

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.loadtest import (ONE_AT_A_TIME, _aligned, _evidence, _label, _ms, _num, _s,
                                          _served_at_once, _times)


class LoadtestSerialized(Detector):
    """A load test whose server answered one request at a time while many
    waited: the rate it answered times its fastest answer is about one
    request in service (3.04/s x 366 ms = 1.1 of 100 concurrent), and
    the median request waited a second or more.

    Why it matters: the latencies then grow with the queue, evenly from the
    service time to concurrency x the service time (the run's percentiles
    climb in a straight line), and say nothing of the service itself: one
    worker, a global lock or a single-threaded server serialises them.  A
    frozen server is not one (its fastest answer waited the freeze: many in
    service at once), nor a run that failed requests (a refusal is fast).
    """

    id = "loadtest-serialized"
    summary = "load test whose server answered one request at a time while many waited"
    inputs = ("reports",)
    category = "connection-limit"
    defaults = {"max_in_service": ONE_AT_A_TIME, "min_concurrency": 4, "min_p50_s": 1.0}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for r in ctx.reports:
            at_once = _served_at_once(r)
            p50 = _num(r, "latency_p50_s")
            if at_once is None or p50 < p["min_p50_s"]:
                continue
            in_service, fastest, concurrency, how = at_once
            if concurrency < p["min_concurrency"] or in_service > p["max_in_service"]:
                continue
            rate = _num(r, "requests_per_sec")
            start, end = _times(r)
            title = (f"{_label(r)}: the server answered one request at a time ({rate:g}/s x fastest "
                     f"{_ms(fastest)} = {in_service:.1f} in service of {concurrency:.0f} concurrent), "
                     f"median wait {_s(p50)}")
            out.append(self.finding(
                title=title, severity="medium", start=start, end=end, aligned=_aligned(r),
                metrics={"in_service": in_service, "concurrency": concurrency, "concurrency_from": how,
                         "requests_per_sec": rate, "fastest_s": fastest, "service_s": fastest,
                         "latency_p50_s": p50, "latency_max_s": _num(r, "latency_max_s") or None},
                evidence=_evidence(r, f"{rate:g} req/s, fastest {_ms(fastest)}, median {_s(p50)}",
                                   "requests_per_sec", "latency_p50_s"),
            ))
        return out
