//! `epiphany schema`: the JSON Schema of every `--json` report, generated from the report
//! types themselves, so the documented shape cannot drift from the printed one.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use schemars::Schema;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

use crate::cli::Cli;
use crate::cli::Ctx;
use crate::cli::Status;
use crate::error::ErrorDocument;
use crate::error::Failure;
use crate::mcp::Tool;
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

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER.report(any_object);

/// The schema of each command's `--json` report, from the `TOOL` each command declares (the same
/// schemas `mcp` offers as `outputSchema`), in the order of the command list.
pub fn report_schemas() -> Vec<(String, Schema)> {
    Cli::command()
        .get_subcommands()
        .filter(|command| command.get_name() != "schema")
        .filter_map(|command| {
            let report = crate::cmd::tool(command.get_name())?.report?;
            Some((command.get_name().to_owned(), report()))
        })
        .collect()
}

/// The report of `schema` itself: some JSON object.
fn any_object() -> Schema {
    schemars::json_schema!({"type": "object"})
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
    let error = crate::mcp::schema_of::<ErrorDocument>().to_value();
    let mut reports: Map<String, Value> = report_schemas()
        .into_iter()
        .map(|(name, schema)| (name, schema.to_value()))
        .collect();
    let document = match command.as_deref() {
        None => serde_json::json!({"reports": reports, "error": error}),
        Some("error") => error,
        Some(name) => reports.remove(name).ok_or_else(|| {
            Failure::usage(format!("`{name}` has no JSON report")).with_hint(format!(
                "choose one of: {}, error",
                report_schemas()
                    .into_iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
    };
    ctx.ui.emit(&SchemaReport(document))?;
    Ok(Status::Ok)
}
