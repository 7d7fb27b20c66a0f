//! Router: which Link a client's request goes to. One server: always the
//! client's own Link ([`SingleTarget`], which compiles to nothing). A
//! cluster ([`ClusterRouter`]): the key's slot picks the primary (the
//! client's RequestSource walks its own primary's share, CRC16 via
//! `slot.rs`); a MOVED, ASK, TRYAGAIN or CLUSTERDOWN reply sends the
//! request again on the Link of the node it names, of the same client —
//! opened on first use by a helper thread, so the worker never blocks on a
//! connect — and a MOVED sends the slot's later requests straight there.
//! A Link the Router opened is a Link like any other: same ring, same
//! reply loop ([`crate::link::Link::take_replies`]).
use std::time::{Duration, Instant};

use crate::link::{InFlight, Link};
use crate::plan::Failure;
use crate::request_source::{PreparedPlan, Request};
use crate::tally::Tally;
use crate::topology::SlotMap;

mod cluster;
pub(crate) use cluster::ClusterRouter;

/// TRYAGAIN / CLUSTERDOWN: first wait before sending again, doubled each time, capped (as the TS engine).
const RETRY_BACKOFF: Duration = Duration::from_millis(10);
const RETRY_BACKOFF_CAP: Duration = Duration::from_millis(500);
pub(crate) const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";
/// The peer that is the client's own Link.
pub(crate) const HOME: usize = 0;

/// The wait before retry `n` (1-based): RETRY_BACKOFF doubled each time, capped (as the TS engine).
pub(crate) fn backoff(n: u32) -> Duration {
    RETRY_BACKOFF.saturating_mul(1 << (n - 1).min(10)).min(RETRY_BACKOFF_CAP)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    Moved,
    Ask,
    Retry,
}

/// Which redirection an error reply's text is, if any. A MOVED or ASK must
/// be whole, `MOVED <slot 0..16383> <host>:<port 1..65535>` (the host may be
/// empty: the node asked); one that is not (`MOVED abc`) is no redirection
/// but an error reply, counted once as any other, its text naming it.
pub(crate) fn redirect_kind(payload: &[u8]) -> Option<Redirect> {
    if payload.starts_with(b"MOVED ") {
        well_formed(&payload[6..]).then_some(Redirect::Moved)
    } else if payload.starts_with(b"ASK ") {
        well_formed(&payload[4..]).then_some(Redirect::Ask)
    } else if payload.starts_with(b"TRYAGAIN") || payload.starts_with(b"CLUSTERDOWN") {
        Some(Redirect::Retry)
    } else {
        None
    }
}

/// `<slot> <host>:<port>` with a slot of the cluster and a port number.
fn well_formed(rest: &[u8]) -> bool {
    let Some(space) = rest.iter().position(|&b| b == b' ') else { return false };
    let (slot, target) = (&rest[..space], &rest[space + 1..]);
    let Some(colon) = target.iter().rposition(|&b| b == b':') else { return false };
    let (host, port) = (&target[..colon], &target[colon + 1..]);
    let number = |digits: &[u8], max: u32| {
        (1..=5).contains(&digits.len())
            && digits.iter().all(u8::is_ascii_digit)
            && digits.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')) <= max
    };
    number(slot, 16383) && number(port, 65535) && port != b"0" && !host.iter().any(|&b| b <= b' ' || b == 0x7f)
}

/// MOVED / ASK replies one request follows in a row (with no TRYAGAIN or
/// CLUSTERDOWN between them) before it counts as a redirection loop: as
/// Jedis (maxAttempts 5) and Lettuce (maxRedirects 5). A real chain is one
/// or two (ASK while a slot migrates, MOVED after a failover or a
/// resharding); a ping-pong of two nodes that disagree gives up after its
/// backoffs, 10 + 20 + 40 ms, not at `--timeout`.
pub(crate) const MAX_REDIRECTIONS: u8 = 5;

/// The share of `--timeout` (from a request's first send) within which a
/// redirected or retried request may still go again: the rest is left for
/// the last try's reply, so the request ends as the error reply it got,
/// never as "no reply within --timeout".
pub(crate) fn resend_budget(timeout_ms: u64) -> Duration {
    Duration::from_millis(if timeout_ms > 0 { timeout_ms } else { 10_000 }) * 3 / 4
}

/// What a client asks of its Router. Chosen once per run: the worker loop
/// is compiled once per kind, so one server pays for none of a cluster's
/// work (every default below is that of one server).
pub(crate) trait Router: Sized + Send {
    /// Whether replies may redirect (a cluster).
    const REDIRECTS: bool;
    /// Client `id`'s Router; `node` is its own primary, reached at `home` (`host:port`).
    fn for_client(w: &PreparedPlan, id: u32, node: Option<u16>, home: String) -> Self;
    /// The peer a MOVED said request `r`'s slot now lives on (None: the client's own Link).
    fn moved_to(&self, r: &Request) -> Option<usize>;
    /// Requests the Router holds: waiting to go again, or in flight on its Links.
    fn pending(&self) -> usize;
    /// A redirection (`kind`, reply text `text`) of `entry` (keys `keys`),
    /// answered by peer `from` (None: no node answered, its node could not be reached).
    #[allow(clippy::too_many_arguments)]
    fn redirect(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        entry: InFlight,
        keys: &[u64],
        kind: Redirect,
        text: &[u8],
        from: Option<usize>,
        now: Instant,
    );
    /// A request of a moved slot, encoded as `bytes`, goes straight to `peer`.
    fn send_straight(&mut self, _peer: usize, _bytes: &[u8], _keys: &[u64], _entry: InFlight) {}
    /// One turn: what is due goes out (`home`: the client's own Link).
    fn service(
        &mut self,
        _w: &PreparedPlan,
        _tally: &mut Tally,
        _home: &mut Link,
        _now: Instant,
    ) -> Result<(), Failure> {
        Ok(())
    }
    /// When the Router next needs a turn no socket event gives.
    fn next_wake(&self, _now: Instant) -> Option<Instant> {
        None
    }
    /// Send time of the oldest request it holds.
    fn oldest_sent_at(&self) -> Option<Instant> {
        None
    }
    /// Where the Links it opens are registered, each under `token_of(peer)`.
    fn attach(&mut self, _registry: Option<mio::Registry>, _token_of: fn(u32, usize) -> mio::Token, _client: u32) {}
    /// Peer `k`'s Link, lent to the client for a socket event (give it back with [`Router::put_link`]).
    fn take_link(&mut self, _k: usize) -> Option<Link> {
        None
    }
    fn put_link(&mut self, _k: usize, _link: Link) {}
    /// How many peers it has (their Links, open or not, are `1..peers()`).
    fn peers(&self) -> usize {
        1
    }
    /// The per-node row peer `k`'s replies count in.
    fn row_of(&self, _k: usize) -> Option<u16> {
        None
    }
    /// A Link of the Router failed (ends the run, `--reconnect` or not).
    fn link_failed(&self) -> bool {
        false
    }
    fn mark_failed(&mut self) {}
    /// Peer `k`'s server closed its Link with nothing in flight: forget it (reopened on next use).
    fn close_idle(&mut self, _k: usize, _link: Link) {}
    /// `--reconnect`: peer `k`'s Link failed (`why`): what was in flight on
    /// it counts as lost, as on a client's own Link, and the Link is gone;
    /// the peer's later requests open it again, or, while its node cannot
    /// be reached, ask the client's own node again after a backoff.
    fn drop_peer(&mut self, _k: usize, _link: Link, _tally: &mut Tally) {}
    /// A topology refresh's whole new map: each slot's later requests go
    /// straight to its owner (the client's own node: the source's routing).
    fn apply_topology(&mut self, _w: &PreparedPlan, _tally: &mut Tally, _map: &SlotMap) {}
    /// `(host, port)` of the node the last MOVED named.
    fn moved_target(&self) -> Option<(String, u16)> {
        None
    }
    /// The slots MOVED replies moved since [`Router::clear_moved_news`],
    /// each with the `host:port` they went to: news for the worker's other
    /// clients, whose requests of those slots then go straight there too.
    fn moved_news(&self) -> impl Iterator<Item = (u16, &str)> {
        std::iter::empty()
    }
    fn clear_moved_news(&mut self) {}
    /// Another client of the worker got a MOVED: `slot` is at `target` now.
    fn learn_moved(&mut self, _w: &PreparedPlan, _tally: &mut Tally, _slot: u16, _target: &str) {}
    /// `--reconnect`: the client's own Link opened again at `target`
    /// (`host:port`), which under `--cluster` may be another primary than its
    /// own: the node that answers on it from now on.
    fn rehome(&mut self, _w: &PreparedPlan, _tally: &mut Tally, _target: &str) {}
}

/// One server: every request on the client's own Link; nothing redirects.
#[derive(Debug, Default)]
pub(crate) struct SingleTarget;

impl Router for SingleTarget {
    const REDIRECTS: bool = false;
    fn for_client(_: &PreparedPlan, _: u32, _: Option<u16>, _: String) -> Self {
        SingleTarget
    }
    #[inline(always)]
    fn moved_to(&self, _: &Request) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn pending(&self) -> usize {
        0
    }
    #[rustfmt::skip]
    fn redirect(&mut self, _: &PreparedPlan, _: &mut Tally, _: InFlight, _: &[u64], _: Redirect, _: &[u8], _: Option<usize>, _: Instant) {}
}

/// The reply text, at most 300 bytes, for a message.
fn reply_text(text: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&text[..text.len().min(300)])
}

/// Why a request in a redirection loop was given up: its last hop named.
pub(crate) fn loop_text(text: &[u8], answered: &str, hops: u8) -> String {
    format!(
        "redirected {hops} times in a row, the last: {answered} answered {} (a redirection loop: --cluster follows at most {MAX_REDIRECTIONS} MOVED/ASK in a row)",
        reply_text(text)
    )
}

/// Why a request still redirected or refused near `--timeout` was given up.
pub(crate) fn budget_text(text: &[u8], retries: u8, since: Duration, budget: Duration) -> String {
    format!(
        "{} (still, after {retries} retries in {} ms: --cluster sends a request again for at most {} ms, 3/4 of --timeout, from its first send)",
        reply_text(text),
        since.as_millis(),
        budget.as_millis()
    )
}
