//! A Redis Cluster's slot map from the bytes of a `CLUSTER SHARDS` or
//! `CLUSTER SLOTS` reply (RESP2 or RESP3, as redis 7.0 sends them): which
//! primary, `host:port`, owns each of the 16384 slots, and each primary's
//! replicas. It is for a topology refresh in the middle of a run, so the
//! reply is judged whole before anything is used: a slot outside 0..16383,
//! two ranges over the same slot, a slot no primary owns or a malformed entry
//! refuses the entire reply with one line naming the node and the range, and
//! the caller keeps the map it had. Nothing in here panics on any input.
//! The rules and words are those of packages/cli/src/topology.ts (discovery
//! before the run, for both engines): test/vectors/topology.json holds
//! replies both refuse with the same line.
//!
//! The ports chosen are the CLI's (`fromShards`/`fromSlots` in
//! packages/cli/src/cluster.ts): a `CLUSTER SHARDS` node entry carries
//! `port` and, under `tls-cluster yes`, `tls-port`; a TLS plan takes
//! `tls-port`, a plain one `port`, either falling back on the other. A
//! `CLUSTER SLOTS` reply already holds the port of the kind of connection that
//! asked (redis 7.0 answers a TLS connection with TLS ports), so it is taken
//! as it is. An empty endpoint means the node asked (`seed_host`).
//!
//! The elements are walked with [`ReplyScanner`], the crate's one RESP
//! reader: no second parser, and no recursion on a depth the input chooses.

use std::collections::HashMap;
use std::fmt;

use crate::cluster_plan::{ClusterPlan, ReadFrom, endpoint_label};
use crate::reply::{ReplyKind, ReplyScanner, Scan, escape_bytes};
use crate::slot::SLOTS;

/// `CLUSTER SHARDS` as a request (redis 7.0 and later).
pub const CLUSTER_SHARDS: &[u8] = b"*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
/// `CLUSTER SLOTS` as a request: what a server before 7.0 answers.
pub const CLUSTER_SLOTS: &[u8] = b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

/// A node's `(host, port)`, as [`ClusterPlan::nodes`] holds it.
pub type Endpoint = (String, u16);

/// Every slot's primary, and each primary's replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotMap {
    /// The primaries, in the order the reply names them.
    nodes: Vec<Endpoint>,
    /// Each primary's replicas that are not failed, by index into `nodes`.
    replicas: Vec<Vec<Endpoint>>,
    /// Slot → index into `nodes`: 16384 entries.
    owners: Vec<u16>,
}

/// A whole reply, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub map: SlotMap,
    /// Just past the reply in the bytes given (a push frame before it included).
    pub end: usize,
}

/// Why no map came out of the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// The reply is not all there yet: read more bytes and parse again.
    Incomplete,
    /// The server answered with an error: for `CLUSTER SHARDS` on a server
    /// before 7.0, ask `CLUSTER SLOTS` instead. The error's text, escaped.
    Refused(String),
    /// The reply cannot be the topology: one line saying where and why.
    Invalid(String),
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Incomplete => f.write_str("the topology reply is incomplete"),
            TopologyError::Refused(text) => write!(f, "the server refused the topology request: {text}"),
            TopologyError::Invalid(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for TopologyError {}

impl SlotMap {
    /// The primaries, in the reply's order.
    pub fn nodes(&self) -> &[Endpoint] {
        &self.nodes
    }

    /// Primary `node`'s replicas (none for an index past the end).
    pub fn replicas(&self, node: usize) -> &[Endpoint] {
        self.replicas.get(node).map_or(&[], Vec::as_slice)
    }

    /// The index (into [`nodes`](Self::nodes)) of the primary that owns
    /// `slot`; a slot past 16383 is taken modulo 16384, as [`crate::slot`]
    /// never gives one.
    pub fn owner(&self, slot: u16) -> usize {
        self.owners[(slot & (SLOTS - 1)) as usize] as usize
    }

    /// `host:port` of the primary that owns `slot`.
    pub fn primary(&self, slot: u16) -> &Endpoint {
        &self.nodes[self.owner(slot)]
    }

    /// The map as ranges `(first, last, node)`, ascending, each as long as it goes.
    pub fn ranges(&self) -> Vec<(u16, u16, u32)> {
        let mut ranges: Vec<(u16, u16, u32)> = Vec::new();
        for (slot, &node) in self.owners.iter().enumerate() {
            match ranges.last_mut() {
                Some((_, last, owner)) if *owner == u32::from(node) => *last = slot as u16,
                _ => ranges.push((slot as u16, slot as u16, u32::from(node))),
            }
        }
        ranges
    }

    /// The map as the Plan carries a cluster, reads sent as `read_from` says.
    pub fn to_cluster_plan(&self, read_from: ReadFrom) -> ClusterPlan {
        ClusterPlan { nodes: self.nodes.clone(), slots: self.ranges(), read_from, replicas: self.replicas.clone() }
    }
}

/// The slot map from a `CLUSTER SHARDS` reply at the start of `buf`: each
/// shard's primary that is not failed, with its slot ranges and replicas.
/// `tls`: the plan speaks TLS, so nodes are reached on their `tls-port`.
pub fn parse_shards(buf: &[u8], seed_host: &str, tls: bool) -> Result<Parsed, TopologyError> {
    let mut reader = Reader { buf, scanner: ReplyScanner::new() };
    let (shards, end) = reader.reply("CLUSTER SHARDS")?;
    let mut map = Builder::new();
    for (s, shard) in shards.into_iter().enumerate() {
        let shard = reader.map(shard, &format!("CLUSTER SHARDS: shard {s}"))?;
        let where_ = |what: &str| format!("CLUSTER SHARDS: shard {s} {what}");
        let ranges = match field(&shard, "slots") {
            Some(v) => reader.list(v, &where_("has slots that are not a list"))?,
            None => return Err(invalid(where_("has no slots field"))),
        };
        if ranges.len() % 2 != 0 {
            return Err(invalid(where_("has an odd number of slot bounds")));
        }
        if ranges.is_empty() {
            // A primary without slots (being added, or emptied): nothing to route to it.
            continue;
        }
        let members = match field(&shard, "nodes") {
            Some(v) => reader.list(v, &where_("has nodes that are not a list"))?,
            None => return Err(invalid(where_("has no nodes field"))),
        };
        let mut primary = None;
        let mut replicas = Vec::new();
        for (n, member) in members.into_iter().enumerate() {
            let entry = reader.map(member, &where_(&format!("node {n}")))?;
            let name = node_name(&entry, s, n);
            let role = text(&entry, "role");
            let failed = text(&entry, "health") == Some(b"fail".as_slice());
            let is_primary = role == Some(b"master".as_slice());
            if failed || (!is_primary && role != Some(b"replica".as_slice())) {
                continue;
            }
            let host = shard_host(&entry, seed_host, &name)?;
            let port = shard_port(&entry, tls, &name)?;
            match (is_primary, host, port) {
                (true, Some(host), Some(port)) if primary.is_none() => primary = Some((host, port)),
                (true, _, _) if primary.is_none() => {
                    return Err(invalid(format!(
                        "CLUSTER SHARDS: primary {name} announces no endpoint to reach it on"
                    )));
                }
                (false, Some(host), Some(port)) => replicas.push((host, port)),
                _ => {}
            }
        }
        let bounds: Vec<i64> = ranges
            .iter()
            .map(|&item| slot_bound(item, || where_("has a slot bound that is not an integer")))
            .collect::<Result<_, _>>()?;
        let Some(primary) = primary else {
            return Err(invalid(where_(&format!("(slots {}) has no primary that is not failed", range_list(&bounds)))));
        };
        let label = endpoint_label(&primary.0, primary.1);
        let node = map.node(primary, replicas)?;
        for pair in bounds.chunks_exact(2) {
            map.claim(pair[0], pair[1], node, &label)?;
        }
    }
    Ok(Parsed { map: map.finish()?, end })
}

/// The slot map from a `CLUSTER SLOTS` reply at the start of `buf`:
/// `[first, last, [host, port, id, …], replica…]` per range.
pub fn parse_slots(buf: &[u8], seed_host: &str) -> Result<Parsed, TopologyError> {
    let mut reader = Reader { buf, scanner: ReplyScanner::new() };
    let (ranges, end) = reader.reply("CLUSTER SLOTS")?;
    let mut map = Builder::new();
    for (r, range) in ranges.into_iter().enumerate() {
        let where_ = |what: &str| format!("CLUSTER SLOTS: range {r} {what}");
        let parts = reader.list(range, &where_("is not a list"))?;
        if parts.len() < 3 {
            return Err(invalid(where_("has no primary")));
        }
        let first = slot_bound(parts[0], || where_("has a first slot that is not an integer"))?;
        let last = slot_bound(parts[1], || where_("has a last slot that is not an integer"))?;
        let slots = format!("CLUSTER SLOTS: slots {first}-{last}");
        let Some(primary) = slots_endpoint(&mut reader, parts[2], seed_host, &format!("{slots}: the primary"))? else {
            return Err(invalid(format!("{slots}: the primary has no known endpoint")));
        };
        let mut replicas = Vec::new();
        for (i, &item) in parts[3..].iter().enumerate() {
            if let Some(replica) = slots_endpoint(&mut reader, item, seed_host, &format!("{slots}: replica {i}"))? {
                replicas.push(replica);
            }
        }
        let label = endpoint_label(&primary.0, primary.1);
        let node = map.node(primary, replicas)?;
        map.claim(first, last, node, &label)?;
    }
    Ok(Parsed { map: map.finish()?, end })
}

/// A `[host, port, id, …]` node of a CLUSTER SLOTS range; None when its
/// host is `?` (an endpoint the server does not know) or its port 0.
fn slots_endpoint<'a>(
    reader: &mut Reader<'a>,
    item: Item<'a>,
    seed_host: &str,
    what: &str,
) -> Result<Option<Endpoint>, TopologyError> {
    let node = reader.list(item, &format!("{what} is not a list"))?;
    let (Some(&host), Some(&port)) = (node.first(), node.get(1)) else {
        return Err(invalid(format!("{what} has no host and port")));
    };
    let host = match host {
        Item::Text(bytes) => host_or_seed(bytes, seed_host, what)?,
        Item::Nil => Some(seed_host.to_string()),
        _ => return Err(invalid(format!("{what} has a host that is not text"))),
    };
    let port = match port {
        // No port of the kind that asked (a node with `port 0` seen from a plain connection).
        Item::Int(0) => return Ok(None),
        Item::Int(p) if (1..=65535).contains(&p) => p as u16,
        _ => return Err(invalid(format!("{what} has a port that is not a port number"))),
    };
    Ok(host.map(|h| (h, port)))
}

/// A map under construction: slots claimed so far, each at most once.
struct Builder {
    nodes: Vec<Endpoint>,
    /// Where each primary is in `nodes`: a reply may name thousands.
    index: HashMap<Endpoint, u16>,
    replicas: Vec<Vec<Endpoint>>,
    owners: Vec<Option<u16>>,
}

impl Builder {
    fn new() -> Builder {
        Builder { nodes: Vec::new(), index: HashMap::new(), replicas: Vec::new(), owners: vec![None; SLOTS as usize] }
    }

    /// The index of primary `endpoint`, added the first time it is named
    /// (with its replicas then: a later range of it repeats them).
    fn node(&mut self, endpoint: Endpoint, replicas: Vec<Endpoint>) -> Result<u16, TopologyError> {
        if let Some(&i) = self.index.get(&endpoint) {
            return Ok(i);
        }
        if self.nodes.len() >= usize::from(SLOTS) {
            return Err(invalid(format!("the reply names more than {SLOTS} primaries")));
        }
        let i = self.nodes.len() as u16;
        self.index.insert(endpoint.clone(), i);
        self.nodes.push(endpoint);
        self.replicas.push(replicas);
        Ok(i)
    }

    fn claim(&mut self, first: i64, last: i64, node: u16, label: &str) -> Result<(), TopologyError> {
        if first < 0 || first > last || last >= i64::from(SLOTS) {
            return Err(invalid(format!("node {label}: slot range {first}-{last} is not within 0-{}", SLOTS - 1)));
        }
        for slot in first as u16..=last as u16 {
            if let Some(other) = self.owners[slot as usize] {
                let (host, port) = &self.nodes[other as usize];
                return Err(invalid(format!(
                    "node {label}: slot range {first}-{last} overlaps a range of node {} (slot {slot})",
                    endpoint_label(host, *port)
                )));
            }
            self.owners[slot as usize] = Some(node);
        }
        Ok(())
    }

    /// The map, once every slot has its primary.
    fn finish(self) -> Result<SlotMap, TopologyError> {
        if let Some(gap) = self.owners.iter().position(Option::is_none) {
            let end = self.owners[gap..].iter().position(Option::is_some).map_or(SLOTS as usize, |n| gap + n);
            return Err(invalid(format!(
                "slots {gap}-{} have no primary in the reply (is cluster_state ok? see CLUSTER INFO)",
                end - 1
            )));
        }
        let owners = self.owners.into_iter().map(|o| o.unwrap_or(0)).collect();
        Ok(SlotMap { nodes: self.nodes, replicas: self.replicas, owners })
    }
}

/// One element of a reply: scalars with their bytes, aggregates by where
/// their elements start.
#[derive(Clone, Copy, Debug)]
enum Item<'a> {
    Text(&'a [u8]),
    Int(i64),
    Nil,
    Error(&'a [u8]),
    /// An array or set; `map`: a RESP3 map, whose `len` keys and values alternate.
    List {
        first: usize,
        len: usize,
        map: bool,
    },
    Other,
}

/// Walks a reply's elements with the crate's scanner.
struct Reader<'a> {
    buf: &'a [u8],
    scanner: ReplyScanner,
}

impl<'a> Reader<'a> {
    /// The top-level reply's elements, past any RESP3 push frame (client
    /// tracking) that came before it, and the offset past it.
    fn reply(&mut self, command: &str) -> Result<(Vec<Item<'a>>, usize), TopologyError> {
        let mut at = 0;
        loop {
            let (item, end) = self.item(at)?;
            if self.scanner.kind == ReplyKind::Push {
                at = end;
                continue;
            }
            return match item {
                Item::Error(text) => Err(TopologyError::Refused(escape_bytes(text, 0, text.len(), 200))),
                item => Ok((self.list(item, &format!("{command}: the reply is not a list"))?, end)),
            };
        }
    }

    /// The element at `at` and the offset just past it.
    fn item(&mut self, at: usize) -> Result<(Item<'a>, usize), TopologyError> {
        if self.buf.get(at) == Some(&b'|') {
            return Err(invalid(format!("a RESP3 attribute at byte {at}, where the topology reply has none")));
        }
        let end = match self.scanner.scan(self.buf, at) {
            Ok(Scan::Complete(end)) => end,
            Ok(Scan::Incomplete) => return Err(TopologyError::Incomplete),
            Err(e) => return Err(invalid(format!("the topology reply is not RESP: {e}"))),
        };
        let payload = self.scanner.payload(self.buf);
        let item = match self.scanner.kind {
            ReplyKind::Simple | ReplyKind::Bulk | ReplyKind::Verbatim => Item::Text(payload),
            ReplyKind::Integer => {
                std::str::from_utf8(payload).ok().and_then(|s| s.parse().ok()).map_or(Item::Other, Item::Int)
            }
            ReplyKind::Nil => Item::Nil,
            ReplyKind::Error => Item::Error(payload),
            ReplyKind::Aggregate => Item::List {
                first: self.scanner.payload_start,
                len: self.scanner.payload_len,
                map: self.buf.get(at) == Some(&b'%'),
            },
            ReplyKind::Push | ReplyKind::Other => Item::Other,
        };
        Ok((item, end))
    }

    /// The elements of a list (a RESP3 map's keys and values in turn), or
    /// `Invalid(what)` when `item` is not one.
    fn list(&mut self, item: Item<'a>, what: &str) -> Result<Vec<Item<'a>>, TopologyError> {
        let Item::List { first, len, map } = item else {
            return Err(invalid(what.to_string()));
        };
        let count = if map { len.saturating_mul(2) } else { len };
        // Every element takes at least 3 bytes, so this bounds what a hostile count can reserve.
        let mut items = Vec::with_capacity(count.min(self.buf.len() / 3));
        let mut at = first;
        for _ in 0..count {
            let (element, end) = self.item(at)?;
            items.push(element);
            at = end;
        }
        Ok(items)
    }

    /// A map as `(key, value)` pairs: a RESP3 map, or a RESP2 flat array of
    /// keys and values. Keys that are not text are kept as `Other`.
    fn map(&mut self, item: Item<'a>, what: &str) -> Result<Vec<(&'a [u8], Item<'a>)>, TopologyError> {
        let items = self.list(item, &format!("{what} is not a map"))?;
        if items.len() % 2 != 0 {
            return Err(invalid(format!("{what} is not a map (an odd number of elements)")));
        }
        Ok(items
            .chunks_exact(2)
            .map(|kv| match kv[0] {
                Item::Text(key) => (key, kv[1]),
                _ => (&b""[..], Item::Other),
            })
            .collect())
    }
}

fn field<'a>(entry: &[(&[u8], Item<'a>)], key: &str) -> Option<Item<'a>> {
    entry.iter().find(|(k, _)| *k == key.as_bytes()).map(|&(_, v)| v)
}

fn text<'a>(entry: &[(&[u8], Item<'a>)], key: &str) -> Option<&'a [u8]> {
    match field(entry, key) {
        Some(Item::Text(t)) => Some(t),
        _ => None,
    }
}

/// How messages name a CLUSTER SHARDS node entry: its id when it has one.
fn node_name(entry: &[(&[u8], Item<'_>)], shard: usize, index: usize) -> String {
    match text(entry, "id") {
        Some(id) => format!("{} (shard {shard})", escape_bytes(id, 0, id.len(), 64)),
        None => format!("{index} of shard {shard}"),
    }
}

/// A node entry's host: `endpoint`, else `ip`; None when it announces `?`
/// (an endpoint it does not know).
fn shard_host(entry: &[(&[u8], Item<'_>)], seed_host: &str, name: &str) -> Result<Option<String>, TopologyError> {
    match field(entry, "endpoint").or_else(|| field(entry, "ip")) {
        Some(Item::Text(bytes)) => host_or_seed(bytes, seed_host, &format!("CLUSTER SHARDS: node {name}")),
        None | Some(Item::Nil) => Ok(Some(seed_host.to_string())),
        Some(_) => Err(invalid(format!("CLUSTER SHARDS: node {name} has an endpoint that is not text"))),
    }
}

/// `port` or `tls-port` as the plan needs (the other when it is absent or 0);
/// None when the node announces neither.
fn shard_port(entry: &[(&[u8], Item<'_>)], tls: bool, name: &str) -> Result<Option<u16>, TopologyError> {
    let named = |key: &str| match field(entry, key) {
        None | Some(Item::Int(0)) => Ok(None),
        Some(Item::Int(p)) if (1..=65535).contains(&p) => Ok(Some(p as u16)),
        Some(_) => Err(invalid(format!("CLUSTER SHARDS: node {name} has a {key} that is not a port number"))),
    };
    let (port, tls_port) = (named("port")?, named("tls-port")?);
    Ok(if tls { tls_port.or(port) } else { port.or(tls_port) })
}

/// An announced host: the seed's for an empty one, None for `?`.
fn host_or_seed(bytes: &[u8], seed_host: &str, what: &str) -> Result<Option<String>, TopologyError> {
    match bytes {
        b"" => Ok(Some(seed_host.to_string())),
        b"?" => Ok(None),
        _ => match std::str::from_utf8(bytes) {
            Ok(host) if !host.chars().any(|c| c.is_control() || c.is_whitespace()) => Ok(Some(host.to_string())),
            _ => Err(invalid(format!(
                "{what} has a host that is not a host name: \"{}\"",
                escape_bytes(bytes, 0, bytes.len(), 64)
            ))),
        },
    }
}

/// A range bound: any integer, so that the range check names the node and
/// the range when it is not a slot.
fn slot_bound(item: Item<'_>, what: impl Fn() -> String) -> Result<i64, TopologyError> {
    match item {
        Item::Int(n) => Ok(n),
        _ => Err(invalid(what())),
    }
}

/// `0-5460 5462-6000`, for a message.
fn range_list(bounds: &[i64]) -> String {
    bounds.chunks_exact(2).map(|p| format!("{}-{}", p[0], p[1])).collect::<Vec<_>>().join(" ")
}

fn invalid(text: String) -> TopologyError {
    TopologyError::Invalid(text)
}
