//! A Client's turns under the io_uring backend: a receive's bytes or a
//! send's completion instead of a readable or writable event. The same
//! reply loop, window and Router as on epoll ([`super::Client::on_readable`]);
//! only where the bytes come from differs.

use std::io;

use super::{Client, Status};
use crate::plan::Failure;
use crate::request_source::PreparedPlan;
use crate::router::Router;
use crate::tally::Tally;

/// What one receive completion brought.
pub(crate) enum Received<'a> {
    Bytes(&'a [u8]),
    /// The server closed its side.
    Closed,
    Failed(io::Error),
}

impl<R: Router> Client<R> {
    /// io_uring: one send may carry up to `batch_bytes` of requests of up to
    /// `per_request` bytes (`worker::ring::RING_BATCH_BYTES`: why). Done
    /// when the Link joins the ring, before its first request; a no-op after.
    pub fn widen_writes(&mut self, per_request: usize, batch_bytes: usize) {
        let (batch_limit, out) = Self::write_batches(self.window, per_request, batch_bytes);
        if batch_limit > self.batch_limit && self.link.widen_writes(out) {
            self.batch_limit = batch_limit;
        }
    }

    /// A receive on its own Link: replies taken, the window refilled.
    pub fn on_received(&mut self, w: &PreparedPlan, tally: &mut Tally, got: Received<'_>) -> Result<Status, Failure> {
        match got {
            Received::Bytes(bytes) => {
                self.link.receive(bytes, &mut tally.counters.bytes_in);
                self.take_own_replies(w, tally)?;
                self.pump(w, tally)
            }
            // After our own close: the server's close ends the close wait.
            Received::Closed | Received::Failed(_) if self.answered_at.is_some() => Ok(Status::Finished),
            Received::Closed => Err(self.link.closed_failure(None)),
            Received::Failed(e) => Err(self.link.closed_failure(Some(e))),
        }
    }

    /// A send on its own Link completed: `n` bytes taken, or the socket failed.
    pub fn on_sent(&mut self, w: &PreparedPlan, tally: &mut Tally, sent: io::Result<usize>) -> Result<Status, Failure> {
        match sent {
            Ok(n) => {
                self.link.sent(n, &mut tally.counters.bytes_out);
                self.pump(w, tally)
            }
            Err(e) => Err(self.link.closed_failure(Some(e))),
        }
    }

    /// `--cluster`: a receive or a send completed on peer `k`'s Link (one
    /// its Router opened); recovered or failed as on epoll.
    pub fn on_peer_completion(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        k: usize,
        got: Result<Received<'_>, io::Result<usize>>,
    ) -> Result<Status, Failure> {
        let Some(mut link) = self.router.take_link(k) else { return Ok(Status::Busy) };
        let outcome = match got {
            Ok(Received::Bytes(bytes)) => {
                link.receive(bytes, &mut tally.counters.bytes_in);
                self.take_peer_replies(w, tally, k, &mut link).map(|()| true)
            }
            Ok(Received::Closed) if link.inflight() == 0 => Ok(false),
            Ok(Received::Closed) => Err(link.closed_failure(None)),
            Ok(Received::Failed(e)) | Err(Err(e)) => Err(link.closed_failure(Some(e))),
            Err(Ok(n)) => {
                link.sent(n, &mut tally.counters.bytes_out);
                Ok(true)
            }
        };
        self.after_peer_turn(w, tally, k, link, outcome)
    }
}
