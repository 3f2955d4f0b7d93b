"""A process is named as the host's logs name it: a script run by an
interpreter (``python3 /srv/app/backend.py``) that logs as ``shop-api[PID]``
is the shop's API to the operator, so the story says ``shop-api`` and keeps
the program ps shows beside it.  The tag comes from the same host's syslog
lines of that PID (most of them, where a PID was reused), compressed files
and lines cut by a read's chunk included; the kernel's and the interpreter's
own names are not a service's."""
from __future__ import annotations

import gzip
import os
from collections import Counter

import pandas as pd

import sarsleuth
from sarsleuth.analysis import logged_names as module
from sarsleuth.analysis.attribution import attribute
from sarsleuth.model import Finding

PS = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n" + """\
root     24830 88.5  0.0 599776 21092 ?        Rsl  02:13   0:33 /usr/bin/python3 /srv/app/backend.py --port 9001 --work-ms 25
root     24831  0.0  0.0   6380  2996 ?        S    02:13   0:00 logger -t shop-api[24830]
www-data 24834 31.0  0.0  11988  4620 ?        S    02:13   0:15 nginx: worker process
root     24839  0.3  0.0  18356 15160 ?        Ss   02:13   0:00 python3 /srv/app/agent.py --every 10
"""

MESSAGES = """\
Nov 27 02:13:15 shop-web-05 rsyslogd: [origin software="rsyslogd" swVersion="8.2302.0"] start
Nov 27 02:13:16 shop-web-05 shop-api[24830]: listening on 127.0.0.1:9001 (pid 24830)
Nov 27 02:14:16 shop-web-05 python3[24839]: shipped 96847 values in the last minute
Nov 27 02:14:57 shop-web-05 kernel: [21603.897417] TCP: request_sock_TCP: Possible SYN flooding on port 127.0.0.1:9001. Sending cookies.
Nov 27 02:15:12 shop-web-05 shop-api[24830]: Exception occurred during processing of request from ('127.0.0.1', 49942)
Nov 27 02:15:13 shop-web-05 shop-api[24830]: BrokenPipeError: [Errno 32] Broken pipe
"""


def _case(tmp_path, messages: bytes, name="messages", ps=PS):
    when = pd.Timestamp("2026-11-27 02:15:46", tz="UTC")
    path = tmp_path / "ps-aux-021546.txt"
    path.write_text(ps)
    os.utime(path, (when.timestamp(), when.timestamp()))
    (tmp_path / name).write_bytes(messages)
    return sarsleuth.load(tmp_path, tz="UTC", year=2026)


def _cpu_finding():
    return Finding(detector="cpu-saturation", title="CPUs saturated", severity="high", host=None,
                   start=pd.Timestamp("2026-11-27 02:15:20", tz="UTC"),
                   end=pd.Timestamp("2026-11-27 02:16:10", tz="UTC"))


def test_a_script_is_named_by_its_syslog_tag_with_the_program_beside_it(tmp_path):
    case = _case(tmp_path, MESSAGES.encode())
    f = _cpu_finding()
    attribute([f], case.sources)
    assert f.refs["responsible_names"] == ["shop-api", "nginx"]
    assert f.refs["responsible"].startswith(
        "shop-api (as its log lines tag it; backend.py in ps, PID 24830: 88.5 % CPU) and nginx (PID 24834: "
        "31.0 % CPU) in ps at 02:15:46")


def test_an_interpreter_s_own_tag_and_the_kernel_s_name_nobody(tmp_path):
    # the agent logs as "python3[24839]": its script's name says more
    case = _case(tmp_path, MESSAGES.replace("shop-api[24830]", "kernel[24830]").encode(),
                 ps=PS.replace(" 0.3  0.0  18356 15160 ?        Ss   02:13   0:00",
                               "45.0  0.0  18356 15160 ?        Ss   02:13   0:30"))
    assert module.logged_names(case.sources, {None: {24830, 24839}}) == {(None, 24839): "python3"}
    f = _cpu_finding()
    attribute([f], case.sources)
    assert f.refs["responsible_names"] == ["backend.py", "agent.py", "nginx"]


def test_a_reused_pid_is_named_by_most_of_its_lines_from_a_compressed_file(tmp_path, monkeypatch):
    # a small read size: the tags fall across the chunks' ends
    monkeypatch.setattr(module, "CHUNK_BYTES", 97)
    lines = MESSAGES + "".join(f"Nov 27 02:15:{20 + i:02d} shop-web-05 shop-api[24830]: GET /api/{i} 200\n"
                               for i in range(30))
    lines += "Nov 26 23:10:01 shop-web-05 CRON[24830]: (root) CMD (run-parts /etc/cron.hourly)\n"
    lines += "Nov 26 23:11:09 shop-web-05 backup-sync[24830]: done\n"
    case = _case(tmp_path, gzip.compress(lines.encode()), name="messages.1.gz")
    assert module.logged_names(case.sources, {None: {24830}}) == {(None, 24830): "shop-api"}
    # every tagged line was counted once, none twice across a chunk's end
    counted = {24830: Counter()}
    module._count_tags(tmp_path / "messages.1.gz", counted)
    assert counted[24830] == {b"shop-api": 33, b"backup-sync": 1}
