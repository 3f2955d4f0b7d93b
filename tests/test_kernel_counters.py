"""The kernel's network counters a bundle records (``netstat -s``,
``nstat -zas``, /proc/net/netstat), and what TCPTimeWaitOverflow says of
a TIME_WAIT table that looked full: the kernel counted the sockets it
destroyed early, so a count above zero confirms an inferred cap and zero
says the flat top was something else.

``netstat -s`` is net-tools' (it prints a counter it has no sentence for as
``Name: value`` under its group, as sos's networking plugin captured on
Debian 12); nstat's rows are ``name value rate``; /proc/net/netstat pairs a
line of names with a line of values."""
from __future__ import annotations

import pandas as pd

import sarsleuth
from sarsleuth.inputs.bundles.facts import HostFacts
from sarsleuth.inputs.bundles.readers import kernel_counters

NETSTAT_S = """\
Ip:
    Forwarding: 1
    254201 total packets received
    0 forwarded
Tcp:
    60212 active connection openings
    60230 passive connection openings
    0 segments retransmitted
TcpExt:
    20112 TCP sockets finished time wait in fast timer
    62 delayed acks sent
    TCPTimeWaitOverflow: 39917
    TCPOrigDataSent: 60341
IpExt:
    InOctets: 29837211
"""

NSTAT = """\
#kernel
IpInReceives                    254201             0.0
TcpActiveOpens                  60212              0.0
TcpExtTW                        20112              0.0
TcpExtTCPTimeWaitOverflow       39917              0.0
"""

PROC_NETSTAT = """\
TcpExt: SyncookiesSent SyncookiesRecv TW TCPTimeWaitOverflow TCPReqQFullDrop
TcpExt: 0 0 20112 39917 0
IpExt: InNoRoutes InOctets
IpExt: 0 29837211
"""


def _read(text, name):
    facts = HostFacts(bundle="b")
    kernel_counters(text, name, None, facts)
    return facts.counters


def test_each_format_gives_the_counter_with_its_line():
    for text, name, line in ((NETSTAT_S, "sos_commands/networking/netstat_-s", 12),
                             (NSTAT, "sos_commands/networking/nstat_-zas", 5),
                             (PROC_NETSTAT, "proc/net/netstat", 2)):
        counters = _read(text, name)
        overflow = counters["TcpExtTCPTimeWaitOverflow"]
        assert (overflow.number(), overflow.path, overflow.line) == (39917, name, line), name
    assert _read(NETSTAT_S, "n")["IpExtInOctets"].number() == 29837211
    assert _read(PROC_NETSTAT, "p")["TcpExtTW"].number() == 20112
    # a sentence netstat translates is not a counter by name
    assert "TcpExtTW" not in _read(NETSTAT_S, "n")


def _bundle(root, overflows: int):
    """A sosreport of a host whose TIME_WAIT count climbed to 4,000 and
    held there 50 s while ab kept opening connections, sar at 1 s."""
    base = root / "sosreport-web-lab-05-2026-11-24-abcdef"
    start = pd.Timestamp("2026-11-24 18:27:40")
    tw = [12] * 10 + [1800, 3650] + [4000] * 50 + [2100, 300]
    opens = [0] * 10 + [9000] * 52 + [0, 0]
    lines = ["Linux 6.1.0-13-amd64 (web-lab-05) \t11/24/2026 \t_x86_64_\t(2 CPU)", ""]
    lines.append(f"{start:%H:%M:%S}  totsck    tcpsck    udpsck    rawsck   ip-frag    tcp-tw")
    for i, n in enumerate(tw):
        lines.append(f"{start + pd.Timedelta(seconds=i + 1):%H:%M:%S}  {25:>6} {17:>9} {0:>9} {0:>9} {0:>9} {n:>9}")
    lines += ["", f"{start:%H:%M:%S}  active/s passive/s    iseg/s    oseg/s"]
    for i, n in enumerate(opens):
        lines.append(f"{start + pd.Timedelta(seconds=i + 1):%H:%M:%S}  {n:>8.2f} {n:>9.2f} {n * 3:>9.2f} {n * 3:>9.2f}")
    for rel, text in {"sos_commands/host/hostname": "web-lab-05\n",
                      "sos_commands/sar/sar24": "\n".join(lines) + "\n",
                      "sos_commands/networking/netstat_-s": NETSTAT_S.replace("39917", str(overflows))}.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


def test_an_inferred_cap_the_kernel_counted_is_confirmed(tmp_path):
    case = sarsleuth.load(_bundle(tmp_path, 39917), tz="UTC", year=2026)
    (tw,) = [f for f in case.findings if f.detector == "tcp-timewait"]
    assert tw.title.endswith("inferred from the flat top); the kernel counted 39,917 TIME_WAIT overflows since "
                             "boot (TCPTimeWaitOverflow when the bundle was made)")
    assert tw.metrics["timewait_overflows"] == 39917
    assert any(e.path.endswith("netstat_-s") and e.line == 12 and e.text == "TCPTimeWaitOverflow: 39917"
               for e in tw.evidence)


def test_a_flat_top_the_kernel_counted_no_overflow_for_is_no_cap(tmp_path):
    case = sarsleuth.load(_bundle(tmp_path, 0), tz="UTC", year=2026)
    assert not [f for f in case.findings if f.detector == "tcp-timewait" and "cap" in f.title]
    assert case.host_facts("web-lab-05").counters["TcpExtTCPTimeWaitOverflow"].number() == 0
