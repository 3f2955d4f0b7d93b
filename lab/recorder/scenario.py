"""A scenario as data: the host it stages, its services, the steps of the
fault and of what else happened, and the truth a correct story holds.

The file format is documented in ``lab/README.md``; this module reads it,
checks every key against what the recorder knows (a typo is an error naming
the file and the key, never a silently ignored step) and gives the recorder
plain objects.
"""
from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lab.recorder.background import BACKGROUND_KEYS, PROFILES
from lab.recorder.background import DEFAULTS as BACKGROUND_DEFAULTS
from lab.recorder.peer import PEER_KEYS

LAB = Path(__file__).resolve().parent.parent

#: The actions a step may take, each with the keys it accepts besides the
#: common ones.
ACTIONS = {
    "run": {"cgroup", "nofile", "core", "oom_score_adj", "syslog_tag", "cwd", "user", "env", "on"},
    "load": {"save", "rate", "cgroup", "nofile", "elsewhere"},   # elsewhere: clients of other machines
    "signal": {"target"},
    "reload": set(),          # nginx: the value is a table of [nginx] keys to change
    "stop": set(),            # a service: "backend:9001" or "nginx"
    "start": set(),
    "restart": set(),
    "sysctl": set(),          # a table of sysctl = value, restored at `until` or the end
    "nft": {"port", "percent", "reject"},   # drop or reject packets to a port
    "qdisc": set(),           # tc qdisc on lo, removed at `until`
    "ps": {"on"},
    "logger": {"tag", "priority"},   # a line an admin or a script sent to syslog
    "mark": set(),            # only a line in the recording's timeline
}
COMMON = {"at", "until", "fault", "name", "note"}

HOST_KEYS = {"hostname", "tz", "duration", "sa_dir", "syslog", "dmesg", "ps", "ps_style", "swap",
             "hung_task_timeout", "sysctl", "sos", "sa_name", "messages", "logs"}
TRUTH_KEYS = {"category", "cause", "responsible", "confounders", "quiet", "args", "sign", "sign_log",
              "after", "before", "hosts"}
#: What gathered the files after the incident, at its second of the
#: recording: the real ``sos report``, the on-call's ``collect-diag``
#: script (ps, free, a tarball of /var/log), the monitoring agent's dump.
COLLECTORS = {"sos": "sos", "script": "collect-diag", "agent": "telemetry-agent"}
NGINX_KEYS = {"port", "worker_processes", "worker_connections", "worker_rlimit_nofile", "error_log_level",
              "backends", "upstream_keepalive", "proxy_read_timeout", "proxy_connect_timeout", "core_dumps",
              "access_log", "keepalive_timeout", "max_fails", "proxy_http11"}
BACKEND_KEYS = {"port", "delay", "name", "nofile", "leak_fds", "cgroup", "threads_per_request", "syslog_tag",
                "call", "work_ms", "db", "leak_db_every", "fork_export_after"}
CGROUP_KEYS = {"memory", "memsw", "pids", "write_bps", "cpu_quota"}
FS_KEYS = {"mount", "size", "fstype", "inodes", "throttled"}


#: Where the sos of this distribution collects sa files from (its sar
#: plugin: /var/log/sa on Red Hat, /var/log/sysstat on Debian and Ubuntu).
SOS_SA_DIRS = ("/var/log/sysstat",)


class ScenarioError(ValueError):
    """A scenario file that cannot be staged as written."""


@dataclass
class Step:
    at: float
    action: str
    value: object
    opts: dict
    until: float | None = None
    fault: bool = False
    name: str = ""
    note: str = ""

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.value) if isinstance(self.value, str) else list(self.value)


@dataclass
class Scenario:
    path: Path
    id: str
    kind: str
    summary: str
    host: dict
    truth: dict
    nginx: dict | None = None
    backends: list = field(default_factory=list)
    cgroups: dict = field(default_factory=dict)
    filesystems: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    files: dict = field(default_factory=dict)
    background: dict = field(default_factory=dict)
    collector: dict = field(default_factory=dict)
    peer: dict | None = None

    @property
    def needs(self) -> list[str]:
        needs = list(kinds()[self.kind].get("needs", []))
        if self.host.get("swap"):
            needs.append("swap")
        if self.host.get("sos"):
            needs.append("sos")
        if any(fs.get("fstype", "ext4") != "tmpfs" for fs in self.filesystems):
            needs += ["loop", "ext4"]
        if any(s.action == "qdisc" for s in self.steps):
            needs.append("tbf")
        if self.collector.get("sos") is not None:
            needs.append("sos")
        bg = {**BACKGROUND_DEFAULTS, **self.background}
        if (bg["profile"] != "none" and bg["cron"]) or bg["sadc_cron"]:
            needs.append("cron")
        if bg["profile"] != "none" and bg["logrotate"]:
            needs.append("logrotate")
        return list(dict.fromkeys(needs))


def kinds() -> dict:
    with open(LAB / "kinds.toml", "rb") as fh:
        return tomllib.load(fh)["kind"]


def _check_keys(where: str, table: dict, allowed: set) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(extra)} (known: {', '.join(sorted(allowed))})")


def load(path: Path) -> Scenario:
    """Read and check one scenario file."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    where = path.name
    _check_keys(where, data, {"id", "kind", "summary", "host", "truth", "nginx", "backend", "cgroup",
                              "filesystem", "step", "file", "background", "collector", "peer"})
    for key in ("id", "kind", "summary", "host", "truth"):
        if key not in data:
            raise ScenarioError(f"{where}: missing `{key}`")
    if data["kind"] not in kinds():
        raise ScenarioError(f"{where}: kind {data['kind']!r} is not one of lab/kinds.toml")
    if data["id"] != path.stem:
        raise ScenarioError(f"{where}: id {data['id']!r} differs from the file's name")
    _check_keys(f"{where} [host]", data["host"], HOST_KEYS)
    _check_keys(f"{where} [truth]", data["truth"], TRUTH_KEYS)
    if "nginx" in data:
        _check_keys(f"{where} [nginx]", data["nginx"], NGINX_KEYS)
    for b in data.get("backend", []):
        _check_keys(f"{where} [[backend]]", b, BACKEND_KEYS)
    for name, cg in data.get("cgroup", {}).items():
        _check_keys(f"{where} [cgroup.{name}]", cg, CGROUP_KEYS)
    for fs in data.get("filesystem", []):
        _check_keys(f"{where} [[filesystem]]", fs, FS_KEYS)
    _check_keys(f"{where} [background]", data.get("background", {}), BACKGROUND_KEYS)
    if data.get("background", {}).get("profile", "production") not in PROFILES:
        raise ScenarioError(f"{where} [background]: profile is one of {', '.join(PROFILES)}")
    _check_keys(f"{where} [collector]", data.get("collector", {}), set(COLLECTORS))
    if "peer" in data:
        _check_keys(f"{where} [peer]", data["peer"], PEER_KEYS)
        for b in data["peer"].get("backend", []):
            _check_keys(f"{where} [[peer.backend]]", b, BACKEND_KEYS)
        if "hostname" not in data["peer"]:
            raise ScenarioError(f"{where} [peer]: missing `hostname`")
    steps = []
    for i, raw in enumerate(data.get("step", []), 1):
        actions = [k for k in raw if k in ACTIONS]
        if len(actions) != 1:
            raise ScenarioError(f"{where} step {i}: exactly one action of {', '.join(ACTIONS)} (found {actions})")
        action = actions[0]
        _check_keys(f"{where} step {i} ({action})", raw, COMMON | ACTIONS[action] | {action})
        if "at" not in raw:
            raise ScenarioError(f"{where} step {i}: missing `at`")
        opts = {k: v for k, v in raw.items() if k in ACTIONS[action]}
        steps.append(Step(at=float(raw["at"]), action=action, value=raw[action], opts=opts,
                          until=float(raw["until"]) if "until" in raw else None,
                          fault=bool(raw.get("fault", False)), name=raw.get("name", ""), note=raw.get("note", "")))
    steps.sort(key=lambda s: s.at)
    quiet = bool(data["truth"].get("quiet", False))
    if not quiet and not any(s.fault for s in steps):
        raise ScenarioError(f"{where}: no step is marked `fault = true` (a quiet day says `quiet = true`)")
    if (data["host"].get("sos") or "sos" in data.get("collector", {})) and \
            data["host"].get("sa_dir", "/var/log/sa") not in SOS_SA_DIRS:
        raise ScenarioError(f"{where}: sos collects sa files from {' or '.join(SOS_SA_DIRS)} only")
    duration = data["host"].get("duration", 120)
    late = [s for s in steps if s.at >= duration or (s.until or 0) > duration]
    if late:
        raise ScenarioError(f"{where}: step at {late[0].at:g} s ends after the recording ({duration} s)")
    timed = [t for t in list(data.get("collector", {}).values()) + list(data.get("background", {}).get("logrotate", []))
             + list(data.get("background", {}).get("backup", [])) if t >= duration]
    if timed:
        raise ScenarioError(f"{where}: a collector or background job at {timed[0]:g} s is after the recording "
                            f"({duration} s)")
    if data.get("background", {}).get("sadc_cron") and duration < 1800:
        raise ScenarioError(f"{where}: sadc from cron every 10 minutes needs a recording of 30 minutes or more")
    return Scenario(path=path, id=data["id"], kind=data["kind"], summary=data["summary"], host=data["host"],
                    truth=data["truth"], nginx=data.get("nginx"), backends=data.get("backend", []),
                    cgroups=data.get("cgroup", {}), filesystems=data.get("filesystem", []), steps=steps,
                    files=data.get("file", {}), background=data.get("background", {}),
                    collector=data.get("collector", {}), peer=data.get("peer"))


def all_scenarios() -> list[Scenario]:
    return [load(p) for p in sorted((LAB / "scenarios").glob("*.toml"))]
