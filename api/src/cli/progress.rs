//! `--wait`: following a job to its switch, or with `--until-cleaned` to its end. The job is
//! read (`GET /v1/admin/jobs/{id}`) every [`POLL`]; on standard error a bar is redrawn in place
//! when it is a terminal, otherwise a line is written when the job's phase or percentage moves
//! (at most one every [`LINE_EVERY`]) and always at the end. Ctrl-C stops the waiting, never the
//! job.
//!
//! A move's switch is the moment its new placement is in force: its phase is `cleanup` (the
//! source's old copy waits out `storage.moves.cleanup_grace`, 60 s by default, and is removed)
//! or `done`. A rebalance or drain has switched when every one of its steps has (`cleanup` or
//! `done`). Waiting ends there by default: what follows changes nothing a client sees.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::output::bytes;
use super::printable::escaped;
use super::shape::JOB;

/// How often the job is read.
const POLL: Duration = Duration::from_millis(250);
/// The least time between two progress lines when standard error is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(1);
/// The bar's width in characters.
const BAR_WIDTH: usize = 30;

/// How the progress of a job waited for is drawn on standard error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Progress {
    /// A bar when standard error is a terminal, lines otherwise.
    #[default]
    Auto,
    /// A bar redrawn in place.
    Bar,
    /// A line whenever the job moves on (for logs and scripts).
    Lines,
    /// Nothing until the job ends.
    Quiet,
}

/// `--wait` and `--progress`, for the commands that start a job.
#[derive(Debug, Clone, Copy, Args)]
pub struct WaitArgs {
    /// Follow the job until it ends, drawing its progress on standard error (Ctrl-C stops the
    /// waiting, not the job); exit 5 if it fails or is cancelled.
    #[arg(long)]
    pub wait: bool,
    /// How to draw the progress while waiting: `auto` is a bar on a terminal and lines otherwise.
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    pub progress: Progress,
    /// With --wait: wait until the job has ended, its cleanup included (by default the waiting
    /// ends at the switch, when the new placement is in force).
    #[arg(long, requires = "wait")]
    pub until_cleaned: bool,
}

impl WaitArgs {
    /// Until when `--wait` follows the job.
    pub fn until(&self) -> Until {
        if self.until_cleaned { Until::Ended } else { Until::Switched }
    }
}

/// Until when a job is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Its switch (a job that has none: its end).
    Switched,
    /// Its end, cleanup included.
    Ended,
}

/// Whether `job`, still running, has switched: a move in `cleanup`, or a rebalance or drain
/// all of whose steps are (or are done).
pub fn switched(job: &Value) -> bool {
    let progress = job.get("progress").unwrap_or(&Value::Null);
    if let Some(phase) = progress.get("phase").and_then(Value::as_str) {
        return matches!(phase, "cleanup" | "done");
    }
    let steps = progress.get("steps").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    !steps.is_empty()
        && steps.iter().all(|step| matches!(step.get("state").and_then(Value::as_str), Some("cleanup" | "done")))
}

/// Where a job stands, as the bar shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stand {
    /// How far along, 0 to 100, when the job's progress says.
    pub percent: Option<f64>,
    /// What it is doing, in a few words.
    pub doing: String,
}

/// How far a move's first copy takes the bar, by the share of its bytes copied.
const COPY_SHARE: f64 = 90.0;
/// Where each later phase of a move puts the bar.
const PHASES: [(&str, f64); 4] = [("catch_up", 90.0), ("cut_over", 95.0), ("cleanup", 98.0), ("done", 100.0)];

/// Where `job` stands: a move (tenant, vshard, range, redistribution) by its phase and the share
/// of `bytes_to_copy` (or `rows_to_copy`) copied; a rebalance or drain by its steps ended; an
/// index backfill by the entries written (no percentage: its total is not known). A job that is
/// `done` is at 100%.
pub fn stand(job: &Value) -> Stand {
    let progress = job.get("progress").unwrap_or(&Value::Null);
    let state = job.get("state").and_then(Value::as_str).unwrap_or("");
    let number = |key: &str| progress.get(key).and_then(Value::as_u64);
    let mut stand = if let Some(phase) = progress.get("phase").and_then(Value::as_str) {
        move_stand(phase, progress, &number)
    } else if let Some(pending) = number("pending") {
        let (running, done, failed) =
            (number("running").unwrap_or(0), number("done").unwrap_or(0), number("failed").unwrap_or(0));
        let total = pending + running + done + failed;
        let ended = done + failed;
        Stand {
            percent: (total > 0).then(|| share(ended, total) * 100.0),
            doing: format!(
                "{ended} of {total} moves ended, {running} running{}",
                if failed > 0 { format!(", {failed} failed") } else { String::new() }
            ),
        }
    } else if let Some(indexed) = number("indexed") {
        Stand { percent: None, doing: format!("{indexed} entries written") }
    } else {
        Stand { percent: None, doing: state.to_owned() }
    };
    if state == "done" {
        stand.percent = Some(100.0);
    }
    stand
}

fn move_stand(phase: &str, progress: &Value, number: &dyn Fn(&str) -> Option<u64>) -> Stand {
    if phase == "copy" {
        let (copied, total, what) = match (number("bytes_copied"), number("bytes_to_copy")) {
            (Some(copied), Some(total)) if total > 0 => {
                (copied, total, format!("{} of {}", bytes(copied), bytes(total)))
            }
            _ => {
                let (copied, total) = (number("rows_copied").unwrap_or(0), number("rows_to_copy").unwrap_or(0));
                (copied, total, format!("{copied} of {total} rows"))
            }
        };
        let percent = if total > 0 { share(copied, total).min(1.0) * COPY_SHARE } else { 0.0 };
        return Stand { percent: Some(percent), doing: format!("copy {what}") };
    }
    let doing = match phase {
        "catch_up" => {
            format!(
                "catch_up (pass {}, {} rows behind)",
                number("passes").unwrap_or(0),
                number("lag_rows").unwrap_or(0)
            )
        }
        "rolled_back" => {
            let why = progress.get("rolled_back").and_then(Value::as_str).unwrap_or("rolled back");
            format!("rolled_back ({why})")
        }
        other => other.to_owned(),
    };
    let percent = PHASES.iter().find(|(name, _)| *name == phase).map(|(_, at)| *at);
    Stand { percent, doing }
}

impl Stand {
    /// `42% copy 1.2 MiB of 2.9 MiB`, or `? 3 entries written` when there is no percentage.
    pub fn summary(&self) -> String {
        format!("{} {}", percent_text(self.percent).trim_start(), self.doing)
    }
}

/// A percentage in four characters (` 42%`), `   ?` when unknown.
fn percent_text(percent: Option<f64>) -> String {
    percent.map_or_else(|| "   ?".to_owned(), |p| format!("{:>3.0}%", p.clamp(0.0, 100.0)))
}

fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole as f64
}

/// One progress line: `[####      ]  42% copy 1.2 MiB of 2.9 MiB` with a bar, `42% ...` without.
pub fn render(job_id: &str, stand: &Stand, with_bar: bool) -> String {
    let percent = percent_text(stand.percent);
    let (job_id, doing) = (escaped(job_id), escaped(&stand.doing));
    let stand = Stand { percent: stand.percent, doing };
    if with_bar {
        let filled = stand.percent.map_or(0, |p| ((p.clamp(0.0, 100.0) / 100.0) * BAR_WIDTH as f64).round() as usize);
        format!("[{}{}] {percent} {}", "#".repeat(filled), " ".repeat(BAR_WIDTH - filled), stand.doing)
    } else {
        format!("job {job_id}: {percent} {}", stand.doing)
    }
}

/// Follows the job `id` until it switches or ends (`until`), drawing its progress on standard
/// error as `progress` says, and answers it as it was then (see [`settled`]), or
/// [`Failure::Interrupted`] on Ctrl-C (the job keeps running).
pub async fn wait_for_job(client: &AdminClient, id: &str, progress: Progress, until: Until) -> Result<Value, Failure> {
    let path = format!("/v1/admin/jobs/{}", path_segment(id));
    let draw = match progress {
        Progress::Auto if std::io::stderr().is_terminal() => Progress::Bar,
        Progress::Auto => Progress::Lines,
        chosen => chosen,
    };
    let mut drawn = Drawn { kind: draw, last: None, last_line_at: None, bar_shown: false };
    let follow = async {
        loop {
            let job = client.get(&path, &[], &JOB).await?;
            let running = job.get("state").and_then(Value::as_str).is_none_or(|state| state == "running");
            let enough = !running || (until == Until::Switched && switched(&job));
            drawn.show(id, &stand(&job), enough);
            if enough {
                return Ok(job);
            }
            tokio::time::sleep(POLL).await;
        }
    };
    let ended = tokio::select! {
        ended = follow => ended,
        _ = tokio::signal::ctrl_c() => Err(Failure::Interrupted(id.to_owned())),
    };
    if drawn.bar_shown {
        eprintln!();
    }
    ended
}

/// Whether a job waited for ended as the command wanted (`done`; a cancellation also wants
/// `cancelled`), or switched while still running: says `job <id> ended <state>` or `job <id>
/// switched: ...` on standard error, or answers [`Failure::JobEnded`] with the job's error.
pub fn settled(job: &Value, wanted: &[&str]) -> Result<(), Failure> {
    let text = |key: &str| job.get(key).and_then(Value::as_str).map(str::to_owned);
    let (id, state) = (text("id").unwrap_or_default(), text("state").unwrap_or_default());
    if state == "running" && switched(job) {
        let id = escaped(&id);
        eprintln!(
            "job {id} switched: the new placement is in force; the old copy is removed after the cleanup grace \
             (follow that with `shardgate admin jobs wait {id} --until-cleaned`)"
        );
        Ok(())
    } else if wanted.contains(&state.as_str()) {
        eprintln!("job {} ended {}", escaped(&id), escaped(&state));
        Ok(())
    } else {
        Err(Failure::JobEnded { id, state, error: text("error") })
    }
}

/// What has been drawn so far.
struct Drawn {
    kind: Progress,
    last: Option<Stand>,
    last_line_at: Option<Instant>,
    bar_shown: bool,
}

impl Drawn {
    fn show(&mut self, id: &str, stand: &Stand, last: bool) {
        let mut stderr = std::io::stderr().lock();
        match self.kind {
            Progress::Bar => {
                // `\r` back to the line's start, `\x1b[K` clears what a longer line left.
                let _ = write!(stderr, "\r{}\x1b[K", render(id, stand, true));
                let _ = stderr.flush();
                self.bar_shown = true;
            }
            Progress::Lines => {
                let moved = self.last.as_ref() != Some(stand);
                let due = self.last_line_at.is_none_or(|at| at.elapsed() >= LINE_EVERY);
                if moved && (due || last) {
                    let _ = writeln!(stderr, "{}", render(id, stand, false));
                    self.last = Some(stand.clone());
                    self.last_line_at = Some(Instant::now());
                }
            }
            Progress::Auto | Progress::Quiet => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_move_stands_by_its_phase_and_the_bytes_copied() {
        let copying =
            json!({"state": "running", "progress": {"phase": "copy", "bytes_copied": 512, "bytes_to_copy": 1024}});
        assert_eq!(stand(&copying), Stand { percent: Some(45.0), doing: "copy 512 B of 1.0 KiB".into() });
        let nothing = json!({"state": "running", "progress": {"phase": "copy", "bytes_to_copy": 0, "rows_to_copy": 0}});
        assert_eq!(stand(&nothing).percent, Some(0.0));
        let cutting = json!({"state": "running", "progress": {"phase": "cut_over"}});
        assert_eq!(stand(&cutting).percent, Some(95.0));
        let done = json!({"state": "done", "progress": {"phase": "done", "bytes_copied": 9, "bytes_to_copy": 9}});
        assert_eq!(render("j1", &stand(&done), false), "job j1: 100% done");
        let odd = json!({"state": "running", "progress": {"phase": "\u{1b}[2J"}});
        assert_eq!(render("j\u{7}", &stand(&odd), false), r"job j\u{7}:    ? \u{1b}[2J");
    }

    #[test]
    fn a_job_has_switched_once_its_new_placement_is_in_force() {
        let phase = |phase: &str| json!({"state": "running", "progress": {"phase": phase}});
        assert!(!switched(&phase("copy")) && !switched(&phase("cut_over")) && !switched(&phase("rolled_back")));
        assert!(switched(&phase("cleanup")) && switched(&phase("done")));
        let steps = |states: &[&str]| {
            let steps: Vec<Value> = states.iter().map(|s| json!({"state": s})).collect();
            json!({"state": "running", "progress": {"pending": 0, "steps": steps}})
        };
        assert!(switched(&steps(&["cleanup", "done", "cleanup"])));
        assert!(!switched(&steps(&["cleanup", "running"])) && !switched(&steps(&["cleanup", "failed"])));
        assert!(!switched(&steps(&[])) && !switched(&json!({"state": "running", "progress": {"indexed": 3}})));
    }

    #[test]
    fn a_rebalance_stands_by_its_steps_ended() {
        let job = json!({"state": "running", "progress": {"pending": 1, "running": 2, "done": 1, "failed": 0}});
        assert_eq!(stand(&job), Stand { percent: Some(25.0), doing: "1 of 4 moves ended, 2 running".into() });
    }

    #[test]
    fn the_bar_fills_with_the_percentage() {
        let half = Stand { percent: Some(50.0), doing: "copy".into() };
        assert_eq!(render("j", &half, true), format!("[{}{}]  50% copy", "#".repeat(15), " ".repeat(15)));
        let unknown = Stand { percent: None, doing: "3 entries written".into() };
        assert_eq!(render("j", &unknown, false), "job j:    ? 3 entries written");
    }
}
