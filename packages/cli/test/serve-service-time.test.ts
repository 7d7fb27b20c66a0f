/** `respbench serve --service-time`: a server of known capacity, one command at a time on a clock. */
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { parseServiceTime } from '../src/serve/command.js';
import { ServiceQueue, startServer } from '../src/serve/server.js';

/** Sends `count` pipelined ECHOs in one write over each of `connections`; resolves with the ms until every reply came, and each connection's replies. */
async function echoes(port: number, connections: number, count: number): Promise<{ ms: number; replies: string[] }> {
  const started = performance.now();
  const replies = await Promise.all(
    Array.from({ length: connections }, (_, c) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1');
        let text = '';
        s.on('error', reject);
        s.on('data', (d) => {
          text += d.toString('latin1');
          if (text.split('\r\n').length - 1 >= 2 * count) {
            s.destroy();
            resolve(text);
          }
        });
        s.write(Array.from({ length: count }, (_, i) => `*2\r\n$4\r\nECHO\r\n$${String(c * 1000 + i).length}\r\n${c * 1000 + i}\r\n`).join(''));
      }),
    ),
  );
  return { ms: performance.now() - started, replies };
}

describe('serve --service-time', () => {
  it('takes a duration with its unit, in the grammar of every duration flag', () => {
    expect(parseServiceTime('200us')).toBe(200_000);
    expect(parseServiceTime('1.5ms')).toBe(1_500_000);
    expect(parseServiceTime('0.01s')).toBe(10_000_000);
    expect(parseServiceTime('0.5us')).toBe(500);
    for (const bad of ['200', '0us', '-1ms', '11s', 'fast', '500ns']) expect(() => parseServiceTime(bad)).toThrow(/--service-time must be a duration, a number with a unit us, ms, s, m or h/);
  });

  it('serves one command at a time: n commands take n × d whatever the connections, in order per connection', async () => {
    const server = await startServer(0, '127.0.0.1', { serviceTimeNs: 1_000_000 });
    try {
      // 3 connections × 40 pipelined commands at 1 ms each: 120 ms of service, less at most one lookahead (1 ms).
      const { ms, replies } = await echoes(server.port, 3, 40);
      expect(ms).toBeGreaterThanOrEqual(118);
      expect(ms).toBeLessThan(1000);
      replies.forEach((text, c) => {
        const values = text.split('\r\n').filter((l) => l !== '' && !l.startsWith('$'));
        expect(values).toEqual(Array.from({ length: 40 }, (_, i) => String(c * 1000 + i)));
      });
    } finally {
      await server.close();
    }
  });

  it('answers a lone command within about a timer tick, and a server without it at once', async () => {
    const timed = await startServer(0, '127.0.0.1', { serviceTimeNs: 200_000 });
    const plain = await startServer(0, '127.0.0.1');
    try {
      expect((await echoes(timed.port, 1, 1)).ms).toBeLessThan(500);
      expect((await echoes(plain.port, 1, 5)).replies[0]).toBe('$1\r\n0\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n');
    } finally {
      await timed.close();
      await plain.close();
    }
  });
});

describe('serve --service-time on a busy machine', () => {
  /**
   * 8 clients with one command in flight each, on a simulated clock: every
   * turn of the server comes `lateMs` after it was due (timers and a busy
   * machine), each client sends its next command 50 us after a reply.
   * Returns the commands answered over one simulated second, and the turns
   * the server counted as held back by the machine (INFO's held_turns).
   */
  function closedLoop(lateMs: number): { answered: number; held: number } {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'clearTimeout', 'clearImmediate'] });
    try {
      let now = 0;
      const queue = new ServiceQueue(200_000, () => now);
      const sent: { at: number; client: { writable: boolean; write: (b: Buffer) => boolean } }[] = [];
      let answered = 0;
      const clients = Array.from({ length: 8 }, () => {
        const client = {
          writable: true,
          write: (b: Buffer) => {
            const n = b.toString('latin1').split('\r\n').length - 1;
            answered += n;
            for (let k = 0; k < n; k++) sent.push({ at: now + 50_000, client });
            return true;
          },
        };
        return client;
      });
      for (const c of clients) queue.push(c, Buffer.from('+OK\r\n'));
      const end = 1e9;
      while (now < end) {
        // The next turn: the earliest reply due less the lookahead (1 ms), then late.
        const items = (queue as unknown as { items: { dueNs: number }[]; head: number }).items;
        const head = (queue as unknown as { head: number }).head;
        const nextDue = head < items.length ? items[head].dueNs - 1_000_000 : Infinity;
        const nextSend = sent.length > 0 ? Math.min(...sent.map((s) => s.at)) : Infinity;
        if (nextSend <= nextDue + lateMs * 1e6) {
          now = Math.max(now, nextSend);
          const due = sent.filter((x) => x.at <= now);
          const later = sent.filter((x) => x.at > now);
          sent.length = 0;
          sent.push(...later);
          for (const s of due) queue.push(s.client, Buffer.from('+OK\r\n'));
        } else {
          now = Math.max(now, nextDue + lateMs * 1e6);
          queue.drain();
        }
      }
      queue.stop();
      return { answered, held: queue.held.turns };
    } finally {
      vi.useRealTimers();
    }
  }

  it('keeps its capacity (1/d) when its own turns come late: 8 clients, one command in flight each, turns 3 ms late', () => {
    expect(closedLoop(0).answered).toBeGreaterThan(4900);
    // Without forgiving its own lateness it idled through each late turn and served 3,560/s.
    const late = closedLoop(3).answered;
    expect(late).toBeGreaterThan(4900);
    expect(late).toBeLessThanOrEqual(5000 + 10);
  });

  it('counts the turns the machine held it back (more than 5 ms late), not those a timer makes', () => {
    expect(closedLoop(0).held).toBe(0);
    expect(closedLoop(3).held).toBe(0);
    expect(closedLoop(8).held).toBeGreaterThan(10);
  });

  it('INFO says its service time and the turns held back, at once and off the clock', async () => {
    const server = await startServer(0, '127.0.0.1', { serviceTimeNs: 200_000 });
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const s = net.connect(server.port, '127.0.0.1');
        let text = '';
        s.on('error', reject);
        s.on('data', (d) => {
          text += d.toString('latin1');
          if (text.endsWith('\r\n\r\n')) {
            s.destroy();
            resolve(text);
          }
        });
        s.write('*1\r\n$4\r\ninfo\r\n');
      });
      expect(reply).toMatch(/^\$\d+\r\n# respbench serve\r\nservice_time_us:200\r\nheld_turns:0\r\nheld_late_ms:0\.000\r\n\r\n$/);
      expect(Number(reply.slice(1, reply.indexOf('\r\n')))).toBe(Buffer.byteLength(reply.slice(reply.indexOf('\r\n') + 2, -2)));
    } finally {
      await server.close();
    }
  });
});
