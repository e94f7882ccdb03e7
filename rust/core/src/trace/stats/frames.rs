//! How records become frames (for sizes and bursts), which depends on every interface of a
//! file, and the watch that notices when an interface defined late changes the rule.

use super::{resolution_ns, StatsConfig};
use crate::trace::read::Reader;
use crate::trace::Interface;

/// How records become frames for sizes and bursts; it depends on every interface of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::trace) struct FrameRule {
    /// Every link type has an Ethernet equivalent (else frames are sized by wire length).
    pub(in crate::trace) ethernet: bool,
    /// Link header bytes per interface.
    headers: Vec<i64>,
    /// The coarsest timestamp resolution of the interfaces, in ns.
    resolution_ns: i64,
}

impl FrameRule {
    pub(in crate::trace) fn new(interfaces: &[Interface], config: &StatsConfig) -> Self {
        let header = |t: u16| {
            config
                .link_header_bytes
                .iter()
                .find(|h| h.0 == t)
                .map(|h| h.1)
        };
        FrameRule {
            ethernet: interfaces.iter().all(|i| header(i.linktype).is_some()),
            headers: interfaces
                .iter()
                .map(|i| header(i.linktype).unwrap_or(0))
                .collect(),
            resolution_ns: interfaces
                .iter()
                .map(|i| resolution_ns(i.tsresol))
                .fold(1, i64::max),
        }
    }

    /// The rule of a file whose packets are all on Ethernet or a link type with an Ethernet
    /// equivalent, checked by the caller (an interface of another type that carries no packet
    /// does not change it).
    pub(in crate::trace) fn ethernet(interfaces: &[Interface], config: &StatsConfig) -> Self {
        FrameRule {
            ethernet: true,
            ..Self::new(interfaces, config)
        }
    }

    /// Whether a later rule sizes and times the packets already counted as this one did.
    pub(in crate::trace) fn agrees(&self, later: &FrameRule) -> bool {
        self.ethernet == later.ethernet && self.resolution_ns == later.resolution_ns
    }

    /// Frame bytes with FCS, padded to the minimum, where the link type allows; else the wire
    /// length.
    pub(in crate::trace) fn frame(&self, wirelen: u32, iface: u32, config: &StatsConfig) -> i64 {
        if !self.ethernet {
            return i64::from(wirelen);
        }
        let frame = i64::from(wirelen) - self.headers[iface as usize]
            + config.ethernet_header_bytes
            + config.fcs_bytes;
        frame.max(config.min_frame_bytes)
    }
}

/// The frame rule of a file read in one pass, following interfaces that appear mid-file, and
/// whether packets were already sized under a rule the final one disagrees with (`stale`: the
/// file must be read again with the final rule). A `fixed` rule, learnt by an earlier read,
/// never changes.
pub(in crate::trace) struct RuleWatch {
    pub(in crate::trace) rule: FrameRule,
    seen: usize,
    fixed: bool,
    stale: bool,
}

impl RuleWatch {
    pub(in crate::trace) fn new(
        reader: &Reader,
        config: &StatsConfig,
        fixed: Option<&FrameRule>,
    ) -> Self {
        RuleWatch {
            rule: fixed
                .cloned()
                .unwrap_or_else(|| FrameRule::new(reader.interfaces(), config)),
            seen: reader.interfaces().len(),
            fixed: fixed.is_some(),
            stale: false,
        }
    }

    /// After a record is read (before it is counted, `counted` packets so far): the new rule
    /// where the reader's interfaces changed.
    pub(in crate::trace) fn changed(
        &mut self,
        reader: &Reader,
        config: &StatsConfig,
        counted: u64,
    ) -> Option<&FrameRule> {
        if self.fixed || reader.interfaces().len() == self.seen {
            return None;
        }
        self.seen = reader.interfaces().len();
        let later = FrameRule::new(reader.interfaces(), config);
        self.stale |= counted > 0 && !self.rule.agrees(&later);
        self.rule = later;
        Some(&self.rule)
    }

    /// At the end of the file (`counted` packets): the rule its interfaces give, and whether
    /// the packets must be read again under it.
    pub(in crate::trace) fn finish(
        self,
        reader: &Reader,
        config: &StatsConfig,
        counted: u64,
    ) -> (FrameRule, bool) {
        let last = FrameRule::new(reader.interfaces(), config);
        let stale = self.stale || (counted > 0 && !self.rule.agrees(&last));
        (last, stale)
    }
}

/// The largest gap after a frame that keeps the next packet back to back with it: the frame's
/// wire time at line rate plus the timestamp resolution, in the operations (and so the
/// roundings) of the numpy expression it replaces.
pub(in crate::trace) fn back_to_back_ns(frame: i64, rule: &FrameRule, config: &StatsConfig) -> f64 {
    let wire_ns = ((frame + config.overhead_bytes) * 8) as f64 / config.eth_gbps;
    wire_ns + rule.resolution_ns as f64
}
