"""Identical lines stored once, and evidence read back from the file at the
offset the scan saw it: the event rows, the story and the JSON."""
from __future__ import annotations

import gzip
import json

import pandas as pd

from sarsleuth.inputs.parsers import parse
from sarsleuth.inputs.parsers.base import ParseOptions

from .conftest import run_cli

# kernel 5.10 words it so (mm/oom_kill.c, __oom_kill_process)
KILL = ("web7 kernel: Out of memory: Killed process 4242 (java) total-vm:8011156kB, anon-rss:3998712kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:7980kB oom_score_adj:0")
NOISE = "web7 CRON[3140]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)"


def _log(tmp_path, lines, name="messages"):
    path = tmp_path / name
    path.write_text("".join(f"{stamp} {text}\n" for stamp, text in lines))
    return path


def test_a_run_of_one_line_is_one_row_until_a_gap(tmp_path):
    """Repeats each at most a second after the one before are one row,
    whatever comes between them; a gap of more starts a row of its own."""
    path = _log(tmp_path, [("Mar 12 03:00:00", KILL), ("Mar 12 03:00:00", NOISE), ("Mar 12 03:00:00", KILL),
                           ("Mar 12 03:00:01", KILL), ("Mar 12 03:00:59", NOISE), ("Mar 12 03:01:02", KILL),
                           ("Mar 12 03:01:05", KILL)])
    ev = parse(path, options=ParseOptions(year=2024)).events
    assert list(ev["repeats"]) == [3, 1, 1] and list(ev["count"]) == [3, 1, 1]
    assert list(ev["line"]) == [1, 6, 7]
    first = ev.iloc[0]
    assert first["repeat_span"] == 1.0 and first["per_minute"] == (3,)
    assert pd.isna(ev.iloc[1]["per_minute"]) and ev.iloc[1]["repeat_span"] == 0.0


def test_repeats_across_a_minute_are_counted_minute_by_minute(tmp_path):
    lines = [(f"Mar 12 03:00:{s:02d}", KILL) for s in range(58, 60) for _ in range(5)]
    lines += [(f"Mar 12 03:01:{s:02d}", KILL) for s in range(0, 2) for _ in range(40)]
    ev = parse(_log(tmp_path, lines), options=ParseOptions(year=2024)).events
    (row,) = ev.itertuples()
    assert (row.repeats, row.repeat_span, row.per_minute) == (90, 3.0, (10, 80))


def test_offsets_are_where_each_line_starts(tmp_path, corpus):
    path = corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log"
    ev = parse(path).events
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    for row in ev.itertuples():
        assert row.offset == starts[row.line - 1]
        assert data[row.offset:].split(b"\n", 1)[0].decode().endswith(row.message)
    # a compressed file's offsets are in its decompressed content
    gz = tmp_path / "messages.gz"
    gz.write_bytes(gzip.compress(data))
    assert parse(gz).events["offset"].tolist() == ev["offset"].tolist()
    # content changed on the way (CRLF made LF) has no offsets to read at
    crlf = tmp_path / "messages-crlf"
    crlf.write_bytes(data.replace(b"\n", b"\r\n"))
    assert parse(crlf).events["offset"].isna().all()


def test_evidence_is_read_back_at_its_offset_and_says_how_often(tmp_path):
    lines = [("Mar 12 02:59:59", "web7 kernel: java invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), "
                                 "order=0, oom_score_adj=0")]
    lines += [(f"Mar 12 03:00:{s:02d}", KILL) for s in range(0, 30) for _ in range(100)]
    path = _log(tmp_path, lines)
    ran = run_cli("analyze", path, "--year", "2024", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    kill = next(f for f in json.loads(ran.stdout)["findings"] if f["detector"] == "oom-kill")
    assert kill["title"] == ("OOM killer killed 1 process(es): java (largest rss 3.81 GiB), "
                             "reported 3,000 times")
    (evidence,) = kill["evidence"]
    assert evidence == {"path": str(path), "line": 2, "text": f"Mar 12 03:00:00 {KILL}",
                        "repeated": {"times": 3000, "first": "2024-03-12T03:00:00", "last": "2024-03-12T03:00:29",
                                     "peak_per_minute": 3000}}
    text = run_cli("analyze", path, "--year", "2024", "--all")
    assert "(printed 3,000 times from 2024-03-12 03:00:00 to 03:00:29, at most 3,000 a minute)" in \
        " ".join(w for w in text.stdout.split() if w != "\u2502")     # the panel's borders
    md = run_cli("analyze", path, "--year", "2024", "--format", "markdown")
    # the evidence line as the file has it, in its fenced block, then how often
    assert (f"messages:2  Mar 12 03:00:00 {KILL}  (printed 3,000 times from 2024-03-12 03:00:00 "
            "to 03:00:29, at most 3,000 a minute)\n") in md.stdout


def test_csv_rows_say_their_repeats(tmp_path):
    path = _log(tmp_path, [("Mar 12 03:00:00", KILL)] * 4 + [("Mar 12 03:00:09", KILL)])
    ran = run_cli("parse", path, "--year", "2024")
    rows = ran.stdout.splitlines()
    assert rows[0].endswith(",file,line,repeats")
    assert [r.rsplit(",", 2)[1:] for r in rows[1:]] == [["1", "4"], ["5", "1"]]
