//! The record rules: what a record body must be to be stored, whatever its collection (with
//! indexes or without). A record is stored as the exact text the client sent, and every reader
//! (the API's clients, the index tables) must be able to read it back as the value it meant, so
//! the body must be JSON (RFC 8259, UTF-8) that:
//! - nests objects and arrays at most `limits.max_json_depth` levels deep (400 `json_too_deep`);
//! - holds only numbers that are finite as a 64-bit double (`1e999` or a 400-digit integer is
//!   read as infinity, or refused, by most JSON readers; 400 `invalid_body`). Numbers are kept
//!   exactly as written: `9007199254740993` stays that integer;
//! - holds only Unicode text: no `\ud800`-`\udfff` escape without its pair (400 `invalid_body`);
//! - has no object with the same key twice, at any depth, also when written with escapes
//!   (`"a"` and `"\u0061"`): which one a reader keeps is up to the reader (400 `invalid_body`).
//!
//! Anything else that is not JSON is 400 `invalid_json`. [`parse_record_body`] checks all of it
//! in one pass over the body, without building the value; the refusal names the offending value
//! by its JSON pointer.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde_json::value::RawValue;

/// Why a body is not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordBodyError {
    /// 400 `invalid_json`: not UTF-8.
    #[error("the body is not UTF-8 text (byte {offset})")]
    NotUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// 400 `invalid_json`: not JSON.
    #[error("the body is not valid JSON: expected {expected} at byte {offset}")]
    Syntax {
        /// Where the text stops being JSON.
        offset: usize,
        /// What the grammar expected there.
        expected: &'static str,
    },
    /// 400 `json_too_deep`.
    #[error("the value nests arrays and objects deeper than {max} levels")]
    TooDeep {
        /// `limits.max_json_depth`.
        max: usize,
    },
    /// 400 `invalid_body`: a number beyond the double range.
    #[error(
        "the number at {at} is beyond the range of a 64-bit double (about ±1.8e308), so it cannot be read back as a number"
    )]
    NonFiniteNumber {
        /// Where it is.
        at: Pointer,
    },
    /// 400 `invalid_body`: a string that is not Unicode text.
    #[error(
        "the {what} at {at} holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not Unicode text"
    )]
    LoneSurrogate {
        /// `string`, or `key` when it is an object's key (then `at` is the object).
        what: &'static str,
        /// Where it is.
        at: Pointer,
    },
    /// 400 `invalid_body`: an object with a key twice.
    #[error("the object at {at} has the key {key:?} more than once")]
    DuplicateKey {
        /// The object.
        at: Pointer,
        /// The repeated key.
        key: String,
    },
}

/// Where a value is in the body: a JSON pointer (RFC 6901), shown as `` `/a/0` `` or as `the
/// top level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer(pub String);

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("the top level") } else { write!(f, "`{}`", self.0) }
    }
}

/// Checks `body` against the record rules (module docs) and returns it as the JSON value to
/// store, without the whitespace around it.
pub fn parse_record_body(body: &[u8], max_depth: usize) -> Result<Box<RawValue>, RecordBodyError> {
    let text = std::str::from_utf8(body).map_err(|e| RecordBodyError::NotUtf8 { offset: e.valid_up_to() })?;
    check(text, max_depth)?;
    let value = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    // serde_json's own scan of text that is JSON: it cannot fail.
    RawValue::from_string(value.to_owned()).map_err(|_| RecordBodyError::Syntax { offset: 0, expected: "a value" })
}

/// A failure before it knows where in the value it is.
enum Fault {
    Syntax { offset: usize, expected: &'static str },
    TooDeep,
    NonFinite,
    LoneSurrogate { in_key: bool },
    DuplicateKey(String),
}

/// An open object or array.
enum Frame<'a> {
    Object { keys: Keys<'a>, current: Cow<'a, str> },
    Array { index: usize },
}

/// The keys of one object so far: a short list, a set once it grows.
#[derive(Default)]
struct Keys<'a> {
    few: Vec<Cow<'a, str>>,
    many: Option<HashSet<Cow<'a, str>>>,
}

impl<'a> Keys<'a> {
    /// Adds `key`; false if it was there.
    fn insert(&mut self, key: Cow<'a, str>) -> bool {
        if let Some(many) = &mut self.many {
            return many.insert(key);
        }
        if self.few.contains(&key) {
            return false;
        }
        self.few.push(key);
        if self.few.len() > 16 {
            self.many = Some(self.few.drain(..).collect());
        }
        true
    }
}

/// One pass over `text`: the grammar, the depth, and the record rules.
fn check(text: &str, max_depth: usize) -> Result<(), RecordBodyError> {
    let mut stack = Vec::new();
    let mut reader = Reader { text, pos: 0 };
    reader.value_stream(&mut stack, max_depth).map_err(|fault| match fault {
        Fault::Syntax { offset, expected } => RecordBodyError::Syntax { offset, expected },
        Fault::TooDeep => RecordBodyError::TooDeep { max: max_depth },
        Fault::NonFinite => RecordBodyError::NonFiniteNumber { at: pointer(&stack, true) },
        Fault::LoneSurrogate { in_key } => {
            RecordBodyError::LoneSurrogate { what: if in_key { "key" } else { "string" }, at: pointer(&stack, !in_key) }
        }
        Fault::DuplicateKey(key) => RecordBodyError::DuplicateKey { at: pointer(&stack, false), key },
    })
}

/// The pointer of the value being read; without the innermost member's key unless `member`.
fn pointer(stack: &[Frame<'_>], member: bool) -> Pointer {
    let mut path = String::new();
    for (i, frame) in stack.iter().enumerate() {
        match frame {
            Frame::Object { current, .. } if member || i + 1 < stack.len() => {
                path.push('/');
                path.push_str(&current.replace('~', "~0").replace('/', "~1"));
            }
            Frame::Object { .. } => {}
            Frame::Array { index } => {
                path.push('/');
                path.push_str(&index.to_string());
            }
        }
    }
    Pointer(path)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        self.pos += usize::from(hit);
        hit
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn syntax(&self, expected: &'static str) -> Fault {
        Fault::Syntax { offset: self.pos, expected }
    }

    /// The whole body: one value, whitespace around it. Iterative, so depth costs no stack.
    fn value_stream(&mut self, stack: &mut Vec<Frame<'a>>, max_depth: usize) -> Result<(), Fault> {
        loop {
            // A value starts here.
            self.skip_ws();
            let opens = match self.peek() {
                Some(b'{') => Some(b'}'),
                Some(b'[') => Some(b']'),
                Some(b'"') => {
                    self.pos += 1;
                    self.string(false)?;
                    None
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                    None
                }
                Some(b't') => self.literal("true").map(|()| None)?,
                Some(b'f') => self.literal("false").map(|()| None)?,
                Some(b'n') => self.literal("null").map(|()| None)?,
                _ => return Err(self.syntax("a value")),
            };
            if let Some(close) = opens {
                if stack.len() >= max_depth {
                    return Err(Fault::TooDeep);
                }
                self.pos += 1;
                self.skip_ws();
                if !self.eat(close) {
                    if close == b'}' {
                        stack.push(Frame::Object { keys: Keys::default(), current: Cow::Borrowed("") });
                        self.member_key(stack)?;
                    } else {
                        stack.push(Frame::Array { index: 0 });
                    }
                    continue;
                }
            }
            // A value ended: it may end the objects and arrays around it.
            loop {
                self.skip_ws();
                match stack.last_mut() {
                    None if self.pos == self.text.len() => return Ok(()),
                    None => return Err(self.syntax("the end of the body")),
                    Some(Frame::Array { index }) => {
                        if self.eat(b',') {
                            *index += 1;
                            break;
                        }
                        if !self.eat(b']') {
                            return Err(self.syntax("`,` or `]`"));
                        }
                    }
                    Some(Frame::Object { .. }) => {
                        if self.eat(b',') {
                            self.skip_ws();
                            self.member_key(stack)?;
                            break;
                        }
                        if !self.eat(b'}') {
                            return Err(self.syntax("`,` or `}`"));
                        }
                    }
                }
                stack.pop();
            }
        }
    }

    /// A member's key and its colon, in the innermost (object) frame.
    fn member_key(&mut self, stack: &mut [Frame<'a>]) -> Result<(), Fault> {
        if !self.eat(b'"') {
            return Err(self.syntax("a key (a string)"));
        }
        let key = self.string(true).map_err(|fault| match fault {
            Fault::LoneSurrogate { .. } => Fault::LoneSurrogate { in_key: true },
            other => other,
        })?;
        if let Some(Frame::Object { keys, current }) = stack.last_mut() {
            if !keys.insert(key.clone()) {
                return Err(Fault::DuplicateKey(key.into_owned()));
            }
            *current = key;
        }
        self.skip_ws();
        if !self.eat(b':') {
            return Err(self.syntax("`:`"));
        }
        Ok(())
    }

    /// The rest of a string after its opening quote; its text if `decode`, else empty.
    fn string(&mut self, decode: bool) -> Result<Cow<'a, str>, Fault> {
        let start = self.pos;
        let mut decoded: Option<String> = None;
        let mut copied = start;
        loop {
            let Some(byte) = self.peek() else { return Err(self.syntax("`\"`")) };
            match byte {
                b'"' => {
                    let tail = &self.text[copied..self.pos];
                    self.pos += 1;
                    return Ok(match decoded {
                        Some(mut text) => {
                            text.push_str(tail);
                            Cow::Owned(text)
                        }
                        None if decode => Cow::Borrowed(&self.text[start..self.pos - 1]),
                        None => Cow::Borrowed(""),
                    });
                }
                b'\\' => {
                    let escape_at = self.pos;
                    self.pos += 1;
                    let c = self.escape()?;
                    if decode {
                        let text = decoded.get_or_insert_with(String::new);
                        text.push_str(&self.text[copied..escape_at]);
                        text.push(c);
                        copied = self.pos;
                    }
                }
                0..=0x1f => return Err(self.syntax("an escape instead of a control character")),
                _ => self.pos += 1,
            }
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Result<char, Fault> {
        let Some(byte) = self.peek() else { return Err(self.syntax("an escape")) };
        self.pos += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A leading surrogate: its trailing half must follow.
                        let rest = self.text.as_bytes().get(self.pos..self.pos + 2);
                        if rest != Some(b"\\u") {
                            return Err(Fault::LoneSurrogate { in_key: false });
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Fault::LoneSurrogate { in_key: false });
                        }
                        let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                        char::from_u32(code).ok_or(Fault::LoneSurrogate { in_key: false })?
                    }
                    0xDC00..=0xDFFF => return Err(Fault::LoneSurrogate { in_key: false }),
                    unit => char::from_u32(u32::from(unit)).ok_or(Fault::LoneSurrogate { in_key: false })?,
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.syntax("one of `\"\\/bfnrtu` after `\\`"));
            }
        })
    }

    fn hex4(&mut self) -> Result<u16, Fault> {
        let digits = self.text.get(self.pos..self.pos + 4).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let unit = digits.and_then(|d| u16::from_str_radix(d, 16).ok()).ok_or_else(|| self.syntax("4 hex digits"))?;
        self.pos += 4;
        Ok(unit)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number (RFC 8259 grammar), finite as a double.
    fn number(&mut self) -> Result<(), Fault> {
        let start = self.pos;
        self.eat(b'-');
        let whole = match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.syntax("a digit")),
        };
        if self.eat(b'.') && self.digits() == 0 {
            return Err(self.syntax("a digit after `.`"));
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.syntax("a digit in the exponent"));
            }
            exponent = true;
        }
        // Without an exponent, fewer than 309 whole digits is below 1e308: finite.
        if (exponent || whole > 308) && self.text[start..self.pos].parse::<f64>().is_ok_and(f64::is_infinite) {
            return Err(Fault::NonFinite);
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static str) -> Result<(), Fault> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax(word))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn check_text(text: &str) -> Result<Box<RawValue>, RecordBodyError> {
        parse_record_body(text.as_bytes(), 64)
    }

    fn refused(text: &str) -> RecordBodyError {
        check_text(text).expect_err(text)
    }

    #[test]
    fn json_values_are_kept_as_written() {
        for (body, stored) in [
            (" {\"a\": [1, -0, 0.5e-3, 9007199254740993, 1E+2, true, false, null, \"\"]} \n", None),
            ("\"\\ud83d\\ude00 \\u00e9 \\\" \\\\ \\/ \\b\\f\\n\\r\\t\"", None),
            ("123456789012345678901234567890123456789012345678901234567890", None),
            ("1.7976931348623157e308", None),
            ("-1.7976931348623157e308", None),
            ("1e-400", None),
            ("[[], {}, [{}], {\"\": {\"\": 1}}]", None),
            ("\t[1 , 2 ]\r\n", Some("[1 , 2 ]")),
            ("{\"a\": 1, \"b\": {\"a\": 2}, \"A\": 3, \"a \": 4}", None),
        ] {
            let value = check_text(body).unwrap_or_else(|e| panic!("{body}: {e}"));
            assert_eq!(value.get(), stored.unwrap_or(body.trim()));
        }
    }

    #[test]
    fn numbers_beyond_the_double_range_are_refused_with_their_place() {
        for (body, at) in [
            ("1e999", ""),
            ("-1e999", ""),
            ("1.8e308", ""),
            ("{\"a\": [0, 2e308]}", "/a/1"),
            (&format!("{{\"big/~\": {}}}", "9".repeat(400)), "/big~1~0"),
        ] {
            assert_eq!(refused(body), RecordBodyError::NonFiniteNumber { at: Pointer(at.to_owned()) }, "{body}");
        }
        let detail = refused("{\"x\": {\"y\": 1e999}}").to_string();
        assert!(detail.contains("`/x/y`") && detail.contains("double"), "{detail}");
    }

    #[test]
    fn lone_surrogates_are_refused_with_their_place() {
        for (body, what, at) in [
            (r#""\ud800""#, "string", ""),
            (r#"["ok", "a\udc00b"]"#, "string", "/1"),
            (r#"{"a": "\ud800\u0041"}"#, "string", "/a"),
            (r#"{"a": "\ud800\ud800"}"#, "string", "/a"),
            (r#"{"a": {"\udfff": 1}}"#, "key", "/a"),
        ] {
            assert_eq!(refused(body), RecordBodyError::LoneSurrogate { what, at: Pointer(at.to_owned()) }, "{body}");
        }
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        for (body, at, key) in [
            (r#"{"a": 1, "a": 2}"#, "", "a"),
            (r#"{"a": 1, "\u0061": 2}"#, "", "a"),
            (r#"[0, {"x": {"k": 1, "j": 2, "k": 3}}]"#, "/1/x", "k"),
            (r#"{"a": {"b": 1}, "c": [{"d": null, "d": null}]}"#, "/c/0", "d"),
        ] {
            assert_eq!(
                refused(body),
                RecordBodyError::DuplicateKey { at: Pointer(at.to_owned()), key: key.to_owned() }
            );
        }
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        assert!(check_text(&format!("{{{}}}", many.join(","))).is_ok());
        assert!(matches!(
            refused(&format!("{{{}, \"k7\": 0}}", many.join(","))),
            RecordBodyError::DuplicateKey { key, .. } if key == "k7"
        ));
    }

    #[test]
    fn depth_is_limited_without_recursion() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_record_body(nested(64).as_bytes(), 64).is_ok());
        assert_eq!(parse_record_body(nested(65).as_bytes(), 64).unwrap_err(), RecordBodyError::TooDeep { max: 64 });
        assert!(parse_record_body(nested(100_000).as_bytes(), 100_000).is_ok());
        assert!(parse_record_body(br#"{"a": {"b": [1]}}"#, 3).is_ok());
        assert!(parse_record_body(br#"{"a": {"b": [1]}}"#, 2).is_err());
        assert!(parse_record_body(br#""[[[[""#, 0).is_ok());
    }

    #[test]
    fn what_is_not_json_is_a_syntax_error() {
        for body in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a: 1}",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "[1 2]",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\u{1}\"",
            "tru",
            "nul",
            "1 2",
            "{} x",
            "NaN",
            "Infinity",
            "[-]",
        ] {
            assert!(matches!(refused(body), RecordBodyError::Syntax { .. }), "{body:?}");
        }
        assert!(matches!(parse_record_body(b"\"\xff\"", 64), Err(RecordBodyError::NotUtf8 { offset: 1 })));
    }

    /// Differential check against serde_json on generated texts: valid JSON with hazards in it,
    /// and the same with one byte changed. What this module accepts, serde_json reads; what it
    /// refuses but serde_json reads is a repeated key (serde_json keeps the last).
    #[test]
    fn agrees_with_serde_json() {
        const LEAVES: [&str; 14] = [
            "1",
            "-0.5",
            "1e999",
            "-1e400",
            "1e-999",
            "\"a\"",
            "\"\\ud800\"",
            "\"\\ud83d\\ude00\"",
            "true",
            "null",
            "\"\\u0061\"",
            "12345678901234567890123",
            "0",
            "\"\\n\"",
        ];
        fn value(g: &mut u64, depth: u32, out: &mut String) {
            *g ^= *g << 13;
            *g ^= *g >> 7;
            *g ^= *g << 17;
            match (*g % 5, depth) {
                (0, d) if d < 4 => {
                    out.push('[');
                    for i in 0..(*g >> 8) % 3 {
                        if i > 0 {
                            out.push(',');
                        }
                        value(g, d + 1, out);
                    }
                    out.push(']');
                }
                (1, d) if d < 4 => {
                    out.push('{');
                    for i in 0..(*g >> 8) % 3 {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(["\"a\"", "\"b\"", "\"\\u0061\""][((*g >> 12) % 3) as usize]);
                        out.push(':');
                        value(g, d + 1, out);
                    }
                    out.push('}');
                }
                _ => out.push_str(LEAVES[((*g >> 8) % LEAVES.len() as u64) as usize]),
            }
        }
        let mut g = 0x9e37_79b9_7f4a_7c15u64;
        let (mut accepted, mut duplicates) = (0, 0);
        for round in 0..20_000 {
            let mut text = String::new();
            value(&mut g, 0, &mut text);
            if round % 2 == 1 && !text.is_empty() {
                let at = (g >> 20) as usize % text.len();
                let replacement = ["", ",", "]", "}", "\"", "\\", "e", "0", " ", "-"][(g >> 40) as usize % 10];
                if text.is_char_boundary(at) && text.is_char_boundary(at + 1) {
                    text.replace_range(at..at + 1, replacement);
                }
            }
            let ours = check_text(&text);
            let theirs = serde_json::from_str::<Value>(&text);
            match (&ours, &theirs) {
                (Ok(_), Ok(_)) => accepted += 1,
                (Err(RecordBodyError::DuplicateKey { .. }), Ok(_)) => duplicates += 1,
                (Err(_), Err(_)) => {}
                _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
            }
        }
        assert!(accepted > 2_000 && duplicates > 200, "{accepted} accepted, {duplicates} duplicates");
    }
}
