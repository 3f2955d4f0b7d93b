"""The ``sarsleuth`` command line.  Heavy libraries (pandas, matplotlib, rich) are imported inside the
commands, so ``--help`` stays fast, and ``sniff`` with plain paths builds no typer app.  Output formats come
from the registry of :mod:`sarsleuth.render`; files are written whole or not at all (:mod:`.render.files`).
Errors the user can fix print one line on stderr and exit 2; ``--debug`` shows the traceback instead."""
from __future__ import annotations

import enum
import gc
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from sarsleuth import render
from sarsleuth.errors import SarsleuthError, UsageError
from sarsleuth.render.files import OutputFailed, StdoutClosed, check_destination, refuse_collisions, \
    silence_stdout, stdout
from sarsleuth.safe_text import one_line
from sarsleuth.termination import Terminated, terminate_as_interrupt
from sarsleuth.render.standard_streams import settle_standard_streams
from sarsleuth.version import __version__

app = typer.Typer(
    add_completion=True, no_args_is_help=True, rich_markup_mode="rich", pretty_exceptions_enable=False,
    help="Post-mortem analysis of Linux servers: sysstat sa/sar, kernel and nginx logs, "
         "load-test reports, correlated into a ranked incident narrative.",
)

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_AUDIT, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 3, 130, 143
_debug = False

#: ``--format`` of each command: the formats of the registry that write what it shows.
CaseFormat = enum.Enum("CaseFormat", {name: name for name in render.names("case")}, type=str)
TableFormat = enum.Enum("TableFormat", {name: name for name in render.names("table")}, type=str)
#: ``parse``: a file's rows, or every metric of any inputs
ParseFormat = enum.Enum("ParseFormat", {name: name for name in render.names("rows") + render.names("metrics")},
                        type=str)
#: ``sql``: ``table`` is what the text format was called there before
#: every command took its formats from the registry
SqlFormat = enum.Enum("SqlFormat", {name: name for name in [*render.names("result"), "table"]}, type=str)
Layout = enum.Enum("Layout", {name: name for name in ("long", "wide")}, type=str)
Severity = enum.Enum("Severity", {name: name for name in ("low", "medium", "high", "critical")}, type=str)
#: Inputs naming this many hosts or more are analysed as a fleet.
FLEET_MIN_HOSTS = 3


class _Failed(Exception):
    """Stop a command with an exit code (its line is already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _say(message: str) -> None:
    """One line on stderr, control characters escaped."""
    try:
        sys.stderr.write(f"sarsleuth: {one_line(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _fail(message: str, code: int = EXIT_INPUT):
    _say(message)
    raise _Failed(code)


def _version(value: bool):
    if value:
        sys.stdout.write(f"sarsleuth {__version__}\n")
        raise typer.Exit()


@app.callback()
def main_options(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
):
    global _debug
    _debug = debug


@app.command()
def analyze(
    paths: Optional[List[Path]] = typer.Argument(None, help="Files, directories (walked) or compressed files, "
                                                 "in any order."),
    format: CaseFormat = typer.Option(render.DEFAULT, "--format", "-f", help="Output on stdout."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Also write one SVG plot per incident into this directory."),
    tz: Optional[str] = typer.Option(None, "--tz", help="IANA zone of sources whose timestamps carry none."),
    year: Optional[int] = typer.Option(None, "--year", help="Year of syslog lines that carry none."),
    window: Optional[str] = typer.Option(None, "--window", help="Only findings in START..END (ISO 8601)."),
    min_severity: Optional[Severity] = typer.Option(None, "--min-severity", help="Drop findings below this severity."),
    link_speed: Optional[str] = typer.Option(None, "--link-speed", help="NIC capacity for load-test checks, e.g. 20G."),
    date_order: Optional[str] = typer.Option(None, "--date-order", help="mdy or dmy, for ambiguous sar banners."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with detector thresholds and signatures."),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="Tell this many incidents in full (default 5)."),
    everything: bool = typer.Option(False, "--all", help="Leave nothing out: every incident, timeline row and evidence line."),
    fleet: Optional[bool] = typer.Option(None, "--fleet/--no-fleet", help=f"Analyse each host on its own and correlate "
                                         f"across hosts (default: when the inputs name {FLEET_MIN_HOSTS} hosts or more); "
                                         "--no-fleet tells every input as one case."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address for a fleet "
                                            "(default: a local cluster, one worker per core)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Workers of the local cluster (default: cores)."),
    worker_memory: Optional[str] = typer.Option(None, "--worker-memory", help="Memory limit per local worker, "
                                                "e.g. 2GiB (default: memory shared out)."),
    save: Optional[Path] = typer.Option(None, "--save", help="Also write the case as Parquet into this directory "
                                        "(needs the parquet extra)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr (it shows only on a terminal, "
                               "for runs over 2 s)."),
    redact: bool = typer.Option(False, "--redact", help="Host and domain names, addresses, user and e-mail names "
                                "as stand-ins (host-1, 198.18.0.11, user-1) in every output."),
    redact_map: Optional[Path] = typer.Option(None, "--redact-map", help="With --redact: write the originals "
                                              "of the stand-ins into this private file (JSON, mode 0600)."),
    audit: bool = typer.Option(False, "--audit", help="Measure the story's figures again: exit 3 on a difference."),
    here: bool = typer.Option(False, "--here", help="Analyse this host: what sarsleuth collect gathers, in a "
                              "private temporary folder."),
    since: Optional[str] = typer.Option(None, "--since", help="With --here: how far back (default 24h; or --window)."),
    root: Optional[Path] = typer.Option(None, "--root", help="With --here: the host's files are under this folder."),
):
    """Parse every input, detect signals, and print the ranked incident narrative."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.options import check_options, check_worker_memory
    opts = check_options(tz=tz, year=year, window=window, link_speed=link_speed, date_order=date_order,
                         min_severity=min_severity.value if min_severity else None, config=config)
    check_worker_memory(worker_memory)
    if not here and (since is not None or root is not None):
        raise UsageError(f"{'--since' if since is not None else '--root'} chooses what --here collects: add --here")
    from sarsleuth.inputs.collect import here_or_not     # here: --help and sniff load this module
    with here_or_not(here, since, window, root, say=_say) as (collected, names):
        _analyze([*(paths or []), *collected], names, False if here else fleet, opts, format, html, plots, top,
                 everything, scheduler, workers, worker_memory, save, quiet, redact, redact_map, audit)


def _analyze(paths, names, fleet, opts, format, html, plots, top, everything, scheduler, workers, worker_memory,
             save, quiet, redact, redact_map, audit) -> None:
    if not paths:
        raise UsageError("Missing argument 'PATHS...': files, folders or archives, or --here (this host)")
    if redact_map is not None and not redact:
        raise UsageError("--redact-map FILE goes with --redact")
    refuse_collisions({"--html": html, "--plots": plots, "--save": save, "--redact-map": redact_map})
    for out in (html, plots, redact_map):
        if out is not None:
            check_destination(out, paths, directory=out is plots)
    # --plots draws from one case's tables: with it, a few hosts stay one case
    if fleet or (fleet is None and (scheduler or workers or worker_memory
                                   or (plots is None and _names_a_fleet(paths)))):
        if redact and save is not None:     # the workers save each host before it could be redacted
            raise UsageError("--redact --save: a fleet's hosts are saved unredacted; add --no-fleet")
        if audit:
            raise UsageError("--audit audits one case's story: add --no-fleet")
        _analyze_fleet(paths, format.value, html, plots, save, scheduler, workers, worker_memory, opts, redact,
                       redact_map, progress=not quiet)
        return
    from sarsleuth.case import Case
    from sarsleuth.redaction.check import say_redacted
    case = Case.load(*paths, options=opts, progress=not quiet, redact=redact, audit=audit, names=names)
    # every line on stderr from here on, and every output, of a redacted case names no original
    say = say_redacted(case.redactor, _say)
    if not case.sources:
        # one line: every file named once, with why it was refused
        # (an archive cut before its data says so in a warning, not as a skipped file)
        from sarsleuth.render.run_outputs import skip_line
        reasons = ("; ".join(skip_line(s) for s in case.skipped[:3]) or "; ".join(case.warnings[:3])
                   or "no input files")
        if len(case.skipped) > 3:
            reasons += f"; and {len(case.skipped) - 3:,} more"
        say(f"no usable input: {reasons}")
        raise _Failed(EXIT_INPUT)
    from sarsleuth.render.view import View
    view = View(top=top, everything=everything)
    from sarsleuth.fleet.save import save_case
    from sarsleuth.render.run_outputs import case_outputs
    report = case_outputs(case, format.value, view, paths, say, html=html, plots=plots, save=save,
                          redact_map=redact_map, skipped=case.skipped, save_case=save_case)
    _to_stdout(lambda out: out.write(report))
    if case.audited is not None and case.audited.told(lambda line: say(f"audit: {line}")):
        raise _Failed(EXIT_AUDIT)


def _names_a_fleet(paths) -> bool:
    """Do the inputs name enough hosts to be a fleet?  (A sample of heads.)"""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.fleet.hosts import names_hosts
    from sarsleuth.inputs.named_paths import is_stream
    # a pipe gives its bytes once: it is never sniffed here, only by the case that copies it
    return names_hosts([p for p in paths if not is_stream(p)], FLEET_MIN_HOSTS)


def _analyze_fleet(paths, fmt, html, plots, save, scheduler, workers, worker_memory, options,
                   redact=False, redact_map=None, progress=True) -> None:
    """Every host on its own pipeline (Dask), fleet incidents first."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth import fleet as fleet_api
    from sarsleuth.redaction.check import say_redacted
    if plots is not None:
        raise UsageError("--plots draws one case's tables: a fleet's HTML report (--html) shows every host")
    render.writer(fmt, "fleet")         # a format that shows no fleet is refused before the analysis
    result = fleet_api.analyze(*paths, scheduler=scheduler, workers=workers, memory_limit=worker_memory,
                               save=save, progress=progress, redact=redact, options=options)
    say = say_redacted(result.redactor, _say)
    if not any(h.ok for h in result.hosts):
        reasons = "; ".join(f"{h.host}: {h.error}" for h in result.hosts[:3])
        reasons = reasons or "; ".join(f"{p}: {r}" for p, r in result.unplaced[:3]) or "no input files"
        say(f"no usable input: {reasons}")
        raise _Failed(EXIT_INPUT)
    from sarsleuth.render.run_outputs import fleet_outputs
    report = fleet_outputs(result, fmt, paths, say, html=html, save=save, redact_map=redact_map)
    _to_stdout(lambda out: out.write(report))


def _to_stdout(write) -> None:
    """Run ``write(out)`` on the guarded standard output, flushed inside the
    guard so a full disk is reported here, not at exit."""
    out = stdout()
    write(out)
    out.flush()


@app.command()
def parse(
    paths: List[Path] = typer.Argument(..., help="One input file (openmetrics: any inputs, or a saved case)."),
    kind: Optional[str] = typer.Option(None, "--kind", "-k", help="Override content sniffing."),
    format: ParseFormat = typer.Option("csv", "--format", "-f", help="csv, json (lines), parquet, openmetrics..."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
    tz: Optional[str] = typer.Option(None, "--tz", help="IANA zone of times that carry none."),
    year: Optional[int] = typer.Option(None, "--year", help="Year of syslog lines that carry none."),
    date_order: Optional[str] = typer.Option(None, "--date-order", help="mdy or dmy, for ambiguous sar banners."),
    layout: Layout = typer.Option("long", "--layout", help="csv of an sa file: long (the normalized table) or "
                                  "wide (sadf -d's own layout and column heads)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr (it shows only on a terminal, "
                               "for runs over 2 s)."),
    label: Optional[List[str]] = typer.Option(None, "--label", help="NAME=VALUE on every series (openmetrics)."),
):
    """Parse one file into the normalized table (metrics or events), or the fields of its load-test reports."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.options import check_options
    from sarsleuth.inputs.parsers import kinds
    opts = check_options(tz=tz, year=year, date_order=date_order)
    if layout.value == "wide" and format.value != "csv":
        raise UsageError("--layout wide is a CSV layout (sadf -d's): use it with --format csv")
    from sarsleuth.render import export_metrics
    if export_metrics.asked(format.value, paths, kind=kind, labels=label):     # every metric of the inputs
        if output is not None:
            check_destination(output, paths)
        export_metrics.export(paths, format.value, output, opts, labels=label, say=_say, to_stdout=_to_stdout,
                              terminal=sys.stdout.isatty())
        return
    path = paths[0]
    if kind is not None and kind not in kinds():
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(kinds())}")
    binary = getattr(render.get(format.value), "BINARY", False)
    if output is not None:
        check_destination(output, [path])
    elif binary and sys.stdout.isatty():
        raise UsageError(f"--format {format.value} is binary: give -o FILE or redirect the output")
    from sarsleuth.render.export import export_source
    export_source(path, kind, format.value, output, opts, layout=layout.value, progress=not quiet, say=_say,
                  terminal=sys.stdout.isatty())


@app.command()
def collect(
    since: Optional[str] = typer.Option(None, "--since", help="How far back, e.g. 2h, 90m, 1d (default 24h)."),
    window: Optional[str] = typer.Option(None, "--window", help="Or START..END on the host's clock (15:00..16:30)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Default: sarsleuth-HOST-DATE-TIME.tar.gz."),
    root: Optional[Path] = typer.Option(None, "--root", help="The host's files are under this folder."),
    max_size: Optional[str] = typer.Option(None, "--max-size", help="Cap on everything collected (default 2G)."),
):
    """Gather, read only, what the analysis reads from this host into one tarball that analyze reads as is."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.render.collected import collect_to_tarball
    collect_to_tarball(since, window, output, root, max_size, say=_say)


@app.command()
def sniff(paths: List[Path] = typer.Argument(..., help="Files or directories.")):
    """Print PATH<TAB>KIND for each file (unknown when nothing fits)."""
    code = _sniff(paths)
    if code:
        raise _Failed(code)


def _sniff(paths) -> int:
    # here, not at the top: --help loads this module
    from sarsleuth.inputs.kinds import kinds_of
    listing, nothing_found = kinds_of(paths, say=_say)
    _to_stdout(lambda out: out.write(listing))
    return EXIT_INPUT if nothing_found else EXIT_OK


@app.command()
def changes(paths: List[Path] = typer.Argument(..., help="Files, directories or compressed files, in any order."),
            window: str = typer.Option(..., "--window", help="START..END (ISO 8601): the span to rank."),
            baseline: Optional[str] = typer.Option(None, "--baseline", help="C..D (default: hours before, day before)."),
            format: TableFormat = typer.Option(render.DEFAULT, "--format", "-f"), top: int = typer.Option(20, min=1),
            tz: Optional[str] = typer.Option(None, "--tz", help="IANA zone of sources whose timestamps carry none."),
            year: Optional[int] = typer.Option(None, "--year", help="Year of syslog lines that carry none."),
            hosts: bool = typer.Option(False, "--hosts", help="Rank the hosts: which departed most in the window.")):
    """Rank every sar series and log message kind by how much it changed in a window."""
    from sarsleuth.render.changes_table import changes_of_paths     # here, not at the top: --help loads this module
    table = changes_of_paths(paths, window, baseline, top, tz=tz, year=year, by_host=hosts)
    _to_stdout(lambda out: render.write_table(format.value, table, out))


@app.command()
def detectors(format: TableFormat = typer.Option(render.DEFAULT, "--format", "-f")):
    """List the detectors with a line each."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.detectors import registry
    from sarsleuth.render.table import detectors_table
    table = detectors_table(registry().values())
    _to_stdout(lambda out: render.write_table(format.value, table, out))


@app.command()
def compare(
    paths: List[Path] = typer.Argument(..., help="Load-test reports (ab, wrk, wrk2, httperf)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a comparison plot (PNG, SVG or PDF) here."),
    format: TableFormat = typer.Option(render.DEFAULT, "--format", "-f"),
    redact: bool = typer.Option(False, "--redact", help="Replace host names, addresses and user names in the "
                                "runs' names by stand-ins."),
):
    """Compare several load-test runs: requests/s and latency percentiles."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.analysis.compare import compare_reports
    from sarsleuth.render.comparison import comparison_figure, comparison_table
    if plot is not None:
        check_destination(plot, paths)
    from sarsleuth.redaction import Redactor
    from sarsleuth.redaction.check import refusals_redacted, say_redacted
    from sarsleuth.redaction.outputs import rendered, write_figure
    redactor = Redactor() if redact else None
    df = compare_reports([str(p) for p in paths], redactor)
    say = say_redacted(redactor, _say)
    if not len(df):
        say("no load-test report found in " + ", ".join(map(str, paths)))
        raise _Failed(EXIT_INPUT)
    for w in df.attrs.get("warnings", ()):
        say(f"warning: {w}")
    with refusals_redacted(redactor):
        table = comparison_table(df)
        report = rendered(lambda out: render.write_table(format.value, table, out), redactor)
        if plot is not None:
            write_figure(comparison_figure(df), plot, paths, redactor)
            say(f"wrote {plot}")
    _to_stdout(lambda out: out.write(report))


@app.command()
def sql(
    case_dir: Path = typer.Argument(..., help="A case written by analyze --save."),
    query: str = typer.Argument(..., help="SQL over the tables metrics, events, findings, incidents, "
                                "fleet_incidents, sources, hosts, summaries."),
    format: SqlFormat = typer.Option(render.DEFAULT, "--format", "-f",
                                     help="text (a table), csv or json (records)."),
):
    """Run SQL (DuckDB) over a saved case."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.saved_cases import run_sql
    write = render.writer("text" if format.value == "table" else format.value, "result")
    frame = run_sql(case_dir, query)
    _to_stdout(lambda out: write(frame, out, terminal=sys.stdout.isatty()))


# ------------------------------------------------------------------ running

def _plain_sniff(argv: list) -> list | None:
    """The paths of ``sniff PATH...`` when nothing else is asked (no option
    but ``--``), else None: that case needs no typer app at all."""
    if not argv or argv[0] != "sniff":
        return None
    rest = argv[1:]
    before, after = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    if any(a.startswith("-") and a != "-" for a in before):
        return None
    return (before + after) or None


def run(argv=None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``) and
    return the exit code; nothing escapes but the code."""
    global _debug
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    _debug = False
    restore = terminate_as_interrupt()
    try:
        sniff_paths = _plain_sniff(argv)
        if sniff_paths is not None:
            return _sniff(sniff_paths)
        result = app(args=argv, prog_name="sarsleuth", standalone_mode=False)
        if result == EXIT_INTERRUPTED:        # typer turns Ctrl-C into this code
            _say("interrupted")
        return result if isinstance(result, int) else EXIT_OK
    except _Failed as exc:
        return exc.code
    except StdoutClosed:
        # the reader went away (`| head`): stop, quietly, as Unix tools do
        silence_stdout()
        return EXIT_OK
    except OutputFailed as exc:
        silence_stdout()      # what is still buffered would fail again at exit
        _say(str(exc))
        return EXIT_INPUT
    except SarsleuthError as exc:
        if _debug:
            raise
        _say(str(exc))
        return EXIT_INPUT
    except Terminated:
        _say("terminated")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - click's usage errors, then bugs
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "sarsleuth"
            _say(f"{exc.format_message()} (see {where} --help)")
            return int(exc.exit_code)
        if _debug:
            raise
        _say(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return EXIT_INTERNAL
    finally:
        restore()


def main(argv=None):
    # one OpenBLAS thread (no linear algebra here: more would only spin), unless the user chose
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # a shell may have closed standard output or error (>&-, 2>&-)
    settle_standard_streams()
    code = run(argv)
    # frozen, the run's objects are not walked by the collections at exit (50 ms of a small parse)
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    main()
