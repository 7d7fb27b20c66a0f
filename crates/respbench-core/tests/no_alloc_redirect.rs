//! `--cluster`: the redirection path allocates nothing per request. A
//! "primary" answers every request with a redirection to a second server
//! that answers `+OK`: with `-ASK`, every request goes again (after
//! `ASKING`) over the client's Link to the second server; with `-MOVED 0 …`, every request
//! not of slot 0 is redirected too (the slot the MOVED names is the only one
//! moved), and slot 0's then go straight to the new owner. A run of many
//! requests makes as many allocations as a run of few. One test in this
//! binary, so nothing else allocates while it counts.

mod counting_alloc;

use counting_alloc::{allocations_for, answer_server, ok_server};
use respbench_core::plan::ClusterPlan;
use respbench_core::{Mode, Plan};

#[test]
fn redirected_requests_allocate_nothing_each() {
    let owner = ok_server();
    for kind in ["ASK", "MOVED"] {
        let primary = answer_server(format!("-{kind} 0 127.0.0.1:{owner}\r\n").into_bytes());
        let cluster = ClusterPlan {
            nodes: vec![("127.0.0.1".into(), primary)],
            slots: vec![(0, 16383, 0)],
            ..ClusterPlan::default()
        };
        let plan = Plan {
            mode: Mode::Mixed,
            cluster: Some(cluster),
            connections: 2,
            threads: 1,
            pipeline: 16,
            keyspace: 100_000,
            ..Plan::new("127.0.0.1", primary)
        };
        allocations_for(Plan { requests: 1_000, ..plan.clone() }); // warm up the servers' connection threads
        let few = allocations_for(Plan { requests: 2_000, ..plan.clone() });
        let many = allocations_for(Plan { requests: 40_000, ..plan.clone() });
        eprintln!("{kind}: {few} allocations for 2,000 redirected requests, {many} for 40,000");
        // The servers' per-connection threads and buffers are counted too; they are the same in both runs.
        assert!(many <= few + 8, "{kind}: {few} allocations for 2,000 redirected requests, {many} for 40,000");
    }
}
