"""One TOML loader (src/pcieperf/_config.py, issue 16): every kind of configuration file (NIC
profile, device, host, calibration, platform, sweep spec) fails alike on a missing file, bytes
that are not UTF-8 and text that is not TOML: one line that names the file, a UsageError (exit
2), never a traceback."""

import re
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf import _config
from pcieperf.errors import ProfileError, UsageError
from pcieperf.iommu import profiles as platforms
from pcieperf.iommu.platform import load_platform
from pcieperf.nic.profile import load_profile
from pcieperf.pciebench import sim
from pcieperf.pciebench.calibration_file import load_calibration
from pcieperf.pciebench.device import load_device
from pcieperf.sweep.spec import load_spec
from tests.helpers.hosts import write_host_toml

LOADERS = {
    "nic": lambda path: load_profile(str(path)),
    "device": load_device,
    "host": sim.load_host,
    "calibration": load_calibration,
    "platform": load_platform,
    "spec": lambda path: load_spec(path, ["dma"], {"dma": 1}),
}
# Latin-1 "café": 0xe9 opens a 3-byte UTF-8 sequence that `"` cannot continue (RFC 3629 §3).
NOT_UTF8 = b'name = "caf\xe9"\n'
NOT_TOML = b"name = 1 2\n"  # two values for one key (TOML v1.0.0, "Keys/Values": one each)


BAD_FILES = {
    # Byte 11 is the 0xe9 of "caf\xe9" (`name = "caf` is 11 bytes).
    "not-utf8": (NOT_UTF8, "x.toml: not UTF-8 text (byte 11: invalid continuation byte)"),
    # tomllib names where it stopped: line 1, column 10 is the "2".
    "not-toml": (
        NOT_TOML,
        "x.toml: not valid TOML: Expected newline or end of document after a "
        "statement (at line 1, column 10)",
    ),
}


@pytest.mark.parametrize("kind", list(LOADERS))
@pytest.mark.parametrize("bad", list(BAD_FILES))
def test_every_kind_refuses_a_bad_file_in_one_line(tmp_path, kind, bad):
    data, expected = BAD_FILES[bad]
    path = tmp_path / "x.toml"
    path.write_bytes(data)
    with pytest.raises(ProfileError) as caught:
        LOADERS[kind](path)
    assert expected in str(caught.value)  # after the label: the path, "profile P", "spec P"
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", list(LOADERS))
def test_every_kind_names_a_missing_file(tmp_path, kind):
    path = tmp_path / "gone.toml"
    with pytest.raises(UsageError, match=r"^cannot read .*gone\.toml: No such file or directory$"):
        LOADERS[kind](path)


def test_the_label_names_the_file_in_every_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_bytes(NOT_TOML)
    with pytest.raises(ProfileError, match=r"^spec s\.toml: not valid TOML: "):
        _config.load_toml(path, "spec s.toml")
    with pytest.raises(UsageError, match=r"^cannot read spec gone: No such file or directory$"):
        _config.load_toml(tmp_path / "gone", "spec gone")
    # Without a label the path names the file.
    assert _config.load_toml(_write(tmp_path / "ok.toml", b"a = 1\n")) == {"a": 1}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@given(st.binary(max_size=64))
def test_any_bytes_give_the_table_or_one_line_naming_the_file(data):
    # Whatever a file holds, the loader returns tomllib's table, or raises a ProfileError whose
    # one line starts with the label; never UnicodeDecodeError or TOMLDecodeError.
    try:
        expected = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        expected = None
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder) / "f.toml", data)
        if expected is not None:
            assert _config.load_toml(path, "f.toml") == expected
            return
        with pytest.raises(ProfileError, match=r"^f\.toml: not (valid TOML:|UTF-8 text) [^\n]*$"):
            _config.load_toml(path, "f.toml")


@pytest.mark.parametrize("kind", list(LOADERS))
def test_an_endless_file_is_refused_without_reading_it_all(tmp_path, kind):
    # /dev/zero never ends: read up to the 16 MiB limit, then refused (issue 28 item 5).
    path = tmp_path / "zero.toml"
    path.symlink_to("/dev/zero")
    with pytest.raises(UsageError, match=r"zero\.toml is larger than 16 MiB"):
        LOADERS[kind](path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1.0"])
def test_no_number_in_a_file_is_nan_or_infinite(tmp_path, value):
    # NaN passes a `value < 0` check: every loader tests finiteness first (errors.is_number),
    # and names the key (issue 28 item 9: walk_ns = nan, batch = inf were accepted).
    host = tmp_path / "host.toml"
    write_host_toml(host)
    host.write_text(re.sub(r"(?m)^walk_ns = .*$", f"walk_ns = {value}", host.read_text()))
    nic_profile = (
        f'name = "x"\nsource = "y"\n[params]\nbatch = {value}\n[[rx]]\nwhat = "a"\n'
        'initiator = "dma_read"\nsize = "batch"\nevery = 1\n'
    )
    shipped = (platforms.PLATFORM_DIR / "skylake-sp.toml").read_text()
    platform = re.sub(r"(?m)^(\[iommu\.walk_ns\]\nvalue = ).*$", rf"\g<1>{value}", shipped)
    assert platform != shipped
    cases = {
        "host": (host, "walk_ns"),
        "nic": (nic_profile, "batch"),
        "platform": (platform, "walk_ns"),
    }
    for kind, (text_or_path, key) in cases.items():
        path = (
            text_or_path
            if isinstance(text_or_path, Path)
            else _write(tmp_path / f"{kind}.toml", text_or_path.encode())
        )
        load = platforms.load_platform_profile if kind == "platform" else LOADERS[kind]
        with pytest.raises(ProfileError) as caught:
            load(path)
        assert key in str(caught.value)
        if value != "-1.0":  # (a negative number is refused by each range, in its words)
            assert "finite" in str(caught.value), caught.value


def test_a_toml_text_is_parsed_once_and_each_caller_gets_its_own_tables(tmp_path, monkeypatch):
    # _config._tables (issue 30: the package's one cache): an `iommu sim` point loads the same
    # dozen files; parsed once per process, while a caller that changes what it got changes
    # no other caller's tables.
    path = tmp_path / "p.toml"
    path.write_text("a = 1\n[t]\nb = [1, 2]\n")
    parses = []
    parse = tomllib.loads
    monkeypatch.setattr(_config.tomllib, "loads", lambda text: parses.append(text) or parse(text))
    _config._tables.cache_clear()
    first = _config.load_toml(path)
    first["t"]["b"].append(3)
    second = _config.load_toml(path)
    assert second == {"a": 1, "t": {"b": [1, 2]}}
    assert len(parses) == 1
    path.write_text("a = 2\n")  # a changed file is a new text: parsed again
    assert _config.load_toml(path) == {"a": 2}
    assert len(parses) == 2
