"""Logs written under other locales: journalctl, syslog and ``dmesg -T``
stamp with strftime, so the month (``%b``) and weekday (``%a``) are the
locale's.  The names below are glibc's ``LC_TIME`` abbreviations for each
locale (which CLDR, read through Babel, knows); the messages are the
kernel's and systemd's, which are never translated."""
from __future__ import annotations

import pytest

import sarsleuth
from sarsleuth.inputs.parsers import parse, sniff

#: strftime("%b") under each locale, January to December.
ABMON = {
    "fr_FR": "janv. févr. mars avril mai juin juil. août sept. oct. nov. déc.".split(),
    "de_DE": "Jan Feb Mär Apr Mai Jun Jul Aug Sep Okt Nov Dez".split(),
    "es_ES": "ene feb mar abr may jun jul ago sep oct nov dic".split(),
    "pt_BR": "jan fev mar abr mai jun jul ago set out nov dez".split(),
    "it_IT": "gen feb mar apr mag giu lug ago set ott nov dic".split(),
    "ru_RU": "янв фев мар апр мая июн июл авг сен окт ноя дек".split(),
    "uk_UA": "січ лют бер кві тра чер лип сер вер жов лис гру".split(),   # shorter than CLDR's "квіт."
    "zh_CN": [f"{n}月" for n in range(1, 13)],
    "ja_JP": [f"{n:2d}月" for n in range(1, 13)],       # padded: " 4月"
}
#: strftime("%a") for a Thursday.
THURSDAY = {"fr_FR": "jeu.", "de_DE": "Do", "es_ES": "jue", "pt_BR": "qui", "it_IT": "gio",
            "ru_RU": "Чт", "uk_UA": "чт", "zh_CN": "四", "ja_JP": "木"}


def _journal_lines(abmon):
    """journalctl ``short`` (``%b %d %H:%M:%S``): a hung task in March, a
    segfault in April, the systemd-oomd kill in April."""
    mar, apr = abmon[2], abmon[3]
    return [
        f"{mar} 30 23:59:58 web1 kernel: INFO: task jbd2/sda1-8:311 blocked for more than 120 seconds.",
        f"{mar} 30 23:59:58 web1 kernel:       Not tainted 5.15.0-91-generic #101-Ubuntu",
        f"{apr} 15 10:22:13 web1 kernel: php-fpm[8817]: segfault at 0 ip 00007f3a2c1e4b5a sp 00007ffd3a9c1e80 "
        "error 4 in libc.so.6[7f3a2c000000+195000] likely on CPU 2 (core 2, socket 0)",
        f"{apr} 15 10:22:14 web1 systemd-oomd[712]: Killed /system.slice/php-fpm.service due to memory pressure "
        "for /system.slice being 82.19% > 80.00% for > 20s with reclaim activity",
        f"{apr} 15 10:22:14 web1 systemd[1]: php-fpm.service: A process of this unit has been killed by the OOM killer.",
        f"{apr} 15 10:22:15 web1 systemd[1]: php-fpm.service: Failed with result 'oom-kill'.",
    ]


@pytest.mark.parametrize("locale", sorted(ABMON))
def test_journal_of_any_locale_is_read_with_its_months(tmp_path, locale):
    path = tmp_path / "journal.txt"
    path.write_text("\n".join(_journal_lines(ABMON[locale])) + "\n", encoding="utf-8")
    assert sniff(path)[0] == "syslog"
    ev = parse(path).events.set_index("kind")
    assert ev.loc["hung-task", "timestamp"].month == 3 and ev.loc["hung-task", "timestamp"].day == 30
    assert ev.loc["segfault", "timestamp"].month == 4 and ev.loc["segfault", "timestamp"].hour == 10
    assert ev.loc["oom-kill", "timestamp"].month == 4 and ev.loc["oom-kill", "line"] == 4


def test_french_journal_with_markers_gives_the_systemd_oomd_finding(tmp_path):
    path = tmp_path / "journal-fr.txt"
    path.write_text("-- Journal begins at mar. 2024-04-09 08:01:10 CEST, ends at lun. 2024-04-15 10:30:01 CEST. --\n"
                    + "\n".join(_journal_lines(ABMON["fr_FR"])) + "\n", encoding="utf-8")
    assert sniff(path)[0] == "journal"
    case = sarsleuth.load(path)
    oom = [f for f in case.findings if f.detector == "oom-kill"]
    assert len(oom) == 1 and "php-fpm.service" in oom[0].title
    assert oom[0].start.month == 4 and oom[0].start.year == 2024
    assert [(e.line, e.text) for e in oom[0].evidence][0][0] == 5


def test_december_to_january_in_german(tmp_path):
    path = tmp_path / "messages"
    path.write_text("Dez 31 23:59:59 db1 kernel: Out of memory: Killed process 4321 (postgres) total-vm:9123456kB, "
                    "anon-rss:8001234kB, file-rss:120kB, shmem-rss:0kB\n"
                    "Jan  1 00:00:03 db1 kernel: INFO: task postgres:4400 blocked for more than 122 seconds.\n",
                    encoding="utf-8")
    ev = parse(path).events
    assert list(ev["timestamp"].dt.month) == [12, 1]
    assert ev["timestamp"].iloc[1].year == ev["timestamp"].iloc[0].year + 1


@pytest.mark.parametrize("locale", sorted(ABMON))
def test_dmesg_T_of_any_locale(tmp_path, locale):
    """``dmesg -T``: ``[%a %b %e %H:%M:%S %Y]``."""
    stamp = f"[{THURSDAY[locale]} {ABMON[locale][5]} 30 04:27:42 2022]"
    path = tmp_path / "dmesg.txt"
    path.write_text(f"{stamp} Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) #101-Ubuntu SMP\n"
                    f"{stamp} watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]\n"
                    f"{stamp} Modules linked in: xt_conntrack nf_nat\n", encoding="utf-8")
    assert sniff(path)[0] == "dmesg"
    ev = parse(path).events
    lockup = ev[ev["kind"] == "kernel-lockup"].iloc[0]
    assert (lockup["timestamp"].year, lockup["timestamp"].month, lockup["timestamp"].day) == (2022, 6, 30)


def test_a_word_that_is_no_weekday_is_no_dmesg_stamp(tmp_path):
    """An Apache error_log looks like ``dmesg -T`` but its second bracket is
    a level: it is not taken for a kernel log."""
    path = tmp_path / "error_log"
    path.write_text("[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/workers2.properties\n"
                    "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6\n")
    assert sniff(path)[0] != "dmesg"


def test_ambiguous_month_settled_by_the_file(tmp_path):
    """``lis`` is November in Polish but October in Croatian: the file's
    other names say which."""
    lines_pl = ["paź 30 10:00:00 h1 kernel: TCP: time wait bucket table overflow",
                "lis 02 10:00:00 h1 kernel: TCP: time wait bucket table overflow",
                "gru 02 10:00:00 h1 kernel: TCP: time wait bucket table overflow"]
    lines_hr = ["lis 30 10:00:00 h1 kernel: TCP: time wait bucket table overflow",
                "stu 02 10:00:00 h1 kernel: TCP: time wait bucket table overflow",
                "pro 02 10:00:00 h1 kernel: TCP: time wait bucket table overflow"]
    for lines, months in ((lines_pl, [10, 11, 12]), (lines_hr, [10, 11, 12])):
        path = tmp_path / "syslog"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert list(parse(path).events["timestamp"].dt.month) == months


def test_a_document_quoting_log_lines_is_no_log(tmp_path):
    """Most lines must read as the kind: a few syslog lines in notes do not
    make the notes a syslog."""
    path = tmp_path / "notes.txt"
    path.write_text("We saw the box stall this morning, here is what the kernel said:\n"
                    "Apr 15 10:22:13 web1 kernel: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]\n"
                    "After that nobody could log in and we had to power cycle it from the BMC.\n"
                    "Next time please take a sosreport before rebooting, and keep sar running.\n"
                    "The on-call rota is in the wiki; the vendor ticket number is 00412345.\n")
    assert sniff(path)[0] is None
