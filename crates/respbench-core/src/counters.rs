//! Per-thread reply counters. Each worker thread owns one set and never
//! shares it while the phase runs, so counting is plain integer adds; the
//! sets are merged when the threads join.

use std::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Timed requests that got a reply (run phase only).
    pub requests: u64,
    pub sets: u64,
    pub gets: u64,
    pub ok: u64,
    pub errors: u64,
    pub misses: u64,
    pub mismatches: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// When and what: merging keeps the earliest across threads.
    pub first_error: Option<(Instant, String)>,
    pub first_mismatch: Option<(Instant, String)>,
}

impl Counters {
    pub fn merge(&mut self, other: Counters) {
        self.requests += other.requests;
        self.sets += other.sets;
        self.gets += other.gets;
        self.ok += other.ok;
        self.errors += other.errors;
        self.misses += other.misses;
        self.mismatches += other.mismatches;
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
        self.first_error = earliest(self.first_error.take(), other.first_error);
        self.first_mismatch = earliest(self.first_mismatch.take(), other.first_mismatch);
    }

    pub fn first_error_text(&self) -> Option<String> {
        self.first_error.as_ref().map(|(_, t)| t.clone())
    }

    pub fn first_mismatch_text(&self) -> Option<String> {
        self.first_mismatch.as_ref().map(|(_, t)| t.clone())
    }
}

fn earliest(a: Option<(Instant, String)>, b: Option<(Instant, String)>) -> Option<(Instant, String)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}
