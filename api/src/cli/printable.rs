//! What reaches the operator's terminal of what the gateway answered: its control characters
//! escaped, so that an escape sequence in a tenant's name or a problem's detail never acts on
//! the terminal (retitles it, clears it, moves the cursor, forges a line), and long text
//! shortened.
//!
//! Escaped are C0 controls and DEL (`\u{1b}` for ESC, `\n`, `\r`, `\t`), C1 controls
//! (U+0080–U+009F: U+009B is a one-character CSI on some terminals) and the bidirectional
//! controls (U+202A–U+202E, U+2066–U+2069), which show text reordered. Everything else is shown
//! as it came.

/// Whether the terminal must not receive `c` as it is.
fn is_unprintable(c: char) -> bool {
    c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c) || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `text` with every unprintable character escaped, newlines included: one line for a cell,
/// a field or a message.
pub fn escaped(text: &str) -> String {
    if !text.chars().any(is_unprintable) {
        return text.to_owned();
    }
    text.chars().map(escape).collect()
}

/// `text` (lines the CLI composed) with every unprintable character but its newlines escaped.
pub fn escaped_lines(text: &str) -> String {
    text.split('\n').map(escaped).collect::<Vec<_>>().join("\n")
}

/// JSON the CLI serialised, with the unprintable characters that JSON allows raw in strings (DEL,
/// C1 and bidirectional controls; `serde_json` already escapes C0) written as `\uXXXX`, which
/// is the same JSON.
pub fn escaped_json(json: &str) -> String {
    if !json.chars().any(is_unprintable) {
        return json.to_owned();
    }
    json.chars()
        .map(|c| if is_unprintable(c) && c != '\n' { format!("\\u{:04x}", u32::from(c)) } else { c.to_string() })
        .collect()
}

fn escape(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c if is_unprintable(c) => format!("\\u{{{:x}}}", u32::from(c)),
        c => c.to_string(),
    }
}

/// `text` cut to at most `max` characters, ending with `…` when cut.
pub fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_run() {
        assert_eq!(escaped("acme"), "acme");
        assert_eq!(escaped("\u{1b}]0;x\u{7}"), r"\u{1b}]0;x\u{7}");
        assert_eq!(escaped("a\r\nb\tc"), r"a\r\nb\tc");
        assert_eq!(escaped("\u{9b}31m \u{7f}"), r"\u{9b}31m \u{7f}");
        assert_eq!(escaped("admin\u{202e}gnp.exe"), r"admin\u{202e}gnp.exe");
        assert_eq!(escaped("Zürich – 東京"), "Zürich – 東京");
        assert_eq!(escaped_lines("ID\n\u{1b}[2J\n"), "ID\n\\u{1b}[2J\n");
    }

    #[test]
    fn json_keeps_its_meaning() {
        let value = serde_json::json!({"name": "a\u{1b}b\u{9b}c\u{202e}d"});
        let text = escaped_json(&serde_json::to_string_pretty(&value).unwrap());
        assert!(!text.chars().any(|c| is_unprintable(c) && c != '\n'), "{text:?}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
    }

    #[test]
    fn long_text_is_shortened() {
        assert_eq!(shortened("short", 10), "short");
        assert_eq!(shortened("0123456789abc", 10), "012345678…");
        assert_eq!(shortened("word     word", 6), "word…");
    }
}
