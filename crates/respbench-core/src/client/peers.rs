//! `--cluster`: a Client's turns on the Links its Router opened to other
//! nodes (peers): the same reply loop as on its own Link, each reply
//! answered in the row of the node that sent it, and a peer's failure
//! recovered under `--reconnect` or ending the run.

use std::time::Instant;

use super::{Answering, Client, Status};
use crate::link::{Fill, Link};
use crate::plan::{Failure, FailureKind};
use crate::request_source::PreparedPlan;
use crate::router::Router;
use crate::tally::Tally;

impl<R: Router> Client<R> {
    /// `--cluster`: an event on the Link of peer `k` that its Router opened:
    /// the same reply loop as its own Link's. A failure there ends the run,
    /// unless `--reconnect`: then what was in flight on it is lost and the
    /// run goes on (the Router opens it again when it has requests for it).
    pub fn on_peer_event(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        k: usize,
        readable: bool,
        writable: bool,
    ) -> Result<Status, Failure> {
        let Some(mut link) = self.router.take_link(k) else { return Ok(Status::Busy) };
        let outcome = self.peer_turn(w, tally, k, &mut link, readable, writable);
        self.after_peer_turn(w, tally, k, link, outcome)
    }

    /// Peer `k`'s Link back in its Router after a turn (`outcome`: false when
    /// its server closed it with nothing in flight), or recovered, or failed.
    pub(super) fn after_peer_turn(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        k: usize,
        link: Link,
        outcome: Result<bool, Failure>,
    ) -> Result<Status, Failure> {
        match outcome {
            Ok(true) => self.router.put_link(k, link),
            Ok(false) => self.router.close_idle(k, link),
            // --reconnect: a Link a redirection opened is recovered like the client's own.
            Err(f) if f.kind == FailureKind::Closed && w.plan.reconnect.is_some() => {
                self.router.drop_peer(k, link, tally)
            }
            Err(f) => {
                self.router.put_link(k, link);
                self.router.mark_failed();
                return Err(f);
            }
        }
        self.pump(w, tally)
    }

    /// Reads and writes peer `k`'s Link; false when its server closed it with nothing in flight.
    fn peer_turn(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        k: usize,
        link: &mut Link,
        readable: bool,
        writable: bool,
    ) -> Result<bool, Failure> {
        if writable {
            link.on_writable(&mut tally.counters.bytes_out)?;
        }
        if !readable {
            return Ok(true);
        }
        loop {
            match link.fill(&mut tally.counters.bytes_in) {
                Fill::Bytes { .. } => self.take_peer_replies(w, tally, k, link)?,
                Fill::WouldBlock => return Ok(true),
                Fill::Closed if link.inflight() == 0 => return Ok(false),
                Fill::Closed => return Err(link.closed_failure(None)),
                Fill::Failed(e) => return Err(link.closed_failure(Some(e))),
            }
        }
    }

    /// Every complete reply in peer `k`'s read buffer, counted in its node's row.
    pub(super) fn take_peer_replies(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        k: usize,
        link: &mut Link,
    ) -> Result<(), Failure> {
        let now = Instant::now();
        let row = self.router.row_of(k);
        let replica = self.replica.is_some();
        let mut owner = Answering { w, row, peer: k, replica, tally: &mut *tally, router: &mut self.router };
        let pushes = &mut 0;
        let taken = link.take_replies(&mut owner, pushes, now);
        tally.counters.pushes += *pushes;
        taken
    }
}
