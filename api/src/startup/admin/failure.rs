//! Why an admin command failed, and the exit code each reason becomes.
//!
//! | exit code | meaning |
//! | --- | --- |
//! | 0 | done |
//! | 1 | nothing was asked of the gateway: no token, or an argument it cannot send |
//! | 2 | the command line does not parse (clap's usage error) |
//! | 3 | the gateway refused the request (a 4xx problem: fix the request) |
//! | 4 | the gateway failed (a 5xx problem), could not be reached, or answered what is not the admin API |
//! | 5 | the job waited for ended `failed` or `cancelled` |
//! | 130 | Ctrl-C stopped the waiting (the job keeps running) |

use std::process::ExitCode;

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
            Self::Problem { .. } | Self::Unexpected { .. } | Self::Unreachable { .. } => 4,
            Self::JobEnded { .. } => 5,
            Self::Interrupted(_) => 130,
        })
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
    }
}
