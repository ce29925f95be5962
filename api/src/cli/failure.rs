//! Why an admin command failed, and the exit code each reason becomes.
//!
//! | exit code | meaning |
//! | --- | --- |
//! | 0 | done |
//! | 1 | nothing was asked of the gateway: no token, or an argument it cannot send |
//! | 2 | the command line does not parse (clap's usage error) |
//! | 3 | the gateway refused the request (a 4xx problem: fix the request) |
//! | 4 | the gateway failed (a 5xx problem), could not be reached, or answered what is not the admin API (a redirect, more than [`MAX_ANSWER_MIB`] MiB, JSON of another shape) |
//! | 5 | the job waited for ended `failed` or `cancelled` |
//! | 130 | Ctrl-C stopped the waiting (the job keeps running) |

use std::process::ExitCode;

use super::printable::{escaped, shortened};

/// The most of an answer the CLI reads, in MiB: far more than any admin answer holds (a page of
/// 1,000 jobs is a few hundred KiB), far less than would hurt the operator's machine.
pub const MAX_ANSWER_MIB: usize = 16;
/// How much of a problem's detail is printed.
const DETAIL_CHARS: usize = 300;
/// How much of any other text from the gateway a message quotes.
const QUOTE_CHARS: usize = 200;

/// An admin command's failure. Its `Display` is the one line printed after `error: `.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// No token in `SHARDGATE_TOKEN`: exit 1.
    #[error(
        "no admin token: set SHARDGATE_TOKEN to a token with the admin scope, e.g. \
         `export SHARDGATE_TOKEN=$(shardgate token --admin)` (the token is never a command-line flag, \
         which shell history and `ps` would show)"
    )]
    NoToken,
    /// An argument the command cannot send: exit 1.
    #[error("{0}")]
    Usage(String),
    /// A problem (`application/problem+json`) the gateway answered with: exit 3 for 4xx, 4 for
    /// 5xx.
    #[error("{title}: {detail} (code {code}, HTTP {status})")]
    Problem {
        /// The HTTP status.
        status: u16,
        /// The HTTP reason phrase.
        title: String,
        /// What went wrong, for people.
        detail: String,
        /// The stable machine-readable code.
        code: String,
    },
    /// An answer that is neither what the command expects nor a problem (another server at the
    /// URL, a proxy's error page): exit 4.
    #[error("{url} answered HTTP {status}, which is not the shardgate admin API's answer: {excerpt}")]
    Unexpected {
        /// The URL asked.
        url: String,
        /// Its status.
        status: u16,
        /// The start of its body.
        excerpt: String,
    },
    /// A 2xx answer in JSON that is not what the command reads: exit 4.
    #[error("{url} answered HTTP {status} with JSON that is not the shardgate admin API's answer: {why}: {excerpt}")]
    Misshapen {
        /// The URL asked.
        url: String,
        /// Its status.
        status: u16,
        /// What is wrong with it (`a tenant has `id`: a string, not absent or null`).
        why: String,
        /// The start of its body.
        excerpt: String,
    },
    /// A redirect, which the CLI never follows (the token would go along to wherever it
    /// points): exit 4.
    #[error(
        "{url} answered HTTP {status}, a redirect to {location}, which is not the shardgate admin API's answer; the \
         CLI follows no redirect (the admin token would go along): give the gateway's own address in --url"
    )]
    Redirected {
        /// The URL asked.
        url: String,
        /// Its status.
        status: u16,
        /// Where it points (`-` when it does not say).
        location: String,
    },
    /// An answer longer than any admin answer, of which the CLI stopped reading: exit 4.
    #[error(
        "{url} answered more than {MAX_ANSWER_MIB} MiB, more than any shardgate admin answer; the CLI stopped \
         reading it (is --url the gateway's address?)"
    )]
    TooLarge {
        /// The URL asked.
        url: String,
    },
    /// The gateway could not be reached or did not answer in time: exit 4.
    #[error("cannot reach the gateway at {url}: {reason} (set --url or SHARDGATE_URL)")]
    Unreachable {
        /// The base URL used.
        url: String,
        /// Connection refused, timed out, ...
        reason: String,
    },
    /// The job waited for ended without being done: exit 5.
    #[error("job {id} ended {state}{}", .error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    JobEnded {
        /// The job's id.
        id: String,
        /// `failed` or `cancelled`.
        state: String,
        /// Why, when the job says.
        error: Option<String>,
    },
    /// Ctrl-C stopped the waiting: exit 130.
    #[error(
        "stopped waiting; job {0} keeps running (follow it again with `shardgate admin jobs wait {0}`, \
         cancel it with `shardgate admin jobs cancel {0}`)"
    )]
    Interrupted(String),
}

impl Failure {
    /// The process's exit code for this failure (the table in this module's doc).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::NoToken | Self::Usage(_) => 1,
            Self::Problem { status, .. } if *status < 500 => 3,
            Self::Problem { .. }
            | Self::Unexpected { .. }
            | Self::Misshapen { .. }
            | Self::Redirected { .. }
            | Self::TooLarge { .. }
            | Self::Unreachable { .. } => 4,
            Self::JobEnded { .. } => 5,
            Self::Interrupted(_) => 130,
        })
    }

    /// This failure as the terminal may show it: what came from the gateway (a problem's
    /// title, detail and code, a quoted body, a job's error, a URL) with its control characters
    /// escaped, and shortened.
    #[must_use]
    pub fn for_terminal(self) -> Self {
        let quote = |text: String| shortened(&escaped(&text), QUOTE_CHARS);
        match self {
            Self::Problem { status, title, detail, code } => Self::Problem {
                status,
                title: quote(title),
                detail: shortened(&escaped(&detail), DETAIL_CHARS),
                code: quote(code),
            },
            Self::Unexpected { url, status, excerpt } => {
                Self::Unexpected { url: quote(url), status, excerpt: quote(excerpt) }
            }
            Self::Misshapen { url, status, why, excerpt } => {
                Self::Misshapen { url: quote(url), status, why: quote(why), excerpt: quote(excerpt) }
            }
            Self::Redirected { url, status, location } => {
                Self::Redirected { url: quote(url), status, location: quote(location) }
            }
            Self::TooLarge { url } => Self::TooLarge { url: quote(url) },
            Self::Unreachable { url, reason } => Self::Unreachable { url: quote(url), reason: quote(reason) },
            Self::JobEnded { id, state, error } => Self::JobEnded {
                id: quote(id),
                state: quote(state),
                error: error.map(|e| shortened(&escaped(&e), DETAIL_CHARS)),
            },
            Self::Interrupted(id) => Self::Interrupted(quote(id)),
            Self::NoToken | Self::Usage(_) => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(status: u16) -> Failure {
        Failure::Problem { status, title: "t".into(), detail: "d".into(), code: "c".into() }
    }

    #[test]
    fn a_refused_request_and_a_failed_gateway_exit_differently() {
        assert_eq!(problem(404).exit_code(), ExitCode::from(3));
        assert_eq!(problem(409).exit_code(), ExitCode::from(3));
        assert_eq!(problem(503).exit_code(), ExitCode::from(4));
        let unreachable = Failure::Unreachable { url: "http://127.0.0.1:1".into(), reason: "refused".into() };
        assert_eq!(unreachable.exit_code(), ExitCode::from(4));
        assert_eq!(Failure::NoToken.exit_code(), ExitCode::from(1));
        let failed =
            Failure::JobEnded { id: "j".into(), state: "failed".into(), error: Some("checksums differ".into()) };
        assert_eq!(failed.exit_code(), ExitCode::from(5));
        assert_eq!(failed.to_string(), "job j ended failed: checksums differ");
        assert_eq!(problem(404).to_string(), "t: d (code c, HTTP 404)");
        let too_large = Failure::TooLarge { url: "http://h/v1/admin/jobs".into() };
        assert_eq!(too_large.exit_code(), ExitCode::from(4));
        assert!(too_large.to_string().contains("more than 16 MiB"), "{too_large}");
    }

    #[test]
    fn what_came_from_the_gateway_is_escaped_and_shortened() {
        let long = Failure::Problem {
            status: 404,
            title: "Not \u{1b}[2JFound".into(),
            detail: format!("\u{1b}]0;x\u{7}{}", "y".repeat(1000)),
            code: "c\r\nforged".into(),
        }
        .for_terminal()
        .to_string();
        assert!(!long.chars().any(char::is_control), "{long:?}");
        assert!(long.starts_with(r"Not \u{1b}[2JFound: \u{1b}]0;x\u{7}yyy"), "{long}");
        assert!(long.ends_with(r"… (code c\r\nforged, HTTP 404)"), "{long}");
        assert!(long.chars().count() < 400, "{}", long.chars().count());
    }
}
