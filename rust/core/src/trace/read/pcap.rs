//! Classic pcap records (draft-ietf-opsawg-pcap §5): header fields in the file's byte order,
//! times in µs or ns, taken straight from the buffer where they lie whole in it.

use super::{read_u32, Fault, Reader, Record, PCAP_RECORD_HEADER_BYTES};

impl Reader {
    pub(super) fn pcap_record(
        &mut self,
        big_endian: bool,
        nanos: bool,
    ) -> Result<Option<Record>, Fault> {
        let at = self.stream.offset();
        let have = self.fill(PCAP_RECORD_HEADER_BYTES)?;
        if have == 0 {
            self.finished = true;
            return Ok(None);
        }
        if have < PCAP_RECORD_HEADER_BYTES {
            return Err(Fault::CutShort(
                self.error(at, format!("truncated record header: {have} of 16 bytes")),
            ));
        }
        let head = self.stream.available();
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let (sec, frac, caplen, wirelen) = (field(0), field(1), field(2), field(3));
        self.check_caplen(at, caplen, 0).map_err(Fault::Damaged)?;
        let total = PCAP_RECORD_HEADER_BYTES + caplen as usize;
        let have = self.fill(total)?;
        if have < total {
            return Err(Fault::CutShort(self.error(
                at,
                format!(
                    "truncated record: caplen {caplen}, {} bytes left",
                    have - PCAP_RECORD_HEADER_BYTES
                ),
            )));
        }
        Ok(Some(
            self.take_pcap_record(nanos, [sec, frac, caplen, wirelen]),
        ))
    }

    /// The common case without a system call or a fault: a whole pcap record with an
    /// acceptable caplen is buffered at the read position (else `pcap_record` deals with it).
    #[inline(always)]
    pub(super) fn buffered_pcap_record(&mut self, big_endian: bool, nanos: bool) -> Option<Record> {
        let head = self.stream.available();
        if self.finished || head.len() < PCAP_RECORD_HEADER_BYTES {
            return None;
        }
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let fields = [field(0), field(1), field(2), field(3)];
        let caplen = fields[2];
        let whole = head.len() - PCAP_RECORD_HEADER_BYTES >= caplen as usize;
        (whole && caplen <= self.interfaces[0].caplen_limit())
            .then(|| self.take_pcap_record(nanos, fields))
    }

    /// Consumes the pcap record buffered whole at the read position, given its header fields
    /// (seconds, fraction, caplen, wire length).
    #[inline(always)]
    fn take_pcap_record(&mut self, nanos: bool, [sec, frac, caplen, wirelen]: [u32; 4]) -> Record {
        let at = self.stream.offset();
        let frac_ns = if nanos {
            i64::from(frac)
        } else {
            i64::from(frac) * 1000
        };
        let record = Record {
            ts_ns: i64::from(sec) * 1_000_000_000 + frac_ns,
            caplen,
            wirelen,
            iface: 0,
            data_offset: at + PCAP_RECORD_HEADER_BYTES as u64,
            direction: 0,
        };
        self.count_quirks(&record);
        self.stream
            .consume(PCAP_RECORD_HEADER_BYTES + caplen as usize);
        self.last_ts = record.ts_ns;
        self.timed = true;
        record
    }
}
