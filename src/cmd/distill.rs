//! `epiphany distill`: draft one observation and its evidence record from text, typically tool
//! output piped in. Writes nothing.
//!
//! The text comes from `--text` or stdin; stdin is streamed through the policy's text digest,
//! so input of any size is read in bounded memory. All decisions (ids, summary, kinds) are
//! `policy::distill`'s; this module only gathers the input and prints the draft.

use std::io::Read;

use anyhow::Context;
use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::write::redaction_failure;
use crate::code_refs::resolve_typed_refs;
use crate::code_refs::RefAudit;
use crate::code_refs::warn_ref_notes;
use crate::error::ErrorKind;
use crate::error::Failure;
use crate::error::classify;
use crate::input::stream_text;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::code_ref::parse_code_ref;
use crate::policy::distill::BINARY_PROBE_BYTES;
use crate::policy::distill::BlankField;
use crate::policy::distill::DistillRequest;
use crate::policy::distill::TextDigest;
use crate::policy::distill::binary_summary;
use crate::policy::distill::looks_binary;
use crate::policy::one_line::NOTE_TEXT_LIMIT;
use crate::policy::secrets::redact_serialized;
use crate::policy::secrets::redactions;
use crate::render::DraftReport;
use crate::render::emit_draft;
use crate::state::model::CodeRef;

/// Draft an observation and its evidence from text; writes nothing.
///
/// The text comes from `--text`, or from stdin when `--text` is absent, so tool output can be
/// piped in: `cargo test 2>&1 | epiphany --json distill --source-kind shell-tool --status ok
/// --subject "cargo test"`. For tool, command, shell, model and assistant sources, and for
/// test, smoke and verification sources, the summary keeps what a test run or build reported:
/// its totals line (`cargo test`, `cargo nextest`, `pytest`, `go test`, `jest`, `vitest`), then
/// the first failing tests, panics and compiler errors with their locations. Other tool output
/// keeps its first lines naming errors or results, else warnings. The ids are derived from the
/// normalised input and the code refs, so the same input always drafts the same ids, and the
/// same text about two places drafts two.
///
/// The output is the `{"expected_revision", "patch"}` envelope that `update` and `promote`
/// read on stdin; when stdout is not a terminal it is printed as JSON even without `--json`,
/// so `epiphany distill ... | epiphany update` works as written. `expected_revision` is the
/// store's head revision, or 0 when there is no store (or no write) yet.
///
/// Code refs are `PATH[:START[-END]][#SYMBOL]`. A relative path is read from the current
/// directory (or, failing that, from the repository root) and drafted relative to the root.
/// The file must exist (unless `--allow-missing-paths`), the lines must lie inside it, and the
/// symbol must occur in it (inside the range when there is one); otherwise nothing is drafted
/// (exit 2).
///
/// The summary keeps at most 320 characters (for tool output, the salient lines); when it is
/// shorter than the text, stderr says so. Only the summary is drafted: to record a whole text
/// (up to 8,000 characters), write it with `epiphany note`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the text comes from (`shell-tool`, `test`, `smoke`, `model`, ...)
    #[arg(long, value_name = "KIND")]
    pub source_kind: String,
    /// Status of what was observed (`ok`, `pass`, `failed`, ...)
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    /// What the text is about; prefixes the summary (`cargo test`)
    #[arg(long, value_name = "TEXT")]
    pub subject: Option<String>,
    /// Evidence kind; defaults from the source kind (`verification`, `tool-output`, ...)
    #[arg(long, value_name = "KIND")]
    pub evidence_kind: Option<String>,
    /// Code the observation concerns: PATH[:START[-END]][#SYMBOL] (repeatable), relative to
    /// the current directory
    #[arg(long = "code-ref", value_name = "REF", value_parser = parse_code_ref)]
    pub code_refs: Vec<CodeRef>,
    /// Accept code refs naming files that do not exist yet (recorded as `planned`)
    #[arg(long)]
    pub allow_missing_paths: bool,
    /// The observed text; read from stdin when absent (may begin with `-`)
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub text: Option<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .arguments(&[("text", "The text to distill (or give it as `input`)")])
    .about("Draft an observation and its evidence from text such as test or build output, keeping its salient lines; writes nothing. Pass the result to `update`.")
    .input("The text to distill, when `text` is not given")
    .report(schema_of::<DraftReport>);

/// Runs `distill`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        source_kind,
        status,
        subject,
        evidence_kind,
        code_refs,
        allow_missing_paths,
        text,
    } = args;
    let code_refs = resolve_typed_refs(
        ctx,
        code_refs,
        *allow_missing_paths,
        "--code-ref",
        "nothing was drafted",
    )?;
    let planned: Vec<String> = (code_refs.iter())
        .filter(|code_ref| code_ref.planned)
        .map(|code_ref| format!("{} (--code-ref)", code_ref.path))
        .collect();
    warn_ref_notes(
        ctx,
        &RefAudit {
            planned,
            ..RefAudit::default()
        },
    );
    let request = DistillRequest::new(
        source_kind,
        status,
        subject.as_deref(),
        evidence_kind.as_deref(),
        code_refs,
    )
    .map_err(distill_failure)?;
    let digest = match text {
        Some(text) => TextDigest::of(text),
        None => digest_stdin(ctx)?,
    };
    let mut distilled = request.distill(digest).map_err(distill_failure)?;
    if distilled.shortened {
        ctx.ui.status(&format!(
            "note: the summary ({} characters) leaves out part of the text's {} characters, and \
             only the summary is drafted; to record the whole text, write it with \
             `epiphany note` (up to {NOTE_TEXT_LIMIT} characters)",
            distilled.observation.summary.chars().count(),
            distilled.text_chars
        ));
    }
    // A draft is printed and usually piped into a write: it carries no secret either. The
    // summary was redacted before it was cut; the rest is redacted here.
    let mut found = std::mem::take(&mut distilled.redactions);
    let patch = redact_serialized(distilled.into_patch(), &mut found).map_err(redaction_failure)?;
    for redaction in redactions(found) {
        ctx.ui.warn(&format!(
            "redacted {} {} secret(s) from the draft",
            redaction.count, redaction.kind
        ));
    }
    let report = DraftReport {
        expected_revision: head_revision(ctx)?,
        patch,
    };
    emit_draft(
        ctx,
        &report,
        "to record it, pipe it into `epiphany update`, or into `epiphany promote \
         --verifier-kind K --verifier-status S --verifier-summary T`",
    )?;
    Ok(Status::Ok)
}

fn digest_stdin(ctx: &Ctx) -> Result<TextDigest> {
    if ctx.stdin_is_terminal() {
        return Err(Failure::usage("no text to distill")
            .with_hint(
                "pass `--text TEXT`, or pipe the text in: `cargo test 2>&1 | epiphany distill ...`",
            )
            .into());
    }
    let mut stdin = ctx.stdin();
    let mut first = vec![0u8; BINARY_PROBE_BYTES];
    let filled = read_up_to(&mut stdin, &mut first).context("failed to read stdin")?;
    first.truncate(filled);
    if looks_binary(&first) {
        // Binary input has no lines to distill: count and checksum it at read speed instead
        // of decoding it byte by byte.
        let mut checksum = crc32fast::Hasher::new();
        checksum.update(&first);
        let mut total = first.len() as u64;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let read = match stdin.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err).context("failed to read stdin"),
            };
            checksum.update(&buffer[..read]);
            total += read as u64;
        }
        ctx.ui.warn(&format!(
            "stdin is binary ({total} bytes); the draft records its size and checksum, not its text"
        ));
        return Ok(TextDigest::of(&binary_summary(total, checksum.finalize())));
    }
    let mut digest = TextDigest::default();
    stream_text(std::io::Cursor::new(first).chain(stdin), |chunk| {
        digest.push(chunk)
    })
    .context("failed to read stdin")?;
    Ok(digest)
}

/// Reads until `buffer` is full or the input ends; answers how much was read.
fn read_up_to(reader: &mut dyn Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// The head revision, or 0 when there is no store: a draft needs no store, only applying it
/// does.
fn head_revision(ctx: &Ctx) -> Result<u64> {
    match ctx.store() {
        Ok(store) => Ok(store.head()?.state.revision),
        Err(err) if classify(&err).kind == ErrorKind::NoStore => Ok(0),
        Err(err) => Err(err),
    }
}

fn distill_failure(err: BlankField) -> anyhow::Error {
    let hint = match err {
        BlankField::SourceKind => "pass a non-blank `--source-kind`, e.g. `shell-tool`",
        BlankField::Status => "pass a non-blank `--status`, e.g. `ok` or `failed`",
        BlankField::Text => "pass a non-blank `--text`, or pipe non-blank text on stdin",
    };
    Failure::usage(format!("failed to distill Epiphany observation: {err}"))
        .with_hint(hint)
        .into()
}
