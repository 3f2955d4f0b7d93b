"""Score sarsleuth on the recorded cases, at every sampling interval.

For each case folder (``truth.toml`` beside the operator's files) and
each interval (1 s as recorded; 10 s and 60 s with the sa files a host
sampling that often would have kept, :mod:`lab.intervals`; 10 minutes for
the long cases) the scorer runs ``sarsleuth analyze FILES... --format
json`` with the truth's ``args`` and compares rank 1 with the truth:

- **category**: rank 1's category is one of ``category``;
- **start**: seconds from rank 1's start to the ``start_between`` window
  (0 inside it), the window widened by one interval on each side at a
  coarser interval (an sa row stamped at the end of the interval it
  averages shows an onset up to one interval late); within 10 s counts;
- **cause**: rank 1's ``cause`` detector is one of ``cause``;
- **host**: in a case of several hosts, rank 1's hosts include the one
  ``hosts`` names;
- **named**: one of ``responsible`` (process names, devices) is named in
  rank 1's title, headline, cause, explanation or recommendations (quoted
  evidence lines do not count: they name whatever the log named);
- **contradicted**: recommendations, of any incident, that a rule of
  ``contradictions.toml`` finds wrong for this case's files;
- **quiet**: on a quiet day, the number of incidents (0 is right);
- **changed**: in the incident the truth's cause detector caused (rank 1
  when it did), one of the series that detector reads is among the top 5
  of the incident's "what else changed" (``changes``, each naming the
  detectors that read it); none when no incident has that cause, or when
  the cause reads no series (a detector of ps snapshots alone).

A case's score at an interval is kept in the lab's cache (beside the
derived cases, ``scores/``), keyed by the digest of the case's files, the
interval, sarsleuth's code and data, the scorer's and the deriving code,
the Python version and the ``SARSLEUTH_*`` settings: it is taken again
only while none of these has changed.  What is not cached is scored in one
pass over the cases and intervals, on every CPU.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import multiprocessing
import os
import re
import sys
import tarfile
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lab.intervals.derive import case_inputs, default_cache, derived_case, recorded_intervals

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "cases"
#: The intervals every case is scored at (seconds); a case that also kept
#: a file of sadc at another interval (the long cases: 10 minutes) is
#: scored at that one too.
INTERVALS = (1, 10, 60)
START_TOLERANCE_S = 10.0
TARGETS = {"category": 0.95, "start": 0.95, "named": 0.90, "contradicted": 0, "quiet_incidents": 0}
_QUOTED = re.compile(r'"[^"\n]*"')


@dataclass
class CaseScore:
    case: str
    kind: str
    quiet: bool
    interval: int = 1
    rank1: str = "-"
    category_ok: bool | None = None
    cause: str = "-"
    cause_ok: bool | None = None
    start_error_s: float | None = None
    named: bool | None = None
    host_ok: bool | None = None          # cases of several hosts: rank 1 names the truth's host
    contradicted: list = field(default_factory=list)
    incidents: int = 0
    changed: bool | None = None          # the cause's own series in the top 5 of its incident's changes
    exit_code: int = 0
    error: str = ""
    #: what the audit of the story against its data found (``analyze --audit``)
    audit_checked: int = 0
    audit_differences: list = field(default_factory=list)


def analyze_json(inputs: list[Path], args: list[str]) -> tuple[int, dict | None, str]:
    """``sarsleuth analyze`` in this process, as a user runs it."""
    from sarsleuth.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(["analyze", *map(str, inputs), "--format", "json", "--audit", *args])
    try:
        return code, json.loads(out.getvalue()), err.getvalue()
    except json.JSONDecodeError:
        return code, None, err.getvalue()


def operator_text(inputs: list[Path]) -> str:
    """The text of every file the operator has, archives read in place."""
    parts = []
    for p in inputs:
        if tarfile.is_tarfile(p):
            with tarfile.open(p) as tar:
                for m in tar:
                    if m.isfile() and m.size < 64 << 20:
                        parts.append(_inner_text(m.name, tar.extractfile(m).read()))
        else:
            parts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def _inner_text(name: str, data: bytes) -> str:
    if name.endswith((".tar.xz", ".tar.gz")):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            return "\n".join(_inner_text(m.name, tar.extractfile(m).read()) for m in tar
                             if m.isfile() and m.size < 64 << 20)
    return data.decode("utf-8", "replace") if b"\0" not in data[:4096] else ""


def _rules() -> list[dict]:
    with open(HERE / "contradictions.toml", "rb") as fh:
        return tomllib.load(fh)["rule"]


def contradicted(recommendations: list[str], text) -> list[str]:
    """The recommendations a rule catches; ``text`` the operator's files'
    text, or a function that reads it (read only when some advice is of a
    rule's kind: the files can be hundreds of megabytes)."""
    found = []
    for rule in _rules():
        advised = [rec for rec in recommendations if re.search(rule["advice"], rec)]
        if not advised:
            continue
        if callable(text):
            text = text()
        if "absent" in rule:
            wrong = not re.search(rule["absent"], text)
        else:
            wrong = bool(re.search(rule["evidence"], text)) and not (
                rule.get("unless") and re.search(rule["unless"], text))
        if wrong:
            found += [f"{rule['id']}: {rec[:120]}" for rec in advised]
    return found


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def start_error(start: str | None, window: list[str], widen_s: float = 0.0) -> float | None:
    if not start or not window:
        return None
    t = _instant(start)
    lo, hi = _instant(window[0]) - timedelta(seconds=widen_s), _instant(window[1]) + timedelta(seconds=widen_s)
    if t.tzinfo is None:      # a wall-clock time: compare on the window's zone
        t = t.replace(tzinfo=lo.tzinfo)
    if t < lo:
        return (lo - t).total_seconds()
    if t > hi:
        return (t - hi).total_seconds()
    return 0.0


def _names(text: str, names: list[str]) -> bool:
    text = _QUOTED.sub('""', text)
    return any(re.search(r"(?<![\w-])" + re.escape(n) + r"(?!\w)", text, re.I) for n in names)


def story_text(inc: dict) -> str:
    story = inc.get("story") or {}
    cause = next((f for f in inc.get("findings", []) if f.get("role") == "cause"), {})
    return "\n".join(str(x) for x in (inc.get("title"), story.get("headline"), story.get("cause"),
                                      story.get("explanation"), cause.get("title"), cause.get("explanation"),
                                      *inc.get("recommendations", [])) if x)


def score_case(folder: Path, interval: int = 1, cache: Path | None = None) -> CaseScore:
    """Rank 1 of ``folder`` against its truth, the sa files at
    ``interval`` seconds."""
    with open(folder / "truth.toml", "rb") as fh:
        truth = tomllib.load(fh)
    s = CaseScore(case=folder.name, kind=truth["kind"], quiet=bool(truth.get("quiet")), interval=interval)
    inputs = case_inputs(folder if interval == 1 else derived_case(folder, interval, cache))
    code, doc, err = analyze_json(inputs, list(truth.get("args", [])))
    audited = (doc or {}).get("audit") or {}
    s.audit_checked, s.audit_differences = audited.get("checked", 0), list(audited.get("differences", []))
    s.exit_code = 0 if code == 3 and s.audit_differences else code     # 3: the audit's differences, kept apart
    if doc is None:
        s.error = err.strip().splitlines()[-1] if err.strip() else f"exit {code}, no JSON"
        return s
    incidents = doc.get("incidents", [])
    s.incidents = len(incidents)
    s.contradicted = contradicted([r for inc in incidents for r in inc.get("recommendations", [])],
                                  lambda: operator_text(inputs))
    if s.quiet:
        s.rank1 = incidents[0]["category"] if incidents else "none"
        return s
    if not incidents:
        s.rank1, s.category_ok, s.cause_ok = "none", False, False
        s.named = False if truth.get("responsible") else None
        s.host_ok = False if truth.get("hosts") else None
        return s
    top = incidents[0]
    s.changed = cause_changed(incidents, truth.get("cause", []))
    s.rank1, s.cause = top["category"], top.get("cause") or "-"
    s.category_ok = top["category"] in truth.get("category", [])
    s.cause_ok = s.cause in truth.get("cause", [])
    s.start_error_s = start_error(top.get("start"), truth.get("start_between", []),
                                  widen_s=interval if interval > 1 else 0.0)
    if truth.get("responsible"):
        s.named = _names(story_text(top), truth["responsible"])
    if truth.get("hosts"):
        s.host_ok = bool(set(top.get("hosts") or []) & set(truth["hosts"]))
    return s


def cause_changed(incidents: list, causes: list) -> bool | None:
    """Is one of the cause detector's own series among the top 5 of what
    changed in its incident (rank 1's when its cause is right, else the
    first incident of that cause)?  None when no incident has that cause."""
    own = [inc for inc in incidents if inc.get("cause") in causes]
    if not own:
        return None
    inc = own[0]
    if not _reads_series(inc["cause"]):
        return None          # a cause read from ps alone has no series of its own to rank
    return any(inc["cause"] in c.get("named_by", []) for c in inc.get("changes", [])[:5])


def _reads_series(detector: str) -> bool:
    """Does a detector read a series what changed ranks: sar's metrics or
    the logs' message kinds (not only ps snapshots or a bundle's facts)?"""
    from sarsleuth.detectors import registry
    cls = registry().get(detector)
    return cls is None or not cls.inputs or any(i.split(":")[0] in ("metrics", "events", "reports")
                                                for i in cls.inputs)


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """What a score depends on besides the case: sarsleuth's code and
    data, the scorer, the deriving code, Python and sarsleuth's settings."""
    import sarsleuth

    h = hashlib.sha256(sys.version.encode())
    for key in sorted(k for k in os.environ if k.startswith("SARSLEUTH_") and k != "SARSLEUTH_LAB_CACHE"):
        h.update(f"{key}={os.environ[key]}\n".encode())
    roots = [Path(sarsleuth.__file__).resolve().parent, HERE, HERE.parent / "intervals"]
    for root in roots:
        for f in sorted(root.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and not f.name.endswith(".pyc"):
                h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _case_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            h.update(f.relative_to(folder).as_posix().encode() + b"\0")
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _kept(folder: Path, interval: int, cache: Path | None) -> Path:
    key = hashlib.sha256(f"{interval}\0{_case_digest(folder)}\0{code_digest()}".encode()).hexdigest()[:24]
    return (cache or default_cache()) / "scores" / f"{folder.name}-{interval}s-{key}.json"


def _read_kept(path: Path) -> CaseScore | None:
    try:
        return CaseScore(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _keep(path: Path, s: CaseScore) -> None:
    if s.error:                 # an error is scored again, never kept
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(asdict(s)))
    tmp.replace(path)


def _score_job(job: tuple[Path, int, Path | None]) -> CaseScore:
    folder, interval, cache = job
    s = score_case(folder, interval, cache)
    _keep(_kept(folder, interval, cache), s)
    return s


def score_many(jobs: list[tuple[Path, int]], cache: Path | None = None, workers: int | None = None) -> list[CaseScore]:
    """The scores of (case, interval) ``jobs``, in their order: the kept
    ones from the cache, the others scored in one pass on ``workers``
    processes (every CPU by default)."""
    out: list[CaseScore | None] = [_read_kept(_kept(f, i, cache)) for f, i in jobs]
    todo = [(f, i, cache) for (f, i), s in zip(jobs, out) if s is None]
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    if workers == 1:
        done = [_score_job(j) for j in todo]
    else:
        import sarsleuth.cli  # noqa: F401  (imported once, before the workers fork)

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            # the longest cases first (the largest files), so that none is left alone at the end
            order = sorted(range(len(todo)), key=lambda k: -sum(p.stat().st_size for p in todo[k][0].iterdir()
                                                                 if p.is_file()))
            results = pool.map(_score_job, [todo[k] for k in order], chunksize=1)
            done = [None] * len(todo)
            for k, s in zip(order, results):
                done[k] = s
    it = iter(done)
    return [s if s is not None else next(it) for s in out]


def intervals_of(folder: Path) -> tuple[int, ...]:
    return tuple(sorted(set(INTERVALS) | set(recorded_intervals(folder))))


def score_all(folders: list[Path], interval: int = 1, cache: Path | None = None) -> list[CaseScore]:
    """Every case of ``folders`` that is scored at ``interval``."""
    return score_intervals(folders, [interval], cache).get(interval, [])


def score_intervals(folders: list[Path], intervals: list[int] | None = None,
                    cache: Path | None = None, workers: int | None = None) -> dict[int, list[CaseScore]]:
    """Every case at every interval it is scored at (or at ``intervals``),
    in one pass."""
    wanted = intervals or sorted({i for f in folders for i in intervals_of(f)})
    jobs = [(f, i) for i in wanted for f in folders if i in intervals_of(f)]
    scores = score_many(jobs, cache, workers)
    out: dict[int, list[CaseScore]] = {i: [] for i in wanted}
    for (_, i), s in zip(jobs, scores):
        out[i].append(s)
    return out


def totals(scores: list[CaseScore]) -> dict:
    incident_cases = [s for s in scores if not s.quiet]
    named = [s for s in incident_cases if s.named is not None]
    changed = [s for s in incident_cases if s.changed is not None]
    quiet = [s for s in scores if s.quiet]

    def share(xs, ok):
        return round(sum(1 for x in xs if ok(x)) / len(xs), 3) if xs else None

    return {
        "cases": len(scores), "incident_cases": len(incident_cases), "quiet_cases": len(quiet),
        "kinds": len({s.kind for s in scores}),
        "category": share(incident_cases, lambda s: s.category_ok),
        "cause": share(incident_cases, lambda s: s.cause_ok),
        "start": share(incident_cases, lambda s: s.start_error_s is not None
                       and s.start_error_s <= START_TOLERANCE_S),
        "named": share(named, lambda s: s.named),
        "named_cases": len(named),
        "changed": share(changed, lambda s: s.changed),
        "changed_cases": len(changed),
        "host": share([s for s in incident_cases if s.host_ok is not None], lambda s: s.host_ok),
        "contradicted": sum(len(s.contradicted) for s in scores),
        "quiet_incidents": sum(s.incidents for s in quiet),
    }
