//! [`ClusterRouter`]: `--cluster`'s routing for one client: the slot map's
//! corrections (what MOVED said and what a topology refresh brought), the
//! Links redirections opened (on a helper thread), and the requests waiting
//! to go again. The [`Router`] trait and the one-server router are in the
//! parent module.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use super::{ASKING, HOME, MAX_REDIRECTIONS, Redirect, Router, backoff, budget_text, loop_text, resend_budget};
use crate::cluster_plan::endpoint_label;
use crate::command::KeyScratch;
use crate::handshake::ConnectError;
use crate::keys::KeyStream;
use crate::link::{InFlight, Link};
use crate::plan::{Failure, FailureKind, Plan};
use crate::progress::RunControl;
use crate::request_source::{PreparedPlan, Request};
use crate::tally::Tally;
use crate::topology::SlotMap;
use crate::transport::Stream;

/// MOVED / ASK hops of one request sent again at once; later ones wait a backoff.
const FREE_HOPS: u8 = 2;
/// Salt of the `__rand_int__` stream of requests sent again (as the TS engine's).
const RESEND_RAND_SALT: u32 = 0x5bd1_e995;
/// Hash slots of a cluster.
const SLOTS: usize = 16384;
/// How often the worker looks whether a helper thread has opened a Link.
const OPEN_POLL: Duration = Duration::from_millis(1);

/// A request the Router holds until it may go again.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    entry: InFlight,
    /// A multi-key command's keys: `ClusterRouter::keys[keys_at..]` (`NO_KEYS`: `entry.key_index`).
    keys_at: u32,
    /// TRYAGAIN / CLUSTERDOWN, or a third hop: not sent again before this.
    not_before: Instant,
}

/// `Waiting::keys_at` of a one-key request.
const NO_KEYS: u32 = u32::MAX;

/// A node this client sends to: its own (peer [`HOME`], the client's Link)
/// or one a redirection named.
pub(crate) struct Peer {
    /// `host:port`
    pub target: String,
    /// The row of the per-node table its replies count in (index into
    /// `ClusterPlan::nodes`): the primary it is, or whose replica it is.
    pub row: Option<u16>,
    /// Open (None for HOME: the client's own Link is used).
    pub link: Option<Link>,
    /// A helper thread opening it, and when to look whether it has.
    opening: Option<(Receiver<Result<Stream, ConnectError>>, Instant)>,
    waiting: VecDeque<Waiting>,
}

/// `--cluster`: the slot map's corrections (what MOVED said) and the Links
/// redirections opened, for one client.
pub(crate) struct ClusterRouter {
    id: u32,
    /// The client's own primary.
    node: Option<u16>,
    /// Where its own Link first went (its primary, or a `--read-from` replica of it).
    own_home: String,
    pub peers: Vec<Peer>,
    waiting: usize,
    /// slot → peer a MOVED named for it (-1: where the source routes it). Made at the first MOVED.
    slot_peer: Vec<i16>,
    /// Waiting multi-key requests' keys, `max_keys` a record, the window's
    /// worth (made at the first redirection), and the free records.
    keys: Vec<u64>,
    free_keys: Vec<u32>,
    max_keys: usize,
    window: usize,
    rand: KeyStream,
    scratch: KeyScratch,
    /// Where the worker registers the Links it opens, and the client's index.
    registry: Option<mio::Registry>,
    token_of: fn(u32, usize) -> mio::Token,
    /// The client's index in its worker (its poll token's base).
    index: u32,
    /// A Link of this Router failed: that ends the run (see `Client::settle`).
    pub link_failed: bool,
    /// The peer the last MOVED named: where a topology refresh asks first.
    last_moved: Option<usize>,
    /// Slots MOVED since the worker last shared them (at most [`MOVED_NEWS`]; made with the slot map).
    news: Vec<u16>,
}

/// Slots one client's MOVED replies pass on to the worker's other clients per
/// turn; past that a topology refresh brings the rest.
const MOVED_NEWS: usize = 64;

impl ClusterRouter {
    pub fn new(w: &PreparedPlan, id: u32, node: Option<u16>, home: String) -> ClusterRouter {
        let window = w.plan.pipeline.max(1) as usize;
        let row = node;
        ClusterRouter {
            id,
            node,
            own_home: home.clone(),
            peers: vec![Peer {
                target: home,
                row,
                link: None,
                opening: None,
                waiting: VecDeque::with_capacity(window),
            }],
            waiting: 0,
            slot_peer: Vec::new(),
            keys: Vec::new(),
            free_keys: Vec::new(),
            max_keys: w.max_keys,
            window,
            rand: KeyStream::new(w.plan.seed ^ RESEND_RAND_SALT, id),
            scratch: KeyScratch::new(w.max_keys, w.values.generation),
            registry: None,
            token_of: |_, _| mio::Token(0),
            index: 0,
            link_failed: false,
            last_moved: None,
            news: Vec::new(),
        }
    }

    fn take_keys(&mut self, keys: &[u64]) -> u32 {
        if self.max_keys <= 1 {
            return NO_KEYS;
        }
        if self.keys.is_empty() {
            self.keys = vec![0; self.window * self.max_keys];
            self.free_keys = (0..self.window).rev().map(|i| (i * self.max_keys) as u32).collect();
        }
        let at = self.free_keys.pop().expect("more requests redirected than the window holds");
        let n = keys.len().min(self.max_keys);
        self.keys[at as usize..at as usize + n].copy_from_slice(&keys[..n]);
        at
    }

    fn give_keys(&mut self, at: u32) {
        if at != NO_KEYS {
            self.free_keys.push(at);
        }
    }

    /// The peer `target` (`host:port`) names, made on first use.
    fn peer_to(&mut self, w: &PreparedPlan, tally: &mut Tally, target: &[u8]) -> usize {
        if let Some(i) = self.peers.iter().position(|p| p.target.as_bytes() == target) {
            return i;
        }
        let target = String::from_utf8_lossy(target).into_owned();
        let row = self.row_for(w, tally, &target);
        self.peers.push(Peer { target, row, link: None, opening: None, waiting: VecDeque::with_capacity(self.window) });
        self.peers.len() - 1
    }

    /// The row replies from `target` count in: the primary it is, or whose
    /// replica it is (a failover promotes one: the shard's row), else this client's own.
    fn row_for(&self, w: &PreparedPlan, tally: &mut Tally, target: &str) -> Option<u16> {
        let cluster = w.plan.cluster.as_ref();
        cluster
            .and_then(|c| {
                (0..c.nodes.len()).find(|&i| {
                    c.node_label(i) == target
                        || c.replicas.get(i).is_some_and(|rs| rs.iter().any(|(h, p)| endpoint_label(h, *p) == target))
                })
            })
            .map(|i| i as u16)
            // A node the plan does not name joined mid-run: a row of its own.
            .or_else(|| tally.joined_row(target, cluster.map_or(0, |c| c.nodes.len())))
            .or(self.node)
    }

    /// MOVED said `slot` is at `peer` now: its later requests go straight
    /// there (back to the source's routing when that is the client's own node).
    fn slot_moved(&mut self, slot: usize, peer: usize) {
        if slot >= SLOTS {
            return;
        }
        if self.slot_peer.is_empty() {
            self.slot_peer = vec![-1; SLOTS];
            self.news = Vec::with_capacity(MOVED_NEWS);
        }
        self.slot_peer[slot] = if peer == HOME { -1 } else { peer as i16 };
    }

    /// Encodes peer `k`'s due requests into `link` while it has room.
    fn encode_due(&mut self, w: &PreparedPlan, k: usize, link: &mut Link, now: Instant) {
        while let Some(r) = self.peers[k].waiting.front().copied() {
            let room = w.max_request_bytes + if r.entry.asking { ASKING.len() } else { 0 };
            if r.not_before > now || !link.has_room(1) || link.spare_len() < room {
                return;
            }
            self.peers[k].waiting.pop_front();
            self.waiting -= 1;
            if r.entry.asking {
                link.append(ASKING);
            }
            let encoder = &w.commands[r.entry.command as usize].encoder;
            let at = r.keys_at as usize;
            let keys = if r.keys_at == NO_KEYS {
                std::slice::from_ref(&r.entry.key_index)
            } else {
                &self.keys[at..at + encoder.key_count()]
            };
            let (len, _) = encoder.encode_keys(link.spare(), keys, &mut self.scratch, &mut self.rand, &w.values);
            let keys = if r.keys_at == NO_KEYS { keys } else { &self.keys[at..at + encoder.key_count()] };
            link.push(r.entry, len, keys);
            self.give_keys(r.keys_at);
        }
    }

    /// Peer `k` has requests and no Link: a helper thread opens one (the
    /// handshake and all, as the client's own), and once it has, the Link
    /// joins the worker's poll. A node that cannot be reached (a failover
    /// under way): its slots go back to the source's routing, and what was
    /// for it asks the client's own node again after a backoff, until `--timeout`.
    fn open_peer(&mut self, w: &PreparedPlan, tally: &mut Tally, k: usize, now: Instant) -> Result<(), Failure> {
        let Some((opening, look_at)) = self.peers[k].opening.as_mut() else {
            let target = self.peers[k].target.clone();
            let Some((host, port)) = split_host_port(&target) else {
                return Err(Failure::new(
                    FailureKind::Protocol,
                    format!("connection {}: a redirection to \"{target}\", which is no host:port", self.id),
                ));
            };
            let plan = Plan {
                host: if host.is_empty() { w.plan.host.clone() } else { host },
                port,
                socket: None,
                cluster: None,
                ..w.plan.clone()
            };
            let (tx, rx) = mpsc::channel();
            // The run's cancel does not reach it: it gives up after the plan's --timeout
            // (10 s at most without one), and nobody waits for it.
            let spawned = std::thread::Builder::new().name("respbench-open".into()).spawn(move || {
                let _ = tx.send(crate::open::open(&plan, &RunControl::new()));
            });
            if let Err(e) = spawned {
                return Err(Failure::new(FailureKind::Internal, format!("cannot start a thread: {e}")));
            }
            self.peers[k].opening = Some((rx, now + OPEN_POLL));
            return Ok(());
        };
        let opened = match opening.try_recv() {
            Err(TryRecvError::Empty) => {
                *look_at = now + OPEN_POLL;
                return Ok(());
            }
            Ok(opened) => opened,
            Err(TryRecvError::Disconnected) => Err(ConnectError::Failed("the opening thread ended".into())),
        };
        self.peers[k].opening = None;
        match opened {
            Ok(mut stream) => {
                let token = (self.token_of)(self.index, k);
                if let Some(registry) = self.registry.as_ref() {
                    // If registering fails, the worker's turns while requests wait still service it.
                    let _ = registry.register(&mut stream, token, mio::Interest::READABLE | mio::Interest::WRITABLE);
                }
                let out = (w.max_request_bytes + ASKING.len()) * self.window.min(16);
                let mut link = Link::new(self.id, stream, w, self.window, out);
                link.origin = Some(self.peers[HOME].target.clone());
                self.peers[k].link = Some(link);
                Ok(())
            }
            Err(ConnectError::Interrupted) => Err(Failure::new(FailureKind::Interrupted, "interrupted")),
            Err(ConnectError::Failed(m)) => {
                for s in self.slot_peer.iter_mut().filter(|s| **s == k as i16) {
                    *s = -1;
                }
                let text = format!("redirected to {}: {m}", self.peers[k].target).into_bytes();
                while let Some(r) = self.peers[k].waiting.pop_front() {
                    self.waiting -= 1;
                    let keys = if r.keys_at == NO_KEYS {
                        vec![r.entry.key_index]
                    } else {
                        self.keys[r.keys_at as usize..r.keys_at as usize + self.max_keys].to_vec()
                    };
                    self.give_keys(r.keys_at);
                    self.redirect(w, tally, r.entry, &keys, Redirect::Retry, &text, None, now);
                }
                Ok(())
            }
        }
    }
}

impl Router for ClusterRouter {
    const REDIRECTS: bool = true;

    fn for_client(w: &PreparedPlan, id: u32, node: Option<u16>, home: String) -> Self {
        ClusterRouter::new(w, id, node, home)
    }

    fn send_straight(&mut self, peer: usize, bytes: &[u8], keys: &[u64], entry: InFlight) {
        let none_waiting = self.peers[peer].waiting.is_empty();
        if let Some(link) = self.peers[peer].link.as_mut() {
            if none_waiting && link.has_room(1) && link.spare_len() >= bytes.len() {
                link.spare()[..bytes.len()].copy_from_slice(bytes);
                link.push(entry, bytes.len(), keys);
                return;
            }
        }
        let keys_at = self.take_keys(keys);
        self.peers[peer].waiting.push_back(Waiting { entry, keys_at, not_before: entry.sent_at });
        self.waiting += 1;
    }

    /// Links that helper threads opened join the loop, every held request
    /// that is due goes out on its peer's Link (`home` for the client's own
    /// node, between two of its writes only), and each Link with bytes
    /// pending is written.
    fn service(&mut self, w: &PreparedPlan, tally: &mut Tally, home: &mut Link, now: Instant) -> Result<(), Failure> {
        for k in 0..self.peers.len() {
            if k == HOME {
                if !home.writing() && self.peers[k].waiting.front().is_some_and(|r| r.not_before <= now) {
                    self.encode_due(w, k, home, now);
                    home.flush(&mut tally.counters.bytes_out)?;
                }
                continue;
            }
            if self.peers[k].link.is_none() {
                if self.peers[k].waiting.is_empty() {
                    continue;
                }
                self.open_peer(w, tally, k, now)?;
            }
            let Some(mut link) = self.peers[k].link.take() else { continue };
            self.encode_due(w, k, &mut link, now);
            let written = if link.writing() { link.flush(&mut tally.counters.bytes_out) } else { Ok(()) };
            match written {
                Ok(()) => self.peers[k].link = Some(link),
                Err(f) if f.kind == FailureKind::Closed && w.plan.reconnect.is_some() => self.drop_peer(k, link, tally),
                Err(f) => {
                    self.peers[k].link = Some(link);
                    self.link_failed = true;
                    return Err(f);
                }
            }
        }
        Ok(())
    }

    fn next_wake(&self, _now: Instant) -> Option<Instant> {
        let mut at: Option<Instant> = None;
        for p in &self.peers {
            let t = if let Some((_, look_at)) = &p.opening {
                Some(*look_at)
            } else {
                // Without a Link yet, the next turn opens one.
                p.waiting.front().map(|w| w.not_before)
            };
            if let Some(t) = t {
                at = Some(at.map_or(t, |a| a.min(t)));
            }
        }
        at
    }

    fn oldest_sent_at(&self) -> Option<Instant> {
        let mut oldest: Option<Instant> = None;
        for p in &self.peers {
            let on_link = p.link.as_ref().and_then(Link::oldest_sent_at);
            for t in [on_link, p.waiting.front().map(|w| w.entry.sent_at)].into_iter().flatten() {
                oldest = Some(oldest.map_or(t, |o| o.min(t)));
            }
        }
        oldest
    }

    fn attach(&mut self, registry: Option<mio::Registry>, token_of: fn(u32, usize) -> mio::Token, client: u32) {
        self.registry = registry;
        self.token_of = token_of;
        self.index = client;
    }

    fn take_link(&mut self, k: usize) -> Option<Link> {
        self.peers.get_mut(k).and_then(|p| p.link.take())
    }

    fn put_link(&mut self, k: usize, link: Link) {
        self.peers[k].link = Some(link);
    }

    fn peers(&self) -> usize {
        self.peers.len()
    }

    fn row_of(&self, k: usize) -> Option<u16> {
        self.peers.get(k).and_then(|p| p.row)
    }

    fn link_failed(&self) -> bool {
        self.link_failed
    }

    fn mark_failed(&mut self) {
        self.link_failed = true;
    }

    fn close_idle(&mut self, _k: usize, mut link: Link) {
        if let Some(registry) = self.registry.as_ref() {
            let _ = registry.deregister(&mut link.stream);
        }
    }

    fn drop_peer(&mut self, k: usize, mut link: Link, tally: &mut Tally) {
        if let Some(registry) = self.registry.as_ref() {
            let _ = registry.deregister(&mut link.stream);
        }
        tally.counters.lost += link.forget() as u64;
        // Its slots go back to the source's routing: the client's own node says where they are now.
        for s in self.slot_peer.iter_mut().filter(|s| **s == k as i16) {
            *s = -1;
        }
    }

    /// Every slot this client's source may draw is routed as `map` says:
    /// those of its own primary by the source (its own Link), the others
    /// straight to their owner's peer (opened on first use). Nothing moves
    /// between sources, so each request is still sent once, and a key's
    /// requests still go one after another to one node.
    fn apply_topology(&mut self, w: &PreparedPlan, tally: &mut Tally, map: &SlotMap) {
        // The source draws its own primary's slots; they go on its own Link while that reaches it.
        let home_is_own = self.peers[HOME].target == self.own_home;
        let own = w.plan.cluster.as_ref().zip(self.node).filter(|_| home_is_own).map(|(c, n)| c.node_label(n as usize));
        let peer_of: Vec<i16> = map
            .nodes()
            .iter()
            .map(|(host, port)| {
                let label = endpoint_label(host, *port);
                if own.as_deref() == Some(label.as_str()) || label == self.peers[HOME].target {
                    -1
                } else {
                    self.peer_to(w, tally, label.as_bytes()) as i16
                }
            })
            .collect();
        if self.slot_peer.is_empty() {
            self.slot_peer = vec![-1; SLOTS];
        }
        for (slot, to) in self.slot_peer.iter_mut().enumerate() {
            *to = peer_of[map.owner(slot as u16)];
        }
    }

    fn moved_target(&self) -> Option<(String, u16)> {
        self.last_moved.and_then(|k| split_host_port(&self.peers[k].target))
    }

    fn moved_news(&self) -> impl Iterator<Item = (u16, &str)> {
        self.news.iter().map(|&slot| {
            let peer = self.slot_peer.get(slot as usize).map_or(HOME, |&p| if p < 0 { HOME } else { p as usize });
            (slot, self.peers[peer].target.as_str())
        })
    }

    fn clear_moved_news(&mut self) {
        self.news.clear();
    }

    fn learn_moved(&mut self, w: &PreparedPlan, tally: &mut Tally, slot: u16, target: &str) {
        let peer = self.peer_to(w, tally, target.as_bytes());
        self.slot_moved(slot as usize, peer);
    }

    /// The own Link reopened at another node than before (its primary died,
    /// and `--reconnect` took the next one in turn; or back at its own): it
    /// is that node's from now on. What answers on it counts in that node's
    /// row, and a redirection to the node it left opens a Link there (a
    /// primary that came back on its address), instead of being sent again
    /// on this one, which that node would send back forever.
    fn rehome(&mut self, w: &PreparedPlan, tally: &mut Tally, target: &str) {
        if self.peers[HOME].target == target || target.is_empty() {
            return;
        }
        let row = self.row_for(w, tally, target);
        let home = &mut self.peers[HOME];
        home.target = target.to_string();
        home.row = row;
    }

    #[inline]
    fn moved_to(&self, r: &Request) -> Option<usize> {
        r.slot.and_then(|s| self.slot_peer.get(s as usize)).filter(|&&d| d >= 0).map(|&d| d as usize)
    }

    fn pending(&self) -> usize {
        self.waiting + self.peers.iter().filter_map(|p| p.link.as_ref()).map(Link::inflight).sum::<usize>()
    }

    /// MOVED and ASK send it again to the node named (ASK after ASKING),
    /// and a MOVED sends the slot's later requests straight there;
    /// TRYAGAIN and CLUSTERDOWN send it again to the node that answered
    /// after a backoff (the TS engine does the same), and
    /// what a node that could not be reached was to answer, to the client's
    /// own node. It counts as the error reply it got after more than
    /// [`MAX_REDIRECTIONS`] MOVED/ASK in a row (a loop), or when its next
    /// send would come past [`resend_budget`] of `--timeout` from its first
    /// send. Its latency counts from its first send, hops included. Each
    /// MOVED, ASK, TRYAGAIN and CLUSTERDOWN counts in its kind's total and
    /// in the row of the node that sent it, so the rows add up to the
    /// totals. Nothing is allocated per request (a new peer, the slot map
    /// and a given-up request's text are made once each).
    fn redirect(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        mut entry: InFlight,
        keys: &[u64],
        kind: Redirect,
        text: &[u8],
        from: Option<usize>,
        now: Instant,
    ) {
        // No node answered (its node could not be reached): a request given up counts in the client's own row.
        let row = from.and_then(|k| self.peers.get(k)).and_then(|p| p.row);
        if from.is_some() {
            let c = &mut tally.counters;
            match kind {
                Redirect::Moved => c.moved += 1,
                Redirect::Ask => c.asked += 1,
                Redirect::Retry => c.retried += 1,
            }
            if let (Some(r), true) = (row, tally.histogram.is_some()) {
                tally.nodes[r as usize].redirections += 1;
            }
        }
        let row = row.or(self.node);
        let (peer, not_before) = match kind {
            Redirect::Moved | Redirect::Ask => {
                entry.hops = entry.hops.saturating_add(1);
                if entry.hops > MAX_REDIRECTIONS {
                    let answered = from.map_or("?", |k| self.peers[k].target.as_str());
                    let why = || loop_text(text, answered, entry.hops);
                    tally.given_up(&entry, row, why, now);
                    return;
                }
                // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" (whole: see redirect_kind)
                let space = text.iter().rposition(|&b| b == b' ').unwrap_or(0);
                let peer = self.peer_to(w, tally, &text[(space + 1).min(text.len())..]);
                if kind == Redirect::Moved {
                    let slot =
                        text[6.min(space)..space].iter().fold(0usize, |n, &b| n * 10 + b.wrapping_sub(b'0') as usize);
                    let was = self.slot_peer.get(slot).copied();
                    self.slot_moved(slot, peer);
                    self.last_moved = Some(peer);
                    // News only when it changes where the slot goes (a request in flight
                    // before a MOVED or a refresh was answered MOVED too: old news).
                    let changed = slot < SLOTS && self.slot_peer.get(slot).copied() != was.or(Some(-1));
                    if changed && self.news.len() < self.news.capacity() {
                        self.news.push(slot as u16);
                    }
                }
                entry.asking = kind == Redirect::Ask;
                // Two nodes sending a request to each other while a slot changes hands: wait before the third hop.
                let hops = u32::from(entry.hops);
                let free = u32::from(FREE_HOPS);
                (peer, if hops <= free { now } else { now + backoff(hops - free) })
            }
            Redirect::Retry => {
                entry.hops = 0;
                entry.retries = entry.retries.saturating_add(1);
                entry.asking = false;
                (from.unwrap_or(HOME), now + backoff(u32::from(entry.retries)))
            }
        };
        let budget = resend_budget(w.plan.timeout_ms);
        if not_before.saturating_duration_since(entry.sent_at) > budget {
            let why = || budget_text(text, entry.retries, now.saturating_duration_since(entry.sent_at), budget);
            tally.given_up(&entry, row, why, now);
            return;
        }
        let keys_at = self.take_keys(keys);
        self.peers[peer].waiting.push_back(Waiting { entry, keys_at, not_before });
        self.waiting += 1;
    }
}

/// `host:port` or `[v6]:port`.
fn split_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}

#[cfg(test)]
mod tests;
