//! `--cluster`: a mid-run topology refresh. A MOVED says this worker's slot
//! map is stale; rather than learn the new one a MOVED per slot, the worker
//! asks the cluster for the whole map (`CLUSTER SHARDS`, or `CLUSTER SLOTS`
//! where that is refused) and hands it to every client's Router, so slots
//! that moved but no request has touched yet, and nodes that joined
//! mid-run, get their requests straight away.
//!
//! The question goes on a control connection of its own, opened like any
//! Link ([`crate::open::open`]: TLS, AUTH and the handshake apply) on a
//! helper thread, so the worker never blocks; the worker looks for the
//! answer on its turns. At most one is asked at a time per worker, and at
//! most one per [`MIN_INTERVAL`], so a MOVED storm stays one question. A
//! reply that does not parse whole changes nothing (the map in use stays).

use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

use crate::client::Client;
use crate::counters::FirstTexts;
use crate::plan::Plan;
use crate::progress::RunControl;
use crate::request_source::PreparedPlan;
use crate::router::Router;
use crate::tally::Tally;
use crate::topology::{CLUSTER_SHARDS, CLUSTER_SLOTS, SlotMap, TopologyError, parse_shards, parse_slots};
use crate::transport::Stream;

/// Fewest time between two questions of one worker.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// How often the worker looks whether the helper thread has the answer.
const ANSWER_POLL: Duration = Duration::from_millis(1);
/// The longest a question waits for its reply without a `--timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a question brought no map.
#[derive(Debug)]
enum Unanswered {
    /// Every node asked refused both `CLUSTER SHARDS` and `CLUSTER SLOTS`
    /// (a proxy, say): asking again would get the same, so nothing is.
    Refused,
    /// Unreachable, timed out, or a reply that is not a whole map (the first
    /// such reply's `host:port: why`): a later MOVED asks again.
    Failed(Option<String>),
}

/// Why one node gave no map.
enum Asked {
    /// It refused both commands.
    Refused,
    /// Not reached, or the exchange broke off.
    Unreachable,
    /// Its reply is no whole slot map: the one line saying why (topology.rs's words).
    Rejected(String),
}

/// One worker's refreshes: the question under way, when the last began, and
/// where to ask (the nodes of the newest map first).
pub(crate) struct TopologyRefresh {
    asking: Option<Receiver<Result<SlotMap, Unanswered>>>,
    /// The cluster refuses to say: no more questions this phase.
    refused: bool,
    last_asked: Option<Instant>,
    /// `host:port` of every primary known, newest map first.
    nodes: Vec<(String, u16)>,
    /// A MOVED told a client something its map did not say since the last question.
    stale: bool,
    /// Maps applied, and questions that brought none (unreachable, refused, invalid).
    pub applied: u64,
    pub failed: u64,
    /// A reply refused as no whole map since the worker last took it (`host:port: why`): said once in the result.
    pub rejected: Option<String>,
}

impl TopologyRefresh {
    pub fn new(plan: &Plan) -> TopologyRefresh {
        let nodes = plan.cluster.as_ref().map_or_else(Vec::new, |c| c.nodes.clone());
        TopologyRefresh {
            asking: None,
            refused: false,
            last_asked: None,
            nodes,
            stale: false,
            applied: 0,
            failed: 0,
            rejected: None,
        }
    }

    /// A MOVED told a client something its map did not say: the map is stale.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// The map is stale, and no question is under way or began less than
    /// [`MIN_INTERVAL`] ago (then a later turn asks).
    pub fn due(&self, now: Instant) -> bool {
        self.stale && self.asking.is_none() && !self.refused && self.last_asked.is_none_or(|t| now >= t + MIN_INTERVAL)
    }

    /// Starts the question (when [`due`](Self::due)): `first`, the node a
    /// MOVED named, is asked first, as the one that surely has the slot's
    /// new owner (a node the news has not reached yet would give the old map).
    pub fn ask(&mut self, plan: &Plan, first: Option<(String, u16)>, now: Instant) {
        self.stale = false;
        self.last_asked = Some(now);
        let (tx, rx) = mpsc::channel();
        let plan = plan.clone();
        let mut nodes = self.nodes.clone();
        if let Some(first) = first {
            nodes.retain(|n| *n != first);
            nodes.insert(0, first);
        }
        // Nobody joins it: it gives up after the plan's --timeout per node asked.
        let spawned = std::thread::Builder::new().name("respbench-topology".into()).spawn(move || {
            let _ = tx.send(ask_any(&plan, &nodes));
        });
        match spawned {
            Ok(_) => self.asking = Some(rx),
            Err(_) => self.failed += 1,
        }
    }

    /// The new map, once the helper thread has one whole.
    pub fn take_map(&mut self) -> Option<SlotMap> {
        let answer = match self.asking.as_ref()?.try_recv() {
            Err(TryRecvError::Empty) => return None,
            Ok(answer) => answer,
            Err(TryRecvError::Disconnected) => Err(Unanswered::Failed(None)),
        };
        self.asking = None;
        match answer {
            Ok(map) => {
                self.applied += 1;
                // Ask the newest map's nodes first next time (a joined one included).
                let mut nodes = map.nodes().to_vec();
                nodes.extend(self.nodes.drain(..).filter(|n| !map.nodes().contains(n)));
                self.nodes = nodes;
                Some(map)
            }
            Err(why) => {
                self.refused = matches!(why, Unanswered::Refused);
                if let Unanswered::Failed(Some(text)) = why {
                    self.rejected = Some(text);
                }
                self.failed += 1;
                None
            }
        }
    }

    /// The first reply refused as no whole map, into the worker's first texts (said once in the result).
    pub fn note_rejected(&mut self, first: &mut FirstTexts, now: Instant) {
        if let (None, Some(why)) = (&first.topology_rejected, self.rejected.take()) {
            first.topology_rejected = Some((now, why));
        }
    }

    /// When the worker needs a turn for this: a question under way is looked
    /// at every [`ANSWER_POLL`]; a stale map waiting out [`MIN_INTERVAL`] asks then.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        if self.asking.is_some() {
            return Some(now + ANSWER_POLL);
        }
        (self.stale && !self.refused).then(|| self.last_asked.map_or(now, |t| t + MIN_INTERVAL))
    }
}

/// Asks each node in turn until one answers with a whole map.
fn ask_any(plan: &Plan, nodes: &[(String, u16)]) -> Result<SlotMap, Unanswered> {
    let mut all_refused = !nodes.is_empty();
    let mut rejected = None;
    for (host, port) in nodes {
        // An empty host (a node announcing none) is the one the plan reached it on.
        let host = if host.is_empty() { plan.host.clone() } else { host.clone() };
        let label = crate::cluster_plan::endpoint_label(&host, *port);
        let node = Plan { host, port: *port, socket: None, cluster: None, ..plan.clone() };
        match ask(&node) {
            Ok(map) => return Ok(map),
            Err(Asked::Refused) => {}
            Err(Asked::Unreachable) => all_refused = false,
            Err(Asked::Rejected(why)) => {
                all_refused = false;
                rejected.get_or_insert(format!("{label}: {why}"));
            }
        }
    }
    Err(if all_refused { Unanswered::Refused } else { Unanswered::Failed(rejected) })
}

/// One node's map: `CLUSTER SHARDS`, or `CLUSTER SLOTS` if it refuses that.
fn ask(node: &Plan) -> Result<SlotMap, Asked> {
    let timeout = if node.timeout_ms > 0 { Duration::from_millis(node.timeout_ms) } else { DEFAULT_TIMEOUT };
    let mut stream = crate::open::open(node, &RunControl::new()).map_err(|_| Asked::Unreachable)?;
    let tls = node.tls.is_some();
    let answer = match exchange(&mut stream, CLUSTER_SHARDS, timeout, |b| parse_shards(b, &node.host, tls)) {
        Err(Exchange::Reply(TopologyError::Refused(_))) => {
            exchange(&mut stream, CLUSTER_SLOTS, timeout, |b| parse_slots(b, &node.host))
        }
        answer => answer,
    };
    answer.map_err(|e| match e {
        Exchange::Reply(TopologyError::Refused(_)) => Asked::Refused,
        Exchange::Reply(TopologyError::Invalid(why)) => Asked::Rejected(why),
        Exchange::Reply(TopologyError::Incomplete) | Exchange::Broken => Asked::Unreachable,
    })
}

/// How an exchange brought no map: the reply said why, or the connection broke off.
enum Exchange {
    Reply(TopologyError),
    Broken,
}

/// Writes `request`, then reads until `parse` takes the reply (or refuses it).
fn exchange(
    stream: &mut Stream,
    request: &[u8],
    timeout: Duration,
    parse: impl Fn(&[u8]) -> Result<crate::topology::Parsed, TopologyError>,
) -> Result<SlotMap, Exchange> {
    let failed = |_: io::Error| Exchange::Broken;
    let mut poll = Poll::new().map_err(failed)?;
    poll.registry().register(stream, Token(0), Interest::READABLE | Interest::WRITABLE).map_err(failed)?;
    let deadline = Instant::now() + timeout;
    let mut events = Events::with_capacity(4);
    let (mut written, mut input, mut chunk) = (0, Vec::with_capacity(16 * 1024), [0u8; 16 * 1024]);
    let answer = loop {
        while written < request.len() {
            match stream.write(&request[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
            }
        }
        let _ = stream.flush();
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => return Err(Exchange::Broken),
                Ok(n) => input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
            }
        }
        if let Some(&first) = input.first() {
            // Neither a list nor an error (`+OK`, say): no cluster topology is
            // to be had there, now or later, as from a node that refuses.
            if !b"*>-|".contains(&first) {
                break Err(Exchange::Reply(TopologyError::Refused("the reply is not a list".into())));
            }
            match parse(&input) {
                Err(TopologyError::Incomplete) => {}
                answer => break answer.map(|p| p.map).map_err(Exchange::Reply),
            }
        }
        let now = Instant::now();
        if now >= deadline {
            break Err(Exchange::Broken);
        }
        if let Err(e) = poll.poll(&mut events, Some((deadline - now).min(Duration::from_millis(20)))) {
            if e.kind() != io::ErrorKind::Interrupted {
                break Err(failed(e));
            }
        }
    };
    let _ = poll.registry().deregister(stream);
    answer
}

/// What a MOVED told one client holds for all of the worker's: the slot's
/// requests of every other client go straight to its new owner too, without
/// a MOVED each, until the next topology refresh brings the whole map.
/// Whether there was any (a MOVED that said what no map had: it is stale).
pub(crate) fn share_moved_news<R: Router>(w: &PreparedPlan, conns: &mut [Client<R>], tally: &mut Tally) -> bool {
    let mut any = false;
    for i in 0..conns.len() {
        let (before, rest) = conns.split_at_mut(i);
        let Some((me, after)) = rest.split_first_mut() else { break };
        for (slot, target) in me.router.moved_news() {
            any = true;
            for other in before.iter_mut().chain(after.iter_mut()) {
                other.router.learn_moved(w, tally, slot, target);
            }
        }
        me.router.clear_moved_news();
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer of a question that cannot reach anyone (no node known), waited for.
    fn answered(refresh: &mut TopologyRefresh) -> Option<SlotMap> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while refresh.asking.is_some() && Instant::now() < deadline {
            if let Some(map) = refresh.take_map() {
                return Some(map);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    }

    #[test]
    fn a_stale_map_asks_once_at_a_time_and_once_per_interval_at_most() {
        let plan = Plan::new("127.0.0.1", 1);
        let mut refresh = TopologyRefresh::new(&plan);
        let now = Instant::now();
        // Not stale: nothing to ask.
        assert!(!refresh.due(now));
        assert_eq!(refresh.next_wake(now), None);
        refresh.mark_stale();
        assert!(refresh.due(now));
        refresh.ask(&plan, None, now);
        // One in flight: stale again asks nothing more, and the worker looks for the answer soon.
        refresh.mark_stale();
        assert!(!refresh.due(now));
        assert_eq!(refresh.next_wake(now), Some(now + ANSWER_POLL));
        // No node to ask: no map, the old one stays.
        assert_eq!(answered(&mut refresh), None);
        assert_eq!((refresh.applied, refresh.failed), (0, 1));
        // Stale since: asked again, but not before the interval has passed.
        assert!(!refresh.due(now + MIN_INTERVAL / 2));
        assert_eq!(refresh.next_wake(now + MIN_INTERVAL / 2), Some(now + MIN_INTERVAL));
        assert!(refresh.due(now + MIN_INTERVAL));
        refresh.ask(&plan, None, now + MIN_INTERVAL);
        assert_eq!(answered(&mut refresh), None);
        // Nothing stale since the last question: nothing to ask.
        assert!(!refresh.due(now + MIN_INTERVAL * 3));
    }
}
