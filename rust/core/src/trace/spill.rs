//! Packets sorted by time in bounded memory, for the statistics of captures that are not in
//! time order or cannot be read twice (standard input, pipes).
//!
//! An external merge sort: packets are collected in runs of at most `run_packets`, each run
//! is sorted stably by time and written to a temporary file (16 bytes a packet), and the runs
//! are merged through a heap keyed by (time, run index), so equal times keep file order: the
//! order a stable sort of all packets gives. Where more runs than `FAN_IN` were written,
//! consecutive groups of them are merged into longer runs first, which bounds the open files
//! and read buffers as well. Packets that fit in one run never touch the disk.
//!
//! Temporary files go to `std::env::temp_dir()` (`TMPDIR` where set), are named
//! `pcieperf-sort-PID-N.tmp` only for the moment it takes to open them: the name is removed at
//! once and the data lives as long as the open file, so nothing is left however the process
//! ends (an error, SIGKILL). A file that cannot be created, written or read back is a
//! `CoreError` naming it and the OS's reason.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::CoreError;

/// Packets per run: 1 Mi packets are 16 MiB, and the stable sort borrows 8 MiB of scratch
/// (half a run), which keeps a run with the interpreter and the statistics below 64 MiB
/// while a capture of 64 Mi packets still merges in one pass.
pub(super) const RUN_PACKETS: usize = 1 << 20;
/// Runs merged at once: 64 open files and 4 MiB of read buffers; more runs are merged in
/// groups first.
const FAN_IN: usize = 64;
/// Bytes buffered per run file read or written (4096 packets).
const BUFFER: usize = 64 << 10;
/// Bytes of one packet in a run file: time, wire length, interface (little-endian).
const PACKET_BYTES: usize = 16;

/// What the statistics keep of a packet to sort it by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Packet {
    pub(super) ts_ns: i64,
    pub(super) wirelen: u32,
    pub(super) iface: u32,
}

impl Packet {
    /// The packet as stored in a run file.
    fn to_bytes(self) -> [u8; PACKET_BYTES] {
        let mut b = [0; PACKET_BYTES];
        b[..8].copy_from_slice(&self.ts_ns.to_le_bytes());
        b[8..12].copy_from_slice(&self.wirelen.to_le_bytes());
        b[12..].copy_from_slice(&self.iface.to_le_bytes());
        b
    }

    /// The packet `to_bytes` stored.
    fn from_bytes(b: &[u8; PACKET_BYTES]) -> Self {
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let mut ts = [0; 8];
        ts.copy_from_slice(&b[..8]);
        Packet {
            ts_ns: i64::from_le_bytes(ts),
            wirelen: word(8),
            iface: word(12),
        }
    }
}

/// The error of temporary file `path`: what was being done and the OS's reason.
fn spill_error(path: &Path, doing: &str, e: &io::Error) -> CoreError {
    CoreError::whole(
        &path.display().to_string(),
        format!(
            "cannot {doing} a temporary file of the sort by time (TMPDIR sets its folder): {e}"
        ),
    )
}

/// A run file on disk, its name removed as soon as it is opened: the data lives while the file
/// is open, and goes with it however the process ends (SIGKILL too). `path` is for messages.
#[derive(Debug)]
pub(super) struct RunFile {
    path: PathBuf,
    file: File,
    packets: u64,
}

impl RunFile {
    /// A new, empty run file in `dir` under a name no other file has, already unlinked.
    fn create(dir: &Path) -> Result<RunFile, CoreError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("pcieperf-sort-{}-{n}.tmp", std::process::id()));
            let mut options = OpenOptions::new();
            options.read(true).write(true).create_new(true);
            // The packets' times are the user's: readable by them alone, as mkstemp makes.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(&path) {
                Ok(file) => {
                    std::fs::remove_file(&path).map_err(|e| spill_error(&path, "unlink", &e))?;
                    return Ok(RunFile {
                        path,
                        file,
                        packets: 0,
                    });
                }
                // Left by an earlier process of the same id: try the next name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(spill_error(&path, "create", &e)),
            }
        }
    }

    /// Its packets from the start, in stored order (one reader at a time: they share the
    /// file's offset).
    fn reader(&self) -> Result<RunReader<'_>, CoreError> {
        let file = (self.file.try_clone())
            .and_then(|mut f| f.seek(SeekFrom::Start(0)).map(|_| f))
            .map_err(|e| spill_error(&self.path, "read back", &e))?;
        Ok(RunReader {
            run: self,
            input: BufReader::with_capacity(BUFFER, file),
            left: self.packets,
        })
    }
}

/// Packets being written to a new run file.
struct RunWriter {
    output: BufWriter<File>,
    run: RunFile,
}

impl RunWriter {
    fn create(dir: &Path) -> Result<Self, CoreError> {
        let run = RunFile::create(dir)?;
        let file = (run.file.try_clone()).map_err(|e| spill_error(&run.path, "write", &e))?;
        Ok(RunWriter {
            output: BufWriter::with_capacity(BUFFER, file),
            run,
        })
    }

    fn push(&mut self, p: Packet) -> Result<(), CoreError> {
        self.output
            .write_all(&p.to_bytes())
            .map_err(|e| spill_error(&self.run.path, "write", &e))?;
        self.run.packets += 1;
        Ok(())
    }

    /// The run file, once every packet is on disk.
    fn finish(mut self) -> Result<RunFile, CoreError> {
        self.output
            .flush()
            .map_err(|e| spill_error(&self.run.path, "write", &e))?;
        Ok(self.run)
    }
}

/// Reads one run file's packets back in order.
struct RunReader<'a> {
    run: &'a RunFile,
    input: BufReader<File>,
    left: u64,
}

impl RunReader<'_> {
    /// The next packet, None after the last one written.
    fn next(&mut self) -> Result<Option<Packet>, CoreError> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut b = [0; PACKET_BYTES];
        self.input
            .read_exact(&mut b)
            .map_err(|e| spill_error(&self.run.path, "read back", &e))?;
        self.left -= 1;
        Ok(Some(Packet::from_bytes(&b)))
    }
}

/// Merges sorted runs, given in file order, into `out` by time; equal times keep run order.
fn merge(
    runs: &[RunFile],
    mut out: impl FnMut(Packet) -> Result<(), CoreError>,
) -> Result<(), CoreError> {
    let mut readers = runs
        .iter()
        .map(RunFile::reader)
        .collect::<Result<Vec<_>, _>>()?;
    let mut heads = Vec::with_capacity(readers.len());
    let mut heap = BinaryHeap::with_capacity(readers.len());
    for (k, reader) in readers.iter_mut().enumerate() {
        let first = reader.next()?;
        if let Some(p) = first {
            heap.push(Reverse((p.ts_ns, k)));
        }
        heads.push(first);
    }
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, k)) = *top;
        out(heads[k].expect("a run in the heap has a head"))?;
        heads[k] = readers[k].next()?;
        match heads[k] {
            // Replacing the top sifts it down: cheap while one run keeps the lead.
            Some(p) => *top = Reverse((p.ts_ns, k)),
            None => drop(PeekMut::pop(top)),
        }
    }
    Ok(())
}

/// Packets sorted by time (stably), in memory or as run files on disk.
#[derive(Debug)]
pub(super) enum Sorted {
    Memory(Vec<Packet>),
    Runs(Vec<RunFile>),
}

impl Sorted {
    /// Packets held in memory, sorted stably by time.
    pub(super) fn in_memory(mut packets: Vec<Packet>) -> Self {
        packets.sort_by_key(|p| p.ts_ns);
        Sorted::Memory(packets)
    }

    /// Calls `f` with every packet in time order (equal times in file order); it can be
    /// called again.
    pub(super) fn for_each(&self, mut f: impl FnMut(&Packet)) -> Result<(), CoreError> {
        self.try_for_each(|p| {
            f(p);
            Ok(())
        })
    }

    /// `for_each` with an `f` that can fail, which ends the walk with its error.
    pub(super) fn try_for_each(
        &self,
        mut f: impl FnMut(&Packet) -> Result<(), CoreError>,
    ) -> Result<(), CoreError> {
        match self {
            Sorted::Memory(packets) => packets.iter().try_for_each(f),
            Sorted::Runs(runs) => merge(runs, |p| f(&p)),
        }
    }

    /// Run files on disk (0 where the packets are in memory).
    #[cfg(test)]
    pub(super) fn run_files(&self) -> usize {
        match self {
            Sorted::Memory(_) => 0,
            Sorted::Runs(runs) => runs.len(),
        }
    }
}

/// Collects packets in file order into sorted runs of bounded size, spilling full ones.
pub(super) struct Sorter {
    run: Vec<Packet>,
    run_packets: usize,
    dir: PathBuf,
    runs: Vec<RunFile>,
}

impl Sorter {
    /// A sorter writing runs of `run_packets` (at least 1) to `dir`.
    pub(super) fn new(run_packets: usize, dir: &Path) -> Self {
        Sorter {
            run: Vec::new(),
            run_packets: run_packets.max(1),
            dir: dir.to_path_buf(),
            runs: Vec::new(),
        }
    }

    /// Adds the next packet in file order.
    pub(super) fn push(&mut self, p: Packet) -> Result<(), CoreError> {
        if self.run.len() == self.run_packets {
            self.spill()?;
        }
        if self.run.len() == self.run.capacity() {
            // Grow by doubling, but never past one run.
            let more = self
                .run
                .len()
                .max(1024)
                .min(self.run_packets - self.run.len());
            self.run.reserve_exact(more);
        }
        self.run.push(p);
        Ok(())
    }

    /// Sorts the packets held and writes them to a new run file.
    fn spill(&mut self) -> Result<(), CoreError> {
        self.run.sort_by_key(|p| p.ts_ns);
        let mut writer = RunWriter::create(&self.dir)?;
        for &p in &self.run {
            writer.push(p)?;
        }
        self.runs.push(writer.finish()?);
        self.run.clear();
        Ok(())
    }

    /// Every packet pushed, sorted: in memory if they fit in one run, else merged from disk.
    pub(super) fn finish(mut self) -> Result<Sorted, CoreError> {
        if self.runs.is_empty() {
            return Ok(Sorted::in_memory(std::mem::take(&mut self.run)));
        }
        if !self.run.is_empty() {
            self.spill()?;
        }
        self.run = Vec::new();
        while self.runs.len() > FAN_IN {
            self.runs = merge_groups(std::mem::take(&mut self.runs), &self.dir)?;
        }
        Ok(Sorted::Runs(std::mem::take(&mut self.runs)))
    }
}

/// Merges consecutive groups of `FAN_IN` runs into one run each (order kept, so stable).
fn merge_groups(runs: Vec<RunFile>, dir: &Path) -> Result<Vec<RunFile>, CoreError> {
    let mut merged = Vec::with_capacity(runs.len().div_ceil(FAN_IN));
    for group in runs.chunks(FAN_IN) {
        let mut writer = RunWriter::create(dir)?;
        merge(group, |p| writer.push(p))?;
        merged.push(writer.finish()?);
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own under the build folder, as the trace tests' `temp` makes.
    fn folder(name: &str) -> PathBuf {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/test-tmp"
        ))
        .join(format!("pcieperf-spill-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn files_in(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    /// `n` packets with times drawn from few values (many ties), each numbered by `iface`.
    fn shuffled(n: u32) -> Vec<Packet> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|k| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                Packet {
                    ts_ns: (state % 97) as i64 - 40,
                    wirelen: 60 + k % 3,
                    iface: k,
                }
            })
            .collect()
    }

    /// A sorter of runs of `run` packets in `dir` that `packets` were pushed into.
    fn filled(packets: &[Packet], run: usize, dir: &Path) -> Sorter {
        let mut sorter = Sorter::new(run, dir);
        for &p in packets {
            sorter.push(p).unwrap();
        }
        sorter
    }

    fn sorted_by(packets: &[Packet], run: usize, dir: &Path) -> (Vec<Packet>, usize) {
        let sorted = filled(packets, run, dir).finish().unwrap();
        let mut out = Vec::new();
        sorted.for_each(|p| out.push(*p)).unwrap();
        // A second walk gives the same packets.
        let mut again = Vec::new();
        sorted.for_each(|p| again.push(*p)).unwrap();
        assert_eq!(out, again);
        (out, sorted.run_files())
    }

    #[test]
    fn runs_merge_into_the_order_of_a_stable_sort() {
        let dir = folder("stable");
        let packets = shuffled(20_000);
        let mut expected = packets.clone();
        expected.sort_by_key(|p| p.ts_ns);
        // One run in memory; 20 runs in one merge; 200 runs merged in groups of 64 first.
        for (run, files) in [(20_000, 0), (1000, 20), (100, 4)] {
            assert_eq!(sorted_by(&packets, run, &dir), (expected.clone(), files));
            assert_eq!(files_in(&dir), 0, "run of {run}: every file removed");
        }
        assert_eq!(sorted_by(&[], 10, &dir), (Vec::new(), 0));
    }

    #[test]
    fn run_files_never_have_a_name_a_killed_process_could_leave() {
        let dir = folder("drop");
        let sorter = filled(&shuffled(35), 10, &dir);
        assert_eq!(files_in(&dir), 0); // three runs spilled, none of them named
        let sorted = sorter.finish().unwrap();
        assert_eq!((sorted.run_files(), files_in(&dir)), (4, 0));
        let mut got = Vec::new();
        sorted.for_each(|p| got.push(*p)).unwrap();
        assert_eq!(got.len(), 35); // read back from the open, unnamed files
    }

    #[test]
    fn an_unwritable_folder_names_the_file_and_the_reason() {
        let dir = folder("missing").join("not-there");
        let mut sorter = Sorter::new(2, &dir);
        sorter.push(shuffled(1)[0]).unwrap();
        sorter.push(shuffled(1)[0]).unwrap();
        let err = sorter.push(shuffled(1)[0]).unwrap_err().to_string();
        assert!(err.contains("not-there/pcieperf-sort-"), "{err}");
        assert!(
            err.contains("cannot create a temporary file of the sort by time (TMPDIR sets its folder): No such file"),
            "{err}"
        );
    }

    #[test]
    fn a_run_file_cut_short_is_an_error_naming_it() {
        let dir = folder("cut");
        let sorted = filled(&shuffled(10), 4, &dir).finish().unwrap();
        let Sorted::Runs(runs) = &sorted else {
            panic!("10 packets in runs of 4 are on disk")
        };
        runs[1].file.set_len(20).unwrap(); // 1.25 of its 4 packets
        let err = sorted.for_each(|_| ()).unwrap_err().to_string();
        assert!(err.contains(&runs[1].path.display().to_string()), "{err}");
        assert!(err.contains("cannot read back"), "{err}");
    }

    #[test]
    fn packets_round_trip_through_their_bytes() {
        for p in [
            Packet {
                ts_ns: i64::MIN,
                wirelen: u32::MAX,
                iface: 0,
            },
            Packet {
                ts_ns: -2,
                wirelen: 1,
                iface: u32::MAX,
            },
        ] {
            assert_eq!(Packet::from_bytes(&p.to_bytes()), p);
        }
    }
}
