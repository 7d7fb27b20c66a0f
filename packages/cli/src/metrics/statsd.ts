/**
 * `--statsd HOST:PORT`: the live figures pushed once per interval over UDP,
 * as memtier_benchmark's --statsd-host does. Counters (`|c`) carry what the
 * interval added, so several load machines with the same prefix add up in
 * the StatsD server; gauges (`|g`) carry the interval's latency and rate.
 * A send is never awaited and a lost or refused packet is dropped: the run
 * never waits for the network.
 */
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LatencyHistogram } from '../engine-js/histogram.js';
import type { Published } from './registry.js';

/** Payload bytes per datagram: under the usual 1500-byte MTU with IP and UDP headers. */
const MAX_PACKET = 1432;

export interface StatsdTarget {
  host: string;
  port: number;
  prefix: string;
}

/** A command name as one StatsD path element (`GET#2` → `GET_2`). */
function pathElement(v: string): string {
  return v.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The lines one publication becomes. */
export function statsdLines(prefix: string, p: Published, intervalSec: number | null): string[] {
  const lines: string[] = [];
  for (const [outcome, n] of Object.entries(p.outcomes)) if (n > 0) lines.push(`${prefix}.requests.${outcome}:${n}|c`);
  if (p.bytesOut > 0) lines.push(`${prefix}.bytes_sent:${p.bytesOut}|c`);
  if (p.bytesIn > 0) lines.push(`${prefix}.bytes_received:${p.bytesIn}|c`);
  if (p.connections !== null) lines.push(`${prefix}.connections:${p.connections}|g`);
  for (const { command, data } of p.perCommand ?? []) {
    const h = LatencyHistogram.fromData(data);
    const at = `${prefix}.command.${pathElement(command)}`;
    lines.push(`${at}.requests:${h.total}|c`);
    if (intervalSec && intervalSec > 0) lines.push(`${at}.ops_per_sec:${Math.round(h.total / intervalSec)}|g`);
    if (h.total > 0) {
      const ms = (ns: number) => Number((ns / 1e6).toFixed(3));
      lines.push(`${at}.latency_p50_ms:${ms(h.valueAtPercentile(50))}|g`, `${at}.latency_p99_ms:${ms(h.valueAtPercentile(99))}|g`, `${at}.latency_max_ms:${ms(h.max())}|g`);
    }
  }
  return lines;
}

/** Lines packed into datagrams of at most MAX_PACKET bytes, newline-separated. */
export function packets(lines: string[]): Buffer[] {
  const out: Buffer[] = [];
  let current = '';
  for (const line of lines) {
    if (current && Buffer.byteLength(current) + 1 + Buffer.byteLength(line) > MAX_PACKET) {
      out.push(Buffer.from(current));
      current = '';
    }
    current = current ? `${current}\n${line}` : line;
  }
  if (current) out.push(Buffer.from(current));
  return out;
}

/** How long closing waits for datagrams still queued (the last interval's). */
const CLOSE_WAIT_MS = 500;

export class StatsdPusher {
  private pending = 0;
  private drained: (() => void) | null = null;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly address: string,
    private readonly target: StatsdTarget,
  ) {}

  /** Resolves the host once (an unknown host is said before any load) and opens the socket. */
  static async open(target: StatsdTarget): Promise<StatsdPusher> {
    let address = target.host;
    if (!isIP(address)) {
      try {
        address = (await lookup(target.host)).address;
      } catch {
        throw new Error(`--statsd ${target.host}:${target.port}: no address for host ${target.host}`);
      }
    }
    const socket = dgram.createSocket(isIP(address) === 6 ? 'udp6' : 'udp4');
    // Nobody listening answers with ICMP unreachable, reported on the socket: dropped like the packet.
    socket.on('error', () => {});
    socket.unref();
    return new StatsdPusher(socket, address, target);
  }

  push(p: Published, intervalSec: number | null): void {
    for (const packet of packets(statsdLines(this.target.prefix, p, intervalSec))) {
      this.pending++;
      this.socket.send(packet, this.target.port, this.address, () => {
        if (--this.pending === 0) this.drained?.();
      });
    }
  }

  /** Closes once the queued datagrams are out (at most CLOSE_WAIT_MS). */
  async close(): Promise<void> {
    if (this.pending > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLOSE_WAIT_MS);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}
