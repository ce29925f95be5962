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
//! | zero (`0`, `-0`, `0.0`, `0e5`) | `nO` |
//! | a positive number `0.D × 10^E` | `nP`, the exponent `E`, the digits `D`, then `.` |
//! | a negative number `-0.D × 10^E` | `nM`, the exponent `-E`, the digits `D` each replaced by `9 - d`, then `~` |
//! | a string | `s` + its UTF-8 bytes, with U+0000, U+0001 and U+0002 written as U+0002 followed by U+0002, U+0003 and U+0004, then U+0001 as terminator |
//!
//! A number is written as the exact decimal its JSON text denotes, never through a double: its
//! significant digits `D` (no leading or trailing zero, so the first is not `0`) and the decimal
//! exponent `E` that puts the point before them. `12.50`, `1.25e1` and `125e-1` are all
//! `0.125 × 10^2`, key `nPb2125.`. An exponent `E >= 0` is written as a letter `a` + its digit
//! count, then its digits (`b2`, `c16`); `E < 0` as a capital `A + 18 - its digit count`, then
//! `9 - d` for each digit of `|E|` (`-1` is `R8`, `-10` is `Q89`): larger exponents sort later
//! and the form is self-delimiting. The digits end with `.`, which sorts below every digit, so
//! `0.12` < `0.123`. A negative number reverses all of it (`9 - d`, the exponent negated, the
//! terminator `~` above every digit), so a larger magnitude sorts first. Exponents are clamped to
//! `±(10^18 - 1)`: values further out than that (no finite double is) may share a key.
//!
//! So numbers compare exactly, as JSON numbers: integers of any size (`9007199254740993` and
//! `9007199254740992` are two values), decimals with any number of digits, and `1`, `1.0`, `1e0`
//! and `10e-1` are one value (equal numbers, one key, also for a unique index).
//!
//! Every part is self-delimiting and no part's encoding is a prefix of another's, so
//! concatenated keys compare part by part. The string terminator (U+0001) sorts below every
//! character of an encoded string (escapes start with U+0002), so a string sorts before its
//! extensions (`"a"` < `"a\u{0}"` < `"ab"`) and a separator inside one part never bleeds into
//! the next. Keys never contain U+0000: PostgreSQL text cannot hold it, and the placement hash
//! uses it as its separator. A key is at most [`MAX_VALUE_KEY_BYTES`] bytes; longer values (a
//! long string, a number with about a thousand digits) are refused rather than silently left out
//! of the index.
//!
//! # Earlier keys
//! Before this encoding, a number was `n` + 16 lowercase hex digits of its double. Such keys are
//! recognised ([`ValueKey::is_legacy_number`]) and never produced again: no record holds them any
//! more, so a look-up's verification and the drift audit remove them, and the drift audit writes
//! each record's entry under its new key (`docs/operations.md`, "Upgrading indexes over numbers").

use std::ops::Bound;

use serde_json::Value;
use serde_json::value::RawValue;

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
const NUMBER_NEGATIVE: char = 'M';
const NUMBER_ZERO: char = 'O';
const NUMBER_POSITIVE: char = 'P';
/// Ends a positive number's digits: sorts below every digit.
const POSITIVE_END: char = '.';
/// Ends a negative number's (complemented) digits: sorts above every digit.
const NEGATIVE_END: char = '~';
/// The largest exponent magnitude written; further out is clamped (18 digits at most).
const MAX_EXPONENT: i64 = 999_999_999_999_999_999;

/// An encoded, order-preserving value key. Built only from values (or validated when read back
/// from a cursor), so it is always well formed. `Ord` is byte order, which is value order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueKey(String);

impl ValueKey {
    /// Encodes one value, or the parts of a composite value in field order, each given as its
    /// JSON text. `Ok(None)` if a part is not indexed (`null`, an object, an array, or a string
    /// that is not valid Unicode); [`IndexError::ValueTooLong`] if the key would exceed
    /// [`MAX_VALUE_KEY_BYTES`].
    pub fn encode(parts: &[&RawValue]) -> Result<Option<Self>, IndexError> {
        Self::from_scalars(parts.iter().map(|part| Scalar::of(part)))
    }

    fn from_scalars<'a>(parts: impl IntoIterator<Item = Option<Scalar<'a>>>) -> Result<Option<Self>, IndexError> {
        let mut key = String::new();
        for part in parts {
            let Some(scalar) = part else { return Ok(None) };
            if !scalar.push_to(&mut key) {
                return Ok(None);
            }
            if key.len() > MAX_VALUE_KEY_BYTES {
                return Err(IndexError::ValueTooLong { max: MAX_VALUE_KEY_BYTES });
            }
        }
        if key.is_empty() { Ok(None) } else { Ok(Some(Self(key))) }
    }

    /// The key of a value given as text in a URL (`?value=`, `from=`, `to=`):
    /// - if the text is JSON and a boolean, number or string, that value: `42` is the number
    ///   (exactly: `9007199254740993` is not `9007199254740992`), `true` the boolean, `"42"`
    ///   (quoted) the string `42`;
    /// - if it is a JSON array of such scalars (1 to [`MAX_KEY_PARTS`]), the composite value
    ///   `["Redmond", 98052]`;
    /// - any other JSON (`null`, an object, an empty or nested array) can never match:
    ///   [`IndexError::UnindexableValue`];
    /// - text that is not JSON is the string itself: `Redmond`, `a@b.c`, and also what no
    ///   record can hold as a number or string, such as `1e400` (beyond the double range).
    ///
    /// So a string that looks like JSON (`42`, `true`, `[1]`, `null`) is looked up quoted.
    pub fn from_query(raw: &str) -> Result<Self, IndexError> {
        let as_string =
            || Self::from_scalars([Some(Scalar::String(raw.to_owned()))])?.ok_or(IndexError::UnindexableValue);
        // The rules a stored record meets (finite numbers, valid Unicode): what breaks them is text.
        if serde_json::from_str::<Value>(raw).is_err() {
            return as_string();
        }
        let Ok(whole) = serde_json::from_str::<&RawValue>(raw) else { return as_string() };
        let parts: Vec<&RawValue> = if whole.get().starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(whole.get()).map_err(|_| IndexError::UnindexableValue)?;
            if !(1..=MAX_KEY_PARTS).contains(&items.len()) {
                return Err(IndexError::UnindexableValue);
            }
            items
        } else {
            vec![whole]
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

    /// Whether a stored key holds a number in the encoding used before exact numbers (`n` and 16
    /// hex digits of a double): no record has such a key any more, and an index holding it was
    /// built before the upgrade (`docs/operations.md`, "Upgrading indexes over numbers").
    pub fn is_legacy_number(raw: &str) -> bool {
        // One key is written by one version, so the first number part tells.
        let mut rest = raw;
        loop {
            let mut chars = rest.chars();
            match chars.next() {
                Some(TAG_BOOL) => rest = chars.as_str().get(1..).unwrap_or(""),
                Some(TAG_NUMBER) => {
                    return matches!(chars.as_str().as_bytes().first(), Some(b'0'..=b'9' | b'a'..=b'f'));
                }
                Some(TAG_STRING) => rest = chars.as_str().split_once(STRING_END).map_or("", |(_, tail)| tail),
                _ => return false,
            }
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

    /// The value's parts back as JSON. Numbers are read from their exact decimal as
    /// `serde_json` holds numbers: integers within `i64`/`u64` exactly, others as the nearest
    /// double (`null` beyond the double range).
    pub fn decode(&self) -> Vec<Value> {
        // Well formed by construction, so this never falls back.
        decode(&self.0).unwrap_or_default().into_iter().map(Part::into_json).collect()
    }

    /// How many parts the value has (1 unless composite).
    pub fn parts(&self) -> usize {
        decode(&self.0).map_or(0, |parts| parts.len())
    }

    /// The range of every key whose leading parts are this key's parts (a look-up by the first
    /// fields of a composite index): from this key, inclusive, to the first key past all its
    /// extensions, exclusive. For a key with all of an index's parts, only that key itself.
    pub fn prefix_bounds(&self) -> (Bound<String>, Bound<String>) {
        (Bound::Included(self.0.clone()), Bound::Excluded(format!("{}{AFTER_TAGS}", self.0)))
    }
}

/// An indexed scalar, read from its JSON text.
enum Scalar<'a> {
    Bool(bool),
    /// The number's JSON text, exactly as written.
    Number(&'a str),
    String(String),
}

impl<'a> Scalar<'a> {
    /// The scalar `raw` holds; `None` for `null`, objects, arrays and strings that are not valid
    /// Unicode (lone surrogates in records stored before the record rules).
    fn of(raw: &'a RawValue) -> Option<Self> {
        let text = raw.get();
        match text.as_bytes().first()? {
            b't' => Some(Self::Bool(true)),
            b'f' => Some(Self::Bool(false)),
            b'"' => serde_json::from_str(text).ok().map(Self::String),
            b'-' | b'0'..=b'9' => Some(Self::Number(text)),
            _ => None,
        }
    }

    /// Appends the encoding; false if a number's text is not a JSON number.
    fn push_to(&self, key: &mut String) -> bool {
        match self {
            Self::Bool(b) => {
                key.push(TAG_BOOL);
                key.push(if *b { '1' } else { '0' });
            }
            Self::Number(text) => {
                let Some(number) = Decimal::parse(text) else { return false };
                number.push_to(key);
            }
            Self::String(s) => push_string(key, s),
        }
        true
    }
}

fn push_string(key: &mut String, s: &str) {
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

/// A number's exact value: `0.DIGITS × 10^exponent`, negated if `negative`. `digits` has no
/// leading or trailing zero; it is empty for zero (which is never negative).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// The value of a JSON number's text (RFC 8259 grammar); `None` if it is not one.
    fn parse(text: &str) -> Option<Self> {
        let (negative, unsigned) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
            None => (unsigned, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(int) || (int.len() > 1 && int.starts_with('0')) || (mantissa.contains('.') && !all_digits(frac))
        {
            return None;
        }
        let written_exponent = match exponent {
            None => 0,
            Some(e) => {
                let (sign, digits) = match e.as_bytes().first() {
                    Some(b'-') => (-1, &e[1..]),
                    Some(b'+') => (1, &e[1..]),
                    _ => (1, e),
                };
                if !all_digits(digits) {
                    return None;
                }
                sign * digits.bytes().fold(0i64, |n, b| n.saturating_mul(10).saturating_add(i64::from(b - b'0')))
            }
        };
        let leading_zeros = int.bytes().chain(frac.bytes()).take_while(|&b| b == b'0').count();
        let mut digits: String = int.chars().chain(frac.chars()).skip(leading_zeros).collect();
        digits.truncate(digits.trim_end_matches('0').len());
        if digits.is_empty() {
            return Some(Self { negative: false, digits, exponent: 0 });
        }
        let point = int.len() as i64 - leading_zeros as i64;
        let exponent = point.saturating_add(written_exponent).clamp(-MAX_EXPONENT, MAX_EXPONENT);
        Some(Self { negative, digits, exponent })
    }

    fn push_to(&self, key: &mut String) {
        key.push(TAG_NUMBER);
        if self.digits.is_empty() {
            key.push(NUMBER_ZERO);
        } else if self.negative {
            key.push(NUMBER_NEGATIVE);
            push_exponent(key, -self.exponent);
            key.extend(self.digits.bytes().map(complement));
            key.push(NEGATIVE_END);
        } else {
            key.push(NUMBER_POSITIVE);
            push_exponent(key, self.exponent);
            key.push_str(&self.digits);
            key.push(POSITIVE_END);
        }
    }

    /// Reads the payload after [`TAG_NUMBER`] from the front of `rest`, returning what follows.
    fn read(rest: &str) -> Option<(Self, &str)> {
        let mut chars = rest.chars();
        let class = chars.next()?;
        let rest = chars.as_str();
        if class == NUMBER_ZERO {
            return Some((Self { negative: false, digits: String::new(), exponent: 0 }, rest));
        }
        let (negative, end) = match class {
            NUMBER_POSITIVE => (false, POSITIVE_END),
            NUMBER_NEGATIVE => (true, NEGATIVE_END),
            _ => return None,
        };
        let (exponent, rest) = read_exponent(rest)?;
        let stop = rest.find(end)?;
        let written = &rest[..stop];
        if written.is_empty() || !written.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits: String = if negative { written.bytes().map(complement).collect() } else { written.to_owned() };
        let number = Self { negative, digits, exponent: if negative { -exponent } else { exponent } };
        Some((number, &rest[stop + end.len_utf8()..]))
    }

    /// The number as JSON text (`123`, `-0.5e-7`).
    fn to_json_text(&self) -> String {
        let sign = if self.negative { "-" } else { "" };
        let whole_digits = usize::try_from(self.exponent).unwrap_or(0);
        if self.digits.is_empty() {
            "0".to_owned()
        } else if self.exponent >= self.digits.len() as i64 && whole_digits <= 40 {
            format!("{sign}{}{}", self.digits, "0".repeat(whole_digits - self.digits.len()))
        } else {
            format!("{sign}0.{}e{}", self.digits, self.exponent)
        }
    }
}

/// `9 - d` for an ASCII digit `d`, as a character.
fn complement(digit: u8) -> char {
    char::from(b'9' - digit + b'0')
}

/// Appends an exponent in its order-preserving, self-delimiting form (module docs).
fn push_exponent(key: &mut String, exponent: i64) {
    let digits = exponent.unsigned_abs().to_string();
    let count = digits.len() as u8; // 1 to 18: exponents are clamped
    if exponent >= 0 {
        key.push(char::from(b'a' + count));
        key.push_str(&digits);
    } else {
        key.push(char::from(b'A' + 18 - count));
        key.extend(digits.bytes().map(complement));
    }
}

/// The inverse of [`push_exponent`], only for its canonical output.
fn read_exponent(rest: &str) -> Option<(i64, &str)> {
    let lead = *rest.as_bytes().first()?;
    let (negative, count) = match lead {
        b'b'..=b's' => (false, usize::from(lead - b'a')),
        b'A'..=b'R' => (true, usize::from(18 - (lead - b'A'))),
        _ => return None,
    };
    let written = rest.get(1..=count)?;
    if !written.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: String = if negative { written.bytes().map(complement).collect() } else { written.to_owned() };
    if digits.len() > 1 && digits.starts_with('0') || negative && digits == "0" {
        return None;
    }
    let magnitude: i64 = digits.parse().ok()?;
    Some((if negative { -magnitude } else { magnitude }, &rest[1 + count..]))
}

/// One decoded part of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Bool(bool),
    Number(Decimal),
    String(String),
}

impl Part {
    fn into_json(self) -> Value {
        match self {
            Self::Bool(b) => Value::Bool(b),
            Self::String(s) => Value::String(s),
            Self::Number(n) => {
                let text = n.to_json_text();
                if let Ok(i) = text.parse::<i64>() {
                    Value::from(i)
                } else if let Ok(u) = text.parse::<u64>() {
                    Value::from(u)
                } else {
                    text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
                }
            }
        }
    }
}

/// The parts of an encoded key, or `None` if it is not a well-formed, canonical encoding.
fn decode(raw: &str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let mut chars = rest.chars();
        let tag = chars.next()?;
        rest = chars.as_str();
        let part = match tag {
            TAG_BOOL => {
                let (payload, tail) = (rest.get(..1)?, rest.get(1..)?);
                rest = tail;
                match payload {
                    "0" => Part::Bool(false),
                    "1" => Part::Bool(true),
                    _ => return None,
                }
            }
            TAG_NUMBER => {
                let (number, tail) = Decimal::read(rest)?;
                // Only canonical forms are ever written: no leading or trailing zero digit.
                let mut again = String::new();
                number.push_to(&mut again);
                let canonical = !number.digits.starts_with('0') && !number.digits.ends_with('0');
                if !canonical || again[TAG_NUMBER.len_utf8()..] != rest[..rest.len() - tail.len()] {
                    return None;
                }
                rest = tail;
                Part::Number(number)
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
                Part::String(text)
            }
            _ => return None,
        };
        parts.push(part);
        if parts.len() > MAX_KEY_PARTS {
            return None;
        }
    }
    Some(parts)
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

    fn raw(value: &Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(value).unwrap()
    }

    fn key(parts: &[Value]) -> ValueKey {
        let raws: Vec<Box<RawValue>> = parts.iter().map(raw).collect();
        ValueKey::encode(&raws.iter().map(|r| &**r).collect::<Vec<_>>()).unwrap().unwrap()
    }

    /// The key of a number given as JSON text.
    fn number_key(text: &str) -> ValueKey {
        let part = RawValue::from_string(text.to_owned()).unwrap();
        ValueKey::encode(&[&part]).unwrap().unwrap()
    }

    impl Gen {
        /// Doubles of every kind: small integers (many ties), negatives, decimals, huge and tiny
        /// magnitudes, subnormals, zeros of both signs, the extremes.
        fn double(&mut self) -> f64 {
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

        fn digits(&mut self, max: u64) -> String {
            let len = 1 + self.below(max);
            (0..len).map(|_| char::from(b'0' + self.below(10) as u8)).collect()
        }

        /// JSON number texts beyond what a double holds: integers of up to 40 digits (around
        /// 2^53 and 2^64 too), long decimals, leading and trailing zeros, exponents, `-0`.
        fn number_text(&mut self) -> String {
            let sign = if self.below(2) == 0 { "" } else { "-" };
            let body = match self.below(6) {
                0 => {
                    let int = self.digits(40);
                    let int = int.trim_start_matches('0');
                    if int.is_empty() { "0".to_owned() } else { int.to_owned() }
                }
                1 => format!("{}", 9_007_199_254_740_990u64 + self.below(6)),
                2 => format!("{}", u64::MAX - 3 + self.below(3)) + ["", "0", "1"][self.below(3) as usize],
                3 => format!("{}.{}", self.below(1000), self.digits(30)),
                4 => format!("{}.{}e{}", 1 + self.below(9), self.digits(25), self.below(61) as i64 - 30),
                _ => ["0", "0.0", "0e7", "0.000e-3", "1", "1.0", "10e-1", "0.1e1", "100", "1e2"]
                    [self.below(10) as usize]
                    .to_owned(),
            };
            format!("{sign}{body}")
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
                1 | 2 => json!(self.double()),
                _ => Value::String(self.string()),
            }
        }

        /// 1 to [`MAX_KEY_PARTS`] scalars.
        fn tuple(&mut self) -> Vec<Value> {
            let n = 1 + self.below(MAX_KEY_PARTS as u64) as usize;
            (0..n).map(|_| self.scalar()).collect()
        }
    }

    /// An independent exact order of JSON number texts (exponents within ±200): each is written
    /// out in fixed point, padded to one width, and compared digit by digit.
    fn exact_cmp(a: &str, b: &str) -> Ordering {
        fn fixed(text: &str) -> (bool, String) {
            let (negative, text) = text.strip_prefix('-').map_or((false, text), |t| (true, t));
            let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
            let exp: i64 = exp.parse().unwrap();
            let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            let point = int.len() as i64 + exp + 400;
            let digits = format!("{}{int}{frac}{}", "0".repeat(400), "0".repeat(800));
            let (int, frac) = digits.split_at(point as usize);
            let padded = format!("{int:0>1000}{frac:0<1600}");
            let zero = padded.bytes().all(|b| b == b'0');
            (negative && !zero, padded)
        }
        let ((na, ma), (nb, mb)) = (fixed(a), fixed(b));
        match (na, nb) {
            (false, false) => ma.cmp(&mb),
            (true, true) => mb.cmp(&ma),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
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

    #[test]
    fn numbers_compare_exactly_as_decimals() {
        cases(0x5eed_0005, 30_000, |g| {
            let (a, b) = (g.number_text(), g.number_text());
            let (ka, kb) = (number_key(&a), number_key(&b));
            assert_eq!(ka.cmp(&kb), exact_cmp(&a, &b), "{a} vs {b}: {ka:?} {kb:?}");
            assert_eq!(ValueKey::from_encoded(ka.as_str()).unwrap(), ka, "{a}");
            assert_eq!(number_key(&Decimal::parse(&a).unwrap().to_json_text()), ka, "{a} written back");
        });
    }

    #[test]
    fn doubles_keep_numeric_order() {
        cases(0x5eed_0001, 20_000, |g| {
            let (a, b) = (g.double(), g.double());
            let (ka, kb) = (key(&[json!(a)]), key(&[json!(b)]));
            assert_eq!(ka.cmp(&kb), a.partial_cmp(&b).unwrap(), "{a} vs {b}: {ka:?} {kb:?}");
        });
    }

    #[test]
    fn number_examples() {
        let sorted = [
            "-1e400",
            "-18446744073709551617",
            "-18446744073709551616",
            "-9007199254740993",
            "-9007199254740992",
            "-2.5",
            "-1",
            "-0.123",
            "-0.12",
            "-5e-324",
            "-1e-400",
            "0",
            "1e-400",
            "5e-324",
            "0.1",
            "0.12",
            "0.123",
            "1",
            "1.5",
            "2",
            "10",
            "9007199254740992",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "1e300",
            "1e400",
        ];
        assert_ascending(&sorted.iter().map(|t| number_key(t)).collect::<Vec<_>>());
        for same in [["0", "-0", "0.000"], ["1", "1.0", "1e0"], ["1", "10e-1", "0.1E1"], ["-150", "-1.5e2", "-1500e-1"]]
        {
            assert_eq!(number_key(same[0]), number_key(same[1]), "{same:?}");
            assert_eq!(number_key(same[0]), number_key(same[2]), "{same:?}");
        }
        assert_eq!(number_key("1").as_str(), "nPb11.");
        assert_eq!(number_key("-1").as_str(), "nMR88~");
        assert_eq!(number_key("12.50").as_str(), "nPb2125.");
        assert_eq!(number_key("0.05").as_str(), "nPR85.");
        assert_eq!(number_key("9007199254740993").as_str(), "nPc169007199254740993.");
        assert_eq!(number_key("0").as_str(), "nO");
        assert_eq!(key(&[json!(9_007_199_254_740_993u64)]).decode(), [json!(9_007_199_254_740_993u64)]);
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
            (json!(0.12), json!("z")),
            (json!(0.123), json!(false)),
            (json!(-0.123), json!("z")),
            (json!(-0.12), json!(false)),
        ];
        let keys: Vec<ValueKey> = pairs.iter().map(|(x, y)| key(&[x.clone(), y.clone()])).collect();
        assert_ascending(&keys[..5]);
        assert_ascending(&keys[5..7]);
        assert_ascending(&keys[7..]);
    }

    #[test]
    fn keys_decode_to_their_values() {
        cases(0x5eed_0004, 5_000, |g| {
            let parts = g.tuple();
            let k = key(&parts);
            let decoded = k.decode();
            assert_eq!(decoded.len(), parts.len());
            assert_eq!(k.parts(), parts.len());
            assert_eq!(natural_tuple(&decoded, &parts), Ordering::Equal, "{parts:?} → {decoded:?}");
            assert_eq!(key(&decoded), k);
            assert_eq!(ValueKey::from_encoded(k.as_str()).unwrap(), k.clone());
        });
        assert_eq!(key(&[json!(42), json!(0.25), json!("x")]).decode(), [json!(42), json!(0.25), json!("x")]);
    }

    #[test]
    fn only_scalars_are_indexed() {
        for unindexed in [json!(null), json!({"a": 1}), json!([1])] {
            let (u, a) = (raw(&unindexed), raw(&json!("a")));
            assert!(matches!(ValueKey::encode(&[&u]), Ok(None)));
            assert!(matches!(ValueKey::encode(&[&a, &u]), Ok(None)));
        }
        let lone_surrogate = RawValue::from_string(r#""\ud800""#.to_owned()).unwrap();
        assert!(matches!(ValueKey::encode(&[&lone_surrogate]), Ok(None)), "stored before the record rules");
        assert!(matches!(ValueKey::encode(&[]), Ok(None)));
        let long = raw(&json!("x".repeat(MAX_VALUE_KEY_BYTES)));
        assert!(matches!(ValueKey::encode(&[&long]), Err(IndexError::ValueTooLong { .. })));
        let many_digits = RawValue::from_string("1".repeat(MAX_VALUE_KEY_BYTES)).unwrap();
        assert!(matches!(ValueKey::encode(&[&many_digits]), Err(IndexError::ValueTooLong { .. })));
        assert!(ValueKey::encode(&[&raw(&json!("x".repeat(MAX_VALUE_KEY_BYTES - 2)))]).unwrap().is_some());
    }

    #[test]
    fn query_text_is_json_when_it_parses_and_a_string_otherwise() {
        let q = |raw: &str| ValueKey::from_query(raw);
        assert_eq!(q("42").unwrap(), key(&[json!(42)]));
        assert_eq!(q("-1.5e3").unwrap(), key(&[json!(-1500)]));
        assert_eq!(q("9007199254740993").unwrap(), number_key("9007199254740993"));
        assert_ne!(q("9007199254740993").unwrap(), q("9007199254740992").unwrap());
        assert_eq!(q("true").unwrap(), key(&[json!(true)]));
        assert_eq!(q(r#""42""#).unwrap(), key(&[json!("42")]));
        assert_eq!(q("Redmond").unwrap(), key(&[json!("Redmond")]));
        assert_eq!(q("a@b.c").unwrap(), key(&[json!("a@b.c")]));
        assert_eq!(q("").unwrap(), key(&[json!("")]));
        assert_eq!(q("1e400").unwrap(), key(&[json!("1e400")]), "not a finite number: the string");
        assert_eq!(q(r#""\ud800""#).unwrap(), key(&[json!(r#""\ud800""#)]), "not Unicode: the text");
        assert_eq!(q(r#"["Redmond", 98052]"#).unwrap(), key(&[json!("Redmond"), json!(98052)]));
        assert_eq!(
            q("[18446744073709551617, 1.0]").unwrap(),
            ValueKey(format!("{}{}", number_key("18446744073709551617").0, number_key("1").0))
        );
        for never in ["null", "{}", r#"{"a":1}"#, "[]", "[[1]]", "[1,2,3,4,5]", "[null]"] {
            assert!(matches!(q(never), Err(IndexError::UnindexableValue)), "{never}");
        }
        assert!(matches!(q(&"x".repeat(2000)), Err(IndexError::ValueTooLong { .. })));
    }

    #[test]
    fn foreign_keys_are_refused() {
        let bad = [
            "",
            "x",
            "b2",
            "n123",
            "nzzzzzzzzzzzzzzzz",
            "sabc",
            "sa\u{2}\u{9}\u{1}",
            "s\u{0}\u{1}",
            "nP",
            "nPb1.",
            "nPb110.",
            "nPb101.",
            "nPc011.",
            "nPR91.",
            "nMR88.",
            "nPb11~",
            "nQ",
            "nOO",
        ];
        for bad in bad {
            assert!(matches!(ValueKey::from_encoded(bad), Err(IndexError::InvalidValueKey)), "{bad:?}");
        }
        assert!(ValueKey::from_encoded("b1b0s\u{1}nO").is_ok());
        assert!(ValueKey::from_encoded("nPb11.nMR88~").is_ok());
        assert!(ValueKey::from_encoded("b1b1b1b1b1").is_err(), "at most four parts");
    }

    #[test]
    fn keys_of_the_double_encoding_are_recognised() {
        // `1` and `["a", -1]` as the previous version wrote them.
        for legacy in ["nbff0000000000000", "sa\u{1}n400fffffffffffff", "b1nbff0000000000000"] {
            assert!(ValueKey::is_legacy_number(legacy), "{legacy:?}");
            assert!(ValueKey::from_encoded(legacy).is_err(), "{legacy:?}");
        }
        for current in ["nPb11.", "sa\u{1}nMR88~", "b1", "sn\u{1}", "nO"] {
            assert!(!ValueKey::is_legacy_number(current), "{current:?}");
        }
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
        assert!(inside(&key(&[json!("Redmond"), json!(-1e300)])));
        assert!(inside(&key(&[json!("Redmond"), json!("\u{10FFFF}")])));
        assert!(!inside(&key(&[json!("Redmond\u{0}"), json!(1)])));
        assert!(!inside(&key(&[json!("Redmonc"), json!("zzz")])));
        assert!(!inside(&key(&[json!("Redmondo"), json!(1)])));
    }
}
