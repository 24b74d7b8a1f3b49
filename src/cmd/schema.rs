//! `epiphany schema`: the JSON Schema of every `--json` report, generated from the report
//! types themselves, so the documented shape cannot drift from the printed one.

use std::io::Write;

use anyhow::Result;
use schemars::Schema;
use schemars::schema_for;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::error::ErrorDocument;
use crate::error::Failure;
use crate::ui::Report;

/// Print the JSON Schemas of the `--json` reports.
///
/// Without an argument, prints an object with one schema per command under `reports`, and the
/// schema of the error document every command prints on failure under `error`. With a command
/// name, prints that command's schema alone.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print only this command's report schema (`error` for the error document)
    pub command: Option<String>,
}

/// The schema of each command's `--json` report.
pub fn report_schemas() -> Vec<(&'static str, Schema)> {
    use crate::cmd;
    use crate::policy;
    vec![
        ("init", schema_for!(cmd::init::InitReport)),
        ("show", schema_for!(crate::state::model::State)),
        ("log", schema_for!(cmd::log::LogReport)),
        ("diff", schema_for!(cmd::diff::DiffReport)),
        ("rollback", schema_for!(cmd::update::WriteReport)),
        ("verify", schema_for!(cmd::verify::VerifyReport)),
        ("update", schema_for!(cmd::update::WriteReport)),
        ("distill", schema_for!(cmd::draft::DraftReport)),
        ("propose", schema_for!(cmd::draft::DraftReport)),
        ("promote", schema_for!(cmd::promote::PromoteReport)),
        ("scene", schema_for!(policy::scene::Scene)),
        ("context", schema_for!(policy::context::ContextShard)),
        ("graph", schema_for!(policy::graph_query::GraphQueryResult)),
        ("planning", schema_for!(policy::planning::PlanningView)),
        ("freshness", schema_for!(policy::freshness::Freshness)),
        ("pressure", schema_for!(policy::pressure::Pressure)),
        ("reorient", schema_for!(policy::reorient::Reorientation)),
        ("prompt", schema_for!(cmd::prompt::PromptReport)),
        ("index", schema_for!(cmd::index::IndexReport)),
        ("retrieve", schema_for!(cmd::retrieve::RetrieveReport)),
        ("hooks", schema_for!(cmd::hooks::HooksReport)),
    ]
}

struct SchemaReport(Value);

impl Serialize for SchemaReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl Report for SchemaReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &self.0)?;
        writeln!(out)
    }
}

/// Runs `schema`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { command } = args;
    let error = schema_for!(ErrorDocument).to_value();
    let mut reports: Map<String, Value> = report_schemas()
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema.to_value()))
        .collect();
    let document = match command.as_deref() {
        None => serde_json::json!({"reports": reports, "error": error}),
        Some("error") => error,
        Some(name) => reports.remove(name).ok_or_else(|| {
            Failure::usage(format!("`{name}` has no JSON report")).with_hint(format!(
                "choose one of: {}, error",
                report_schemas()
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
    };
    ctx.ui.emit(&SchemaReport(document))?;
    Ok(Status::Ok)
}
