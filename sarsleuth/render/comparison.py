"""The load-test runs compared (:func:`sarsleuth.analysis.compare.compare_reports`)
as a table for every output format, and as a plot."""
from __future__ import annotations

from sarsleuth.render.files import atomic_output
from sarsleuth.render.formats.json import plain
from sarsleuth.render.plots import SETTINGS
from sarsleuth.render.table import Column, Table, number


def comparison_table(df):
    """The runs as a :class:`~sarsleuth.render.table.Table` for every output
    format: JSON gets every column of :data:`COMPARISON_COLUMNS` as is;
    people read latencies in ms and transfer in MB/s."""
    records = [plain(r) for r in df.to_dict("records")]

    def ms(name):
        return lambda r: number(r.get(name), 1000)

    def errors(r):
        if r.get("aborted"):
            return "aborted"
        return number(sum(float(r.get(k) or 0) for k in ("failures", "non_2xx")))

    columns = [
        Column("run", lambda r: f"{r.get('label') or ''} ({r.get('tool') or ''})"),
        Column("c", lambda r: number(r.get("concurrency")), numeric=True),
        Column("req/s", lambda r: number(r.get("requests_per_sec")), numeric=True),
        Column("p50", ms("latency_p50_s"), numeric=True), Column("p90", ms("latency_p90_s"), numeric=True),
        Column("p99", ms("latency_p99_s"), numeric=True), Column("max", ms("latency_max_s"), numeric=True),
        Column("errors", errors, numeric=True),
        Column("MB/s", lambda r: number(r.get("transfer_rate_Bps"), 1 / 2**20), numeric=True),
    ]
    return Table(title=f"{len(records)} load-test run(s)", columns=columns, records=records,
                 note="latencies in ms; errors: failed requests plus non-2xx responses; MB/s: 2^20 bytes/s")


def comparison_figure(df):
    """The comparison drawn on a standalone figure (no backend touched:
    for a file, ``compare --plot``)."""
    # matplotlib (a third of a second) loads only when a plot is drawn, never for analyze alone
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8, 4.5))
    plot_comparison(df, fig.subplots())
    return fig


def plot_comparison(df, ax=None):
    """Requests/s (bars, left axis) and p50/p90/p99/max latency in ms (lines,
    right axis) for each run, against concurrency when every run has a
    distinct one, else against the run's file and line.  Returns the Axes
    (of a new pyplot figure on the session's own backend when none is
    given: inline in a notebook)."""
    # loaded only when a plot is drawn
    import matplotlib
    if ax is None:
        # the API's figure: pyplot's, on the session's backend, set up before
        # the drawing's settings (which would undo its interactive mode on leaving)
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(8, 4.5))
    # file names (the runs' labels) never read as TeX
    with matplotlib.rc_context(SETTINGS):
        return _draw(df, ax)


def _draw(df, ax):
    if df is None or not len(df):
        ax.set_title("no load-test runs to compare")
        ax.set_xlabel("run")
        ax.set_ylabel("requests/s")
        return ax
    df = df.reset_index(drop=True)
    by_concurrency = df["concurrency"].notna().all() and df["concurrency"].is_unique
    if by_concurrency:
        df = df.sort_values("concurrency").reset_index(drop=True)
        labels = [str(int(c)) for c in df["concurrency"]]
        xlabel = "concurrency (connections)"
    else:
        labels = list(df["label"])
        xlabel = "run (file:line)"
    positions = list(range(len(df)))
    ax.bar(positions, df["requests_per_sec"].fillna(0.0), color="#4c78a8", alpha=0.8, label="requests/s")
    ax.set_xticks(positions)
    # file names are text: "$\mathbf{X}$" is drawn as written, never as TeX
    ax.set_xticklabels(labels, rotation=30 if not by_concurrency else 0, ha="right" if not by_concurrency else "center",
                       parse_math=False, usetex=False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("requests/s")
    latency_ax = ax.twinx()
    for column, style in (("latency_p50_s", "o-"), ("latency_p90_s", "s-"), ("latency_p99_s", "^-"),
                          ("latency_max_s", "x--")):
        values = df[column] * 1000.0
        if values.notna().any():
            latency_ax.plot(positions, values, style, label=column.replace("latency_", "").replace("_s", ""))
    latency_ax.set_ylabel("latency (ms)")
    handles, names = ax.get_legend_handles_labels()
    more_handles, more_names = latency_ax.get_legend_handles_labels()
    ax.legend(handles + more_handles, names + more_names, loc="upper left", fontsize="small")
    ax.set_title("load-test runs compared")
    return ax


def write_plot(df, path, inputs=()) -> None:
    """:func:`plot_comparison` into ``path`` (PNG, SVG or PDF by its suffix;
    PNG otherwise), written whole or not at all, never over an input."""
    ax = plot_comparison(df)
    kind = path.suffix.lstrip(".").lower() or "png"
    with atomic_output(path, inputs, binary=True) as fh:
        ax.figure.savefig(fh, format=kind if kind in ("png", "svg", "pdf") else "png", bbox_inches="tight")
