//! The Router's redirection, with no server: a socket pair plays the client's own node.

use super::*;
use crate::link::tests::{entry, paired_link};
use crate::request_source::Op;
use std::io::Read as _;

fn request(slot: u16) -> Request {
    Request { slot: Some(slot), ..Request::NONE }
}

fn router(w: &PreparedPlan) -> ClusterRouter {
    ClusterRouter::new(w, 0, Some(0), "127.0.0.1:7000".into())
}

#[test]
fn moved_sends_the_request_to_the_named_node_and_the_slots_later_requests_straight_there() {
    let (_, _, w) = paired_link(1);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    assert_eq!(r.moved_to(&request(3999)), None);
    r.redirect(&w, &mut tally, entry(1), &[1], Redirect::Moved, b"MOVED 3999 127.0.0.1:7001", now);
    assert_eq!(tally.counters.moved, 1);
    assert_eq!(r.pending(), 1);
    // A peer for the named node, and slot 3999 (only it) goes there from now on.
    assert_eq!(r.peers[1].target, "127.0.0.1:7001");
    assert_eq!(r.moved_to(&request(3999)), Some(1));
    assert_eq!(r.moved_to(&request(4000)), None);
    // The first hops go again at once.
    assert_eq!(r.next_wake(now), Some(now));
    // A MOVED back to the client's own node undoes it: the source's routing again.
    r.redirect(&w, &mut tally, entry(2), &[2], Redirect::Moved, b"MOVED 3999 127.0.0.1:7000", now);
    assert_eq!(r.moved_to(&request(3999)), None);
    assert_eq!(r.peers.len(), 2);
}

#[test]
fn ask_sends_one_request_after_asking_and_moves_no_slot() {
    let (_, _, w) = paired_link(1);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    r.redirect(&w, &mut tally, entry(1), &[1], Redirect::Ask, b"ASK 12 127.0.0.1:7002", now);
    assert_eq!((tally.counters.asked, tally.counters.moved), (1, 0));
    assert_eq!(r.moved_to(&request(12)), None);
    let waiting = r.peers[1].waiting.front().unwrap();
    assert!(waiting.entry.asking);
    assert_eq!(waiting.entry.hops, 1);
}

#[test]
fn tryagain_waits_a_growing_backoff_then_goes_again_on_the_clients_own_link() {
    let (mut home, mut server, w) = paired_link(4);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    r.redirect(
        &w,
        &mut tally,
        entry(3),
        &[3],
        Redirect::Retry,
        b"TRYAGAIN Multiple keys request during rehashing of slot",
        now,
    );
    assert_eq!(tally.counters.retried, 1);
    assert_eq!(r.next_wake(now), Some(now + backoff(1)));
    assert_eq!(backoff(1), Duration::from_millis(10));
    assert_eq!(backoff(2), Duration::from_millis(20));
    assert_eq!(backoff(20), RETRY_BACKOFF_CAP);
    // Not before its backoff…
    r.service(&w, &mut tally, &mut home, now).unwrap();
    assert_eq!((home.inflight(), r.pending()), (0, 1));
    // …then on the client's own Link (the node it retries is its own), written at once.
    r.service(&w, &mut tally, &mut home, now + backoff(1)).unwrap();
    assert_eq!((home.inflight(), r.pending()), (1, 0));
    assert!(tally.counters.bytes_out > 0);
    let mut sent = vec![0u8; tally.counters.bytes_out as usize];
    server.read_exact(&mut sent).unwrap();
    assert!(sent.starts_with(b"*3\r\n$3\r\nSET\r\n"), "{}", String::from_utf8_lossy(&sent));
}

#[test]
fn a_request_redirected_too_often_or_for_too_long_counts_as_the_error_it_got() {
    let (_, _, w) = paired_link(1);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    let mut tired = entry(1);
    tired.hops = MAX_HOPS;
    r.redirect(&w, &mut tally, tired, &[1], Redirect::Moved, b"MOVED 1 127.0.0.1:7001", now);
    let mut old = entry(2);
    old.sent_at = now - Duration::from_secs(11);
    r.redirect(&w, &mut tally, old, &[2], Redirect::Retry, b"CLUSTERDOWN The cluster is down", now);
    assert_eq!(r.pending(), 0);
    assert_eq!((tally.counters.errors, tally.counters.sets), (2, 2));
    assert_eq!(tally.counters.moved, 0);
    let (_, first) = tally.first.error.as_ref().unwrap();
    assert!(first.starts_with("MOVED 1 127.0.0.1:7001 (after 64 redirections or retries)"), "{first}");
    let _ = Op::Set;
}
