//! Value keys: an indexed value encoded as text whose byte order is the natural order of the
//! values, so that the shards' `ORDER BY value_key` (byte order on both engines) sorts values,
//! and range look-ups are plain comparisons.
//!
//! # Which values are indexed
//! Booleans, numbers and strings. A record that lacks an indexed field, or holds `null`, an
//! object or an array there, has no entry in the index (it is simply not indexed, and no look-up
//! finds it); for a composite index every field must hold such a scalar.
//!
//! # The encoding
//! Each part is a one-character type tag and a payload; a composite key is its parts
//! concatenated. Tags order the types: booleans < numbers < strings.
//!
//! | value | encoding |
//! | --- | --- |
//! | `false`, `true` | `b0`, `b1` |
//! | a number | `n` + 16 lowercase hex digits of the IEEE-754 double, sign flipped for positives and all bits flipped for negatives (the usual order-preserving transform); `-0` is `0` |
//! | a string | `s` + its UTF-8 bytes, with U+0000, U+0001 and U+0002 written as U+0002 followed by U+0002, U+0003 and U+0004, then U+0001 as terminator |
//!
//! Every part is self-delimiting and no part's encoding is a prefix of another's, so
//! concatenated keys compare part by part. The string terminator (U+0001) sorts below every
//! character of an encoded string (escapes start with U+0002), so a string sorts before its
//! extensions (`"a"` < `"a\u{0}"` < `"ab"`) and a separator inside one part never bleeds into
//! the next. Keys never contain U+0000: PostgreSQL text cannot hold it, and the placement hash
//! uses it as its separator.
//!
//! Numbers are compared as doubles, as JSON numbers usually are: `1` and `1.0` are one value,
//! and integers beyond ±2^53 are rounded to the nearest double (two such integers may then be
//! one value, also for a unique index). A key is at most [`MAX_VALUE_KEY_BYTES`] bytes; longer
//! values are refused rather than silently left out of the index.

use std::ops::Bound;

use serde_json::Value;

use crate::error::IndexError;

/// The longest encoded value key, in bytes (a long string value encodes to about its own length).
/// It keeps an entry's primary key well below PostgreSQL's B-tree row limit.
pub const MAX_VALUE_KEY_BYTES: usize = 1024;

/// The most parts a composite key (and a composite look-up) may have.
pub const MAX_KEY_PARTS: usize = 4;

const TAG_BOOL: char = 'b';
const TAG_NUMBER: char = 'n';
const TAG_STRING: char = 's';
/// Sorts after every tag: `key + AFTER_TAGS` bounds every key that extends `key` by more parts.
const AFTER_TAGS: char = 't';
const STRING_END: char = '\u{1}';
const STRING_ESCAPE: char = '\u{2}';

/// An encoded, order-preserving value key. Built only from values (or validated when read back
/// from a cursor), so it is always well formed. `Ord` is byte order, which is value order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueKey(String);

impl ValueKey {
    /// Encodes one value, or the parts of a composite value in field order. `Ok(None)` if a part
    /// is not indexed (`null`, an object or an array); [`IndexError::ValueTooLong`] if the key
    /// would exceed [`MAX_VALUE_KEY_BYTES`].
    pub fn encode(parts: &[&Value]) -> Result<Option<Self>, IndexError> {
        let mut key = String::new();
        for part in parts {
            if !push_part(&mut key, part) {
                return Ok(None);
            }
            if key.len() > MAX_VALUE_KEY_BYTES {
                return Err(IndexError::ValueTooLong { max: MAX_VALUE_KEY_BYTES });
            }
        }
        if key.is_empty() { Ok(None) } else { Ok(Some(Self(key))) }
    }

    /// The key of a value given as text in a URL (`?value=`, `from=`, `to=`):
    /// - if the text is JSON and a boolean, number or string, that value: `42` is the number,
    ///   `true` the boolean, `"42"` (quoted) the string `42`;
    /// - if it is a JSON array of such scalars (1 to [`MAX_KEY_PARTS`]), the composite value
    ///   `["Redmond", 98052]`;
    /// - any other JSON (`null`, an object, an empty or nested array) can never match:
    ///   [`IndexError::UnindexableValue`];
    /// - text that is not JSON is the string itself: `Redmond`, `a@b.c`, and also numbers JSON
    ///   cannot represent such as `1e400`.
    ///
    /// So a string that looks like JSON (`42`, `true`, `[1]`, `null`) is looked up quoted.
    pub fn from_query(raw: &str) -> Result<Self, IndexError> {
        let parsed = match serde_json::from_str::<Value>(raw) {
            Ok(value) => value,
            Err(_) => return Self::encode(&[&Value::String(raw.to_owned())])?.ok_or(IndexError::UnindexableValue),
        };
        let parts: Vec<&Value> = match &parsed {
            Value::Array(items) if (1..=MAX_KEY_PARTS).contains(&items.len()) => items.iter().collect(),
            Value::Array(_) => return Err(IndexError::UnindexableValue),
            scalar => vec![scalar],
        };
        Self::encode(&parts)?.ok_or(IndexError::UnindexableValue)
    }

    /// Accepts a key read back from outside (a cursor) if it is one [`ValueKey::encode`] could
    /// have produced.
    pub fn from_encoded(raw: &str) -> Result<Self, IndexError> {
        match decode(raw) {
            Some(parts) if !parts.is_empty() && raw.len() <= MAX_VALUE_KEY_BYTES => Ok(Self(raw.to_owned())),
            _ => Err(IndexError::InvalidValueKey),
        }
    }

    /// The encoded key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The encoded key, owned.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The value's parts back as JSON (numbers as integers when they are whole and within
    /// ±2^53, as decimals otherwise).
    pub fn decode(&self) -> Vec<Value> {
        // Well formed by construction, so this never falls back.
        decode(&self.0).unwrap_or_default()
    }

    /// How many parts the value has (1 unless composite).
    pub fn parts(&self) -> usize {
        self.decode().len()
    }

    /// The range of every key whose leading parts are this key's parts (a look-up by the first
    /// fields of a composite index): from this key, inclusive, to the first key past all its
    /// extensions, exclusive. For a key with all of an index's parts, only that key itself.
    pub fn prefix_bounds(&self) -> (Bound<String>, Bound<String>) {
        (Bound::Included(self.0.clone()), Bound::Excluded(format!("{}{AFTER_TAGS}", self.0)))
    }
}

/// Appends the encoding of one scalar; false if `value` is not indexed.
fn push_part(key: &mut String, value: &Value) -> bool {
    match value {
        Value::Bool(b) => {
            key.push(TAG_BOOL);
            key.push(if *b { '1' } else { '0' });
        }
        Value::Number(n) => {
            let Some(f) = n.as_f64().filter(|f| f.is_finite()) else { return false };
            key.push(TAG_NUMBER);
            key.push_str(&format!("{:016x}", ordered_bits(f)));
        }
        Value::String(s) => {
            key.push(TAG_STRING);
            for c in s.chars() {
                match c {
                    '\u{0}' | '\u{1}' | '\u{2}' => {
                        key.push(STRING_ESCAPE);
                        key.push(char::from(c as u8 + 2));
                    }
                    c => key.push(c),
                }
            }
            key.push(STRING_END);
        }
        Value::Null | Value::Array(_) | Value::Object(_) => return false,
    }
    true
}

/// The order-preserving image of a finite double: unsigned comparison of the result is numeric
/// comparison of the input. `-0.0` maps to `0.0`'s image.
fn ordered_bits(f: f64) -> u64 {
    let f = if f == 0.0 { 0.0 } else { f };
    let bits = f.to_bits();
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

/// The inverse of [`ordered_bits`].
fn from_ordered_bits(bits: u64) -> f64 {
    f64::from_bits(if bits >> 63 == 1 { bits & !(1 << 63) } else { !bits })
}

/// The parts of an encoded key, or `None` if it is not a well-formed encoding.
fn decode(raw: &str) -> Option<Vec<Value>> {
    let mut parts = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let mut chars = rest.chars();
        let tag = chars.next()?;
        rest = chars.as_str();
        let value = match tag {
            TAG_BOOL => {
                let (payload, tail) = (rest.get(..1)?, rest.get(1..)?);
                rest = tail;
                match payload {
                    "0" => Value::Bool(false),
                    "1" => Value::Bool(true),
                    _ => return None,
                }
            }
            TAG_NUMBER => {
                let (hex, tail) = (rest.get(..16)?, rest.get(16..)?);
                rest = tail;
                if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                    return None;
                }
                let bits = u64::from_str_radix(hex, 16).ok()?;
                let f = from_ordered_bits(bits);
                // Only images of finite numbers, and of 0 rather than -0, are ever written.
                if !f.is_finite() || ordered_bits(f) != bits {
                    return None;
                }
                number(f)
            }
            TAG_STRING => {
                let mut text = String::new();
                let mut chars = rest.chars();
                loop {
                    match chars.next()? {
                        STRING_END => break,
                        STRING_ESCAPE => match chars.next()? {
                            c @ '\u{2}'..='\u{4}' => text.push(char::from(c as u8 - 2)),
                            _ => return None,
                        },
                        c if c < '\u{3}' => return None,
                        c => text.push(c),
                    }
                }
                rest = chars.as_str();
                Value::String(text)
            }
            _ => return None,
        };
        parts.push(value);
        if parts.len() > MAX_KEY_PARTS {
            return None;
        }
    }
    Some(parts)
}

/// A decoded number as JSON: an integer when whole and exactly representable.
fn number(f: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if f.fract() == 0.0 && f.abs() <= EXACT {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use serde_json::json;

    use super::*;
    use crate::xorshift::XorShift as Gen;

    /// Runs `check` on `count` cases drawn from a generator seeded with `seed`.
    fn cases(seed: u64, count: u32, mut check: impl FnMut(&mut Gen)) {
        let mut g = Gen(seed);
        for _ in 0..count {
            check(&mut g);
        }
    }

    /// Asserts that `keys` are in strictly ascending order.
    fn assert_ascending(keys: &[ValueKey]) {
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    impl Gen {
        /// Numbers of every kind: small integers (many ties), negatives, decimals, huge and tiny
        /// magnitudes, subnormals, zeros of both signs, the extremes.
        fn number(&mut self) -> f64 {
            match self.below(6) {
                0 => self.below(7) as f64 - 3.0,
                1 => (self.next_u64() as i64 as f64) / 1e3,
                2 => (self.below(2_000_001) as f64 - 1e6) / 1e4,
                3 => {
                    let f = f64::from_bits(self.next_u64());
                    if f.is_finite() { f } else { 1.5 }
                }
                4 => [0.0, -0.0, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, 5e-324, -5e-324, f64::MAX, f64::MIN]
                    [self.below(8) as usize],
                _ => (self.below(1 << 60) as f64) * if self.below(2) == 0 { 1.0 } else { -1.0 },
            }
        }

        /// Strings over an alphabet rich in separators and escape characters, prefixes of each
        /// other, multi-byte and astral characters.
        fn string(&mut self) -> String {
            const ALPHABET: [char; 12] =
                ['\u{0}', '\u{1}', '\u{2}', '\u{3}', ' ', 'a', 'b', 'z', '~', '\u{7f}', 'é', '😀'];
            let len = self.below(5);
            (0..len).map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize]).collect()
        }

        fn scalar(&mut self) -> Value {
            match self.below(5) {
                0 => Value::Bool(self.below(2) == 1),
                1 | 2 => json!(self.number()),
                _ => Value::String(self.string()),
            }
        }

        /// 1 to [`MAX_KEY_PARTS`] scalars.
        fn tuple(&mut self) -> Vec<Value> {
            let n = 1 + self.below(MAX_KEY_PARTS as u64) as usize;
            (0..n).map(|_| self.scalar()).collect()
        }
    }

    /// The natural order the encoding must reproduce: booleans < numbers < strings; booleans
    /// false < true, numbers numerically, strings by UTF-8 bytes.
    fn natural(a: &Value, b: &Value) -> Ordering {
        fn rank(v: &Value) -> u8 {
            match v {
                Value::Bool(_) => 0,
                Value::Number(_) => 1,
                _ => 2,
            }
        }
        match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
            (Value::Number(x), Value::Number(y)) => x.as_f64().unwrap().partial_cmp(&y.as_f64().unwrap()).unwrap(),
            (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            _ => rank(a).cmp(&rank(b)),
        }
    }

    fn natural_tuple(a: &[Value], b: &[Value]) -> Ordering {
        a.iter().zip(b).map(|(x, y)| natural(x, y)).find(|o| o.is_ne()).unwrap_or(a.len().cmp(&b.len()))
    }

    fn key(parts: &[Value]) -> ValueKey {
        ValueKey::encode(&parts.iter().collect::<Vec<_>>()).unwrap().unwrap()
    }

    #[test]
    fn numbers_keep_numeric_order() {
        cases(0x5eed_0001, 20_000, |g| {
            let (a, b) = (g.number(), g.number());
            let (ka, kb) = (key(&[json!(a)]), key(&[json!(b)]));
            assert_eq!(ka.cmp(&kb), a.partial_cmp(&b).unwrap(), "{a} vs {b}: {ka:?} {kb:?}");
            assert_eq!(ka.as_str().len(), 17);
        });
    }

    #[test]
    fn number_examples() {
        let sorted =
            [f64::MIN, -1e300, -2.5, -1.0, -0.5, -5e-324, 0.0, 5e-324, 0.1, 1.0, 1.5, 2.0, 10.0, 1e300, f64::MAX];
        let keys: Vec<ValueKey> = sorted.iter().map(|f| key(&[json!(f)])).collect();
        assert_ascending(&keys);
        assert_eq!(key(&[json!(-0.0)]), key(&[json!(0)]), "-0 and 0 are one value");
        assert_eq!(key(&[json!(1)]), key(&[json!(1.0)]), "1 and 1.0 are one value");
        assert_eq!(key(&[json!(1)]).as_str(), "nbff0000000000000");
        assert_eq!(key(&[json!(-1)]).as_str(), "n400fffffffffffff");
    }

    #[test]
    fn strings_keep_byte_order_despite_embedded_separators() {
        cases(0x5eed_0002, 20_000, |g| {
            let (a, b) = (g.string(), g.string());
            let (ka, kb) = (key(&[json!(a)]), key(&[json!(b)]));
            assert_eq!(ka.cmp(&kb), a.as_bytes().cmp(b.as_bytes()), "{a:?} vs {b:?}: {ka:?} {kb:?}");
            assert!(!ka.as_str().contains('\u{0}'));
        });
        let sorted = ["", "\u{0}", "\u{0}\u{0}", "\u{1}", "\u{2}", "\u{3}", "a", "a\u{0}", "a\u{1}", "ab", "b", "é"];
        let keys: Vec<ValueKey> = sorted.iter().map(|s| key(&[json!(s)])).collect();
        assert_ascending(&keys);
    }

    #[test]
    fn types_order_booleans_numbers_strings() {
        let sorted = [json!(false), json!(true), json!(-1e308), json!(0), json!(1e308), json!(""), json!("0")];
        let keys: Vec<ValueKey> = sorted.iter().map(|v| key(std::slice::from_ref(v))).collect();
        assert_ascending(&keys);
    }

    #[test]
    fn composites_compare_part_by_part() {
        cases(0x5eed_0003, 20_000, |g| {
            let a = g.tuple();
            let n = a.len();
            // Often share a prefix with `a`, so later parts decide.
            let shared = g.below(n as u64 + 1) as usize;
            let b: Vec<Value> = (0..n).map(|i| if i < shared { a[i].clone() } else { g.scalar() }).collect();
            let (ka, kb) = (key(&a), key(&b));
            assert_eq!(ka.cmp(&kb), natural_tuple(&a, &b), "{a:?} vs {b:?}: {ka:?} {kb:?}");
        });
        // The classic trap: a separator inside the first part must not leak into the second.
        let pairs = [
            (json!("a"), json!("z")),
            (json!("a\u{0}b"), json!("")),
            (json!("a\u{1}"), json!("a")),
            (json!("ab"), json!("")),
            (json!("b"), json!(false)),
        ];
        let keys: Vec<ValueKey> = pairs.iter().map(|(x, y)| key(&[x.clone(), y.clone()])).collect();
        assert_ascending(&keys);
    }

    #[test]
    fn keys_decode_to_their_values() {
        cases(0x5eed_0004, 5_000, |g| {
            let parts = g.tuple();
            let k = key(&parts);
            let decoded = k.decode();
            assert_eq!(decoded.len(), parts.len());
            assert_eq!(natural_tuple(&decoded, &parts), Ordering::Equal, "{parts:?} → {decoded:?}");
            assert_eq!(key(&decoded), k);
            assert_eq!(ValueKey::from_encoded(k.as_str()).unwrap(), k.clone());
        });
        assert_eq!(key(&[json!(42), json!(0.25), json!("x")]).decode(), [json!(42), json!(0.25), json!("x")]);
    }

    #[test]
    fn only_scalars_are_indexed() {
        for unindexed in [json!(null), json!({"a": 1}), json!([1])] {
            assert!(matches!(ValueKey::encode(&[&unindexed]), Ok(None)));
            assert!(matches!(ValueKey::encode(&[&json!("a"), &unindexed]), Ok(None)));
        }
        assert!(matches!(ValueKey::encode(&[]), Ok(None)));
        let long = json!("x".repeat(MAX_VALUE_KEY_BYTES));
        assert!(matches!(ValueKey::encode(&[&long]), Err(IndexError::ValueTooLong { .. })));
        assert!(ValueKey::encode(&[&json!("x".repeat(MAX_VALUE_KEY_BYTES - 2))]).unwrap().is_some());
    }

    #[test]
    fn query_text_is_json_when_it_parses_and_a_string_otherwise() {
        let q = |raw: &str| ValueKey::from_query(raw);
        assert_eq!(q("42").unwrap(), key(&[json!(42)]));
        assert_eq!(q("-1.5e3").unwrap(), key(&[json!(-1500)]));
        assert_eq!(q("true").unwrap(), key(&[json!(true)]));
        assert_eq!(q(r#""42""#).unwrap(), key(&[json!("42")]));
        assert_eq!(q("Redmond").unwrap(), key(&[json!("Redmond")]));
        assert_eq!(q("a@b.c").unwrap(), key(&[json!("a@b.c")]));
        assert_eq!(q("").unwrap(), key(&[json!("")]));
        assert_eq!(q("1e400").unwrap(), key(&[json!("1e400")]), "not a JSON number: the string");
        assert_eq!(q(r#"["Redmond", 98052]"#).unwrap(), key(&[json!("Redmond"), json!(98052)]));
        for never in ["null", "{}", r#"{"a":1}"#, "[]", "[[1]]", "[1,2,3,4,5]", "[null]"] {
            assert!(matches!(q(never), Err(IndexError::UnindexableValue)), "{never}");
        }
        assert!(matches!(q(&"x".repeat(2000)), Err(IndexError::ValueTooLong { .. })));
    }

    #[test]
    fn foreign_keys_are_refused() {
        for bad in ["", "x", "b2", "n123", "nzzzzzzzzzzzzzzzz", "sabc", "sa\u{2}\u{9}\u{1}", "s\u{0}\u{1}"] {
            assert!(matches!(ValueKey::from_encoded(bad), Err(IndexError::InvalidValueKey)), "{bad:?}");
        }
        // The image of -0 and of NaN are never written.
        assert!(ValueKey::from_encoded(&format!("n{:016x}", !0x8000_0000_0000_0000u64)).is_err());
        assert!(ValueKey::from_encoded(&format!("n{:016x}", ordered_bits_unchecked(f64::NAN))).is_err());
        assert!(ValueKey::from_encoded("b1b0s\u{1}n8000000000000000").is_ok());
        assert!(ValueKey::from_encoded("b1b1b1b1b1").is_err(), "at most four parts");
    }

    fn ordered_bits_unchecked(f: f64) -> u64 {
        let bits = f.to_bits();
        if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
    }

    #[test]
    fn prefix_bounds_cover_exactly_the_extensions() {
        let prefix = key(&[json!("Redmond")]);
        let (from, to) = prefix.prefix_bounds();
        let inside = |k: &ValueKey| {
            let (Bound::Included(from), Bound::Excluded(to)) = (&from, &to) else { unreachable!() };
            k.as_str() >= from.as_str() && k.as_str() < to.as_str()
        };
        assert!(inside(&key(&[json!("Redmond"), json!(false)])));
        assert!(inside(&key(&[json!("Redmond"), json!(1e300)])));
        assert!(inside(&key(&[json!("Redmond"), json!("\u{10FFFF}")])));
        assert!(!inside(&key(&[json!("Redmond\u{0}"), json!(1)])));
        assert!(!inside(&key(&[json!("Redmonc"), json!("zzz")])));
        assert!(!inside(&key(&[json!("Redmondo"), json!(1)])));
    }
}
