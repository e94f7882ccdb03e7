"""CONTRIBUTING.md is followed to the letter (issue 30: a newcomer adds a NIC profile and a
platform by the guide alone): its profile, saved as the guide says, loads and prices in every
command it names; a platform copied and renamed as it says runs the IOMMU commands. The counter
format recipe is tests/measure/test_counter_formats.py's, the capture tool recipe
tests/capture/test_tools.py's."""

import json
import re
import shutil

from pcieperf.iommu.profiles import platform_path
from tests.helpers import ROOT
from tests.helpers.cli import run_cli

GUIDE = (ROOT / "CONTRIBUTING.md").read_text()


def guide_block(marker):
    """The fenced block right after `<!-- contributing: marker -->` in the guide."""
    found = re.search(rf"<!-- contributing: {marker} -->\n```\w*\n(.*?)```", GUIDE, re.S)
    assert found, marker
    return found.group(1)


def run_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_guide_s_nic_profile_works_in_every_command_it_names(capsys, tmp_path):
    profile = tmp_path / "mynic.toml"
    profile.write_text(guide_block("nic-profile"))
    rows = run_json(capsys, "nic", "--profile", str(profile), "--sizes", "64,1518")
    # 64 B: three reads a packet (two descriptors, the packet), 32 tags on the assumed host:
    # tag-bound; 1518 B: the line (40 GbE).
    assert [r["limited_by"] for r in rows] == [["read_requests"], ["ethernet"]]
    assert (
        run_json(capsys, "latency", "--profile", str(profile), "--sizes", "64")[0]["tags_available"]
        == 32
    )
    fwd = run_json(capsys, "dpdk-fwd", "--profile", str(profile))
    assert fwd["limited_by"] == ["read_requests"]
    assert run_json(capsys, "profiles", str(profile))["name"] == "mynic"


def test_a_platform_copied_as_the_guide_says_runs(capsys, tmp_path):
    mine = tmp_path / "myplatform.toml"
    shutil.copy(platform_path("skylake-sp"), mine)
    mine.write_text(mine.read_text().replace('name = "skylake-sp"', 'name = "myplatform"', 1))
    sim = run_json(capsys, "iommu", "sim", "--platform", str(mine), "--packets", "20000")
    assert sim["platform"] == "myplatform"
    shown = run_json(capsys, "platforms", str(mine))
    assert (shown["name"], shown["file"]) == ("myplatform", str(mine))
