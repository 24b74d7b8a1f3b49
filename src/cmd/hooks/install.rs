//! `epiphany hooks install`.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::hooks::ConfigChange;
use crate::cmd::hooks::GitHooks;
use crate::cmd::hooks::INDEX_HOOKS;
use crate::cmd::hooks::LEGACY_CONFIG_KEYS;
use crate::cmd::hooks::PRE_PUSH_HOOK;
use crate::cmd::hooks::Plan;
use crate::cmd::hooks::Targets;
use crate::cmd::hooks::backups_dir;
use crate::cmd::hooks::carry_out;
use crate::cmd::hooks::git_hooks_dir;
use crate::cmd::hooks::hook_change;
use crate::cmd::hooks::hook_script;
use crate::cmd::hooks::in_work_tree;
use crate::cmd::hooks::lefthook;
use crate::cmd::hooks::legacy_attribute_lines;
use crate::cmd::hooks::read_host_file;
use crate::cmd::hooks::read_optional;
use crate::cmd::hooks::repository_root;
use crate::cmd::hooks::settings_error;
use crate::cmd::hooks::textconv_entry;
use crate::error::Failure;
use crate::policy::hooks::FileChange;
use crate::policy::hooks::Host;
use crate::policy::hooks::foreign_interpreter;
use crate::policy::hooks::plan_host_install;
use crate::policy::hooks::plan_host_uninstall;
use crate::policy::hooks::shell_quote;
use crate::policy::hooks::with_hook_block;
use crate::policy::hooks::without_lines;
use crate::state::git;
use crate::state::problem::Problem;

/// Install git hooks, the diff textconv, and agent session hooks.
///
/// `--git` (the default when no target is named) adds `post-commit`, `post-merge` and
/// `post-checkout` hooks that refresh the retrieval index in the background without slowing
/// git, sets the diff textconv for files a `.gitattributes` marks `diff=epiphany` (local git
/// config; the store's own `.gitattributes` needs no merge driver: git merges it in any clone
/// without set-up), and
/// with `--pre-push` a check that refuses a push while the map a pushed commit holds is stale (the rule of
/// `freshness --check`, without the retrieval index): when the check cannot run (an error, or
/// the binary moved) it warns and lets the push go, and with `--pre-push=strict` it refuses.
/// Hooks go where git runs them: the repository's common `hooks/` (from a linked worktree
/// too) or `core.hooksPath`, refused outside the repository without `--global`; with
/// lefthook (a `lefthook.yml`), as commands in its machine-local `lefthook-local.yml`, which
/// its `install` keeps. It says which manager runs the hooks and where the lines are. Existing
/// hooks are kept: epiphany's block is chained in, marked, and removed again by `hooks
/// uninstall`; a hook that is not a shell script is refused, with the command line to call
/// from it. `--claude` (in
/// `.claude/settings.local.json`) and `--codex` (in `.codex/hooks.json`) register
/// `epiphany hook session-start` for every session start, the one after a compaction included,
/// and `epiphany hook pre-compact`, calling this binary by its absolute path; after moving or
/// reinstalling epiphany, run this again to point them at the new path. Running it twice
/// changes nothing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which integrations to install
    #[command(flatten)]
    pub targets: Targets,
    /// With git: also check the map before every push; `strict` refuses the push when the
    /// check cannot run
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "open"
    )]
    pub pre_push: Option<PrePush>,
}

/// What the pre-push hook does when the check cannot run (an error, a moved binary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrePush {
    /// Warn and let the push go
    Open,
    /// Refuse the push
    Strict,
}

/// How a hook script calls epiphany.
struct Caller {
    /// The command: this binary's absolute path, or `epiphany` on `PATH` in a hooks folder
    /// git does not ignore (the repository can track it, and every clone then runs it, on
    /// machines where epiphany lives elsewhere).
    exe: String,
    /// A shell test that the command is there.
    present: String,
}

impl Caller {
    fn of(exe: &Path, shared: bool) -> Caller {
        match shared {
            true => Caller {
                exe: "epiphany".to_owned(),
                present: "command -v epiphany >/dev/null 2>&1".to_owned(),
            },
            false => {
                let exe = shell_quote(&exe.display().to_string());
                let present = format!("[ -x {exe} ]");
                Caller { exe, present }
            }
        }
    }
}

/// The pre-push hook's lines: the check, and what a missing binary means.
fn pre_push_body(caller: &Caller, mode: PrePush) -> (String, String) {
    let Caller { exe, present } = caller;
    let (command, missing, flag) = match mode {
        PrePush::Open => (
            format!("{exe} hook pre-push"),
            "the push goes ahead unchecked",
            "--pre-push",
        ),
        PrePush::Strict => (
            format!("{exe} hook pre-push --strict"),
            "the push is refused (skip the check with git push --no-verify)",
            "--pre-push=strict",
        ),
    };
    // Inside double quotes: the path loses what the shell would expand there.
    let gone = format!(
        "echo \"epiphany: {} is missing; {missing}; rerun \\`epiphany hooks install {flag}\\`\" >&2",
        exe.replace(['"', '\\', '$', '`'], "")
    );
    let body = match mode {
        // Exit 1 is the check's verdict; any other failure was warned about by the check.
        PrePush::Open => {
            format!("if {present}; then {command} || [ $? -ne 1 ] || exit 1; else {gone}; fi")
        }
        PrePush::Strict => {
            format!("if {present}; then {command} || exit 1; else {gone}; exit 1; fi")
        }
    };
    (command, body)
}

/// Runs `hooks install`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { targets, pre_push } = args;
    let root = repository_root(ctx)?;
    let nothing_named = !(targets.git || targets.claude || targets.codex);
    let mut plan = Plan::default();
    if targets.git || nothing_named {
        let git_hooks = plan_git(ctx, &root, targets.global, *pre_push, &mut plan)?;
        plan.git_hooks = Some(git_hooks);
    }
    let hosts = targets.hosts();
    if !hosts.is_empty() {
        let exe = std::env::current_exe().context("failed to locate the epiphany binary")?;
        let exe = exe.display().to_string();
        let backups = backups_dir(&root)?;
        for host in &hosts {
            let file = read_host_file(&root, &backups, host.settings_path())?;
            plan.add(plan_host_install(&file, *host, &exe).map_err(settings_error)?);
            for legacy in host.legacy_paths() {
                let file = read_host_file(&root, &backups, legacy)?;
                plan.add(plan_host_uninstall(&file).map_err(settings_error)?);
            }
        }
        let flags: Vec<String> = hosts.iter().map(|h| format!("--{}", h.name())).collect();
        ctx.ui.hint(&format!(
            "the agent hooks run `{}`; after moving or reinstalling epiphany, run `epiphany hooks install {}` again",
            shell_quote(&exe),
            flags.join(" ")
        ));
        let local = Host::Claude.settings_path();
        if hosts.contains(&Host::Claude) && !git::is_ignored(&root, Path::new(local)) {
            ctx.ui.hint(&format!(
                "`{local}` holds this machine's path to epiphany: keep it out of git (Claude Code ignores it when it creates the file; here, add it to `.gitignore`)"
            ));
        }
        if hosts.contains(&Host::Codex) {
            ctx.ui.hint("Codex runs these hooks only after you review and trust them: open Codex in this project and approve them when it asks (a new binary path is a new command, to be approved again); hooks are on by default (`[features] hooks = true` in config.toml if they were turned off)");
        }
    }
    carry_out(ctx, &root, plan, targets.dry_run)
}

/// Plans the git hooks and the textconv; answers who runs the hooks and where the lines are.
fn plan_git(
    ctx: &Ctx,
    root: &Path,
    global: bool,
    pre_push: Option<PrePush>,
    plan: &mut Plan,
) -> Result<GitHooks> {
    let exe = std::env::current_exe().context("failed to locate the epiphany binary")?;
    let hooks = git_hooks_dir(root, global)?;
    let lefthook = lefthook::shared_config(root);
    // A folder git ignores is this machine's; one it does not, every clone may get.
    let shared = lefthook.is_none() && in_work_tree(root, &hooks) && !git::is_ignored(root, &hooks);
    if shared {
        ctx.ui.warn(&format!(
            "the hooks are in `{}`, which git does not ignore, so the repository can track it: they call `epiphany` from PATH, not this machine's `{}`, so every clone runs them wherever epiphany is installed",
            hooks.display(),
            exe.display()
        ));
    }
    let caller = Caller::of(&exe, shared);
    let mut lines = Vec::new();
    for name in INDEX_HOOKS {
        let command = format!("{} -q index", caller.exe);
        let body = format!("( {command} >/dev/null 2>&1 & )");
        lines.push((name, command, body));
    }
    if let Some(mode) = pre_push {
        let (command, body) = pre_push_body(&caller, mode);
        lines.push((PRE_PUSH_HOOK, command, body));
    }
    let found = match &lefthook {
        Some(config) => lefthook::plan(ctx, root, &hooks, config, &lines, plan)?,
        None => plan_scripts(root, &hooks, lines, plan)?,
    };
    let attributes = root.join(".gitattributes");
    if let Some(before) = read_optional(root, &attributes)? {
        let after = without_lines(&before, &legacy_attribute_lines());
        if after != before {
            let after = (!after.trim().is_empty()).then_some(after);
            plan.files
                .push(FileChange::new(attributes, Some(before), after));
        }
    }
    for key in LEGACY_CONFIG_KEYS {
        plan.config.push(ConfigChange::plan(root, key, None)?);
    }
    let (key, value) = textconv_entry(&shell_quote(&exe.display().to_string()));
    plan.config.push(ConfigChange::plan(root, key, Some(value))?);
    Ok(found)
}

/// Chains epiphany's `lines` (hook, command, shell body) into the hook scripts in `hooks`
/// (or the `.legacy` scripts the pre-commit framework runs); a script in another language is
/// refused with the command to call from it.
fn plan_scripts(
    root: &Path,
    hooks: &Path,
    lines: Vec<(&str, String, String)>,
    plan: &mut Plan,
) -> Result<GitHooks> {
    let mut foreign = Vec::new();
    let mut blocks = Vec::new();
    for (name, command, body) in lines {
        let path = hook_script(root, hooks, name)?;
        let before = read_optional(root, &path)?;
        match before.as_deref().and_then(foreign_interpreter) {
            Some(interpreter) => foreign.push(Problem::new(
                path.display().to_string(),
                format!(
                    "runs with `{interpreter}`: have it run `{command}`{}",
                    match name == PRE_PUSH_HOOK {
                        true => " and refuse the push when that exits 1",
                        false => " in the background",
                    }
                ),
            )),
            None => {
                blocks.push(path.clone());
                plan.files.push(script_change(path, before, &body));
            }
        }
    }
    if !foreign.is_empty() {
        return Err(Failure::input(
            "epiphany's hook lines are shell code; they cannot be chained into a hook written in another language",
        )
        .with_problems(foreign)
        .with_hint("call epiphany from those hooks yourself with the command lines above (or make them shell scripts), then rerun; nothing was changed")
        .into());
    }
    Ok(GitHooks::found_in(root, hooks, blocks))
}

fn script_change(path: PathBuf, before: Option<String>, body: &str) -> FileChange {
    let after = with_hook_block(before.as_deref(), body);
    hook_change(path, before, Some(after))
}
