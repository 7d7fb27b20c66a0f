//! The Router's redirection, with no server: a socket pair plays the client's own node.

use super::*;
use crate::link::tests::{entry, paired_link};
use crate::request_source::Op;
use crate::router::RETRY_BACKOFF_CAP;
use crate::router::redirect_kind;
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
    r.redirect(&w, &mut tally, entry(1), &[1], Redirect::Moved, b"MOVED 3999 127.0.0.1:7001", Some(HOME), now);
    assert_eq!(tally.counters.moved, 1);
    assert_eq!(r.pending(), 1);
    // A peer for the named node, and slot 3999 (only it) goes there from now on.
    assert_eq!(r.peers[1].target, "127.0.0.1:7001");
    assert_eq!(r.moved_to(&request(3999)), Some(1));
    assert_eq!(r.moved_to(&request(4000)), None);
    // The first hops go again at once.
    assert_eq!(r.next_wake(now), Some(now));
    // A MOVED back to the client's own node undoes it: the source's routing again.
    r.redirect(&w, &mut tally, entry(2), &[2], Redirect::Moved, b"MOVED 3999 127.0.0.1:7000", Some(HOME), now);
    assert_eq!(r.moved_to(&request(3999)), None);
    assert_eq!(r.peers.len(), 2);
}

#[test]
fn ask_sends_one_request_after_asking_and_moves_no_slot() {
    let (_, _, w) = paired_link(1);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    r.redirect(&w, &mut tally, entry(1), &[1], Redirect::Ask, b"ASK 12 127.0.0.1:7002", Some(HOME), now);
    assert_eq!((tally.counters.asked, tally.counters.moved), (1, 0));
    assert_eq!(r.moved_to(&request(12)), None);
    let waiting = r.peers[1].waiting.front().unwrap();
    assert!(waiting.entry.asking);
    assert_eq!(waiting.entry.hops, 1);
}

#[test]
fn tryagain_waits_a_growing_backoff_then_goes_again_to_the_node_that_answered() {
    let (mut home, mut server, w) = paired_link(4);
    let (mut r, mut tally, now) = (router(&w), Tally::default(), Instant::now());
    r.redirect(
        &w,
        &mut tally,
        entry(3),
        &[3],
        Redirect::Retry,
        b"TRYAGAIN Multiple keys request during rehashing of slot",
        Some(HOME),
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
    // …then on the Link of the node that answered (here the client's own), written at once.
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
    tired.hops = MAX_REDIRECTIONS;
    r.redirect(&w, &mut tally, tired, &[1], Redirect::Moved, b"MOVED 1 127.0.0.1:7001", Some(HOME), now);
    // Past 3/4 of --timeout (10 s without one) from its first send: not sent again.
    let mut old = entry(2);
    old.sent_at = now - Duration::from_millis(7_495);
    r.redirect(&w, &mut tally, old, &[2], Redirect::Retry, b"CLUSTERDOWN The cluster is down", Some(HOME), now);
    assert_eq!(r.pending(), 0);
    assert_eq!((tally.counters.errors, tally.counters.sets), (2, 2));
    // Each was a MOVED / CLUSTERDOWN reply all the same.
    assert_eq!((tally.counters.moved, tally.counters.retried), (1, 1));
    let (_, first) = tally.first.error.as_ref().unwrap();
    assert_eq!(
        first,
        "redirected 6 times in a row, the last: 127.0.0.1:7000 answered MOVED 1 127.0.0.1:7001 (a redirection loop: --cluster follows at most 5 MOVED/ASK in a row)"
    );
    // A TRYAGAIN between redirections ends the row: the next MOVED is followed.
    let mut retried = entry(3);
    retried.hops = MAX_REDIRECTIONS;
    r.redirect(&w, &mut tally, retried, &[3], Redirect::Retry, b"TRYAGAIN", Some(HOME), now);
    let waiting = r.peers[HOME].waiting.front().copied().unwrap();
    assert_eq!((waiting.entry.hops, waiting.entry.retries), (0, 1));
    let _ = Op::Set;
}

#[test]
fn only_a_whole_moved_or_ask_is_a_redirection() {
    for good in
        [&b"MOVED 3999 127.0.0.1:7001"[..], b"ASK 0 :7001", b"MOVED 16383 ::1:7001", b"TRYAGAIN x", b"CLUSTERDOWN"]
    {
        assert!(redirect_kind(good).is_some(), "{}", String::from_utf8_lossy(good));
    }
    for bad in [
        &b"MOVED abc"[..],
        b"MOVED 3999",
        b"MOVED 16384 127.0.0.1:7001",
        b"MOVED x 127.0.0.1:7001",
        b"MOVED 1 127.0.0.1",
        b"MOVED 1 127.0.0.1:70000",
        b"MOVED 1 127.0.0.1:0",
        b"MOVED 1 a b:7001",
        b"ASK 1 127.0.0.1:port",
        b"ASK ",
    ] {
        assert_eq!(redirect_kind(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

/// A `CLUSTER SLOTS` reply: each `(first, last, port)` range owned by `127.0.0.1:port`.
fn slot_map(ranges: &[(u16, u16, u16)]) -> SlotMap {
    let mut reply = format!("*{}\r\n", ranges.len());
    for (first, last, port) in ranges {
        reply += &format!("*3\r\n:{first}\r\n:{last}\r\n*2\r\n$9\r\n127.0.0.1\r\n:{port}\r\n");
    }
    crate::topology::parse_slots(reply.as_bytes(), "127.0.0.1").unwrap().map
}

#[test]
fn a_refreshed_map_sends_each_slot_straight_to_its_owner_and_its_own_nodes_slots_home() {
    let (_, _, w) = paired_link(1);
    let (mut r, mut tally) = (router(&w), Tally::default());
    // A MOVED had sent slot 10 to 7001; the new map gives it back to 7000 (the client's own),
    // and slots 0..=5000 to a node the client has not heard of (7003).
    r.redirect(&w, &mut tally, entry(1), &[1], Redirect::Moved, b"MOVED 10 127.0.0.1:7001", Some(HOME), Instant::now());
    assert_eq!(r.moved_to(&request(10)), Some(1));
    r.apply_topology(&w, &mut tally, &slot_map(&[(0, 5000, 7003), (5001, 9000, 7000), (9001, 16383, 7001)]));
    let to = |slot: u16| r.moved_to(&request(slot)).map(|k| r.peers[k].target.as_str());
    assert_eq!(to(0), Some("127.0.0.1:7003"));
    assert_eq!(to(5000), Some("127.0.0.1:7003"));
    assert_eq!(to(5001), None);
    assert_eq!(to(10), Some("127.0.0.1:7003"));
    assert_eq!(to(9001), Some("127.0.0.1:7001"));
    // One peer per node, none for the client's own.
    assert_eq!(r.peers.len(), 3);
    // No MOVED counted for what the map moved.
    assert_eq!(tally.counters.moved, 1);
}

#[test]
fn a_moved_is_news_another_client_of_the_worker_routes_by() {
    let (_, _, w) = paired_link(1);
    let (mut a, mut b, mut tally) = (router(&w), router(&w), Tally::default());
    a.redirect(&w, &mut tally, entry(1), &[1], Redirect::Moved, b"MOVED 77 127.0.0.1:7002", Some(HOME), Instant::now());
    let news: Vec<(u16, String)> = a.moved_news().map(|(s, t)| (s, t.to_string())).collect();
    assert_eq!(news, vec![(77, "127.0.0.1:7002".to_string())]);
    for (slot, target) in &news {
        b.learn_moved(&w, &mut tally, *slot, target);
    }
    a.clear_moved_news();
    assert_eq!(a.moved_news().count(), 0);
    // The other client sends slot 77 straight to 7002, without a MOVED of its own; learning is no news.
    assert_eq!(b.moved_to(&request(77)).map(|k| b.peers[k].target.as_str()), Some("127.0.0.1:7002"));
    assert_eq!(b.moved_news().count(), 0);
    assert_eq!(tally.counters.moved, 1);
}
