"""The sweepable commands (`nic`, `dma`, `iommu sim`, `bench sim`): each one's API function,
the keyword arguments a spec may set (read from the functions' signatures), how a point's
options become those arguments, its check without the model, and its evaluation as columns.

A point's options are the spec's values (numbers, strings, booleans); the only conversions are
those the command line made: `sizes`/`windows` of `dma` and `bench sim` from `64` or
`"64,128"` to a list of ints, `nic`'s `mix` from a string to a one-item list and its `sizes` to
text. Everything else is checked by the API function itself."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from pcieperf.errors import PcieperfWarning, require_choice
from pcieperf.iommu.api import inputs
from pcieperf.iommu.api import sim as iommu_sim
from pcieperf.nic.api import check as check_nic_options
from pcieperf.nic.api import nic
from pcieperf.pcie.api import dma, make_link
from pcieperf.pcie.tlp import OPS
from pcieperf.pciebench.api import check_access, sim_setup
from pcieperf.pciebench.api import sim as bench_sim
from pcieperf.units import parse_int_list

if TYPE_CHECKING:
    from pcieperf.results import Result

Options = Mapping[str, object]
"""A point's options: every keyword a spec may set, at the spec's value or its default."""
Columns = Mapping[str, Sequence[object]]
"""What a command's evaluation returns: equally long columns, one row per result."""
Evaluate = Callable[[Options], Columns]


@dataclass(frozen=True)
class Parameter:
    """A keyword a spec may set: its default (None where the function has none: then the spec
    must give it), whether it is a switch (true or false only), and whether it is a real
    number (a whole number given is taken as a float, as the command line's number type did)."""

    default: object
    required: bool
    switch: bool
    real: bool


def _keywords(*functions: Callable[..., object]) -> dict[str, Parameter]:
    """The keyword-only parameters of `functions` (an API function and, where it hands its
    `**link_options` on, `make_link`), in signature order."""
    found: dict[str, Parameter] = {}
    for function in functions:
        for p in inspect.signature(function).parameters.values():
            if p.kind is p.KEYWORD_ONLY:
                required = p.default is p.empty
                switch = isinstance(p.default, bool) or p.annotation == "bool | None"
                real = p.annotation in ("float", "float | None")
                default = None if required else p.default
                found.setdefault(p.name, Parameter(default, required, switch, real))
    return found


def _int_list(value: object, what: str) -> object:
    """`sizes`/`windows` given as `64` or `"64,128"` as a list of ints, as the command line
    reads them (a default, already a sequence, as it is)."""
    return parse_int_list(str(value), what) if isinstance(value, int | str) else value


def _as_given(options: Options) -> dict[str, object]:
    return dict(options)


def _nic_arguments(options: Options) -> dict[str, object]:
    """`nic`'s options as `pp.nic` takes them: `mix` a list, `sizes` text (as from --sizes)."""
    mix, sizes = options["mix"], options["sizes"]
    return {
        **options,
        "mix": [mix] if isinstance(mix, str) else mix,
        "sizes": sizes if sizes is None else str(sizes),
    }


def _dma_arguments(options: Options) -> dict[str, object]:
    return {**options, "sizes": _int_list(options["sizes"], "transfer size")}


def _bench_arguments(options: Options) -> dict[str, object]:
    sizes = _int_list(options["sizes"], "transfer size")
    return {**options, "sizes": sizes, "windows": _int_list(options["windows"], "window")}


@cache
def _link_names() -> frozenset[str]:
    return frozenset(_keywords(make_link))


def _link(arguments: Mapping[str, object]) -> None:
    """Check the link the arguments describe (`make_link` refuses a bad one)."""
    link = {k: v for k, v in arguments.items() if k in _link_names()}
    make_link(**link)  # type: ignore[arg-type]  # a spec's values: make_link checks each


def _check_nic(arguments: Mapping[str, object]) -> None:
    _link(arguments)
    names = ("profile", "eth", "vlan", "paths", "pps", "sizes", "mix")
    given = (arguments[name] for name in names)
    check_nic_options(*given)  # type: ignore[arg-type]  # a spec's values: check() checks each


def _check_dma(arguments: Mapping[str, object]) -> None:
    _link(arguments)
    require_choice("operation", arguments["op"], OPS)  # as `tlp.dma_rows` checks it


def _check_iommu_sim(arguments: Mapping[str, object]) -> None:
    inputs(**arguments)  # type: ignore[arg-type]  # inputs() checks each keyword


def _check_bench_sim(arguments: Mapping[str, object]) -> None:
    given = (arguments["host"], arguments["device"], arguments["test"])
    sim_setup(*given)  # type: ignore[arg-type]  # a spec's values: sim_setup checks each
    check_access(arguments["cache"], arguments["pattern"])  # type: ignore[arg-type]  # it checks


def _without_mix(options: Options) -> bool:
    """`nic` rows of a mix follow its sizes' rows: joining sizes would reorder them."""
    return not options.get("mix")


def _always(_: Options) -> bool:
    return True


@dataclass(frozen=True)
class Evaluation:
    """A point's evaluation: the command's API call, its rows as columns (`to_columns()`), so
    that a row equals the command's --json by construction. `nic` points differ in two ways:
    Parquet holds one type per column, so `size` (a number, or a mix's name) is stored as
    text; and a `pps` above what the line or link carries is not warned about (a warning per
    point, thousands of lines: the `fits_line` and `fits_pcie` columns say it). Module-level
    functions only: it is sent to workers."""

    api: Callable[..., Result]
    arguments: Callable[[Options], dict[str, object]]
    nic: bool = False

    def __call__(self, options: Options) -> Columns:
        """The columns of the point (or run of sizes) `options`."""
        # catch_warnings is not thread-safe: nic's filter needs one worker thread per process
        # (engine.connect: not `gil_free`); the others change no filter.
        with warnings.catch_warnings():
            if self.nic:
                warnings.simplefilter("ignore", PcieperfWarning)
            columns = dict(self.api(**self.arguments(options)).to_columns())
        if self.nic:
            columns["size"] = [str(size) for size in columns["size"]]
        return columns


@dataclass(frozen=True)
class Command:
    """How a sweep evaluates one command: its evaluation, the functions whose keywords a spec
    may set (less `excluded`: no model parameter), points per chunk by default (about half a
    second of work per task, far above what a Dask task costs: docs/scale.md), the check of
    one point's arguments as the API makes it before its model runs (every point is checked
    before any work: `check`), the keywords naming a .toml file, whether sizes may be joined
    into one call given the other options, and whether the evaluation's time is native code
    that releases the GIL (then in-process chunks run on a thread per core:
    engine.connect's `gil_free`)."""

    evaluation: Evaluation
    signatures: tuple[Callable[..., object], ...]
    chunk: int
    check_arguments: Callable[[Mapping[str, object]], None]
    excluded: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    joinable: Callable[[Options], bool] = _always
    gil_free: bool = False

    @property
    def parameters(self) -> dict[str, Parameter]:
        """The keywords a spec may set, with their defaults."""
        found = _keywords(*self.signatures)
        return {name: p for name, p in found.items() if name not in self.excluded}

    def check(self, options: Options) -> None:
        """Check a point's options as the API checks them, without the model."""
        self.check_arguments(self.evaluation.arguments(options))


COMMANDS = {
    "nic": Command(
        Evaluation(nic, _nic_arguments, nic=True),
        (nic, make_link),
        40_000,
        _check_nic,
        excluded=("breakdown",),  # a listing per size, not a parameter of the rows
        files=("profile",),
        joinable=_without_mix,
    ),
    "dma": Command(
        Evaluation(dma, _dma_arguments),
        (dma, make_link),
        200_000,
        _check_dma,
        excluded=("tlps",),  # every TLP listed: not a parameter of the rows
    ),
    "iommu sim": Command(
        Evaluation(iommu_sim, _as_given),
        (inputs,),
        24,
        _check_iommu_sim,
        files=("calibration",),
        gil_free=True,
    ),
    "bench sim": Command(
        Evaluation(bench_sim, _bench_arguments),
        (bench_sim,),
        32,
        _check_bench_sim,
        excluded=("progress",),
        files=("host", "device"),
    ),
}
"""The sweepable commands by name."""
