//! The connection loop against a tiny in-test RESP server: what reaches the
//! server, how replies are counted, and how each way a run can end is reported.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use respbench_core::keys::{KeyStream, requests_for_connection};
use respbench_core::values::ValueFactory;
use respbench_core::{FailureKind, Mode, Plan, RunControl, run};
use support::{Behaviour, TestServer};

fn plan(port: u16) -> Plan {
    Plan { requests: 5000, connections: 3, threads: 2, pipeline: 16, keyspace: 1000, ..Plan::new("127.0.0.1", port) }
}

fn total(h: &[(u64, u64)]) -> u64 {
    h.iter().map(|&(_, c)| c).sum()
}

#[test]
fn a_set_run_writes_each_connections_key_stream_and_counts_every_reply() {
    let server = TestServer::start(Behaviour::Normal);
    let p = plan(server.port);
    let r = run(p.clone(), &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    assert_eq!(
        (r.counters.requests, r.counters.sets, r.counters.gets, r.counters.ok, r.counters.errors),
        (5000, 5000, 0, 5000, 0)
    );
    assert_eq!(total(&r.histogram), 5000);
    assert_eq!(r.counters.bytes_in, 5000 * 5, "one +OK per request");
    assert!(r.elapsed_ns > 0);

    // The server holds exactly the keys the streams draw, each with its derived value.
    let values = ValueFactory::new(32, 32);
    let mut expected = std::collections::HashMap::new();
    for c in 0..3u32 {
        let mut keys = KeyStream::new(p.seed, c);
        for _ in 0..requests_for_connection(5000, 3, c as u64) {
            let key = format!("bench:key:{}", keys.next_key_index(1000)).into_bytes();
            let value = values.value_for_key(&key);
            expected.insert(key, value);
        }
    }
    assert_eq!(*server.store.lock().unwrap(), expected);
}

#[test]
fn each_connection_sends_its_key_stream_in_order_whether_replies_come_whole_or_in_pieces() {
    // A client whose window is full encodes its next batch ahead; replies
    // that come one by one commit it a few requests at a time. Either way
    // each connection's SETs reach the server in its stream's order, none
    // twice and none skipped, on either I/O backend.
    use respbench_core::io::IoChoice;
    let (connections, requests, keyspace) = (2u32, 3001u64, 1000u64);
    let mut expected: Vec<Vec<Vec<u8>>> = (0..connections)
        .map(|c| {
            let mut keys = KeyStream::new(1, c);
            (0..requests_for_connection(requests, connections as u64, c as u64))
                .map(|_| format!("bench:key:{}", keys.next_key_index(keyspace)).into_bytes())
                .collect()
        })
        .collect();
    expected.sort();
    for io in [IoChoice::Epoll, IoChoice::Uring] {
        if io == IoChoice::Uring && respbench_core::io::usable().is_err() {
            continue;
        }
        for behaviour in [Behaviour::Normal, Behaviour::OneByOne] {
            let server = TestServer::start(behaviour);
            let p =
                Plan { connections, threads: 1, pipeline: 32, requests, keyspace, seed: 1, io, ..plan(server.port) };
            let r = run(p, &RunControl::new()).unwrap();
            assert_eq!(r.failure, None, "{io:?} {behaviour:?}");
            assert_eq!((r.counters.requests, r.counters.ok), (requests, requests), "{io:?} {behaviour:?}");
            let mut got = server.set_keys.lock().unwrap().clone();
            got.sort();
            assert!(
                got == expected,
                "{io:?} {behaviour:?}: the SETs the server read are not the streams' keys in order"
            );
        }
    }
}

#[test]
fn get_mode_preloads_then_verifies_and_finds_corrupted_values() {
    let server = TestServer::start(Behaviour::Normal);
    let p = Plan { mode: Mode::Get, verify_get: true, ..plan(server.port) };
    let r = run(p.clone(), &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    assert_eq!(r.preload_requests, 1000, "keyspace <= requests: every key once");
    assert_eq!((r.counters.gets, r.counters.ok, r.counters.misses, r.counters.mismatches), (5000, 5000, 0, 0));

    server.store.lock().unwrap().insert(b"bench:key:7".to_vec(), b"corrupted".to_vec());
    let r = run(Plan { preload: false, ..p }, &RunControl::new()).unwrap();
    assert!(r.counters.mismatches > 0);
    let text = r.first_mismatch.unwrap();
    assert!(
        text.starts_with("key bench:key:7: 32 bytes expected, 9 received, first difference at byte 0: expected \""),
        "{text}"
    );
    assert!(text.ends_with("got \"corrupted\""), "{text}");
    assert_eq!(r.counters.ok + r.counters.mismatches, r.counters.gets, "a mismatch is not also ok");
}

#[test]
fn verify_get_refuses_values_too_short_to_carry_the_key_hash() {
    let p =
        Plan { mode: Mode::Get, verify_get: true, value_size_min: 7, value_size_max: 64, ..Plan::new("127.0.0.1", 1) };
    let e = run(p.clone(), &RunControl::new()).unwrap_err();
    assert_eq!(e.0, "verifyGet needs valueSizeMin of at least 8, got 7");
    assert!(
        run(Plan { value_size_min: 8, port: 0, ..p }, &RunControl::new()).is_err_and(|e| !e.0.contains("verifyGet"))
    );
}

#[test]
fn a_server_that_forgets_acknowledged_writes_has_lost_writes_in_mixed_mode() {
    let server = TestServer::start(Behaviour::Forgetful);
    let p = Plan { mode: Mode::Mixed, verify_get: true, keyspace: 50, pipeline: 8, ..plan(server.port) };
    let r = run(p.clone(), &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    let c = r.counters;
    assert!(c.lost_writes > 1000, "{c:?}");
    assert_eq!(c.ok + c.lost_writes, 5000, "lost writes are not ok: {c:?}");
    assert_eq!(c.misses + c.lost_writes, c.gets, "{c:?}");
    // A server that keeps them: no lost writes, and the misses are the reads before any write.
    let keeper = TestServer::start(Behaviour::Normal);
    let r = run(Plan { port: keeper.port, ..p }, &RunControl::new()).unwrap();
    assert_eq!((r.counters.lost_writes, r.counters.ok), (0, 5000), "{:?}", r.counters);
}

#[test]
fn a_greeting_before_any_request_is_a_protocol_error() {
    let server = TestServer::start(Behaviour::Greeting);
    let r = run(plan(server.port), &RunControl::new()).unwrap();
    let failure = r.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::Protocol, "{}", failure.message);
    assert!(failure.message.contains("a reply no request asked for"), "{}", failure.message);
}

#[test]
fn push_frames_are_skipped_and_counted_apart() {
    let server = TestServer::start(Behaviour::Pushes);
    let r = run(Plan { mode: Mode::Mixed, verify_get: true, keyspace: 50, ..plan(server.port) }, &RunControl::new())
        .unwrap();
    assert_eq!(r.failure, None);
    let c = r.counters;
    assert_eq!((c.ok, c.mismatches, c.lost_writes), (5000, 0, 0), "{c:?}");
    assert_eq!(c.pushes, 3 + 5000, "one per connection on accept, one before every reply: {c:?}");
}

#[test]
fn reads_of_absent_keys_are_misses() {
    let server = TestServer::start(Behaviour::Normal);
    let r = run(Plan { mode: Mode::Get, preload: false, ..plan(server.port) }, &RunControl::new()).unwrap();
    assert_eq!((r.counters.gets, r.counters.ok, r.counters.misses, r.counters.mismatches), (5000, 5000, 5000, 0));
}

#[test]
fn error_replies_are_counted_and_the_first_is_kept() {
    let server = TestServer::start(Behaviour::Normal);
    let r = run(Plan { set_cmd: "NOPE".into(), ..plan(server.port) }, &RunControl::new()).unwrap();
    assert_eq!((r.counters.errors, r.counters.ok), (5000, 0));
    assert_eq!(r.first_error.as_deref(), Some("ERR unknown command 'NOPE'"));
}

#[test]
fn the_server_closing_the_connection_is_a_closed_failure() {
    let server = TestServer::start(Behaviour::CloseAfter(10));
    let r = run(Plan { connections: 1, threads: 1, pipeline: 1, ..plan(server.port) }, &RunControl::new()).unwrap();
    let f = r.failure.unwrap();
    assert_eq!(f.kind, FailureKind::Closed);
    assert_eq!(
        f.message,
        format!("connection 0 (127.0.0.1:{}): connection closed by server after 10 replies", server.port)
    );
    assert_eq!(r.counters.requests, 10);
}

#[test]
fn a_close_that_arrives_with_the_last_replies_is_seen_at_once() {
    // Pipelined: the server answers five requests and closes in one go, so
    // the FIN comes in the same epoll event as the data.
    for _ in 0..20 {
        let server = TestServer::start(Behaviour::CloseAfter(5));
        let p = Plan { connections: 1, threads: 1, pipeline: 16, timeout_ms: 5000, ..plan(server.port) };
        let started = Instant::now();
        let r = run(p, &RunControl::new()).unwrap();
        assert_eq!(r.failure.map(|f| f.kind), Some(FailureKind::Closed));
        assert_eq!(r.counters.requests, 5);
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

#[test]
fn no_reply_within_the_timeout_ends_the_run_with_counters_so_far() {
    let server = TestServer::start(Behaviour::Stall);
    let started = Instant::now();
    let r = run(Plan { timeout_ms: 200, ..plan(server.port) }, &RunControl::new()).unwrap();
    let f = r.failure.unwrap();
    assert_eq!(f.kind, FailureKind::Timeout);
    assert!(f.message.contains("no reply within 200 ms (--timeout) after 0 replies"), "{}", f.message);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_short_timeout_is_reported_within_its_documented_bound() {
    // docs/reliability.md: a stall is reported between T and T + min(250 ms, T/4)
    // after the stalled request went out. At T = 20 ms that is 20..25 ms; a
    // loop that looked only every 20 ms reported it at about 39 ms. The phase
    // time runs from before the first send to the report; the median of a
    // few runs keeps one descheduled run on a busy machine from deciding.
    let server = TestServer::start(Behaviour::Stall);
    let mut reported_ms: Vec<f64> = (0..5)
        .map(|_| {
            let p = Plan { timeout_ms: 20, connections: 2, threads: 1, ..plan(server.port) };
            let r = run(p, &RunControl::new()).unwrap();
            assert_eq!(r.failure.as_ref().map(|f| f.kind), Some(FailureKind::Timeout), "{:?}", r.failure);
            r.elapsed_ns as f64 / 1e6
        })
        .collect();
    reported_ms.sort_by(f64::total_cmp);
    assert!(reported_ms[0] >= 20.0, "reported before the timeout: {reported_ms:?} ms");
    assert!(reported_ms[2] <= 25.0, "reported later than T + T/4: {reported_ms:?} ms");
}

#[test]
fn cancelling_from_another_thread_interrupts_the_run() {
    let server = TestServer::start(Behaviour::Stall);
    let control = Arc::new(RunControl::new());
    let canceller = Arc::clone(&control);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        canceller.cancel();
    });
    let started = Instant::now();
    let r = run(plan(server.port), &control).unwrap();
    assert_eq!(r.failure.unwrap().kind, FailureKind::Interrupted);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn bytes_that_are_not_resp_are_a_protocol_failure() {
    let server = TestServer::start(Behaviour::Garbage);
    let r = run(plan(server.port), &RunControl::new()).unwrap();
    let f = r.failure.unwrap();
    assert_eq!(f.kind, FailureKind::Protocol);
    assert!(
        f.message.contains(
            "): protocol error after 0 replies: unknown reply type byte at byte 0 of the replies: \"?not resp"
        ),
        "{}",
        f.message
    );
}

#[test]
fn a_refused_connection_is_a_connect_failure() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = run(plan(port), &RunControl::new()).unwrap();
    let f = r.failure.unwrap();
    assert_eq!(f.kind, FailureKind::Connect);
    assert_eq!(f.message, format!("connection refused by 127.0.0.1:{port} (is the server running on that port?)"));
}

#[test]
fn progress_is_readable_while_the_run_goes_on() {
    let server = TestServer::start(Behaviour::Normal);
    let control = Arc::new(RunControl::new());
    let watcher = Arc::clone(&control);
    let p = Plan { requests: 200_000, pipeline: 64, ..plan(server.port) };
    let handle = std::thread::spawn(move || run(p, &watcher).unwrap());
    let mut seen = Vec::new();
    while !handle.is_finished() {
        seen.push(control.snapshot().done);
        std::thread::sleep(Duration::from_millis(5));
    }
    let r = handle.join().unwrap();
    assert_eq!(r.counters.requests, 200_000);
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "progress never goes back");
    let last = control.snapshot();
    assert_eq!((last.done, last.total), (200_000, 200_000));
}

/// The p99 so far is for a progress line: a run nobody watches does not add
/// up its histograms for one every quarter second (-q, --json: CPU for nobody).
#[test]
fn the_p99_so_far_is_worked_out_only_while_someone_reads_the_progress() {
    let server = TestServer::start(Behaviour::Normal);
    let p = Plan { duration_ms: 700, ..plan(server.port) };
    let unwatched = RunControl::new();
    let r = run(p.clone(), &unwatched).unwrap();
    assert!(r.counters.requests > 0);
    assert_eq!(unwatched.snapshot().p99_ns, 0, "nobody read the progress during the run");

    let control = Arc::new(RunControl::new());
    let watcher = Arc::clone(&control);
    let handle = std::thread::spawn(move || run(p, &watcher).unwrap());
    let mut p99s = Vec::new();
    while !handle.is_finished() {
        p99s.push(control.snapshot().p99_ns);
        std::thread::sleep(Duration::from_millis(20));
    }
    handle.join().unwrap();
    assert!(p99s.iter().any(|&ns| ns > 0), "a watched run publishes its p99 so far");
}

#[test]
fn a_bad_template_is_refused_before_connecting() {
    let e = run(Plan { set_cmd: "SET __key__ __value__".into(), ..Plan::new("127.0.0.1", 1) }, &RunControl::new())
        .unwrap_err();
    assert!(e.0.starts_with("--set-cmd has unknown placeholder __value__"), "{e}");
}

#[test]
fn a_duration_bounds_the_run_by_time_not_by_count() {
    let server = TestServer::start(Behaviour::Normal);
    let started = Instant::now();
    let p = Plan { duration_ms: 300, requests: 10, ..plan(server.port) };
    let r = run(p, &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    assert!(r.counters.requests > 10, "time, not the count, ends it: {}", r.counters.requests);
    assert!(r.elapsed_ns >= 300_000_000 && started.elapsed() < Duration::from_secs(3), "{}", r.elapsed_ns);
    assert_eq!(total(&r.histogram), r.counters.requests);
}

#[test]
fn a_warmup_is_answered_and_counted_apart() {
    let server = TestServer::start(Behaviour::Normal);
    let r = run(Plan { warmup_ms: 200, requests: 3000, ..plan(server.port) }, &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    assert!(r.warmup_requests > 0 && r.warmup_elapsed_ns >= 200_000_000);
    assert_eq!((r.counters.requests, total(&r.histogram)), (3000, 3000));
}

#[test]
fn a_rate_sends_on_schedule_and_keeps_a_service_histogram() {
    let server = TestServer::start(Behaviour::Normal);
    // 2,000 requests at 4,000/s over 2 connections: half a second.
    let p = Plan { rate: 4000.0, requests: 2000, connections: 2, ..plan(server.port) };
    let r = run(p, &RunControl::new()).unwrap();
    assert_eq!(r.failure, None);
    assert_eq!(r.counters.requests, 2000);
    let secs = r.elapsed_ns as f64 / 1e9;
    assert!((0.45..2.0).contains(&secs), "{secs} s for 2,000 requests at 4,000/s");
    let service = r.service_histogram.expect("a service histogram with --rate");
    assert_eq!(total(&service), 2000);
    // Every timed request's lateness against its schedule, each within the
    // run (how small depends on the machine's load: not asserted here).
    let lag = r.schedule_lag_histogram.expect("a schedule-lag histogram with --rate");
    assert_eq!(total(&lag), 2000);
    assert!(lag.iter().all(|&(ns, _)| ns <= r.elapsed_ns), "{lag:?}");
    let r = run(plan(server.port), &RunControl::new()).unwrap();
    assert!(r.service_histogram.is_none());
    assert!(r.schedule_lag_histogram.is_none());
}

#[test]
fn reconnects_over_and_over_send_only_whole_requests_on_either_io_backend() {
    // Every connection is closed by the server after 40 replies and opened
    // again (--reconnect), over and over, while the others keep sending. On
    // io_uring a send queued before a drop must never go out on the socket
    // that replaced it (a closed fd's number is reused at once): the server
    // would then read half a request, and answer an error or close.
    use respbench_core::io::IoChoice;
    use respbench_core::plan::Reconnect;
    for io in [IoChoice::Epoll, IoChoice::Uring] {
        if io == IoChoice::Uring && respbench_core::io::usable().is_err() {
            continue;
        }
        let server = TestServer::start(Behaviour::CloseAfter(40));
        let p = Plan {
            connections: 4,
            threads: 1,
            pipeline: 16,
            requests: 4000,
            timeout_ms: 5000,
            reconnect: Some(Reconnect { attempts: 5, backoff_ms: 1 }),
            io,
            ..plan(server.port)
        };
        let r = run(p, &RunControl::new()).unwrap();
        assert_eq!(r.failure.as_ref().map(|f| f.message.as_str()), None, "{io:?}");
        assert_eq!(r.counters.errors, 0, "{io:?}: {:?}", r.first_error);
        assert!(r.counters.reconnects >= 50, "{io:?}: {} reconnects", r.counters.reconnects);
        // Every request of the share went out once: answered, or lost with its Link (a batch
        // encoded ahead and not yet sent when the Link dropped goes out after the reconnect).
        assert_eq!(
            r.counters.requests + r.counters.lost,
            4000,
            "{io:?}: {} answered, {} lost",
            r.counters.requests,
            r.counters.lost
        );
    }
}
