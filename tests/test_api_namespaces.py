"""`pp.bench`, `pp.iommu` and `pp.store` show only their API (issue 16): dir() and so tab
completion list `__all__`, not the helpers their modules import (`format_table`, ...), which
the package's own code still reaches by name."""

import pytest

import pcieperf as pp


@pytest.mark.parametrize(
    ("namespace", "helper"),
    [("bench", "format_table"), ("iommu", "annotations"), ("store", "require_choice")],
)
def test_dir_lists_the_api_alone(namespace, helper):
    module = getattr(pp, namespace)
    assert dir(module) == sorted(module.__all__)
    assert helper not in dir(module)
    assert hasattr(module, helper)  # an import of the module, still there for its own code


def test_the_bench_namespace_is_its_six_functions():
    # docs/api.md, "pciebench": load, tests, sim, calibrate, predict, validate.
    assert dir(pp.bench) == ["calibrate", "load", "predict", "sim", "tests", "validate"]
