"""ps snapshots as the analysis reads them: each with its time on the
shared clock, its rows under identifier-safe names, the program each row
runs (a script by its name, not its interpreter's), and the rows of the
collectors that gathered the files left out (what gathered them ran after
the incident: never what a finding is about)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pandas as pd

from sarsleuth.knowledge import programs

#: Interpreters whose process is named by the script they run.
INTERPRETERS = {"python", "python2", "python3", "perl", "ruby", "node", "php", "sh", "bash", "dash", "java"}


@dataclass
class Snapshot:
    path: str
    time: object          # on the shared clock, or None
    frame: object         # the ps rows (sarsleuth.inputs.parsers.ps.PROCESS_COLUMNS)

    def same_second(self, other: "Snapshot") -> bool:
        """Taken within a second of ``other`` (a script's ps before and after its own work)."""
        return (self.time is not None and other.time is not None
                and abs(pd.Timestamp(self.time) - pd.Timestamp(other.time)) < pd.Timedelta(seconds=1))


#: An interpreter's options that take the program's code itself (python -c,
#: perl and ruby -e, node -e/-p): what follows is no script's name.
_CODE_OPTIONS = {"-c", "-e", "-E", "-p"}
#: Options that take a value of their own (python -W/-X, java -cp): skipped with it.
_VALUE_OPTIONS = {"-W", "-X", "-cp", "-classpath"}


def program_name(command: str) -> str:
    """The program a ps COMMAND runs: ``stress-ng-matrix [run]`` ->
    ``stress-ng-matrix``; ``nginx: worker process`` -> ``nginx``;
    ``python3 /srv/app/grower.py --name x`` -> ``grower.py``; ``python3 -c
    'import time...'`` -> ``python3``, ``python3 -m http.server`` ->
    ``http.server``; kernel threads keep their bracketed name."""
    text = command.strip().lstrip("\\|_ ")
    if text.startswith("["):
        return text.split("]")[0] + "]"
    head = text.split(":", 1)[0] if re.match(r"^[\w.-]+:\s", text) else text
    words = head.split()
    if not words:
        return text
    prog = os.path.basename(words[0])
    if re.sub(r"[\d.]+$", "", prog) in INTERPRETERS or prog in INTERPRETERS:
        skip = False
        for i, word in enumerate(words[1:], 1):
            if skip:
                skip = False
                continue
            if word in _VALUE_OPTIONS:
                skip = True
                continue
            if word in _CODE_OPTIONS:
                return prog             # code on the command line (python3 -c '...'): no script to name
            if word == "-m" and i + 1 < len(words):
                return words[i + 1]     # a module run as a program (python3 -m http.server)
            if not word.startswith("-"):
                return os.path.basename(word) if "=" not in word else prog
    return prog


def snapshots_of(sources, host) -> list[Snapshot]:
    """The ps snapshots of ``host`` (or of no stated host), each with its
    time on the shared clock (None when unknown)."""
    out = []
    for src in sources:
        if src.kind != "ps" or (host is not None and src.host not in (None, host)):
            continue
        ev = src.events
        times = list(ev.loc[ev["kind"] == "ps-snapshot", "timestamp"]) if ev is not None and len(ev) else []
        for i, (_label, frame) in enumerate(src.meta.get("snapshots", [])):
            t = times[i] if i < len(times) else None
            out.append(Snapshot(src.path, None if t is None or pd.isna(t) else pd.Timestamp(t), frame))
    return out


def rows_of(snap: Snapshot):
    """ps rows with identifier-safe column names (``%cpu`` -> ``cpu_pct``)."""
    return snap.frame.rename(columns={"%cpu": "cpu_pct", "%mem": "mem_pct"})


def without_collectors(snap: Snapshot):
    """A snapshot's rows (``cpu_pct`` for ``%cpu``) without the collectors
    that gathered the files and what they started."""
    frame = rows_of(snap)
    return frame[~_collected(frame)]


def _collected(frame) -> pd.Series:
    """Rows of the collectors that gathered the files (sos, a ps script,
    sarsleuth collect) and of the processes they started: never what a
    finding is about."""
    names = frame["command"].astype(str).map(program_name)
    theirs = names.isin(programs("collectors"))
    if "ppid" in frame.columns and theirs.any():
        parents = set(frame.loc[theirs, "pid"].astype(int))
        ppid = pd.to_numeric(frame["ppid"], errors="coerce")
        for _ in range(4):           # the collector's children and theirs
            more = ppid.isin(parents) & ~theirs
            if not more.any():
                break
            theirs = theirs | more
            parents |= set(frame.loc[more, "pid"].astype(int))
    return theirs
