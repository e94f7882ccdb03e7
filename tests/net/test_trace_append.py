"""`trace merge --append` (issue 27, item 9): the inputs written one after another in the order
given, as `mergecap -a` concatenates them, by the Rust merge path with its interfaces and its
atomic, no-clobber output."""

import json
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf.net.trace import files
from pcieperf.net.trace.rewrite import merge
from tests.helpers import CAPTURES
from tests.helpers.captures import content, write_capture
from tests.helpers.cli import run_cli

needs_shared = pytest.mark.skipif(not CAPTURES.is_dir(), reason=f"{CAPTURES} is absent")


def tagged(folder, times: list[list[int]], suffix: str) -> list:
    """One capture per list of times, every byte of input k's frames k."""
    inputs = [folder / f"in{k}{suffix}" for k in range(len(times))]
    for k, (path, ts) in enumerate(zip(inputs, times, strict=True)):
        write_capture(path, ts, fill=k)
    return inputs


def order(path) -> list[tuple[int, int]]:
    """(time, input) of every record of a capture written from `tagged` inputs, in file order."""
    read = files.read(path, offsets=True)
    raw = path.read_bytes()
    return list(zip(read.ts_ns.tolist(), [raw[o] for o in read.offset.tolist()], strict=True))


TIMES = st.lists(st.lists(st.integers(0, 10**12), max_size=30), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)
@given(TIMES, st.sampled_from([".pcap", ".pcapng"]))
def test_append_keeps_the_order_given(tmp_path_factory, times, suffix):
    # Inputs in any order, overlapping or not: the output is input 0's records as they are,
    # then input 1's, ... (mergecap -a), none lost, none moved.
    folder = tmp_path_factory.mktemp("append")
    out = folder / f"out{suffix}"
    result = merge(tagged(folder, times, suffix), out, append=True)
    assert order(out) == [(t, k) for k, ts in enumerate(times) for t in ts]
    assert result["packets"] == sum(map(len, times))


@settings(max_examples=40, deadline=None)
@given(TIMES, st.sampled_from([".pcap", ".pcapng"]))
def test_append_of_inputs_already_in_order_is_the_merge(tmp_path_factory, times, suffix):
    # Each input after the one before it in time: appending and merging write the same bytes.
    folder = tmp_path_factory.mktemp("ordered")
    ordered, start = [], 0
    for ts in times:
        ordered.append([start + t for t in sorted(ts)])
        start = ordered[-1][-1] if ordered[-1] else start
    inputs = tagged(folder, ordered, suffix)
    appended, merged = folder / f"a{suffix}", folder / f"m{suffix}"
    assert merge(inputs, appended, append=True) == merge(inputs, merged)
    assert appended.read_bytes() == merged.read_bytes()


@needs_shared
@pytest.mark.skipif(not shutil.which("mergecap"), reason="mergecap (Wireshark) not installed")
def test_append_writes_what_mergecap_a_writes(tmp_path):
    # Out of time order on purpose: the later capture first. mergecap -a keeps that order;
    # so must we (times, lengths and bytes of every record, in file order).
    names = ["tcpdump/nhrp.pcapng", "tcpdump/afs.pcap", "tcpdump/AoE_Linux.pcap"]
    inputs = [CAPTURES / n for n in names]
    ours, theirs = tmp_path / "ours.pcapng", tmp_path / "theirs.pcapng"
    merge(inputs, ours, append=True)
    subprocess.run(["mergecap", "-a", "-w", str(theirs), *map(str, inputs)], check=True)
    mine, wireshark = files.read(ours, offsets=True), files.read(theirs, offsets=True)
    assert mine.ts_ns.tolist() == wireshark.ts_ns.tolist()
    assert mine.wirelen.tolist() == wireshark.wirelen.tolist()
    assert sorted(content(mine)) == sorted(content(wireshark))
    assert mine.packets == sum(files.read(p).packets for p in inputs)


def test_cli_append_refuses_to_clobber_and_runs_atomically(tmp_path, capsys):
    inputs = tagged(tmp_path, [[30, 40], [10, 20]], ".pcap")
    out = tmp_path / "out.pcapng"
    out.write_bytes(b"keep")
    code, _, err = run_cli(capsys, "trace", "merge", "--append", *map(str, inputs), "-o", str(out))
    assert code == 2
    assert "exists" in err
    assert out.read_bytes() == b"keep"
    args = ["trace", "merge", "--append", "--force", "--json", *map(str, inputs), "-o", str(out)]
    code, printed, _ = run_cli(capsys, *args)
    assert code == 0
    result = json.loads(printed)
    assert (result["append"], result["packets"], result["out_of_order"]) == (True, 4, 0)
    assert order(out) == [(30, 0), (40, 0), (10, 1), (20, 1)]
    # An input that cannot be read: an error naming it, the old output left as it was.
    missing = tmp_path / "missing.pcap"
    code, _, err = run_cli(
        capsys, "trace", "merge", "--append", "--force", str(missing), "-o", str(out)
    )
    assert code != 0
    assert str(missing) in err
    assert order(out) == [(30, 0), (40, 0), (10, 1), (20, 1)]


def test_append_is_not_for_dask(tmp_path, capsys):
    inputs = tagged(tmp_path, [[1], [2]], ".pcap")
    out = tmp_path / "out.pcap"
    args = ["trace", "merge", "--append", "--scheduler", "local:1", *map(str, inputs)]
    code, _, err = run_cli(capsys, *args, "-o", str(out))
    assert code == 2
    assert "--append with --scheduler local:1 is not allowed" in err
    assert not out.exists()
