"""Every output of one ``analyze`` run, made in the order that keeps a
redacted run safe: the report on standard output is rendered first (a
redacted one that would name an original is refused before any other
output is written), then the lines on stderr and the files asked for.
``say`` writes one line on stderr (already redacted by the caller)."""
from __future__ import annotations

from collections import Counter

from sarsleuth import render
from sarsleuth.redaction.check import refusals_redacted
from sarsleuth.redaction.outputs import rendered, write_redact_map


def case_outputs(case, fmt: str, view, paths, say, *, html=None, plots=None, save=None, redact_map=None,
                 skipped=(), save_case=None) -> str:
    """The report of ``case`` in ``fmt`` (returned, for standard output),
    after the warnings and every file asked for are written (``save`` by
    ``save_case(case, save, paths)``: the fleet's, which stands on render)."""
    with refusals_redacted(case.redactor):
        report = rendered(lambda out: render.write_case(fmt, case, out, view=view), case.redactor)
        for line in skipped_lines((skip_line(s), s.reason) for s in skipped):
            say(f"warning: skipped {line}")
        for w in case.warnings:
            say(f"warning: {w}")
        if redact_map is not None:
            say(write_redact_map(case.redactor, redact_map, paths))
        if html is not None:
            from sarsleuth.render.formats.html import write_html
            write_html(case, html, inputs=paths, view=view)
            say(f"wrote {html}")
        if plots is not None:
            from sarsleuth.render.plot_files import write_plots
            say(f"wrote {write_plots(case, plots, paths)} plot(s) into {plots}")
        if save is not None:
            save_case(case, save, paths)
            say(f"wrote the case into {save}")
    return report


#: Skipped files named one by one on stderr; past these, the rest are
#: counted by reason (a tree of thousands of files that are no logs must
#: not bury the report's warnings; the JSON report lists every one).
SKIPPED_NAMED = 20


def skip_line(skipped) -> str:
    """``PATH: reason`` for a skipped file, naming the path once (parser
    errors already start with it)."""
    reason = skipped.reason
    return reason if reason.startswith(skipped.path) else f"{skipped.path}: {reason}"


def skipped_lines(skipped) -> list:
    """``PATH: reason`` of each skipped file (``skipped``: ``(that line,
    the reason alone)`` pairs), or the first ones and then a line counting
    the others by reason."""
    skipped = list(skipped)
    if len(skipped) <= SKIPPED_NAMED:
        return [line for line, _reason in skipped]
    shown = SKIPPED_NAMED // 2
    ranked = Counter(reason for _line, reason in skipped[shown:]).most_common()
    said = "; ".join(f"{reason} ({n:,})" for reason, n in ranked[:3])
    if len(ranked) > 3:
        said += f"; {sum(n for _, n in ranked[3:]):,} for other reasons"
    return ([line for line, _reason in skipped[:shown]]
            + [f"{len(skipped) - shown:,} more file(s): {said} (the JSON report lists each)"])


def fleet_outputs(result, fmt: str, paths, say, *, html=None, save=None, redact_map=None) -> str:
    """The same for a fleet's ``result`` (its hosts were saved by the workers)."""
    with refusals_redacted(result.redactor):
        report = rendered(lambda out: render.write_fleet(fmt, result, out), result.redactor)
        if redact_map is not None:
            say(write_redact_map(result.redactor, redact_map, paths))
        for line in skipped_lines((f"{path}: {reason}", reason) for path, reason in result.unplaced):
            say(f"warning: skipped {line}")
        for w in result.warnings:
            say(f"warning: {w}")
        if html is not None:
            from sarsleuth.render.fleet_html import write_fleet_html
            write_fleet_html(result, html, inputs=paths)
            say(f"wrote {html}")
        if save is not None:
            say(f"wrote the case into {save}")
    return report
