"""Who took the task slots a fork was refused for: the program that gained
the most processes between the ps snapshot before the refusals and the
one taken while they ran, named as its log lines tag it.  A service that
ran as many processes all along (a PHP-FPM pool) did not take them; with
one snapshot alone the program holding the most is named."""
from __future__ import annotations

import os

import pandas as pd

import sarsleuth

HEAD = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
POOL = "".join(f"www-data {3100 + i} 0.3  0.2 212340 38112 ?        S    09:20   0:02 php-fpm: pool www\n"
               for i in range(24))
BASE = ("root      4027  0.0  0.0  10340  1460 ?        Ss   09:41   0:00 nginx: master process /usr/sbin/nginx\n"
        "www-data  4028  0.1  0.0  11988  4620 ?        S    09:41   0:00 nginx: worker process\n") + POOL
HARNESS = ("root      4205  0.1  0.0   7880  5056 ?        Ss   09:43   0:00 prove-harness\n"
           "root      4206  0.0  0.0   6380  2948 ?        S    09:43   0:00 logger -t ci-job[4205]\n"
           + "".join(f"root      {4207 + i}  0.0  0.0   7880  1688 ?        S    09:43   0:00 prove-harness\n"
                     for i in range(119)))

MESSAGES = ["Nov 27 09:43:11 ci-runner-07 kernel: [44896.960250] cgroup: fork rejected by pids controller in /lab-runner"]
MESSAGES += [f"Nov 27 09:43:{11 + i:02d} ci-runner-07 ci-job[4205]: t/{120 + i}.t: cannot fork: Resource temporarily "
             "unavailable" for i in range(40)]


def _snapshot(folder, clock: str, text: str) -> None:
    path = folder / f"ps-aux-{clock.replace(':', '')}.txt"
    path.write_text(HEAD + text)
    when = pd.Timestamp(f"2026-11-27 {clock}", tz="UTC").timestamp()
    os.utime(path, (when, when))


def _refused(folder):
    (folder / "messages").write_text("\n".join(MESSAGES) + "\n")
    case = sarsleuth.load(folder, tz="UTC", year=2026)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("pid-exhaustion", "fork-rejected")
    return next(f for f in top.findings if f.detector == "fork-rejected")


def test_the_program_that_gained_the_processes_is_named_by_its_log_tag(tmp_path):
    _snapshot(tmp_path, "09:42:55", BASE)
    _snapshot(tmp_path, "09:43:45", BASE + HARNESS)
    f = _refused(tmp_path)
    assert f.refs["responsible_names"] == ["ci-job"]
    assert f.refs["responsible"] == ("ci-job (as its log lines tag it; prove-harness in ps, 120 processes; none at "
                                     "09:42:55) in ps at 09:43:45 (ps-aux-094345.txt)")
    assert f.refs["responsible_pids"][:2] == [4205, 4207]


def test_a_pool_that_was_as_large_before_is_not_what_took_the_slots(tmp_path):
    """The pool grew by four workers, under the eight a program must gain;
    the harness was there before with 99 and gained 21."""
    grown_pool = "".join(f"www-data {3200 + i} 0.3  0.2 212340 38112 ?        S    09:43   0:00 php-fpm: pool www\n"
                         for i in range(4))
    earlier = HARNESS.splitlines(keepends=True)[:100]
    _snapshot(tmp_path, "09:42:55", BASE + "".join(earlier))
    _snapshot(tmp_path, "09:43:45", BASE + grown_pool + HARNESS)
    f = _refused(tmp_path)
    assert f.refs["responsible_names"] == ["ci-job"]
    assert "prove-harness in ps, 120 processes; 21 more than at 09:42:55" in f.refs["responsible"]
    assert "php-fpm" not in f.refs["responsible"]


def test_nothing_grew_nothing_is_named(tmp_path):
    _snapshot(tmp_path, "09:42:55", BASE + HARNESS)
    _snapshot(tmp_path, "09:43:45", BASE + HARNESS)
    assert "responsible" not in _refused(tmp_path).refs


def test_one_snapshot_names_the_program_holding_the_most(tmp_path):
    _snapshot(tmp_path, "09:43:45", BASE + HARNESS)
    f = _refused(tmp_path)
    assert f.refs["responsible_names"] == ["ci-job", "php-fpm"]
    assert f.refs["responsible"].startswith("ci-job (as its log lines tag it; prove-harness in ps, 120 processes) and "
                                            "php-fpm (24 processes) in ps at 09:43:45")
