//! What the admin commands print on standard output: the API's JSON as it came (`--json`, one
//! document), or for people, aligned tables and `field: value` blocks built from that JSON.

use std::fmt::Write as _;

use serde_json::Value;

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
            println!("{}", serde_json::to_string_pretty(answer).unwrap_or_else(|_| answer.to_string()));
        } else {
            let text = for_people(answer);
            print!("{text}");
            if !text.is_empty() && !text.ends_with('\n') {
                println!();
            }
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

/// A JSON value as a person reads it: strings bare, `null` as `-`, others as JSON.
pub fn show(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
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
    }
}
