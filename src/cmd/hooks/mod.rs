//! `epiphany hooks install|uninstall`: wire epiphany into git and the agent hosts.
//!
//! Both subcommands compute a plan — file contents before and after, git config keys — with the
//! pure transformations of `policy::hooks`, then either print it (`--dry-run`) or apply it.
//! Running either twice changes nothing the second time.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::error::Failure;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::policy::hooks::AgentHook;
use crate::state::fs;
use crate::state::git;
use crate::ui::Report;

pub mod install;
pub mod uninstall;

/// Install or remove git hooks, the merge driver, and agent session hooks.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::PLUMBING.report(schema_of::<HooksReport>);

/// `hooks` subcommands.
#[derive(Debug, clap::Subcommand)]
#[allow(missing_docs)]
pub enum Action {
    Install(install::Args),
    Uninstall(uninstall::Args),
}

/// Runs `hooks`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    match &args.action {
        Action::Install(args) => install::run(ctx, args),
        Action::Uninstall(args) => uninstall::run(ctx, args),
    }
}

/// Which integrations a subcommand touches.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Targets {
    /// Git: hooks that refresh the index, the merge driver and diff textconv
    #[arg(long)]
    pub git: bool,
    /// Claude Code: `SessionStart` (including after compaction) and `PreCompact` hooks in
    /// `.claude/settings.json`
    #[arg(long)]
    pub claude: bool,
    /// Codex: a `SessionStart` hook in `.codex/hooks.json`
    #[arg(long)]
    pub codex: bool,
    /// Print what would change and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// One file to write or delete.
#[derive(Debug)]
pub struct FileChange {
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
    executable: bool,
}

impl FileChange {
    /// A change of `path` from its current content to `after` (`None` deletes it).
    pub fn new(path: PathBuf, before: Option<String>, after: Option<String>) -> FileChange {
        FileChange {
            path,
            before,
            after,
            executable: false,
        }
    }

    /// Marks the file as an executable script.
    pub fn executable(mut self) -> FileChange {
        self.executable = true;
        self
    }

    fn action(&self) -> &'static str {
        match (&self.before, &self.after) {
            (before, after) if before == after => "unchanged",
            (None, Some(_)) => "create",
            (Some(_), None) => "delete",
            _ => "update",
        }
    }
}

/// One key of the local git config to set or remove.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ConfigChange {
    key: &'static str,
    value: Option<String>,
    action: &'static str,
}

impl ConfigChange {
    /// Sets (`Some`) or removes (`None`) `key`, noting whether that changes anything.
    pub fn plan(root: &Path, key: &'static str, value: Option<String>) -> Result<ConfigChange> {
        let current = git::local_config(root, key)?;
        let action = match (&current, &value) {
            (current, value) if current == value => "unchanged",
            (_, Some(_)) => "set",
            (_, None) => "remove",
        };
        Ok(ConfigChange { key, value, action })
    }
}

/// Everything a hooks subcommand would do.
#[derive(Debug, Default)]
pub struct Plan {
    /// Files.
    pub files: Vec<FileChange>,
    /// Local git config keys.
    pub config: Vec<ConfigChange>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct FileReport {
    path: String,
    action: &'static str,
}

/// What a hooks subcommand did (or would do, with `--dry-run`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct HooksReport {
    dry_run: bool,
    files: Vec<FileReport>,
    git_config: Vec<ConfigChange>,
}

impl Report for HooksReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let verb = |action: &str| {
            if self.dry_run {
                format!("would {action}")
            } else {
                action.to_owned()
            }
        };
        let mut changed = false;
        for file in self.files.iter().filter(|f| f.action != "unchanged") {
            changed = true;
            writeln!(out, "{} {}", verb(file.action), file.path)?;
        }
        for key in self.git_config.iter().filter(|c| c.action != "unchanged") {
            changed = true;
            match &key.value {
                Some(value) => {
                    writeln!(out, "{} git config {} = {value}", verb(key.action), key.key)?
                }
                None => writeln!(out, "{} git config {}", verb(key.action), key.key)?,
            }
        }
        if !changed {
            writeln!(out, "nothing to change")?;
        }
        Ok(())
    }
}

/// The git hooks that refresh the index in the background after the work tree moves.
pub const INDEX_HOOKS: [&str; 3] = ["post-commit", "post-merge", "post-checkout"];
/// The opt-in hook that checks freshness before a push.
pub const PRE_PUSH_HOOK: &str = "pre-push";

/// Claude Code hooks: orientation at every session start (including right after a compaction)
/// and the checkpoint directive before compacting.
pub const CLAUDE_HOOKS: [AgentHook; 2] = [
    AgentHook {
        event: "SessionStart",
        matcher: "startup|resume|clear|compact",
        command: "epiphany hook session-start",
    },
    AgentHook {
        event: "PreCompact",
        matcher: "manual|auto",
        command: "epiphany hook pre-compact",
    },
];
/// Codex hooks: orientation at every session start.
pub const CODEX_HOOKS: [AgentHook; 1] = [AgentHook {
    event: "SessionStart",
    matcher: "startup|resume|clear",
    command: "epiphany hook session-start",
}];

/// The `.gitattributes` lines that route `.epiphany/` files to the merge driver and textconv.
pub fn attribute_lines() -> Vec<String> {
    vec![
        ".epiphany/rollout.jsonl merge=epiphany diff=epiphany".to_owned(),
        ".epiphany/state.msgpack merge=epiphany diff=epiphany -text".to_owned(),
    ]
}

/// The local git config keys of the merge driver and textconv, with their values for `exe`.
pub fn git_config_entries(exe: &str) -> [(&'static str, String); 3] {
    [
        (
            "merge.epiphany.name",
            "epiphany state merge (replays the other side's records)".to_owned(),
        ),
        (
            "merge.epiphany.driver",
            format!("{exe} merge-driver %O %A %B %P"),
        ),
        ("diff.epiphany.textconv", format!("{exe} textconv")),
    ]
}

/// Where Claude Code reads project hook settings.
pub fn claude_settings(root: &Path) -> PathBuf {
    root.join(".claude/settings.json")
}

/// Where Codex reads project hooks.
pub fn codex_hooks(root: &Path) -> PathBuf {
    root.join(".codex/hooks.json")
}

/// Plans an edit of an agent host's JSON settings file.
pub fn plan_settings(path: PathBuf, edit: impl FnOnce(Value) -> Value) -> Result<FileChange> {
    let before = read_optional(&path)?;
    let current: Value = match &before {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text).map_err(|err| {
            Failure::input(format!("`{}` is not valid JSON: {err}", path.display()))
                .with_hint("fix or move the file, then rerun; nothing was changed")
        })?,
        _ => json!({}),
    };
    let edited = edit(current);
    let after = (edited != json!({})).then(|| {
        serde_json::to_string_pretty(&edited)
            .map(|text| text + "\n")
            .unwrap_or_default()
    });
    let unchanged = before
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        == Some(edited);
    Ok(FileChange::new(
        path,
        before.clone(),
        if unchanged { before } else { after },
    ))
}

/// Reads a file that may not exist.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("failed to read `{}`", path.display())),
    }
}

/// The repository root hooks apply to: the git work tree that contains the working directory.
pub fn repository_root(ctx: &Ctx) -> Result<PathBuf> {
    git::work_tree_root(&ctx.cwd).ok_or_else(|| {
        Failure::usage(format!(
            "`{}` is not inside a git work tree",
            ctx.cwd.display()
        ))
        .with_hint("run `git init` first, or pass `-C <repository>`")
        .into()
    })
}

/// Prints the plan, applies it unless `dry_run`, and reports.
pub fn carry_out(ctx: &Ctx, root: &Path, plan: Plan, dry_run: bool) -> Result<Status> {
    if !dry_run {
        for change in plan.files.iter().filter(|c| c.action() != "unchanged") {
            apply_file(change)?;
        }
        for key in plan.config.iter().filter(|c| c.action != "unchanged") {
            git::set_local_config(root, key.key, key.value.as_deref())?;
        }
    }
    let files = plan
        .files
        .iter()
        .map(|change| FileReport {
            path: change
                .path
                .strip_prefix(root)
                .unwrap_or(&change.path)
                .display()
                .to_string(),
            action: change.action(),
        })
        .collect();
    ctx.ui.emit(&HooksReport {
        dry_run,
        files,
        git_config: plan.config,
    })?;
    Ok(Status::Ok)
}

fn apply_file(change: &FileChange) -> Result<()> {
    let Some(text) = &change.after else {
        return std::fs::remove_file(&change.path)
            .with_context(|| format!("failed to delete `{}`", change.path.display()));
    };
    if let Some(parent) = change.path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create `{}`", parent.display()))?;
    }
    fs::write_atomic(&change.path, text.as_bytes())?;
    if change.executable {
        make_executable(&change.path)?;
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("failed to make `{}` executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}
