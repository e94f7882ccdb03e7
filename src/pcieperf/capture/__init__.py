"""DPDK packet capture (pdump, dpdk-dumpcap): real capture runs measured beside testpmd, the
capture path as a model, and its calibration from stored runs (issue 26)."""
