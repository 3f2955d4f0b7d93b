"""Running the hosts' pipelines: on a Dask cluster (a LocalCluster of one
single-threaded worker process per core by default, or an existing one by
address), or one after another in this process when Dask is not installed.

Only file paths go out and host results come back; with ``--save`` the
workers write their hosts' tables into the case directory themselves, so
that directory must be reachable from every worker (a shared file system on
a real cluster)."""
from __future__ import annotations

import contextlib
import logging
import os
import uuid

from sarsleuth.fleet.hosts import unit_facts
from sarsleuth.fleet.model import HostResult
from sarsleuth.fleet.pipeline import analyse_host, host_departures

#: Files whose host facts one task reads.
FACTS_BATCH = 64
#: How long to wait for a scheduler given by address.
CONNECT_TIMEOUT = "20s"


def worker_count(workers: int | None) -> int:
    return max(1, int(workers) if workers else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                                else os.cpu_count() or 1))


def facts_batch(paths: list) -> list:
    return [f for p in paths for f in unit_facts(p)]


class SerialExecutor:
    """The same calls as a Dask client would get, run here in order."""

    name = "in-process (Dask not installed)"
    workers = 1

    def facts(self, batches):
        return [f for b in batches for f in facts_batch(b)]

    def hosts(self, groups, options, save_dir):
        for g in groups:
            yield analyse_host(g, options, save_dir)

    def departures(self, groups, windows, options):
        return [host_departures(g, windows, options) for g in groups]


class DaskExecutor:
    def __init__(self, client, name: str):
        self.client, self.name = client, name
        self.workers = len(client.scheduler_info().get("workers", {})) or 1

    def facts(self, batches):
        futures = self.client.map(facts_batch, batches, pure=False)
        return [f for batch in self.client.gather(futures) for f in batch]

    def hosts(self, groups, options, save_dir):
        # an extra: the core works without it
        from distributed import as_completed
        run = uuid.uuid4().hex[:12]    # keys of one run: never the cached result of an earlier one
        futures = self.client.map(analyse_host, groups, options=options, save_dir=save_dir, pure=False,
                                  key=[f"sarsleuth-host-{run}-{i}" for i in range(len(groups))])
        group_of = {f.key: g for f, g in zip(futures, groups)}
        pending = as_completed(futures)
        del futures                    # each result is dropped (on the worker too) once read
        for fut in pending:
            try:
                yield fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker lost (killed at its memory limit...)
                g = group_of[fut.key]
                yield HostResult(host=g.host, files=list(g.files), facts=dict(g.facts), ok=False,
                                 error=f"its worker failed: {type(exc).__name__}: {exc}".splitlines()[0])
            finally:
                fut.release()

    def departures(self, groups, windows, options):
        run = uuid.uuid4().hex[:12]
        futures = self.client.map(host_departures, groups, windows=windows, options=options, pure=False,
                                  key=[f"sarsleuth-departures-{run}-{i}" for i in range(len(groups))])
        out = []
        for fut in futures:
            try:
                out.append(fut.result())
            except Exception:  # noqa: BLE001 - a worker lost: that host departs nowhere we can tell
                out.append([None] * len(windows))
            finally:
                fut.release()
        return out


@contextlib.contextmanager
def executor(scheduler: str | None = None, workers: int | None = None, memory_limit: str | None = None,
             processes: bool = True, notes: list | None = None):
    """An executor for the hosts' pipelines, closed on exit."""
    try:
        import distributed
    except ImportError:
        if scheduler:
            from sarsleuth.errors import UsageError
            raise UsageError("--scheduler needs Dask: pip install 'sarsleuth[fleet]'") from None
        if notes is not None:
            notes.append("Dask is not installed: hosts were analysed one after another "
                         "(pip install 'sarsleuth[fleet]' to use every core)")
        yield SerialExecutor()
        return
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            from sarsleuth.errors import UsageError
            raise UsageError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'})") from None
        with client:
            yield DaskExecutor(client, scheduler)
        return

    # an extra: the core works without it
    import dask
    n = worker_count(workers)
    # Dask's sampling profiler keeps a call tree of every stack it sees: over
    # thousands of hosts that, not host data, is what a worker's memory grows by
    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=processes,
                                     memory_limit=memory_limit or "auto", dashboard_address=":0",
                                     silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        yield DaskExecutor(client, f"local cluster of {n} worker(s)")
