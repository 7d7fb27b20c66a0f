//! Any bytes, split anywhere: the scanner never panics, and scanning the
//! stream incrementally (the way the connection loop feeds it, one read at a
//! time) finds the same replies, kinds and errors as scanning it whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use respbench_core::reply::{ReplyScanner, Scan};

/// Every reply in `buf` as (end offset, kind), then the error offset if any.
fn scan_whole(buf: &[u8]) -> (Vec<(usize, String)>, Option<usize>) {
    let mut scanner = ReplyScanner::new();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        match scanner.scan(buf, pos) {
            Ok(Scan::Complete(end)) => {
                assert!(end > pos && end <= buf.len());
                pos = end;
                out.push((pos, format!("{:?}", scanner.kind)));
            }
            Ok(Scan::Incomplete) => return (out, None),
            Err(e) => return (out, Some(e.offset)),
        }
    }
    (out, None)
}

/// The same stream delivered in reads cut at `cuts`.
fn scan_split(buf: &[u8], cuts: &[usize]) -> (Vec<(usize, String)>, Option<usize>) {
    let mut scanner = ReplyScanner::new();
    let mut out = Vec::new();
    let mut start = 0; // absolute offset of the first unparsed byte
    let mut have = 0; // bytes delivered so far
    for &cut in cuts.iter().chain(std::iter::once(&buf.len())) {
        have = have.max(cut.min(buf.len()));
        loop {
            if start >= have {
                break;
            }
            // The loop only ever sees the bytes delivered so far, and resumes
            // a reply left incomplete by the last read, as the connection does.
            match scanner.resume(&buf[..have], start) {
                Ok(Scan::Complete(end)) => {
                    start = end;
                    out.push((start, format!("{:?}", scanner.kind)));
                }
                Ok(Scan::Incomplete) => break,
                Err(e) => return (out, Some(e.offset)),
            }
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    // The first byte chooses the cut points, the rest is the stream.
    let stride = (data[0] as usize % 7) + 1;
    let buf = &data[1..];
    let cuts: Vec<usize> = (stride..buf.len()).step_by(stride).collect();
    let whole = scan_whole(buf);
    let split = scan_split(buf, &cuts);
    assert_eq!(whole.0, split.0, "replies differ when split every {stride} bytes");
    assert_eq!(whole.1.is_some(), split.1.is_some(), "error seen only one way");
});
