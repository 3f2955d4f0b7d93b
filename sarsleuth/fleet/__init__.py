"""Many hosts at once: each host analysed on its own (the same pipeline as a
single case, in parallel on Dask), then the findings correlated across the
fleet.

    import sarsleuth.fleet
    fleet = sarsleuth.fleet.analyze("fleet/", scheduler=None, save="case/")
    fleet.incidents[0].title      # 'Disk I/O saturation (hung-task + iowait-spike) on 10 of 200 hosts, ...'
    fleet.incidents[0].hosts      # who saw it; .hosts_without: who did not

Hosts come from the facts the files carry (:mod:`sarsleuth.fleet.hosts`),
never from folder names.
"""
from __future__ import annotations

from sarsleuth.inputs.bundles.scan import is_bundle
from sarsleuth.config import load_config
from sarsleuth.errors import UsageError
from sarsleuth.fleet.correlate import DEFAULT_TOLERANCE_SECONDS, fleet_incidents
from sarsleuth.fleet.hosts import Grouping, group_by_host, group_inputs, input_files
from sarsleuth.fleet.model import Fleet
from sarsleuth.fleet.run import FACTS_BATCH, executor
from sarsleuth.fleet.split import hosts_of_shared
from sarsleuth.options import Options, check_options, check_worker_memory
from sarsleuth.progress import progress_bar
from sarsleuth.redaction.case import redact_fleet

__all__ = ["analyze", "group_by_host", "group_inputs", "Grouping", "DEFAULT_TOLERANCE_SECONDS"]


def analyze(*paths, scheduler=None, workers=None, memory_limit=None, processes=True, save=None,
            progress=False, tolerance_seconds=DEFAULT_TOLERANCE_SECONDS, tz=None, year=None, window=None,
            link_speed=None, config=None, date_order=None, min_severity=None, redact=False,
            options: Options | None = None):
    """Group the inputs by host, analyse every host (on Dask when
    installed), correlate across hosts; returns a :class:`Fleet`.  With
    ``save``, the case is also written there as Parquet; ``redact``: every
    name replaced by its stand-in, the same on every host
    (``fleet.redactor.mapping()`` says which).  ``options``: the checked
    options (:func:`sarsleuth.options.check_options`); without it the
    keywords are checked here, once: every worker is handed the same
    object."""
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = tuple(paths[0])
    if redact and save is not None:
        raise UsageError("a fleet cannot be redacted and saved: its workers save each host before it is redacted")
    if options is None:
        options = check_options(tz=tz, year=year, window=window, link_speed=link_speed, date_order=date_order,
                                min_severity=min_severity, config=config)
    memory_limit = check_worker_memory(memory_limit)
    staging = None
    if save is not None:
        from sarsleuth.saved_cases import prepare_case_dir
        staging = prepare_case_dir(save, paths)
    try:
        fleet = _analyze(paths, scheduler, workers, memory_limit, processes, progress, tolerance_seconds, options,
                         staging.dir if staging else None)
        if staging is not None:
            from sarsleuth.saved_cases import write_fleet_tables
            from sarsleuth.saved_cases.folder import writing
            with writing(save):
                write_fleet_tables(staging.dir, fleet)
                staging.commit()
    finally:
        if staging is not None:        # an interrupted or failed run leaves nothing under the case's name
            staging.discard()
    if redact:
        fleet.redactor = redact_fleet(fleet, load_config(options.config).redact_patterns)
    return fleet


def _analyze(paths, scheduler, workers, memory_limit, processes, progress, tolerance_seconds, options, save_dir):
    files, refused = input_files(paths)
    notes: list = []
    with executor(scheduler, workers, memory_limit, processes, notes) as ex:
        facts = ex.facts(_batches(files, FACTS_BATCH))
        order = {f: i for i, f in enumerate(files)}
        facts.sort(key=lambda ff: order.get(ff.path, len(order)))     # as given (stable: a collect's nodes too)
        grouping = group_by_host(facts)
        grouping.unplaced[:0] = refused
        advance = _progress(progress, len(grouping.groups))
        results = []
        for r in ex.hosts(grouping.groups, options, save_dir):
            results.append(r)
            advance(r.host)
        name, workers_used = ex.name, ex.workers
        # a central log of many hosts, read as the files naming no host: told per host
        results, told = hosts_of_shared(results)
        notes.extend(told)
        fleet = Fleet(hosts=results, unplaced=grouping.unplaced, notes=grouping.notes + notes,
                      tolerance_seconds=float(tolerance_seconds), workers=workers_used, scheduler=name)
        for r in results:
            if not r.ok:
                who = f"host {r.host}" if r.host else "files naming no host"
                fleet.warnings.append(f"{who}: not analysed: {r.error}")
        fleet.incidents = fleet_incidents(results, tolerance_seconds)
        _departed(ex, grouping.groups, results, fleet.incidents, options)
    return fleet


#: Fleet incidents whose window every host is ranked in (each costs a
#: second reading of every host, without its detectors).
DEPARTED_INCIDENTS = 3


def _departed(ex, groups, results, incidents, options) -> None:
    """Which hosts departed most from their own baseline in the window of
    each of the first fleet incidents (``FleetIncident.departed``): those
    that saw it and those that did not, most first."""
    ranked = [inc for inc in incidents[:DEPARTED_INCIDENTS] if inc.start is not None]
    if not ranked:
        return
    analysed = {r.host for r in results if r.ok}
    groups = [g for g in groups if g.host and g.host in analysed]
    windows = [(inc.start, inc.end if inc.end is not None else inc.start) for inc in ranked]
    for g, per_window in zip(groups, ex.departures(groups, windows, options)):
        for inc, found in zip(ranked, per_window):
            if found is not None:
                inc.departed.append({"host": g.host, **found})
    for inc in ranked:
        inc.departed.sort(key=lambda d: (-d["score"], str(d["host"])))


def _batches(files: list, size: int) -> list:
    """Units for the facts tasks: plain files ``size`` at a time (a head
    each), every bundle on its own (its whole archive is streamed), so the
    bundles spread over the workers."""
    bundles, plain = [], []
    for f in files:
        (bundles if is_bundle(f) else plain).append(f)
    return [[b] for b in bundles] + [plain[i:i + size] for i in range(0, len(plain), size)]


def _progress(enabled: bool, total: int):
    """A progress bar over hosts on stderr (a terminal only)."""
    return progress_bar(enabled, total, lambda done, _host: f"hosts ({done}/{total})")
