"""Detector registry.

Every module in this package that defines :class:`Detector` subclasses with an
``id`` is registered automatically; ``run_all`` runs them all on a context.
``base`` (what a detector is), ``context`` (what it reads), ``evidence``
(how it cites) and the ``_``-prefixed helpers hold none; ``counters`` makes
the detectors that ``knowledge/kb.toml`` declares as data (lines of one
message counted per burst).
"""
from __future__ import annotations

import importlib
import pkgutil

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.counters import declared

#: Modules of this package that define no detector.
FRAMEWORK = frozenset({"base", "bounds", "context", "counters", "evidence", "figures"})

_registry: dict[str, type[Detector]] | None = None


def registry() -> dict[str, type[Detector]]:
    global _registry
    if _registry is None:
        found: dict[str, type[Detector]] = {}
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("_") or info.name in FRAMEWORK:
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            for obj in vars(module).values():
                if (isinstance(obj, type) and issubclass(obj, Detector) and obj is not Detector
                        and obj.id and obj.__module__ == module.__name__):
                    found[obj.id] = obj
        data = declared()
        twice = sorted(set(found) & set(data))
        if twice:
            raise ValueError(f"detector(s) both in code and in kb.toml: {', '.join(twice)}")
        found.update(data)
        _registry = dict(sorted(found.items()))
    return _registry


def run_all(ctx: Context, only: list | None = None) -> tuple[list, list]:
    """Run every detector whose inputs the case has; returns (findings,
    warnings).  A detector that fails on odd data is reported as a warning,
    never takes the analysis down."""
    findings, warnings = [], []
    for det_id, cls in registry().items():
        if only and det_id not in only:
            continue
        if cls.inputs and not any(ctx.available(name) for name in cls.inputs):
            continue
        det = cls(ctx.params.get(det_id))
        try:
            findings.extend(det.run(ctx))
        except Exception as exc:  # keep the other detectors' results
            warnings.append(f"detector {det_id} failed on this input: {type(exc).__name__}: {exc}")
    return findings, warnings
