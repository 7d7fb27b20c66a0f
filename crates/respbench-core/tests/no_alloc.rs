//! The hot path does not allocate per request: a run of many requests makes
//! exactly as many allocations as a run of few. Counted with a global
//! allocator against a server that does not allocate per request either
//! (it answers `+OK` to whatever complete commands it has read, found with
//! the engine's own scanner). One test in this binary, so nothing else
//! allocates while it counts.

mod counting_alloc;

use counting_alloc::{allocations_for, ok_server};
use respbench_core::keys::KeyPattern;
use respbench_core::plan::{ClusterPlan, CommandSpec};
use respbench_core::{Mode, Plan};

#[test]
fn allocations_do_not_grow_with_the_number_of_requests() {
    let port = ok_server();
    // The third checks reads against the derived values and tracks the keys
    // written (lost writes); the last is a weighted mix of three commands,
    // one with a key pattern of its own: still nothing per request.
    let mix = vec![
        CommandSpec { template: "GET __key__".into(), weight: 80, key_pattern: None },
        CommandSpec { template: "SET".into(), weight: 15, key_pattern: None },
        CommandSpec { template: "INCR c:__key__".into(), weight: 5, key_pattern: Some(KeyPattern::Zipf) },
        CommandSpec { template: "MGET __key__ __key__ __key__".into(), weight: 5, key_pattern: None },
        CommandSpec { template: "MSET __key__ __data__ __key__ __data__".into(), weight: 5, key_pattern: None },
    ];
    // `--cluster` with two "primaries" (both this server): each connection's
    // two sources walk the whole stream of a one-key mix, skipping the other
    // node's requests (the drawn command's slot), still nothing per request.
    let cluster_mix = vec![
        CommandSpec { template: "GET __key__".into(), weight: 80, key_pattern: None },
        CommandSpec { template: "SET".into(), weight: 15, key_pattern: None },
        CommandSpec { template: "INCR c:__key__ __rand_int__".into(), weight: 5, key_pattern: Some(KeyPattern::Zipf) },
    ];
    let cluster = ClusterPlan {
        nodes: vec![("127.0.0.1".into(), port), ("127.0.0.1".into(), port)],
        slots: vec![(0, 8191, 0), (8192, 16383, 1)],
        ..ClusterPlan::default()
    };
    for (mode, template, verify_get, commands, cluster) in [
        (Mode::Set, "SET", false, vec![], None),
        (Mode::Mixed, "SET __key__ __data__ __rand_int__", false, vec![], None),
        (Mode::Mixed, "SET", true, vec![], None),
        (Mode::Mixed, "SET", true, mix, None),
        (Mode::Mixed, "SET", true, cluster_mix, Some(cluster)),
    ] {
        let set_cmd = template.to_string();
        let template = match (commands.is_empty(), cluster.is_some()) {
            (true, _) => template,
            (false, false) => "a GET/SET/INCR/MGET/MSET mix",
            (false, true) => "a GET/SET/INCR mix through --cluster",
        };
        let plan = Plan {
            mode,
            verify_get,
            commands,
            cluster,
            set_cmd,
            connections: 2,
            threads: 2,
            pipeline: 32,
            value_size_min: 16,
            value_size_max: 300,
            // epoll, as before io_uring existed; tests/no_alloc_uring.rs counts the ring's path.
            io: respbench_core::io::IoChoice::Epoll,
            ..Plan::new("127.0.0.1", port)
        };
        allocations_for(Plan { requests: 1_000, ..plan.clone() }); // warm up the server's connection threads
        let few = allocations_for(Plan { requests: 2_000, ..plan.clone() });
        let many = allocations_for(Plan { requests: 200_000, ..plan.clone() });
        eprintln!("{template}: {few} allocations for 2,000 requests, {many} for 200,000");
        // The server's per-connection thread and buffers are counted too; they are the same in both runs.
        assert!(many <= few + 8, "{template}: {few} allocations for 2,000 requests, {many} for 200,000");
    }
}
