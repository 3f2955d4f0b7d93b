"""Every message definition proves itself: its sample lines (as the kernel,
nginx, systemd-oomd and earlyoom write them) classify as its kind and yield
the fields they state; its near misses classify as nothing of its kind."""
from __future__ import annotations

import pytest

from sarsleuth.knowledge.signatures import classify, definitions_text, fields_of

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

TABLE = tomllib.loads(definitions_text())["signature"]
SAMPLES = [(s["id"], sample["line"], sample.get("fields", {})) for s in TABLE for sample in s.get("sample", [])
           if not sample.get("in_report")]
#: Lines of a report's body (a hung task's task line): read by the fields,
#: never an event of their own.
BODY_LINES = [(s["id"], sample["line"], sample["fields"]) for s in TABLE for sample in s.get("sample", [])
              if sample.get("in_report")]
NEAR_MISSES = [(s["id"], line) for s in TABLE for line in s.get("near_misses", [])]


def test_every_definition_has_samples():
    assert [s["id"] for s in TABLE if not s.get("sample")] == []


@pytest.mark.parametrize("kind, line, fields", SAMPLES, ids=[f"{k}:{i}" for i, (k, _, _) in enumerate(SAMPLES)])
def test_sample_lines_classify_and_yield_their_fields(kind, line, fields):
    assert classify(line) == kind
    if fields:
        got = fields_of(kind, line)
        assert got is not None and {k: got.get(k) for k in fields} == fields


#: Definitions of lines only ever read inside a report (a dump's task line):
#: no patterns, their near misses must not yield their fields.
IN_REPORT = {s["id"] for s in TABLE if s.get("in_report")}


@pytest.mark.parametrize("kind, line", NEAR_MISSES, ids=[f"{k}:{i}" for i, (k, _) in enumerate(NEAR_MISSES)])
def test_near_misses_are_not_taken_for_the_kind(kind, line):
    assert classify(line) != kind
    if kind in IN_REPORT:
        assert fields_of(kind, line) is None


@pytest.mark.parametrize("kind, line, fields", BODY_LINES, ids=[f"{k}:{i}" for i, (k, _, _) in enumerate(BODY_LINES)])
def test_report_body_lines_yield_fields_without_being_events(kind, line, fields):
    assert classify(line) is None
    got = fields_of(kind, line)
    assert got is not None and {k: got.get(k) for k in fields} == fields


def test_every_kind_the_detectors_read_has_fields():
    """The detectors read these kinds' messages only through their fields."""
    with_fields = {s["id"] for s in TABLE if s.get("fields")}
    assert {"page-allocation-failure", "nic-rx-alloc-failure", "oom-invoked", "oom-kill", "segfault", "hung-task",
            "kernel-oops", "kernel-lockup", "hung-task-blocker", "worker-signal-exit", "worker-fatal-exit", "worker-start", "upstream-timeout", "upstream-down",
            "port-exhaustion", "too-many-open-files", "nginx-shm-exhausted"} <= with_fields
