"""Summarize fuzz/logs/*.log (written by fuzz/campaign.sh) as a Markdown table: per target the
seconds fuzzed, executions, libFuzzer's final `cov:` (edges; for Python, atheris's
instrumented bytecode branches) and `ft:` (features), corpus size and crashes.

    python fuzz/summarize.py [LOG...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parent / "logs"


def last(pattern: str, text: str) -> str:
    """The first group of the last match of `pattern` in `text`, or '-'."""
    found = re.findall(pattern, text)
    return found[-1] if found else "-"


def crashes(text: str) -> str:
    """Distinct crashes: --keep-going's NEW lines (Python) or libFuzzer's crash/timeout lines."""
    if "INFO: Instrumenting pcieperf" in text:
        return str(len(re.findall(r"#keep-going: NEW", text)))
    stops = re.findall(r"==\d+== ERROR: libFuzzer: |ALARM: working on the last Unit", text)
    return str(len(stops))


def row(log: Path) -> str:
    """One table row for one target's log."""
    text = log.read_text(errors="replace")
    runs = int(last(r"stat::number_of_executed_units: (\d+)", text).replace("-", "0"))
    rate = int(last(r"stat::average_exec_per_sec: +(\d+)", text).replace("-", "0"))
    seconds = round(runs / rate) if rate else "-"
    cov, ft = last(r"cov: (\d+) ft: \d+", text), last(r"cov: \d+ ft: (\d+)", text)
    corpus = last(r"corp: (\d+)/", text)
    return f"| {log.stem} | {seconds} | {runs} | {cov} | {ft} | {corpus} | {crashes(text)} |"


def main() -> None:
    """Print the table for the named logs, or every log in fuzz/logs."""
    logs = [Path(a) for a in sys.argv[1:]] or sorted(LOGS.glob("*.log"))
    print("| target | seconds | executions | cov | ft | corpus | crashes |")
    print("|---|---|---|---|---|---|---|")
    for log in logs:
        print(row(log))


if __name__ == "__main__":
    main()
