"""The ``sarsleuth`` command line.

Heavy libraries (pandas, matplotlib) are imported inside the commands, so
``sarsleuth --help`` stays fast.  Errors the user can fix print one line on
stderr and exit 2; ``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from sarsleuth import __version__
from sarsleuth.errors import InputError, SarsleuthError, UsageError

app = typer.Typer(
    add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
    help="Post-mortem analysis of Linux servers: sysstat sa/sar, kernel and nginx logs, "
         "load-test reports, correlated into a ranked incident narrative.",
)

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT = 0, 1, 2
_debug = False


class OutFormat(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class ParseFormat(str, enum.Enum):
    csv = "csv"
    json = "json"
    parquet = "parquet"


class Severity(str, enum.Enum):
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


def _fail(message: str, code: int = EXIT_INPUT):
    typer.echo(f"sarsleuth: {_one_line(message)}", err=True)
    raise typer.Exit(code)


def _guard(fn):
    """Run a command body, turning our errors into one line + exit code."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except (InputError, UsageError) as exc:
            if _debug:
                raise
            _fail(str(exc))
        except SarsleuthError as exc:
            if _debug:
                raise
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            raise typer.Exit(EXIT_OK)
        except Exception as exc:  # a bug: say so in one line, keep the traceback for --debug
            if _debug:
                raise
            _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", EXIT_INTERNAL)
    return wrapper


def _version(value: bool):
    if value:
        typer.echo(f"sarsleuth {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
):
    global _debug
    _debug = debug


@app.command()
@_guard
def analyze(
    paths: List[Path] = typer.Argument(..., help="Files, directories (walked) or compressed files, in any order."),
    format: OutFormat = typer.Option(OutFormat.text, "--format", "-f", help="Output on stdout."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write a self-contained HTML report here."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Also write one SVG plot per incident into this directory."),
    tz: Optional[str] = typer.Option(None, "--tz", help="IANA zone of sources whose timestamps carry none."),
    year: Optional[int] = typer.Option(None, "--year", help="Year of syslog lines that carry none."),
    window: Optional[str] = typer.Option(None, "--window", help="Only findings in START..END (ISO 8601)."),
    min_severity: Optional[Severity] = typer.Option(None, "--min-severity", help="Drop findings below this severity."),
    link_speed: Optional[str] = typer.Option(None, "--link-speed", help="NIC capacity for load-test checks, e.g. 20G."),
    date_order: Optional[str] = typer.Option(None, "--date-order", help="mdy or dmy, for ambiguous sar banners."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with detector thresholds and signatures."),
):
    """Parse every input, detect signals, and print the ranked incident narrative."""
    if year is not None and not (1970 <= year <= 2100):
        raise UsageError(f"--year {year}: expected a year between 1970 and 2100")
    if date_order is not None and date_order not in ("mdy", "dmy"):
        raise UsageError(f"--date-order {date_order!r}: expected mdy or dmy")
    from sarsleuth.case import Case
    case = Case.load(*paths, tz=tz, year=year, window=window, link_speed=link_speed, config=config,
                     progress=format == OutFormat.text, date_order=date_order,
                     min_severity=min_severity.value if min_severity else None)
    if not case.sources:
        # one line: every file named once, with why it was refused
        reasons = "; ".join(_skip_reason(s) for s in case.skipped[:3]) or "no input files"
        if len(case.skipped) > 3:
            reasons += f"; and {len(case.skipped) - 3} more"
        _fail(f"no usable input: {_one_line(reasons)}")
    for skipped in case.skipped:
        typer.echo(f"sarsleuth: warning: skipped {_skip_reason(skipped)}", err=True)
    for w in case.warnings:
        typer.echo(f"sarsleuth: warning: {_one_line(w)}", err=True)
    if html is not None:
        _check_output_path(html, paths)
        with _writing(html):
            case.report(html)
        typer.echo(f"sarsleuth: wrote {html}", err=True)
    if plots is not None:
        _write_plots(case, plots, paths)
    if format == OutFormat.json:
        sys.stdout.write(json.dumps(case.to_json(), indent=2, ensure_ascii=False) + "\n")
    elif format == OutFormat.markdown:
        from sarsleuth.render.markdown import render_markdown
        sys.stdout.write(render_markdown(case) + "\n")
    else:
        from sarsleuth.render.text import render_text
        render_text(case)


def _skip_reason(skipped) -> str:
    """``PATH: reason`` for a skipped file, naming the path once (parser
    errors already start with it)."""
    reason = skipped.reason
    return _one_line(reason if reason.startswith(skipped.path) else f"{skipped.path}: {reason}")


def _one_line(text: str) -> str:
    """Control characters from file names or contents shown, not obeyed."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _check_output_path(out: Path, inputs) -> None:
    """Never overwrite an input: not the same path, nor a symlink or hard
    link to it, nor a file inside an input directory."""
    import os
    from sarsleuth.textio import walk_inputs
    out = Path(out)
    if not out.exists():
        return
    for p in inputs:
        p = Path(p)
        try:
            candidates = walk_inputs([p]) if p.is_dir() else [p]
            for f in candidates:
                if f.exists() and os.path.samefile(out, f):
                    raise UsageError(f"{out}: refusing to overwrite an input file ({f})")
        except OSError:
            continue


class _writing:
    """Turn a failure to write an output (missing directory, permissions,
    full disk) into one line naming the file."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise UsageError(f"{self.path}: cannot write: {exc.strerror or exc}") from None
        return False


def _write_plots(case, directory: Path, inputs) -> None:
    from sarsleuth.plots import figure_svg, incident_figure
    with _writing(directory):
        directory.mkdir(parents=True, exist_ok=True)
    n = 0
    for inc in case.incidents:
        fig = incident_figure(case, inc)
        if fig is None:
            continue
        out = directory / f"incident-{inc.rank:02d}-{inc.category}.svg"
        _check_output_path(out, inputs)
        with _writing(out):
            out.write_text(figure_svg(fig), encoding="utf-8")
        n += 1
    typer.echo(f"sarsleuth: wrote {n} plot(s) into {directory}", err=True)


@app.command()
@_guard
def parse(
    path: Path = typer.Argument(..., help="One input file."),
    kind: Optional[str] = typer.Option(None, "--kind", "-k", help="Override content sniffing."),
    format: ParseFormat = typer.Option(ParseFormat.csv, "--format", "-f"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
    tz: Optional[str] = typer.Option(None, "--tz"),
    year: Optional[int] = typer.Option(None, "--year"),
):
    """Parse one file into the normalized table (metrics or events) or, for
    load-test reports, the JSON fields of each report."""
    from sarsleuth.options import check_tz as _check_tz
    from sarsleuth.parsers import ParseOptions, kinds
    from sarsleuth.parsers import parse as parse_file
    if kind is not None and kind not in kinds():
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(kinds())}")
    if tz:
        _check_tz(tz)
    src = parse_file(path, kind, ParseOptions(year=year))
    from sarsleuth.timebase import settle
    settle([src], tz=tz)
    for w in src.warnings:
        typer.echo(f"sarsleuth: warning: {w}", err=True)
    from sarsleuth.export import source_table, write_table
    if format == ParseFormat.json and src.reports:
        from sarsleuth.export import reports_json
        text = json.dumps(reports_json(src), indent=2, ensure_ascii=False)
        _emit(text + "\n", output, path)
        return
    table = source_table(src)
    if output is not None:
        _check_output_path(output, [path])
    with _writing(output):
        write_table(table, format.value, output)


def _emit(text: str, output, source_path):
    if output is None:
        sys.stdout.write(text)
    else:
        _check_output_path(output, [source_path])
        with _writing(output):
            Path(output).write_text(text, encoding="utf-8")


@app.command()
@_guard
def sniff(paths: List[Path] = typer.Argument(..., help="Files or directories.")):
    """Print PATH<TAB>KIND for each file (``unknown`` when nothing fits)."""
    from sarsleuth.parsers import sniff as sniff_one
    from sarsleuth.textio import walk_inputs
    missing = [p for p in paths if not p.exists()]
    for p in missing:
        typer.echo(f"sarsleuth: {p}: no such file or directory", err=True)
    files = walk_inputs([p for p in paths if p.exists()])
    for f in files:
        kind, _reason = sniff_one(f)
        typer.echo(f"{f}\t{kind or 'unknown'}")
    if missing and not files:
        raise typer.Exit(EXIT_INPUT)


@app.command()
@_guard
def detectors(format: OutFormat = typer.Option(OutFormat.text, "--format", "-f")):
    """List the detectors with a line each."""
    from sarsleuth.detectors import registry
    rows = [{"id": d.id, "category": d.category, "inputs": list(d.inputs), "summary": d.summary,
             "parameters": dict(d.defaults)} for d in registry().values()]
    if format == OutFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if format == OutFormat.markdown:
        lines = ["| detector | category | what it looks for |", "|---|---|---|"]
        lines += [f"| `{r['id']}` | {r['category']} | {r['summary']} |" for r in rows]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{len(rows)} detectors", title_justify="left")
    t.add_column("detector", style="bold")
    t.add_column("category")
    t.add_column("what it looks for")
    for r in rows:
        t.add_row(r["id"], r["category"], r["summary"])
    Console().print(t)


@app.command()
@_guard
def compare(
    paths: List[Path] = typer.Argument(..., help="Load-test reports (ab, wrk, wrk2, httperf)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a comparison plot (PNG or SVG) here."),
    format: OutFormat = typer.Option(OutFormat.text, "--format", "-f"),
):
    """Compare several load-test runs: requests/s and latency percentiles."""
    from sarsleuth.compare import compare_reports, plot_comparison
    df = compare_reports([str(p) for p in paths])
    if not len(df):
        _fail("no load-test report found in " + ", ".join(map(str, paths)))
    if plot is not None:
        ax = plot_comparison(df)
        _check_output_path(plot, paths)
        with _writing(plot):
            ax.figure.savefig(plot, bbox_inches="tight")
        typer.echo(f"sarsleuth: wrote {plot}", err=True)
    if format == OutFormat.json:
        sys.stdout.write(df.to_json(orient="records", indent=2) + "\n")
        return
    if format == OutFormat.markdown:
        sys.stdout.write(df.to_markdown(index=False) + "\n" if hasattr(df, "to_markdown") else df.to_string() + "\n")
        return
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{len(df)} load-test run(s); latencies in ms", title_justify="left")
    t.add_column("run", overflow="fold")
    for name in ("c", "req/s", "p50", "p90", "p99", "max", "errors", "MB/s"):
        t.add_column(name, justify="right", no_wrap=True)
    for r in df.to_dict("records"):
        ms = [_cell(r.get(k), 1000) for k in ("latency_p50_s", "latency_p90_s", "latency_p99_s", "latency_max_s")]
        errors = sum(float(r.get(k) or 0) for k in ("failures", "non_2xx"))
        t.add_row(f"{r.get('label', '')} ({r.get('tool', '')})", _cell(r.get("concurrency")),
                  _cell(r.get("requests_per_sec")), *ms, "aborted" if r.get("aborted") else _cell(errors),
                  _cell(r.get("transfer_rate_Bps"), 1 / 2**20))
    Console().print(t)


def _cell(v, scale: float = 1.0) -> str:
    """A number for a table cell, scaled (s -> ms, B/s -> MB/s); blank if absent."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = v * scale
        return f"{v:,.0f}" if abs(v) >= 1000 or float(v).is_integer() else f"{v:,.2f}"
    return str(v)


def main():
    app(prog_name="sarsleuth")


if __name__ == "__main__":
    main()
