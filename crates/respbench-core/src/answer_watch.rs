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
}

impl AnswerWatch {
    /// `answers`: the worker's answers so far; `waiting`: requests out (sent,
    /// queued for a node, or waiting for a backoff). Returns how long
    /// requests have been out with no answer (zero when one came since the last look).
    pub fn look(&mut self, answers: u64, waiting: bool, now: Instant) -> Duration {
        if self.mark != Some(answers) || !waiting {
            self.mark = Some(answers);
            self.since = Some(now);
            return Duration::ZERO;
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
    fn only_time_with_requests_out_and_no_answer_counts() {
        let mut w = AnswerWatch::default();
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        assert_eq!(w.look(0, true, t0), Duration::ZERO);
        assert_eq!(w.look(0, true, t0 + s), s);
        // An answer starts the wait again.
        assert_eq!(w.look(1, true, t0 + 2 * s), Duration::ZERO);
        assert_eq!(w.look(1, true, t0 + 5 * s), 3 * s);
        // Nothing out: no wait, however long since the last answer.
        assert_eq!(w.look(1, false, t0 + 9 * s), Duration::ZERO);
        assert_eq!(w.look(1, true, t0 + 10 * s), s);
    }
}
