"""Logs as pasted into tickets and seen on terminals: quotes, fences, line
numbers, indentation, editor cut marks and wall broadcasts are peeled off,
line numbers stay those of the file, and one warning says what was stripped."""
from __future__ import annotations

from pathlib import Path

import sarsleuth
from sarsleuth.inputs.parsers import sniff

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
ERROR_LOG = (SAMPLES / "nginx-proxy-oom" / "error.log").read_text().splitlines()
MESSAGES = (SAMPLES / "nginx-proxy-oom" / "messages").read_text().splitlines()


def test_markdown_quoted_error_log_cut_by_the_editor(tmp_path):
    cut = [("> " + line[:79] + "$") if len(line) > 79 else "> " + line for line in ERROR_LOG]
    path = tmp_path / "ticket-1234.txt"
    path.write_text("Customer pasted this from the proxy:\n\n" + "\n".join(cut) + "\n")
    kind, reason = sniff(path)
    assert kind == "nginx-error" and "markdown quote marks" in reason
    case = sarsleuth.load(path, SAMPLES / "nginx-proxy-oom" / "sa06")
    timeouts = case.events[case.events["kind"] == "upstream-timeout"]
    assert len(timeouts) == 7
    # line numbers of the ticket file: two lines of prose come first
    first = ERROR_LOG.index(next(line for line in ERROR_LOG if "upstream timed out" in line))
    assert timeouts["line"].iloc[0] == first + 3
    assert set(timeouts["file"]) == {str(path)}
    warning = next(w for w in case.warnings if "pasted text" in w)
    assert "markdown quote marks" in warning and "cut at column 80" in warning
    assert [f for f in case.findings if f.detector == "upstream-timeout"]


def test_wall_broadcasts_become_the_syslog_lines_they_came_from(tmp_path):
    path = tmp_path / "terminal.txt"
    path.write_text(
        "\n"
        "Message from syslogd@db3 at Apr 15 10:22:13 ...\n"
        " kernel:NMI watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]\n"
        "\n"
        "Message from syslogd@db3 at Apr 15 10:22:41 ...\n"
        " kernel:NMI watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [java:102195]\n"
        "\n"
        "Broadcast message from systemd-journald@db3 (Sat 2023-04-15 10:23:05 UTC):\n"
        "\n"
        "kernel[1]: watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:2:3310]\n")
    case = sarsleuth.load(path, year=2023)
    lockups = case.events[case.events["kind"] == "kernel-lockup"]
    assert list(lockups["line"]) == [3, 6, 10]
    assert list(lockups["host"]) == ["db3"] * 3
    assert str(lockups["timestamp"].iloc[0]) == "2023-04-15 10:22:13"
    assert "java:102195" in lockups["message"].iloc[0]
    assert any("wall broadcast headers (3 lines)" in w for w in case.warnings)
    assert [f for f in case.findings if f.detector == "kernel-lockup"]


def test_numbered_and_indented_pastes(tmp_path):
    numbered = tmp_path / "cat-n.txt"
    numbered.write_text("\n".join(f"{i:6d}\t{line}" for i, line in enumerate(MESSAGES, 1)) + "\n")
    indented = tmp_path / "indented.txt"
    indented.write_text("\n".join("    " + line for line in MESSAGES) + "\n")
    for path, what in ((numbered, "line numbers"), (indented, "indentation")):
        assert sniff(path)[0] == "syslog"
        case = sarsleuth.load(path, year=2014)
        rx = case.events[case.events["kind"] == "nic-rx-alloc-failure"]
        assert rx["repeats"].tolist() == [7] and rx["line"].iloc[0] == 1 + next(
            i for i, line in enumerate(MESSAGES) if "alloc sge" in line)
        assert any(what in w for w in case.warnings)


def test_files_as_programs_wrote_them_are_not_peeled(corpus):
    for path in sorted((corpus / "sar-text").glob("*.txt"))[:12] + sorted((corpus / "logs").glob("*.log"))[:12]:
        kind, reason = sniff(path)
        assert "pasted" not in reason, path
