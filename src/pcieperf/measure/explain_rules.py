"""The rule set of `explain` (docs/explain.md, "The rule set"): for each metric and direction of
its deviation, the diagnosis; and the sentences of the rate hypothesis. Format fields: ratio,
measured_per_pkt, predicted_per_pkt (the rules); implied, given, how, agreeing, spread, factor,
side (the rate's). Data only: pcieperf.measure.explain applies them.
"""

from __future__ import annotations

# The rule set (docs/explain.md): (metric, direction of the deviation) -> diagnosis. Fields:
# ratio, measured_per_pkt, predicted_per_pkt.
RULES: dict[tuple[str, str], str] = {
    ("outbound_read", "above"): (
        "outbound reads present ({measured_per_pkt:.2f} B/packet): the driver reads device "
        "registers (MMIO), so it is not a poll-mode driver; a PMD learns ring positions from "
        "descriptor write-backs and never reads the device"
    ),
    ("outbound_read", "below"): (
        "outbound reads {ratio:.2f}x the prediction: the driver reads device registers less "
        "often than the profile assumes (a poll-mode driver reads none)"
    ),
    ("inbound_write", "above"): (
        "inbound writes {ratio:.2f}x the prediction: descriptor write-backs are not coalesced "
        "(one per packet rather than one per rs_thresh) or the device writes partial cache "
        "lines, each costing a full 64 B line (compare with --tx-wb-full-line)"
    ),
    ("inbound_write", "below"): (
        "inbound writes {ratio:.2f}x the prediction: fewer or smaller packets reach host memory "
        "than --pps/--pkt say (drops before DMA), or write-backs are coalesced beyond rs_thresh"
    ),
    ("inbound_read", "above"): (
        "inbound reads {ratio:.2f}x the prediction: descriptors are fetched one at a time rather "
        "than a cache line at a time, packets are larger than --pkt, or reads are retried"
    ),
    ("inbound_read", "below"): (
        "inbound reads {ratio:.2f}x the prediction: fewer packets are sent than received (Tx "
        "drops) or packets are smaller than --pkt"
    ),
    ("outbound_write", "above"): (
        "outbound writes {ratio:.2f}x the prediction: tail doorbells are written more often than "
        "the batch histogram implies (smaller batches, or rx_free_thresh below the batch)"
    ),
    ("outbound_write", "below"): (
        "outbound writes {ratio:.2f}x the prediction: batches are larger than the histogram says "
        "or doorbells are deferred further (a larger rx_free_thresh)"
    ),
    ("iotlb_miss", "above"): (
        "IOTLB misses {measured_per_pkt:.3f}/packet against {predicted_per_pkt:.3f} predicted: "
        "4 KiB pages with large rings and mbuf pool spread the working set over more pages than "
        "the IOTLB holds; see `pcieperf iommu advise`, and `--fit-iommu` to learn this host's "
        "IOTLB reach and walkers from these counters"
    ),
    ("iotlb_miss", "below"): (
        "IOTLB misses {ratio:.2f}x the prediction: pages are larger than --page or the working "
        "set (rings, pool) is smaller than modelled"
    ),
    ("device_to_host", "above"): (
        "device-to-host data {ratio:.2f}x the prediction: extra inbound writes (uncoalesced "
        "write-backs, partial lines) or outbound reads (a driver reading registers); the "
        "free-running counters cannot tell which"
    ),
    ("device_to_host", "below"): (
        "device-to-host data {ratio:.2f}x the prediction: fewer or smaller packets are written "
        "to host memory than --pps/--pkt say"
    ),
    ("host_to_device", "above"): (
        "host-to-device data {ratio:.2f}x the prediction: extra inbound reads (single descriptor "
        "fetches, larger packets) or outbound writes (more doorbells); the free-running "
        "counters cannot tell which"
    ),
    ("host_to_device", "below"): (
        "host-to-device data {ratio:.2f}x the prediction: fewer or smaller packets are sent "
        "than --pps/--pkt say"
    ),
}
RATE_RULE = (
    "the packet rate is about {implied} rather than the {given} given (or the counters cover "
    "other ports too): at that rate {how}"
)
RATE_EXPLAINS_ALL = "every metric matches the model"
RATE_EXPLAINS_QUORUM = "{agreeing} match the model and the others are diagnosed on their own"
RATE_UNRESOLVED = (
    "the metrics that scale with the rate disagree among themselves ({spread}), so which of them "
    "is off cannot be told; run again with --pps near {implied} for per-metric diagnoses"
)
MISTAKE_RULE = (
    "likely input mistake: the rate given ({given}) is {factor:.3g}x {side} the {implied} the "
    "counters imply"
)
