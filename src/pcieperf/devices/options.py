"""The options each model command takes from a device (`--device`), named as the commands'
options: the one list the CLI registers and `device_options` fills (light: the command lines
that offer `--device` import it at start-up)."""

COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "nic": ("gen", "lanes", "mps", "mrrs", "tags", "profile", "eth"),
    "latency": ("gen", "lanes", "mps", "mrrs", "tags", "profile", "eth"),
    "dpdk-fwd": ("gen", "lanes", "mps", "mrrs", "profile", "eth"),
    "iommu sim": ("gen", "lanes", "profile", "eth"),
}
