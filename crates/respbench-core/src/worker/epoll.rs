//! The epoll backend (mio): each Link's socket registered READABLE |
//! WRITABLE, edge-triggered, for its life; a turn is one `epoll_wait`, and
//! each event goes to the client owning the Link, which reads and writes
//! its socket itself (`Client::on_readable`, `Client::on_writable`). The
//! loop as it was before the io_uring backend; TLS always runs here.

use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Interest, Poll, Token};

use super::{Backend, EventLoop, PEER_TOKEN_STRIDE, POLL_SLICE, token_of};
use crate::client::Client;
use crate::request_source::PreparedPlan;
use crate::router::Router;

pub(crate) struct EpollIo {
    poll: Poll,
    /// Taken out of here while its events are handed out.
    events: Option<Events>,
}

impl Backend for EpollIo {
    /// A `Poll` watching every client's own Link of the group, token = index;
    /// the Links a Router opens later join it under [`token_of`].
    fn setup<R: Router>(conns: &mut [Client<R>], _prepared: &PreparedPlan) -> Result<Self, String> {
        let failed = |e: std::io::Error| format!("cannot set up epoll: {e}");
        let poll = Poll::new().map_err(failed)?;
        for (i, conn) in conns.iter_mut().enumerate() {
            poll.registry()
                .register(&mut conn.link.stream, Token(i), Interest::READABLE | Interest::WRITABLE)
                .map_err(failed)?;
            if R::REDIRECTS {
                conn.router.attach(Some(poll.registry().try_clone().map_err(failed)?), token_of, i as u32);
            }
        }
        Ok(EpollIo { poll, events: Some(Events::with_capacity(conns.len().clamp(16, 1024))) })
    }

    fn add<R: Router>(&mut self, conn: &mut Client<R>, i: usize) -> std::io::Result<()> {
        self.poll.registry().register(&mut conn.link.stream, Token(i), Interest::READABLE | Interest::WRITABLE)
    }

    fn remove<R: Router>(&mut self, conn: &mut Client<R>, _i: usize) {
        let _ = self.poll.registry().deregister(&mut conn.link.stream);
    }

    #[inline(always)]
    fn turn<R: Router>(
        lp: &mut EventLoop<'_, R, Self>,
        wake: Option<Instant>,
        next_timeout_check: Option<Instant>,
        now: Instant,
    ) -> Result<(), String> {
        let wait = poll_wait(wake, next_timeout_check, now);
        let Some(mut events) = lp.io.events.take() else { return Ok(()) };
        let polled = lp.io.poll.poll(&mut events, Some(wait));
        if let Err(e) = polled {
            lp.io.events = Some(events);
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("epoll failed: {e}"));
            }
            return Ok(());
        }
        for event in events.iter() {
            lp.on_event(event);
        }
        lp.io.events = Some(events);
        Ok(())
    }
}

impl<R: Router> EventLoop<'_, R, EpollIo> {
    fn on_event(&mut self, event: &Event) {
        let prepared = self.shared.prepared;
        let (i, peer) = (event.token().0 % PEER_TOKEN_STRIDE, event.token().0 / PEER_TOKEN_STRIDE);
        if self.finished[i] || self.conns[i].down.is_some() {
            return;
        }
        let closing = event.is_read_closed() || event.is_error();
        if R::REDIRECTS && peer > 0 {
            // A Link its Router opened: the same reply loop, through the client.
            let readable = event.is_readable() || closing;
            let outcome = self.conns[i].on_peer_event(prepared, &mut self.tally, peer, readable, event.is_writable());
            self.settle(i, outcome);
            return;
        }
        if event.is_readable() || closing {
            let outcome = self.conns[i].on_readable(prepared, &mut self.tally, closing);
            self.settle(i, outcome);
        }
        if !self.finished[i] && self.conns[i].down.is_none() && event.is_writable() {
            let outcome = self.conns[i].on_writable(prepared, &mut self.tally);
            self.settle(i, outcome);
        }
    }
}

/// How long epoll may sleep: until the next paced turn or the next reply
/// deadline, at most [`POLL_SLICE`].
fn poll_wait(next_turn: Option<Instant>, next_timeout_check: Option<Instant>, now: Instant) -> Duration {
    // Sooner than epoll's millisecond: poll without sleeping, or a due
    // request would go out up to 1 ms late. epoll rounds a timeout up to
    // whole milliseconds: sleep one less, and poll without sleeping through
    // the last one.
    let turn = next_turn.map_or(POLL_SLICE, |t| t.saturating_duration_since(now).min(POLL_SLICE));
    let turn = turn.saturating_sub(Duration::from_millis(1));
    // A reply deadline may be looked at up to a millisecond late: no spinning for it.
    match next_timeout_check {
        Some(t) => turn.min(t.saturating_duration_since(now)),
        None => turn,
    }
}
