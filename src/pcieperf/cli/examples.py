"""The example line at the end of each command's --help: real files from a clone's root
(tests/data, ../shared/data) or files an earlier example writes, so that each runs as pasted
(tests/cli/test_examples_run.py runs them all, scripts/golden_json.py replays their JSON)."""

HOST = "../shared/data/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
PCM = "tests/data/counters/pcm-iio-skx.csv"
CAPTURES = "tests/data/dpdk2211"
EXAMPLES = {
    "link": "pcieperf link --gen 4 --lanes 16",
    "dma": "pcieperf dma --op read --sizes 64,256,1500 --mrrs 512",
    "nic": "pcieperf nic --profile dpdk --eth 100 --sizes 64,256,1518,imix",
    "profiles": "pcieperf profiles mlx5-dpdk",
    "devices": "pcieperf devices --lspci ../shared/data/lspci/11-cx4lx-x8-to-x4-okmarkers.txt",
    "latency": f"pcieperf latency --profile bypass --sizes 64,128,512,1500 --host {HOST}",
    "dpdk-fwd": "pcieperf dpdk-fwd --pps 14.88M --frame 64 --batch-hist 0:1000,4:5000,32:200",
    "explain": f"pcieperf explain --counters {PCM} --pps 10M --frame 64",
    "dpdk": f"pcieperf dpdk run --pcap {CAPTURES}/one-lcore-640.pcap --seconds 3 -- --burst=16",
    "dpdk run": f"pcieperf dpdk run --pcap {CAPTURES}/one-lcore-640.pcap --seconds 3 -- --burst=16",
    "dpdk runs": "pcieperf dpdk runs --json",
    "capture": "pcieperf capture model --design per-packet --sizes 64,256,320",
    "capture run": "pcieperf capture run --frame 1500 --sink tmpfs --seconds 2",
    "capture runs": "pcieperf capture runs --json",
    "capture show": "pcieperf capture show 1",
    "capture model": "pcieperf capture model --design contiguous --sizes 64,128,imix --sink tmpfs",
    "capture probe": "pcieperf capture probe --repeats 3",
    "capture calibrate": "pcieperf capture calibrate --csv tests/data/capture/probed-runs.csv "
    "-o capture.toml",
    "dpdk fwd": "pcieperf dpdk fwd --pps 14.88Mpps --frame 64 --batch 32",
    "data": "pcieperf data import ../shared/data/pcie-bench/*/",
    "data import": "pcieperf data import ../shared/data/pcie-bench/*/",
    "data ls": "pcieperf data ls",
    "data show": "pcieperf data show dell-t630 --test BW_RD",
    "data plot": "pcieperf data plot --view window --size 64 -o window.png",
    "bench": "pcieperf bench tests",
    "bench tests": "pcieperf bench tests",
    "bench sim": f"pcieperf bench sim --host {HOST} --device nfp6000 --test BW_DMA_RD",
    "bench calibrate": "pcieperf bench calibrate ../shared/data/pcie-bench/*/ -o cal.toml",
    "bench predict": f"pcieperf bench predict --host {HOST} --out predicted/",
    "bench host": f"pcieperf bench host {HOST} -o host.toml",
    "validate": f"pcieperf validate --measured {HOST} --predicted predicted/ --plot v.png",
    "iommu": "pcieperf iommu sim --page 4k --rxd 1024 --frame 64",
    "iommu sim": "pcieperf iommu sim --page 4k --rxd 1024 --frame 64",
    "iommu gain": "pcieperf iommu gain --from-rxd 1024 --to-rxd 128 --sizes 64,imix",
    "iommu advise": "pcieperf iommu advise --page 4k --frame 64 --plot advice.png",
    "iommu fit": f"pcieperf iommu fit --counters {PCM} --pps 7M --rxd 1024 --frame 64 -o my.toml",
    "platforms": "pcieperf platforms skylake-sp",
    "trace": f"pcieperf trace stats {CAPTURES}/two-lcores-256.pcapng",
    "trace stats": f"pcieperf trace stats --brief {CAPTURES}/one-lcore-640.pcap "
    f"{CAPTURES}/two-lcores-256.pcapng",
    "trace demand": f"pcieperf trace demand '{CAPTURES}/*.pcap*' --archive --gen 4",
    "trace merge": f"pcieperf trace merge {CAPTURES}/one-lcore-640.pcap "
    f"{CAPTURES}/two-lcores-256.pcapng -o merged.pcapng",
    "trace synth": "pcieperf trace synth --sizes imix --pps 10M --duration 10ms -o imix.pcap",
    "trace convert": f"pcieperf trace convert {CAPTURES}/one-lcore-640.pcap new.pcapng",
    "counters": f"pcieperf counters import {PCM}",
    "counters import": f"pcieperf counters import {PCM} --counters-format pcm-iio --force",
    "counters ls": "pcieperf counters ls",
    "counters show": "pcieperf counters show 1",
    "counters rm": "pcieperf counters rm 1",
    "report": "pcieperf report -o pcieperf-report",
    "sweep": "pcieperf sweep tests/data/sweep-dma.toml -o grid.parquet --scheduler local:2",
}
"""One example line per command and command group, shown at the end of its --help."""
# Examples that need what a user makes first, after what makes it (each key once, in this
# order; the rest run before them in EXAMPLES' order).
AFTER = (
    "data import",
    "data show",
    "data plot",
    "bench predict",
    "validate",
    "counters import",
    "counters ls",
    "counters show",
    "counters rm",
    "capture run",
    "capture show",
)


def ordered() -> list[tuple[str, str]]:
    """Each distinct example line once (a group repeats one of its commands'), in run order."""
    keys = [k for k in EXAMPLES if k not in AFTER] + list(AFTER)
    seen: set[str] = set()
    lines = []
    for key in keys:
        line = EXAMPLES[key]
        if line not in seen:
            seen.add(line)
            lines.append((key, line))
    return lines


def readme_lines(readme: str) -> list[str]:
    """The command lines of a README's "What it answers" block, in order."""
    block = readme.split("## What it answers", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]
