//! `epiphany note`: record one finding, question, decision or result in one line, as an
//! observation with the evidence record behind it, through the one write path.

use std::path::Path;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WROTE_NOTHING;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::input_failure;
use crate::cmd::update::write_from_flags;
use crate::cmd::update::write_outcome_schema;
use crate::code_refs::resolve_typed_refs;
use crate::cmd::Tool;
use crate::policy::code_ref::parse_code_ref;
use crate::policy::one_line::NOTE_KINDS;
use crate::policy::one_line::Note;
use crate::policy::one_line::note_patch;
use crate::state::model::CodeRef;

/// Record a note: one observation and its evidence, written at once.
///
/// The whole text is kept (up to 8,000 characters) in the evidence record; the observation's
/// summary is its first line (cut after its last sentence that fits in 320 characters). The
/// ids are `obs-<hex12>` and `ev-<hex12>` of the kind, status, text and code refs, so the same
/// note about two places gets two ids, and the same note twice is refused as already stored.
///
/// `--ref` takes `PATH[:START[-END]][#SYMBOL]` (repeatable), read from the current directory
/// (or, failing that, the repository root); the file must exist, the lines lie inside it and
/// the symbol occur in it. Example: `epiphany note "retry drops the span" --ref
/// src/lexer.rs:40-58#retry`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The note; `-` reads it from stdin
    #[arg(value_name = "TEXT", allow_hyphen_values = true)]
    pub text: String,
    /// Code the note concerns: PATH[:START[-END]][#SYMBOL] (repeatable)
    #[arg(long = "ref", value_name = "REF", value_parser = parse_code_ref)]
    pub refs: Vec<CodeRef>,
    /// What it is: the observation's `source_kind`
    #[arg(long, value_name = "KIND", default_value = "finding", value_parser = NOTE_KINDS)]
    pub kind: String,
    /// Its status (default: `open` for a question, `ok` otherwise)
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .arguments(&[("text", "The note: what was found, asked, decided or shown")])
    .about("Record a finding, question, decision or result in one call, with the code it concerns (`refs`, each `PATH[:START[-END]][#SYMBOL]`). The whole text is kept as evidence.").report(write_outcome_schema);

/// Runs `note`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        text,
        refs,
        kind,
        status,
        flags,
    } = args;
    let text = match text.as_str() {
        "-" => crate::input::read_document(ctx, Some(Path::new("-")))?.1,
        typed => typed.to_owned(),
    };
    let refs = resolve_typed_refs(ctx, refs, flags.allow_missing_paths, "--ref", WROTE_NOTHING)?;
    let (patch, written) = note_patch(Note {
        text: &text,
        refs,
        kind,
        status: status.as_deref(),
    })
    .map_err(|problems| input_failure("the note was not written", problems))?;
    let store = ctx.store()?;
    write_from_flags(ctx, &store, patch, flags, written)
}
