"""What changed on a host: configurations reloaded (or refused), hosts
restarted.  Context for a story, and its cause when errors that were not
there before begin right after the change."""
from __future__ import annotations

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts, listed
from sarsleuth.detectors.series import fmt_time
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.knowledge import causal_chains
from sarsleuth.knowledge.signatures import fields_of


def _on_host(events, host):
    """Events of ``host``, and those of no host (an error.log) when the
    case has no other host they could belong to."""
    if events is None or not len(events):
        return events
    hosts = set(events["host"].dropna().astype(str))
    return events[(events["host"] == host) | (events["host"].isna() & (len(hosts) <= 1))]


def _effects(det_id: str) -> list:
    """The kinds a change may cause: those its chains list after it."""
    return [k for chain in causal_chains() if det_id in chain.get("roots", ()) for k in chain["order"] if k != det_id]


def followed_by(ctx: Context, det_id: str, host, when, before_s: float, after_s: float) -> list:
    """The errors a change at ``when`` may have caused: event kinds its
    chain in the knowledge base lists after it, none of which the host
    logged in the ``before_s`` seconds before, that begin within
    ``after_s`` seconds after.  [(kind, first time, lines)], first first."""
    events = _on_host(ctx.events_of(*_effects(det_id)), host)
    if events is None or not len(events) or when is None or pd.isna(when):
        return []
    timed = events[events["timestamp"].notna()]
    try:
        earlier = timed[(timed["timestamp"] >= when - pd.Timedelta(seconds=before_s)) & (timed["timestamp"] < when)]
        later = timed[(timed["timestamp"] >= when) & (timed["timestamp"] <= when + pd.Timedelta(seconds=after_s))]
    except TypeError:                  # naive and aware clocks: no order between them
        return []
    seen = set(earlier["kind"])
    out = []
    for kind, part in later.groupby("kind", sort=False):
        if kind not in seen:
            out.append((str(kind), part["timestamp"].min(), int(part["count"].fillna(1).sum())))
    return sorted(out, key=lambda x: x[1])


def in_a_story(ctx: Context, det_id: str, burst, seconds: float) -> bool:
    """Did the host log errors a change may cause within ``seconds`` of it
    (before it, or too late to be its effects)?  Then the change is
    context of their story."""
    events = _on_host(ctx.events_of(*_effects(det_id)), burst.host)
    if events is None or not len(events) or not burst.aligned:
        return False
    span = pd.Timedelta(seconds=seconds)
    try:
        near = events[(events["timestamp"] >= burst.start - span) & (events["timestamp"] <= burst.end + span)]
    except TypeError:
        return False
    return bool(len(near))


def _what(row) -> str:
    """What reloaded: the unit or service a line names, else its writer."""
    f = fields_of(str(row.kind), str(row.message)) or {}
    if f.get("unit"):
        return f["unit"].removesuffix(".service")
    if f.get("description"):
        return f["description"]
    if str(getattr(row, "source", "")) == "nginx-error" or f.get("action") in ("reconfiguring", "signal process started"):
        return "nginx"
    if f.get("signame"):
        return "httpd"
    proc = getattr(row, "process", None)
    return proc if isinstance(proc, str) and proc else "a service"


class ConfigReload(Detector):
    """Configurations reloaded in place (nginx ``signal 1 (SIGHUP)
    received, reconfiguring``, systemd ``Reloaded UNIT``, Apache's graceful
    restart) and reloads that failed (nginx ``[emerg] ... in FILE:LINE``,
    ``configuration file ... test failed``, ``Reload failed for UNIT``):
    what reloaded, and the errors absent before that began within
    ``after_seconds`` after it.  A good reload is reported only where the
    host logged such errors around it, as context of their story.

    Why it matters: a reload is the change most often behind an outage that
    starts at a precise second (a wrong upstream, fewer worker_connections,
    a missing certificate); a good reload followed by nothing is only
    context on the timeline."""

    id = "config-reload"
    summary = "configuration reloads (nginx, systemd units, httpd) and failed ones, with the new errors right after"
    inputs = ("events:config-reload", "events:config-reload-failed")
    category = "config-change"
    defaults = {"burst_gap_seconds": 30.0, "before_seconds": 600.0, "after_seconds": 180.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("config-reload", "config-reload-failed"), self.params["burst_gap_seconds"]):
            rows = list(b.rows.itertuples(index=False))
            actions = [(fields_of(str(r.kind), str(r.message)) or {}).get("action") for r in rows]
            failed = [r for r in rows if r.kind == "config-reload-failed"]
            if not failed and all(a == "signal process started" for a in actions):
                continue        # `nginx -s reopen|stop|quit` write it too: alone it is no reload
            names = sorted({_what(r) for r in rows if r.kind == "config-reload"} or {_what(r) for r in rows})
            after = [] if failed else followed_by(ctx, self.id, b.host, b.start, self.params["before_seconds"],
                                                  self.params["after_seconds"])
            if not failed and not after and not in_a_story(ctx, self.id, b, self.params["before_seconds"]):
                continue        # a good reload in a quiet stretch: no story to be context for
            when = fmt_time(b.start) if b.aligned else "an unknown time"
            title = f"{', '.join(names)} reloaded its configuration at {when}"
            # one `nginx -t` run says its error and "test failed": one failed test per process
            tests = (len({(r.process, r.pid) for r in failed if pd.notna(r.pid)})
                     + sum(1 for r in failed if pd.isna(r.pid)))
            metrics = {"reloads": b.lines - len(failed) + tests, "failed": tests, "start_failed": 0,
                       "new_errors": sum(n for _, _, n in after), "new_error_kinds": len(after)}
            refs: dict = {"reloaded": ", ".join(names)}
            if failed:
                # the line naming the error ([emerg] ...), not the "test failed" after it
                f = next((x for x in (fields_of("config-reload-failed", str(r.message)) or {} for r in failed)
                          if x.get("error")), {})
                error = (f.get("error", "") + (f" in {f['conf']}" if f.get("conf") else "")).strip()
                # a start whose configuration test failed (ExecStartPre=nginx -t): no reload at all
                start = _start_failed(ctx, b, self.params["burst_gap_seconds"])
                metrics["start_failed"] = int(start)
                what = "configuration test failed, so it did not start," if start else "configuration reload failed"
                title = f"{', '.join(names)} {what} at {when}" + (f": {error}" if error else "")
                refs["error"] = error or "the error in the log"
            if after:
                first = after[0][1]
                metrics["seconds_to_first_error"] = (first - b.start).total_seconds()
                title += "; then, absent before: " + ", ".join(f"{n:,} x {kind}" for kind, _, n in after[:4])
                title += f" from {fmt_time(first)}"
                refs["new_error_kinds"] = [k for k, _, _ in after]
            metrics["failures_after"] = int(bool(after) or bool(metrics.get("start_failed")))
            out.append(self.finding(
                title=title, severity="high" if after else "medium" if failed else "low",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned, metrics=metrics,
                evidence=evidence_from_events(ctx.clock, b.rows, 4), refs=refs,
                explanation=(f"Errors that the host had not logged in the {self.params['before_seconds'] / 60:.0f} "
                             f"minutes before began {metrics.get('seconds_to_first_error', 0):.0f} s after the "
                             "reload: the new configuration is the first suspect." if after else
                             "Its configuration test failed as it started: the service did not start, and stays "
                             "down until the error the test names is fixed." if metrics.get("start_failed") else
                             "The reload failed: the previous configuration kept running." if failed else
                             "A reload with no new errors after it: context, not a cause."),
            ))
        return out

def _start_failed(ctx: Context, burst, seconds: float) -> bool:
    """Whether systemd failed to start a unit (``Failed to start ...``)
    within ``seconds`` of a failed configuration test on the same host: the
    test ran as the start's ExecStartPre, not as a reload (a reload's own
    failure is "Reload failed for ...", its control process the same)."""
    units = ctx.events_of("service-failed")
    if units is None or not len(units):
        return False
    start = units["message"].astype(str).map(lambda m: bool((fields_of("service-failed", m) or {}).get("description")))
    near = (units["timestamp"] - burst.start).abs() <= pd.Timedelta(seconds=seconds) if burst.aligned else True
    same_host = units["host"].astype(str) == str(burst.host) if burst.host is not None else True
    try:
        return bool((start & near & same_host).any())
    except TypeError:          # a wall clock beside an instant
        return False


class HostRestart(Detector):
    """The host restarted: sar's ``LINUX RESTART`` records, the kernel's
    ``Linux version ...`` boot line (in dmesg, the journal of a boot, a
    syslog), when the case recorded the host before it (the boot a dmesg
    begins with is where its log begins).  Context on the timeline: what
    was running before is gone."""

    id = "host-restart"
    summary = "host restarts: sar LINUX RESTART records, kernel boot lines"
    inputs = ("events:sar-restart", "events:kernel-boot")
    category = "config-change"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("sar-restart", "kernel-boot"), self.params["burst_gap_seconds"]):
            if not b.aligned or not self._recorded_before(ctx, b):
                continue        # where a dmesg or a file begins: no change within the case
            kernels = sorted({m.split()[2] for m in b.rows.loc[b.rows["kind"] == "kernel-boot", "message"].astype(str)
                              if len(m.split()) > 2})
            restarts = int((b.rows["kind"] == "sar-restart").sum())
            parts = ([f"sar LINUX RESTART {restarts} x"] if restarts else []) + [f"kernel {k} booted" for k in kernels]
            out.append(self.finding(
                title=f"host restarted at {fmt_time(b.start) if b.aligned else 'an unknown time'}: {', '.join(parts)}",
                severity="low", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"restarts": restarts, "boots": len(kernels)},
                evidence=evidence_from_events(ctx.clock, b.rows, 3), refs={"kernels": kernels},
            ))
        return out

    @staticmethod
    def _recorded_before(ctx: Context, burst) -> bool:
        """Did the case record anything of the host before the restart (a
        sar sample, a log line of another kind)?"""
        times = ctx.sample_times(burst.host) if burst.host in ctx.hosts() else None
        try:
            if times is not None and len(times) and (times < burst.start).any():
                return True
            ev = _on_host(ctx.events, burst.host)
            if ev is None or not len(ev):
                return False
            other = ev[~ev["kind"].isin(["sar-restart", "kernel-boot"])]
            return bool((other["timestamp"] < burst.start).any())
        except TypeError:               # naive and aware clocks
            return False


class PackageChange(Detector):
    """Packages installed, upgraded or removed (dpkg.log, dnf.rpm.log): one
    finding per run of the package manager, naming the packages and their
    versions, and the errors absent before that began within
    ``after_seconds`` after it.  Reported where such errors are around it
    (its cause, or context of their story), not in a quiet stretch.

    Why it matters: an upgrade of the server, a module or a library it loads
    is the usual answer to "what changed just before the crashes began"."""

    id = "package-change"
    summary = "packages installed, upgraded or removed (dpkg.log, dnf.rpm.log), with the new errors right after"
    inputs = ("events:package",)
    category = "config-change"
    defaults = {"burst_gap_seconds": 600.0, "before_seconds": 600.0, "after_seconds": 180.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("package"), self.params["burst_gap_seconds"]):
            after = followed_by(ctx, self.id, b.host, b.end, self.params["before_seconds"], self.params["after_seconds"])
            if not after and not in_a_story(ctx, self.id, b, self.params["before_seconds"]):
                continue
            changes = [fields_of("package", str(m)) or {} for m in b.rows["message"]]
            named = [_change(c) for c in changes if c.get("package")]
            actions: dict = {}
            for c in changes:
                if c.get("action"):
                    actions[c["action"].lower()] = actions.get(c["action"].lower(), 0) + 1
            title = (f"{len(changes)} package change(s) at {fmt_time(b.start) if b.aligned else 'an unknown time'} "
                     f"({', '.join(f'{n:,} x {a}' for a, n in sorted(actions.items()))}): {listed(named)}")
            metrics = {"packages": len(changes), "new_errors": sum(n for _, _, n in after),
                       "new_error_kinds": len(after)}
            if after:
                first = after[0][1]
                metrics["seconds_to_first_error"] = (first - b.end).total_seconds()
                title += ("; then, absent before: " + ", ".join(f"{n:,} x {kind}" for kind, _, n in after[:4])
                          + f" from {fmt_time(first)}")
            out.append(self.finding(
                title=title, severity="high" if after else "low", start=b.start, end=b.end, host=b.host,
                aligned=b.aligned, metrics=metrics, evidence=evidence_from_events(ctx.clock, b.rows, 4),
                refs={"packages": sorted({c["package"] for c in changes if c.get("package")})[:40],
                      "changed": ", ".join(named[:4])},
            ))
        return out


def _change(f: dict) -> str:
    """``nginx 1.22.1-9 -> 1.22.1-9+deb12u1``, ``libgdbm6 1.23-3 (install)``."""
    old, new = f.get("old"), f.get("new")
    if old and old != "<none>" and new and new != "<none>":
        return f"{f['package']} {old} -> {new}"
    return f"{f['package']} {new if new and new != '<none>' else old or ''} ({f['action'].lower()})".replace("  ", " ")
