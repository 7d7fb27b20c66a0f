//! Pacer: when a client's next request is due. Closed loop (no rate): as
//! soon as the window has room; `--rate`: request k of the client's stream
//! is due at `start + offset + k * interval`, so clients take turns instead
//! of firing together; a time-bound phase (`--duration`, `--warmup`) also
//! stops sending at its deadline. The Pacer only answers questions; the
//! Client asks it before drawing requests and the worker asks it when to
//! wake. `--ramp-connections` is the worker's: it decides when a client
//! opens, not when its requests go.

use std::time::{Duration, Instant};

use crate::histogram::LatencyHistogram;

/// When a client may send: a deadline for time-bound phases and a schedule
/// for `--rate`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pacer {
    /// No request is sent after this.
    pub deadline: Option<Instant>,
    /// Seconds between two of this client's requests (connections / rate);
    /// None sends as fast as replies allow.
    pub interval: Option<f64>,
    /// Seconds into the schedule of this client's first request
    /// (connection / rate), so clients do not fire together.
    pub offset: f64,
    /// Where the schedule counts from (the client's start).
    pub started_at: Option<Instant>,
}

impl Pacer {
    /// `--rate`: client `id`'s schedule among `connections` at `rate` per
    /// second in all; closed loop when `rate` is None.
    pub fn new(rate: Option<f64>, connections: u32, id: u32) -> Pacer {
        match rate {
            Some(rate) if rate > 0.0 => {
                Pacer { interval: Some(connections as f64 / rate), offset: id as f64 / rate, ..Pacer::default() }
            }
            _ => Pacer::default(),
        }
    }

    /// Whether anything but replies decides when to send.
    pub fn is_paced(&self) -> bool {
        self.deadline.is_some() || self.interval.is_some()
    }

    /// The schedule starts now (the client's first send).
    pub fn start(&mut self, now: Instant) {
        self.started_at = Some(now);
    }

    /// Whether a time-bound phase's time is up at `now`.
    #[inline]
    pub fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// `--rate`: how many of the stream's requests are due by `now`
    /// (`u64::MAX` in a closed loop: all of them).
    #[inline]
    pub fn due_count(&self, now: Instant) -> u64 {
        let Some(interval) = self.interval else { return u64::MAX };
        let started = self.started_at.unwrap_or(now);
        let into = now.saturating_duration_since(started).as_secs_f64() - self.offset;
        if into < 0.0 { 0 } else { (into / interval).floor() as u64 + 1 }
    }

    /// `--rate`: when request `k` of the stream is due (None in a closed loop).
    #[inline]
    pub fn due_at(&self, k: u64) -> Option<Instant> {
        let interval = self.interval?;
        let started = self.started_at?;
        Some(started + Duration::from_secs_f64(self.offset + k as f64 * interval))
    }

    /// When request `ordinal` of the stream was due, its schedule lag
    /// (actual send − intended) recorded in `lag`; `now` in a closed loop.
    #[inline]
    pub fn intended(&self, ordinal: u64, now: Instant, lag: Option<&mut LatencyHistogram>) -> Instant {
        match self.due_at(ordinal) {
            Some(at) => {
                if let Some(lag) = lag {
                    lag.record(now.saturating_duration_since(at).as_nanos() as u64);
                }
                at
            }
            None => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_has_everything_due_now() {
        let mut p = Pacer::new(None, 4, 1);
        let now = Instant::now();
        p.start(now);
        assert!(!p.is_paced());
        assert_eq!(p.due_count(now), u64::MAX);
        assert_eq!(p.due_at(3), None);
        assert_eq!(p.intended(7, now, None), now);
    }

    #[test]
    fn rate_schedule_spaces_a_clients_requests_and_staggers_clients() {
        // 2 clients at 1000/s in all: each sends every 2 ms, client 1 starts 1 ms after client 0.
        let start = Instant::now();
        let mut c0 = Pacer::new(Some(1000.0), 2, 0);
        let mut c1 = Pacer::new(Some(1000.0), 2, 1);
        c0.start(start);
        c1.start(start);
        assert_eq!(c0.due_at(0), Some(start));
        assert_eq!(c0.due_at(3), Some(start + Duration::from_millis(6)));
        assert_eq!(c1.due_at(0), Some(start + Duration::from_millis(1)));
        assert_eq!(c1.due_at(2), Some(start + Duration::from_millis(5)));
        // At start: client 0's first request is due, client 1's not yet.
        assert_eq!(c0.due_count(start), 1);
        assert_eq!(c1.due_count(start), 0);
        // 4.5 ms in: client 0 has requests 0, 1, 2 due (0, 2, 4 ms); client 1 has 0 and 1 (1, 3 ms).
        let later = start + Duration::from_micros(4500);
        assert_eq!(c0.due_count(later), 3);
        assert_eq!(c1.due_count(later), 2);
    }

    #[test]
    fn late_sends_record_their_schedule_lag() {
        let start = Instant::now();
        let mut p = Pacer::new(Some(100.0), 1, 0);
        p.start(start);
        let mut lag = LatencyHistogram::new();
        let sent = start + Duration::from_millis(25);
        // Request 2 was due at 20 ms: it went 5 ms late, and its latency counts from 20 ms.
        assert_eq!(p.intended(2, sent, Some(&mut lag)), start + Duration::from_millis(20));
        assert_eq!(lag.total(), 1);
        assert!((4_900_000..=5_100_000).contains(&lag.value_at_quantile(1.0)), "{}", lag.value_at_quantile(1.0));
    }

    #[test]
    fn a_deadline_ends_sending() {
        let now = Instant::now();
        let p = Pacer { deadline: Some(now + Duration::from_millis(5)), ..Pacer::default() };
        assert!(p.is_paced());
        assert!(!p.expired(now));
        assert!(p.expired(now + Duration::from_millis(5)));
    }
}
