//! `--cluster`: a connection's per-primary sources, together, send exactly
//! the requests of its single-server stream. A skipped request (another
//! primary's) must take the same draws as a sent one: the command draw of a
//! mix, its keys, its `__rand_int__`s; otherwise the later requests would
//! differ from a single server's. As cluster-split.test.ts in the CLI.

use respbench_core::keys::KeyPattern;
use respbench_core::plan::{ClusterPlan, CommandSpec};
use respbench_core::request_source::{PreparedPlan, Side};
use respbench_core::slot::key_slot;
use respbench_core::{Mode, Plan};

/// The requests' bytes of a source, each on its own.
fn requests(prepared: &PreparedPlan, node: Option<u16>, side: Side) -> Vec<Vec<u8>> {
    let mut source = prepared.run_source(1, false, node, side);
    let mut out = vec![0u8; prepared.max_request_bytes];
    let mut all = Vec::new();
    while source.remaining > 0 {
        let r = source.next(prepared, &mut out);
        if r.len == 0 {
            break;
        }
        all.push(out[..r.len].to_vec());
    }
    all
}

/// The second argument of a RESP array request (the key argument of every command here).
fn second_arg(r: &[u8]) -> &[u8] {
    let mut at = r.iter().position(|&b| b == b'\n').unwrap() + 1;
    for i in 0..2 {
        let eol = at + r[at..].iter().position(|&b| b == b'\r').unwrap();
        let len: usize = std::str::from_utf8(&r[at + 1..eol]).unwrap().parse().unwrap();
        if i == 1 {
            return &r[eol + 2..eol + 2 + len];
        }
        at = eol + 2 + len + 2;
    }
    unreachable!()
}

#[test]
fn the_node_sources_together_send_the_single_server_stream() {
    let mix = vec![
        CommandSpec { template: "GET __key__".into(), weight: 60, key_pattern: None },
        CommandSpec { template: "SET __key__ __data__ __rand_int__".into(), weight: 20, key_pattern: None },
        CommandSpec {
            template: "INCRBY n:__key__ __rand_int__".into(),
            weight: 10,
            key_pattern: Some(KeyPattern::Zipf),
        },
        CommandSpec { template: "MGET __key__ __key__".into(), weight: 10, key_pattern: None },
    ];
    for (prefix, commands) in [("bench:key:", mix.clone()), ("{t}:", mix)] {
        let cluster = ClusterPlan {
            nodes: vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 3)],
            slots: vec![(0, 5460, 0), (5461, 10922, 1), (10923, 16383, 2)],
            ..ClusterPlan::default()
        };
        let plan = Plan {
            mode: Mode::Mixed,
            commands,
            key_prefix: prefix.into(),
            requests: 3_000,
            connections: 2,
            keyspace: 500,
            seed: 9,
            ..Plan::new("127.0.0.1", 1)
        };
        let single = requests(&PreparedPlan::new(plan.clone()).unwrap(), None, Side::All);
        let prepared = PreparedPlan::new(Plan { cluster: Some(cluster), ..plan }).unwrap();
        let mut split: Vec<Vec<u8>> = (0..3).flat_map(|n| requests(&prepared, Some(n), Side::All)).collect();
        // Each request went to the owner of its key argument's slot, hashed here from the bytes sent: the
        // source's per-key memo of slots is per key argument (GET's `k` and INCRBY's `n:k` differ).
        for n in 0..3u16 {
            for r in requests(&prepared, Some(n), Side::All) {
                let slot = key_slot(second_arg(&r));
                let owner = [5460, 10922, 16383].iter().position(|&last| slot <= last).unwrap() as u16;
                assert_eq!(owner, n, "{}", String::from_utf8_lossy(&r));
            }
        }
        // --read-from: a node's writes and reads sources (two sockets) split its share, each request once,
        // the reads being the GET-like commands (GET, MGET) and the writes the rest.
        for n in 0..3 {
            let all = requests(&prepared, Some(n), Side::All);
            let writes = requests(&prepared, Some(n), Side::Writes);
            let reads = requests(&prepared, Some(n), Side::Reads);
            assert_eq!(!writes.is_empty() && !reads.is_empty(), !all.is_empty());
            assert!(reads.iter().all(|r| r.starts_with(b"*2\r\n$3\r\nGET") || r.starts_with(b"*3\r\n$4\r\nMGET")));
            assert!(writes.iter().all(|r| !r.starts_with(b"*2\r\n$3\r\nGET") && !r.starts_with(b"*3\r\n$4\r\nMGET")));
            let mut both: Vec<Vec<u8>> = writes.into_iter().chain(reads).collect();
            let mut all_sorted = all.clone();
            both.sort();
            all_sorted.sort();
            assert_eq!(both, all_sorted, "node {n}, prefix {prefix}");
        }
        // --rate: each request a node's source yields knows its number in the connection's stream
        // (`walked - 1`), so it is due when it would be on one server: put at those numbers, the
        // nodes' requests are the single-server stream in order. As cluster-split.test.ts.
        let mut by_ordinal: Vec<Option<Vec<u8>>> = vec![None; single.len()];
        for n in 0..3 {
            let mut source = prepared.run_source(1, false, Some(n), Side::All);
            let mut out = vec![0u8; prepared.max_request_bytes];
            loop {
                let r = source.next(&prepared, &mut out);
                if r.len == 0 {
                    break;
                }
                let at = (source.walked - 1) as usize;
                assert!(by_ordinal[at].is_none(), "request {at} yielded twice");
                by_ordinal[at] = Some(out[..r.len].to_vec());
            }
        }
        assert_eq!(by_ordinal.into_iter().map(Option::unwrap).collect::<Vec<_>>(), single, "prefix {prefix}");
        let mut expected = single.clone();
        assert_eq!(expected.len(), 1_500);
        expected.sort();
        split.sort();
        assert_eq!(split, expected, "prefix {prefix}");
    }
}

/// Every argument of a request that holds `:{` (a hash-tagged key of the command suite).
fn tagged_args(r: &[u8]) -> Vec<&[u8]> {
    let text = r.split(|&b| b == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    text.filter(|arg| arg.windows(2).any(|w| w == b":{")).collect()
}

#[test]
fn the_command_suite_under_cluster_splits_each_test_over_the_primaries() {
    // The suite's commands as suite.ts writes them under --cluster (keyName), PING with no key among them.
    let tests = [
        ("PING", true),
        ("PING", false),
        ("SET key:{__tag__}:__rand_int__ __data__", false),
        ("LPUSH mylist:{__tag__} __data__", false),
        ("ZADD myzset:{__tag__} __rand_int__ element:__rand_int__", false),
        (
            "MSET key:{__tag__}:__rand_int__ __data__ key:{__tag__}:__rand_int__ __data__ key:{__tag__}:__rand_int__ __data__",
            false,
        ),
    ];
    for rand_int_literal in [false, true] {
        for (command, inline) in tests {
            let plan = Plan {
                mode: Mode::Set,
                set_cmd: command.into(),
                get_cmd: command.into(),
                literal_commands: true,
                inline_commands: inline,
                rand_int_literal,
                key_prefix: String::new(),
                requests: 600,
                connections: 2,
                keyspace: 500,
                seed: 4,
                ..Plan::new("127.0.0.1", 1)
            };
            let cluster = ClusterPlan {
                nodes: vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 3)],
                slots: vec![(0, 5460, 0), (5461, 10922, 1), (10923, 16383, 2)],
                ..ClusterPlan::default()
            };
            let mut single = requests(&PreparedPlan::new(plan.clone()).unwrap(), None, Side::All);
            assert_eq!(single.len(), 300, "{command}");
            let prepared = PreparedPlan::new(Plan { cluster: Some(cluster), ..plan }).unwrap();
            let shares: Vec<Vec<Vec<u8>>> = (0..3).map(|n| requests(&prepared, Some(n), Side::All)).collect();
            // Not one node's load: each primary gets a share (PING by its key draw, the rest by their tags).
            assert!(
                shares.iter().all(|s| s.len() > 50),
                "{command}: {:?}",
                shares.iter().map(Vec::len).collect::<Vec<_>>()
            );
            for (n, share) in shares.iter().enumerate() {
                for r in share {
                    for key in tagged_args(r) {
                        let owner = [5460, 10922, 16383].iter().position(|&last| key_slot(key) <= last).unwrap();
                        assert_eq!(owner, n, "{}", String::from_utf8_lossy(r));
                    }
                }
            }
            let mut split: Vec<Vec<u8>> = shares.into_iter().flatten().collect();
            split.sort();
            single.sort();
            assert_eq!(split, single, "{command}");
        }
    }
}
