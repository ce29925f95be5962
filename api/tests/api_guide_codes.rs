//! The table of problem codes in `docs/api.md` is generated from the one code table of the code
//! (`Code` in `api/src/wire/error.rs`: every code, its status and what it means), and this test
//! fails when they drift apart. Rewrite it with
//! `SHARDGATE_BLESS=1 cargo test -p shardgate-api --test api_guide_codes`.

use std::fmt::Write as _;
use std::path::PathBuf;

use shardgate_api::wire::error::Code;

const BEGIN: &str = "<!-- codes:begin -->\n";
const END: &str = "<!-- codes:end -->";

#[test]
fn the_api_guide_lists_every_problem_code() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/api.md");
    let guide = std::fs::read_to_string(&path).expect("docs/api.md exists");
    let start = guide.find(BEGIN).expect("docs/api.md marks where the code table begins") + BEGIN.len();
    let end = guide[start..].find(END).expect("docs/api.md marks where the code table ends") + start;
    let table = code_table();
    if std::env::var_os("SHARDGATE_BLESS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &guide[..start], &guide[end..])).expect("write docs/api.md");
    }
    let guide = std::fs::read_to_string(&path).expect("docs/api.md exists");
    assert!(
        guide[start..].starts_with(&table) && guide[start + table.len()..].starts_with(END),
        "the code table of docs/api.md is out of date: run `SHARDGATE_BLESS=1 cargo test -p shardgate-api --test \
         api_guide_codes`"
    );
}

#[test]
fn the_table_has_a_row_per_code_with_its_status() {
    let table = code_table();
    assert_eq!(table.lines().count(), Code::ALL.len() + 2, "a header, a rule and a row per code");
    assert!(table.contains("| `record_not_found` | 404 Not Found |"), "{table}");
    assert!(table.contains("| `rate_limited` | 429 Too Many Requests |"), "{table}");
}

/// The Markdown table: code, status, meaning, in the code table's order.
fn code_table() -> String {
    let mut table = String::from("| code | status | meaning |\n| --- | --- | --- |\n");
    for code in Code::ALL {
        let status = code.status();
        let reason = status.canonical_reason().unwrap_or_default();
        let _ = writeln!(
            table,
            "| `{}` | {} {reason} | {} |",
            code.as_str(),
            status.as_u16(),
            code.meaning().replace('|', "\\|")
        );
    }
    table
}
