//! Partials as bytes, for shipping them between processes (Dask pickles them).
//!
//! Every integer is LEB128 (7 bits a byte, low bits first; a signed one zigzag-mapped first, so
//! small magnitudes of either sign are short), and the distinct gaps are sent as the differences
//! between neighbours (ascending, so non-negative): a partial of 500 000 packets with ~6 300
//! distinct gaps is ~3 bytes a gap instead of 16, so the driver receives and decodes ~5x fewer
//! bytes per file (docs/scale.md). A list is its length, then its items.

use super::demand::{DemandAcc, DemandPeaks, SizeCounts};
use super::edges::Edges;
use super::gaps::GapDist;
use super::Partial;
use crate::trace::read::Quirks;
use crate::trace::stats::bursts::Chain;
use crate::trace::stats::window_peaks::Window;
use crate::trace::stats::ReadFacts;
use crate::trace::stats::{Counted, Totals};
use crate::trace::Interface;
use crate::CoreError;

const MAGIC: &[u8; 8] = b"PCPART04";

/// The bytes of a partial as they are written.
struct Enc(Vec<u8>);

impl Enc {
    fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    fn u64s(&mut self, values: impl IntoIterator<Item = u64>) {
        for v in values {
            self.u64(v);
        }
    }

    fn list<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Self, &T)) {
        self.u64(items.len() as u64);
        for one in items {
            item(self, one);
        }
    }

    fn str(&mut self, v: &str) {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v.as_bytes());
    }

    fn opt_str(&mut self, v: Option<&str>) {
        self.u64(u64::from(v.is_some()));
        if let Some(s) = v {
            self.str(s);
        }
    }

    fn facts(&mut self, f: &ReadFacts) {
        self.str(&f.format);
        self.str(&f.compression);
        self.list(&f.interfaces, Self::interface);
        self.u64s([f.skipped, f.untimed]);
        let q = &f.quirks;
        self.u64s([q.snaplen_exceeded, q.wirelen_below_caplen, q.ts_wrapped]);
        self.u64(u64::from(f.reads));
        self.opt_str(f.cut_short.as_deref());
    }

    fn interface(&mut self, i: &Interface) {
        let (linktype, tsresol) = (u64::from(i.linktype), u64::from(i.tsresol));
        self.u64s([linktype, u64::from(i.snaplen), tsresol]);
        self.i64(i.tsoffset_s);
        self.opt_str(i.name.as_deref());
        self.u64(u64::from(i.section));
    }

    fn totals(&mut self, t: &Totals) {
        self.u64s([t.packets, t.bytes_captured, t.bytes_wire]);
        self.i64(t.first_ts_ns);
        self.i64(t.last_ts_ns);
    }

    fn chain(&mut self, c: &Chain) {
        let broken = u64::from(c.broken);
        let runs = [c.bursts, c.packets_in_bursts, c.max_burst];
        self.u64s([c.head, c.tail, broken].into_iter().chain(runs));
    }

    fn edges(&mut self, w: &Edges) {
        self.list(&w.edges, |e, x: &Window| {
            e.u64s([x.index, x.packets, x.bits, x.frame_bits]);
        });
        let (packets, bits, frame_bits) = w.inner.unwrap_or_default();
        self.u64s([u64::from(w.inner.is_some()), packets, bits, frame_bits]);
    }

    fn gaps(&mut self, g: &GapDist) {
        self.u64(g.n);
        self.i64(g.min);
        let mut prev = 0i64;
        self.list(&g.values, |e, &(gap, count)| {
            e.i64(gap.wrapping_sub(prev));
            e.u64(count);
            prev = gap;
        });
    }

    fn sizes(&mut self, counts: &SizeCounts) {
        self.list(counts, |e, &(frame, n)| {
            e.i64(frame);
            e.u64(n);
        });
    }

    fn demand(&mut self, d: &DemandAcc) {
        self.list(&d.edges, |e, (index, counts)| {
            e.u64(*index);
            e.sizes(counts);
        });
        self.u64s([d.inner.up.to_bits(), d.inner.down.to_bits(), d.inner.over]);
        self.sizes(&d.sizes);
        self.u64(u64::from(d.unpriced.is_some()));
        self.i64(d.unpriced.unwrap_or(0));
    }
}

/// The bytes of a partial still to be read.
struct Dec<'a>(&'a [u8]);

/// Why the bytes are not a partial.
fn undecodable(why: impl Into<String>) -> CoreError {
    CoreError::Undecodable(why.into())
}

impl Dec<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], CoreError> {
        if self.0.len() < n {
            return Err(undecodable("the partial's bytes end early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, CoreError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1)?[0];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(undecodable(
            "the partial holds an integer longer than 64 bits",
        ))
    }

    fn i64(&mut self) -> Result<i64, CoreError> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn flag(&mut self) -> Result<bool, CoreError> {
        Ok(self.u64()? == 1)
    }

    /// An integer that fits a narrower type, `what` naming it where it does not.
    fn narrow<T: TryFrom<u64>>(&mut self, what: &str) -> Result<T, CoreError> {
        let v = self.u64()?;
        T::try_from(v).map_err(|_| undecodable(format!("the partial's {what} is out of range")))
    }

    fn len(&mut self) -> Result<usize, CoreError> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.0.len())
            .ok_or_else(|| {
                undecodable(format!(
                    "the partial names {n} items, more than its bytes hold"
                ))
            })
    }

    fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, CoreError>,
    ) -> Result<Vec<T>, CoreError> {
        (0..self.len()?).map(|_| item(self)).collect()
    }

    fn str(&mut self) -> Result<String, CoreError> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| undecodable(e.to_string()))
    }

    fn opt_str(&mut self) -> Result<Option<String>, CoreError> {
        Ok(if self.flag()? {
            Some(self.str()?)
        } else {
            None
        })
    }

    fn facts(&mut self) -> Result<ReadFacts, CoreError> {
        Ok(ReadFacts {
            format: self.str()?,
            compression: self.str()?,
            interfaces: self.list(Self::interface)?,
            skipped: self.u64()?,
            untimed: self.u64()?,
            quirks: Quirks {
                snaplen_exceeded: self.u64()?,
                wirelen_below_caplen: self.u64()?,
                ts_wrapped: self.u64()?,
            },
            reads: self.narrow("read count")?,
            cut_short: self.opt_str()?,
        })
    }

    fn interface(&mut self) -> Result<Interface, CoreError> {
        Ok(Interface {
            linktype: self.narrow("link type")?,
            snaplen: self.narrow("snaplen")?,
            tsresol: self.narrow("timestamp resolution")?,
            tsoffset_s: self.i64()?,
            name: self.opt_str()?,
            section: self.narrow("section")?,
        })
    }

    fn totals(&mut self) -> Result<Totals, CoreError> {
        Ok(Totals {
            packets: self.u64()?,
            bytes_captured: self.u64()?,
            bytes_wire: self.u64()?,
            first_ts_ns: self.i64()?,
            last_ts_ns: self.i64()?,
        })
    }

    fn chain(&mut self) -> Result<Chain, CoreError> {
        Ok(Chain {
            head: self.u64()?,
            tail: self.u64()?,
            broken: self.flag()?,
            bursts: self.u64()?,
            packets_in_bursts: self.u64()?,
            max_burst: self.u64()?,
        })
    }

    fn window(&mut self) -> Result<Window, CoreError> {
        Ok(Window {
            index: self.u64()?,
            packets: self.u64()?,
            bits: self.u64()?,
            frame_bits: self.u64()?,
        })
    }

    fn edges(&mut self) -> Result<Edges, CoreError> {
        let edges = self.list(Self::window)?;
        let present = self.flag()?;
        let inner = (self.u64()?, self.u64()?, self.u64()?);
        Ok(Edges {
            edges,
            inner: present.then_some(inner),
        })
    }

    fn gaps(&mut self) -> Result<GapDist, CoreError> {
        let (n, min) = (self.u64()?, self.i64()?);
        let mut prev = 0i64;
        let values = self.list(|d| {
            prev = prev.wrapping_add(d.i64()?);
            Ok((prev, d.u64()?))
        })?;
        Ok(GapDist { n, min, values })
    }

    fn sizes(&mut self) -> Result<SizeCounts, CoreError> {
        self.list(|d| Ok((d.i64()?, d.u64()?)))
    }

    fn demand(&mut self) -> Result<DemandAcc, CoreError> {
        let edges = self.list(|d| Ok((d.u64()?, d.sizes()?)))?;
        let inner = DemandPeaks {
            up: f64::from_bits(self.u64()?),
            down: f64::from_bits(self.u64()?),
            over: self.u64()?,
        };
        let sizes = self.sizes()?;
        let (present, frame) = (self.flag()?, self.i64()?);
        Ok(DemandAcc {
            edges,
            inner,
            sizes,
            unpriced: present.then_some(frame),
            ..DemandAcc::default()
        })
    }
}

impl Partial {
    /// The partial as bytes (`from_bytes` reads them back): its size is that of its distinct
    /// gaps (2-4 bytes each where they are dense, up to 20) plus a few hundred bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc(MAGIC.to_vec());
        e.facts(&self.facts);
        e.i64(self.origin);
        let c = &self.counted;
        e.totals(&c.totals);
        e.list(&c.per_interface, Enc::totals);
        e.u64s([c.out_of_order, c.max_step_back_ns]);
        e.list(&c.directions, |e, d| e.u64s(*d));
        e.i64(self.first_record_ts);
        e.i64(self.last_record_ts);
        e.list(&self.windows, Enc::edges);
        e.list(&self.sizes, |e, &n| e.u64(n));
        e.list(&self.frame_bytes, |e, &n| e.u64(n));
        for v in [self.first.0, self.first.1, self.last.0, self.last.1] {
            e.i64(v);
        }
        e.chain(&self.chain);
        e.chain(&self.equal);
        e.gaps(&self.gaps);
        e.u64(u64::from(self.demand.is_some()));
        if let Some(d) = &self.demand {
            e.demand(d);
        }
        e.0
    }

    /// A partial from `to_bytes`; fails on bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Result<Partial, CoreError> {
        let mut d = Dec(bytes);
        if d.take(MAGIC.len())? != MAGIC {
            return Err(undecodable(
                "not a pcieperf trace partial (or one of another version)",
            ));
        }
        let partial = Partial {
            facts: d.facts()?,
            origin: d.i64()?,
            counted: Counted {
                totals: d.totals()?,
                per_interface: d.list(Dec::totals)?,
                out_of_order: d.u64()?,
                max_step_back_ns: d.u64()?,
                directions: d.list(|d| Ok([d.u64()?, d.u64()?, d.u64()?]))?,
            },
            first_record_ts: d.i64()?,
            last_record_ts: d.i64()?,
            windows: d.list(Dec::edges)?,
            sizes: d.list(Dec::u64)?,
            frame_bytes: d.list(Dec::u64)?,
            first: (d.i64()?, d.i64()?),
            last: (d.i64()?, d.i64()?),
            chain: d.chain()?,
            equal: d.chain()?,
            gaps: d.gaps()?,
            demand: if d.flag()? { Some(d.demand()?) } else { None },
        };
        if !d.0.is_empty() {
            return Err(undecodable("the partial has bytes after its end"));
        }
        Ok(partial)
    }
}
