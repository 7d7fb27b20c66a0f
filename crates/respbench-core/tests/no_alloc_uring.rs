//! The io_uring path allocates nothing per request either (as `no_alloc.rs`
//! shows for epoll): a run of many requests makes as many allocations as a
//! run of few, with every Link's sends and multishot receives on the
//! worker's ring. One test in this binary, so nothing else allocates while
//! it counts. It fails, rather than skipping, where io_uring cannot run.

mod counting_alloc;

use counting_alloc::{allocations_for, ok_server};
use respbench_core::io::IoChoice;
use respbench_core::plan::ClusterPlan;
use respbench_core::{Mode, Plan};

#[test]
fn allocations_do_not_grow_with_the_number_of_requests_on_io_uring() {
    if let Err(why) = respbench_core::io::usable() {
        panic!("io_uring is not usable here, so its allocations cannot be counted: {why}");
    }
    let port = ok_server();
    let cluster = ClusterPlan {
        nodes: vec![("127.0.0.1".into(), port), ("127.0.0.1".into(), port)],
        slots: vec![(0, 8191, 0), (8192, 16383, 1)],
        ..ClusterPlan::default()
    };
    // Pipeline 1 with many connections (a send and a receive per request,
    // turns batched), a deep window with verification, --cluster, and values
    // large enough that a Link's sends carry more than epoll's 256 KiB writes
    // (its write buffer widened once, before the clock: RING_BATCH_BYTES).
    let small = (16, 300, 100_000);
    for (what, mode, verify_get, connections, pipeline, cluster, (value_min, value_max, many_requests)) in [
        ("SET -P 1 -c 8", Mode::Set, false, 8, 1, None, small),
        ("mixed --verify-get -P 32 -c 2", Mode::Mixed, true, 2, 32, None, small),
        ("mixed --cluster -P 16 -c 2", Mode::Mixed, false, 2, 16, Some(cluster), small),
        ("SET -d 20000 -P 64 -c 2", Mode::Set, false, 2, 64, None, (20_000, 20_000, 20_000)),
    ] {
        let plan = Plan {
            mode,
            verify_get,
            cluster,
            connections,
            threads: 2,
            pipeline,
            value_size_min: value_min,
            value_size_max: value_max,
            io: IoChoice::Uring,
            ..Plan::new("127.0.0.1", port)
        };
        allocations_for(Plan { requests: 1_000, ..plan.clone() }); // warm up the server's connection threads
        let few = allocations_for(Plan { requests: 2_000, ..plan.clone() });
        let many = allocations_for(Plan { requests: many_requests, ..plan.clone() });
        eprintln!("io_uring, {what}: {few} allocations for 2,000 requests, {many} for {many_requests}");
        assert!(many <= few + 8, "io_uring, {what}: {few} allocations for 2,000 requests, {many} for {many_requests}");
    }
}
