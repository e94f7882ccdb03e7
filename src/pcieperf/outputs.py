"""Publishing output files whole: written under a temporary name beside the output, then given
the output's name in one step, so that a reader never sees half a file and a failure leaves no
output behind (the caller removes the temporary)."""

from __future__ import annotations

import os
from pathlib import Path

from pcieperf.errors import UsageError


def temporary_beside(output: str | os.PathLike) -> Path:
    """A fresh name beside `output` for the file being written. It is not created here: the
    writer creates it like any new file, so it gets the user's umask (a mkstemp file would stay
    0600)."""
    out = Path(output)
    return out.parent / f".{out.name}.{os.urandom(8).hex()}.part"


def publish(tmp: Path, output: Path, force: bool) -> None:
    """Give the complete file `tmp` the name `output`: a hard link, which fails if `output`
    exists by now (no clobbering, atomic), or with `force` a rename over it; `tmp` is gone
    either way."""
    try:
        if force:
            tmp.replace(output)
        else:
            os.link(tmp, output)
    except FileExistsError:
        raise UsageError(f"{output} exists; pass --force to overwrite it") from None
    finally:
        tmp.unlink(missing_ok=True)
