//! `epiphany schema`: the JSON Schema of every `--json` report and of the patch input,
//! generated from the types themselves, so the documented shape cannot drift from the printed
//! one. The input schemas also carry the rules only validation enforces, in their
//! descriptions.

use anyhow::Result;
use clap::CommandFactory;
use schemars::Schema;
use serde_json::Map;
use serde_json::Value;

use crate::cmd::Cli;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::ErrorDocument;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::render::Document;

/// Print the JSON Schemas of the `--json` reports and of the patch input.
///
/// Without an argument, prints an object with one schema per command under `reports`, the
/// schema of the error document every command prints on failure under `error`, and the input
/// schemas under `inputs`. With a name, prints that schema alone: a command's report, `error`,
/// `patch` (what `update` and `promote` read) or `envelope` (`{"expected_revision", "patch"}`,
/// what `distill` and `propose` print). The input schemas carry, in their descriptions, the
/// rules only validation enforces (an observation must cite evidence, ids are new, code refs
/// must hold against the work tree, ...).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print only this schema: a command's report, `error`, `patch` or `envelope`
    pub command: Option<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The JSON Schema of a tool's full result, of the error document, or of the patch `update` takes.").report(any_object);

/// The schema of each command's `--json` report, from the `TOOL` each command declares (the same
/// schemas `mcp` offers as `outputSchema`), in the order of the command list.
pub fn report_schemas() -> Vec<(String, Schema)> {
    Cli::command()
        .get_subcommands()
        .filter(|command| command.get_name() != "schema")
        .filter_map(|command| {
            let report = crate::cmd::declared_tool(command.get_name())?.report?;
            Some((command.get_name().to_owned(), report()))
        })
        .collect()
}

/// The report of `schema` itself: some JSON object.
fn any_object() -> Schema {
    schemars::json_schema!({"type": "object"})
}

/// What validation enforces beyond the shape, by patch field in `PATCH_FIELDS` order
/// (docs/writes.md#update-checks, docs/writes.md#structural-validator).
const PATCH_RULES: &[(&str, &str)] = &[
    (
        "objective",
        "Must be non-blank: it can be replaced, never cleared once set.",
    ),
    (
        "active_subgoal_id",
        "Must be non-blank and name a subgoal (of this patch's `subgoals`, or the stored ones).",
    ),
    (
        "subgoals",
        "Each needs a non-blank, unique `id`, a `title` and a `status`.",
    ),
    (
        "invariants",
        "Each needs a non-blank, unique `id`, a `description` and a `status`.",
    ),
    (
        "graphs",
        "Replaces both graphs and the links. Nodes need a non-blank `id` (unique within its graph), `title` and `purpose`; edges need `source_id`, `target_id` and `kind`, with both ends among the same graph's nodes, and an `id`, when given, unique within the graph; links name an existing dataflow and architecture node, each pair once. Every code ref must hold (see CodeRef).",
    ),
    (
        "graph_frontier",
        "Id lists hold non-blank, unique ids; active node and edge ids must exist in the graphs (this patch's, or the stored ones). `dirty_paths` are resolved like code-ref paths and must exist in the work tree unless the write passes `--allow-missing-paths`; paths already stored pass unchanged.",
    ),
    (
        "graph_checkpoint",
        "Needs a non-blank `checkpoint_id`; `frontier_node_ids` must exist in the graphs.",
    ),
    ("scratch", "Free text; never validated."),
    (
        "investigation_checkpoint",
        "Needs a non-blank `checkpoint_id`, `kind`, `focus` and `next_action`; `evidence_ids` must be known (this patch's evidence or stored evidence); code refs must hold (see CodeRef).",
    ),
    (
        "job_bindings",
        "Each needs a non-blank, unique `id`, a `scope` and an `owner_role`.",
    ),
    (
        "acceptance_receipts",
        "Ids and result ids must be new; `accepted_evidence_id` must be known.",
    ),
    ("runtime_links", "Ids must be new."),
    (
        "observations",
        "Each needs a non-blank `id` (new: not stored, not repeated), `summary`, `source_kind` and `status`, and must cite at least one evidence id, each in this patch's `evidence` or already stored (under `promote`: in this patch or the verifier). Code refs must hold (see CodeRef). `supersedes`, when given, names a stored observation (or an earlier one of this patch) that this one replaces in every view.",
    ),
    (
        "evidence",
        "Each needs a non-blank `id` (new: not stored, not repeated), `kind`, `status` and `summary`. Code refs must hold (see CodeRef).",
    ),
    (
        "churn",
        "Needs a non-blank `understanding_status` and `diff_pressure`. Under `promote`, medium or higher pressure, or a broadened/expanded/semantic/updated `graph_freshness`, needs a `warning` and a strong verifier kind.",
    ),
    ("mode", "Free; `kind` is `plan` or `default`."),
    (
        "planning",
        "Ids are unique per list; roadmap streams and drafts may only name backlog items of this patch; drafts need at least one acceptance criterion; a `github_issue` source needs `repo` and `issue_number`.",
    ),
    (
        "upsert",
        "Each record replaces the one with the same key (id; edges without an id: source, target and kind; links: the node pair) or is added. A patch may not also replace the field a collection lives in. The state the write produces is validated whole: it may not gain a problem (an edge to a missing node, a frontier naming a missing node).",
    ),
    (
        "remove",
        "Each key must name an existing record; the state the write produces is validated whole, so removing a node means removing its edges and frontier entries too.",
    ),
    (
        "recheck",
        "Each node id must name a node of its graph (stored, or upserted by this patch), and `investigation_checkpoint` needs a checkpoint. Their values stay as they are; their anchors move to this write's commit, so files that changed before it no longer make them stale (`epiphany recheck` writes this).",
    ),
];

const PATCH_RULE: &str = "Validated on write (`update`, `promote`): it must change at least one field; every problem is listed and nothing is written when there is any (exit 2).";

const CODE_REF_RULE: &str = "Validated on write when it enters the state (references already stored pass unchanged): a relative `path` is read from the repository root, or else from the current directory, and stored relative to the root; it may not leave the repository; the file must exist in the work tree unless the write passes `--allow-missing-paths` (then `planned` is set); lines count from 1, `end_line` needs `start_line`, and `start_line` <= `end_line` <= the file's line count; a `symbol` must occur in the file (its last `::` or `.` segment as a whole identifier), inside the range when there is one.";

/// The input schemas: the patch, and the envelope drafts come in.
pub fn input_schemas() -> Vec<(&'static str, Value)> {
    let mut patch = crate::state::decode::patch_schema();
    annotate_patch(&mut patch);
    let mut envelope = crate::state::decode::envelope_schema();
    annotate_patch(&mut envelope);
    if let Some(object) = envelope.as_object_mut() {
        append_description(
            object,
            "`expected_revision`, when given, must be the store's head revision (else exit 3, nothing written); `--expected-revision` overrides it.",
        );
    }
    vec![("patch", patch), ("envelope", envelope)]
}

/// Adds the validation rules to the patch schema, whether it is the root or `$defs/Patch`.
fn annotate_patch(schema: &mut Value) {
    if let Some(code_ref) = schema
        .pointer_mut("/$defs/CodeRef")
        .and_then(Value::as_object_mut)
    {
        append_description(code_ref, CODE_REF_RULE);
    }
    let patch = if schema.pointer("/properties/observations").is_some() {
        schema
    } else {
        match schema.pointer_mut("/$defs/Patch") {
            Some(patch) => patch,
            None => return,
        }
    };
    let Some(object) = patch.as_object_mut() else {
        return;
    };
    append_description(object, PATCH_RULE);
    for (field, rule) in PATCH_RULES.iter().copied() {
        if let Some(property) = object
            .get_mut("properties")
            .and_then(|p| p.get_mut(field))
            .and_then(Value::as_object_mut)
        {
            append_description(property, rule);
        }
    }
}

fn append_description(object: &mut Map<String, Value>, rule: &str) {
    let text = match object.get("description").and_then(Value::as_str) {
        Some(existing) => format!("{existing} {rule}"),
        None => rule.to_owned(),
    };
    object.insert("description".to_owned(), Value::String(text));
}

/// Runs `schema`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { command } = args;
    let error = crate::cmd::schema_of::<ErrorDocument>().to_value();
    let mut reports: Map<String, Value> = report_schemas()
        .into_iter()
        .map(|(name, schema)| (name, schema.to_value()))
        .collect();
    let mut inputs: Map<String, Value> = input_schemas()
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect();
    let document = match command.as_deref() {
        None => serde_json::json!({"reports": reports, "error": error, "inputs": inputs}),
        Some("error") => error,
        Some(name) => inputs
            .remove(name)
            .or_else(|| reports.remove(name))
            .ok_or_else(|| {
                Failure::usage(format!("`{name}` has no JSON schema")).with_hint(format!(
                    "choose one of: {}, error, patch, envelope",
                    report_schemas()
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
    };
    ctx.ui.emit(&Document(document))?;
    Ok(Status::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::patch::PATCH_FIELDS;

    #[test]
    fn every_patch_field_has_one_rule() {
        let fields: Vec<&str> = PATCH_RULES.iter().map(|(field, _)| *field).collect();
        assert_eq!(fields, PATCH_FIELDS);
    }
}
