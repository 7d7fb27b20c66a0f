//! The hot path does not allocate per request under `--rate` either (each
//! request also records its schedule lag and service time): a run of many
//! requests makes exactly as many allocations as a run of few. As
//! `no_alloc.rs`, in its own binary. Counted with a global
//! allocator against a server that does not allocate per request either
//! (it answers `+OK` to whatever complete commands it has read, found with
//! the engine's own scanner). One test in this binary, so nothing else
//! allocates while it counts.

mod counting_alloc;

use counting_alloc::{allocations_for, ok_server};
use respbench_core::plan::ClusterPlan;
use respbench_core::{Mode, Plan};

#[test]
fn a_rate_run_allocates_nothing_per_request_either() {
    // Under --rate each request also records its schedule lag and service time.
    let port = ok_server();
    let plan = Plan { connections: 2, threads: 2, pipeline: 32, rate: 100_000.0, ..Plan::new("127.0.0.1", port) };
    allocations_for(Plan { requests: 1_000, ..plan.clone() }); // warm up the server's connection threads
    let few = allocations_for(Plan { requests: 2_000, ..plan.clone() });
    let many = allocations_for(Plan { requests: 40_000, ..plan.clone() });
    eprintln!("--rate: {few} allocations for 2,000 requests, {many} for 40,000");
    assert!(many <= few + 8, "--rate: {few} allocations for 2,000 requests, {many} for 40,000");
    // --rate with --cluster (two "primaries", both this server): each primary's socket holds a request of its
    // share drawn before it is due in a buffer made with the connection; still nothing per request.
    let cluster = ClusterPlan {
        nodes: vec![("127.0.0.1".into(), port), ("127.0.0.1".into(), port)],
        slots: vec![(0, 8191, 0), (8192, 16383, 1)],
        ..ClusterPlan::default()
    };
    let plan = Plan { mode: Mode::Mixed, cluster: Some(cluster), ..plan };
    allocations_for(Plan { requests: 1_000, ..plan.clone() });
    let few = allocations_for(Plan { requests: 2_000, ..plan.clone() });
    let many = allocations_for(Plan { requests: 40_000, ..plan.clone() });
    eprintln!("--rate --cluster: {few} allocations for 2,000 requests, {many} for 40,000");
    assert!(many <= few + 8, "--rate --cluster: {few} allocations for 2,000 requests, {many} for 40,000");
}
