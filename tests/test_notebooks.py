"""The notebooks execute top to bottom (their cells assert real values),
and plotting from the API leaves a notebook's own plotting as it was:
``case.plot()`` shows its figure inline and a pandas plot after it still
does."""
from __future__ import annotations

import base64
from pathlib import Path

import pytest

from .conftest import SAMPLES

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def _execute(nb, folder):
    nbclient = pytest.importorskip("nbclient", reason="nbclient is part of the test extra")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    client.execute()
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is part of the test extra")
    nb = _execute(nbformat.read(path, as_version=4), path.parent)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []


def test_there_are_at_least_two_notebooks():
    assert len(NOTEBOOKS) >= 2


def _pngs(cell) -> list[bytes]:
    return [base64.b64decode(o["data"]["image/png"]) for o in cell.outputs
            if o.get("output_type") == "display_data" and "image/png" in o.get("data", {})]


def test_case_plot_shows_inline_and_a_later_pandas_plot_still_does(tmp_path):
    """A notebook's plot cell shows the figure, not ``<Figure size ...>``,
    and every later ``df.plot()`` still draws (sarsleuth used to switch
    matplotlib to Agg for the whole session)."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is part of the test extra")
    from nbformat.v4 import new_code_cell, new_notebook
    nb = new_notebook(cells=[
        new_code_cell("import matplotlib\nbefore = matplotlib.get_backend()\nbefore"),
        new_code_cell("import sarsleuth\n"
                      f"case = sarsleuth.load({str(SAMPLES / 'nginx-proxy-oom')!r}, tz='Asia/Shanghai')\n"
                      "ax = case.plot('swap', '%swpused')"),
        new_code_cell("import pandas as pd\npd.Series([1.0, 3.0, 2.0]).plot();"),
        new_code_cell("matplotlib.get_backend() == before, ax.get_title()"),
    ])
    nb = _execute(nb, tmp_path)
    backend, plot, later, after = nb.cells
    assert "inline" in backend.outputs[0]["data"]["text/plain"]
    for cell in (plot, later):
        assert [o for o in cell.outputs if o.get("output_type") == "error"] == []
        (png,) = _pngs(cell)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
        # the figure as an image, never as its text alone
        assert not any("<Figure size" in o.get("data", {}).get("text/plain", "") and "image/png" not in o["data"]
                       for o in cell.outputs)
    assert after.outputs[0]["data"]["text/plain"] == "(True, 'swap: %swpused')"
