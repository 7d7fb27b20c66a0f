import { describe, expect, it } from 'vitest';
import { AnswerWatch, noAnswerText } from '../src/engine-js/answer-watch.js';

describe('AnswerWatch (--cluster: a phase no node answers)', () => {
  it('counts only time with requests out and no answer since the last look, from the oldest request\'s send', () => {
    const w = new AnswerWatch();
    expect(w.look(0, 0, 0)).toBe(0);
    expect(w.look(0, 0, 1000)).toBe(1000);
    // An answer starts the wait again.
    expect(w.look(1, 1500, 2000)).toBe(0);
    expect(w.look(1, 1500, 5000)).toBe(3000);
    // Nothing out: no wait, however long since the last answer (a slow --rate).
    expect(w.look(1, -1, 9000)).toBe(0);
    // The next request went out after that look: the wait counts from its send, not from the look.
    expect(w.look(1, 9400, 10_000)).toBe(600);
    // Requests given up and sent again keep the wait going (the oldest out is younger, the outage is not).
    expect(w.look(1, 11_000, 11_500)).toBe(2100);
  });

  it('says how long, what was answered and given up, and the redirections instead', () => {
    expect(noAnswerText('connection 0 (127.0.0.1:7000)', 2000, 5, 4, { moved: 1, asked: 0, retried: 30 })).toBe(
      'connection 0 (127.0.0.1:7000): no answer within 2000 ms (--timeout) after 5 answered and 4 given up: every reply since was a redirection, sent again (so far MOVED 1, ASK 0, TRYAGAIN/CLUSTERDOWN 30): no node served these requests',
    );
  });
});
