//! A request's RESP bytes, from a parsed [`Template`]: the template is
//! compiled once into fixed byte runs and placeholders; per request only the
//! key, value and random numbers are written into a buffer the caller reuses.
//! Parsing the template is [`crate::template`]'s job.

use crate::keys::{
    KeyStream, fmix32, fnv1a32, fnv1a32_continue, write_decimal, write_decimal_tail, write_key, write_padded,
};
use crate::slot::{SLOTS, key_slot};
use crate::values::{ValueFactory, content_hash};
// Kept so `crate::command::{Part, Role, CommandKind, …}` still names them.
pub use crate::command_kind::{ARRAY_READS, CommandKind, command_kind, mix_role, template_name};
pub use crate::template::{
    PLACEHOLDERS, Part, Role, Template, TemplateError, inline_form, parse_template, rand_int_as_text,
    refused_outside_quotes, unverifiable_reason,
};

/// redis-benchmark writes `__rand_int__` as 12 zero-padded digits; so do we.
const RAND_INT_DIGITS: usize = 12;

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
        /// `__tag__`s: each the digits of the request's first key.
        tags: usize,
        /// Which of a multi-key request's keys the argument's `__key__` and
        /// `__data__` stand for (0 for a one-key template).
        slot: usize,
    },
    Key(usize),
    Data(usize),
    RandInt,
    Tag,
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
    /// The generation each key's value is written with: the run's unless
    /// the caller sets them (per-key generations, [`crate::key_names`]).
    pub generations: Vec<u32>,
}

impl KeyScratch {
    pub fn new(max_keys: usize, generation: u32) -> KeyScratch {
        KeyScratch {
            digits: vec![[0; 20]; max_keys],
            ndigits: vec![0; max_keys],
            hashes: vec![0; max_keys],
            data_lens: vec![0; max_keys],
            generations: vec![generation; max_keys],
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
    /// `--cluster`: the (first) argument that holds `__key__` or `__tag__`, if any.
    key_arg: Option<usize>,
    /// `__rand_int__` draws per request: a request routed elsewhere
    /// (`--cluster`) still takes them.
    rand_draws: usize,
}

/// The (first) argument that holds `__key__` or `__tag__`, if any.
fn key_arg_of(template: &Template) -> Option<usize> {
    template.args.iter().position(|parts| parts.iter().any(|p| matches!(p, Part::Key | Part::Tag)))
}

/// `--cluster`: the slot a request with no key goes by (PING in the command
/// suite), picked from its key draw so such requests spread over the
/// primaries as redis-benchmark's clients, one per node, do. Paired with
/// `spreadSlot` in command.ts.
#[inline]
pub fn spread_slot(key_index: u64) -> u16 {
    (fmix32(key_index as u32) % SLOTS as u32) as u16
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
            let (mut fixed, mut keys, mut datas, mut rands, mut tags) = (0, 0, 0, 0, 0);
            for p in parts {
                match p {
                    Part::Literal(b) => fixed += b.len(),
                    Part::Key => keys += 1,
                    Part::Data => datas += 1,
                    Part::RandInt => rands += 1,
                    Part::Tag => tags += 1,
                }
            }
            if keys + datas + rands + tags == 0 {
                push_static(&mut pieces, &mut statics, format!("${fixed}\r\n").as_bytes());
            } else {
                pieces.push(Piece::Length { fixed, keys, datas, rands, tags, slot });
            }
            for p in parts {
                match p {
                    Part::Literal(b) => push_static(&mut pieces, &mut statics, b),
                    Part::Key => pieces.push(Piece::Key(slot)),
                    Part::Data => pieces.push(Piece::Data(slot)),
                    Part::RandInt => pieces.push(Piece::RandInt),
                    Part::Tag => pieces.push(Piece::Tag),
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
                    Part::Tag => 20,
                    _ => 0,
                })
                .sum()
        })
    }

    /// `--cluster`: the hash slot of the key argument of key `key_index`
    /// (the argument holding `__key__` or `__tag__`, its literal parts
    /// included), written into `scratch` (at least
    /// [`CommandEncoder::key_arg_bytes`]) up to its first `__data__` or
    /// `__rand_int__`: the CLI refuses those in a key argument of a user's
    /// template under `--cluster`, and the command suite's keys
    /// (`key:{__tag__}:__rand_int__`) hold them only after a whole `{…}`
    /// hash tag, which alone then decides the slot; it refuses a multi-key
    /// template whose keys can span slots too (so the first key's slot is
    /// every key's). A template with no key (PING) has no slot of its own:
    /// [`spread_slot`] picks one.
    #[inline]
    pub fn key_slot(&self, key_index: u64, scratch: &mut [u8]) -> u16 {
        let Some(a) = self.key_arg else {
            return spread_slot(key_index);
        };
        let mut pos = 0;
        for p in &self.template.args[a] {
            match p {
                Part::Literal(b) => {
                    scratch[pos..pos + b.len()].copy_from_slice(b);
                    pos += b.len();
                }
                Part::Key => pos += write_key(&mut scratch[pos..], &self.prefix, key_index),
                Part::Tag => pos += write_decimal(&mut scratch[pos..], key_index),
                Part::Data | Part::RandInt => break,
            }
        }
        key_slot(&scratch[..pos])
    }

    /// The parts of the argument holding `__key__` or `__tag__` (None: no key): two
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
                Piece::Key(_) | Piece::Tag => self.prefix.len() + 20,
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
        self.encode_generation(out, key_index, rand, values, values.generation)
    }

    /// As [`encode`](Self::encode), the value written with `generation`.
    #[inline]
    pub fn encode_generation(
        &self,
        out: &mut [u8],
        key_index: u64,
        rand: &mut KeyStream,
        values: &ValueFactory,
        generation: u32,
    ) -> (usize, u32) {
        let mut digits = [0u8; 20];
        let start = write_decimal_tail(&mut digits, key_index);
        let digits = &digits[start..];
        let ndigits = digits.len();
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
                Piece::Length { fixed, keys, datas, rands, tags, .. } => {
                    let len = fixed + keys * key_len + datas * data_len + rands * RAND_INT_DIGITS + tags * ndigits;
                    pos += write_bulk_header(&mut out[pos..], len);
                }
                Piece::Key(_) => {
                    out[pos..pos + self.prefix.len()].copy_from_slice(&self.prefix);
                    pos += self.prefix.len();
                    out[pos..pos + ndigits].copy_from_slice(digits);
                    pos += ndigits;
                }
                Piece::Data(_) => pos += values.write_value_of(&mut out[pos..], h, content_hash(h, generation)),
                Piece::Tag => {
                    out[pos..pos + ndigits].copy_from_slice(digits);
                    pos += ndigits;
                }
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
            return self.encode_generation(out, keys[0], rand, values, scratch.generations[0]);
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
                Piece::Length { fixed, keys, datas, rands, tags, slot } => {
                    let key_len = self.prefix.len() + scratch.ndigits[slot];
                    let len = fixed
                        + keys * key_len
                        + datas * scratch.data_lens[slot]
                        + rands * RAND_INT_DIGITS
                        + tags * scratch.ndigits[0];
                    pos += write_bulk_header(&mut out[pos..], len);
                }
                Piece::Key(slot) => {
                    out[pos..pos + self.prefix.len()].copy_from_slice(&self.prefix);
                    pos += self.prefix.len();
                    let n = scratch.ndigits[slot];
                    out[pos..pos + n].copy_from_slice(&scratch.digits[slot][..n]);
                    pos += n;
                }
                Piece::Data(slot) => {
                    let h = scratch.hashes[slot];
                    pos += values.write_value_of(&mut out[pos..], h, content_hash(h, scratch.generations[slot]))
                }
                Piece::Tag => {
                    let n = scratch.ndigits[0];
                    out[pos..pos + n].copy_from_slice(&scratch.digits[0][..n]);
                    pos += n;
                }
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
