"""``analyze --plots DIR``: one SVG per incident that has metrics to draw
(:func:`sarsleuth.render.plots.incident_figure`), each written whole or not at all;
of a redacted case, none is written unless every one names nothing."""
from __future__ import annotations

from pathlib import Path

from sarsleuth.render.plots import figure_svg, incident_figure
from sarsleuth.redaction.check import refuse_figure_leak, refuse_leak
from sarsleuth.render.files import cannot_write, write_text_file


def write_plots(case, directory, inputs=()) -> int:
    """The incidents' figures into ``directory`` (created when missing);
    returns how many were written."""
    directory = Path(directory)
    redactor = getattr(case, "redactor", None)
    drawn = []
    for inc in case.incidents:
        fig = incident_figure(case, inc)
        if fig is None:
            continue
        path = directory / f"incident-{inc.rank:02d}-{inc.category}.svg"
        refuse_figure_leak(redactor, fig, path)
        svg = figure_svg(fig)
        refuse_leak(redactor, svg, path)
        drawn.append((path, svg))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(directory, exc) from None
    for path, svg in drawn:
        # a name sarsleuth chose: a symlink planted there is replaced, not followed
        write_text_file(path, svg, inputs, follow=False)
    return len(drawn)
