"""ps snapshots: ps aux / auxf / -ef, with or without header, grep pastes,
before/after snapshots of nginx workers (seed report 003)."""
from __future__ import annotations

import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import parse, sniff

# seed report 003: healthy workers, then after crashes and respawns
SEED_003_PASTES = """\
2. 简单方式,看进程号是否连续

一般来说,在worker进程启动时,其进程号都是连续的,如:

$ps aux | grep nginx

lizi      7223  0.0  0.0  74844  2024 ?        Ss   13:32   0:00 nginx: master process ./nginx
lizi      7292  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7293  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7294  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7295  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7296  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7297  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7298  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7299  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7300  0.0  0.0  78856  5468 ?        S    13:33   0:00 nginx: worker process
lizi      7301  0.0  0.0  78856  5452 ?        S    13:33   0:00 nginx: worker process

可以看到,10个worker进程,基本从7292到7301,进程号是连续的。如果有进程挂掉,则进程号就不连续了,如:

$ps aux | grep nginx

nobody    9492 16659 26 09:18 ?        01:10:41 nginx: worker process
root      16659     1  0 Dec24 ?       00:00:00 nginx: master process ./nginx
nobody   16663 16659 11 Dec24 ?        02:41:38 nginx: worker process
nobody   19344 16659 24 10:18 ?        00:50:54 nginx: worker process
nobody    25447 16659 28 07:41 ?        01:43:56 nginx: worker process 
"""

PS_AUX_WITH_GREP = """\
[root@web01 ~]# ps aux | grep nginx
root      1187  0.0  0.1  46472  1196 ?        Ss   Mar03   0:00 nginx: master process /usr/sbin/nginx -c /etc/nginx/nginx.conf
www-data  1188  2.1  1.4 108776 58112 ?        S    Mar03  41:12 nginx: worker process
www-data  1189  2.0  1.4 108776 57920 ?        S    Mar03  40:55 nginx: worker process
www-data  1190  0.0  0.2  46472  9100 ?        S    Mar03   0:02 nginx: cache manager process
root     30112  0.0  0.0   6420   888 pts/0    S+   14:02   0:00 grep --color=auto nginx
"""

PS_AUXF_WITH_HEADER = """\
USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root         1  0.0  0.1 169436 11860 ?        Ss   Jan10   0:21 /sbin/init
root      7721  0.0  0.0  55284  1420 ?        Ss   Jan10   0:00 nginx: master process /usr/sbin/nginx -g daemon on; master_process on;
www-data  7722  3.2  0.8  56812 33696 ?        S    Jan10  95:10  \\_ nginx: worker process
www-data  7723  3.1  0.8  56812 33420 ?        S    Jan10  93:47  \\_ nginx: worker process
www-data  7724  0.0  0.0  55284  2104 ?        S    Jan10   0:00  \\_ nginx: cache loader process
mysql      901  0.5  9.6 1751280 389412 ?      Ssl  Jan10  12:01 /usr/sbin/mysqld
"""

PS_EF_BEFORE_AFTER = """\
UID        PID  PPID  C STIME TTY          TIME CMD
root      2201     1  0 10:00 ?        00:00:00 nginx: master process /usr/sbin/nginx
nginx     2202  2201  1 10:00 ?        00:01:10 nginx: worker process
nginx     2203  2201  1 10:00 ?        00:01:09 nginx: worker process
UID        PID  PPID  C STIME TTY          TIME CMD
root      2201     1  0 10:00 ?        00:00:00 nginx: master process /usr/sbin/nginx
nginx     2203  2201  1 10:00 ?        00:01:30 nginx: worker process
nginx     4410  2201  3 11:47 ?        00:00:02 nginx: worker process
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_seed_003_before_and_after_crashes(tmp_path):
    path = _write(tmp_path, "workers.txt", SEED_003_PASTES)
    assert sniff(path)[0] == "ps"
    source = parse(path)
    assert source.kind == "ps"
    (before_label, before), (after_label, after) = source.meta["snapshots"]
    assert before_label != after_label
    workers = before[before["role"] == "nginx-worker"]["pid"].tolist()
    assert workers == list(range(7292, 7302))
    assert before[before["role"] == "nginx-master"]["pid"].tolist() == [7223]
    assert sorted(after[after["role"] == "nginx-worker"]["pid"].tolist()) == [9492, 16663, 19344, 25447]
    assert after["ppid"].dropna().unique().tolist() == [16659, 1]
    info_before, info_after = source.meta["snapshot_info"]
    assert info_before["consecutive_worker_pids"] and not info_after["consecutive_worker_pids"]
    assert info_before["workers_started_apart_from_master"] == []
    assert info_after["workers_started_apart_from_master"] == [9492, 19344, 25447]
    assert info_before["command"] == "ps aux | grep nginx"
    events = source.events
    assert list(events["kind"]) == ["ps-snapshot", "ps-snapshot"]
    assert events["message"].iloc[0] == "nginx master 7223, 10 workers, PIDs 7292..7301 consecutive"
    assert events["message"].iloc[1].startswith("nginx master 16659, 4 workers, PIDs scattered: 9492, 16663")
    assert list(events["pid"]) == [7223, 16659]
    assert events["timestamp"].notna().all()
    assert len(source.meta["processes"]) == 16


def test_grep_line_is_dropped_and_roles_assigned(tmp_path):
    source = parse(_write(tmp_path, "ps.txt", PS_AUX_WITH_GREP))
    frame = source.meta["processes"]
    assert 30112 not in frame["pid"].tolist()
    assert frame["role"].tolist() == ["nginx-master", "nginx-worker", "nginx-worker", "nginx-cache"]
    assert frame["rss_kb"].tolist() == [1196, 58112, 57920, 9100]
    assert frame["%cpu"].tolist() == [0.0, 2.1, 2.0, 0.0]
    assert frame["start"].tolist()[0] == "Mar03"
    assert frame["command"].iloc[0] == "nginx: master process /usr/sbin/nginx -c /etc/nginx/nginx.conf"
    assert source.events["message"].iloc[0] == "nginx master 1187, 2 workers, PIDs 1188..1189 consecutive"


def test_rows_keep_their_line_and_text_for_evidence(tmp_path):
    source = parse(_write(tmp_path, "ps.txt", PS_AUX_WITH_GREP))
    frame = source.meta["processes"]
    lines = PS_AUX_WITH_GREP.splitlines()
    for row in frame.itertuples():
        assert lines[row.line - 1].rstrip() == row.text and str(row.pid) in row.text


def test_auxf_tree_with_header(tmp_path):
    path = _write(tmp_path, "auxf.txt", PS_AUXF_WITH_HEADER)
    assert sniff(path)[0] == "ps"
    frame = parse(path).meta["processes"]
    roles = dict(zip(frame["pid"].tolist(), frame["role"].tolist()))
    assert roles == {1: "other", 7721: "nginx-master", 7722: "nginx-worker", 7723: "nginx-worker",
                     7724: "nginx-cache", 901: "other"}
    assert frame.loc[frame["pid"] == 901, "vsz_kb"].item() == 1751280
    assert frame.loc[frame["pid"] == 7722, "time"].item() == "95:10"


def test_ef_snapshots_split_at_repeated_header(tmp_path):
    source = parse(_write(tmp_path, "ef.txt", PS_EF_BEFORE_AFTER))
    snapshots = source.meta["snapshots"]
    assert len(snapshots) == 2
    assert snapshots[1][1]["pid"].tolist() == [2201, 2203, 4410]
    info = source.meta["snapshot_info"][1]
    assert info["workers_started_apart_from_master"] == [4410]
    assert info["layout"] == "ef"
    assert source.events["line"].tolist() == [1, 5]


def test_sniff_keeps_ps_and_load_tests_apart(tmp_path):
    ab_text = ("Concurrency Level:      100\nTime taken for tests:   2.084 seconds\n"
               "Complete requests:      7000\nRequests per second:    3359.59 [#/sec] (mean)\n")
    assert sniff(_write(tmp_path, "ab.txt", ab_text))[0] == "ab"
    assert sniff(_write(tmp_path, "ps.txt", PS_AUX_WITH_GREP))[0] == "ps"
    tsar_text = ("Time              ---cpu-- ---mem--\nTime                util     util\n"
                 "23/03/17-17:09:22   9.76    77.48\n23/03/17-17:09:27   9.80    77.50\n")
    assert sniff(_write(tmp_path, "tsar.txt", tsar_text))[0] == "tsar"


def test_file_without_processes_raises(tmp_path):
    path = _write(tmp_path, "empty.txt", "USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\n")
    with pytest.raises(InputError) as caught:
        parse(path, kind="ps")
    assert caught.value.line == 1
