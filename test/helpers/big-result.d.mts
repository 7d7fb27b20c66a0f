/** Writes a large, self-consistent `--json` result (see big-result.mjs); returns its interval count. */
export function writeBigResult(file: string, options: { megabytes: number; clientIndex?: number; clientCount?: number; startedUnixMs?: number }): number;
