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

  /**
   * `answers`: the phase's answers so far; `waiting`: requests out (sent,
   * queued for a node, or waiting for a backoff). Returns how long, ms,
   * requests have been out with no answer (0 when one came since the last look).
   */
  look(answers: number, waiting: boolean, now: number): number {
    if (answers !== this.mark || !waiting) {
      this.mark = answers;
      this.since = now;
      return 0;
    }
    return now - this.since;
  }
}

/** The failure's words: how long, what was answered and given up before, and what came instead. */
export function noAnswerText(where: string, timeoutMs: number, answers: number, givenUp: number, redirections: { moved: number; asked: number; retried: number }): string {
  return `${where}: no answer within ${timeoutMs} ms (--timeout) after ${answers} answered and ${givenUp} given up: every reply since was a redirection, sent again (so far MOVED ${redirections.moved}, ASK ${redirections.asked}, TRYAGAIN/CLUSTERDOWN ${redirections.retried}): no node served these requests`;
}
