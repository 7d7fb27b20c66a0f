/**
 * A run's memory is bounded whatever its window: an engine hands the kernel
 * only what it takes and keeps at most one write per connection in user
 * space, so a large pipeline of large values against a server that reads
 * slowly does not pile up in the client. A window that no server could hold
 * is refused before anything starts. "Bytes out" counts what the kernel took,
 * the same in both engines.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { STACK_TRACE } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { CLI, freePort, runCli, runJson } from './helpers/servers.js';

interface ByteServer {
  port: number;
  /** Bytes the server has read so far: what the client's kernel handed over. */
  bytesRead: () => number;
  close: () => void;
}

/** A loopback server that counts the bytes it reads and hands each chunk to `onChunk` (which may pause or answer). */
function byteServer(onChunk: (socket: net.Socket, chunk: Buffer) => void): Promise<ByteServer> {
  let read = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk) => {
      read += chunk.length;
      onChunk(socket, chunk);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        bytesRead: () => read,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

/** A server that reads one chunk every `everyMs` and never answers: the kernel's buffers fill, then the client must wait. */
function slowReader(everyMs: number): Promise<ByteServer> {
  return byteServer((socket) => {
    socket.pause();
    setTimeout(() => socket.resume(), everyMs).unref();
  });
}

/** Answers +OK to every command (one `*` per command: keys and values hold none). */
function countingServer(): Promise<ByteServer> {
  return byteServer((socket, chunk) => {
    let n = 0;
    for (const b of chunk) if (b === 0x2a) n++;
    if (n > 0) socket.write('+OK\r\n'.repeat(n));
  });
}

/** Runs the CLI, sampling the child's peak RSS (VmHWM) until it exits. */
function runWatchingMemory(args: string[], timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string; peakKb: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peakKb = 0;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const sample = () => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {
        // Gone between two samples: the last one stands.
      }
    };
    const sampler = setInterval(sample, 25);
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearInterval(sampler);
      clearTimeout(killer);
      resolve({ code, stdout, stderr, peakKb });
    });
  });
}

const servers: Array<{ close: () => void }> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe.each(engines())('engine %s', (engine) => {
  it('a 512 MiB window of 1 MiB values against a slow reader stays within a bounded peak RSS; bytes out = what the kernel took', async () => {
    const server = await slowReader(20);
    servers.push(server);
    // Nothing is ever answered: the run ends by --timeout, with what it sent.
    const args = ['--engine', engine, '--port', String(server.port), '--mode', 'set', '-P', '512', '-d', '1048576', '--requests', '100000', '--timeout', '2s', '--json'];
    const run = await runWatchingMemory(args);
    expect(run.code, run.stderr).toBe(1);
    const result = JSON.parse(run.stdout);
    expect(result.failure.kind).toBe('timeout');
    // Before: the JS engine encoded the whole window into user space (over 512 MiB).
    expect(run.peakKb).toBeGreaterThan(0);
    expect(run.peakKb / 1024).toBeLessThan(256);
    // What the kernel took: what the server read plus what sits in the two socket buffers.
    const read = server.bytesRead();
    expect(result.bytesOut).toBeGreaterThanOrEqual(read);
    expect(result.bytesOut - read).toBeLessThan(48 * 1024 * 1024);
  });

  it('a complete run counts out exactly the bytes the server read, with writes the kernel takes in parts', async () => {
    const server = await countingServer();
    servers.push(server);
    const args = ['--engine', engine, '--port', String(server.port), '--mode', 'set', '-P', '32', '-d', '262144-1048576', '--requests', '300', '-c', '2', '--seed', '5'];
    const { run, result } = await runJson(args, 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(300);
    expect(result.bytesOut).toBe(server.bytesRead());
  });

  it('a window no server could hold (pipeline × value size past 1 GiB) is refused up front: one line, exit 2', async () => {
    const port = String(await freePort());
    const run = await runCli(['--engine', engine, '--port', port, '-P', '65536', '-d', '67108864', '--requests', '10'], 20_000);
    const lines = run.stderr.split('\n').filter((l) => l.length > 0);
    expect({ code: run.code, lines: lines.length, stdout: run.stdout }).toEqual({ code: 2, lines: 1, stdout: '' });
    expect(lines[0]).toBe(
      'respbench: -P/--pipeline × -d/--value-size (the bytes of values one connection has in flight) must be at most 1073741824 (1 GiB): -P 65536 × -d 67108864 = 4398046511104; lower -P or -d',
    );
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });
});
