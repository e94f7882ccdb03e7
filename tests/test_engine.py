"""The Dask engine: --scheduler parsing, the error without the `dask` extra, and map_chunks'
retries and failures (one error, never a traceback)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf import engine
from pcieperf.errors import PcieperfError, UsageError
from tests.helpers.cli import run_cli

NO_DASK = "the dask extra is not installed (pip install 'pcieperf[dask]')"
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason=NO_DASK)


# ---------------------------------------------------------------------------------------------
# --scheduler


@needs_dask
@pytest.mark.parametrize(
    ("text", "workers", "address"),
    [
        (None, None, None),  # in this process
        ("local:1", 1, None),
        ("local:64", 64, None),
        ("local", os.cpu_count(), None),  # one worker per CPU
        ("tcp://10.0.0.5:8786", None, "tcp://10.0.0.5:8786"),
        ("tcp://sched.example:1", None, "tcp://sched.example:1"),
        ("tls://[::1]:65535", None, "tls://[::1]:65535"),
    ],
)
def test_scheduler_texts(text, workers, address):
    scheduler = engine.parse_scheduler(text)
    assert (scheduler.workers, scheduler.address) == (workers, address)
    assert scheduler.in_process == (text is None)


@needs_dask
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("local:0", "from 1 to 1024"),
        ("local:1025", "from 1 to 1024"),
        ("local:-1", "from 1 to 1024"),
        ("local:two", "from 1 to 1024"),
        ("tcp://host", "use local, local:N"),
        ("tcp://host:0", "use local, local:N"),
        ("tcp://host:65536", "use local, local:N"),
        ("http://host:8786", "use local, local:N"),
        ("", "use local, local:N"),
    ],
)
def test_bad_scheduler_texts_are_refused_by_name(text, message):
    with pytest.raises(UsageError, match=message) as caught:
        engine.parse_scheduler(text)
    assert repr(text) in str(caught.value)


@needs_dask
@given(st.text(max_size=30))
def test_any_scheduler_text_is_a_scheduler_or_a_usage_error(text):
    try:
        scheduler = engine.parse_scheduler(text)
    except UsageError:
        return
    assert str(scheduler) == (f"local:{os.cpu_count()}" if text == "local" else text)


def test_without_the_extra_scheduler_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    spec = tmp_path / "s.toml"
    spec.write_text('command = "dma"\n[axes]\nmps = [128, 256]\n')
    for scheduler in (["--scheduler", "local:2"], []):  # sweep needs the extra either way
        code, out, err = run_cli(
            capsys, "sweep", str(spec), "-o", str(tmp_path / "o.parquet"), *scheduler
        )
        assert code == 2
        assert out == ""
        assert err.count("\n") == 1
        assert "pip install 'pcieperf[dask]'" in err
        assert "distributed is missing" in err
    assert list(tmp_path.iterdir()) == [spec]


# ---------------------------------------------------------------------------------------------
# map_chunks


def count_call(folder, chunk):
    """Record one call for `chunk` (a file per call: counts across threads and processes)."""
    calls = list(Path(folder).glob(f"{chunk}-*"))
    (Path(folder) / f"{chunk}-{len(calls)}").touch()
    return len(calls)


def usage_error_on_2(folder, chunk):
    count_call(folder, chunk)
    if chunk == 2:
        raise UsageError("chunk 2 is bad")
    return chunk * 10


def os_error_until_third_call(folder, chunk):
    if count_call(folder, chunk) < 2:
        raise OSError("the file server blinked")
    return chunk * 10


def os_error_always(folder, chunk):
    count_call(folder, chunk)
    raise OSError("the file server is gone")


@pytest.fixture(scope="module")
def in_process():
    if importlib.util.find_spec("distributed") is None:
        pytest.skip(NO_DASK)
    with engine.connect(engine.Scheduler()) as client:
        yield client


def calls_of(folder):
    return sorted(p.name for p in Path(folder).iterdir())


def test_every_chunk_once_with_its_index(in_process, tmp_path):
    chunks = [3, 1, 4, 1, 5]
    done = list(
        engine.map_chunks(in_process, os_error_until_third_call, chunks, shared=str(tmp_path))
    )
    assert sorted((d.index, d.chunk, d.result) for d in done) == [
        (i, c, 10 * c) for i, c in enumerate(chunks)
    ]


def test_transient_errors_are_retried(in_process, tmp_path):
    # Each chunk fails twice, then succeeds: RETRIES = 2 reruns are enough.
    done = list(engine.map_chunks(in_process, os_error_until_third_call, [7], shared=str(tmp_path)))
    assert [d.result for d in done] == [70]
    assert calls_of(tmp_path) == ["7-0", "7-1", "7-2"]


def test_a_lasting_error_surfaces_after_the_retries(in_process, tmp_path):
    with pytest.raises(OSError, match="file server is gone"):
        list(engine.map_chunks(in_process, os_error_always, [7], shared=str(tmp_path)))
    assert calls_of(tmp_path) == ["7-0", "7-1", "7-2"]  # 1 + RETRIES calls


def test_a_pcieperf_error_is_not_retried_and_ends_the_run(in_process, tmp_path):
    with pytest.raises(UsageError, match="chunk 2 is bad"):
        list(engine.map_chunks(in_process, usage_error_on_2, [2], shared=str(tmp_path)))
    assert calls_of(tmp_path) == ["2-0"]  # a bad value fails again: one call


def test_the_window_bounds_the_tasks_in_flight(in_process, tmp_path):
    # One worker thread: at most 4 tasks in flight, so 100 chunks run in submission waves; all
    # finish, each once.
    chunks = list(range(3, 103))
    done = list(engine.map_chunks(in_process, usage_error_on_2, chunks, shared=str(tmp_path)))
    assert sorted(d.result for d in done) == [10 * c for c in chunks]
    assert len(calls_of(tmp_path)) == 100


def shared_len(shared, chunk):
    return (len(shared[1]), shared[0] is len, chunk)


@pytest.mark.parametrize("size", [10, engine.SHARED_INLINE_BYTES + 1])
def test_a_shared_value_reaches_every_chunk_small_or_large(in_process, size):
    # Small (inside every task) or large (a task of its own): each chunk gets the value as it
    # was given, even a tuple that starts with a function, which dask would otherwise run as a
    # task of its own (len of the bytes: an int, not the tuple).
    shared = (len, b"x" * size)
    assert engine._shared_arg(in_process, shared).__class__.__name__ == (
        "_Inline" if size <= engine.SHARED_INLINE_BYTES else "Future"
    )
    done = list(engine.map_chunks(in_process, shared_len, [1, 2], shared=shared))
    assert sorted(d.result for d in done) == [(size, True, 1), (size, True, 2)]


def die(_, chunk):
    os._exit(1)  # the worker process ends mid-task (as on an OOM kill)


@needs_dask
def test_a_chunk_that_kills_every_worker_is_one_error(tmp_path):
    import dask

    # allowed-failures 0: the first death is final (default 3: four deaths, slower to test)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        engine.connect(engine.parse_scheduler("local:1")) as client,
        pytest.raises(PcieperfError, match="chunk 0 killed each of the 1 workers") as got,
    ):
        list(engine.map_chunks(client, die, ["x"], desc="sweeping"))
    assert "\n" not in str(got.value)


@needs_dask
def test_no_scheduler_at_the_address_is_one_line(tmp_path, capsys, monkeypatch):
    import socket

    monkeypatch.setattr(engine, "CONNECT_TIMEOUT_S", 1)
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
        spec = tmp_path / "s.toml"
        spec.write_text('command = "dma"\n[axes]\nmps = [128, 256]\n')
        code, out, err = run_cli(
            capsys, "sweep", str(spec), "-o", str(tmp_path / "o.parquet"), "--scheduler", address
        )
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(
        f"pcieperf: error: --scheduler {address}: no Dask scheduler answered within 1 s"
    )
    assert err.endswith("start one with `dask scheduler`\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@needs_dask
def test_in_process_tasks_that_release_the_gil_get_a_thread_per_core():
    # engine.connect: gil_free tasks (the IOMMU model's timed runs release the GIL: rust/py
    # port_simulate) run a worker thread per usable core in this process; other tasks one
    # (nic's warnings filter is not thread-safe), and a local cluster one per process.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for gil_free, threads in ((True, cores), (False, 1)):
        with engine.connect(engine.Scheduler(), gil_free=gil_free) as client:
            assert sum(client.nthreads().values()) == threads
    with engine.connect(engine.parse_scheduler("local:1"), gil_free=True) as client:
        assert list(client.nthreads().values()) == [1]
