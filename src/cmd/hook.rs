//! `epiphany hook session-start|pre-compact`: the entry points agent hosts call.
//!
//! A hook must never break its host: whatever goes wrong (no store, a corrupt file, bad input,
//! even a panic) prints nothing on stdout, a warning on stderr, and exits 0.

use std::io::Read;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;

use anyhow::Result;
use serde_json::Value;
use serde_json::json;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::cmd::signals::observe;
use crate::policy::pressure::assess_pressure;
use crate::policy::reorient::plan_reorientation;
use crate::policy::session::HOST_INJECTION_CAP;
use crate::policy::session::pre_compact_directive;
use crate::policy::session::session_start_context;
use crate::state::store::Store;

/// Entry points for agent hosts (Claude Code, Codex); `hooks install` registers them.
///
/// Each reads the host's hook JSON on stdin (its `cwd` says which repository) and prints what
/// the host expects on stdout. They never fail the host: on any error they print nothing,
/// warn on stderr, and exit 0.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which hook
    #[command(subcommand)]
    pub event: Event,
}

/// The hook events.
#[derive(Debug, clap::Subcommand)]
pub enum Event {
    /// At session start (also after a compaction): the reorientation verdict and the bounded
    /// `<epiphany_state>` block, as `hookSpecificOutput.additionalContext`
    SessionStart {
        /// The host's injection cap, in characters
        #[arg(long, value_name = "N", default_value_t = HOST_INJECTION_CAP)]
        max_chars: usize,
    },
    /// Before compaction: the directive to save a checkpoint, when a state exists
    PreCompact,
}

/// The most hook input read from stdin; hosts send a small JSON object.
const MAX_HOOK_INPUT: u64 = 1024 * 1024;

/// Runs `hook`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| respond(ctx, &args.event)));
    std::panic::set_hook(previous);
    let failure = match outcome {
        Ok(Ok(Some(output))) => return ctx.ui.emit_text(&output).map(|()| Status::Ok),
        Ok(Ok(None)) => return Ok(Status::Ok),
        Ok(Err(err)) => format!("{err:#}"),
        Err(_) => "an internal error (a bug in epiphany)".to_owned(),
    };
    ctx.ui.warn(&format!("epiphany hook skipped: {failure}"));
    Ok(Status::Ok)
}

/// The hook's stdout, or `None` when there is nothing to say.
fn respond(ctx: &Ctx, event: &Event) -> Result<Option<String>> {
    let input = read_host_input(ctx)?;
    let dir = input
        .get("cwd")
        .and_then(Value::as_str)
        .map_or_else(|| ctx.cwd.clone(), |cwd| ctx.cwd.join(PathBuf::from(cwd)));
    let Ok(store) = Store::discover(&dir) else {
        return Ok(None);
    };
    let head = store.head()?;
    match event {
        Event::SessionStart { max_chars } => {
            let freshness = observe(ctx, &store, &head, None)?.freshness;
            let state = head.has_state().then_some(&head.state);
            let verdict = plan_reorientation(state, &freshness, &assess_pressure(None));
            let staleness = freshness.staleness();
            let context = session_start_context(state, &verdict, Some(&staleness), *max_chars);
            let output = json!({
                "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
            });
            Ok(Some(output.to_string() + "\n"))
        }
        Event::PreCompact => Ok(head.has_state().then(pre_compact_directive)),
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
