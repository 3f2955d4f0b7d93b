"""Shared fixtures: where the real-world corpus and the samples are, the
command line run in-process, and sample cases analysed once per session."""
from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def corpus_dir() -> Path | None:
    env = os.environ.get("SARSLEUTH_CORPUS")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "corpus")
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = corpus_dir()
    if path is None:
        pytest.skip("real-world corpus not found: set SARSLEUTH_CORPUS or place it at ../shared/corpus")
    return path


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@dataclass
class Ran:
    """What a command printed and returned, as ``subprocess.run`` reports it."""

    args: list
    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes


class _Terminal(io.TextIOWrapper):
    def isatty(self):
        return True


def run_cli(*args, cwd=None, timeout=None, tty=False) -> Ran:
    """``sarsleuth ARGS...`` in this process (``sarsleuth.cli.run``), with
    standard output and error captured as a UTF-8 stream would take them
    (strict: text that cannot be encoded fails as it would for real);
    ``tty``: standard output says it is a terminal.  ``timeout`` is accepted
    for the callers written for subprocesses."""
    from sarsleuth.cli import run
    out, err = io.BytesIO(), io.BytesIO()
    out_text = (_Terminal if tty else io.TextIOWrapper)(out, encoding="utf-8", write_through=True)
    err_text = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out_text), contextlib.redirect_stderr(err_text):
            code = run(argv)
            out_text.flush()
            err_text.flush()
    finally:
        os.chdir(here)
    data = out.getvalue()
    return Ran(argv, code, data.decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"), data)


#: The files that take longest, longest first: with ``--dist loadfile``
#: each file runs whole on one worker, and the workers finish together only
#: when the long ones start first (the rest, short, fill in around them).
LONGEST_FIRST = ("test_resource_bounds.py", "test_redaction.py", "test_contributing.py", "test_hostile_inputs.py",
                 "test_prometheus.py", "test_report_browser.py", "test_openmetrics.py", "test_notebooks.py",
                 "test_corpus_detectors.py", "test_cli.py", "test_readme.py", "test_architecture.py")


def pytest_configure(config):
    # xdist would order the files by their number of tests instead
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if sys.flags.dont_write_bytecode and not hasattr(config, "workerinput"):
        # Tests start a few hundred Python processes (memory measured in a
        # process of its own, notebooks, pytest in a copy of the tree...);
        # where PYTHONDONTWRITEBYTECODE is set each would compile the
        # package from source again.  Compiled once here (as an install or
        # a first import would), they all load it.
        import compileall
        for package in ("sarsleuth", "lab"):
            if (ROOT / package).is_dir():
                compileall.compile_dir(ROOT / package, quiet=2, workers=1)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    # Where PYTHONDONTWRITEBYTECODE is set, every worker would rewrite the
    # asserts of every test module again (4 of the 6 s a collection takes);
    # the rewritten modules are kept in tests/__pycache__, as a plain pytest
    # run keeps them, and read back by the next worker and the next run.
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


def pytest_collection_modifyitems(session, config, items):
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))     # stable: the rest as collected


@functools.lru_cache(maxsize=None)
def _sample_case(name: str, tz=None, year=None):
    import sarsleuth
    return sarsleuth.load(SAMPLES / name, tz=tz, year=year)


@pytest.fixture(scope="session")
def sample_case():
    """``sample_case("nginx-proxy-oom")``: that sample analysed once per test
    session (treat it as read-only)."""
    return _sample_case


def make_sosreport(tmp_path: Path, plugins: str) -> Path:
    """A real ``sos report`` of this machine with only ``plugins`` (comma
    separated), gzipped into ``tmp_path``; the test is skipped where sos
    cannot run (not installed, not root)."""
    import shutil
    import subprocess
    exe = shutil.which("sos")
    if exe is None:
        pytest.skip("the sos tool (Debian package sosreport) is not installed")
    if os.geteuid() != 0:
        pytest.skip("sos report needs root")
    subprocess.run([exe, "report", "--batch", "--quiet", "--tmp-dir", str(tmp_path), "-o", plugins, "-z", "gzip"],
                   check=True, capture_output=True, timeout=120)
    (archive,) = tmp_path.glob("sosreport-*.tar.gz")
    return archive


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's ``chromium``) for the session's
    layout checks (tests/chromium.py)."""
    import shutil
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        pytest.skip("headless Chromium not installed (the CI script installs Debian's chromium)")
    from .chromium import Browser
    b = Browser(exe)
    yield b
    b.close()
