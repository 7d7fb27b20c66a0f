//! Any bytes as a CLUSTER SHARDS or CLUSTER SLOTS reply: the topology parser
//! never panics, a map it accepts gives every slot a listed primary, and a
//! reply it accepts still parses the same with more bytes after it (what a
//! refresh reads off a socket).
#![no_main]

use libfuzzer_sys::fuzz_target;
use respbench_core::topology::{Parsed, TopologyError, parse_shards, parse_slots};

fn check(parsed: &Result<Parsed, TopologyError>, data: &[u8], again: impl Fn(&[u8]) -> Result<Parsed, TopologyError>) {
    let Ok(parsed) = parsed else { return };
    assert!(parsed.end <= data.len());
    let nodes = parsed.map.nodes().len();
    assert!((0..16384u16).all(|slot| parsed.map.owner(slot) < nodes));
    let mut longer = data[..parsed.end].to_vec();
    longer.extend_from_slice(b"+OK\r\n");
    assert_eq!(again(&longer).as_ref().map(|p| &p.map), Ok(&parsed.map));
}

fuzz_target!(|data: &[u8]| {
    let tls = data.first().is_some_and(|b| b & 1 == 1);
    check(&parse_shards(data, "seed", tls), data, |d| parse_shards(d, "seed", tls));
    check(&parse_slots(data, "seed"), data, |d| parse_slots(d, "seed"));
});
