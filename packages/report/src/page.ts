/**
 * The scaffolding every HTML page of the reports shares (the study's, a
 * single run's, a capacity search's): one self-contained file with inline
 * CSS, no script and nothing fetched, and its tables.
 */
import { escapeXml } from './svg.js';

/** The CSS of every page: text, tables and the charts' parts. */
export const PAGE_STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif; margin: 24px auto; max-width: 960px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; color: #444; }
ul.meta { margin: 0; padding-left: 18px; color: #444; }
p.note { color: #666; font-size: 12px; margin: 4px 0; }
p.group { color: #444; margin: 4px 0; }
p.answer { font-size: 16px; font-weight: 600; }
p.warn, li.warn { color: #a35a00; }
pre { background: #f7f7f7; border: 1px solid #e6e6e6; padding: 8px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0 4px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f4f4f4; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; }
td.bad { color: #c0392b; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 6px 0; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .tick, svg .legend, svg .value, svg .axis { font-size: 11px; fill: #555; }
svg .label { font-size: 12px; fill: #222; }
svg .nodata { font-size: 12px; fill: #c0392b; }
svg .whisker { stroke: #222; stroke-width: 1.3; }
svg .round { fill: #fff; stroke: #222; stroke-width: 1; }
svg .span { stroke: #aaa; stroke-width: 2; }
`;

/** A whole page around `body` (already HTML). */
export function htmlPage(page: { title: string; lang?: string; body: string }): string {
  return `<!doctype html>
<html lang="${escapeXml(page.lang ?? 'en')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(page.title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<h1>${escapeXml(page.title)}</h1>
${page.body}
</body>
</html>
`;
}

/** `<ul class="meta">` of plain lines; `cls(line, i)` may give a line a class (`warn`). */
export function metaList(lines: string[], cls: (line: string, i: number) => string | null = () => null): string {
  return `<ul class="meta">\n${lines
    .map((l, i) => {
      const c = cls(l, i);
      return `<li${c ? ` class="${c}"` : ''}>${escapeXml(l)}</li>`;
    })
    .join('\n')}\n</ul>`;
}

/** A table of text cells; `cellClass(row, column)` gives a cell its classes (`num`, `bad`). */
export function htmlTable(header: string[], rows: string[][], cellClass: (row: number, column: number) => string = () => ''): string {
  const head = `<tr>${header.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const body = rows
    .map((r, i) => `<tr>${r.map((c, j) => {
      const cls = cellClass(i, j);
      return `<td${cls ? ` class="${cls}"` : ''}>${escapeXml(c)}</td>`;
    }).join('')}</tr>`)
    .join('\n');
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
}
