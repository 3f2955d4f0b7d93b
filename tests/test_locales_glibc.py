"""Month and weekday names as glibc writes them: real lines printed by
``date`` under locales compiled with ``localedef`` from glibc's own sources,
read back by sarsleuth.  ``journalctl`` (short output) stamps with
strftime("%b %d %H:%M:%S"), ``dmesg -T`` with strftime("%a %b %e %H:%M:%S %Y"),
both in the reader's ``LC_TIME``."""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sarsleuth
from sarsleuth.knowledge import locales
from sarsleuth.inputs.parsers import parse, sniff

ROOT = Path(__file__).resolve().parent.parent
SOURCES = Path("/usr/share/i18n/locales")
SAMPLE = ["cs_CZ", "pl_PL", "hr_HR", "uk_UA", "ru_RU", "fr_FR", "de_DE", "es_ES", "it_IT", "pt_BR",
          "sv_SE", "fi_FI", "tr_TR", "el_GR", "ja_JP", "zh_CN", "ko_KR",
          # languages whose names CLDR does not give at all, or a name of
          # which is another language's (so is "sad", om "Sadaasa")
          "om_ET", "ti_ER", "be_BY"]
#: locales whose names are not one word of letters (combining marks, spaces,
#: hyphens, apostrophes, wide padding), whose ``jui`` is settled by the
#: file's ``jun`` (fr_CA), whose ``Jan`` is June (st_ZA), and guards
LOG_SAMPLE = ["hi_IN", "bn_IN", "ta_IN", "ca_ES", "vi_VN", "ar_SA", "ar_IQ", "mi_NZ", "gv_GB", "et_EE", "br_FR",
              "mn_MN", "fr_CA", "st_ZA", "cs_CZ", "fr_FR", "ja_JP"]
COMPILED = list(dict.fromkeys(SAMPLE + LOG_SAMPLE))
#: the 15th of each month of 2024, and Monday 10 to Sunday 16 June 2024
MONTH_DAYS = [dt.date(2024, m, 15) for m in range(1, 13)]
WEEK = [dt.date(2024, 6, d) for d in range(10, 17)]


def _glibc_version() -> str:
    ran = subprocess.run(["ldd", "--version"], capture_output=True, text=True)
    return ran.stdout.splitlines()[0] if ran.returncode == 0 and ran.stdout else "unknown"


@pytest.fixture(scope="session")
def locpath(request, tmp_path_factory) -> Path:
    """A LOCPATH holding the sample locales, compiled once (kept in pytest's
    cache, keyed by the glibc version and the locale sources)."""
    if shutil.which("localedef") is None or shutil.which("date") is None:
        pytest.skip("localedef (glibc) not installed: cannot compile locales")
    if not all((SOURCES / name).is_file() for name in COMPILED):
        pytest.skip(f"glibc locale sources not in {SOURCES} (Debian package 'locales')")
    key = hashlib.sha1(_glibc_version().encode()
                       + b"".join((SOURCES / n).read_bytes() for n in COMPILED)).hexdigest()[:12]
    cache = getattr(request.config, "cache", None)      # absent under -p no:cacheprovider
    root = Path(cache.mkdir(f"glibc-locales-{key}")) if cache else tmp_path_factory.mktemp("glibc-locales")

    def compile_one(name: str) -> str | None:
        target = root / f"{name}.UTF-8"
        if (target / "LC_TIME").is_file():
            return None
        building = root / f".{name}.{os.getpid()}"
        # the locale's own LC_TIME, the other categories POSIX's: the names
        # `date` prints are the real locale's, and compiling skips its
        # collation tables (a third of the time)
        source = root / f".{name}.{os.getpid()}.src"
        source.write_text("".join(f'{cat}\ncopy "{name if cat == "LC_TIME" else "POSIX"}"\nEND {cat}\n'
                                  for cat in ("LC_CTYPE", "LC_COLLATE", "LC_TIME", "LC_NUMERIC", "LC_MONETARY",
                                              "LC_MESSAGES")), "ascii")
        ran = subprocess.run(["localedef", "-i", str(source), "-f", "UTF-8", str(building)],
                             capture_output=True, text=True)
        source.unlink()
        if not (building / "LC_TIME").is_file():      # ja_JP, ko_KR: their LC_TIME needs their own LC_CTYPE
            ran = subprocess.run(["localedef", "-i", name, "-f", "UTF-8", str(building)],
                                 capture_output=True, text=True)
        if not (building / "LC_TIME").is_file():
            return f"{name}: {ran.stderr.strip()[:200]}"
        shutil.rmtree(target, ignore_errors=True)
        building.rename(target)
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = [msg for msg in pool.map(compile_one, COMPILED) if msg]
    assert not failed, failed
    return root


def strftime(locpath: Path, locale: str, fmt: str, days) -> list[str]:
    """``date`` under the compiled locale, one output line per day."""
    env = {**os.environ, "LOCPATH": str(locpath), "LC_ALL": f"{locale}.UTF-8", "TZ": "UTC"}
    ran = subprocess.run(["date", "-f", "-", "+" + fmt], input="".join(f"{d} 10:22:13\n" for d in days),
                         capture_output=True, text=True, env=env, check=True)
    assert "cannot" not in ran.stderr, ran.stderr
    return ran.stdout.splitlines()


def _language(locale: str) -> str:
    return locale.split("_")[0]


@pytest.mark.parametrize("locale", COMPILED)
def test_journalctl_months_of_each_locale_are_dated(tmp_path, locpath, locale):
    """journalctl ``short``: one kernel line on the 15th of every month."""
    stamps = strftime(locpath, locale, "%b %d %H:%M:%S", MONTH_DAYS)
    path = tmp_path / "journal.txt"
    path.write_text("".join(f"{s} web1 kernel: INFO: task jbd2/sda1-8:311 blocked for more than 120 seconds.\n"
                            for s in stamps), encoding="utf-8")
    assert sniff(path)[0] == "syslog", stamps
    ev = parse(path).events
    hung = ev[ev["kind"] == "hung-task"]
    assert [(t.month, t.day, t.hour) for t in hung["timestamp"]] == [(m, 15, 10) for m in range(1, 13)], stamps
    source = parse(path)
    assert not source.warnings
    # every line counted under its own minute, read from the raw bytes
    volume = source.meta["volume"]
    assert source.meta["unstamped_lines"] == 0 and len(volume) == 12, stamps
    assert [(t.month, t.day, t.hour, t.minute) for t in volume.index] == [(m, 15, 10, 22) for m in range(1, 13)]


def test_journalctl_names_glibc_writes_in_several_words_or_with_marks(locpath):
    """The stamps these locales print are what the parsers must read whole."""
    def first(locale, day):
        return strftime(locpath, locale, "%b %d", [day])[0]
    assert first("vi_VN", dt.date(2024, 6, 15)) == "Thg 6 15"
    assert first("ca_ES", dt.date(2024, 1, 15)) == "de gen. 15"
    assert first("et_EE", dt.date(2024, 4, 15)).startswith("apr  ")
    assert first("hi_IN", dt.date(2024, 4, 15)) == "अप्रैल 15"
    assert first("st_ZA", dt.date(2024, 6, 15)) == "Jan 15"


def test_a_month_name_the_file_cannot_settle_is_a_warning(tmp_path, locpath):
    """fr_CA writes ``jun`` for June and ``jui`` for July, but ``jui`` also
    starts ``juin``: a journal of July alone cannot tell which, and says so,
    naming the file and line (a whole year is dated right, see above)."""
    days = [dt.date(2024, 7, d) for d in (14, 15)]
    stamps = strftime(locpath, "fr_CA", "%b %d %H:%M:%S", days)
    assert stamps[0].startswith("jui ")
    path = tmp_path / "journal.txt"
    path.write_text("".join(f"{s} web1 kernel: INFO: task jbd2/sda1-8:311 blocked for more than 120 seconds.\n"
                            for s in stamps), encoding="utf-8")
    source = parse(path)
    warned = [w for w in source.warnings if "'jui'" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{path}:1: "), source.warnings
    assert "June or July" in warned[0] and "guess" in warned[0]


@pytest.mark.parametrize("locale", COMPILED)
def test_dmesg_T_weekdays_and_months_of_each_locale(tmp_path, locpath, locale):
    """``dmesg -T``: a week of June, then the 15th of every month."""
    days = WEEK + MONTH_DAYS
    stamps = strftime(locpath, locale, "[%a %b %e %H:%M:%S %Y]", days)
    path = tmp_path / "dmesg.txt"
    path.write_text("".join(f"{s} watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]\n"
                            for s in stamps), encoding="utf-8")
    assert sniff(path)[0] == "dmesg", stamps
    ev = parse(path).events
    lockups = ev[ev["kind"] == "kernel-lockup"]["timestamp"]
    assert [t.date() for t in lockups] == days, stamps
    source = parse(path)
    assert not source.warnings
    assert source.meta["unstamped_lines"] == 0, stamps
    assert sorted({t.date() for t in source.meta["volume"].index}) == sorted(set(days)), stamps
    for day, stamp in zip(WEEK, stamps):
        weekday, _month = locales.split_stamp_names(stamp[1:].split(" 10:22")[0].rsplit(" ", 1)[0].rstrip())
        assert day.weekday() in locales.weekday_candidates(weekday), stamp


@pytest.mark.parametrize("locale", SAMPLE)
def test_every_name_form_of_each_locale_is_known_in_its_language(locpath, locale):
    """%b %B %Ob %OB (abmon, mon, ab_alt_mon, alt_mon) and %a %A (abday, day)."""
    lang = _language(locale)
    for fmt in ("%b", "%B", "%Ob", "%OB"):
        for number, name in enumerate(strftime(locpath, locale, fmt, MONTH_DAYS), 1):
            found = locales.month_candidates(name)
            assert lang in found.get(number, ()) or found == {number: {"en"}}, (fmt, name, found)
    for fmt in ("%a", "%A"):
        for day, name in zip(WEEK, strftime(locpath, locale, fmt, WEEK)):
            found = locales.weekday_candidates(name)
            assert lang in found.get(day.weekday(), ()) or found == {day.weekday(): {"en"}}, (fmt, name, found)


@pytest.fixture(scope="module")
def generator():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import glibc_time_names
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return glibc_time_names


def test_generator_reads_the_sources_as_localedef_does(locpath, generator):
    """The generator's reading of each sample source (strings of <Uxxxx>,
    continued lines and strings, ``copy``) equals what ``locale`` prints
    from the compiled locale."""
    lc_time = generator.read_lc_time(SOURCES)
    keywords = generator.MONTH_KEYWORDS + generator.WEEKDAY_KEYWORDS
    for name in SAMPLE:
        env = {**os.environ, "LOCPATH": str(locpath), "LC_ALL": f"{name}.UTF-8"}
        printed = subprocess.run(["locale", *keywords], capture_output=True, text=True, env=env,
                                 check=True).stdout.splitlines()
        assert [v.split(";") for v in printed] == [lc_time[name][k] for k in keywords], name


def test_data_file_holds_what_the_installed_cldr_lacks(generator):
    """Checked against the glibc and Babel installed, whichever they are:
    every name glibc writes that this CLDR does not give its language is in
    the data file, and every entry of the file is a name glibc writes for
    that language with that number.  The file keeps what earlier Babels
    needed too (its ``cldr`` line lists them), since CLDR releases change
    names as well."""
    if not SOURCES.is_dir():
        pytest.skip(f"glibc locale sources not in {SOURCES} (Debian package 'locales')")
    import tomllib
    data = tomllib.loads((ROOT / "sarsleuth" / "knowledge" / "glibc_time_names.toml").read_text(encoding="utf-8"))
    months, weekdays = generator.names_by_language(generator.read_lc_time(SOURCES))

    def entries(table) -> set:
        return {(kind, lang, key, n) for kind in ("months", "weekdays") for lang, names in table[kind].items()
                for key, numbers in names.items() for n in (numbers if isinstance(numbers, (list, set)) else [numbers])}

    in_file = entries(data)
    missing = entries(generator.differences(months, weekdays)) - in_file
    assert not missing, f"{len(missing)} names this CLDR lacks (run tools/glibc_time_names.py): {sorted(missing)[:5]}"
    assert in_file <= entries({"months": months, "weekdays": weekdays})


def test_czech_journal_from_june_gives_its_oom_kill(tmp_path, locpath):
    """journalctl under LC_TIME=cs_CZ.UTF-8: June is ``čen``, which CLDR
    (``čvn``) does not know; the OOM kill is dated and reported."""
    when = [dt.datetime(2024, 6, 15, 10, 22, s) for s in (10, 10, 11, 11, 12)]
    env = {**os.environ, "LOCPATH": str(locpath), "LC_ALL": "cs_CZ.UTF-8", "TZ": "Europe/Prague"}
    stamps = subprocess.run(["date", "-f", "-", "+%b %d %H:%M:%S"], input="".join(f"{w}\n" for w in when),
                            capture_output=True, text=True, env=env, check=True).stdout.splitlines()
    head = subprocess.run(["date", "-d", "2024-06-09 08:01:10", "+%a %Y-%m-%d %H:%M:%S %Z"],
                          capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert stamps[0].startswith("čen ")
    messages = [
        "java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
        "Mem-Info:",
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
        "global_oom,task_memcg=/system.slice/app.service,task=java,pid=4412,uid=1000",
        "Out of memory: Killed process 4412 (java) total-vm:18874368kB, anon-rss:14356480kB, file-rss:0kB, "
        "shmem-rss:0kB, UID:1000 pgtables:28672kB oom_score_adj:0",
        "oom_reaper: reaped process 4412 (java), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    ]
    path = tmp_path / "journal-cs.txt"
    path.write_text(f"-- Journal begins at {head}, ends at {head}. --\n"
                    + "".join(f"{s} web1 kernel: {m}\n" for s, m in zip(stamps, messages)), encoding="utf-8")
    assert sniff(path)[0] == "journal"
    case = sarsleuth.load(path)
    oom = [f for f in case.findings if f.detector == "oom-kill"]
    assert len(oom) == 1 and "java" in oom[0].title and oom[0].refs["pids"] == [4412]
    assert (oom[0].start.year, oom[0].start.month, oom[0].start.day) == (2024, 6, 15)


def test_a_month_name_met_after_the_head_that_cannot_be_settled_is_a_warning(tmp_path, locpath):
    """May (``mai``) all through the head, then a July line (``jui``) far
    past it: the head settled nothing about ``jui``, so the file says so."""
    may = [dt.date(2024, 5, 1 + i // 100) for i in range(3000)]
    stamps = strftime(locpath, "fr_CA", "%b %d %H:%M:%S", may + [dt.date(2024, 7, 15)])
    assert stamps[0].startswith("mai ") and stamps[-1].startswith("jui ")
    path = tmp_path / "journal.txt"
    path.write_text("".join(f"{s} web1 kernel: INFO: task jbd2/sda1-8:311 blocked for more than 120 seconds.\n"
                            for s in stamps), encoding="utf-8")
    warned = [w for w in parse(path).warnings if "'jui'" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{path}: month name 'jui', first met after line "), warned
    assert "June or July" in warned[0] and "(a guess)" in warned[0]
