"""nginx / Tengine / OpenResty error.log."""
from __future__ import annotations

import pandas as pd

from sarsleuth.inputs.parsers import parse, registry, sniff
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.logs.nginx_error import parse_line, read_events

SEED_003 = "2012/12/24 16:39:56 [alert] 13661#0: worker process 13666 exited on signal 11 (core dumped)\n"


def test_seed_003_worker_signal_exit(tmp_path):
    path = tmp_path / "error.log"
    path.write_text("2012/12/24 16:39:40 [notice] 13661#0: start worker process 13666\n" + SEED_003)
    assert sniff(path)[0] == "nginx-error"
    src = parse(path)
    row = src.events.iloc[1]
    assert (row["kind"], row["pid"], row["process"], row["level"]) == ("worker-signal-exit", 13661, "nginx", "alert")
    assert row["timestamp"] == pd.Timestamp("2012-12-24 16:39:56") and row["line"] == 2
    assert row["message"] == "worker process 13666 exited on signal 11 (core dumped)"
    assert row["source"] == "nginx-error" and row["file"] == str(path)
    assert src.events.iloc[0]["kind"] == "worker-start"
    assert src.meta["levels"] == {"notice": 1, "alert": 1}
    assert src.meta["volume"].to_dict() == {pd.Timestamp("2012-12-24 16:39"): 2}


def test_every_nginx_corpus_file(corpus):
    expected = {
        "nginx-error-signal11-core-dumped-respawn-openresty.log": {"worker-start": 5, "worker-signal-exit": 4},
        "nginx-error-signal11-no-core-rtmp.log": {"worker-signal-exit": 9},
        "nginx-error-signal9-docker-prefix.log": {"worker-signal-exit": 9},
        "nginx-error-cache-manager-signal11-sigchld-from.log": {"worker-signal-exit": 3, "worker-start": 3},
        "nginx-error-cache-manager-fatal-code2.log": {"worker-fatal-exit": 1},
        "nginx-error-accept4-emfile-tcp-proxy.log": {"too-many-open-files": 7, "upstream-error": 3},
        "nginx-error-emfile-variants.log": {"too-many-open-files": 3},    # musl says "No file descriptors available"
        "nginx-error-too-many-open-files-docker-compose.log": {"too-many-open-files": 3},
        "nginx-error-upstream-timeouts.log": {"upstream-timeout": 2},
        "nginx-error-worker-connections-not-enough.log": {"worker-connections-exhausted": 4},
        "nginx-error-worker-connections-exceed-rlimit-warn.log": {"worker-connections-exhausted": 3},
        "nginx-error-startup-notices-debug-rhel7.log": {"worker-start": 1},
        "nginx-error-ssl-session-cache-alert.log": {"nginx-shm-exhausted": 1},
        "pair-A-nginx-error-signal11-statsd-2.6.32.log": {"worker-signal-exit": 1},
        "pair-B-nginx-error-signal11-modsecurity-5.4.log": {"worker-signal-exit": 1},
        "pair-C-nginx-error-signal11-burst-centos7.log": {"worker-signal-exit": 8, "config-reload": 1},
    }
    for name, kinds in expected.items():
        path = corpus / "logs" / name
        assert sniff(path)[0] == "nginx-error", name
        src = parse(path)
        assert src.events.groupby("kind")["repeats"].sum().to_dict() == kinds, name
        assert src.host is None


def test_docker_prefixed_and_access_lines(corpus):
    src = parse(corpus / "logs" / "nginx-error-signal9-docker-prefix.log")
    ev = src.events
    assert set(ev["pid"]) == {27} and ev["timestamp"].iloc[0] == pd.Timestamp("2021-12-18 22:33:14")
    assert src.meta["format"] == "nginx-prefixed" and src.meta["levels"] == {"alert": 9}
    mixed = parse(corpus / "logs" / "nginx-error-too-many-open-files-docker-compose.log")
    assert list(mixed.events["line"]) == [2, 4, 5] and list(mixed.events["level"]) == ["alert", "crit", "alert"]
    assert mixed.events.iloc[0]["conn"] == 2602


def test_levels_counted_over_all_lines(corpus):
    src = parse(corpus / "logs" / "nginx-error-startup-notices-debug-rhel7.log")
    assert src.meta["levels"]["debug"] + src.meta["levels"]["notice"] == src.records == 18
    assert src.meta["format"] == "nginx"


def test_pid_tid_and_connection_forms():
    info = parse_line("2016/03/14 00:35:26 [alert] 25909#0: *164106 1024 worker_connections are not enough")
    assert (info.pid, info.conn, info.level) == (25909, 164106, "alert")
    assert info.message == "1024 worker_connections are not enough"
    info = parse_line("[alert] 869#869: *4201234 could not allocate new session")
    assert info.stamp is None and info.pid == 869
    assert not parse_line("\tat upstream stderr continuation").prefixed


def test_continuation_lines_go_into_detail(tmp_path):
    path = tmp_path / "error.log"
    path.write_text(
        "2019/01/17 21:38:32 [error] 4213#4213: *12683 upstream timed out (110: Connection timed out) "
        "while reading response header from upstream, client: 192.168.0.138\n"
        "PHP message: PHP Fatal error:  Allowed memory size exhausted\n"
        "PHP message: stack trace follows\n"
        "2019/01/17 21:38:33 [notice] 4213#4213: signal process started\n")
    ev = parse(path).events
    assert list(ev["kind"]) == ["upstream-timeout", "config-reload"]
    assert ev.iloc[0]["detail"].splitlines() == ["PHP message: PHP Fatal error:  Allowed memory size exhausted",
                                                 "PHP message: stack trace follows"]


def test_tz_option(corpus):
    from sarsleuth.timebase import settle
    src = read_events(corpus / "logs" / "pair-B-nginx-error-signal11-modsecurity-5.4.log", ParseOptions())
    assert src.events["timestamp"].dt.tz is None          # wall clock as recorded
    settle([src], registry(), tz="Europe/Paris")
    assert src.events["timestamp"].iloc[0] == pd.Timestamp("2022-06-30 04:27:49", tz="Europe/Paris")


def test_notes_quoting_a_few_error_log_lines_are_no_error_log(tmp_path):
    """Most lines must read as error.log lines: a ticket that quotes two is
    not one (its pasted-quote form is peeled and read elsewhere)."""
    path = tmp_path / "ticket.txt"
    path.write_text("Customer reports 502s on the image host since the deploy; two lines from the error log:\n"
                    '2024/04/15 10:22:13 [error] 2211#2211: *8812 upstream timed out (110: Connection timed out) '
                    'while reading response header from upstream, client: 10.12.0.20, server: img.example.com\n'
                    "2024/04/15 10:22:14 [error] 2211#2211: *8813 no live upstreams while connecting to upstream\n"
                    "The backend team says the pool was resized at 10:15, which could explain the timeouts.\n"
                    "Please check whether keepalive to the upstream is configured, and raise the timeout.\n"
                    "We will follow up after the maintenance window tonight.\n")
    from sarsleuth.inputs.parsers import sniff
    assert sniff(path)[0] is None


def test_evidence_quotes_a_long_line_cut_with_an_ellipsis(tmp_path):
    import sarsleuth
    request = "GET /img/" + "a" * 300 + ".jpg HTTP/1.1"
    lines = [f'2024/04/15 10:22:{s:02d} [error] 2211#2211: *{8800 + s} upstream timed out (110: Connection timed out) '
             f'while reading response header from upstream, client: 10.12.0.20, server: img.example.com, '
             f'request: "{request}", upstream: "http://10.20.0.11:8080/img/big.jpg", host: "img.example.com"'
             for s in range(3)]
    path = tmp_path / "error.log"
    path.write_text("2024/04/15 10:20:00 [notice] 2210#2210: start worker process 2211\n" + "\n".join(lines) + "\n")
    found = [f for f in sarsleuth.load(path).findings if f.detector == "upstream-timeout"]
    evidence = found[0].evidence[0]
    # cut within 240 characters, never inside a word (here the request's path, cut whole)
    assert evidence.line == 2 and len(evidence.text) <= 240
    assert evidence.text == lines[0][:lines[0].index("/img/") + 5] + "…"
    assert "http://10.20.0.11:8080: 3" in found[0].title


def test_a_pid_no_linux_host_can_have_names_no_process(tmp_path):
    """A pid past Linux's PID_MAX_LIMIT (2^22; a damaged or forged line) is
    read as no pid, never a crash; the pid at the limit is kept."""
    path = tmp_path / "error.log"
    path.write_text("2026/11/24 10:00:01 [notice] 4194304#4194304: signal process started\n"
                    "2026/11/24 10:00:02 [emerg] 99999999999999999999999999#0: bind() to 0.0.0.0:80 failed "
                    "(98: Address already in use)\n"
                    "2026/11/24 10:00:03 [emerg] 4194305#0: still could not bind()\n")
    ev = parse(path).events
    assert list(ev["kind"]) == ["config-reload", "port-in-use", "port-in-use"]
    assert ev["pid"].iloc[0] == 4194304 and ev["pid"].iloc[1:].isna().all()


def test_a_helper_process_that_crashed_is_named_as_such(tmp_path):
    import sarsleuth
    path = tmp_path / "error.log"
    path.write_text("2024/06/11 04:10:27 [alert] 2204#0: cache manager process 2210 exited on signal 11\n"
                    "2024/06/11 04:10:27 [notice] 2204#0: start cache manager process 2391\n"
                    "2024/06/11 05:41:02 [alert] 2204#0: cache manager process 2391 exited on signal 11 (core dumped)\n")
    (crash,) = [f for f in sarsleuth.load(path).findings if f.detector == "worker-signal-exit"]
    assert crash.title == "nginx cache manager process crashed 2 time(s): 2 x signal 11 (SIGSEGV), 1 core dumped"
    # near miss: a worker among them makes them workers' crashes
    mixed = tmp_path / "mixed.log"
    mixed.write_text(path.read_text() + "2024/06/11 05:42:13 [alert] 2204#0: worker process 2262 exited on signal 11\n")
    (both,) = [f for f in sarsleuth.load(mixed).findings if f.detector == "worker-signal-exit"]
    assert both.title.startswith("nginx workers crashed 3 time(s)")
