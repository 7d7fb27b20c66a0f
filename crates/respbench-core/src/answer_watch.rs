//! `--cluster`: a phase in which no node answers any request. A slot
//! answered TRYAGAIN or CLUSTERDOWN is sent again with backoff and given up
//! after 3/4 of `--timeout` (the Router), so each request ends; but a
//! cluster that serves nothing at all (every node down or refusing, a
//! failover that never comes) would then hold a counted run for a whole
//! window every 3/4 of `--timeout`, for hours. "No reply within --timeout"
//! is a stall, and so is "no answer within --timeout": replies that only
//! send a request again (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) and requests
//! given up after them are no answer. The worker looks at its answers when
//! it looks at its reply deadlines, so the request path pays nothing for
//! this. Paired with packages/cli/src/engine-js/answer-watch.ts.

use std::time::{Duration, Instant};

use crate::counters::Counters;

/// The phase's answers at the last look, and since when none came while requests were out.
#[derive(Debug, Default)]
pub(crate) struct AnswerWatch {
    mark: Option<u64>,
    since: Option<Instant>,
    /// Whether `since` holds for the requests out now (set at the first look that found them).
    armed: bool,
}

impl AnswerWatch {
    /// `answers`: the worker's answers so far; `oldest_sent`: the first send
    /// of the oldest request out (sent, queued for a node, or waiting for a
    /// backoff), None when none is. Returns how long requests have been out
    /// with no answer: from the later of the last look that saw an answer
    /// and the oldest request's send, so that an idle gap before it does not
    /// count (zero when an answer came since the last look), as the TS engine's.
    pub fn look(&mut self, answers: u64, oldest_sent: Option<Instant>, now: Instant) -> Duration {
        let Some(oldest) = oldest_sent.filter(|_| self.mark == Some(answers)) else {
            self.mark = Some(answers);
            self.since = Some(now);
            self.armed = false;
            return Duration::ZERO;
        };
        let since = self.since.unwrap_or(now);
        if !self.armed {
            self.since = Some(since.max(oldest));
            self.armed = true;
        }
        self.since.map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }
}

/// Answered requests among the counted ones: every reply counts a SET or a
/// GET, a request given up after redirections too.
pub(crate) fn answers(c: &Counters, given_up: u64) -> u64 {
    (c.sets + c.gets).saturating_sub(given_up)
}

/// The failure's words, as the TS engine's noAnswerText.
pub(crate) fn no_answer_text(where_: &str, timeout_ms: u64, answers: u64, given_up: u64, c: &Counters) -> String {
    format!(
        "{where_}: no answer within {timeout_ms} ms (--timeout) after {answers} answered and {given_up} given up: every reply since was a redirection, sent again (so far MOVED {}, ASK {}, TRYAGAIN/CLUSTERDOWN {}): no node served these requests",
        c.moved, c.asked, c.retried
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_time_with_requests_out_and_no_answer_counts_from_the_oldest_send() {
        let mut w = AnswerWatch::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(w.look(0, Some(t0), t0), Duration::ZERO);
        assert_eq!(w.look(0, Some(t0), t0 + ms(1000)), ms(1000));
        // An answer starts the wait again.
        assert_eq!(w.look(1, Some(t0 + ms(1500)), t0 + ms(2000)), Duration::ZERO);
        assert_eq!(w.look(1, Some(t0 + ms(1500)), t0 + ms(5000)), ms(3000));
        // Nothing out: no wait, however long since the last answer.
        assert_eq!(w.look(1, None, t0 + ms(9000)), Duration::ZERO);
        // The next request went out after that look: the wait counts from its send.
        assert_eq!(w.look(1, Some(t0 + ms(9400)), t0 + ms(10_000)), ms(600));
        // Requests given up and sent again keep the wait going.
        assert_eq!(w.look(1, Some(t0 + ms(11_000)), t0 + ms(11_500)), ms(2100));
    }
}
