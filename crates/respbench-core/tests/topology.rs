//! The slot map from CLUSTER SHARDS / CLUSTER SLOTS replies: the real bytes of
//! redis-server 7.0.15 (tests/fixtures/topology, see its README) and replies
//! built here to be wrong in one way each.

use respbench_core::cluster_plan::ReadFrom;
use respbench_core::command::{CommandEncoder, Role, parse_template};
use respbench_core::keys::KeyStream;
use respbench_core::topology::{
    CLUSTER_SHARDS, CLUSTER_SLOTS, Parsed, SlotMap, TopologyError, parse_shards, parse_slots,
};
use respbench_core::values::ValueFactory;

const SHARDS_RESP2: &[u8] = include_bytes!("fixtures/topology/shards-resp2.bin");
const SHARDS_RESP3: &[u8] = include_bytes!("fixtures/topology/shards-resp3.bin");
const SLOTS_RESP2_PLAIN: &[u8] = include_bytes!("fixtures/topology/slots-resp2-plain.bin");
const SLOTS_RESP3_TLS: &[u8] = include_bytes!("fixtures/topology/slots-resp3-tls.bin");

/// The fixtures' cluster: three primaries with slots split as
/// `redis-cli --cluster create` splits them, plain ports 2710x, TLS 2720x.
const RANGES: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

fn local(port: u16) -> (String, u16) {
    ("127.0.0.1".to_string(), port)
}

fn assert_fixture_map(map: &SlotMap, port_base: u16) {
    let primaries: Vec<_> = (0..3).map(|i| local(port_base + i)).collect();
    assert_eq!(map.nodes(), primaries.as_slice());
    for (node, &(first, last)) in RANGES.iter().enumerate() {
        for slot in [first, (first + last) / 2, last] {
            assert_eq!(map.owner(slot), node, "slot {slot}");
            assert_eq!(map.primary(slot), &primaries[node]);
        }
    }
    assert_eq!(map.ranges(), RANGES.iter().enumerate().map(|(n, &(f, l))| (f, l, n as u32)).collect::<Vec<_>>());
    for node in 0..3 {
        let replicas = map.replicas(node);
        assert_eq!(replicas.len(), 1, "one replica each: {replicas:?}");
        assert!(replicas[0].1 >= port_base + 3 && replicas[0].1 < port_base + 6, "{replicas:?}");
    }
}

fn whole(result: Result<Parsed, TopologyError>, bytes: &[u8]) -> SlotMap {
    let parsed = result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.end, bytes.len());
    parsed.map
}

#[test]
fn shards_replies_map_every_slot_to_its_primary_on_the_port_the_plan_speaks() {
    for bytes in [SHARDS_RESP2, SHARDS_RESP3] {
        assert_fixture_map(&whole(parse_shards(bytes, "seed", false), bytes), 27100);
        assert_fixture_map(&whole(parse_shards(bytes, "seed", true), bytes), 27200);
    }
}

#[test]
fn slots_replies_give_the_same_map_with_the_ports_of_the_connection_that_asked() {
    let plain = whole(parse_slots(SLOTS_RESP2_PLAIN, "seed"), SLOTS_RESP2_PLAIN);
    assert_eq!(plain, whole(parse_shards(SHARDS_RESP2, "seed", false), SHARDS_RESP2));
    let tls = whole(parse_slots(SLOTS_RESP3_TLS, "seed"), SLOTS_RESP3_TLS);
    assert_eq!(tls, whole(parse_shards(SHARDS_RESP3, "seed", true), SHARDS_RESP3));
}

#[test]
fn the_map_becomes_a_cluster_plan_the_engine_accepts() {
    let map = whole(parse_shards(SHARDS_RESP3, "seed", false), SHARDS_RESP3);
    let cluster = map.to_cluster_plan(ReadFrom::Replica);
    let owners = cluster.slot_owners();
    assert!((0..16384u16).all(|s| usize::from(owners[s as usize]) == map.owner(s)));
    assert_eq!(cluster.read_target(0, 1), Some(0), "replicas carried over");
    let mut plan = respbench_core::Plan::new("127.0.0.1", 27100);
    plan.cluster = Some(cluster);
    plan.check().unwrap();
}

#[test]
fn a_reply_cut_anywhere_is_incomplete_and_bytes_after_it_are_left() {
    for bytes in [SHARDS_RESP2, SHARDS_RESP3] {
        for cut in 0..bytes.len() {
            assert_eq!(parse_shards(&bytes[..cut], "seed", false), Err(TopologyError::Incomplete), "cut at {cut}");
        }
    }
    for bytes in [SLOTS_RESP2_PLAIN, SLOTS_RESP3_TLS] {
        for cut in 0..bytes.len() {
            assert_eq!(parse_slots(&bytes[..cut], "seed"), Err(TopologyError::Incomplete), "cut at {cut}");
        }
    }
    let mut two = SLOTS_RESP2_PLAIN.to_vec();
    two.extend_from_slice(b"+OK\r\n");
    assert_eq!(parse_slots(&two, "seed").unwrap().end, SLOTS_RESP2_PLAIN.len());
}

#[test]
fn an_error_reply_is_refused_with_its_text() {
    let reply = b"-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n";
    assert_eq!(
        parse_shards(reply, "seed", false),
        Err(TopologyError::Refused("ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.".into()))
    );
}

#[test]
fn a_tracking_push_before_the_reply_is_passed_over() {
    let mut bytes = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n".to_vec();
    bytes.extend_from_slice(SHARDS_RESP3);
    let parsed = parse_shards(&bytes, "seed", false).unwrap();
    assert_eq!(parsed.end, bytes.len());
    assert_fixture_map(&parsed.map, 27100);
}

#[test]
fn the_requests_are_the_bytes_the_encoder_writes_for_them() {
    for (text, bytes) in [("CLUSTER SHARDS", CLUSTER_SHARDS), ("CLUSTER SLOTS", CLUSTER_SLOTS)] {
        let encoder = CommandEncoder::new(parse_template(text, Role::Get, true).unwrap(), b"", 1);
        let values = ValueFactory::new(1, 1);
        let mut out = vec![0; encoder.max_bytes(&values)];
        let (len, _) = encoder.encode(&mut out, 0, &mut KeyStream::new(0, 0), &values);
        assert_eq!(&out[..len], bytes, "{text}");
    }
}

// ---- replies built wrong on purpose -----------------------------------

/// A reply value, encoded below as RESP2 (maps as flat arrays) or RESP3.
#[derive(Clone)]
enum V {
    Int(i64),
    Text(String),
    List(Vec<V>),
    Map(Vec<(&'static str, V)>),
}

fn encode(v: &V, resp3: bool, out: &mut Vec<u8>) {
    match v {
        V::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
        V::Text(s) => out.extend_from_slice(format!("${}\r\n{s}\r\n", s.len()).as_bytes()),
        V::List(items) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            items.iter().for_each(|i| encode(i, resp3, out));
        }
        V::Map(pairs) => {
            let header = if resp3 { format!("%{}\r\n", pairs.len()) } else { format!("*{}\r\n", pairs.len() * 2) };
            out.extend_from_slice(header.as_bytes());
            for (k, v) in pairs {
                encode(&V::Text(k.to_string()), resp3, out);
                encode(v, resp3, out);
            }
        }
    }
}

fn text(s: &str) -> V {
    V::Text(s.to_string())
}

fn node(port: u16, role: &str, health: &str) -> V {
    V::Map(vec![
        ("id", text(&format!("node{port}"))),
        ("port", V::Int(port.into())),
        ("tls-port", V::Int(i64::from(port) + 100)),
        ("ip", text("127.0.0.1")),
        ("endpoint", text("127.0.0.1")),
        ("role", text(role)),
        ("replication-offset", V::Int(14)),
        ("health", text(health)),
    ])
}

fn shard(ranges: &[i64], nodes: Vec<V>) -> V {
    V::Map(vec![("slots", V::List(ranges.iter().map(|&n| V::Int(n)).collect())), ("nodes", V::List(nodes))])
}

/// Three shards over every slot, the second's range given; `change` alters the third.
fn shards(second: &[i64], change: impl Fn(&mut Vec<V>)) -> V {
    let mut third = vec![node(7002, "master", "online"), node(7005, "replica", "online")];
    change(&mut third);
    V::List(vec![
        shard(&[0, 5460], vec![node(7000, "master", "online")]),
        shard(second, vec![node(7001, "master", "online")]),
        shard(&[10923, 16383], third),
    ])
}

fn refusal(reply: &V) -> String {
    let mut texts = Vec::new();
    for resp3 in [false, true] {
        let mut bytes = Vec::new();
        encode(reply, resp3, &mut bytes);
        match parse_shards(&bytes, "seed", false) {
            Err(TopologyError::Invalid(text)) => texts.push(text),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(texts[0], texts[1], "RESP2 and RESP3 refused alike");
    assert!(!texts[0].contains('\n'), "one line: {}", texts[0]);
    texts.remove(0)
}

#[test]
fn the_built_replies_parse_when_nothing_is_wrong() {
    for resp3 in [false, true] {
        let mut bytes = Vec::new();
        encode(&shards(&[5461, 10922], |_| {}), resp3, &mut bytes);
        let map = parse_shards(&bytes, "seed", false).unwrap().map;
        assert_eq!(map.nodes(), &[local(7000), local(7001), local(7002)]);
        assert_eq!(map.replicas(2), &[local(7005)]);
    }
}

#[test]
fn a_slot_past_16383_is_refused_naming_the_node_and_the_range() {
    let text = refusal(&shards(&[5461, 10922, 16000, 16384], |_| {}));
    assert_eq!(text, "node 127.0.0.1:7001: slot range 16000-16384 is not within 0-16383");
    assert!(refusal(&shards(&[-1, 10922], |_| {})).contains("127.0.0.1:7001: slot range -1-10922"));
    assert!(refusal(&shards(&[10922, 5461], |_| {})).contains("slot range 10922-5461 is not within"));
}

#[test]
fn overlapping_ranges_are_refused_naming_both_nodes() {
    let text = refusal(&shards(&[5000, 10922], |_| {}));
    assert_eq!(text, "node 127.0.0.1:7001: slot range 5000-10922 overlaps a range of node 127.0.0.1:7000 (slot 5000)");
}

#[test]
fn a_slot_no_primary_owns_is_refused() {
    let text = refusal(&shards(&[5461, 10000], |_| {}));
    assert!(text.starts_with("slots 10001-10922 have no primary in the reply"), "{text}");
    let text = refusal(&shards(&[5461, 10922], |third| third[0] = node(7002, "master", "fail")));
    assert_eq!(text, "CLUSTER SHARDS: shard 2 (slots 10923-16383) has no primary that is not failed");
}

#[test]
fn a_malformed_entry_is_refused_naming_where_it_is() {
    let with_port = |port: V| {
        shards(&[5461, 10922], move |third| {
            if let V::Map(fields) = &mut third[0] {
                fields[1].1 = port.clone();
            }
        })
    };
    assert_eq!(
        refusal(&with_port(V::Int(70000))),
        "CLUSTER SHARDS: node node7002 (shard 2) has a port that is not a port number"
    );
    assert!(refusal(&with_port(text("7002"))).contains("node7002 (shard 2) has a port that is not a port number"));
    assert!(refusal(&shards(&[5461], |_| {})).contains("shard 1 has an odd number of slot bounds"));
    assert_eq!(
        refusal(&shards(&[5461, 10922], |third| third[1] = V::Int(3))),
        "CLUSTER SHARDS: shard 2 node 1 is not a map"
    );
    let unknown = shards(&[5461, 10922], |third| {
        if let V::Map(fields) = &mut third[0] {
            fields[4].1 = text("?");
        }
    });
    assert!(refusal(&unknown).contains("primary node7002 (shard 2) announces no endpoint"));
    assert_eq!(refusal(&V::Int(3)), "CLUSTER SHARDS: the reply is not a list");
}

#[test]
fn an_empty_endpoint_is_the_seed_and_tls_falls_back_on_the_plain_port() {
    let reply = shards(&[5461, 10922], |third| {
        if let V::Map(fields) = &mut third[0] {
            fields[2].1 = V::Int(0);
            fields[4].1 = text("");
        }
    });
    let mut bytes = Vec::new();
    encode(&reply, true, &mut bytes);
    let map = parse_shards(&bytes, "seed.example", true).unwrap().map;
    assert_eq!(map.nodes()[2], ("seed.example".to_string(), 7002));
    assert_eq!(map.nodes()[0], local(7100), "the others on their tls-port");
}

#[test]
fn slots_replies_built_wrong_are_refused_in_one_line() {
    let range = |first: i64, last: i64, port: i64| {
        V::List(vec![V::Int(first), V::Int(last), V::List(vec![text("127.0.0.1"), V::Int(port), text("id")])])
    };
    let cases = [
        (V::List(vec![range(0, 8191, 7000), range(8192, 16384, 7001)]), "node 127.0.0.1:7001: slot range 8192-16384"),
        (V::List(vec![range(0, 9000, 7000), range(8192, 16383, 7001)]), "overlaps a range of node 127.0.0.1:7000"),
        (V::List(vec![range(0, 8191, 7000), range(8192, 16383, 65536)]), "slots 8192-16383: the primary has a port"),
        (V::List(vec![range(0, 8191, 7000), range(8192, 16383, 0)]), "slots 8192-16383: the primary has no known"),
        (V::List(vec![range(0, 8191, 7000)]), "slots 8192-16383 have no primary"),
        (V::List(vec![V::List(vec![V::Int(0), V::Int(16383)])]), "CLUSTER SLOTS: range 0 has no primary"),
    ];
    for (reply, expected) in cases {
        let mut bytes = Vec::new();
        encode(&reply, false, &mut bytes);
        match parse_slots(&bytes, "seed") {
            Err(TopologyError::Invalid(text)) => {
                assert!(text.contains(expected) && !text.contains('\n'), "{text:?} should say {expected:?}")
            }
            other => panic!("{expected}: {other:?}"),
        }
    }
    let mut bytes = Vec::new();
    encode(&V::List(vec![range(0, 8191, 7000), range(8192, 16383, 7001), range(0, 0, 7000)]), false, &mut bytes);
    assert!(matches!(parse_slots(&bytes, "seed"), Err(TopologyError::Invalid(t)) if t.contains("(slot 0)")));
}

/// Every byte of the real replies replaced in turn, truncations, nesting
/// and counts no reply has: whatever comes back, nothing panics.
#[test]
fn no_input_makes_the_parser_panic() {
    for bytes in [SHARDS_RESP3, SLOTS_RESP2_PLAIN] {
        let mut mutated = bytes.to_vec();
        for i in 0..bytes.len() {
            for b in [b'*', b'%', b':', b'\r'] {
                mutated[i] = b;
                let _ = parse_shards(&mutated, "seed", true);
                let _ = parse_slots(&mutated, "seed");
            }
            mutated[i] = bytes[i];
        }
    }
    let mut deep = b"*1\r\n".repeat(100_000);
    deep.extend_from_slice(b":1\r\n");
    // 16384 one-slot ranges, each on a primary of its own: parsed, and quickly.
    let mut many_primaries = format!("*{}\r\n", 16384).into_bytes();
    for slot in 0..16384 {
        let port = 10000 + slot;
        many_primaries
            .extend_from_slice(format!("*3\r\n:{slot}\r\n:{slot}\r\n*2\r\n$1\r\nh\r\n:{port}\r\n").as_bytes());
    }
    assert_eq!(parse_slots(&many_primaries, "seed").unwrap().map.nodes().len(), 16384);
    let hostile: [&[u8]; 7] = [
        &deep,
        b"*2147483647\r\n",
        b"*1\r\n%1073741824\r\n",
        b"*1\r\n*4\r\n:0\r\n:16383\r\n*2\r\n$-1\r\n:-5\r\n",
        b"|1\r\n+a\r\n+b\r\n*0\r\n",
        b"\x00\x01garbage\r\n",
        &many_primaries,
    ];
    for bytes in hostile {
        let _ = parse_shards(bytes, "seed", false);
        let _ = parse_slots(bytes, "seed");
    }
}

/// test/vectors/topology.json: the replies the TS reading refuses too, each
/// with the same line (packages/cli/test/cluster-discovery.test.ts).
#[test]
fn the_shared_invalid_replies_are_refused_with_the_same_line() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test/vectors/topology.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let vectors: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let seed = vectors["seed"].as_str().expect("seed");
    let cases = vectors["invalid"].as_array().expect("invalid cases");
    assert!(cases.len() >= 20, "{} cases", cases.len());
    for case in cases {
        let reply = case["reply"].as_str().expect("reply").as_bytes();
        let got = match case["command"].as_str() {
            Some("slots") => parse_slots(reply, seed),
            Some("shards") => parse_shards(reply, seed, false),
            other => panic!("unknown command {other:?}"),
        };
        let expected = case["error"].as_str().expect("error");
        assert_eq!(got, Err(TopologyError::Invalid(expected.to_string())), "{}", case["case"]);
    }
}
