use super::*;
use crate::plan::Plan;

/// A Link over one end of a socket pair; the other end plays the server.
pub(crate) fn paired_link(window: usize) -> (Link, std::os::unix::net::UnixStream, PreparedPlan) {
    let prepared = PreparedPlan::new(Plan::new("127.0.0.1", 1)).unwrap();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stream = Stream::Unix(mio::net::UnixStream::from_std(ours), "pair".into());
    let out = prepared.max_request_bytes * window + 64;
    (Link::new(7, stream, &prepared, window, out), theirs, prepared)
}

pub(crate) fn entry(key_index: u64) -> InFlight {
    InFlight { key_index, ..InFlight::empty(Instant::now()) }
}

/// Keeps the key index of every reply it is given, in order.
struct Recorder<const ASKS: bool>(Vec<(u64, ReplyKind)>);

impl<const A: bool> OnReply for Recorder<A> {
    const ASKS: bool = A;
    fn reply(&mut self, e: &InFlight, _: &[u64], s: &ReplyScanner, _: &[u8], _: Instant, _: u64) -> Taken {
        self.0.push((e.key_index, s.kind));
        Taken::Answered
    }
}

fn send(link: &mut Link, key: u64) {
    let bytes = format!("*2\r\n$3\r\nGET\r\n$1\r\n{key}\r\n");
    link.spare()[..bytes.len()].copy_from_slice(bytes.as_bytes());
    link.push(entry(key), bytes.len(), &[key]);
}

fn read_replies<const A: bool>(
    link: &mut Link,
    theirs: &mut std::os::unix::net::UnixStream,
    replies: &[u8],
) -> Result<Vec<(u64, ReplyKind)>, Failure> {
    theirs.write_all(replies).unwrap();
    let mut bytes_in = 0;
    let mut got = Recorder::<A>(Vec::new());
    for _ in 0..100 {
        if matches!(link.fill(&mut bytes_in), Fill::Bytes { .. }) && bytes_in as usize >= replies.len() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let mut pushes = 0;
    link.take_replies(&mut got, &mut pushes, Instant::now())?;
    Ok(got.0)
}

#[test]
fn the_window_holds_as_many_requests_as_the_ring_and_frees_a_place_per_reply() {
    let (mut link, mut theirs, _) = paired_link(3);
    for key in 0..3 {
        assert!(link.has_room(1), "room for request {key}");
        send(&mut link, key);
    }
    assert!(!link.has_room(1));
    assert_eq!(link.inflight(), 3);
    assert!(link.writing());
    let mut out = 0;
    link.flush(&mut out).unwrap();
    assert!(!link.writing());
    // The three requests went out in one write, in order.
    let mut got = vec![0u8; out as usize];
    theirs.read_exact(&mut got).unwrap();
    assert!(String::from_utf8_lossy(&got).ends_with("$1\r\n2\r\n"));
    // Two replies (and half of a third) answer the two oldest, in order.
    let answered = read_replies::<false>(&mut link, &mut theirs, b"+OK\r\n$1\r\nx\r\n$1\r").unwrap();
    assert_eq!(answered, vec![(0, ReplyKind::Simple), (1, ReplyKind::Bulk)]);
    assert_eq!(link.inflight(), 1);
    assert!(link.has_room(2) && !link.has_room(3));
    // The rest of the third reply completes it.
    let answered = read_replies::<false>(&mut link, &mut theirs, b"\ny\r\n").unwrap();
    assert_eq!(answered, vec![(2, ReplyKind::Bulk)]);
    assert_eq!(link.inflight(), 0);
}

#[test]
fn a_reply_no_request_asked_for_is_a_protocol_error() {
    let (mut link, mut theirs, _) = paired_link(2);
    send(&mut link, 0);
    link.flush(&mut 0).unwrap();
    let f = read_replies::<false>(&mut link, &mut theirs, b"+OK\r\n+OK\r\n").unwrap_err();
    assert_eq!(f.kind, FailureKind::Protocol);
    assert!(f.message.contains("a reply no request asked for"), "{}", f.message);
}

#[test]
fn an_askings_ok_comes_before_the_reply_of_its_request() {
    let (mut link, mut theirs, _) = paired_link(2);
    send(&mut link, 5);
    let mut asked = entry(6);
    asked.asking = true;
    link.push(asked, 0, &[6]);
    let answered = read_replies::<true>(&mut link, &mut theirs, b":1\r\n+OK\r\n:2\r\n").unwrap();
    // The +OK is ASKING's; request 6's reply is :2.
    assert_eq!(answered, vec![(5, ReplyKind::Integer), (6, ReplyKind::Integer)]);
    assert_eq!(link.inflight(), 0);
}

#[test]
fn a_dropped_link_forgets_what_was_in_flight() {
    let (mut link, _theirs, _) = paired_link(4);
    send(&mut link, 0);
    send(&mut link, 1);
    assert_eq!(link.forget(), 2);
    assert_eq!(link.inflight(), 0);
    assert!(!link.writing() && link.has_room(4));
}
