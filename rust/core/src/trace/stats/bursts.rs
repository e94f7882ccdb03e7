//! Runs of packets back to back (or at one time) in time order, kept so that the runs of
//! consecutive files join when their summaries are merged.

/// Runs of linked packets in time order (a pair back to back, or at one time): links at the
/// start before the first break, at the end after the last break, and the runs closed in
/// between, so that the runs of consecutive files join when their summaries are merged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::trace) struct Chain {
    pub(in crate::trace) head: u64,
    pub(in crate::trace) tail: u64,
    pub(in crate::trace) broken: bool,
    pub(in crate::trace) bursts: u64,
    pub(in crate::trace) packets_in_bursts: u64,
    pub(in crate::trace) max_burst: u64,
}

impl Chain {
    fn close(&mut self, links: u64) {
        if links > 0 {
            self.bursts += 1;
            self.packets_in_bursts += links + 1;
            self.max_burst = self.max_burst.max(links + 1);
        }
    }

    /// `n` more back-to-back links.
    fn extend(&mut self, n: u64) {
        self.tail += n;
        if !self.broken {
            self.head += n;
        }
    }

    /// A gap that is not back to back: the run at the end closes (unless it is the head run,
    /// which may continue an earlier file's).
    fn break_run(&mut self) {
        if self.broken {
            self.close(self.tail);
        }
        self.broken = true;
        self.tail = 0;
    }

    #[inline(always)]
    pub(in crate::trace) fn link(&mut self, back_to_back: bool) {
        if back_to_back {
            self.extend(1);
        } else {
            self.break_run();
        }
    }

    /// The chain of later packets, joined by a link of the given kind.
    pub(in crate::trace) fn append(&mut self, next: &Chain, back_to_back: bool) {
        self.link(back_to_back);
        self.extend(next.head);
        if next.broken {
            self.break_run();
            self.bursts += next.bursts;
            self.packets_in_bursts += next.packets_in_bursts;
            self.max_burst = self.max_burst.max(next.max_burst);
            self.tail = next.tail;
        }
    }

    /// Bursts, packets in bursts and the longest (at least 1) once no packet follows.
    pub(in crate::trace) fn finish(&self) -> (u64, u64, u64) {
        let mut done = *self;
        if done.broken {
            done.close(done.head);
        }
        done.close(done.tail);
        (done.bursts, done.packets_in_bursts, done.max_burst.max(1))
    }
}
