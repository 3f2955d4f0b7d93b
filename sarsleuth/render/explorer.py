"""Every metric of the case, browsable in the HTML report as kSar shows
sar data: host, then sar section, then device, one small chart per metric
(its time axis labelled), folded so that a page of a thousand charts opens
at once.  Self-contained: inline SVG, no script, no network."""
from __future__ import annotations

import re

from sarsleuth.metric_store.disk_names import labelled, names_of_case
from sarsleuth.render.charts import chart_svg

#: Charts drawn unless --all (a 1-second XALL day holds thousands of series).
MAX_CHARTS = 1500


def explorer(case, everything: bool = False) -> tuple[list, int]:
    """([{host, charts, sections: [{name, charts, devices: [{label, charts: [{metric, svg}]}]}]}],
    number of series not drawn)."""
    store = case.store
    if not store:
        return [], 0
    names = names_of_case(case) if any(k[1] == "disk" for k in store.runs) else {}
    groups: dict = {}
    for key in store.runs:
        groups.setdefault((key[0] or "", key[1], key[2]), []).append(key)
    hosts: dict = {}
    drawn = left = 0
    for host, section, device in sorted(groups, key=lambda k: (k[0], k[1], _device_order(k[2]))):
        charts = []
        for key in sorted(groups[(host, section, device)], key=lambda k: k[3]):
            if not everything and drawn >= MAX_CHARTS:
                left += 1
                continue
            series = store.series(key)
            svg = chart_svg(series, label=f"{section} {device} {key[3]}") if series is not None else ""
            if svg:
                charts.append({"metric": key[3], "svg": svg})
                drawn += 1
        if not charts:
            continue
        label = labelled(device, names.get(host or None)) if section == "disk" else device
        hosts.setdefault(host, {}).setdefault(section, []).append({"label": label, "charts": charts})
    out = []
    for host, sections in hosts.items():
        secs = [{"name": name, "devices": devices, "charts": sum(len(d["charts"]) for d in devices)}
                for name, devices in sections.items()]
        out.append({"host": host, "sections": secs, "charts": sum(s["charts"] for s in secs)})
    return out, left


def _device_order(device: str):
    """all first, then CPUs and numbered devices in number order."""
    if device in ("all", ""):
        return (0, 0, "")
    m = re.fullmatch(r"(\D*)(\d+)", str(device))
    return (1, int(m.group(2)), m.group(1)) if m else (2, 0, str(device))
