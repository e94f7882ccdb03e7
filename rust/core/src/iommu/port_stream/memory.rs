//! Host memory as the NIC's DMA sees it: transactions to rings and mbufs, through the LLC's
//! DDIO ways where they are modelled.

use super::layout::AddressMap;
use super::{cold_read_class, packet_read_class, TxnSink, LINE_BYTES};
use crate::iommu::ddio::Ddio;

/// Host memory as the NIC's DMA sees it: where rings and mbufs sit, and the LLC's DDIO ways
/// if modelled.
pub(super) struct Memory {
    pub(super) map: AddressMap,
    pub(super) ddio: Option<Ddio>,
}

/// One transaction to `emit`, as one that lies in one page ([`TxnSink::txn_in_page`]) when
/// `ONE_PAGE`.
#[inline(always)]
fn emit_txn<const ONE_PAGE: bool>(
    emit: &mut impl TxnSink,
    addr: u64,
    bytes: u64,
    class: usize,
    at: f64,
) {
    if ONE_PAGE {
        emit.txn_in_page(addr, bytes, class, at);
    } else {
        emit.txn(addr, bytes, class, at);
    }
}

/// `LLC` says whether the LLC is modelled (`ddio` is `Some`): a constant, so the stream
/// without it tests nothing per transaction. `ONE_PAGE`: the transfer lies in one page
/// ([`TxnSink::txn_in_page`]).
impl Memory {
    /// A device write: its lines are (re)allocated in the LLC's DDIO ways.
    #[inline]
    pub(super) fn write<const LLC: bool, const ONE_PAGE: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        bytes: u64,
        class: usize,
        at: f64,
    ) {
        if LLC {
            self.allocate(addr, bytes);
        }
        emit_txn::<ONE_PAGE>(emit, addr, bytes, class, at);
    }

    /// A device write of one whole descriptor line ([`TxnSink::line`]).
    #[inline]
    pub(super) fn write_line<const LLC: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        class: usize,
        at: f64,
    ) {
        if LLC {
            self.allocate(addr, LINE_BYTES);
        }
        emit.line(addr, class, at);
    }

    /// The DDIO ways take a device write's lines (out of line: without an LLC model the
    /// write is a push).
    #[inline(never)]
    fn allocate(&mut self, addr: u64, bytes: u64) {
        if let Some(ddio) = self.ddio.as_mut() {
            for line in self.map.lines(addr, bytes) {
                ddio.write(line);
            }
        }
    }

    /// A packet read: the cold class when the LLC lost any of its lines.
    pub(super) fn read_packet<const LLC: bool, const ONE_PAGE: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        size: usize,
        sizes: &[u64],
        at: f64,
    ) {
        let bytes = sizes[size];
        let mut class = packet_read_class(size);
        if let Some(ddio) = self.ddio.as_mut().filter(|_| LLC) {
            // Every line is looked up (and counted), not only up to the first lost one.
            let lost = self
                .map
                .lines(addr, bytes)
                .filter(|&l| !ddio.read(l))
                .count();
            if lost > 0 {
                class = cold_read_class(size, sizes.len());
            }
        }
        emit_txn::<ONE_PAGE>(emit, addr, bytes, class, at);
    }
}
