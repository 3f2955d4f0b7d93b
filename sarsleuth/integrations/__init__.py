"""Files for the tools operators already run, shipped with the package:

``lnav/sarsleuth_events.json``
    an lnav log format for ``analyze --format jsonl`` (findings and
    incidents beside the logs they quote);
``grafana/sarsleuth-sar.json``
    a Grafana dashboard over the metrics of ``parse --format openmetrics``
    once in Prometheus (CPU, memory, swap, load, I/O per device, network
    per interface, sockets).

``python -m sarsleuth.integrations`` prints where they are installed.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

#: name -> the shipped file, relative to this package
FILES = {
    "lnav": "lnav/sarsleuth_events.json",
    "grafana": "grafana/sarsleuth-sar.json",
}


def path(name: str) -> Path:
    """Where the shipped file ``name`` (a key of :data:`FILES`) is."""
    return Path(str(resources.files(__name__).joinpath(FILES[name])))
