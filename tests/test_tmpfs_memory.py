"""Memory that runs out into a tmpfs: sar shows it as shared memory
(kbshmem) or, where sysstat records none, as page cache (kbcached) that
grows while the processes' memory (kbmemused) does not; the story says so
with the figures, and names the process that writes there before the
largest ones, as a guess from its command line."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import sarsleuth
from sarsleuth.analysis.attribution import attribute
from sarsleuth.analysis.tmpfs_writers import tmpfs_path
from sarsleuth.detectors import Context, registry
from sarsleuth.inputs.parsers.base import events_frame
from sarsleuth.model import Finding

RAM_KB = 24_000_000
N = 90          # 1 s samples: 40 calm, 40 filling, 10 out of memory


def _frame(section, columns: dict) -> pd.DataFrame:
    ts = pd.date_range("2026-11-27 02:35:00", periods=N, freq="1s", tz="UTC")
    return pd.concat([pd.DataFrame({"timestamp": ts, "host": "h", "section": section, "device": "", "metric": m,
                                    "value": np.asarray(v, dtype=float)}) for m, v in columns.items()],
                     ignore_index=True)


def _ramp(before, after):
    return np.concatenate([np.full(40, before), np.linspace(before, after, 40), np.full(10, after)])


def _host(cached, used, shmem=None):
    avail = _ramp(5_400_000, 20_000)
    memory = {"kbmemtotal": np.full(N, RAM_KB), "kbavail": avail, "kbmemfree": avail, "kbcached": cached,
              "kbmemused": used}
    if shmem is not None:
        memory["kbshmem"] = shmem
    paging = {"majflt/s": np.where(np.arange(N) >= 78, 900.0, 1.0), "pgscand/s": np.where(np.arange(N) >= 78, 5e4, 0)}
    ctx = Context(metrics=pd.concat([_frame("memory", memory), _frame("paging", paging)], ignore_index=True),
                  events=events_frame([]), reports=[], sources=[], link_speed_bps=None)
    return registry()["memory-pressure"](None).run(ctx)


def test_page_cache_that_grows_while_the_processes_do_not_is_told_as_tmpfs():
    (f,) = _host(cached=_ramp(1_000_000, 6_000_000), used=np.full(N, 18_700_000))
    assert f.refs["shared_memory"] is True
    assert f.title.endswith("; page cache (kbcached) up from 1.0 GiB to 5.7 GiB as kbavail fell from 5.1 GiB to "
                            "0.0 GiB while the processes' memory (kbmemused) did not grow: most likely files in a "
                            "tmpfs or /dev/shm, held by no process's RSS, that no OOM kill frees")
    assert f.metrics["peak_kbcached"] == 6_000_000 and f.metrics["kbavail_before_fall"] == 5_400_000


def test_shared_memory_sar_records_is_said_by_its_own_name():
    (f,) = _host(cached=_ramp(1_000_000, 6_000_000), used=np.full(N, 18_700_000), shmem=_ramp(100_000, 5_100_000))
    assert "; shared memory (kbshmem) up from 0.1 GiB to 4.9 GiB as kbavail fell from 5.1 GiB to 0.0 GiB: files" \
        in f.title
    assert f.metrics["peak_kbshmem"] == 5_100_000


@pytest.mark.parametrize("cached, used", [
    # a program grows while a backup fills the page cache beside it
    (_ramp(1_000_000, 4_000_000), _ramp(18_700_000, 23_700_000)),
    # a program grows, the cache shrinks
    (_ramp(1_000_000, 200_000), _ramp(18_700_000, 24_000_000)),
])
def test_memory_the_processes_took_is_not_called_tmpfs(cached, used):
    (f,) = _host(cached=cached, used=used)
    assert "shared_memory" not in f.refs and "tmpfs" not in f.title


def test_a_cache_wobble_where_memory_was_already_short_is_no_tmpfs():
    """Near miss: swap climbing once available memory was already at its
    floor (a leak that filled RAM before), the page cache coming and going
    by 60 MB beside it while the processes' memory stays flat (new pages
    go to swap): half of nothing lost is no tmpfs."""
    from sarsleuth.detectors.shared_memory import shared_memory_grew
    from sarsleuth.detectors.figures import Figures
    avail = np.where(np.arange(N) <= 7, 70_000.0, 50_000.0)
    cached = np.where(np.arange(N) % 7 < 3, 29_000.0, 110_000.0)
    memory = {"kbmemtotal": np.full(N, RAM_KB), "kbavail": avail, "kbmemfree": avail, "kbcached": cached,
              "kbmemused": np.full(N, 24_300_000)}
    ctx = Context(metrics=_frame("memory", memory), events=events_frame([]), reports=[], sources=[],
                  link_speed_bps=None)
    times = pd.date_range("2026-11-27 02:35:00", periods=N, freq="1s", tz="UTC")
    assert shared_memory_grew(ctx, "h", times[7], times[60], Figures()) == ""


_PS = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n" + """\
root      1471 41.6 75.2 18585724 18582232 ?   Ss   02:34   0:54 python3 /srv/app/grower.py --name pg-bufferpool
root      1480  0.0  0.0   8000  3000 ?        Ss   02:34   0:00 /usr/sbin/nginx -g daemon off; pid /run/nginx.pid;
"""


def _snapshot(tmp_path, when, extra=""):
    path = tmp_path / f"ps-aux-{when:%H%M%S}.txt"
    path.write_text(_PS + extra)
    os.utime(path, (when.timestamp(), when.timestamp()))


def _attributed(tmp_path, extra_later, shared=True):
    _snapshot(tmp_path, pd.Timestamp("2026-11-27 02:36:18", tz="UTC"))
    _snapshot(tmp_path, pd.Timestamp("2026-11-27 02:37:19", tz="UTC"), extra_later)
    case = sarsleuth.load(tmp_path, tz="UTC")
    f = Finding(detector="memory-pressure", title="t", severity="high", host=None,
                start=pd.Timestamp("2026-11-27 02:36:39", tz="UTC"), end=pd.Timestamp("2026-11-27 02:37:31", tz="UTC"),
                refs={"shared_memory": True} if shared else {})
    attribute([f], case.sources)
    return f


def test_the_writer_into_a_tmpfs_is_named_before_the_largest_process(tmp_path):
    f = _attributed(tmp_path, "root      3412  0.1  0.0   2592   968 ?        Ss   02:36   0:00 /bin/sh "
                              "/srv/app/bin/render-frames /run/render 600\n")
    assert f.refs["responsible_names"] == ["render-frames", "grower.py"]
    assert f.refs["responsible"] == ("render-frames (PID 3412; new, writing to /run/render, a tmpfs on systemd hosts "
                                     "(a guess: its command line names it)) and grower.py (PID 1471: RSS 17.7 GiB) "
                                     "in ps at 02:37:19 (ps-aux-023719.txt)")


def test_a_writer_that_finished_is_named_from_the_snapshot_that_shows_it(tmp_path):
    """The render job wrote its frames and exited before the last snapshot
    of the finding: its files stay in the tmpfs, and the snapshot that
    still shows it is the one the story cites."""
    _snapshot(tmp_path, pd.Timestamp("2026-11-27 02:37:28", tz="UTC"))
    f = _attributed(tmp_path, "root      3412  0.1  0.0   2592   968 ?        Ss   02:36   0:00 /bin/sh "
                              "/srv/app/bin/render-frames /run/render 600\n")
    assert f.refs["responsible_names"][0] == "render-frames"
    assert f.refs["responsible"].endswith("in ps at 02:37:19 (ps-aux-023719.txt)")
    cited = [e for e in f.evidence if "ps-aux-" in e.path]
    assert cited and all(e.path.endswith("ps-aux-023719.txt") for e in cited)
    assert any("render-frames" in e.text for e in cited)


def test_without_shared_memory_growth_no_writer_is_guessed(tmp_path):
    f = _attributed(tmp_path, "root      3412  0.1  0.0   2592   968 ?        Ss   02:36   0:00 /bin/sh "
                              "/srv/app/bin/render-frames /run/render 600\n", shared=False)
    assert f.refs["responsible_names"] == ["grower.py"]


def test_tmpfs_paths_on_a_command_line():
    assert tmpfs_path("/bin/sh /srv/app/bin/render-frames /run/render 600") == "/run/render"
    assert tmpfs_path("ffmpeg -i in.mp4 -f image2 /dev/shm/frames/%05d.png") == "/dev/shm/frames/%05d.png"
    assert tmpfs_path("python3 worker.py --out=/run/user/1000/cache") == "/run/user/1000/cache"
    # a pid file or a socket under /run is where a daemon keeps its bookkeeping, not its data
    assert tmpfs_path("/usr/sbin/nginx -g daemon off; pid /run/nginx.pid;") == ""
    assert tmpfs_path("gunicorn --bind unix:/run/app/app.sock app:wsgi") == ""
    assert tmpfs_path("/run/current-system/sw/bin/bash") == ""
    assert tmpfs_path("tar -czf /srv/backup/usr.tgz /usr/share") == ""
