//! Incremental RESP2/RESP3 reply scanning. [`ReplyScanner::scan`] says where
//! one complete reply ends, or that more bytes are needed, without
//! allocating: the top-level kind and where its payload lies are left in
//! fields, as mini-redis's `check` does before `parse`. A load generator never
//! needs a frame tree; it needs "was it an error, a nil, or these bytes".
//!
//! "Need more bytes" is not an error ([`Scan::Incomplete`]). Malformed input
//! is a [`ProtocolError`] carrying the offset and the offending bytes,
//! escaped; that is the only path that allocates, and it ends the connection.
//! Nothing here indexes past the buffer or recurses, so no input panics.

use std::fmt;

/// What the top-level reply was, as far as counting goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    /// `+…`
    Simple,
    /// `-…` or RESP3 `!…` (blob error).
    Error,
    /// `:…`
    Integer,
    /// `$n` with n >= 0.
    Bulk,
    /// `$-1`, `*-1` or RESP3 `_`.
    Nil,
    /// Arrays, sets, maps; payload_len holds the element count.
    Aggregate,
    /// Doubles, big numbers, booleans.
    Other,
    /// RESP3 `=`: the payload is the text after its `txt:` (or other
    /// 3-byte format) prefix.
    Verbatim,
    /// RESP3 `>`: out-of-band data (pub/sub, client tracking), not the
    /// answer to a request; payload_len holds the element count.
    Push,
}

/// Outcome of scanning from an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// One whole reply; the offset just past it, in the buffer given to
    /// `scan` (as the TypeScript scanner returns).
    Complete(usize),
    /// The buffer ends inside the reply.
    Incomplete,
}

/// Malformed input: what was wrong, where, and the bytes there, escaped so
/// they print on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    /// What is wrong, without where: "unknown reply type byte".
    pub reason: String,
    /// Where the offending bytes start, as an index into the scanned buffer.
    pub offset: usize,
    /// The offending bytes, escaped ([`escape_bytes`]).
    pub bytes: String,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}: \"{}\"", self.reason, self.offset, self.bytes)
    }
}

impl std::error::Error for ProtocolError {}

/// Longest header or simple line accepted before the bytes are judged garbage.
const MAX_LINE: usize = 1 << 20;
/// Redis's own proto-max-bulk-len default.
pub const MAX_BULK: i64 = 512 * 1024 * 1024;
const MAX_AGGREGATE: i64 = 1 << 30;

/// Up to `max` bytes of `buf[at..end]`, escaped so that any byte prints on one
/// line; `…` marks a cut. Out-of-range bounds are clamped, never a panic.
pub fn escape_bytes(buf: &[u8], at: usize, end: usize, max: usize) -> String {
    let end = end.min(buf.len());
    let at = at.min(end);
    let stop = end.min(at.saturating_add(max));
    let mut s = String::with_capacity(stop - at + 4);
    for &b in &buf[at..stop] {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            32..=126 => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    if end > stop {
        s.push('…');
    }
    s
}

fn error(reason: impl Into<String>, offset: usize, buf: &[u8], from: usize, to: usize) -> ProtocolError {
    ProtocolError { reason: reason.into(), offset, bytes: escape_bytes(buf, from, to, 32) }
}

/// Where the scan of an incomplete reply stopped, so that
/// [`ReplyScanner::resume`] goes on from there instead of from the reply's
/// first byte: a 30 MB array arriving in 64 KiB reads is scanned once, not
/// once per read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Partial {
    /// The reply's first byte.
    at: usize,
    /// The first element not yet complete.
    pos: usize,
    /// Elements still to come, that one included.
    pending: u64,
    top: bool,
    top_again_at: Option<u64>,
}

/// Scans replies one at a time and remembers the last top-level one.
#[derive(Clone, Debug)]
pub struct ReplyScanner {
    /// Kind of the top-level reply last scanned.
    pub kind: ReplyKind,
    /// For Bulk, Simple, Error, Integer and Verbatim: where the payload
    /// starts in the buffer given to `scan`; for Aggregate and Push: just
    /// past its header.
    pub payload_start: usize,
    /// Payload length in bytes, or the element count of an Aggregate or Push.
    pub payload_len: usize,
    partial: Option<Partial>,
}

impl Default for ReplyScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplyScanner {
    pub fn new() -> Self {
        ReplyScanner { kind: ReplyKind::Other, payload_start: 0, payload_len: 0, partial: None }
    }

    /// As [`scan`](Self::scan), but when the last call left the reply at
    /// `at` incomplete, goes on where it stopped. The caller keeps the bytes
    /// seen so far unchanged (it only appends), and calls
    /// [`moved`](Self::moved) when it moves them.
    #[inline]
    pub fn resume(&mut self, buf: &[u8], at: usize) -> Result<Scan, ProtocolError> {
        match self.partial {
            Some(p) if p.at == at => self.walk(buf, p),
            _ => self.scan(buf, at),
        }
    }

    /// The incomplete reply's bytes were moved `by` bytes toward the
    /// buffer's start.
    pub fn moved(&mut self, by: usize) {
        if let Some(p) = self.partial.as_mut() {
            p.at -= by;
            p.pos -= by;
            self.payload_start = self.payload_start.saturating_sub(by);
        }
    }

    /// The payload of the last top-level Bulk, Simple, Error or Integer reply.
    #[inline]
    pub fn payload<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let end = (self.payload_start + self.payload_len).min(buf.len());
        &buf[self.payload_start.min(end)..end]
    }

    /// Scans one reply starting at `at`: `Complete(end)` with `end` the
    /// offset just past it, where the next reply starts. Nested replies are
    /// counted, not recursed into, so deep nesting cannot overflow the stack.
    #[inline]
    pub fn scan(&mut self, buf: &[u8], at: usize) -> Result<Scan, ProtocolError> {
        self.walk(buf, Partial { at, pos: at, pending: 1, top: true, top_again_at: None })
    }

    /// Walks the reply at `from.at` from `from.pos` with `from.pending`
    /// elements to go; while `top`, the element scanned sets kind and
    /// payload. After a top-level attribute, the reply it annotates is top
    /// again once `pending` comes back to `top_again_at`.
    // Always into the reply loop, as the one-call scan of 404c66c was: a
    // call per reply (and its Result written to memory) was ~25% more
    // instructions per reply.
    #[inline(always)]
    fn walk(&mut self, buf: &[u8], from: Partial) -> Result<Scan, ProtocolError> {
        let end = buf.len();
        let Partial { at, mut pos, mut pending, mut top, mut top_again_at } = from;
        while pending > 0 {
            if top_again_at == Some(pending) {
                top = true;
                top_again_at = None;
            }
            let start = pos;
            // The element at `start` is not complete yet: remember where to go on.
            let incomplete = Partial { at, pos: start, pending, top, top_again_at };
            if pos >= end {
                self.partial = Some(incomplete);
                return Ok(Scan::Incomplete);
            }
            let type_byte = buf[pos];
            match type_byte {
                b'+' | b'-' | b',' | b'(' | b'#' | b'_' => {
                    let Some(line_end) = find_line(buf, pos + 1)? else {
                        self.partial = Some(incomplete);
                        return Ok(Scan::Incomplete);
                    };
                    if top {
                        self.kind = match type_byte {
                            b'+' => ReplyKind::Simple,
                            b'-' => ReplyKind::Error,
                            b'_' => ReplyKind::Nil,
                            _ => ReplyKind::Other,
                        };
                        self.payload_start = pos + 1;
                        self.payload_len = line_end - pos - 1;
                    }
                    pos = line_end + 2;
                }
                b':' => {
                    let Some(line_end) = find_line(buf, pos + 1)? else {
                        self.partial = Some(incomplete);
                        return Ok(Scan::Incomplete);
                    };
                    parse_number(buf, pos + 1, line_end, start, "bad integer")?;
                    if top {
                        self.kind = ReplyKind::Integer;
                        self.payload_start = pos + 1;
                        self.payload_len = line_end - pos - 1;
                    }
                    pos = line_end + 2;
                }
                b'$' | b'!' | b'=' => {
                    let Some(line_end) = find_line(buf, pos + 1)? else {
                        self.partial = Some(incomplete);
                        return Ok(Scan::Incomplete);
                    };
                    let len = parse_number(buf, pos + 1, line_end, start, "bad bulk length")?;
                    let body = line_end + 2;
                    if len == -1 && type_byte == b'$' {
                        if top {
                            self.kind = ReplyKind::Nil;
                            self.payload_start = body;
                            self.payload_len = 0;
                        }
                        pos = body;
                    } else {
                        if !(0..=MAX_BULK).contains(&len) {
                            return Err(error(format!("bad bulk length {len}"), start, buf, start, end));
                        }
                        let len = len as usize;
                        if body + len + 2 > end {
                            self.partial = Some(incomplete);
                            return Ok(Scan::Incomplete);
                        }
                        if buf[body + len] != b'\r' || buf[body + len + 1] != b'\n' {
                            return Err(error("bulk string not followed by CRLF", body + len, buf, body + len, end));
                        }
                        if top {
                            self.kind = match type_byte {
                                b'$' => ReplyKind::Bulk,
                                b'!' => ReplyKind::Error,
                                _ => ReplyKind::Verbatim,
                            };
                            // A verbatim string's text follows its format: "txt:hello".
                            let format = if type_byte == b'=' && len >= 4 && buf[body + 3] == b':' { 4 } else { 0 };
                            self.payload_start = body + format;
                            self.payload_len = len - format;
                        }
                        pos = body + len + 2;
                    }
                }
                b'*' | b'~' | b'>' | b'%' | b'|' => {
                    let Some(line_end) = find_line(buf, pos + 1)? else {
                        self.partial = Some(incomplete);
                        return Ok(Scan::Incomplete);
                    };
                    let n = parse_number(buf, pos + 1, line_end, start, "bad aggregate length")?;
                    pos = line_end + 2;
                    if n == -1 && type_byte == b'*' {
                        if top {
                            self.kind = ReplyKind::Nil;
                            self.payload_start = pos;
                            self.payload_len = 0;
                        }
                    } else {
                        if !(0..=MAX_AGGREGATE).contains(&n) {
                            return Err(error(format!("bad aggregate length {n}"), start, buf, start, end));
                        }
                        let n = n as u64;
                        if type_byte == b'|' {
                            // An attribute annotates the reply that follows it; that
                            // reply, not the attribute's keys and values, is the top one.
                            pending += 2 * n;
                            if top {
                                top_again_at = Some(pending - 2 * n);
                                top = n == 0;
                            }
                            continue;
                        }
                        pending += if type_byte == b'%' { 2 * n } else { n };
                        if top {
                            self.kind = if type_byte == b'>' { ReplyKind::Push } else { ReplyKind::Aggregate };
                            self.payload_start = pos;
                            self.payload_len = n as usize;
                        }
                    }
                }
                _ => return Err(error("unknown reply type byte", pos, buf, pos, end)),
            }
            pending -= 1;
            top = false;
        }
        self.partial = None;
        Ok(Scan::Complete(pos))
    }
}

/// Finds the CRLF that ends the line starting at `from`; returns the offset
/// of the CR, or None when it is not in the buffer yet.
#[inline]
fn find_line(buf: &[u8], from: usize) -> Result<Option<usize>, ProtocolError> {
    let end = buf.len();
    let limit = end.min(from.saturating_add(MAX_LINE));
    let mut i = from;
    while i < limit {
        match buf[i] {
            b'\r' => {
                if i + 1 >= end {
                    return Ok(None);
                }
                if buf[i + 1] != b'\n' {
                    return Err(error("CR not followed by LF", i, buf, i, end));
                }
                return Ok(Some(i));
            }
            b'\n' => return Err(error("LF without CR", i, buf, from - 1, end)),
            _ => i += 1,
        }
    }
    if end.saturating_sub(from) >= MAX_LINE {
        return Err(error("line longer than 1 MiB", from - 1, buf, from - 1, end));
    }
    Ok(None)
}

/// A decimal integer in `buf[from..to]`, as in RESP headers and integer
/// replies; `what` names it in the error ("bad bulk length").
#[inline]
fn parse_number(buf: &[u8], from: usize, to: usize, start: usize, what: &str) -> Result<i64, ProtocolError> {
    let bad = || error(what, start, buf, start, to + 2);
    let mut i = from;
    let mut negative = false;
    if i < to && (buf[i] == b'-' || buf[i] == b'+') {
        negative = buf[i] == b'-';
        i += 1;
    }
    if i >= to || to - i > 19 {
        return Err(bad());
    }
    let mut n: i64 = 0;
    while i < to {
        let d = buf[i].wrapping_sub(b'0');
        if d > 9 {
            return Err(bad());
        }
        n = n.checked_mul(10).and_then(|n| n.checked_add(d as i64)).ok_or_else(bad)?;
        i += 1;
    }
    Ok(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyStream;

    /// Replies of every type, nested ones and a RESP3 attribute among them.
    const MIXED: &[(&[u8], ReplyKind)] = &[
        (b"+OK\r\n", ReplyKind::Simple),
        (b"-ERR wrong type\r\n", ReplyKind::Error),
        (b":1234\r\n", ReplyKind::Integer),
        (b":-7\r\n", ReplyKind::Integer),
        (b"$5\r\nhello\r\n", ReplyKind::Bulk),
        (b"$0\r\n\r\n", ReplyKind::Bulk),
        (b"$-1\r\n", ReplyKind::Nil),
        (b"*-1\r\n", ReplyKind::Nil),
        (b"_\r\n", ReplyKind::Nil),
        (b"$4\r\na\r\nb\r\n", ReplyKind::Bulk),
        (b"*3\r\n$1\r\na\r\n:2\r\n*1\r\n+x\r\n", ReplyKind::Aggregate),
        (b"*0\r\n", ReplyKind::Aggregate),
        (b"%1\r\n+k\r\n$1\r\nv\r\n", ReplyKind::Aggregate),
        (b"~2\r\n#t\r\n,1.5\r\n", ReplyKind::Aggregate),
        (b">2\r\n+push\r\n(123456789012345678901\r\n", ReplyKind::Push),
        (b"!9\r\nERR blob!\r\n", ReplyKind::Error),
        (b"=8\r\ntxt:abcd\r\n", ReplyKind::Verbatim),
        (b"|1\r\n+key\r\n+val\r\n$3\r\nyes\r\n", ReplyKind::Bulk),
    ];

    fn stream() -> Vec<u8> {
        MIXED.iter().flat_map(|(b, _)| b.iter().copied()).collect()
    }

    /// Feeds `data` as it would arrive in two reads split at `split`, the way a
    /// connection carries an incomplete tail over to the next read.
    fn scan_in_two_reads(data: &[u8], split: usize) -> Vec<ReplyKind> {
        let mut scanner = ReplyScanner::new();
        let mut kinds = Vec::new();
        let mut buf: Vec<u8> = data[..split].to_vec();
        let mut pos = 0;
        for round in 0..2 {
            while let Scan::Complete(end) = scanner.resume(&buf, pos).expect("valid input") {
                kinds.push(scanner.kind);
                pos = end;
            }
            if round == 0 {
                buf.drain(..pos);
                scanner.moved(pos);
                pos = 0;
                buf.extend_from_slice(&data[split..]);
            }
        }
        assert_eq!(pos, buf.len(), "everything consumed at split {split}");
        kinds
    }

    #[test]
    fn every_split_offset_of_mixed_replies_scans_the_same() {
        let data = stream();
        let expected: Vec<ReplyKind> = MIXED.iter().map(|(_, k)| *k).collect();
        for split in 0..=data.len() {
            assert_eq!(scan_in_two_reads(&data, split), expected, "split at {split}");
        }
    }

    #[test]
    fn every_proper_prefix_of_a_reply_is_incomplete() {
        let mut scanner = ReplyScanner::new();
        for (bytes, _) in MIXED {
            for cut in 0..bytes.len() {
                assert_eq!(scanner.scan(&bytes[..cut], 0), Ok(Scan::Incomplete), "{:?} cut at {cut}", bytes);
            }
        }
    }

    #[test]
    fn payloads_point_at_the_reply_bytes() {
        let mut s = ReplyScanner::new();
        let buf = b"xx$5\r\nhello\r\n";
        assert_eq!(s.scan(buf, 2), Ok(Scan::Complete(13)), "the end offset, not the length");
        assert_eq!(s.payload(buf), b"hello");
        let buf = b"-ERR no\r\n";
        s.scan(buf, 0).unwrap();
        assert_eq!((s.kind, s.payload(buf)), (ReplyKind::Error, &b"ERR no"[..]));
        let buf = b"|1\r\n+a\r\n+b\r\n+OK\r\n";
        s.scan(buf, 0).unwrap();
        assert_eq!((s.kind, s.payload(buf)), (ReplyKind::Simple, &b"OK"[..]));
        let buf = b"|1\r\n+key\r\n*1\r\n|0\r\n+v\r\n:7\r\n";
        assert_eq!(s.scan(buf, 0), Ok(Scan::Complete(buf.len())));
        assert_eq!((s.kind, s.payload(buf)), (ReplyKind::Integer, &b"7"[..]));
    }

    /// Feeds `data` in reads of `step` bytes the way a connection does:
    /// resume at the reply's start, move the incomplete tail to the front.
    fn scan_resuming(data: &[u8], step: usize) -> Vec<(ReplyKind, usize)> {
        let mut scanner = ReplyScanner::new();
        let mut seen = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        for chunk in data.chunks(step) {
            buf.extend_from_slice(chunk);
            let mut pos = 0;
            while let Scan::Complete(end) = scanner.resume(&buf, pos).expect("valid input") {
                seen.push((scanner.kind, scanner.payload_len));
                pos = end;
                if pos == buf.len() {
                    break;
                }
            }
            buf.drain(..pos);
            scanner.moved(pos);
        }
        assert!(buf.is_empty(), "everything consumed");
        seen
    }

    #[test]
    fn a_large_array_in_small_reads_resumes_and_scans_as_whole() {
        let mut data = b"+before\r\n*30000\r\n".to_vec();
        for i in 0..30_000 {
            match i % 3 {
                0 => data.extend_from_slice(format!("${}\r\n{i}\r\n", i.to_string().len()).as_bytes()),
                1 => data.extend_from_slice(format!(":{i}\r\n").as_bytes()),
                _ => data.extend_from_slice(format!("|1\r\n+a\r\n+b\r\n*1\r\n+x{i}\r\n").as_bytes()),
            }
        }
        data.extend_from_slice(b"=8\r\ntxt:abcd\r\n");
        let expected = vec![(ReplyKind::Simple, 6), (ReplyKind::Aggregate, 30_000), (ReplyKind::Verbatim, 4)];
        for step in [1, 7, 100, 4096, data.len()] {
            assert_eq!(scan_resuming(&data, step), expected, "reads of {step} bytes");
        }
    }

    #[test]
    fn a_fresh_scan_forgets_a_reply_left_incomplete() {
        let mut s = ReplyScanner::new();
        assert_eq!(s.scan(b"*2\r\n+a\r\n", 0), Ok(Scan::Incomplete));
        assert_eq!(s.scan(b"+b\r\n", 0), Ok(Scan::Complete(4)));
        assert_eq!(s.resume(b"+b\r\n", 0), Ok(Scan::Complete(4)));
        assert_eq!(s.kind, ReplyKind::Simple);
    }

    #[test]
    fn verbatim_strings_carry_their_text_and_pushes_are_told_apart() {
        let mut s = ReplyScanner::new();
        let buf = b"=9\r\ntxt:hello\r\n";
        s.scan(buf, 0).unwrap();
        assert_eq!((s.kind, s.payload(buf)), (ReplyKind::Verbatim, &b"hello"[..]));
        let buf = b">2\r\n+message\r\n$3\r\nhi!\r\n";
        s.scan(buf, 0).unwrap();
        assert_eq!((s.kind, s.payload_len), (ReplyKind::Push, 2));
    }

    fn expect_error(input: &[u8], message: &str, offset: usize) -> ProtocolError {
        let err = ReplyScanner::new().scan(input, 0).expect_err("malformed input must be an error");
        assert!(err.reason.starts_with(message), "{err} for {:?}", input);
        assert_eq!(err.offset, offset, "{err}");
        err
    }

    #[test]
    fn malformed_input_is_an_error_with_offset_and_escaped_bytes() {
        let e = expect_error(b"?what\r\n", "unknown reply type byte", 0);
        assert_eq!(e.to_string(), "unknown reply type byte at byte 0: \"?what\\r\\n\"");
        let e = expect_error(b"$abc\r\nxyz\r\n", "bad bulk length", 0);
        assert_eq!(e.to_string(), "bad bulk length at byte 0: \"$abc\\r\\n\"");
        expect_error(b"$\r\n", "bad bulk length", 0);
        expect_error(b"*x\r\n", "bad aggregate length", 0);
        expect_error(b"$-2\r\n", "bad bulk length -2", 0);
        expect_error(b"$99999999999999999999\r\n", "bad bulk length", 0);
        expect_error(b"$9223372036854775807\r\n", "bad bulk length", 0);
        expect_error(b"$1000000000\r\n", "bad bulk length", 0);
        expect_error(b"*-2\r\n", "bad aggregate length -2", 0);
        expect_error(b"!-1\r\n", "bad bulk length -1", 0);
        expect_error(b":12a\r\n", "bad integer", 0);
        expect_error(b"$3\r\nabcdef\r\n", "bulk string not followed by CRLF", 7);
        expect_error(b"+OK\rX", "CR not followed by LF", 3);
        expect_error(b"+OK\n", "LF without CR", 3);
        expect_error(b"*2\r\n$1\r\na\r\n\x00\x01", "unknown reply type byte", 11);
        let e = expect_error(b"\xff\xfe garbage", "unknown reply type byte", 0);
        assert_eq!(e.bytes, "\\xff\\xfe garbage");
    }

    #[test]
    fn a_length_past_the_end_waits_for_more_bytes() {
        let mut s = ReplyScanner::new();
        assert_eq!(s.scan(b"$100\r\nshort\r\n", 0), Ok(Scan::Incomplete));
        assert_eq!(s.scan(b"*1073741824\r\n", 0), Ok(Scan::Incomplete));
    }

    #[test]
    fn endless_lines_are_rejected() {
        let mut long = vec![b'+'];
        long.extend(std::iter::repeat_n(b'a', MAX_LINE + 1));
        expect_error(&long, "line longer than 1 MiB", 0);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = KeyStream::new(99, 0);
        let alphabet = b"+-:$*_%~>|!=,(#\r\n0123456789-ab";
        let mut s = ReplyScanner::new();
        for _ in 0..50_000 {
            let len = (rng.next_u32() % 24) as usize;
            let buf: Vec<u8> = (0..len).map(|_| alphabet[(rng.next_u32() as usize) % alphabet.len()]).collect();
            let mut pos = 0;
            while let Ok(Scan::Complete(end)) = s.scan(&buf, pos) {
                assert!(end > pos && end <= buf.len());
                pos = end;
            }
        }
    }

    #[test]
    fn escaping_cuts_long_input_and_clamps_bounds() {
        assert_eq!(escape_bytes(b"abc", 1, 99, 32), "bc");
        assert_eq!(escape_bytes(&[b'a'; 40], 0, 40, 32), format!("{}…", "a".repeat(32)));
        assert_eq!(escape_bytes(b"\"\\\t", 0, 3, 32), "\\\"\\\\\\x09");
    }
}
