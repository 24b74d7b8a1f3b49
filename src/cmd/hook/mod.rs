//! `epiphany hook session-start|pre-compact|pre-push`: the entry points agent hosts and git
//! call.
//!
//! `pre-push` is git's: it refuses a push (exit 1) only when the map a pushed commit holds is
//! stale for that commit (see `pre_push`), by the rule of `freshness --check` without the
//! retrieval index, and says so; a commit without a store passes;
//! when it cannot check (an error, a history git cannot see) it warns and passes, or with
//! `--strict` refuses. The rest of this module is the agent hosts':
//!
//! A hook must never break its host: whatever goes wrong (a corrupt store, a git failure, even a
//! panic) exits 0, and the problem reaches the user through the one channel both hosts show
//! them, `systemMessage` (plus a warning on stderr). A repository without a store gets silence.
//!
//! What each host gets (see docs/hosts.md#agent-session-hooks):
//! - `SessionStart` (every source, `compact` included): `hookSpecificOutput.additionalContext`,
//!   which both hosts hand to the model, within the host's budget.
//! - `PreCompact`: neither host passes anything from it to the model, so it records the
//!   compaction (time, trigger, session, transcript) in the store's cache; the `SessionStart`
//!   with source `compact` that follows reads it back and says what happened.

use std::io::Read;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use anyhow::Result;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::ErrorKind;
use crate::error::classify;
use crate::cmd::Tool;
use crate::policy::freshness::PushVerdict;
use crate::policy::hooks::Host;
use crate::policy::pressure::assess_pressure;
use crate::policy::reorient::plan_reorientation;
use crate::policy::secrets::redacted;
use crate::policy::session::Budget;
use crate::policy::session::Compaction;
use crate::policy::session::pre_compact_problem;
use crate::policy::session::session_start_context;
use crate::policy::session::session_start_problem;
use crate::signals::observe;
use crate::state::fs;
use crate::state::snapshot::CHECKPOINT_ANCHOR;
use crate::state::store::Head;
use crate::state::store::Store;

mod pre_push;

/// Entry points for agent hosts (Claude Code, Codex); `hooks install` registers them.
///
/// Each reads the host's hook JSON on stdin (its `cwd` says which repository) and prints what
/// the host expects on stdout. They never fail the host: a problem exits 0 and is shown to the
/// user as the host's `systemMessage`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which hook
    #[command(subcommand)]
    pub event: Event,
}

/// Plumbing: not offered as an MCP tool.
pub const TOOL: Tool = Tool::PLUMBING;

/// The host that runs a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HostArg {
    /// Claude Code: context counted in characters (10,000)
    Claude,
    /// Codex: context counted as UTF-8 bytes / 4 tokens (2,500)
    Codex,
}

impl From<HostArg> for Host {
    fn from(host: HostArg) -> Host {
        match host {
            HostArg::Claude => Host::Claude,
            HostArg::Codex => Host::Codex,
        }
    }
}

/// The hook events.
#[derive(Debug, clap::Subcommand)]
pub enum Event {
    /// The agent hosts' events
    #[command(flatten)]
    Host(HostEvent),
    /// Before `git push` (`hooks install --pre-push` writes it): reads the refs git pushes on
    /// stdin and exits 1, refusing the push, only when the map a pushed commit holds is stale
    /// for that commit's code, by the rule of `freshness --check` without the retrieval index;
    /// a commit without a store passes; when the check cannot run, warns and passes
    PrePush {
        /// Refuse the push when the check cannot run, too
        #[arg(long)]
        strict: bool,
        /// Judge the work tree as it is instead of the commits git hands over on stdin
        #[arg(long)]
        work_tree: bool,
    },
}

/// The events of the agent hosts.
#[derive(Debug, clap::Subcommand)]
pub enum HostEvent {
    /// At session start (also right after a compaction): a compaction note when there was
    /// one, the reorientation verdict and the bounded `<epiphany_state>` block, as
    /// `hookSpecificOutput.additionalContext`
    SessionStart {
        /// The host that runs the hook, whose budget the context fits (`hooks install` writes
        /// it); without it, the context fits every host
        #[arg(long, value_enum)]
        host: Option<HostArg>,
        /// At most this many characters, within the host's budget
        #[arg(long, value_name = "N")]
        max_chars: Option<usize>,
    },
    /// Before compaction: records it, for the session start that follows
    PreCompact {
        /// The host that runs the hook (`hooks install` writes it)
        #[arg(long, value_enum)]
        host: Option<HostArg>,
    },
}

/// The most hook input read from stdin; hosts send a small JSON object.
const MAX_HOOK_INPUT: u64 = 1024 * 1024;
/// The file under the store's cache where `pre-compact` records compactions.
const COMPACTIONS_FILE: &str = "compactions.json";
/// How many compactions are remembered (one per concurrent session is plenty).
const COMPACTIONS_KEPT: usize = 20;
/// The most of the compaction notes that is read: far more than twenty records take.
const COMPACTIONS_LIMIT: u64 = 1024 * 1024;

/// Runs `hook`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    match &args.event {
        Event::Host(event) => host_hook(ctx, event),
        Event::PrePush { strict, work_tree } => pre_push(ctx, *strict, *work_tree),
    }
}

/// An agent host's hook: never fails the host (see the module docs).
fn host_hook(ctx: &Ctx, event: &HostEvent) -> Result<Status> {
    let problem = match caught(|| respond(ctx, event)) {
        Ok(Ok(Some(output))) => return print(ctx, &output),
        Ok(Ok(None)) => return Ok(Status::Ok),
        Ok(Err(err)) => problem_of(&err),
        Err(panic) => format!("an internal error (a bug in epiphany): {panic}"),
    };
    ctx.ui.warn(&format!("epiphany hook: {problem}"));
    let output = match event {
        HostEvent::SessionStart { .. } => {
            let (user, model) = session_start_problem(&problem);
            json!({
                "systemMessage": user,
                "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": model}
            })
        }
        HostEvent::PreCompact { .. } => json!({ "systemMessage": pre_compact_problem(&problem) }),
    };
    print(ctx, &output)
}

/// Runs `work`, turning a panic into what it said and where, for the report: the default
/// panic message on stderr is not what a host shows its user.
fn caught<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    let panicked: Arc<Mutex<Option<String>>> = Arc::default();
    let slot = Arc::clone(&panicked);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(panic_report(info));
    }));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(work));
    std::panic::set_hook(previous);
    outcome.map_err(|_| {
        let report = panicked.lock().unwrap_or_else(PoisonError::into_inner).take();
        report.unwrap_or_else(|| "a panic".to_owned())
    })
}

/// What a panic said, and where: `message at src/file.rs:LINE:COLUMN`.
fn panic_report(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = (payload.downcast_ref::<&str>().copied())
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic");
    match info.location() {
        Some(at) => format!("{message} at {}:{}:{}", at.file(), at.line(), at.column()),
        None => message.to_owned(),
    }
}

/// An error and its causes, in one line.
fn problem_of(err: &anyhow::Error) -> String {
    let mut problem = classify(err).message;
    for cause in err.chain().skip(1) {
        problem = format!("{problem}: {cause}");
    }
    problem
}

/// The map's verdict on a push of the work tree: it passes without a store.
fn push_verdict(ctx: &Ctx) -> Result<PushVerdict> {
    let store = match ctx.store() {
        Ok(store) => store,
        Err(err) if classify(&err).kind == ErrorKind::NoStore => return Ok(PushVerdict::Pass),
        Err(err) => return Err(err),
    };
    let head = store.head()?;
    Ok(observe(ctx, &store, &head, None)?.freshness.push_verdict())
}

/// `hook pre-push`: exit 1 refuses the push; everything it says goes to stderr, which git
/// shows the user.
fn pre_push(ctx: &Ctx, strict: bool, work_tree: bool) -> Result<Status> {
    // Run by hand, without git's list of refs on stdin, it judges the work tree.
    if !work_tree && !ctx.stdin_is_terminal() {
        return pre_push::judge_pushed(ctx, strict);
    }
    let why = match push_verdict(ctx) {
        Ok(PushVerdict::Pass) => return Ok(Status::Ok),
        Ok(PushVerdict::Stale(note)) => {
            ctx.ui.warn(&format!(
                "epiphany: the push is refused: the map is {note}; see `epiphany freshness` (skip the check with `git push --no-verify`)"
            ));
            return Ok(Status::No);
        }
        Ok(PushVerdict::Unknown(note)) => note,
        Err(err) => problem_of(&err),
    };
    cannot_check(ctx, strict, &why)
}

/// What the hook does when the map could not be checked (`why`): warns and lets the push go,
/// or with `--strict` refuses it.
fn cannot_check(ctx: &Ctx, strict: bool, why: &str) -> Result<Status> {
    if strict {
        ctx.ui.warn(&format!(
            "epiphany: the push is refused: the map could not be checked ({why}); `--pre-push=strict` refuses it (skip the check with `git push --no-verify`)"
        ));
        Ok(Status::No)
    } else {
        ctx.ui.warn(&format!(
            "epiphany: the map could not be checked ({why}); the push goes ahead unchecked"
        ));
        Ok(Status::Ok)
    }
}

fn print(ctx: &Ctx, output: &Value) -> Result<Status> {
    ctx.ui.emit_text(&(output.to_string() + "\n"))?;
    Ok(Status::Ok)
}

/// The hook's stdout as JSON, or `None` when there is nothing to say.
fn respond(ctx: &Ctx, event: &HostEvent) -> Result<Option<Value>> {
    let input = read_host_input(ctx)?;
    let dir = input
        .get("cwd")
        .and_then(Value::as_str)
        .map_or_else(|| ctx.cwd.clone(), |cwd| ctx.cwd.join(PathBuf::from(cwd)));
    let store = match ctx.store_in(&dir) {
        Ok(store) => store,
        Err(err) if classify(&err).kind == ErrorKind::NoStore => return Ok(None),
        Err(err) => return Err(err),
    };
    let head = store.head()?;
    match event {
        HostEvent::SessionStart { host, max_chars } => {
            let observed = observe(ctx, &store, &head, None)?;
            let freshness = observed.freshness;
            let state = head.has_state().then_some(&head.state);
            let verdict = plan_reorientation(state, &freshness, &assess_pressure(None));
            let staleness = freshness.staleness();
            let mut budget = Budget::for_host(host.map(Host::from));
            if let Some(max_chars) = max_chars {
                budget = budget.at_most_chars(*max_chars);
            }
            let compaction = (input.get("source").and_then(Value::as_str) == Some("compact"))
                .then(|| compaction_facts(&store, &head, &input));
            let code_map = state
                .map(|state| crate::cmd::map::compact_blocks(ctx, &store, state))
                .unwrap_or_default();
            let context = session_start_context(
                state,
                &verdict,
                Some(&staleness),
                compaction.as_ref().map(|compaction| (compaction, ctx.now)),
                &code_map,
                budget,
            );
            Ok(Some(json!({
                "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
            })))
        }
        HostEvent::PreCompact { .. } => {
            record_compaction(ctx, &store, &input)?;
            Ok(None)
        }
    }
}

/// The host's hook JSON; anything that is not a JSON object counts as empty.
fn read_host_input(ctx: &Ctx) -> Result<Value> {
    let mut bytes = Vec::new();
    ctx.stdin().take(MAX_HOOK_INPUT).read_to_end(&mut bytes)?;
    Ok(serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({})))
}

/// One compaction, as `pre-compact` saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CompactionRecord {
    /// When (RFC 3339).
    at: String,
    /// `manual` or `auto`.
    trigger: Option<String>,
    /// The host's session.
    session_id: Option<String>,
    /// The host's transcript of the session, when it gave one.
    transcript_path: Option<String>,
}

/// A text field of the host's input, redacted: `pre-compact` stores it in the cache, and a
/// host's session id or transcript path is not known to be free of secrets. A session is
/// matched by its redacted id, so the same id always finds its record.
fn text_field(input: &Value, key: &str) -> Option<String> {
    input
        .get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(|text| redacted(text).into_owned())
}

fn read_compactions(store: &Store) -> Vec<CompactionRecord> {
    fs::read_below(
        store.dir(),
        &store.cache_dir().join(COMPACTIONS_FILE),
        COMPACTIONS_LIMIT,
    )
    .ok()
    .flatten()
    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    .unwrap_or_default()
}

fn record_compaction(ctx: &Ctx, store: &Store, input: &Value) -> Result<()> {
    let mut records = read_compactions(store);
    records.push(CompactionRecord {
        at: ctx.now_rfc3339(),
        trigger: text_field(input, "trigger"),
        session_id: text_field(input, "session_id"),
        transcript_path: text_field(input, "transcript_path"),
    });
    let skip = records.len().saturating_sub(COMPACTIONS_KEPT);
    let records: Vec<CompactionRecord> = records.into_iter().skip(skip).collect();
    let dir = store.cache_dir();
    fs::create_dirs_below(store.root(), &dir)?;
    let mut bytes = serde_json::to_vec_pretty(&records)?;
    bytes.push(b'\n');
    fs::write_atomic(&dir.join(COMPACTIONS_FILE), &bytes)
}

/// What is known about the compaction before this `SessionStart(compact)`: the record of this
/// session's latest compaction, and when the investigation checkpoint was last written.
fn compaction_facts(store: &Store, head: &Head, input: &Value) -> Compaction {
    let session = text_field(input, "session_id");
    let record = read_compactions(store)
        .into_iter()
        .rev()
        .find(|record| session.is_none() || record.session_id == session);
    let checkpoint_saved_at = head
        .anchors
        .get(CHECKPOINT_ANCHOR)
        .and_then(|anchor| anchor.at.as_deref())
        .and_then(|at| at.parse().ok());
    Compaction {
        at: record.as_ref().and_then(|record| record.at.parse().ok()),
        trigger: record
            .and_then(|record| record.trigger)
            .or_else(|| text_field(input, "trigger")),
        checkpoint_saved_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_reported_with_its_message_and_location() {
        let line = line!() + 1;
        let report = caught(|| -> u8 { panic!("the state was {}", "odd") }).expect_err("panicked");
        assert_eq!(
            report.rsplit_once(':').map(|(at, _)| at),
            Some(format!("the state was odd at {}:{line}", file!()).as_str()),
            "{report}"
        );
        assert_eq!(caught(|| 7), Ok(7));
    }
}
