"""Dask as the engine for work cut into chunks: one code path in this process, on a local
cluster or on an existing one (issue 17).

    --scheduler      what runs the chunks
    (none)           LocalCluster(processes=False): one worker thread inside this process (one
                     per usable core for tasks that release the GIL: `connect(gil_free=True)`)
    local[:N]        LocalCluster of N worker processes (default: one per CPU), one thread each
    tcp://HOST:PORT  an existing dask.distributed scheduler (`dask scheduler`, `dask worker`)

Why an in-process distributed cluster and not dask's synchronous scheduler: the futures API is
what the callers need (results as each chunk finishes, so a sweep writes each part as it comes
and resumes after a crash; per-task retries; a lost worker's tasks rerun elsewhere; progress from
the futures). The synchronous scheduler has none of it, so using it would mean a second driver
loop; the in-process cluster costs about half a second to start (docs/scale.md).

Callers describe the work as a function and a list of chunks (`map_chunks`), so the archive
statistics can reuse this module as the sweep does.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pcieperf import interrupts, progress
from pcieperf._native import stop_work
from pcieperf.errors import PcieperfError, UsageError, param

if TYPE_CHECKING:  # distributed is the optional `dask` extra: imported where it is used
    from distributed import Client, Future, LocalCluster

INSTALL = "pip install 'pcieperf[dask]'"
"""How to get the optional engine; every error about it says this."""

RETRIES = 2
"""Reruns of a chunk whose function raised something other than a PcieperfError (a transient
OSError reading a remote file, say). A worker that dies is handled by the scheduler instead:
its tasks go to other workers, and a task that kills `distributed.scheduler.allowed-failures`
workers (3 by default) fails with KilledWorker."""

IN_FLIGHT_PER_THREAD = 16
"""Tasks submitted ahead per worker thread: enough to hide the round trip of a result to this
process and the next submission (docs/scale.md), few enough that millions of chunks never
sit in the scheduler at once."""
SHARED_INLINE_BYTES = 4 << 10
"""A value all chunks share (map_chunks' `shared`) up to this size, pickled, travels inside
every task (the archive's statistics config and switches: ~300 bytes); a larger one (a sweep's
plan, ~14 KB; the demand's cost table) is the result of a task of its own, sent once. That task
costs the local scheduler ~3.5 ms of CPU, and each worker that did not run it fetches it before
its first chunk (docs/scale.md)."""
MAX_LOCAL_WORKERS = 1024  # a larger local:N is a typo: each worker is a process on this host
CONNECT_TIMEOUT_S = 10  # a running scheduler answers in milliseconds, even on a loaded host
_ADDRESS = re.compile(r"(tcp|tls)://([^\s:/]+|\[[0-9a-fA-F:]+\]):(\d{1,5})")
_SCHEDULER_HELP = "use local, local:N (N worker processes) or tcp://HOST:PORT"

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Scheduler:
    """Where chunks run: this process (`workers` and `address` None), a local cluster of
    `workers` processes, or the scheduler at `address`."""

    workers: int | None = None
    address: str | None = None

    @property
    def in_process(self) -> bool:
        """True for the default: no cluster outside this process."""
        return self.workers is None and self.address is None

    def __str__(self) -> str:
        if self.address:
            return self.address
        return "in-process" if self.workers is None else f"local:{self.workers}"


def parse_scheduler(text: str | None) -> Scheduler:
    """The --scheduler value as a Scheduler; None is the in-process default. Checks that the
    `dask` extra is installed when a scheduler is named."""
    if text is None:
        return Scheduler()
    require_dask(f"{param('scheduler')} {text}")
    if text == "local":
        return Scheduler(workers=os.cpu_count() or 1)
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or not 1 <= int(count) <= MAX_LOCAL_WORKERS:
            raise UsageError(
                f"{param('scheduler')} {text!r} is not allowed; N in local:N is a whole number "
                "from 1 "
                f"to {MAX_LOCAL_WORKERS}"
            )
        return Scheduler(workers=int(count))
    match = _ADDRESS.fullmatch(text)
    if match is None or not 1 <= int(match.group(3)) <= 65535:
        raise UsageError(f"{param('scheduler')} {text!r} is not allowed; {_SCHEDULER_HELP}")
    return Scheduler(address=text)


def require_dask(what: str) -> None:
    """Raise UsageError naming `what` and the install command unless dask.distributed and
    pyarrow import."""
    try:
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"{what} needs Dask and pyarrow ({exc.name} is missing): {INSTALL}"
        ) from None


@contextmanager
def connect(
    scheduler: Scheduler, *, quiet_logs: bool = True, gil_free: bool = False
) -> Iterator[Client]:
    """A Client on `scheduler`, closed (and a cluster it started, shut down) on exit.
    `quiet_logs` keeps dask's own log lines off stderr (--debug shows them). `gil_free`: the
    tasks spend their time in native code that releases the GIL (the IOMMU model's timed runs,
    rust/py `port_simulate`), so the in-process cluster runs a worker thread per usable core."""
    require_dask("running on Dask")
    from distributed import Client, LocalCluster

    if scheduler.address:
        try:
            client = Client(scheduler.address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"{param('scheduler')} {scheduler.address}: no Dask scheduler answered within "
                f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}); start one with `dask scheduler`"
            ) from None
        with client:
            yield client
        return
    import logging  # here, not at the top: the CLI reads INSTALL at every start-up

    with interrupts.kept_from_children():  # a Ctrl-C reaches this process, which stops them
        cluster = LocalCluster(
            processes=not scheduler.in_process,
            n_workers=scheduler.workers or 1,
            # The models are single-threaded: one task per core (in this process, where the
            # tasks release the GIL, a thread per core: no process to start or send the plan to).
            threads_per_worker=_usable_cores() if gil_free and scheduler.in_process else 1,
            dashboard_address="127.0.0.1:0",  # any free port: 8787 may belong to another one
            # Errors reach the caller as exceptions; what workers log besides is noise on
            # stderr (a heartbeat racing the shutdown logs a traceback at ERROR on a loaded host).
            silence_logs=logging.CRITICAL if quiet_logs else logging.INFO,
        )
    with cluster:
        try:
            with Client(cluster) as client:
                yield client
        except KeyboardInterrupt:
            _abandon(cluster)
            raise


def _abandon(cluster: LocalCluster) -> None:
    """Stop a local cluster's work at once (Ctrl-C, SIGTERM, SIGHUP): the core's work in its
    threads is asked to stop, its worker processes (which ignore the signals) are killed, so
    that closing it does not wait for the tasks they hold."""
    stop_work()
    for nanny in list(cluster.workers.values()):
        pid = getattr(nanny, "pid", None)  # a Nanny's worker process (None: none, or threads)
        if pid:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cores_per_thread(client: Client) -> float:
    """The fewest cores per worker thread on any host of the cluster: a host's cores (as its
    workers see them) over the threads of all its workers. Below 2, a task that keeps a second
    thread busy (a file read ahead, say) takes a core from another task (docs/scale.md)."""
    workers = client.scheduler_info()["workers"]
    # A worker that dies meanwhile (killed, restarted by its nanny) is left out, not an error:
    # the tasks that follow survive it through dask's retries, so this question must too.
    cores = client.run(_usable_cores, on_error="ignore")
    threads: Counter[str] = Counter()
    for info in workers.values():
        threads[info["host"]] += info["nthreads"]
    return min(
        (n / threads[workers[a]["host"]] for a, n in cores.items() if a in workers),
        default=1.0,
    )


@dataclass(frozen=True)
class _Failed:
    """A chunk's PcieperfError, returned rather than raised so that dask does not retry what
    would fail again (a bad value in a spec, an unreadable file)."""

    error: PcieperfError


def _identity(value: T) -> T:
    """The shared value as a task result (see map_chunks)."""
    return value


@dataclass(frozen=True)
class _Inline:
    """A small shared value carried in every task's arguments; wrapped so that dask passes it
    as it is (it would run a tuple that starts with a function as a task)."""

    value: object


def _shared_arg(client: Client, shared: object) -> object:
    """What the tasks get for `shared`: the value itself where it pickles to at most
    SHARED_INLINE_BYTES, else the result of a task that returns it. Not scatter(): if every
    worker holding scattered data dies, it is lost, where a task's result is recomputed."""
    import pickle  # here, not at the top: the CLI reads INSTALL at every start-up

    try:
        small = len(pickle.dumps(shared)) <= SHARED_INLINE_BYTES
    except (pickle.PicklingError, TypeError, AttributeError):  # cloudpickle's job: send it once
        small = False
    return _Inline(shared) if small else client.submit(_identity, shared, pure=False)


def _run_chunk(func: Callable[[object, T], R], shared: object, chunk: T) -> R | _Failed:
    """The task each chunk becomes: `func(shared, chunk)` on a worker."""
    try:
        return func(shared.value if isinstance(shared, _Inline) else shared, chunk)
    except PcieperfError as exc:
        return _Failed(exc)


@dataclass(frozen=True)
class Done(Generic[T, R]):
    """One finished chunk: its position in the list given to map_chunks, the chunk, the
    result."""

    index: int
    chunk: T
    result: R


def map_chunks(
    client: Client,
    func: Callable[[Any, T], R],  # called with `shared`, whatever its type
    chunks: Sequence[T],
    *,
    shared: object = None,
    weight: Callable[[T], int] = lambda _: 1,
    desc: str = "chunks",
    unit: str = "it",
    done: int = 0,
    total: int | None = None,
) -> Generator[Done[T, R], None, None]:
    """Run `func(shared, chunk)` for every chunk on the cluster and yield each result as it
    finishes (completion order; `index` tells where it belongs). `shared` goes to the workers
    once (inside every task where it is small: `_shared_arg`). A bar counts `weight(chunk)`
    units per chunk out of `total` (default: all chunks'), `done` of them finished before this
    call (a resumed run). IN_FLIGHT_PER_THREAD tasks per worker thread are in flight at most.
    A PcieperfError from a chunk, or a chunk that killed its workers, ends the run with one
    error; leaving the loop early cancels what is still running."""
    from distributed import as_completed

    if not chunks:  # nothing to run: not even the shared value's task
        return
    shared_arg = _shared_arg(client, shared)
    todo = iter(enumerate(chunks))
    window = IN_FLIGHT_PER_THREAD * max(1, sum(client.nthreads().values()))
    running: dict[object, tuple[int, T]] = {}

    def submit(count: int) -> list[Future]:
        """The next `count` chunks as tasks, in one message to the scheduler (client.map):
        a submission per task costs the local scheduler about twice the CPU (docs/scale.md)."""
        batch = list(itertools.islice(todo, count))
        futures = client.map(
            _run_chunk,
            [func] * len(batch),
            [shared_arg] * len(batch),
            [chunk for _, chunk in batch],
            retries=RETRIES,
            pure=False,
        )
        running.update(zip(futures, batch, strict=True))
        return futures

    units = sum(weight(c) for c in chunks) + done if total is None else total
    pending = as_completed(submit(window))
    try:
        with progress.bar(units, desc, unit) as bar:
            bar.update(done)
            for batch in pending.batches():
                results = _gather(client, batch, running, desc)
                pending.update(submit(len(batch)))
                for future, result in zip(batch, results, strict=True):
                    index, chunk = running.pop(future)
                    if isinstance(result, _Failed):
                        raise result.error
                    bar.update(weight(chunk))
                    yield Done(index, chunk, result)
    finally:
        if running:
            client.cancel(list(running))


def _gather(client: Client, futures: list, running: dict, desc: str) -> list:
    """The results of finished tasks in one request (a request per task costs the scheduler
    and a worker a round trip each); a chunk that killed its workers is one error naming it."""
    from distributed import KilledWorker

    try:
        return client.gather(futures)
    except KilledWorker as exc:
        index = next((running[f][0] for f in futures if f.key == exc.task), "?")
        raise PcieperfError(
            f"{desc}: chunk {index} killed each of the {exc.allowed_failures + 1} "
            "workers that ran it (out of memory?); what finished is kept"
        ) from None
