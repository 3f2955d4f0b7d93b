"""Outputs of a command made whole before a byte is written, so that a
redacted run's last look (:mod:`.check`) sees each of them entire."""
from __future__ import annotations

import io

from sarsleuth.redaction import write_map
from sarsleuth.redaction.check import refuse_figure_leak, refuse_leak
from sarsleuth.render.files import atomic_output


def rendered(write, redactor) -> str:
    """What ``write(out)`` writes (a report for standard output), as text,
    looked over when redacted."""
    buf = io.StringIO()
    write(buf)
    text = buf.getvalue()
    refuse_leak(redactor, text, "standard output")
    return text


def write_figure(fig, path, inputs, redactor) -> None:
    """A matplotlib figure as PNG, SVG or PDF (by ``path``'s suffix, PNG
    otherwise), whole or not at all; of a redacted run, its texts and an
    SVG's bytes looked over first."""
    kind = path.suffix.lstrip(".").lower() or "png"
    kind = kind if kind in ("png", "svg", "pdf") else "png"
    refuse_figure_leak(redactor, fig, path)
    buf = io.BytesIO()
    fig.savefig(buf, format=kind, bbox_inches="tight")
    if kind == "svg":
        refuse_leak(redactor, buf.getvalue().decode("utf-8", "replace"), path)
    with atomic_output(path, inputs, binary=True) as fh:
        fh.write(buf.getvalue())


def write_redact_map(redactor, path, inputs) -> str:
    """The private map of originals (``--redact-map``, never looked over:
    holding them is its job); returns the line that says where it is."""
    write_map(redactor, path, inputs)
    return f"wrote the stand-ins' originals into {path} (keep it private)"
