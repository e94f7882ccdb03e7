"""The DPDK processes of a capture run as pcieperf watches them: testpmd as the primary, its
statistics blocks sampled as they are printed, and the capture tool as a secondary, its
"capturing" line awaited; each started by `testpmd.launch` (it dies with pcieperf) and its
output read by a thread of its own."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import IO, TYPE_CHECKING

from pcieperf.capture import threads, tools
from pcieperf.capture.intervals import Sample
from pcieperf.dpdk import testpmd
from pcieperf.errors import PcieperfError

if TYPE_CHECKING:
    import subprocess

STOP_DEADLINE_S = 30.0


def _output(proc: subprocess.Popen[str]) -> IO[str]:
    """What a process `testpmd.launch` started prints (it always pipes it)."""
    assert proc.stdout is not None, "testpmd.launch pipes the output"
    return proc.stdout


class Watched:
    """A process `testpmd.launch` starts, each line it prints kept (`lines`) and handed to
    `_line` by a reader thread; a subclass sets what `_line` needs before this starts it."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.command = command
        self.lines: list[str] = []
        self.proc = testpmd.launch(command, env)
        self._output = _output(self.proc)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._output:
            self.lines.append(line)
            self._line(line)

    def _line(self, line: str) -> None:
        """What a line read means (the subclass's)."""

    def _close(self) -> None:
        """Wait for the reader to see the end of the output, then close it."""
        self._reader.join(timeout=STOP_DEADLINE_S)
        self._output.close()


class Primary(Watched):
    """testpmd as the primary process, its output read and sampled by a thread."""

    def __init__(self, command: list[str]) -> None:
        self.parsed = testpmd.OutputReader()
        self.samples: list[Sample] = []
        self._workers: list[int] = []
        super().__init__(command)

    def _line(self, line: str) -> None:
        before = self.parsed.blocks
        self.parsed.feed(line)
        if self.parsed.blocks != before:
            self._sample()

    def _sample(self) -> None:
        """Rx packets of the block just read, the forwarding lcores' CPU time and the
        host's steal now."""
        if not self._workers:
            self._workers = threads.worker_threads(self.proc.pid)
        packets = sum(p.nic_rx_packets for p in self.parsed.ports.values())
        cpu = threads.cpu_ns(self.proc.pid, self._workers)
        self.samples.append(Sample(time.monotonic(), packets, cpu, threads.steal_ns()))

    def check_alive(self) -> None:
        """A primary that exited on its own ends the run, with its reason."""
        if self.proc.poll() is not None:
            self._reader.join(timeout=STOP_DEADLINE_S)
            raise PcieperfError(
                f"testpmd exited (code {self.proc.returncode}): "
                f"{testpmd.cause(''.join(self.lines))}"
            )

    def stop(self) -> bool:
        """Stop testpmd (SIGINT, then SIGKILL); True if it had crashed instead of stopping."""
        testpmd.stop(self.proc)
        self._close()
        return self.proc.returncode not in (0, -signal.SIGINT)


class Tool(Watched):
    """A capture tool as a secondary process, its output read by a thread."""

    def __init__(self, row: tools.CaptureTool, command: list[str], preload: str) -> None:
        self.row = row
        self.capturing = threading.Event()
        super().__init__(command, dict(os.environ, LD_PRELOAD=preload) if preload else None)

    def _line(self, line: str) -> None:
        if self.row.capturing in line:
            self.capturing.set()

    def exited(self) -> bool:
        """Whether the tool has exited; it stays unreaped, so /proc still shows its totals."""
        info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is not None

    def reap(self) -> str:
        """Collect the exited tool and return all it printed."""
        self.proc.wait()
        self._close()
        return "".join(self.lines)

    def kill(self) -> None:
        """Stop the tool however it is, and close its output (cleanup)."""
        testpmd.stop(self.proc)
        self._close()
