/**
 * Reading one `--json` result for `respbench merge`, without trusting it and
 * without holding it whole. The file is read in chunks; its time series
 * (`intervals`, the bulk of a long run's file) is parsed one interval at a
 * time and kept with its histograms packed (2–3 bytes a bucket), and `series` (derived from the
 * intervals, made again for the merged result) is skipped unparsed. Every
 * field merge adds is checked, one function per group of fields: a value no
 * run can produce (a negative or fractional count, a bucket beyond the
 * histogram's range, counts that disagree with their histogram, an unknown
 * `version`, another unit) is refused with one line naming the file and
 * the field.
 */
import { open } from 'node:fs/promises';
import { HIGHEST_TRACKABLE_NS, type HistogramData } from './engine-js/histogram.js';
import { PackedHistogram } from './engine-js/packed-histogram.js';
import type { RawInterval } from './engine-js/plan.js';
import { printable } from './printable.js';
import { decodeHistogram, decodeHistograms } from './result-json.js';
import { RUN_RESULT_VERSION, type RunResult } from './run.js';
import { UsageError } from './usage-error.js';

/** The result versions merge reads (a newer one may hold fields it would drop). */
export const READABLE_VERSIONS: ReadonlySet<number> = new Set([2, RUN_RESULT_VERSION]);

/** A histogram as merge keeps it: bucket values and counts side by side. */
export interface CompactHistogram {
  values: Float64Array;
  counts: Float64Array;
}

/** An interval as merge keeps it: its histograms packed (2–3 bytes a bucket, engine-js/packed-histogram.ts), as a run keeps its own. */
export type CompactInterval = RawInterval;

/** One input: the result without its series, and its intervals compact. */
export interface MergeInput {
  result: Omit<RunResult, 'intervals' | 'series'>;
  intervals: CompactInterval[];
}

/** Thrown when the read was stopped by a signal (the caller says so and exits 130/143). */
export class ReadInterrupted extends Error {
  constructor(readonly file: string) {
    super(`interrupted while reading ${file}`);
  }
}

/** How much of the file is read at a time: small enough that a signal is seen within milliseconds. */
const CHUNK_BYTES = 1 << 20;

function refuse(file: string, field: string, what: string): UsageError {
  return new UsageError(`${printable(file)}: ${field}: ${what}`);
}

function got(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return printable(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** A count a run can have made: a whole number from 0 to 2^53 − 1. */
function checkCount(file: string, field: string, value: unknown, optional = false): number {
  if (value === undefined && optional) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw refuse(file, field, `must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER} (got ${got(value)})`);
  }
  return value;
}

/** `version`: one merge knows how to read. */
export function checkVersion(file: string, r: Record<string, unknown>): void {
  if (typeof r.version !== 'number' || !READABLE_VERSIONS.has(r.version)) {
    throw refuse(file, 'version', `this respbench reads results of version ${[...READABLE_VERSIONS].join(', ')} (got ${got(r.version)}): give results of the same respbench`);
  }
}

/**
 * A histogram field: unit ns, 3 significant digits, buckets `[value, count]`
 * with values in the histogram's range (below 2^40 ns: a slower reply counts
 * in the top bucket, so no run has a bucket beyond it) and whole positive
 * counts.
 */
export function checkHistogram(file: string, field: string, given: unknown): CompactHistogram {
  // Version 3 writes each histogram as HdrHistogram V2 base64 (result-json.ts); its buckets get the same checks.
  const value = typeof given === 'string' ? decodeHistogram(given, `${printable(file)}: ${field}`) : given;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refuse(file, field, `must be a histogram { unit, significantDigits, buckets } (got ${got(value)})`);
  const h = value as Partial<HistogramData>;
  if (h.unit !== 'ns') throw refuse(file, `${field}.unit`, `must be "ns": merge adds histograms of nanoseconds (got ${got(h.unit)})`);
  if (h.significantDigits !== 3) throw refuse(file, `${field}.significantDigits`, `must be 3, the layout respbench records (got ${got(h.significantDigits)})`);
  if (!Array.isArray(h.buckets)) throw refuse(file, `${field}.buckets`, `must be a list of [value, count] (got ${got(h.buckets)})`);
  const values = new Float64Array(h.buckets.length);
  const counts = new Float64Array(h.buckets.length);
  let total = 0;
  h.buckets.forEach((b, k) => {
    if (!Array.isArray(b) || b.length !== 2) throw refuse(file, `${field}.buckets[${k}]`, `must be [value, count] (got ${got(b)})`);
    const [v, c] = b;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v >= HIGHEST_TRACKABLE_NS) {
      throw refuse(file, `${field}.buckets[${k}]`, `a value must be whole nanoseconds below 2^40 (the histogram's range: a slower reply counts in its top bucket; got ${got(v)})`);
    }
    if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 1) throw refuse(file, `${field}.buckets[${k}]`, `a count must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER} (got ${got(c)})`);
    total += c;
    if (!Number.isSafeInteger(total)) throw refuse(file, `${field}.buckets`, `the counts add up past ${Number.MAX_SAFE_INTEGER}: no run counts that many replies`);
    values[k] = v;
    counts[k] = c;
  });
  return { values, counts };
}

export function histogramTotal(h: CompactHistogram): number {
  let n = 0;
  for (let k = 0; k < h.counts.length; k++) n += h.counts[k];
  return n;
}

export function histogramData(h: CompactHistogram): HistogramData {
  const buckets: [number, number][] = new Array(h.values.length);
  for (let k = 0; k < h.values.length; k++) buckets[k] = [h.values[k], h.counts[k]];
  return { unit: 'ns', significantDigits: 3, buckets };
}

function packed(h: CompactHistogram): PackedHistogram {
  return PackedHistogram.fromValues(h.values, h.counts);
}

function checkTotal(file: string, field: string, h: CompactHistogram, countField: string, count: number): void {
  const total = histogramTotal(h);
  if (total !== count) throw refuse(file, field, `its counts add up to ${total}, but ${countField} is ${count}: the file was edited or cut`);
}

/**
 * The counters merge adds, and the histograms that must agree with them:
 * every timed reply is in `histogram` once, on its side (`setHistogram`,
 * `getHistogram`) and under its command of a mix.
 */
export function checkCounters(file: string, r: Record<string, unknown>, at = ''): void {
  const requests = checkCount(file, `${at}requests`, r.requests);
  for (const f of ['sets', 'gets', 'errors', 'misses', 'mismatches']) {
    if (checkCount(file, `${at}${f}`, r[f]) > requests) throw refuse(file, `${at}${f}`, `is more than ${at}requests (${requests})`);
  }
  if (at === '') {
    for (const f of ['ok', 'bytesOut', 'bytesIn', 'preloadRequests']) checkCount(file, f, r[f]);
    for (const f of ['lostWrites', 'staleReads', 'pushes', 'warmupRequests', 'preloadElapsedNs', 'warmupElapsedNs']) checkCount(file, f, r[f], true);
  } else checkCount(file, `${at}lostWrites`, r.lostWrites, true);
  if ((r.sets as number) + (r.gets as number) !== requests) throw refuse(file, `${at}sets`, `sets + gets is ${(r.sets as number) + (r.gets as number)}, but ${at}requests is ${requests}`);
  if (at === '') {
    // A reply is ok or an error reply, never both; a read is at most one of missed, mismatched, lost or stale.
    const [ok, errors] = [r.ok as number, r.errors as number];
    if (ok + errors > requests) throw refuse(file, 'ok', `ok + errors is ${ok + errors}, more than requests (${requests}): a reply counts once`);
    const reads = ['misses', 'mismatches', 'lostWrites', 'staleReads'].reduce((n, f) => n + ((r[f] as number | undefined) ?? 0), 0);
    if (reads > (r.gets as number)) throw refuse(file, 'misses', `misses + mismatches + lostWrites + staleReads is ${reads}, more than gets (${r.gets as number}): each is a read`);
  }
}

/** The histograms of the result (or of one interval, `at` = `intervals[N].`), checked against its counters. */
function checkHistograms(file: string, r: Record<string, unknown>, at: string): Record<string, CompactHistogram | CompactHistogram[] | null> {
  const out: Record<string, CompactHistogram | CompactHistogram[] | null> = {};
  const requests = r.requests as number;
  if (at === '') {
    const whole = checkHistogram(file, 'histogram', r.histogram);
    checkTotal(file, 'histogram', whole, 'requests', requests);
    out.histogram = whole;
    for (const f of ['serviceHistogram', 'scheduleLagHistogram']) out[f] = r[f] === null || r[f] === undefined ? null : checkHistogram(file, f, r[f]);
  }
  for (const [f, count] of [['setHistogram', 'sets'], ['getHistogram', 'gets']] as const) {
    if (r[f] === undefined && at === '') continue;
    const h = checkHistogram(file, `${at}${f}`, r[f]);
    checkTotal(file, `${at}${f}`, h, `${at}${count}`, r[count] as number);
    out[f] = h;
  }
  if (r.commandHistograms !== undefined) {
    if (!Array.isArray(r.commandHistograms)) throw refuse(file, `${at}commandHistograms`, `must be a list of histograms (got ${got(r.commandHistograms)})`);
    const hs = r.commandHistograms.map((h, k) => checkHistogram(file, `${at}commandHistograms[${k}]`, h));
    const total = hs.reduce((n, h) => n + histogramTotal(h), 0);
    if (total !== requests) throw refuse(file, `${at}commandHistograms`, `their counts add up to ${total}, but ${at}requests is ${requests}`);
    out.commandHistograms = hs;
  }
  return out;
}

/** `plan.clientIndex` / `plan.clientCount`: this machine's share of one run. */
export function checkShare(file: string, plan: Record<string, unknown>): void {
  const count = plan.clientCount ?? 1;
  const index = plan.clientIndex ?? 0;
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1) throw refuse(file, 'plan.clientCount', `must be a whole number from 1 (got ${got(count)})`);
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0 || index >= count) {
    throw refuse(file, 'plan.clientIndex', `must be a whole number from 0 to ${count - 1} (plan.clientCount is ${count}; got ${got(index)})`);
  }
}

/** The run's timing: when it started and how long it measured. */
function checkTiming(file: string, r: Record<string, unknown>): void {
  const elapsed = checkCount(file, 'elapsedNs', r.elapsedNs);
  // Requests answered in no time at all: no run measures that (its ops/s would be infinite).
  if (elapsed === 0 && typeof r.requests === 'number' && r.requests > 0) throw refuse(file, 'elapsedNs', `is 0 but requests is ${r.requests}: a run that answered requests took time`);
  if (r.startedUnixMs !== undefined && r.startedUnixMs !== null) checkCount(file, 'startedUnixMs', r.startedUnixMs);
}

/** One interval of the time series, checked and made compact. */
export function checkInterval(file: string, value: unknown, k: number): CompactInterval {
  const at = `intervals[${k}].`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refuse(file, `intervals[${k}]`, `must be an interval object (got ${got(value)})`);
  const i = value as Record<string, unknown>;
  for (const f of ['index', 'startNs', 'endNs']) checkCount(file, `${at}${f}`, i[f]);
  checkCounters(file, i, at);
  if (i.connections !== undefined) checkCount(file, `${at}connections`, i.connections);
  const hs = checkHistograms(file, i, at);
  const n = (f: string) => i[f] as number;
  return {
    index: n('index'),
    startNs: n('startNs'),
    endNs: n('endNs'),
    requests: n('requests'),
    sets: n('sets'),
    gets: n('gets'),
    errors: n('errors'),
    misses: n('misses'),
    mismatches: n('mismatches'),
    lostWrites: (i.lostWrites as number | undefined) ?? 0,
    setHistogram: packed(hs.setHistogram as CompactHistogram),
    getHistogram: packed(hs.getHistogram as CompactHistogram),
    ...(hs.commandHistograms ? { commandHistograms: (hs.commandHistograms as CompactHistogram[]).map(packed) } : {}),
    ...(i.connections !== undefined ? { connections: n('connections') } : {}),
  };
}

/**
 * The top-level members of a JSON object read from a file chunk by chunk:
 * `onMember(key, text)` for each member but those in `elements`, whose value
 * (an array) is given element by element to `onElement`, and those in
 * `skip`, which are passed over unkept. Strings are followed (escapes
 * included), so brackets and commas inside them do not count. The bytes
 * kept at any time are one member's or one element's.
 */
class MemberSplitter {
  /** Bracket depth: the object itself is 1, an element of an element-wise array 3 and deeper. */
  private depth = 0;
  private inString = false;
  private escaped = false;
  private expect: 'object' | 'key' | 'colon' | 'value' | 'next' | 'nothing' = 'object';
  /** What the bytes being read belong to. */
  private capture: 'none' | 'key' | 'value' | 'skip' | 'element' = 'none';
  private pieces: Buffer[] = [];
  private key = '';
  /** In the array of an element-wise member (between its elements when capture is none). */
  private elementWise = false;

  constructor(
    private readonly elements: ReadonlySet<string>,
    private readonly skip: ReadonlySet<string>,
    private readonly onMember: (key: string, text: string) => void,
    private readonly onElement: (key: string, text: string) => void,
    private readonly bad: (why: string) => Error,
  ) {}

  /** The captured bytes up to `end` of this chunk, as text; capturing stops. */
  private take(chunk: Buffer, from: number, end: number): string {
    this.pieces.push(chunk.subarray(from, end));
    const text = Buffer.concat(this.pieces).toString('utf8');
    this.pieces = [];
    this.capture = 'none';
    return text;
  }

  push(chunk: Buffer): void {
    let from = 0;
    for (let p = 0; p < chunk.length; p++) {
      const c = chunk[p];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) {
          this.inString = false;
          if (this.capture === 'key') {
            this.key = JSON.parse(`"${this.take(chunk, from, p)}"`) as string;
            this.expect = 'colon';
          }
        }
        continue;
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      if (this.capture === 'none' && !this.elementWise) {
        // Between the members of the object.
        switch (this.expect) {
          case 'object':
            if (c !== 0x7b) throw this.bad('not a JSON object');
            this.depth = 1;
            this.expect = 'key';
            continue;
          case 'next':
            if (c === 0x2c) {
              this.expect = 'key';
              continue;
            }
          // falls through: `}` ends the object after a member (or at once: `{}`)
          case 'key':
            if (c === 0x7d) {
              this.depth = 0;
              this.expect = 'nothing';
              continue;
            }
            if (c !== 0x22 || this.expect !== 'key') throw this.bad('not valid JSON');
            this.inString = true;
            this.capture = 'key';
            from = p + 1;
            continue;
          case 'colon':
            if (c !== 0x3a) throw this.bad('not valid JSON');
            this.expect = 'value';
            continue;
          case 'nothing':
            throw this.bad('not valid JSON (more after the object)');
          case 'value':
            this.expect = 'next';
            if (this.elements.has(this.key) && c === 0x5b) {
              this.elementWise = true;
              this.depth = 2;
              continue;
            }
            this.capture = this.skip.has(this.key) ? 'skip' : 'value';
            from = p;
            break;
        }
      } else if (this.capture === 'none') {
        // Between the elements of an element-wise array.
        if (c === 0x2c) continue;
        if (c === 0x5d) {
          this.elementWise = false;
          this.depth = 1;
          continue;
        }
        this.capture = 'element';
        from = p;
      }
      // In a value or an element: does this byte end it?
      if (this.depth === 1 && (this.capture === 'value' || this.capture === 'skip') && (c === 0x2c || c === 0x7d)) {
        if (this.capture === 'value') this.onMember(this.key, this.take(chunk, from, p));
        this.capture = 'none';
        this.pieces = [];
        p--; // the comma or brace is the object's: read it again between members
        continue;
      }
      if (this.depth === 2 && this.capture === 'element' && (c === 0x2c || c === 0x5d)) {
        this.onElement(this.key, this.take(chunk, from, p));
        p--; // the comma or bracket is the array's
        continue;
      }
      if (c === 0x22) this.inString = true;
      else if (c === 0x7b || c === 0x5b) this.depth++;
      else if (c === 0x7d || c === 0x5d) this.depth--;
    }
    // What is still being read continues in the next chunk (this one's buffer is reused: copy it).
    if (this.capture === 'key' || this.capture === 'value' || this.capture === 'element') this.pieces.push(Buffer.from(chunk.subarray(from)));
  }

  finish(): void {
    if (this.expect !== 'nothing' || this.inString) throw this.bad('not valid JSON (it ends early: cut short?)');
  }
}

/**
 * Reads and checks one result file (see the file comment). `stopped()` is
 * asked between chunks: when it says so the read ends with ReadInterrupted.
 */
export async function readMergeInput(file: string, stopped: () => boolean = () => false): Promise<MergeInput> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read ${printable(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const members: Record<string, unknown> = {};
  const intervals: CompactInterval[] = [];
  const notJson = () => new UsageError(`${printable(file)} is not JSON: give the --json output of respbench runs`);
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      throw notJson();
    }
  };
  const splitter = new MemberSplitter(
    new Set(['intervals']),
    new Set(['series']),
    (key, text) => {
      members[key] = parse(text);
    },
    (_key, text) => {
      intervals.push(checkInterval(file, parse(text), intervals.length));
    },
    notJson,
  );
  try {
    const buf = Buffer.alloc(CHUNK_BYTES);
    for (;;) {
      if (stopped()) throw new ReadInterrupted(file);
      const { bytesRead } = await handle.read(buf, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      splitter.push(buf.subarray(0, bytesRead));
    }
    splitter.finish();
  } catch (err) {
    if (err instanceof UsageError || err instanceof ReadInterrupted) throw err;
    throw new UsageError(`cannot read ${printable(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  } finally {
    await handle.close();
  }
  // Version 3 writes histograms as V2 base64: decoded here, then checked as the bucket lists of version 2 are.
  const r = decodeHistograms(members, file);
  if (!r.plan || typeof r.plan !== 'object' || !r.histogram || typeof r.requests !== 'number') throw new UsageError(`${printable(file)} is not a respbench --json result`);
  if (r.elapsedNs === null) throw new UsageError(`${printable(file)} measured nothing (its run never got a reply): nothing to merge`);
  checkVersion(file, r);
  checkShare(file, r.plan as Record<string, unknown>);
  checkTiming(file, r);
  checkCounters(file, r);
  checkHistograms(file, r, '');
  return { result: r as unknown as MergeInput['result'], intervals };
}
