//! Command templates and their RESP encoding. A bare name (`HSET`) means
//! `HSET __key__ __data__` for writes and `HSET __key__` for reads; a template
//! names its arguments with the placeholders of memtier and redis-benchmark.
//! Arguments are split on ASCII spaces and tabs and may be quoted as in
//! redis-cli (the grammar is in docs/workload.md). A template is parsed once;
//! per request only the key, value and random numbers are written into a
//! buffer the caller reuses.

use std::fmt;

use crate::keys::{KeyStream, fnv1a32, fnv1a32_continue, write_decimal, write_key, write_padded};
use crate::slot::key_slot;
use crate::values::ValueFactory;

pub const PLACEHOLDERS: [&str; 3] = ["__key__", "__data__", "__rand_int__"];
/// redis-benchmark writes `__rand_int__` as 12 zero-padded digits; so do we.
const RAND_INT_DIGITS: usize = 12;

/// Whether a template is used for writes or reads: it decides what a bare
/// command name expands to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Set,
    Get,
}

/// One piece of an argument: fixed bytes, or a placeholder filled per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Literal(Vec<u8>),
    Key,
    Data,
    RandInt,
}

/// A parsed `--set-cmd` / `--get-cmd`.
#[derive(Clone, Debug)]
pub struct Template {
    /// The text the user gave.
    pub source: String,
    pub args: Vec<Vec<Part>>,
    pub uses_key: bool,
    pub uses_data: bool,
    pub uses_rand_int: bool,
    /// Sent in the inline form (`PING\r\n`), not as a RESP array: see [`inline_form`].
    pub inline: bool,
}

/// A template the engine cannot send; the text completes "the command …".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TemplateError {}

/// Code points refused outside quotes (docs/workload.md, "Template grammar"):
/// C0 controls but tab, DEL and C1 controls, and the non-ASCII spaces and
/// invisible separators a copy-paste brings in. Only ASCII space and tab
/// separate arguments; inside quotes every one of these is sent as its bytes.
pub fn refused_outside_quotes(c: char) -> bool {
    let cp = c as u32;
    if cp < 0x20 {
        return cp != 0x09;
    }
    matches!(cp, 0x7f..=0xa0 | 0x2000..=0x200d | 0x1680 | 0x180e | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x2060 | 0x3000 | 0xfeff)
}

/// A stretch of one argument's bytes: `plain` text (unquoted or in double
/// quotes, not from an escape) may hold placeholders; single-quoted text and
/// escaped bytes never do.
struct Run {
    bytes: Vec<u8>,
    plain: bool,
}

/// Appends `b` to the last run when it is of the same kind, else to a new
/// one; `fresh` (after a quote starts or ends) always starts a new run.
fn add(runs: &mut Vec<Run>, fresh: &mut bool, b: u8, plain: bool) {
    match runs.last_mut() {
        Some(run) if !*fresh && run.plain == plain => run.bytes.push(b),
        _ => runs.push(Run { bytes: vec![b], plain }),
    }
    *fresh = false;
}

fn hex_value(b: u8) -> u8 {
    if b.is_ascii_digit() { b - b'0' } else { (b | 0x20) - b'a' + 10 }
}

/// Splits a template into arguments as redis-cli does, except that only
/// ASCII space and tab separate them (docs/workload.md, "Template grammar").
fn split_arguments(source: &str) -> Result<Vec<Vec<Run>>, TemplateError> {
    let src = source.as_bytes();
    let n = src.len();
    let is_sep = |b: u8| b == b' ' || b == b'\t';
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < n && is_sep(src[i]) {
            i += 1;
        }
        if i == n {
            return Ok(args);
        }
        let mut runs: Vec<Run> = Vec::new();
        let mut fresh = true;
        let mut done = false;
        while !done && i < n {
            let b = src[i];
            if is_sep(b) {
                break;
            }
            if b == b'"' || b == b'\'' {
                // A quoted stretch is a run of its own: a placeholder is never split by a quote.
                fresh = true;
                let quote = b;
                i += 1;
                loop {
                    if i == n {
                        let which = if quote == b'"' { "double" } else { "single" };
                        return Err(TemplateError(format!("has an unclosed {which} quote")));
                    }
                    let c = src[i];
                    if quote == b'"'
                        && c == b'\\'
                        && i + 3 < n
                        && src[i + 1] == b'x'
                        && src[i + 2].is_ascii_hexdigit()
                        && src[i + 3].is_ascii_hexdigit()
                    {
                        add(&mut runs, &mut fresh, hex_value(src[i + 2]) * 16 + hex_value(src[i + 3]), false);
                        i += 4;
                    } else if quote == b'"' && c == b'\\' && i + 1 < n {
                        let e = match src[i + 1] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        };
                        add(&mut runs, &mut fresh, e, false);
                        i += 2;
                    } else if quote == b'\'' && c == b'\\' && i + 1 < n && src[i + 1] == b'\'' {
                        add(&mut runs, &mut fresh, b'\'', false);
                        i += 2;
                    } else if c == quote {
                        i += 1;
                        if i < n && !is_sep(src[i]) {
                            return Err(TemplateError(
                                "has text right after a closing quote (put a space between arguments)".into(),
                            ));
                        }
                        done = true;
                        break;
                    } else {
                        add(&mut runs, &mut fresh, c, quote == b'"');
                        i += 1;
                    }
                }
                fresh = true;
                continue;
            }
            // `i` is always at a character boundary here: quotes and escapes are ASCII.
            let ch = source[i..].chars().next().expect("a character at a boundary");
            if refused_outside_quotes(ch) {
                return Err(TemplateError(format!(
                    "has U+{:04X} outside quotes (only ASCII spaces and tabs separate arguments; quote it to send it)",
                    ch as u32
                )));
            }
            for k in 0..ch.len_utf8() {
                add(&mut runs, &mut fresh, src[i + k], true);
            }
            i += ch.len_utf8();
        }
        args.push(runs);
    }
}

/// Finds the next `__word__` at or after `from`, as the TypeScript regex
/// `/__[A-Za-z_]*?__/g` does: the earliest start, then the shortest match.
fn next_placeholder(word: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut start = from;
    while start + 4 <= word.len() {
        if word[start] == b'_' && word[start + 1] == b'_' {
            let mut k = start + 2;
            while k < word.len() {
                if k + 1 < word.len() && word[k] == b'_' && word[k + 1] == b'_' {
                    return Some((start, k + 2));
                }
                if word[k].is_ascii_alphabetic() || word[k] == b'_' {
                    k += 1;
                } else {
                    break;
                }
            }
        }
        start += 1;
    }
    None
}

#[derive(Default)]
struct Used {
    key: bool,
    data: bool,
    rand_int: bool,
}

/// One argument's runs as parts: placeholders found in plain runs, literals merged.
fn argument_parts(runs: &[Run], used: &mut Used) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut literal: Vec<u8> = Vec::new();
    for run in runs {
        if !run.plain {
            literal.extend_from_slice(&run.bytes);
            continue;
        }
        let bytes = &run.bytes;
        let mut last = 0;
        while let Some((start, end)) = next_placeholder(bytes, last) {
            literal.extend_from_slice(&bytes[last..start]);
            let part = match &bytes[start..end] {
                b"__key__" => {
                    used.key = true;
                    Part::Key
                }
                b"__data__" => {
                    used.data = true;
                    Part::Data
                }
                b"__rand_int__" => {
                    used.rand_int = true;
                    Part::RandInt
                }
                other => {
                    return Err(TemplateError(format!(
                        "has unknown placeholder {} (known: {})",
                        String::from_utf8_lossy(other),
                        PLACEHOLDERS.join(", ")
                    )));
                }
            };
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(part);
            last = end;
        }
        literal.extend_from_slice(&bytes[last..]);
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// Parses `--set-cmd` / `--get-cmd` by the grammar in docs/workload.md
/// ("Template grammar"), the same as command.ts and test/vectors/generate.py;
/// test/vectors/workload.json ("templates") pins all three. A single argument
/// without `__` is the kvstore shape (`NAME key value` or `NAME key`).
/// `literal` (the command suite's own commands) sends a single word as it is
/// and needs no `__key__`.
pub fn parse_template(source: &str, role: Role, literal: bool) -> Result<Template, TemplateError> {
    let split = split_arguments(source)?;
    if split.is_empty() {
        return Err(TemplateError("is empty".into()));
    }
    let mut used = Used::default();
    let mut args = Vec::with_capacity(split.len() + 2);
    for runs in &split {
        args.push(argument_parts(runs, &mut used)?);
    }
    let bare =
        args.len() == 1 && args[0].iter().all(|p| matches!(p, Part::Literal(b) if !b.windows(2).any(|w| w == b"__")));
    if !literal && bare {
        args.push(vec![Part::Key]);
        used.key = true;
        if role == Role::Set {
            args.push(vec![Part::Data]);
            used.data = true;
        }
    }
    if args[0].iter().any(|p| !matches!(p, Part::Literal(_))) {
        return Err(TemplateError("must start with a command name, not a placeholder".into()));
    }
    if args[0].is_empty() {
        return Err(TemplateError("has an empty command name".into()));
    }
    if !literal && !used.key {
        return Err(TemplateError("has no __key__ placeholder".into()));
    }
    Ok(Template {
        source: source.to_string(),
        args,
        uses_key: used.key,
        uses_data: used.data,
        uses_rand_int: used.rand_int,
        inline: false,
    })
}

/// The template with every `__rand_int__` turned into the literal text
/// `__rand_int__` (`Plan::rand_int_literal`: redis-benchmark without -r).
pub fn rand_int_as_text(mut template: Template) -> Template {
    if !template.uses_rand_int {
        return template;
    }
    for parts in &mut template.args {
        for p in parts.iter_mut() {
            if *p == Part::RandInt {
                *p = Part::Literal(b"__rand_int__".to_vec());
            }
        }
    }
    template.uses_rand_int = false;
    template
}

/// The template sent in the inline form, words and CRLF (`Plan::inline_commands`:
/// redis-benchmark's PING_INLINE). Only fixed words: a key or value could hold
/// a space or CRLF, which the inline form cannot carry.
pub fn inline_form(mut template: Template) -> Result<Template, TemplateError> {
    if template.args.iter().flatten().any(|p| !matches!(p, Part::Literal(_))) {
        return Err(TemplateError("is sent inline, so it takes fixed words only (no placeholders)".into()));
    }
    template.inline = true;
    Ok(template)
}

/// Why a read template's replies cannot be checked against what was written.
pub fn unverifiable_reason(get: &Template) -> Option<&'static str> {
    if get.uses_data {
        Some("a read command that sends __data__ cannot be verified")
    } else if get.uses_rand_int {
        Some("a read command with __rand_int__ cannot be verified")
    } else {
        None
    }
}

/// One step of encoding a request, from a template compiled once: runs of
/// fixed bytes are merged, so `SET` costs one copy for `*3\r\n$3\r\nSET\r\n`.
#[derive(Clone, Debug)]
enum Piece {
    /// `statics[start..end]`.
    Static(usize, usize),
    /// `$<length>\r\n` of an argument that holds placeholders: the fixed part
    /// of its length and how many of each placeholder it holds.
    Length {
        fixed: usize,
        keys: usize,
        datas: usize,
        rands: usize,
        /// Which of a multi-key request's keys the argument's `__key__` and
        /// `__data__` stand for (0 for a one-key template).
        slot: usize,
    },
    Key(usize),
    Data(usize),
    RandInt,
}

/// Which key of a request each argument's `__key__` and `__data__` stand
/// for, and how many keys a request names: see `keySlots` in command.ts
/// (docs/workload.md, "Multi-key commands").
pub fn key_slots(template: &Template) -> (Vec<usize>, usize) {
    let has_key = |parts: &Vec<Part>| parts.contains(&Part::Key);
    let key_args = template.args.iter().filter(|a| has_key(a)).count();
    let multi = key_args >= 2;
    let mut current: isize = -1;
    let slots = template
        .args
        .iter()
        .map(|parts| {
            if multi && has_key(parts) {
                current += 1;
            }
            if multi { current.max(0) as usize } else { 0 }
        })
        .collect();
    (slots, if multi { key_args } else { 1 })
}

/// A connection's scratch for a multi-key request: each key's digits, hash
/// and value length, made once (no allocation per request).
#[derive(Clone, Debug)]
pub struct KeyScratch {
    digits: Vec<[u8; 20]>,
    ndigits: Vec<usize>,
    hashes: Vec<u32>,
    data_lens: Vec<usize>,
}

impl KeyScratch {
    pub fn new(max_keys: usize) -> KeyScratch {
        KeyScratch {
            digits: vec![[0; 20]; max_keys],
            ndigits: vec![0; max_keys],
            hashes: vec![0; max_keys],
            data_lens: vec![0; max_keys],
        }
    }
}

/// Encodes one template per request. Immutable after construction, so one
/// encoder serves every connection on every thread.
#[derive(Clone, Debug)]
pub struct CommandEncoder {
    template: Template,
    pieces: Vec<Piece>,
    statics: Vec<u8>,
    prefix: Vec<u8>,
    /// FNV-1a state after the prefix: a key's hash only has to go over its digits.
    prefix_hash: u32,
    keyspace: u64,
    /// Keys one request names: 1, or k for a multi-key template ([`key_slots`]).
    key_count: usize,
    /// `--cluster`: the (first) argument that holds `__key__`, if any.
    key_arg: Option<usize>,
    /// `__rand_int__` draws per request: a request routed elsewhere
    /// (`--cluster`) still takes them.
    rand_draws: usize,
}

/// The (first) argument that holds `__key__`, if any.
fn key_arg_of(template: &Template) -> Option<usize> {
    template.args.iter().position(|parts| parts.iter().any(|p| matches!(p, Part::Key)))
}

/// `$<len>\r\n`, a bulk string's header; returns its length. Shared by the
/// single-key encoder (the common case, kept apart so it needs no scratch)
/// and the multi-key one.
#[inline]
fn write_bulk_header(out: &mut [u8], len: usize) -> usize {
    out[0] = b'$';
    let n = 1 + write_decimal(&mut out[1..], len as u64);
    out[n..n + 2].copy_from_slice(b"\r\n");
    n + 2
}

impl CommandEncoder {
    pub fn new(template: Template, prefix: &[u8], keyspace: u64) -> Self {
        let mut statics = Vec::new();
        let mut pieces = Vec::new();
        let push_static = |pieces: &mut Vec<Piece>, statics: &mut Vec<u8>, bytes: &[u8]| {
            let start = statics.len();
            statics.extend_from_slice(bytes);
            match pieces.last_mut() {
                Some(Piece::Static(_, end)) if *end == start => *end = statics.len(),
                _ => pieces.push(Piece::Static(start, statics.len())),
            }
        };
        if template.inline {
            // The words, one space apart, and CRLF: one copy per request.
            let words: Vec<Vec<u8>> = template
                .args
                .iter()
                .map(|parts| {
                    parts.iter().flat_map(|p| if let Part::Literal(b) = p { b.clone() } else { Vec::new() }).collect()
                })
                .collect();
            let mut line = words.join(&b' ');
            line.extend_from_slice(b"\r\n");
            push_static(&mut pieces, &mut statics, &line);
            return CommandEncoder {
                key_arg: key_arg_of(&template),
                rand_draws: 0,
                template,
                pieces,
                statics,
                prefix: prefix.to_vec(),
                prefix_hash: fnv1a32(prefix),
                keyspace,
                key_count: 1,
            };
        }
        let (slots, key_count) = key_slots(&template);
        push_static(&mut pieces, &mut statics, format!("*{}\r\n", template.args.len()).as_bytes());
        for (parts, &slot) in template.args.iter().zip(&slots) {
            let (mut fixed, mut keys, mut datas, mut rands) = (0, 0, 0, 0);
            for p in parts {
                match p {
                    Part::Literal(b) => fixed += b.len(),
                    Part::Key => keys += 1,
                    Part::Data => datas += 1,
                    Part::RandInt => rands += 1,
                }
            }
            if keys + datas + rands == 0 {
                push_static(&mut pieces, &mut statics, format!("${fixed}\r\n").as_bytes());
            } else {
                pieces.push(Piece::Length { fixed, keys, datas, rands, slot });
            }
            for p in parts {
                match p {
                    Part::Literal(b) => push_static(&mut pieces, &mut statics, b),
                    Part::Key => pieces.push(Piece::Key(slot)),
                    Part::Data => pieces.push(Piece::Data(slot)),
                    Part::RandInt => pieces.push(Piece::RandInt),
                }
            }
            push_static(&mut pieces, &mut statics, b"\r\n");
        }
        let rand_draws = template.args.iter().flatten().filter(|p| matches!(p, Part::RandInt)).count();
        CommandEncoder {
            key_arg: key_arg_of(&template),
            rand_draws,
            template,
            pieces,
            statics,
            prefix: prefix.to_vec(),
            prefix_hash: fnv1a32(prefix),
            keyspace,
            key_count,
        }
    }

    /// Keys one request names: 1, or k for a multi-key template.
    pub fn key_count(&self) -> usize {
        self.key_count
    }

    /// Bytes the key argument takes at most (room for [`CommandEncoder::key_slot`]).
    pub fn key_arg_bytes(&self) -> usize {
        self.key_arg.map_or(0, |a| {
            self.template.args[a]
                .iter()
                .map(|p| match p {
                    Part::Literal(b) => b.len(),
                    Part::Key => self.prefix.len() + 20,
                    _ => 0,
                })
                .sum()
        })
    }

    /// `--cluster`: the hash slot of the key argument of key `key_index`
    /// (the argument holding `__key__`, its literal parts included), written
    /// whole into `scratch` (at least [`CommandEncoder::key_arg_bytes`]);
    /// None when the template has no key. The CLI refuses a key argument with
    /// `__data__` or `__rand_int__` in it under `--cluster`, and a multi-key
    /// template whose keys can span slots (so the first key's slot is every
    /// key's: a `{tag}` in the prefix).
    #[inline]
    pub fn key_slot(&self, key_index: u64, scratch: &mut [u8]) -> Option<u16> {
        let a = self.key_arg?;
        let mut pos = 0;
        for p in &self.template.args[a] {
            match p {
                Part::Literal(b) => {
                    scratch[pos..pos + b.len()].copy_from_slice(b);
                    pos += b.len();
                }
                Part::Key => pos += write_key(&mut scratch[pos..], &self.prefix, key_index),
                _ => {}
            }
        }
        Some(key_slot(&scratch[..pos]))
    }

    /// The parts of the argument holding `__key__` (None: no key): two
    /// encoders with the same key argument give every key the same slot.
    pub fn key_arg(&self) -> Option<&[Part]> {
        self.key_arg.map(|a| &self.template.args[a][..])
    }

    /// Takes the `__rand_int__` draws of a request not sent here (`--cluster`),
    /// so the stream stays the same.
    #[inline]
    pub fn skip_draws(&self, rand: &mut KeyStream) {
        for _ in 0..self.rand_draws {
            rand.next_key_index(self.keyspace);
        }
    }

    pub fn template(&self) -> &Template {
        &self.template
    }

    /// Upper bound of the bytes one request takes.
    pub fn max_bytes(&self, values: &ValueFactory) -> usize {
        let mut n = 0;
        for piece in &self.pieces {
            n += match *piece {
                Piece::Static(start, end) => end - start,
                Piece::Length { .. } => 1 + 20 + 2,
                Piece::Key(_) => self.prefix.len() + 20,
                Piece::Data(_) => values.max,
                Piece::RandInt => RAND_INT_DIGITS,
            };
        }
        n
    }

    /// Writes the request for key `key_index` at the start of `out` (which must
    /// hold `max_bytes`); returns its length and the key's hash (what
    /// verification needs). `rand` supplies `__rand_int__` numbers, drawn in
    /// argument order.
    #[inline]
    pub fn encode(&self, out: &mut [u8], key_index: u64, rand: &mut KeyStream, values: &ValueFactory) -> (usize, u32) {
        let mut digits = [0u8; 20];
        let ndigits = write_decimal(&mut digits, key_index);
        let digits = &digits[..ndigits];
        let h = fnv1a32_continue(self.prefix_hash, digits);
        let key_len = self.prefix.len() + ndigits;
        let data_len = if self.template.uses_data { values.size_for(h) } else { 0 };

        let mut pos = 0;
        for piece in &self.pieces {
            match *piece {
                Piece::Static(start, end) => {
                    out[pos..pos + (end - start)].copy_from_slice(&self.statics[start..end]);
                    pos += end - start;
                }
                Piece::Length { fixed, keys, datas, rands, .. } => {
                    let len = fixed + keys * key_len + datas * data_len + rands * RAND_INT_DIGITS;
                    pos += write_bulk_header(&mut out[pos..], len);
                }
                Piece::Key(_) => {
                    out[pos..pos + self.prefix.len()].copy_from_slice(&self.prefix);
                    pos += self.prefix.len();
                    out[pos..pos + ndigits].copy_from_slice(digits);
                    pos += ndigits;
                }
                Piece::Data(_) => pos += values.write_value(&mut out[pos..], h),
                Piece::RandInt => {
                    let n = rand.next_key_index(self.keyspace);
                    pos += write_padded(&mut out[pos..], n, RAND_INT_DIGITS);
                }
            }
        }
        (pos, h)
    }

    /// As [`encode`](Self::encode), for the keys `keys[..key_count]` of a
    /// multi-key template (each `__key__` argument names its own); returns
    /// the length and the first key's hash.
    #[inline]
    pub fn encode_keys(
        &self,
        out: &mut [u8],
        keys: &[u64],
        scratch: &mut KeyScratch,
        rand: &mut KeyStream,
        values: &ValueFactory,
    ) -> (usize, u32) {
        if self.key_count == 1 {
            return self.encode(out, keys[0], rand, values);
        }
        for (k, &index) in keys[..self.key_count].iter().enumerate() {
            let n = write_decimal(&mut scratch.digits[k], index);
            let h = fnv1a32_continue(self.prefix_hash, &scratch.digits[k][..n]);
            scratch.ndigits[k] = n;
            scratch.hashes[k] = h;
            scratch.data_lens[k] = if self.template.uses_data { values.size_for(h) } else { 0 };
        }
        let mut pos = 0;
        for piece in &self.pieces {
            match *piece {
                Piece::Static(start, end) => {
                    out[pos..pos + (end - start)].copy_from_slice(&self.statics[start..end]);
                    pos += end - start;
                }
                Piece::Length { fixed, keys, datas, rands, slot } => {
                    let key_len = self.prefix.len() + scratch.ndigits[slot];
                    let len = fixed + keys * key_len + datas * scratch.data_lens[slot] + rands * RAND_INT_DIGITS;
                    pos += write_bulk_header(&mut out[pos..], len);
                }
                Piece::Key(slot) => {
                    out[pos..pos + self.prefix.len()].copy_from_slice(&self.prefix);
                    pos += self.prefix.len();
                    let n = scratch.ndigits[slot];
                    out[pos..pos + n].copy_from_slice(&scratch.digits[slot][..n]);
                    pos += n;
                }
                Piece::Data(slot) => pos += values.write_value(&mut out[pos..], scratch.hashes[slot]),
                Piece::RandInt => {
                    let n = rand.next_key_index(self.keyspace);
                    pos += write_padded(&mut out[pos..], n, RAND_INT_DIGITS);
                }
            }
        }
        (pos, scratch.hashes[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_expand_to_the_kvstore_shape() {
        let set = parse_template("RSET", Role::Set, false).unwrap();
        assert_eq!(set.args, vec![vec![Part::Literal(b"RSET".to_vec())], vec![Part::Key], vec![Part::Data]]);
        let get = parse_template(" RGET ", Role::Get, false).unwrap();
        assert_eq!(get.args, vec![vec![Part::Literal(b"RGET".to_vec())], vec![Part::Key]]);
    }

    #[test]
    fn placeholders_may_sit_inside_an_argument() {
        let t = parse_template("SET k:__key__:x __data__ user:__rand_int__", Role::Set, false).unwrap();
        assert_eq!(t.args[1], vec![Part::Literal(b"k:".to_vec()), Part::Key, Part::Literal(b":x".to_vec())]);
        assert_eq!(t.args[3], vec![Part::Literal(b"user:".to_vec()), Part::RandInt]);
        assert!(t.uses_rand_int && t.uses_data && t.uses_key);
    }

    #[test]
    fn inline_commands_are_words_and_crlf_and_take_no_placeholders() {
        let ping = inline_form(parse_template("PING", Role::Set, true).unwrap()).unwrap();
        let values = ValueFactory::new(3, 3);
        let enc = CommandEncoder::new(ping, b"k:", 10);
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let (len, _) = enc.encode(&mut out, 7, &mut KeyStream::new(1, 0), &values);
        assert_eq!(&out[..len], b"PING\r\n");
        let echo = inline_form(parse_template("ECHO hello", Role::Set, true).unwrap()).unwrap();
        let enc = CommandEncoder::new(echo, b"k:", 10);
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let (len, _) = enc.encode(&mut out, 7, &mut KeyStream::new(1, 0), &values);
        assert_eq!(&out[..len], b"ECHO hello\r\n");
        assert!(inline_form(parse_template("GET __key__", Role::Get, true).unwrap()).is_err());
    }

    #[test]
    fn rand_int_as_text_sends_the_placeholder_literally() {
        let t = rand_int_as_text(parse_template("INCR counter:__rand_int__", Role::Set, true).unwrap());
        assert!(!t.uses_rand_int);
        let values = ValueFactory::new(3, 3);
        let enc = CommandEncoder::new(t, b"", 10);
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let (len, _) = enc.encode(&mut out, 7, &mut KeyStream::new(1, 0), &values);
        assert_eq!(&out[..len], b"*2\r\n$4\r\nINCR\r\n$20\r\ncounter:__rand_int__\r\n");
    }

    #[test]
    fn literal_commands_are_sent_as_written() {
        let ping = parse_template("PING", Role::Set, true).unwrap();
        assert_eq!(ping.args, vec![vec![Part::Literal(b"PING".to_vec())]]);
        let values = ValueFactory::new(3, 3);
        let enc = CommandEncoder::new(ping, b"k:", 10);
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let (n, _) = enc.encode(&mut out, 5, &mut KeyStream::new(0, 0), &values);
        assert_eq!(&out[..n], b"*1\r\n$4\r\nPING\r\n");
    }

    #[test]
    fn bad_templates_say_why() {
        assert_eq!(parse_template("   ", Role::Set, false).unwrap_err().0, "is empty");
        assert!(
            parse_template("SET __key__ __value__", Role::Set, false)
                .unwrap_err()
                .0
                .starts_with("has unknown placeholder __value__")
        );
        assert_eq!(parse_template("SET foo", Role::Set, false).unwrap_err().0, "has no __key__ placeholder");
        assert_eq!(
            parse_template("__key__ SET", Role::Set, false).unwrap_err().0,
            "must start with a command name, not a placeholder"
        );
        assert!(parse_template("SET ___key__", Role::Set, false).unwrap_err().0.contains("___key__"));
    }

    #[test]
    fn quotes_keep_spaces_and_unicode_spaces_never_separate() {
        let t = parse_template("HSET __key__ \"my field\\x21\" 'it\\'s' __data__", Role::Set, false).unwrap();
        assert_eq!(t.args[2], vec![Part::Literal(b"my field!".to_vec())]);
        assert_eq!(t.args[3], vec![Part::Literal(b"it's".to_vec())]);
        for text in ["SET\u{a0}__key__", "SET __key__\u{85}x", "\u{feff}GET __key__", "GET __key__\n"] {
            assert!(parse_template(text, Role::Get, false).unwrap_err().0.contains("outside quotes"), "{text:?}");
        }
        assert_eq!(parse_template("GET \"__key__", Role::Get, false).unwrap_err().0, "has an unclosed double quote");
        assert!(parse_template("GET '__key__'", Role::Get, false).is_err(), "no placeholder inside single quotes");
    }

    #[test]
    fn max_bytes_bounds_the_largest_request() {
        let values = ValueFactory::new(10, 300);
        let enc = CommandEncoder::new(
            parse_template("SET __key__ __data__ __rand_int__", Role::Set, false).unwrap(),
            b"p:",
            1 << 50,
        );
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let mut rand = KeyStream::new(1, 0);
        for i in [0u64, 9, (1 << 50) - 1] {
            let (n, _) = enc.encode(&mut out, i, &mut rand, &values);
            assert!(n <= out.len());
        }
    }
}

/// Bare names a `--command` mix takes as writes (`NAME key value`); any other
/// bare name is `NAME key`. As WRITE_NAMES in command.ts.
const WRITE_NAMES: [&str; 4] = ["SET", "SETNX", "GETSET", "APPEND"];
/// Reads whose reply is the key's value, so `--verify-get` checks it. As VALUE_READS in command.ts.
const VALUE_READS: [&str; 4] = ["GET", "GETEX", "GETDEL", "MGET"];
/// Reads answered with an array of values, one per key (checked key by key). As ARRAY_READS in command.ts.
pub const ARRAY_READS: [&str; 1] = ["MGET"];

/// The template's command name, upper case (ASCII), from its first argument's bytes.
pub fn template_name(template: &Template) -> String {
    let mut name = String::new();
    for part in template.args.first().map(Vec::as_slice).unwrap_or(&[]) {
        if let Part::Literal(bytes) = part {
            name.extend(bytes.iter().map(|&b| (b as char).to_ascii_uppercase()));
        }
    }
    name
}

/// Which role a bare name in a `--command` mix takes: see [`WRITE_NAMES`].
pub fn mix_role(source: &str) -> Role {
    let word = source.trim_matches([' ', '\t']).split([' ', '\t']).next().unwrap_or("");
    if WRITE_NAMES.iter().any(|w| w.eq_ignore_ascii_case(word)) { Role::Set } else { Role::Get }
}

/// How a mix command's replies count, as `CommandKind` in command.ts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Sends `__data__`: acknowledged, the key holds its value.
    Write,
    /// GET and kin: the reply is the key's value, checked by `--verify-get`.
    Read,
    /// INCR, LPUSH, …: any reply but an error is fine.
    Other,
}

pub fn command_kind(template: &Template) -> CommandKind {
    if template.uses_data {
        CommandKind::Write
    } else if !template.uses_rand_int && VALUE_READS.contains(&template_name(template).as_str()) {
        CommandKind::Read
    } else {
        CommandKind::Other
    }
}
