"""The docs are checked against the code (issue 44): every link and every `docs/*.md` they name
resolves, every `pcieperf` line of their shell blocks parses and reads files that exist or that
a documented line writes, docs/api.md's headings are the code's signatures, and the layout the
README, CONTRIBUTING and the package docstring describe is the packages' (each package and
data folder named, under its own package)."""

import re
import shlex
from pathlib import Path

import pytest

import pcieperf
from pcieperf.cli import build_parser
from pcieperf.cli.examples import readme_lines
from tests.helpers import ROOT, SHARED
from tests.helpers.scripts import load

DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS]
PACKAGE = Path(pcieperf.__file__).parent
PACKAGES = sorted(
    p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file() and p.name != "cli"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_DOC = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)(#[\w-]+)?")
SHELL = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.MULTILINE | re.DOTALL)
OUTPUT_FLAGS = {"-o", "--out", "--output", "--plot", "--points", "--fit-out"}
INPUT = re.compile(r"\.(toml|pcap|pcapng|csv|txt|gz|zst|parquet)$")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation gone, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)}


def named_targets(page: Path) -> list[str]:
    """The files (and anchors) a page links to or names as `docs/x.md`."""
    text = page.read_text()
    links = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    named = [f"{doc}{anchor}" for doc, anchor in NAMED_DOC.findall(text)]
    return links + named


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_and_named_doc_resolves(page):
    broken = []
    for target in named_targets(page):
        path, _, anchor = target.partition("#")
        candidates = [page.parent / path, ROOT / path, ROOT / "docs" / path] if path else [page]
        found = next((c for c in candidates if c.exists()), None)
        if found is None or (anchor and found.suffix == ".md" and anchor not in anchors(found)):
            broken.append(target)
    assert broken == []


def documented_lines() -> list[tuple[str, str]]:
    """(page, line) for every `pcieperf` line of the docs' shell blocks and the README's."""
    found = [("README.md", line) for line in readme_lines((ROOT / "README.md").read_text())]
    for page in PAGES:
        for block in SHELL.findall(page.read_text()):
            lines = [line.strip() for line in block.splitlines()]
            found += [(page.name, line) for line in lines if line.startswith("pcieperf ")]
    return list(dict.fromkeys(found))


def words(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def is_placeholder(word: str) -> bool:
    """A word that stands for the reader's own value: A.pcap, OUT.pcapng, HOSTDIR, [--x], ..."""
    return (
        bool(re.match(r"^[A-Z][A-Z0-9_]*(\.|$)", word))
        or any(c in word for c in "[|")
        or (word == "...")
    )


def outputs_of(line: str) -> set[str]:
    argv = words(line)
    return {argv[i + 1].rstrip("/") for i, w in enumerate(argv[:-1]) if w in OUTPUT_FLAGS}


PARSER = build_parser()
WRITTEN = {out for _, line in documented_lines() for out in outputs_of(line)}
WRITTEN |= {"imix.pcap", "merged.pcapng"}  # what README's trace synth and merge lines write


@pytest.mark.parametrize(("page", "line"), documented_lines())
def test_a_documented_line_parses_and_reads_what_exists(page, line):
    argv = words(line)[1:]
    if any(map(is_placeholder, argv)):
        pytest.skip("a line with the reader's own values")
    PARSER.parse_args(argv[: argv.index("--")] if "--" in argv else argv)  # else SystemExit 2
    read = [
        w
        for i, w in enumerate(argv)
        if INPUT.search(w) and not (i and argv[i - 1] in OUTPUT_FLAGS) and w not in WRITTEN
    ]
    missing = [w for w in read if not _exists(w)]
    assert missing == [], f"{page}: {line}"


def _exists(word: str) -> bool:
    """Whether a documented input is in the repository or the measured data (globs match;
    without the measured data, its paths are taken as they are written)."""
    if word.startswith("../shared"):
        if not SHARED.is_dir():
            return True
        word = word.replace("../shared/data", str(SHARED))
    base = Path(word) if Path(word).is_absolute() else ROOT / word
    return base.exists() or any(base.parent.glob(base.name))


def test_api_doc_headings_are_the_signatures():
    # docs/api.md's `### `pp.NAME(...)`` headings are what inspect.signature gives
    # (scripts/api_doc.py writes them).
    assert load(Path("scripts/api_doc.py")).stale((ROOT / "docs" / "api.md").read_text()) == []


def layout_entries(text: str) -> dict[str, str]:
    """Each package the README's Layout names (`name/`) and what it says it holds (its first
    item: src/pcieperf)."""
    section = text.split("## Layout", 1)[1].split("\n- ", 2)[1]
    found = {}
    for match in re.finditer(r"`(\w+)/`\s+\(", section):
        depth, k = 1, match.end()
        while depth and k < len(section):
            depth += {"(": 1, ")": -1}.get(section[k], 0)
            k += 1
        found[match.group(1)] = section[match.end() : k]
    return found


def test_the_readme_layout_names_every_package_and_its_data_folders():
    entries = layout_entries((ROOT / "README.md").read_text())
    assert set(PACKAGES) <= set(entries) | {"cli"}
    for name in PACKAGES:
        folders = [d.name for d in (PACKAGE / name).iterdir() if d.is_dir() and d.name[0] != "_"]
        for folder in folders:
            assert f"`{folder}/`" in entries[name], f"README's `{name}/` entry lacks `{folder}/`"


def test_contributing_and_the_package_docstring_list_every_package():
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    listed = re.search(r"One package per capability \(([^)]*)\)", contributing).group(1)
    assert sorted(re.findall(r"`(\w+)`", listed)) == PACKAGES
    assert [name for name in PACKAGES if f"`{name}`" not in pcieperf.__doc__] == []
