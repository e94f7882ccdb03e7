//! Finding the next plausible record after damage (`skip_bad`): a pcap record header whose
//! chain of followers holds up, or a pcapng block whose trailer repeats its length.

use super::{read_u32, Fault, Layout, Reader, OPB_TYPE, PCAP_RECORD_HEADER_BYTES, SHB_TYPE};

/// Block types a pcapng resync accepts as a fresh start (pcapng §4 and the block registry).
const KNOWN_BLOCK_TYPES: [u32; 11] = [SHB_TYPE, 1, OPB_TYPE, 3, 4, 5, 6, 7, 10, 0xBAD, 0x4000_0BAD];
/// A resynchronised pcap record must lie within this many seconds of the last good one.
const RESYNC_MAX_STEP_S: i64 = 86_400;
/// Largest block a pcapng resync takes as a fresh start: a maximal Enhanced Packet Block with
/// its options fits; random bytes that only claim a huge length are not buffered to be checked.
const RESYNC_MAX_BLOCK_BYTES: usize = 1 << 20;

impl Reader {
    /// Moves the read position past a damaged record: to its end when its framing is intact,
    /// else to the next plausible record start. False when none follows (the position is then
    /// the end of the capture).
    pub(super) fn resync(&mut self) -> Result<bool, Fault> {
        match self.layout {
            Layout::Pcap { big_endian, nanos } => self.resync_pcap(big_endian, nanos),
            Layout::PcapNg { big_endian, .. } => self.resync_pcapng(big_endian),
        }
    }

    fn resync_pcap(&mut self, big_endian: bool, nanos: bool) -> Result<bool, Fault> {
        if self.fill(PCAP_RECORD_HEADER_BYTES)? == PCAP_RECORD_HEADER_BYTES {
            let caplen = read_u32(self.stream.available(), 8, big_endian) as usize;
            if caplen <= self.max_block {
                let end = PCAP_RECORD_HEADER_BYTES + caplen;
                let have = self.fill(end + 1)?;
                if have == end
                    || self
                        .pcap_header_plausible(end, big_endian, nanos, None, false)?
                        .is_some()
                {
                    self.stream.consume(end);
                    return Ok(true);
                }
            }
        }
        self.scan(|reader| reader.pcap_chain_plausible(big_endian, nanos))
    }

    fn resync_pcapng(&mut self, big_endian: bool) -> Result<bool, Fault> {
        let max_block = self.max_block;
        if let Some(len) = self.block_plausible(big_endian, max_block)? {
            self.stream.consume(len);
            return Ok(true);
        }
        // Byte by byte, not by 4: damage may have shifted the blocks that follow.
        self.scan(|reader| {
            Ok(reader
                .block_plausible(big_endian, RESYNC_MAX_BLOCK_BYTES)?
                .is_some())
        })
    }

    /// Drops bytes one at a time until `found` holds at the read position (true) or the
    /// capture ends (false).
    fn scan(
        &mut self,
        mut found: impl FnMut(&mut Self) -> Result<bool, Fault>,
    ) -> Result<bool, Fault> {
        loop {
            if self.fill(1)? == 0 {
                return Ok(false);
            }
            self.stream.consume(1);
            if found(self)? {
                return Ok(true);
            }
        }
    }

    /// A record header at the read position that looks sane and is followed by another such
    /// header within a day of it (whose record may run past a cut end), the end of the
    /// capture, or a tail too short for a record header.
    fn pcap_chain_plausible(&mut self, big_endian: bool, nanos: bool) -> Result<bool, Fault> {
        let last_sec = self.last_ts.div_euclid(1_000_000_000);
        let near = self.timed.then_some(last_sec);
        let Some((end, sec)) = self.pcap_header_plausible(0, big_endian, nanos, near, false)?
        else {
            return Ok(false);
        };
        Ok(
            self.fill(end + PCAP_RECORD_HEADER_BYTES)? < end + PCAP_RECORD_HEADER_BYTES
                || self
                    .pcap_header_plausible(end, big_endian, nanos, Some(sec), true)?
                    .is_some(),
        )
    }

    /// Where the record `rel` bytes past the read position ends (relative) and its second, if
    /// its header is plausible, within a day of `near_sec` where given, and the record is whole
    /// (or, with `cut_ok`, runs past the end of the capture).
    fn pcap_header_plausible(
        &mut self,
        rel: usize,
        big_endian: bool,
        nanos: bool,
        near_sec: Option<i64>,
        cut_ok: bool,
    ) -> Result<Option<(usize, i64)>, Fault> {
        if self.fill(rel + PCAP_RECORD_HEADER_BYTES)? < rel + PCAP_RECORD_HEADER_BYTES {
            return Ok(None);
        }
        let head = &self.stream.available()[rel..];
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let (sec, frac, caplen, wirelen) = (i64::from(field(0)), field(1), field(2), field(3));
        // Zero-filled or random bytes rarely hold a time within a day of a real one.
        let near = near_sec.is_none_or(|s| (sec - s).abs() <= RESYNC_MAX_STEP_S);
        let frac_ok = frac < if nanos { 1_000_000_000 } else { 1_000_000 };
        let len_ok = wirelen > 0 && caplen <= self.interfaces[0].snap_limit() && caplen <= wirelen;
        if !(near && frac_ok && len_ok) {
            return Ok(None);
        }
        let end = rel + PCAP_RECORD_HEADER_BYTES + caplen as usize;
        Ok((cut_ok || self.fill(end)? >= end).then_some((end, sec)))
    }

    /// The length of a whole, self-consistent pcapng block of a known type, at most `max`
    /// bytes, at the read position.
    fn block_plausible(&mut self, big_endian: bool, max: usize) -> Result<Option<usize>, Fault> {
        if self.fill(12)? < 12 {
            return Ok(None);
        }
        let head = self.stream.available();
        let block_type = read_u32(head, 0, big_endian);
        let len = read_u32(head, 4, big_endian) as usize;
        if !KNOWN_BLOCK_TYPES.contains(&block_type)
            || len < 12
            || !len.is_multiple_of(4)
            || len > max
        {
            return Ok(None);
        }
        if self.fill(len)? < len {
            return Ok(None);
        }
        let trailer = read_u32(self.stream.available(), len - 4, big_endian) as usize;
        Ok((trailer == len).then_some(len))
    }
}
