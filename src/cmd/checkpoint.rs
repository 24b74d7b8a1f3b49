//! `epiphany checkpoint set`: write the investigation checkpoint in one line.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WROTE_NOTHING;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::write_edit;
use crate::cmd::update::write_outcome_schema;
use crate::code_refs::resolve_typed_refs;
use crate::cmd::Tool;
use crate::policy::code_ref::parse_code_ref;
use crate::policy::one_line::work::CheckpointChanges;
use crate::policy::one_line::work::checkpoint_set;
use crate::state::model::CodeRef;
use crate::state::model::Disposition;
use crate::state::problem::Problem;

/// Write the investigation checkpoint: where the work stands, for whoever picks it up.
///
/// `checkpoint set` changes the values given and keeps the rest; the first checkpoint needs
/// `--focus` and `--next` (its id is `ck-<hex12>` of the focus, its kind `investigation`, its
/// disposition `resume_ready`). `--ref` and `--question` replace the checkpoint's lists when
/// given. The checkpoint is read as it stands when the write takes the store lock, so a
/// concurrent change of another of its values is kept. Example: `epiphany checkpoint set
/// --focus "lexer retry" --next "read the retry loop" --ref src/lexer.rs#retry`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// `checkpoint` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Create the checkpoint, or change the values given and keep the rest
    Set(SetArgs),
}

/// `checkpoint set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// What is being looked at
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// The next safe step
    #[arg(long = "next", value_name = "TEXT")]
    pub next_action: Option<String>,
    /// What was found so far
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// What kind of investigation (a new checkpoint's is `investigation`)
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Whether to resume as is or re-gather first
    #[arg(long, value_name = "DISPOSITION", value_parser = disposition)]
    pub disposition: Option<Disposition>,
    /// The code it concerns: PATH[:START[-END]][#SYMBOL] (repeatable; replaces its refs)
    #[arg(long = "ref", value_name = "REF", value_parser = parse_code_ref)]
    pub refs: Vec<CodeRef>,
    /// A question still open (repeatable; replaces its questions)
    #[arg(long = "question", value_name = "TEXT")]
    pub questions: Vec<String>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("The investigation checkpoint says what you are looking at and the next step, so a later session, or you after a compaction, can resume.").report(write_outcome_schema);

fn disposition(text: &str) -> Result<Disposition, Problem> {
    match text {
        "resume_ready" => Ok(Disposition::ResumeReady),
        "regather_required" => Ok(Disposition::RegatherRequired),
        other => Err(Problem::whole(format!(
            "`{other}` is no disposition; use `resume_ready` or `regather_required`"
        ))),
    }
}

/// Runs `checkpoint`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Action::Set(args) = &args.action;
    let SetArgs {
        focus,
        next_action,
        summary,
        kind,
        disposition,
        refs,
        questions,
        flags,
    } = args;
    let store = ctx.store()?;
    let changes = CheckpointChanges {
        focus: focus.as_deref(),
        next_action: next_action.as_deref(),
        summary: summary.as_deref(),
        kind: kind.as_deref(),
        disposition: *disposition,
        refs: (!refs.is_empty())
            .then(|| {
                resolve_typed_refs(ctx, refs, flags.allow_missing_paths, "--ref", WROTE_NOTHING)
            })
            .transpose()?,
        questions: (!questions.is_empty()).then(|| questions.clone()),
    };
    write_edit(ctx, &store, flags, "the checkpoint was not written", |state| {
        checkpoint_set(state, changes)
    })
}
