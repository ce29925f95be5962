//! `shardgate check`: checks a restored fleet for consistency and says what to do (see
//! `docs/check.md`). It reads the configuration as `shardgate migrate` does, opens the catalog
//! and every registered shard without changing them, runs shard-router's checks
//! ([`shardgate_shard_router::check`]: identity markers, vshard ownership, leftover rows, fences)
//! and index-tables' check of entries without records (the drift audit's rule,
//! [`shardgate_index_tables::dangling`]), and prints the findings as text or JSON.
//!
//! Exit status: 0 when clean, 1 when anything was found, 2 when something could not be checked
//! (the catalog, or a shard: that shard is a finding of its own, and the rest is still checked).
//!
//! With `--repair-usage` it first rewrites the kept usage of each shard where a tenant's usage
//! disagrees with its rows ([`repair_usage`]), then checks as without it.

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;
use shardgate_index_tables::{LiveIndex, find_dangling};
use shardgate_shard_router::ShardId;
use shardgate_shard_router::check::fleet::Fleet;
use shardgate_shard_router::check::{
    CatalogView, Finding, Findings, Grouped, Kind, Place, ShardUnderCheck, group, vshard_owners_unregistered,
};
use shardgate_shard_router::db::Database;

use crate::config::Config;

/// Exit status: nothing found.
pub const CLEAN: i32 = 0;
/// Exit status: findings.
pub const FOUND: i32 = 1;
/// Exit status: something could not be checked.
pub const INCOMPLETE: i32 = 2;

/// The report `--json` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    /// No finding, and everything was checked.
    pub clean: bool,
    /// Everything was checked (no shard unreachable, the catalog read).
    pub complete: bool,
    /// The catalog's id, if it could be read.
    pub catalog_id: Option<String>,
    /// The catalog's epoch, if its map could be read.
    pub epoch: Option<u64>,
    /// Shards the catalog registers.
    pub shards_registered: usize,
    /// Shards reached and checked.
    pub shards_checked: usize,
    /// Why the check stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The findings, each with the findings it causes nested under it as `consequences`
    /// (see [`group`]).
    pub findings: Vec<Grouped>,
    /// How many findings are nested as consequences (not counted in `findings`' length).
    pub consequences: usize,
}

impl Report {
    /// Takes `findings`, with consequences nested under their causes.
    fn set_findings(&mut self, findings: Findings) {
        self.findings = group(findings.into_list());
        self.consequences = self.findings.iter().map(|g| g.consequences.len()).sum();
    }

    /// The exit status this report calls for.
    pub fn exit_status(&self) -> i32 {
        if !self.complete {
            INCOMPLETE
        } else if self.findings.is_empty() {
            CLEAN
        } else {
            FOUND
        }
    }
}

/// Runs the check on the fleet `config` describes, prints the report (JSON if `json`), and
/// returns the exit status.
pub async fn run(config: &Config, json: bool, repair: bool) -> i32 {
    if repair {
        match repair_usage(config).await {
            Ok(repaired) => {
                for (shard, rows) in repaired {
                    eprintln!("repaired the kept usage of shard {shard} from its rows ({rows} usage rows written)");
                }
            }
            Err(e) => {
                eprintln!("the usage could not be repaired: {e}");
                return INCOMPLETE;
            }
        }
    }
    let report = check_fleet(config).await;
    let mut out = std::io::stdout().lock();
    let printed = if json {
        serde_json::to_string_pretty(&report).map_err(std::io::Error::other).and_then(|text| writeln!(out, "{text}"))
    } else {
        write_text(&mut out, &report)
    };
    if printed.and_then(|()| out.flush()).is_err() {
        return INCOMPLETE;
    }
    report.exit_status()
}

/// Rewrites, on each reachable shard where a tenant's kept usage disagrees with its rows, the
/// shard's kept usage from its rows (in one transaction that holds the shard's writers off:
/// [`shardgate_shard_router::storage::usage::rewrite_usage`]). The shards repaired, with how many
/// usage rows each now has.
pub async fn repair_usage(config: &Config) -> Result<Vec<(ShardId, u64)>, shardgate_shard_router::Error> {
    let mut findings = Findings::default();
    let fleet = Fleet::open(&config.storage, &config.data_dir, &mut findings).await?;
    let mut repaired = Vec::new();
    for shard in &fleet.shards {
        let mut disagreements = Findings::default();
        shardgate_shard_router::check::usage::check_usage(shard, &mut disagreements).await?;
        if !disagreements.into_list().is_empty() {
            let rows = shardgate_shard_router::storage::usage::rewrite_usage(&shard.db, &shard.id).await?;
            repaired.push((shard.id.clone(), rows));
        }
    }
    Ok(repaired)
}

/// Checks the fleet `config` describes.
pub async fn check_fleet(config: &Config) -> Report {
    let mut findings = Findings::default();
    let mut report = Report {
        clean: false,
        complete: false,
        catalog_id: None,
        epoch: None,
        shards_registered: 0,
        shards_checked: 0,
        stopped: None,
        findings: Vec::new(),
        consequences: 0,
    };
    let fleet = match Fleet::open(&config.storage, &config.data_dir, &mut findings).await {
        Ok(fleet) => fleet,
        Err(e) => {
            report.stopped = Some(format!("the catalog could not be read: {e}"));
            report.set_findings(findings);
            return report;
        }
    };
    report.catalog_id = Some(fleet.catalog_id.clone());
    report.shards_registered = fleet.rows.len();
    report.shards_checked = fleet.shards.len();
    let view = async {
        vshard_owners_unregistered(&fleet.catalog, &mut findings).await?;
        CatalogView::read(&fleet.catalog).await
    }
    .await;
    let view = match view {
        Ok(view) => view,
        Err(e) => {
            report.stopped = Some(format!("the catalog's map could not be read, so no shard was checked: {e}"));
            report.set_findings(findings);
            return report;
        }
    };
    report.epoch = Some(view.map.epoch);
    fleet.check_shards(&view, &mut findings).await;
    if let Err(e) = check_index_entries(&fleet, &view, &mut findings).await {
        report.stopped = Some(format!("the index definitions could not be read: {e}"));
    }
    report.complete = report.stopped.is_none() && !findings.incomplete();
    report.set_findings(findings);
    report.clean = report.complete && report.findings.is_empty();
    report
}

/// Index entries without records: every index of a tenant's current incarnation, on every
/// reachable shard, by the drift audit's rule.
async fn check_index_entries(
    fleet: &Fleet,
    view: &CatalogView,
    findings: &mut Findings,
) -> Result<(), shardgate_shard_router::Error> {
    let dbs: HashMap<ShardId, Database> = fleet.shards.iter().map(|s| (s.id.clone(), s.db.clone())).collect();
    for row in fleet.catalog.index_defs().await? {
        let Some(index) = LiveIndex::from_row(&row) else { continue };
        let current = view.map.tenants.get(index.tenant.as_str()).map(|t| t.incarnation.id);
        if current != Some(index.incarnation) {
            continue;
        }
        for ShardUnderCheck { id, db } in &fleet.shards {
            let place = Place::shard(id).tenant(index.tenant.as_str()).table("index_entries");
            let name = index.def.name();
            let collection = &index.collection;
            match find_dangling(&index, &view.map, (id, db), &dbs).await {
                Ok(found) if found.dangling > 0 => findings.push(Finding {
                    kind: Kind::IndexEntryWithoutRecord,
                    place,
                    found: format!(
                        "{} of {} entries of index {name} of collection {collection} on shard {id} name a record \
                         that does not exist or no longer holds their value (records {})",
                        found.dangling,
                        found.entries,
                        found.examples.join(", ")
                    ),
                    action: format!(
                        "Once the gateway runs, start the index's drift audit (POST /v1/admin/index-audits with \
                         {{\"tenant\": \"{}\", \"collection\": \"{collection}\", \"index\": \"{name}\"}}): it removes \
                         these entries and writes any missing ones. Look-ups never return them meanwhile.",
                        index.tenant
                    ),
                }),
                Ok(_) => {}
                Err(e) => findings.push(Finding {
                    kind: Kind::ShardUnreachable,
                    place,
                    found: format!(
                        "the entries of index {name} of collection {collection} on shard {id} could not be checked: {e}"
                    ),
                    action: format!("Make shard {id} readable, then run `shardgate check` again."),
                }),
            }
        }
    }
    Ok(())
}

/// The report as text: one block per finding, then a summary line.
fn write_text(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    if let Some(catalog) = &report.catalog_id {
        let epoch = report.epoch.map_or_else(|| "unknown".to_owned(), |e| e.to_string());
        writeln!(
            out,
            "catalog {catalog} at epoch {epoch}: {} shards registered, {} checked",
            report.shards_registered, report.shards_checked
        )?;
    }
    for grouped in &report.findings {
        writeln!(out)?;
        write_finding(out, &grouped.finding, "")?;
        let consequences = grouped.consequences.len();
        if consequences > 0 {
            writeln!(out, "  {consequences} consequences of it (deal with the cause first; they may go with it):")?;
            for consequence in &grouped.consequences {
                writeln!(out)?;
                write_finding(out, consequence, "    ")?;
            }
        }
    }
    if let Some(stopped) = &report.stopped {
        writeln!(out)?;
        writeln!(out, "stopped: {stopped}")?;
    }
    writeln!(out)?;
    match report.exit_status() {
        CLEAN => writeln!(out, "clean: no inconsistency found"),
        FOUND => writeln!(out, "{}", count_text(report)),
        _ => writeln!(out, "{}; the check is incomplete (see above)", count_text(report)),
    }
}

/// One finding as text, each line after `indent`.
fn write_finding(out: &mut impl Write, finding: &Finding, indent: &str) -> std::io::Result<()> {
    writeln!(out, "{indent}{}  {}", finding.kind.as_str(), where_text(&finding.place))?;
    writeln!(out, "{indent}  found: {}", finding.found)?;
    writeln!(out, "{indent}  do:    {}", finding.action)
}

/// "3 findings", and the consequences nested under them if any.
fn count_text(report: &Report) -> String {
    match report.consequences {
        0 => format!("{} findings", report.findings.len()),
        n => format!("{} findings, and {n} consequences nested under them", report.findings.len()),
    }
}

fn where_text(place: &Place) -> String {
    let mut parts = Vec::new();
    if let Some(shard) = &place.shard {
        parts.push(format!("shard={shard}"));
    }
    if let Some(tenant) = &place.tenant {
        parts.push(format!("tenant={tenant}"));
    }
    if let Some(vshard) = place.vshard {
        parts.push(format!("vshard={vshard}"));
    }
    if let Some(table) = &place.table {
        parts.push(format!("table={table}"));
    }
    parts.join(" ")
}
