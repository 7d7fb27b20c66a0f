/**
 * Headless Chromium for the HTML reports' tests: the page as the browser
 * built it (--dump-dom) and a screenshot of it. Tests skip, saying why, on a
 * machine without Chromium (.ci/run installs it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const chromium: string | null = ['chromium', 'chromium-browser'].find((b) => spawnSync('sh', ['-c', `command -v ${b}`]).status === 0) ?? null;

/**
 * Skips the test (saying which and why) when there is no Chromium here;
 * fails it instead under RESPBENCH_REQUIRE_CHROMIUM=1 (CI, which installs it).
 */
export function needChromium(ctx: { skip: (note?: string) => void }, what: string): void {
  if (chromium) return;
  const why = `chromium is not installed (apt-get install -y chromium): ${what} was not rendered`;
  if (process.env.RESPBENCH_REQUIRE_CHROMIUM === '1') throw new Error(`${why}; RESPBENCH_REQUIRE_CHROMIUM=1 asks for it`);
  // The default reporter shows a skip as a bare count; say which test and why.
  console.warn(`SKIPPED: ${why}`);
  ctx.skip(why);
}

/**
 * Opens `file` in headless Chromium: returns the DOM it built, and, given
 * `screenshot`, writes a PNG of the page there and returns its size.
 */
export function renderPage(file: string, screenshot?: string, windowSize = '1000,1400'): { dom: string; pngBytes: number } {
  const profile = mkdtempSync(path.join(tmpdir(), 'respbench-chromium-'));
  try {
    const args = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--user-data-dir=${profile}`,
    ];
    const dom = spawnSync(chromium!, [...args, '--dump-dom', `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
    if (dom.status !== 0) throw new Error(`chromium --dump-dom ${file} exited ${dom.status}: ${dom.stderr}`);
    let pngBytes = 0;
    if (screenshot) {
      const png = spawnSync(chromium!, [...args, `--window-size=${windowSize}`, `--screenshot=${screenshot}`, `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
      if (png.status !== 0) throw new Error(`chromium --screenshot ${file} exited ${png.status}: ${png.stderr}`);
      pngBytes = readFileSync(screenshot).length;
    }
    return { dom: dom.stdout, pngBytes };
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
