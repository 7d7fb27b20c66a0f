//! Tally: a reply against the request it answers. Counters, verification
//! (`--verify-get`, lost writes, stale replica reads), the latency
//! histograms (per command, per interval through [`IntervalClock`], per
//! node under `--cluster`). Knows nothing of sockets: a Link hands it the
//! scanned reply and the ring entry it answers.

use std::time::{Duration, Instant};

use crate::counters::{Counters, FirstTexts};
use crate::histogram::{LatencyHistogram, OpHistograms};
use crate::key_names::Verdict;
use crate::link::InFlight;
use crate::packed::PackedBuckets;
use crate::plan::IntervalRecord;
use crate::progress::RunControl;
use crate::reply::{ReplyKind, ReplyScanner, escape_bytes};
use crate::request_source::{Op, PreparedPlan};
use crate::values::{content_of, first_difference, generation_of};

/// Longest error text kept, as the TS engine.
const MAX_ERROR_TEXT: usize = 200;

/// What a worker thread accumulates for its connections.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub counters: Counters,
    pub first: FirstTexts,
    /// Present in the timed phase only: preload replies are counted, not
    /// timed. One per op kind; the whole run's is their sum.
    pub histogram: Option<OpHistograms>,
    /// With a rate: latency from the actual send, beside the main one from
    /// the intended send.
    pub service: Option<LatencyHistogram>,
    /// With a rate, in the timed phase: how late each request went out
    /// against its schedule (actual send − intended send).
    pub lag: Option<LatencyHistogram>,
    /// Replies and errors not yet added to the shared progress counters.
    pub unreported_replies: u64,
    pub unreported_errors: u64,
    /// Requests written whose replies had not come when the phase stopped.
    pub unanswered: u64,
    /// `--cluster`, the timed phase: per primary, in `ClusterPlan::nodes`
    /// order, then those a topology refresh found joined mid-run.
    pub nodes: Vec<NodeTally>,
    /// `host:port` of the rows past the plan's nodes, in `nodes` order.
    pub joined: Vec<String>,
    /// `--cluster`: requests given up after redirections (no node answered them).
    pub given_up: u64,
}

/// `--cluster`: what the timed phase counts per primary (`NodeRecord`).
#[derive(Debug, Default)]
pub(crate) struct NodeTally {
    pub requests: u64,
    pub errors: u64,
    /// Replies from it that redirected a request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN).
    pub redirections: u64,
    pub histogram: LatencyHistogram,
}

impl Tally {
    /// The per-node row of `label`, a node the plan does not name (joined
    /// mid-run), made on first use; None outside the timed phase (no rows).
    pub fn joined_row(&mut self, label: &str, plan_nodes: usize) -> Option<u16> {
        if self.histogram.is_none() || self.nodes.is_empty() {
            return None;
        }
        let at = match self.joined.iter().position(|j| j == label) {
            Some(at) => at,
            None => {
                self.joined.push(label.to_string());
                self.nodes.push(NodeTally::default());
                self.joined.len() - 1
            }
        };
        u16::try_from(plan_nodes + at).ok()
    }

    /// A reply (not a redirection) to a request of this phase: counted once,
    /// its latency recorded in its command's histogram and, under
    /// `--cluster`, in the row of the node that answered (`row`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn answer(
        &mut self,
        w: &PreparedPlan,
        scanner: &ReplyScanner,
        buf: &[u8],
        entry: &InFlight,
        keys: &[u64],
        now: Instant,
        latency_ns: u64,
        replica: bool,
        row: Option<u16>,
    ) {
        count_reply(w, self, scanner, buf, entry, keys, now, latency_ns, replica);
        if let Some(row) = row {
            if self.histogram.is_some() {
                let n = &mut self.nodes[row as usize];
                n.requests += 1;
                n.histogram.record(latency_ns);
                if scanner.kind == ReplyKind::Error {
                    n.errors += 1;
                }
            }
        }
    }

    /// A redirected request given up on (a redirection loop, or still
    /// refused near `--timeout`): it counts as the error reply it got, in
    /// the row of the node that gave it, its latency (from when it was due
    /// to this last answer) recorded as any error reply's is, so the
    /// histograms add up to the requests; `why` says so (made once, for the first).
    pub fn given_up(&mut self, entry: &InFlight, row: Option<u16>, why: impl FnOnce() -> String, now: Instant) {
        let c = &mut self.counters;
        c.errors += 1;
        if let Some(h) = self.histogram.as_mut() {
            let latency_ns = now.saturating_duration_since(entry.intended).as_nanos() as u64;
            h.of(entry.command).record(latency_ns);
            if let Some(service) = self.service.as_mut() {
                service.record(now.saturating_duration_since(entry.sent_at).as_nanos() as u64);
            }
            c.requests += 1;
            if let Some(n) = row.and_then(|r| self.nodes.get_mut(r as usize)) {
                n.requests += 1;
                n.errors += 1;
                n.histogram.record(latency_ns);
            }
        }
        match entry.op {
            Op::Set => c.sets += 1,
            Op::Get => c.gets += 1,
        }
        self.unreported_replies += 1;
        self.unreported_errors += 1;
        self.given_up += 1;
        if self.first.error.is_none() {
            self.first.error = Some((now, why()));
        }
    }
}

/// Counts one reply against the request it answers, as the TS engine's onReply.
/// `replica`: `--read-from`, the reply came from a replica (a nil may be stale).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn count_reply(
    w: &PreparedPlan,
    tally: &mut Tally,
    scanner: &ReplyScanner,
    buf: &[u8],
    entry: &InFlight,
    keys: &[u64],
    now: Instant,
    latency_ns: u64,
    replica: bool,
) {
    let c = &mut tally.counters;
    if let Some(h) = tally.histogram.as_mut() {
        h.of(entry.command).record(latency_ns);
        if let Some(service) = tally.service.as_mut() {
            service.record(now.saturating_duration_since(entry.sent_at).as_nanos() as u64);
        }
        c.requests += 1;
    }
    match entry.op {
        Op::Set => c.sets += 1,
        Op::Get => c.gets += 1,
    }
    if scanner.kind == ReplyKind::Error {
        c.errors += 1;
        if tally.first.error.is_none() {
            keep_first_error(&mut tally.first, scanner, buf, now);
        }
        if entry.op == Op::Set {
            if let Some(names) = w.key_names.as_ref() {
                // Refused: not written, but no longer in flight (a later write of its keys may raise their floor).
                let keys = &keys[..w.commands[entry.command as usize].encoder.key_count()];
                names.on_write_answered(entry.command, keys, entry.generation, false);
            }
        }
        return;
    }
    if entry.op == Op::Set {
        c.ok += 1;
        // Only a write of the key's value makes a later read of its name find one (not INCR, LPUSH, …).
        if let Some(names) = w.key_names.as_ref() {
            let keys = &keys[..w.commands[entry.command as usize].encoder.key_count()];
            // A conditional write (SETNX, SET … NX/XX) may answer that it wrote nothing.
            let wrote = names.wrote(entry.command, scanner.kind, scanner.payload(buf));
            names.on_write_answered(entry.command, keys, entry.generation, wrote);
        }
        return;
    }
    let command = &w.commands[entry.command as usize];
    if command.array_reply {
        count_array_reply(w, tally, scanner, buf, entry.command, &keys[..command.encoder.key_count()], now, replica);
        return;
    }
    if scanner.kind == ReplyKind::Nil {
        // A replica may not have a write yet (replication lag): stale, not lost.
        if replica && (entry.written_before || w.miss_fails_verify) {
            c.stale_reads += 1;
            c.ok += 1;
        }
        // A key whose write was acknowledged before this read went out must be
        // there, unless a command that may remove it went out since.
        else if entry.written_before
            && w.key_names.as_ref().is_some_and(|n| n.is_lost(entry.command, entry.key_index))
        {
            c.lost_writes += 1;
        } else {
            c.misses += 1;
            if !w.miss_fails_verify {
                c.ok += 1;
            }
        }
        return;
    }
    if !w.verify {
        c.ok += 1;
        return;
    }
    let value = matches!(scanner.kind, ReplyKind::Bulk | ReplyKind::Verbatim);
    let verdict = if value {
        // A key whose generations this run tracks: how many it has drawn so far.
        let next =
            w.key_names.as_ref().filter(|_| w.key_generations).and_then(|n| n.next_of(entry.command, entry.key_index));
        value_verdict(w, scanner.payload(buf), entry.key_hash, entry.generation, next)
    } else {
        Verdict::Wrong
    };
    if verdict == Verdict::Fresh {
        c.ok += 1;
        return;
    }
    c.mismatches += 1;
    if tally.first.mismatch.is_none() {
        let text = match verdict {
            Verdict::Stale { got, wrote } => stale_text(w, entry.command, entry.key_index, got, wrote),
            _ => describe_mismatch(w, scanner, buf, entry.command, entry.key_index),
        };
        tally.first.mismatch = Some((now, text));
    }
}

/// Whether `got` is a fresh value of the key hashed to `h`, read with floor
/// `floor` (`crate::key_names`; 0: none). The run's own generation with no
/// floor past it is one comparison; anything else is decoded (a cold path
/// but in mixed runs with `--verify-get`, whose writes draw generations).
#[inline(always)]
fn value_verdict(w: &PreparedPlan, got: &[u8], h: u32, floor: u32, next: Option<u32>) -> Verdict {
    if floor <= 1 && w.values.matches(got, h) {
        return Verdict::Fresh;
    }
    generation_verdict(w, got, h, floor, next)
}

/// [`value_verdict`] for a value not of the run's generation: whose
/// generation it is, against what the run wrote. Every value of the factory
/// decodes to some generation of any key (its bytes derive from its own
/// first 8), so only a window near what was written counts: a generation up
/// to 65,536 older than `--value-generation` is stale, one far off is not a
/// value of this key at all. A key whose generations the run tracks
/// (`next`: the generations drawn for it so far) may also hold any of this
/// run's or an earlier run's (offsets below 2^16) until a sequential write
/// of it was acknowledged; from then on only the floor's and later ones.
#[inline(never)]
fn generation_verdict(w: &PreparedPlan, got: &[u8], h: u32, floor: u32, next: Option<u32>) -> Verdict {
    let Some(content) = content_of(got) else { return Verdict::Wrong };
    if !w.values.matches_of(got, h, content) {
        return Verdict::Wrong;
    }
    let base = w.values.generation;
    let generation = generation_of(h, content);
    let offset = generation.wrapping_sub(base);
    let behind_base = base.wrapping_sub(generation);
    let stale_of_base = (1..=0x10000).contains(&behind_base);
    match next {
        Some(_) if floor == 0 && offset <= 0xffff => Verdict::Fresh,
        Some(next) if floor > 0 && offset <= 0xffff => {
            let f = floor - 1;
            if (offset.wrapping_sub(f) & 0xffff) < (next.wrapping_sub(f) & 0xffff) {
                Verdict::Fresh
            } else {
                // Older than the floor, or an earlier run's value the floor's write replaced.
                Verdict::Stale { got: generation, wrote: base.wrapping_add(f) }
            }
        }
        _ if w.generation_window && offset <= 0xffff => Verdict::Fresh,
        _ if stale_of_base => Verdict::Stale { got: generation, wrote: base },
        _ => Verdict::Wrong,
    }
}

/// The first stale value's description. Cold: once a run.
#[cold]
fn stale_text(w: &PreparedPlan, command: u16, key_index: u64, got: u32, wrote: u32) -> String {
    format!(
        "key {}: stale value: generation {got}, wrote {wrote} (the server acknowledged a newer write and returned an older value)",
        w.key_name_text(command, key_index)
    )
}

/// The first error reply's text (at most [`MAX_ERROR_TEXT`] bytes). Out of
/// line: it runs once a run, and the reply loop it sits in stays small.
#[cold]
#[inline(never)]
fn keep_first_error(first: &mut FirstTexts, scanner: &ReplyScanner, buf: &[u8], now: Instant) {
    let text = scanner.payload(buf);
    let text: String = text[..text.len().min(MAX_ERROR_TEXT)].iter().map(|&b| b as char).collect();
    first.error = Some((now, text));
}

/// A read answered with one value per key (MGET), as `countArrayReply` in
/// the TS engine: each element is checked against its key's value
/// (`--verify-get`). The request counts once: a mismatch if any key's value
/// differs (the first one described), else a miss if any key was nil, else ok.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn count_array_reply(
    w: &PreparedPlan,
    tally: &mut Tally,
    s: &ReplyScanner,
    buf: &[u8],
    command: u16,
    keys: &[u64],
    now: Instant,
    replica: bool,
) {
    let c = &mut tally.counters;
    // The text is made for the first mismatch only: later ones allocate nothing.
    let mismatch = |tally_first: &mut FirstTexts, text: &dyn Fn() -> String| {
        if tally_first.mismatch.is_none() {
            tally_first.mismatch = Some((now, text()));
        }
    };
    if s.kind != ReplyKind::Aggregate || s.payload_len != keys.len() {
        if !w.verify {
            c.ok += 1;
        } else {
            c.mismatches += 1;
            let text = || {
                format!(
                    "key {}: expected an array of {} values, got \"{}\"",
                    w.key_name_text(command, keys[0]),
                    keys.len(),
                    escape_bytes(buf, s.payload_start.saturating_sub(1), (s.payload_start + 16).min(buf.len()), 48)
                )
            };
            mismatch(&mut tally.first, &text);
        }
        return;
    }
    let mut pos = s.payload_start;
    let mut nils = 0;
    for &key in keys {
        match buf[pos] {
            b'_' => {
                // RESP3 null
                nils += 1;
                pos += 3;
                continue;
            }
            b'$' => {}
            _ => {
                // Not a bulk string: not a value (the rest cannot be walked without the scanner).
                if !w.verify {
                    c.ok += 1;
                } else {
                    c.mismatches += 1;
                    let text = || {
                        format!(
                            "key {}: expected a value, got \"{}\"",
                            w.key_name_text(command, key),
                            escape_bytes(buf, pos, (pos + 16).min(buf.len()), 48)
                        )
                    };
                    mismatch(&mut tally.first, &text);
                }
                return;
            }
        }
        let mut p = pos + 1;
        let negative = buf[p] == b'-';
        if negative {
            p += 1;
        }
        let mut len = 0usize;
        while buf[p] != b'\r' {
            len = len * 10 + (buf[p] - b'0') as usize;
            p += 1;
        }
        p += 2;
        if negative {
            nils += 1;
            pos = p;
            continue;
        }
        let got = &buf[p..p + len];
        if w.verify && value_verdict(w, got, w.key_hash_of(key), 0, None) != Verdict::Fresh {
            c.mismatches += 1;
            let text = || {
                let expected = w.value_bytes(key);
                let at = first_difference(&expected, got);
                format!(
                    "key {}: {} bytes expected, {} received, first difference at byte {at}: expected \"{}\", got \"{}\"",
                    w.key_name_text(command, key),
                    expected.len(),
                    len,
                    escape_bytes(&expected, 0, expected.len(), 48),
                    escape_bytes(got, 0, got.len(), 48)
                )
            };
            mismatch(&mut tally.first, &text);
            return;
        }
        pos = p + len + 2;
    }
    if nils == 0 {
        c.ok += 1;
    } else if replica && w.miss_fails_verify {
        // --read-from: a preloaded key a replica has not got yet (replication lag): stale, as a single read's nil.
        c.stale_reads += 1;
        c.ok += 1;
    } else {
        c.misses += 1;
        if !w.miss_fails_verify {
            c.ok += 1;
        }
    }
}

/// `key K: …` with both lengths and the first byte that differs, both sides
/// shown from a little before it (two 1 MiB values differing at byte
/// 900,000 show that byte, not two equal prefixes). Worded as the TS engine.
#[cold]
fn describe_mismatch(w: &PreparedPlan, s: &ReplyScanner, buf: &[u8], command: u16, key_index: u64) -> String {
    let expected = w.value_bytes(key_index);
    let key = w.key_name_text(command, key_index);
    if !matches!(s.kind, ReplyKind::Bulk | ReplyKind::Verbatim) {
        return format!(
            "key {key}: expected a {}-byte value, got a non-bulk reply \"{}\"",
            expected.len(),
            escape_bytes(buf, s.payload_start.saturating_sub(1), s.payload_start + s.payload_len + 2, 48)
        );
    }
    let got = s.payload(buf);
    let at = first_difference(&expected, got);
    let from = if at < 16 { 0 } else { at - 8 };
    let shown = |b: &[u8]| format!("\"{}{}\"", if from > 0 { "…" } else { "" }, escape_bytes(b, from, b.len(), 48));
    format!(
        "key {key}: {} bytes expected, {} received, first difference at byte {at}: expected {}, got {}",
        expected.len(),
        got.len(),
        shown(&expected),
        shown(got)
    )
}

/// One op kind's latencies in the interval, packed: `--mode`'s command's
/// own histogram, or a mix's commands of that kind added.
fn op_packed(h: &OpHistograms, op: Op) -> PackedBuckets {
    match h.mode_histogram(op) {
        Some(own) => PackedBuckets::of(own),
        None => PackedBuckets::of(&h.of_op(op)),
    }
}

/// The timed phase's time series in one worker: its latencies go into the
/// tally's histograms, which hold the current interval only; at each
/// boundary they are added to the phase's, packed into a record for
/// [`RunControl::push_interval`] (2–3 bytes a non-empty bucket:
/// [`PackedBuckets`]) and emptied. No work per reply: a clock
/// read per loop turn, and per interval a copy of the counters and two
/// histogram walks.
pub(crate) struct IntervalClock {
    every: Duration,
    started: Instant,
    /// The next boundary.
    pub next: Instant,
    index: u64,
    /// The counters at the start of the current interval.
    before: Counters,
    /// The phase's latencies so far, the current interval apart.
    pub phase: OpHistograms,
    /// A command mix: each interval carries each command's latencies.
    per_command: bool,
}

impl IntervalClock {
    pub fn new(every: Duration, started: Instant, phase: OpHistograms, per_command: bool) -> IntervalClock {
        IntervalClock {
            every,
            started,
            next: started + every,
            index: 0,
            before: Counters::default(),
            phase,
            per_command,
        }
    }

    /// Ends the current interval at `now` (at its boundary, or earlier for
    /// the last one), then starts the one `now` falls in; intervals a
    /// descheduled thread slept through are recorded empty.
    pub fn cut(&mut self, tally: &mut Tally, now: Instant, control: &RunControl, connections: u64) {
        let Some(current) = tally.histogram.as_mut() else { return };
        let at = |i: u64| self.every.as_nanos() as u64 * i;
        let elapsed = now.saturating_duration_since(self.started).as_nanos() as u64;
        control.push_interval(IntervalRecord {
            index: self.index,
            start_ns: at(self.index),
            end_ns: elapsed.min(at(self.index + 1)),
            counters: tally.counters.since(&self.before),
            set_histogram: op_packed(current, Op::Set),
            get_histogram: op_packed(current, Op::Get),
            command_histograms: if self.per_command {
                current.by_command.iter().map(PackedBuckets::of).collect()
            } else {
                Vec::new()
            },
            connections,
        });
        self.phase.merge(current);
        current.reset();
        self.before = tally.counters;
        self.index += 1;
        while self.next + self.every <= now {
            control.push_interval(IntervalRecord {
                index: self.index,
                start_ns: at(self.index),
                end_ns: at(self.index + 1),
                command_histograms: if self.per_command {
                    vec![PackedBuckets::default(); current.by_command.len()]
                } else {
                    Vec::new()
                },
                connections,
                ..IntervalRecord::default()
            });
            self.index += 1;
            self.next += self.every;
        }
        self.next += self.every;
    }

    /// The last interval cut at the end, and the phase's latencies back in the tally.
    pub fn finish(mut self, tally: &mut Tally, now: Instant, control: &RunControl, connections: u64) {
        self.cut(tally, now, control, connections);
        if let Some(h) = tally.histogram.as_mut() {
            *h = self.phase;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a fine `--interval` keeps until the run ends is every cut
    /// interval's record: its histograms must cost a few bytes a non-empty
    /// bucket (16 as `(value, count)` pairs, then more as JS arrays), and
    /// decode to the buckets recorded.
    #[test]
    fn a_cut_interval_keeps_its_buckets_in_a_few_bytes_each() {
        let control = RunControl::new();
        let started = Instant::now();
        let mut tally = Tally { histogram: Some(OpHistograms::of_mode()), ..Tally::default() };
        let mut clock = IntervalClock::new(Duration::from_millis(10), started, OpHistograms::of_mode(), false);
        let mut recorded = Vec::new();
        for interval in 0..20u64 {
            let h = tally.histogram.as_mut().unwrap();
            for k in 0..5_000u64 {
                // Latencies from 10 µs to ~10 ms, a different spread each interval.
                h.of(0).record(10_000 + (k * 7_919 + interval * 104_729) % 10_000_000);
            }
            recorded.push(h.by_command[0].buckets());
            clock.cut(&mut tally, started + Duration::from_millis(10 * (interval + 1)), &control, 1);
        }
        let records = control.take_intervals();
        assert_eq!(records.len(), 20);
        for (record, buckets) in records.iter().zip(&recorded) {
            assert!(buckets.len() > 1_000, "a wide interval: {} buckets", buckets.len());
            let held = std::mem::size_of_val(&*record.set_histogram) + std::mem::size_of_val(&*record.get_histogram);
            assert!(held <= 3 * buckets.len(), "{held} bytes for {} buckets", buckets.len());
            assert_eq!(&record.set_histogram.to_buckets(), buckets);
        }
    }
}
