/**
 * --cluster: a phase in which no node answers any request. A slot answered
 * TRYAGAIN or CLUSTERDOWN is sent again with backoff and given up after 3/4
 * of --timeout (the Router), so each request ends; but a cluster that
 * serves nothing at all (every node down or refusing, a failover that never
 * comes) would then hold a counted run for a whole window every 3/4 of
 * --timeout, for hours. "No reply within --timeout" is a stall, and so is
 * "no answer within --timeout": replies that only send a request again
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) and requests given up after them are
 * no answer. The worker's watch looks at the phase's answers on each of its
 * turns, so the request path pays nothing for this. Paired with
 * crates/respbench-core/src/answer_watch.rs.
 */
export class AnswerWatch {
  /** The answers seen at the last look. */
  private mark = -1;
  /** Since when nothing was answered while requests were out (performance.now()). */
  private since = 0;
  /** Whether `since` holds for the requests out now (set at the first look that found them). */
  private armed = false;

  /**
   * `answers`: the phase's answers so far; `oldestSentAt`: the first send
   * of the oldest request out (sent, queued for a node, or waiting for a
   * backoff), -1 when none is. Returns how long, ms, requests have been out
   * with no answer: from the later of the last look that saw an answer and
   * the oldest request's send, so that an idle gap before it does not count
   * (0 when an answer came since the last look).
   */
  look(answers: number, oldestSentAt: number, now: number): number {
    if (answers !== this.mark || oldestSentAt < 0) {
      this.mark = answers;
      this.since = now;
      this.armed = false;
      return 0;
    }
    if (!this.armed) {
      this.since = Math.max(this.since, oldestSentAt);
      this.armed = true;
    }
    return now - this.since;
  }
}

/** The failure's words: how long, what was answered and given up before, and what came instead. */
export function noAnswerText(where: string, timeoutMs: number, answers: number, givenUp: number, redirections: { moved: number; asked: number; retried: number }): string {
  return `${where}: no answer within ${timeoutMs} ms (--timeout) after ${answers} answered and ${givenUp} given up: every reply since was a redirection, sent again (so far MOVED ${redirections.moved}, ASK ${redirections.asked}, TRYAGAIN/CLUSTERDOWN ${redirections.retried}): no node served these requests`;
}
