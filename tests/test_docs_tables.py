"""The docs' tables of shipped data are generated from it (scripts/docs_tables.py), so a NIC
profile added to nic/profiles/ or a counter format added to `measure.counters.formats` cannot be
missing from the docs (issue 30: docs/model.md once listed 5 of the 6 profiles)."""

import subprocess
import sys

from pcieperf.nic.profile import builtin_profiles
from tests.helpers import ROOT

SCRIPT = ROOT / "scripts" / "docs_tables.py"


def test_the_doc_tables_are_what_the_profiles_give():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_shipped_profile_has_a_row_in_both_tables():
    doc = (ROOT / "docs" / "model.md").read_text()
    for table in ("nic-profiles", "nic-devices"):
        body = doc.split(f"<!-- BEGIN {table} -->")[1].split(f"<!-- END {table} -->")[0]
        assert {line.split("`")[1] for line in body.splitlines() if line.startswith("| `")} == set(
            builtin_profiles()
        ), table
