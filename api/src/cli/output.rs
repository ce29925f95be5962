//! What the admin commands print on standard output: the API's JSON as it came (`--json`, one
//! document), or for people, aligned tables and `field: value` blocks built from that JSON.
//! Either way, no control character from an answer reaches the terminal raw ([`printable`]).

use std::fmt::Write as _;

use serde_json::Value;

use super::printable::{self, escaped, escaped_lines};

/// How a command prints its answer.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Print the API's JSON as-is instead of tables.
    pub json: bool,
}

impl Output {
    /// Prints `answer` as JSON, or what `for_people` makes of it.
    pub fn print(self, answer: &Value, for_people: impl FnOnce(&Value) -> String) {
        if self.json {
            let text = serde_json::to_string_pretty(answer).unwrap_or_else(|_| answer.to_string());
            println!("{}", printable::escaped_json(&text));
        } else {
            self.say(&for_people(answer));
        }
    }

    /// Prints `text` for people (nothing with `--json`), its control characters but newlines
    /// escaped, ending with a newline.
    pub fn say(self, text: &str) {
        if self.json || text.is_empty() {
            return;
        }
        let text = escaped_lines(text);
        print!("{text}");
        if !text.ends_with('\n') {
            println!();
        }
    }
}

/// A table with a header row; columns are padded to their widest cell (the last one is not).
#[derive(Debug)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(titles: &[&str]) -> Self {
        Self { rows: vec![titles.iter().map(|t| (*t).to_owned()).collect()] }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Whether the table has no row but its titles.
    pub fn is_empty(&self) -> bool {
        self.rows.len() == 1
    }

    /// The table as lines, or `empty` when it has no row.
    pub fn render_or(&self, empty: &str) -> String {
        if self.is_empty() {
            return format!("{empty}\n");
        }
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| self.rows.iter().filter_map(|r| r.get(c)).map(|cell| cell.chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<width$}  ", width = widths[c]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `name: value` lines, the values aligned.
#[derive(Debug, Default)]
pub struct Fields {
    pairs: Vec<(String, String)>,
}

impl Fields {
    /// Adds a field.
    pub fn add(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        self.pairs.push((name.to_owned(), value.into()));
        self
    }

    /// Adds a field for each `(name, key)`: `value[key]` as [`cell`] shows it.
    pub fn cells(&mut self, value: &Value, names: &[(&str, &str)]) -> &mut Self {
        for (name, key) in names {
            self.add(name, cell(value, key));
        }
        self
    }

    /// The fields as lines.
    pub fn render(&self) -> String {
        let width = self.pairs.iter().map(|(n, _)| n.chars().count() + 1).max().unwrap_or(0);
        let mut out = String::new();
        for (name, value) in &self.pairs {
            let _ = writeln!(out, "{:<width$} {value}", format!("{name}:"));
        }
        out
    }
}

/// `value[key]` as a person reads it: strings bare, `null` or absent as `-`, others as JSON.
pub fn cell(value: &Value, key: &str) -> String {
    show(value.get(key).unwrap_or(&Value::Null))
}

/// A JSON value as a person reads it, on one line: strings bare (their control characters
/// escaped), `null` as `-`, others as JSON.
pub fn show(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => escaped(s),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        other => other.to_string(),
    }
}

/// `value[key]` as a count of bytes in binary units (`1.5 MiB`), `-` when absent.
pub fn bytes_cell(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_u64).map_or_else(|| "-".to_owned(), bytes)
}

/// A count of bytes in binary units: `512 B`, `1.5 KiB`, `3.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut size = n as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// `value[key]`, a number, rounded for people: two decimals below 10, one below 100, none
/// from 100 on (`3.14`, `12.3`, `250`); `-` when absent.
pub fn number_cell(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_f64).map_or_else(|| "-".to_owned(), rounded)
}

/// A number rounded for people (see [`number_cell`]); whole numbers without decimals.
pub fn rounded(n: f64) -> String {
    let decimals = match n.abs() {
        a if a.fract() == 0.0 => 0,
        a if a < 10.0 => 2,
        a if a < 100.0 => 1,
        _ => 0,
    };
    format!("{n:.decimals$}")
}

/// `value[key]`, a share from 0 to 1, as a whole percentage (`33%`); `-` when absent.
pub fn percent_cell(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_f64).map_or_else(|| "-".to_owned(), |share| format!("{:.0}%", share * 100.0))
}

/// `text` with each list of numbers (`342, 343, 344, 400`) said as runs (`342–344, 400`): a
/// job's target lists every vshard it moves.
pub fn number_runs(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts_number = bytes[at].is_ascii_digit() && (at == 0 || !is_word_byte(bytes[at - 1]));
        if !starts_number {
            at += 1;
            continue;
        }
        let (numbers, end) = number_list(text, at);
        if numbers.len() >= 2 {
            out.push_str(&text[copied..at]);
            out.push_str(&runs(&numbers));
            copied = end;
        }
        at = end.max(at + 1);
    }
    out.push_str(&text[copied..]);
    out
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// The numbers of the list `N, N, ...` at `start`, and where it ends. A number glued to a word
/// (`3rd`) ends the list before it.
fn number_list(text: &str, start: usize) -> (Vec<u64>, usize) {
    let bytes = text.as_bytes();
    let (mut numbers, mut end, mut at) = (Vec::new(), start, start);
    loop {
        let digits = bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        let next = at + digits;
        let glued = bytes.get(next).is_some_and(|b| is_word_byte(*b) && *b != b'.');
        match text[at..next].parse::<u64>() {
            Ok(n) if digits > 0 && !glued => numbers.push(n),
            _ => break,
        }
        end = next;
        if text[next..].starts_with(", ") && bytes.get(next + 2).is_some_and(u8::is_ascii_digit) {
            at = next + 2;
        } else {
            break;
        }
    }
    (numbers, end)
}

/// `[1, 2, 3, 7]` as `1–3, 7`.
fn runs(numbers: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run_start = 0;
    for i in 0..numbers.len() {
        let ends = i + 1 == numbers.len() || numbers[i + 1] != numbers[i] + 1;
        if ends {
            parts.push(if run_start == i {
                numbers[i].to_string()
            } else {
                format!("{}\u{2013}{}", numbers[run_start], numbers[i])
            });
            run_start = i + 1;
        }
    }
    parts.join(", ")
}

/// The items of a page (`items`), or none.
pub fn items(page: &Value) -> &[Value] {
    page.get("items").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The line that says how to get the next page, when there is one.
pub fn next_page_hint(page: &Value) -> String {
    match page.get("next_cursor").and_then(Value::as_str) {
        Some(cursor) => format!("(more: add --cursor {cursor})\n"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_table_pads_every_column_but_the_last() {
        let mut table = Table::new(&["ID", "STATE", "NOTE"]);
        table.row(vec!["shard-10".into(), "active".into(), "x".into()]);
        table.row(vec!["s1".into(), "read_only".into(), "a longer note".into()]);
        assert_eq!(
            table.render_or("none"),
            "ID        STATE      NOTE\nshard-10  active     x\ns1        read_only  a longer note\n"
        );
        assert_eq!(Table::new(&["ID"]).render_or("no shards"), "no shards\n");
    }

    #[test]
    fn fields_align_their_values() {
        let mut fields = Fields::default();
        fields.add("id", "acme").add("pinned", "no");
        assert_eq!(fields.render(), "id:     acme\npinned: no\n");
    }

    #[test]
    fn values_read_as_people_write_them() {
        let v = json!({"s": "x", "n": null, "b": true, "i": 3, "size": 1536});
        assert_eq!(
            [cell(&v, "s"), cell(&v, "n"), cell(&v, "b"), cell(&v, "i"), cell(&v, "gone")],
            ["x", "-", "yes", "3", "-"]
        );
        assert_eq!(bytes_cell(&v, "size"), "1.5 KiB");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(show(&json!("a\u{1b}[2J\nb")), r"a\u{1b}[2J\nb");
    }

    #[test]
    fn numbers_are_rounded_for_people() {
        let v = json!({"small": 3.456_789, "mid": 12.345_678, "big": 1234.56, "whole": 30.0, "share": 0.333_3});
        assert_eq!(
            [number_cell(&v, "small"), number_cell(&v, "mid"), number_cell(&v, "big"), number_cell(&v, "whole")],
            ["3.46", "12.3", "1235", "30"]
        );
        assert_eq!((percent_cell(&v, "share"), number_cell(&v, "gone")), ("33%".to_owned(), "-".to_owned()));
    }

    #[test]
    fn lists_of_numbers_are_said_as_runs() {
        assert_eq!(
            number_runs("3 vshards (342, 343, 344): shard-0 -> shard-4"),
            "3 vshards (342–344): shard-0 -> shard-4"
        );
        assert_eq!(
            number_runs("vshards:1, 2, 3, 7, 9, 10 shard-1 -> shard-2"),
            "vshards:1–3, 7, 9–10 shard-1 -> shard-2"
        );
        assert_eq!(number_runs("shard-0, shard-1: 5 vshards"), "shard-0, shard-1: 5 vshards");
        assert_eq!(number_runs("1, 2nd, 3"), "1, 2nd, 3");
        assert_eq!(number_runs("tenant acme: shard-0 -> shard-3"), "tenant acme: shard-0 -> shard-3");
        assert_eq!(number_runs("4, 5 – Zürich"), "4–5 – Zürich");
    }
}
