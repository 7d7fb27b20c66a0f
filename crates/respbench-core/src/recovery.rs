//! Recovery: `--reconnect`. A client whose own Link dropped is down: what
//! was in flight on it counts as lost (handed out, never answered, not sent
//! again, so the key stream goes on where it was); it opens again after a
//! backoff, to its own primary or, every other attempt under `--cluster`,
//! another one in turn (a primary that died stays dead, and another one
//! answers with MOVED to whoever took its slots over); after the last
//! attempt the run fails. The worker asks when an attempt is due and
//! where it goes; opening is [`crate::open::open`]'s.

use std::time::{Duration, Instant};

use crate::plan::{Plan, Reconnect};

/// A dropped client waiting to be opened again.
#[derive(Debug)]
pub(crate) struct Down {
    /// When it dropped: the time down counts from here.
    pub since: Instant,
    /// Attempts made since the drop.
    pub attempts: u32,
    /// When the next attempt is due.
    pub retry_at: Instant,
    /// Why it dropped, for the message if it never comes back.
    pub why: String,
}

impl Down {
    /// Down after a drop; `attempts`: the reopened Links in a row that
    /// closed before any reply (0 after a Link that had replies), from which
    /// the attempts count on, the next one after its backoff (at once for 0).
    pub fn after(why: String, attempts: u32, policy: &Reconnect, now: Instant) -> Down {
        let retry_at = now + Duration::from_millis(policy.delay_ms(attempts));
        Down { since: now, attempts, retry_at, why }
    }

    /// An attempt failed (`why`): Err with the run's failure text after the
    /// last one, else the next attempt is due after the policy's backoff
    /// (no later than the end of a time-bound phase, `deadline`).
    pub fn failed_attempt(
        &mut self,
        policy: &Reconnect,
        why: &str,
        deadline: Option<Instant>,
    ) -> Result<Instant, String> {
        self.attempts += 1;
        if self.attempts >= policy.attempts {
            return Err(format!(
                "{}; not reconnected after {} attempts (--reconnect-attempts), the last: {why}",
                self.why, policy.attempts
            ));
        }
        self.retry_at = Instant::now() + Duration::from_millis(policy.delay_ms(self.attempts));
        if let Some(d) = deadline {
            self.retry_at = self.retry_at.min(d);
        }
        Ok(self.retry_at)
    }
}

/// Where attempt `attempt` of a client goes: under `--cluster`, its own
/// primary `node` on even attempts and another primary in turn on odd ones
/// (as the TS engine's reconnectTarget); a `--read-from` replica's socket
/// opens again to its replica (READONLY) on even attempts; one server: the plan's.
pub(crate) fn reconnect_target(
    plan: &Plan,
    node: Option<u16>,
    replica: Option<&(String, u16)>,
    attempt: usize,
) -> Plan {
    match (node, &plan.cluster) {
        (Some(_), Some(_)) if replica.is_some() && attempt % 2 == 0 => {
            let (host, port) = replica.cloned().unwrap_or_default();
            Plan { host, port, socket: None, read_only: true, ..plan.clone() }
        }
        (Some(n), Some(c)) => {
            let count = c.nodes.len();
            let index = if count < 2 || attempt % 2 == 0 {
                n as usize
            } else {
                (n as usize + 1 + (attempt >> 1) % (count - 1)) % count
            };
            let (host, port) = &c.nodes[index];
            Plan { host: host.clone(), port: *port, socket: None, ..plan.clone() }
        }
        _ => plan.clone(),
    }
}
