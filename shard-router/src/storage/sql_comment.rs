//! Trace context in SQL comments (the sqlcommenter convention): a shard statement run inside a
//! sampled trace is sent as `<statement> /*traceparent='00-<trace>-<span>-01'*/`, so the
//! database's own views of it (`pg_stat_activity`, its statement log, `auto_explain`) name the
//! trace and the span (the statement's or its batch's) that sent it.
//!
//! Only sampled statements carry a comment, and they are sent unprepared (`persistent(false)`):
//! a text that differs on every run would fill the connection's statement cache and evict the
//! prepared statements that the unsampled majority reuses. With traces off or a span not
//! sampled, the statement is the plain text, prepared as before; that costs one atomic load.
//!
//! This room knows nothing of OpenTelemetry: the gateway's telemetry hands it a function that
//! reads the current span's `traceparent` ([`install`]) when traces start.

use std::borrow::Cow;
use std::sync::OnceLock;

use sqlx::any::AnyArguments;
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, FromRow};

static TRACEPARENT: OnceLock<fn() -> Option<String>> = OnceLock::new();

/// Installs `traceparent`: the current span's W3C `traceparent` when it is sampled, else none.
/// Once per process; later calls are ignored.
pub fn install(traceparent: fn() -> Option<String>) {
    let _ = TRACEPARENT.set(traceparent);
}

/// A statement's text as sent from the current span: see the module documentation.
#[derive(Debug)]
pub struct Sql<'a> {
    text: Cow<'a, str>,
}

/// `sql` with the current span's trace context as a comment, when it is sampled.
pub fn traced(sql: &str) -> Sql<'_> {
    let traceparent = TRACEPARENT.get().and_then(|current| current());
    Sql { text: traceparent.map_or(Cow::Borrowed(sql), |traceparent| Cow::Owned(commented(sql, &traceparent))) }
}

/// `sql` followed by a sqlcommenter comment for `traceparent`, kept before a final `;`. The
/// value is hex digits and dashes: nothing in it needs escaping, and anything else is refused
/// (no comment rather than a comment that could end early).
fn commented(sql: &str, traceparent: &str) -> String {
    if !traceparent.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return sql.to_owned();
    }
    let body = sql.trim_end();
    let (body, end) = match body.strip_suffix(';') {
        Some(body) => (body, ";"),
        None => (body, ""),
    };
    format!("{body} /*traceparent='{traceparent}'*/{end}")
}

impl Sql<'_> {
    /// The text sent.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the text carries a trace comment (and is therefore sent unprepared).
    pub fn is_commented(&self) -> bool {
        matches!(self.text, Cow::Owned(_))
    }

    /// `sqlx::query` of the text, prepared unless it carries a comment.
    pub fn query(&self) -> Query<'_, Any, AnyArguments<'_>> {
        sqlx::query(self.text()).persistent(!self.is_commented())
    }

    /// `sqlx::query_scalar` of the text, prepared unless it carries a comment.
    pub fn query_scalar<O>(&self) -> QueryScalar<'_, Any, O, AnyArguments<'_>>
    where
        (O,): for<'r> FromRow<'r, sqlx::any::AnyRow>,
    {
        sqlx::query_scalar(self.text()).persistent(!self.is_commented())
    }

    /// `sqlx::query_as` of the text, prepared unless it carries a comment.
    pub fn query_as<O>(&self) -> QueryAs<'_, Any, O, AnyArguments<'_>>
    where
        O: for<'r> FromRow<'r, sqlx::any::AnyRow>,
    {
        sqlx::query_as(self.text()).persistent(!self.is_commented())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn the_comment_follows_the_statement_and_stays_before_its_semicolon() {
        assert_eq!(
            commented("SELECT 1", PARENT),
            "SELECT 1 /*traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/"
        );
        assert_eq!(
            commented("UPDATE t SET a = 1;\n", PARENT),
            "UPDATE t SET a = 1 /*traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/;"
        );
    }

    #[test]
    fn a_value_that_could_end_the_comment_is_left_out() {
        assert_eq!(commented("SELECT 1", "00-*/ DROP TABLE x; /*"), "SELECT 1");
    }

    #[test]
    fn without_traces_the_text_is_the_statement_and_prepared() {
        // No function installed in this test process: the plain, prepared statement.
        let sql = traced("SELECT 1");
        assert_eq!(sql.text(), "SELECT 1");
        assert!(!sql.is_commented());
    }
}
