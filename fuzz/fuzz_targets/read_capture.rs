//! Any byte string through the capture reader, strict and with `skip_bad`: it must return
//! records or a one-line error, never panic, loop forever or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcieperf_core::trace::read::Reader;

fuzz_target!(|data: &[u8]| {
    for skip_bad in [false, true] {
        let Ok(mut reader) = Reader::from_bytes("fuzz", data.to_vec(), skip_bad) else {
            continue;
        };
        let mut records = 0usize;
        while let Ok(Some(record)) = reader.next_record() {
            assert_eq!(reader.data(&record).len(), record.caplen as usize);
            records += 1;
            assert!(records <= data.len(), "more records than bytes");
        }
    }
});
