"""Testbed setups: a testpmd command line and the NICs it forwards between, as the IOMMU model's
port setup, link and device (`iommu sim|gain|advise --setup NAME|FILE`; shipped:
src/pcieperf/iommu/setups/*.toml).

A setup fixes what its command line and topology fix: the ports (one per NIC, forwarding to
each other as testpmd pairs them), the mbuf pool sized as testpmd sizes it, the mempool cache,
the page size (`--no-huge`: 4 KiB) and the links. Ring sizes, frame sizes, poll delay and the
platform stay options. A setup may also fix a NIC number its source implies but no datasheet
publishes (`read_requests_per_nic`), as a parameter table with its range, kind and source like a
platform profile's; outputs name it (`Testbed.as_dict`, `Testbed.inferred_text`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pcieperf._config import load_toml
from pcieperf.dpdk.port import ELEMENT_BYTES, PAGE_SIZES, PortSetup
from pcieperf.errors import ProfileError, UsageError
from pcieperf.iommu.platform import Platform
from pcieperf.iommu.profiles import Param, parse_param
from pcieperf.pciebench.calibration_file import Calibration

SETUP_DIR = Path(__file__).parent / "setups"
# testpmd sizes its one mbuf pool, unless --total-num-mbufs is given, as (app/test-pmd/testpmd.c,
# init_config): (RTE_TEST_RX_DESC_MAX + nb_lcores x mb_mempool_cache + RTE_TEST_TX_DESC_MAX +
# MAX_PKT_BURST) x RTE_MAX_ETHPORTS, where RTE_TEST_RX/TX_DESC_MAX are 2048 and MAX_PKT_BURST 512
# (app/test-pmd/testpmd.h), mb_mempool_cache defaults to DEF_MBUF_CACHE = 250 (testpmd.h) and
# RTE_MAX_ETHPORTS is the build's (32 by default: config/rte_config.h, meson option max_ethports).
# nb_lcores counts the enabled lcores less the main one (testpmd.c set_default_fwd_lcores_config).
TESTPMD_DESC_MAX = 2048
TESTPMD_MAX_BURST = 512
TESTPMD_MBUF_CACHE = 250
RTE_MAX_ETHPORTS = 32
KEYS = {
    *("name", "title", "command", "ports", "nics", "gen", "lanes_per_nic", "eth_gbps"),
    *("iova", "source"),
}
# NIC parameters a setup may fix for all its NICs, overriding the NIC profile's value.
NIC_PARAMS = ("read_requests_per_nic",)


@dataclass(frozen=True)
class Eal:
    """What the model needs of an EAL command line: the lcores, the memory and its page size."""

    lcores: int
    memory_mb: int
    no_huge: bool

    @property
    def forwarding_lcores(self) -> int:
        """The lcores testpmd forwards on: all enabled ones but the main lcore."""
        return self.lcores - 1


def parse_eal(command: str) -> Eal:
    """The lcores (`-l` list or `-c` mask), `-m` memory and `--no-huge` of a DPDK command line."""
    words = shlex.split(command)
    words = words[: words.index("--")] if "--" in words else words
    lcores = memory = None
    for flag, value in zip(words, [*words[1:], ""], strict=True):
        if flag == "-l":
            lcores = _lcore_list(value)
        elif flag == "-c":
            lcores = bin(int(value, 16)).count("1")
        elif flag == "-m":
            memory = int(value)
    if not lcores or memory is None:
        raise ProfileError(f"command {command!r} needs -l (or -c) and -m")
    return Eal(lcores, memory, "--no-huge" in words)


def _lcore_list(text: str) -> int:
    """How many lcores an EAL `-l` list names (`1-3`, `0,2,4`, `1-2,5`)."""
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def testpmd_pool(forwarding_lcores: int) -> int:
    """The mbufs testpmd's pool holds without --total-num-mbufs (module constants)."""
    per_port = TESTPMD_DESC_MAX + forwarding_lcores * TESTPMD_MBUF_CACHE
    return (per_port + TESTPMD_DESC_MAX + TESTPMD_MAX_BURST) * RTE_MAX_ETHPORTS


@dataclass(frozen=True)
class Testbed:
    """A testpmd command line and its NICs: one port per NIC, each NIC on its own link and root
    port of one IIO stack (so one IOMMU serves them all)."""

    name: str
    title: str
    command: str
    ports: int
    nics: int
    gen: int
    lanes_per_nic: int
    eth_gbps: int
    iova: str
    source: str
    read_requests_per_nic: Param | None = None  # None: the NIC profile's [device] read_requests

    @property
    def eal(self) -> Eal:
        """The command line's EAL options."""
        return parse_eal(self.command)

    @property
    def page(self) -> str:
        """`--no-huge` backs all memory with 4 KiB pages; else the x86-64 default hugepage."""
        return "4k" if self.eal.no_huge else "2m"

    @property
    def pool(self) -> int:
        """The mbufs testpmd's pool holds for this command line."""
        return testpmd_pool(self.eal.forwarding_lcores)

    @property
    def lanes(self) -> int:
        """PCIe lanes of all NICs together: the model's one link stands for their links."""
        return self.nics * self.lanes_per_nic

    def port_setup(self, base: PortSetup) -> PortSetup:
        """`base` with this testbed's ports (forwarding across when there are several), pool,
        testpmd's mempool cache, page size and IOVA mode."""
        lanes = self.ports * base.queues
        if self.eal.forwarding_lcores != lanes:
            raise UsageError(
                f"setup {self.name}: {self.eal.forwarding_lcores} forwarding lcores for {lanes} "
                "port queues; the model polls each queue with its own lcore"
            )
        setup = replace(
            base,
            ports=self.ports,
            cross_port=self.ports > 1,
            pool=self.pool,
            cache=TESTPMD_MBUF_CACHE,
            page=self.page,
            iova=self.iova,
        )
        self._check_memory(setup)
        return setup

    def platform(self, base: Platform) -> Platform:
        """`base` (loaded on this testbed's link) with every NIC's outstanding read requests and
        every root port's posted-write credits: the model's one device and link stand for all
        NICs, which share only the IIO stack behind them (its IOMMU and write retirement)."""
        facts = base.device.device
        if facts is None:  # load_platform refuses a profile without one
            raise ProfileError(f"profile {base.device.name!r} lacks a [device] table")
        per_nic = self.read_requests_per_nic
        reads = facts.read_requests if per_nic is None else int(per_nic.value)
        facts = replace(facts, read_requests=reads * self.nics)
        device = replace(base.device, device=facts)
        return replace(base, device=device, posted_credits=base.posted_credits * self.nics)

    @property
    def params(self) -> dict[str, Param]:
        """The NIC parameters this setup fixes, by name."""
        given = {name: getattr(self, name) for name in NIC_PARAMS}
        return {name: param for name, param in given.items() if param is not None}

    def as_dict(self) -> dict[str, object]:
        """What outputs say of the setup: its name, title, source and the parameters it fixes
        with their range, kind and source."""
        params = {name: p.as_dict() for name, p in self.params.items()}
        return {"name": self.name, "title": self.title, "source": self.source, "params": params}

    def inferred_text(self) -> str:
        """One line naming the setup and each parameter it fixes with its kind and range."""
        fixed = "; ".join(
            f"{name} {p.value:g} ({p.kind}, {p.low:g}-{p.high:g}: {p.source})"
            for name, p in self.params.items()
        )
        return f"setup {self.name}" + (f": {fixed}" if fixed else "")

    def _check_memory(self, setup: PortSetup) -> None:
        """The pool must fit the command line's -m: DPDK's populate rule gives each mbuf a page
        of its own when one page holds one object (4 KiB with --no-huge)."""
        page = PAGE_SIZES[setup.page]
        per_page = max(page // ELEMENT_BYTES, 1)
        need_mb = -(-setup.pool // per_page) * page / 2**20
        if need_mb > self.eal.memory_mb:
            raise UsageError(
                f"setup {self.name}: testpmd's pool of {setup.pool} mbufs needs {need_mb:.0f} MB "
                f"of {setup.page} pages, more than -m {self.eal.memory_mb}"
            )


def load_testbed(name: str | Path) -> Testbed:
    """A shipped setup by name, or a setup TOML file."""
    path = Path(name)
    if path.suffix != ".toml":
        path = SETUP_DIR / f"{name}.toml"
        if not path.is_file():
            raise UsageError(f"setup {name!r} is not allowed; use {', '.join(builtin_setups())}")
    data = load_toml(path)
    given = set(data) - set(NIC_PARAMS)
    if given != KEYS:
        missing, extra = sorted(KEYS - given), sorted(given - KEYS)
        raise ProfileError(f"{path}: setup keys missing {missing}, unknown {extra}")
    for name in NIC_PARAMS:
        if name in data:
            data[name] = parse_param(data[name], f"{path} [{name}]", _no_calibration(path))
    return Testbed(**data)


def _no_calibration(path: Path) -> Callable[[], Calibration]:
    """A setup's parameters give values: one taken `from` a calibration is refused."""

    def refuse() -> Calibration:
        raise ProfileError(f"{path}: a setup parameter takes a value, not from = a calibration")

    return refuse


def builtin_setups() -> list[str]:
    """The shipped setups' names."""
    return sorted(p.stem for p in SETUP_DIR.glob("*.toml"))
