/**
 * The study file's JSON Schema is made from the reader's own definitions
 * (study/file-format.ts): the copy the examples point at is what
 * `respbench schema` prints, every example is valid under it, and on files
 * the reader refuses the schema says no as well (and yes where it says yes).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { studyRunFlags } from '../src/study/flags.js';
import { studySchema } from '../src/study/schema.js';
import { loadStudyFile } from '../src/study/spec.js';
import { UsageError } from '../src/usage-error.js';

const EXAMPLES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples');
const schema = studySchema(studyRunFlags());
const validate = new Ajv({ allErrors: true, allowUnionTypes: true }).compile(schema);
const studies = readdirSync(EXAMPLES).filter((f) => /\.(ya?ml|json)$/.test(f) && f !== 'study.schema.json');

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the reader says of `text`: null when it reads the file, else its message. */
function readerSays(text: string): string | null {
  const file = path.join(dir, 'study.yaml');
  writeFileSync(file, text);
  try {
    loadStudyFile(file, studyRunFlags());
    return null;
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
}

describe('the study file schema', () => {
  it('is the one `respbench schema` makes from the reader\'s definitions (examples/study.schema.json is that output)', () => {
    expect(JSON.parse(readFileSync(path.join(EXAMPLES, 'study.schema.json'), 'utf8'))).toEqual(schema);
  });

  it.each(studies)('%s points at it and is valid under it (and the reader reads it)', (name) => {
    const text = readFileSync(path.join(EXAMPLES, name), 'utf8');
    if (name.endsWith('.json')) expect(JSON.parse(text).$schema).toBe('./study.schema.json');
    else expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./study.schema.json');
    const data = parse(text);
    expect(validate(data), JSON.stringify(validate.errors)).toBe(true);
    expect(() => loadStudyFile(path.join(EXAMPLES, name), studyRunFlags())).not.toThrow();
  });

  const base = (extra: string) => `name: s\nrounds: 1\nscenarios:\n  - name: a\n    target: { embedded: true }\n${extra}`;
  it.each([
    ['an unknown top-level key', 'name: s\nroundz: 1\nscenarios: [{ name: a, target: { embedded: true } }]\n', /unknown key "roundz"/],
    ['an unknown scenario key', 'scenarios:\n  - name: a\n    target: { embedded: true }\n    pipline: 4\n', /unknown key "pipline"/],
    ['an unknown target key', 'scenarios:\n  - name: a\n    target: { redis: none, prot: 1 }\n', /unknown key "prot" in a redis target/],
    ['a bare-number duration', 'scenarios:\n  - name: a\n    target: { redis: none, readyTimeout: 10 }\n', /a bare number has no unit/],
    ['rounds of 0', 'rounds: 0\nscenarios: [{ name: a, target: { embedded: true } }]\n', /rounds must be a whole number from 1 to 1000/],
    ['a switch given as text', 'scenarios:\n  - name: a\n    target: { embedded: true }\n    verifyGet: "yes"\n', /verifyGet must be true or false/],
    ['an unknown redis preset', 'scenarios:\n  - name: a\n    target: { redis: fast }\n', /unknown redis preset "fast"/],
    ['a tls key that is not one', "scenarios:\n  - name: a\n    target: { address: '127.0.0.1:1', tls: { cafile: x } }\n", /unknown key "cafile" in tls/],
  ])('refuses %s, as the reader does', (_what, text, reader) => {
    expect(readerSays(text)).toMatch(reader);
    expect(validate(parse(text))).toBe(false);
  });

  it.each([
    ['kebab-case run flags and a duration', base('    value-size: 64\n    timeout: 2s\n')],
    ['a mix with weights', base("    modes: [mixed]\n    commands: [{ command: 'GET __key__', weight: 3 }, SET]\n")],
    ['a capacity study', `mode: capacity\nslo: 'p99<=1ms'\nstep-duration: 1s\n${base('')}`],
  ])('accepts %s, as the reader does', (_what, text) => {
    expect(readerSays(text)).toBeNull();
    expect(validate(parse(text)), JSON.stringify(validate.errors)).toBe(true);
  });
});
