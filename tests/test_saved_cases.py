"""Saved cases (``analyze --save``) that survive damage, tampering,
interruption and two writers: every part is checked against the marker
before it is read (a damaged part is one line naming it, exit 2), paths are
never globs, and a case is written whole or not at all."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import SAMPLES, run_cli

pytest.importorskip("pyarrow", reason="saved cases need pyarrow (the parquet extra)")
pytest.importorskip("duckdb", reason="sql needs DuckDB (the sql extra)")

SAMPLE = SAMPLES / "nginx-proxy-oom"
FINDINGS = "SELECT count(*) AS n FROM findings"


@pytest.fixture(scope="module")
def saved(tmp_path_factory, sample_case):
    """The proxy sample saved once; each test works on a copy."""
    from sarsleuth.fleet.save import save_case
    case = tmp_path_factory.mktemp("saved") / "case"
    analysed = sample_case("nginx-proxy-oom")
    save_case(analysed, case)
    return case, len(analysed.findings)


def _copy(saved, tmp_path, name="case") -> Path:
    dest = tmp_path / name
    shutil.copytree(saved[0], dest)
    return dest


def _parts(case: Path) -> dict:
    return json.loads((case / "sarsleuth-case.json").read_text())["parts"]


def _metrics_part(case: Path) -> Path:
    [rel] = [r for r in _parts(case) if r.startswith("metrics/")]
    return case / rel


def test_the_marker_lists_every_part_with_its_size_and_digest(saved, tmp_path):
    case = _copy(saved, tmp_path)
    parts = _parts(case)
    on_disk = sorted(p.relative_to(case).as_posix() for p in case.rglob("*") if p.is_file()
                     and p.name != "sarsleuth-case.json")
    assert sorted(parts) == on_disk and "findings.parquet" in parts
    assert all(v["bytes"] == (case / k).stat().st_size and len(v["blake2b"]) == 40 for k, v in parts.items())


def _damage(part: Path, how: str) -> None:
    if how == "truncated":
        data = part.read_bytes()
        part.write_bytes(data[:len(data) // 2])
    elif how == "bit-flipped":
        data = bytearray(part.read_bytes())
        data[len(data) // 3] ^= 0x10
        part.write_bytes(bytes(data))
    elif how == "symlink":
        other = part.with_name("elsewhere.parquet")
        part.rename(other)
        part.symlink_to(other)
    elif how == "fifo":
        part.unlink()
        os.mkfifo(part)


@pytest.mark.parametrize("how,reason", [
    ("truncated", "part of the saved case is damaged: {half} bytes where {size} were written (cut or replaced)"),
    ("bit-flipped", "part of the saved case is damaged: its bytes are not those written (a BLAKE2b digest differs)"),
    ("symlink", "part of the saved case is a symbolic link, not the file sarsleuth wrote; not read"),
    ("fifo", "part of the saved case is a named pipe, not the file sarsleuth wrote; not read"),
])
def test_a_damaged_part_is_one_line_naming_it(saved, tmp_path, how, reason):
    """``sarsleuth sql`` and ``load_case`` alike: exit 2 (a CaseError in
    Python) naming the part, never a DuckDB or pyarrow exception; a named
    pipe is never opened (the run would wait for a writer)."""
    import sarsleuth
    from sarsleuth.errors import CaseError
    case = _copy(saved, tmp_path)
    part = _metrics_part(case)
    size = part.stat().st_size
    _damage(part, how)
    line = f"{part}: " + reason.format(half=size // 2, size=size)
    # SQL sees the whole case: any query names the damage, before DuckDB reads a byte
    for query in ("SELECT count(*) FROM metrics", FINDINGS):
        ran = run_cli("sql", case, query)
        assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", f"sarsleuth: {line}\n")
    # in Python each table is read on its own: the others still are
    stored = sarsleuth.load_case(case)
    assert len(stored.findings) == saved[1]
    with pytest.raises(CaseError) as err:
        stored.metrics
    assert str(err.value) == line and err.value.path == str(part)


def test_a_case_written_before_parts_were_listed_names_a_cut_part(saved, tmp_path):
    """No digests to compare: each part's Parquet footer is read, and a part
    a query trips on is named."""
    case = _copy(saved, tmp_path)
    marker = case / "sarsleuth-case.json"
    info = json.loads(marker.read_text())
    del info["parts"]
    marker.write_text(json.dumps(info))
    assert run_cli("sql", case, FINDINGS, "--format", "csv").stdout == f"n\n{saved[1]}\n"
    part = _metrics_part(saved[0]).relative_to(saved[0])
    data = (case / part).read_bytes()
    (case / part).write_bytes(data[:-200])
    ran = run_cli("sql", case, "SELECT count(*) FROM metrics")
    assert ran.returncode == 2 and ran.stderr.startswith(f"sarsleuth: {case / part}: part of the saved case is "
                                                         "damaged: "), ran.stderr
    assert len(ran.stderr.splitlines()) == 1


def test_the_case_path_is_literal_never_a_glob(saved, tmp_path):
    """A case in a folder named ``case*`` beside ``caseB``: only its own
    findings (read_parquet globbed the path: twice as many)."""
    star = _copy(saved, tmp_path, "case*")
    _copy(saved, tmp_path, "caseB")
    ran = run_cli("sql", star, FINDINGS, "--format", "csv")
    assert (ran.returncode, ran.stdout) == (0, f"n\n{saved[1]}\n")
    ran = run_cli("sql", star, "SELECT count(DISTINCT host) AS n, count(*) AS rows FROM metrics", "--format", "json")
    import sarsleuth
    assert json.loads(ran.stdout)[0]["rows"] == len(sarsleuth.load_case(star).metrics)


def test_a_part_the_marker_does_not_list_is_not_read(saved, tmp_path):
    case = _copy(saved, tmp_path)
    intruder = case / "metrics" / "host=intruder"
    intruder.mkdir()
    shutil.copy(_metrics_part(case), intruder / "part-0.parquet")
    ran = run_cli("sql", case, "SELECT count(DISTINCT host) AS n FROM metrics", "--format", "csv")
    assert ran.stdout == "n\n1\n"


@pytest.mark.parametrize("rel", ["metrics/../../elsewhere/part-0.parquet", "metrics//part-0.parquet",
                                 "metrics/host=a/b/c/part-0.parquet"])
def test_a_marker_naming_a_file_outside_the_case_reads_nothing(saved, tmp_path, rel):
    """A marker rewritten to list another case's metrics, with that file's
    true size and digest: the part is no file of this case (exit 2, the
    marker named), never read."""
    case = _copy(saved, tmp_path)
    other = _copy(saved, tmp_path, "elsewhere")
    outside = _metrics_part(other)
    (other / "part-0.parquet").write_bytes(outside.read_bytes())
    marker = case / "sarsleuth-case.json"
    info = json.loads(marker.read_text())
    facts = info["parts"].pop(_metrics_part(case).relative_to(case).as_posix())
    info["parts"][rel] = facts
    marker.write_text(json.dumps(info))
    ran = run_cli("sql", case, "SELECT count(*) FROM metrics")
    assert (ran.returncode, ran.stdout, ran.stderr) == (
        2, "", f"sarsleuth: {marker}: damaged case marker: part {rel!r} is not a file of the case folder; "
               "nothing read\n")


def test_a_marker_part_without_its_size_and_digest_is_damage(saved, tmp_path):
    case = _copy(saved, tmp_path)
    marker = case / "sarsleuth-case.json"
    info = json.loads(marker.read_text())
    info["parts"]["findings.parquet"] = 5
    marker.write_text(json.dumps(info))
    ran = run_cli("sql", case, FINDINGS)
    assert (ran.returncode, ran.stderr) == (
        2, f"sarsleuth: {case / 'findings.parquet'}: damaged case marker: no size and digest recorded for "
           "this part\n")


# --- writing: whole or not at all -----------------------------------------------------------------

_INTERRUPTED = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import sarsleuth.fleet.save as save
    # as a terminal's program starts: Ctrl-C raises KeyboardInterrupt and
    # neither signal is blocked, whatever the test runner's worker handed
    # down (an ignored SIGINT is inherited, and Python then never raises)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    write = save.write_host_tables
    def write_then_stop(base, *args, **kwargs):
        write(base, *args, **kwargs)
        if not any(Path(base).rglob("*.parquet")):
            sys.exit(3)                 # no part on disk: nothing to interrupt after
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))    # the first part is on disk: stop now
    save.write_host_tables = write_then_stop
    from sarsleuth.cli import run
    sys.exit(run(sys.argv[2:]))
""")


@pytest.mark.parametrize("sig,code,said,before", [("SIGINT", 130, "interrupted", "nothing"),
                                                  ("SIGTERM", 143, "terminated", "an earlier case")])
def test_an_interrupted_save_leaves_nothing_and_the_next_one_works(saved, tmp_path, sig, code, said, before):
    """Ctrl-C or SIGTERM after a part is written: the final name keeps
    what it held (nothing, or the earlier case), no private folder is
    left, and the next --save to it works."""
    target = tmp_path / "case"
    if before == "an earlier case":
        shutil.copytree(saved[0], target)
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED, sig, "analyze", str(SAMPLE), "--save",
                           str(target), "--format", "json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert (proc.returncode, proc.stderr.splitlines()[-1:]) == (code, [f"sarsleuth: {said}"]), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if before == "nothing" else ["case"])
    if before == "an earlier case":
        assert _parts(target) == _parts(saved[0])
    ran = run_cli("analyze", SAMPLE, "--save", target, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert run_cli("sql", target, FINDINGS, "--format", "csv").stdout == f"n\n{saved[1]}\n"


def test_a_private_folder_left_by_a_killed_run_is_removed_by_the_next(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".case.sarsleuth-{dead.stdout.strip()}-x1y2.tmp"
    (stale / "metrics").mkdir(parents=True)
    (stale / "metrics" / "part-0.parquet").write_bytes(b"half")
    mine = tmp_path / f".case.sarsleuth-{os.getpid()}-live.tmp"       # a live run's: kept
    mine.mkdir()
    ran = run_cli("analyze", SAMPLE, "--save", tmp_path / "case")
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, "case"]


def test_two_runs_saving_to_one_folder_at_once_leave_one_whole_case(saved, tmp_path):
    """Both succeed, one after the other puts its case in place: the folder
    holds one complete case (every part as its marker lists it), never a
    mix of both nor a case whose tables the other run deleted."""
    import sarsleuth
    target = tmp_path / "case"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    runs = [subprocess.Popen([sys.executable, "-m", "sarsleuth.cli", "analyze", str(SAMPLE), "--save", str(target),
                              "--format", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(2)]
    for proc in runs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and f"wrote the case into {target}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case"]
    stored = sarsleuth.load_case(target)
    for table in stored.tables:
        stored.table(table)             # every part is the one its marker lists
    assert len(stored.findings) == saved[1]


def test_query_results_show_control_characters_escaped_on_a_terminal_and_in_json(saved, tmp_path):
    case = _copy(saved, tmp_path)
    query = "SELECT chr(27) || ']0;pwned' || chr(7) || chr(8238) AS t"
    assert run_cli("sql", case, query, "--format", "csv", tty=True).stdout == "t\n\\x1b]0;pwned\\x07\\u202e\n"
    assert run_cli("sql", case, query, "--format", "csv").stdout == "t\n\x1b]0;pwned\x07\u202e\n"
    assert json.loads(run_cli("sql", case, query, "--format", "json").stdout) == [{"t": "\\x1b]0;pwned\\x07\\u202e"}]
