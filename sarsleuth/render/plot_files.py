"""``analyze --plots DIR``: one SVG per incident that has metrics to draw
(:func:`sarsleuth.render.plots.incident_figure`), each written whole or not at all."""
from __future__ import annotations

from pathlib import Path

from sarsleuth.render.plots import figure_svg, incident_figure
from sarsleuth.render.files import cannot_write, write_text_file


def write_plots(case, directory, inputs=()) -> int:
    """The incidents' figures into ``directory`` (created when missing);
    returns how many were written."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(directory, exc) from None
    n = 0
    for inc in case.incidents:
        fig = incident_figure(case, inc)
        if fig is None:
            continue
        # a name sarsleuth chose: a symlink planted there is replaced, not followed
        write_text_file(directory / f"incident-{inc.rank:02d}-{inc.category}.svg", figure_svg(fig), inputs,
                        follow=False)
        n += 1
    return n
