"""API manners (issue 44): every public function shows its own signature and docstring, a
keyword it does not take is named with the public function and the ones it takes, and a
missing input file is a FileNotFoundError as well as a pcieperf error."""

import inspect
import pydoc

import pytest

import pcieperf as pp


@pytest.mark.parametrize("name", ["nic", "report", "sweep"])
def test_help_shows_the_function_not_its_package(name):
    import pcieperf.nic.nic  # importing a package names it on its parent
    import pcieperf.report.plots
    import pcieperf.sweep.run  # noqa: F401

    function = getattr(pp, name)
    assert inspect.isfunction(function)
    shown = pydoc.render_doc(function, renderer=pydoc.plaintext)
    assert f"function {name} in module pcieperf.{name}.api" in shown


@pytest.mark.parametrize(
    ("function", "keywords"),
    [
        (lambda: pp.iommu.sim, {"page", "rxd", "platform", "frame", "packets"}),
        (lambda: pp.iommu.gain, {"from_rxd", "to_rxd", "sizes", "page", "platform"}),
        (lambda: pp.iommu.advise, {"progress", "page", "rxd"}),
        (lambda: pp.iommu.fit, {"counters", "pps", "page", "rxd"}),
        (lambda: pp.dpdk_forwarding, {"pps", "frame", "batch", "rx_desc", "gen", "lanes"}),
        (lambda: pp.explain, {"counters", "pps", "batch_hist", "mps"}),
    ],
)
def test_a_function_that_hands_keywords_on_shows_them(function, keywords):
    parameters = inspect.signature(function()).parameters
    assert keywords <= set(parameters)
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def test_a_handed_on_keyword_shows_its_default():
    # `iommu sim --rxd` defaults to 1024 descriptors (pcieperf.dpdk.port.PortSetup).
    assert inspect.signature(pp.iommu.sim).parameters["rxd"].default == 1024


@pytest.mark.parametrize(
    ("call", "named", "nearest"),
    [
        (lambda: pp.iommu.sim(pages="4k"), "pp.iommu.sim()", "'page'"),
        (lambda: pp.dpdk_forwarding(fram=64), "pp.dpdk_forwarding()", "'frame'"),
        (lambda: pp.nic(sizse="64"), "pp.nic()", "'sizes'"),
        (lambda: pp.iommu.fit(counters="x", pps=1, rdx=3), "pp.iommu.fit()", "'rxd'"),
    ],
)
def test_an_unknown_keyword_names_the_public_function(call, named, nearest):
    with pytest.raises(TypeError) as raised:
        call()
    message = str(raised.value)
    assert message.startswith(f"{named} got an unexpected keyword argument")
    assert f"did you mean {nearest}?" in message
    assert "; it takes " in message


def test_a_missing_capture_is_a_file_not_found_error(tmp_path):
    missing = tmp_path / "nope.pcap"
    with pytest.raises(FileNotFoundError) as raised:
        pp.read_capture(missing)
    assert isinstance(raised.value, pp.PcieperfError)
    assert str(missing) in str(raised.value)


def test_a_missing_counter_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        pp.read_counters(tmp_path / "nope.csv")
    assert isinstance(raised.value, pp.UsageError)
