"""Build the seed corpora of every fuzz target (Python and Rust) under fuzz/corpus/<target>/.

    python fuzz/seed_corpora.py [--shared ../shared/data]

Seeds come from tests/data, the shipped profiles and calibration, and the shared data set
(pcie-bench results, captures); what the shared folder lacks is skipped with a note. Each seed
is stored under the SHA-1 of its bytes (as libFuzzer names corpus files), so re-running adds
nothing twice. Large files are cut to MAX_SEED bytes: small seeds keep the fuzzers fast.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
MAX_SEED = 64 * 1024
PACKAGE = ROOT / "src" / "pcieperf"

sys.path.insert(0, str(ROOT / "fuzz" / "python"))
from targets import _BENCH_NAMES, _COUNTER_OPTIONS, _VALUE_PARSERS  # noqa: E402

from pcieperf.pciebench import bench  # noqa: E402
from pcieperf.pciebench.calibrate import host_profile  # noqa: E402
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION, load_calibration  # noqa: E402
from pcieperf.pciebench.host import load_run  # noqa: E402

# Documented examples of each command-line value (README.md, the --help texts), in the
# order of targets._VALUE_PARSERS.
_VALUE_EXAMPLES = (
    ("10e6", "10M", "14.88Mpps", "500k", "0"),
    ("1s", "100ms", "10us", "500ns", "0.5"),
    ("64,128,1500", "64"),
    ("0:1000,4:5000,8:200", "0:200,32:1000"),
    ("64", "imix", "64:7,594:4,1518:1"),
    ("4k", "2M", "1g", "4096"),
)


def add(target: str, data: bytes) -> None:
    """Store one seed for `target`."""
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    data = data[:MAX_SEED]
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def files(folder: Path, pattern: str) -> Iterator[Path]:
    """Files under `folder` matching `pattern`, sorted; none if the folder is absent."""
    return iter(sorted(folder.rglob(pattern)) if folder.is_dir() else [])


def seed_counters() -> None:
    """Each counter file, detected and with its lenient variant (first byte picks options)."""
    detect, lenient = (
        _COUNTER_OPTIONS.index((None, False, None)),
        _COUNTER_OPTIONS.index((None, True, None)),
    )
    for path in files(ROOT / "tests" / "data" / "counters", "*.csv"):
        for option in (detect, lenient):
            add("counter_file", bytes([option]) + path.read_bytes())


def seed_testpmd() -> None:
    """The recorded testpmd outputs."""
    for path in files(ROOT / "tests" / "data" / "testpmd", "*.txt"):
        add("testpmd_output", path.read_bytes())


def seed_toml() -> None:
    """Shipped NIC profiles; the shipped calibration as calibration, platform and device."""
    for path in files(PACKAGE / "profiles", "*.toml"):
        add("nic_profile", path.read_bytes())
    for path in files(PACKAGE / "calibrations", "*.toml"):
        text = path.read_bytes()
        add("calibration_toml", text)
        add("platform_toml", text)
        device = text.split(b"[device]\n", 1)[1].split(b"\n[", 1)[0]
        add("device_toml", device)


def _toml(table: dict[str, object]) -> bytes:
    """A flat TOML table (the host-profile fields are text, booleans and numbers)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return f'"{v}"' if isinstance(v, str) else repr(v)

    return "".join(f"{k} = {value(v)}\n" for k, v in table.items()).encode()


def seed_bench(shared: Path) -> None:
    """pcie-bench CSVs of two hosts, host profiles and host facts of every host."""
    calibration = load_calibration(DEFAULT_CALIBRATION)
    hosts = sorted(p for p in (shared / "pcie-bench").glob("nfp*") if p.is_dir())
    for number, host in enumerate(hosts):
        if number < 2:
            for path in files(host, "*.csv"):
                kind = bench.file_kind(path.name)
                index = [bench.file_kind(n) for n in _BENCH_NAMES].index(kind)
                add("bench_csv", bytes([index]) + _head(path.read_bytes()))
        facts = [(host / f"sys-{n}.txt").read_bytes() for n in ("lspci", "cpuinfo", "dma-addrs")]
        add("host_facts", b"\0".join([_netronome(facts[0]), _first_cpu(facts[1]), facts[2]]))
        run = load_run(host)
        profile = host_profile(run, calibration)
        add("host_toml", _toml({k: getattr(profile, k) for k in profile.__dataclass_fields__}))


def _head(csv: bytes, limit: int = 4096) -> bytes:
    """The first whole lines of a CSV, at most `limit` bytes."""
    return csv if len(csv) <= limit else csv[: csv.rfind(b"\n", 0, limit) + 1]


def _netronome(lspci: bytes) -> bytes:
    """The first lspci block and the Netronome one: what parse_host_facts reads."""
    blocks = lspci.split(b"\n\n")
    chosen = [blocks[0], *[b for b in blocks[1:] if b"Netronome" in b.split(b"\n", 1)[0]][:1]]
    return b"\n\n".join(chosen)


def _first_cpu(cpuinfo: bytes) -> bytes:
    """The first processor's block of /proc/cpuinfo."""
    return cpuinfo.split(b"\n\n", 1)[0] + b"\n"


def seed_values() -> None:
    """Documented examples of every command-line value parser."""
    assert len(_VALUE_EXAMPLES) == len(_VALUE_PARSERS)
    for index, examples in enumerate(_VALUE_EXAMPLES):
        for text in examples:
            add("cli_values", bytes([index]) + text.encode())


def seed_captures(shared: Path) -> None:
    """Every capture for the Rust capture targets."""
    for path in files(shared / "captures", "*.pcap*"):
        for target in ("read_capture", "capture_roundtrip"):
            add(target, path.read_bytes())


def main() -> None:
    """Build every corpus; say how many seeds each has."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    shared = parser.parse_args().shared
    seed_counters()
    seed_testpmd()
    seed_toml()
    seed_values()
    if shared.is_dir():
        seed_bench(shared)
        seed_captures(shared)
    else:
        print(f"note: {shared} is absent; pcie-bench, host and capture seeds skipped")
    for folder in sorted(CORPUS.iterdir()):
        print(f"{folder.name}: {sum(1 for _ in folder.iterdir())} seeds")


if __name__ == "__main__":
    main()
