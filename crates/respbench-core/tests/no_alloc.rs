//! The hot path does not allocate per request: a run of many requests makes
//! exactly as many allocations as a run of few. Counted with a global
//! allocator against a server that does not allocate per request either
//! (it answers `+OK` to whatever complete commands it has read, found with
//! the engine's own scanner). One test in this binary, so nothing else
//! allocates while it counts.

mod counting_alloc;

use counting_alloc::{allocations_for, ok_server};
use respbench_core::{Mode, Plan};

#[test]
fn allocations_do_not_grow_with_the_number_of_requests() {
    let port = ok_server();
    // The last one checks reads against the derived values and tracks the
    // keys written (lost writes): still nothing per request.
    for (mode, template, verify_get) in [
        (Mode::Set, "SET", false),
        (Mode::Mixed, "SET __key__ __data__ __rand_int__", false),
        (Mode::Mixed, "SET", true),
    ] {
        let plan = Plan {
            mode,
            verify_get,
            set_cmd: template.into(),
            connections: 2,
            threads: 2,
            pipeline: 32,
            value_size_min: 16,
            value_size_max: 300,
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
