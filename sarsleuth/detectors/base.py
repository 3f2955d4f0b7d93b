"""What a detector is.

A detector is a small class with an ``id`` (the contract's detector id), the
inputs it needs, its thresholds as named parameters (overridable from a config
file), and a ``run(ctx)`` method returning a list of findings.  It reads the
case through :class:`~sarsleuth.detectors.context.Context` and cites what it
saw through :mod:`sarsleuth.detectors.evidence`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Finding

if TYPE_CHECKING:
    from sarsleuth.detectors.context import Context


class Detector(ABC):
    """Base class of every detector."""

    id: ClassVar[str] = ""
    #: One line for ``sarsleuth detectors``.
    summary: ClassVar[str] = ""
    #: What it reads (see :meth:`Context.available`): "metrics",
    #: "metrics:<section>", "events", "events:<kind>", "reports", "ps".  A
    #: detector none of whose inputs the case has is not run.
    inputs: ClassVar[tuple] = ()
    #: Incident category this detector's findings point to.
    category: ClassVar[str] = "other"
    #: Default thresholds; users override them per detector in a config file.
    defaults: ClassVar[dict] = {}

    def __init__(self, params: dict | None = None):
        self.params = dict(self.defaults)
        if params:
            unknown = set(params) - set(self.defaults)
            if unknown:
                raise ValueError(f"{self.id}: unknown parameter(s) {', '.join(sorted(unknown))}")
            self.params.update(params)

    @abstractmethod
    def run(self, ctx: Context) -> list[Finding]:
        """Look at the context and return findings (possibly none)."""

    def finding(self, *, title, severity, start, end, host=None, metrics=None, evidence=None,
                explanation="", aligned=True, sources=None, refs=None, figures=None) -> Finding:
        """A Finding with this detector's id, category and knowledge-base
        recommendations filled in.  ``figures``: the numbers it states, by
        their definitions (:class:`~sarsleuth.detectors.figures.Figures`),
        which become its metrics beside ``metrics``."""
        kb = kb_entry(self.id)
        figures = list(getattr(figures, "items", figures or []))
        metrics = {**(metrics or {}), **{f.name: float(f.value) for f in figures if f.value is not None}}
        return Finding(
            detector=self.id, title=title, severity=severity, start=start, end=end, host=host, figures=figures,
            metrics=metrics, evidence=evidence or [], explanation=explanation or kb.get("explanation", ""),
            category=self.category, recommendations=[r["text"] for r in kb.get("recommendation", [])],
            sources=sorted(set(sources or [e.path for e in (evidence or [])])), aligned=aligned,
            refs=refs or {},
        )
