//! `epiphany hooks install|uninstall`: wire epiphany into git and the agent hosts.
//!
//! Both subcommands compute a plan — file contents before and after, folders to remove, git
//! config keys — with the pure transformations of `policy::hooks` (for the agent hosts, the whole
//! plan comes from `policy::hooks::plan_host_install` and `plan_host_uninstall` over what was
//! read), then either print it (`--dry-run`) or apply it. Running either twice changes nothing
//! the second time.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::hooks::FileChange;
use crate::policy::hooks::Host;
use crate::policy::hooks::HostFile;
use crate::policy::hooks::HostPlan;
use crate::state::fs;
use crate::state::git;
use crate::state::problem::Problem;
use crate::ui::Report;

pub mod install;
mod lefthook;
pub mod uninstall;

/// Install or remove git hooks, the diff textconv, and agent session hooks.
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
    /// Git: hooks that refresh the index, and the diff textconv
    #[arg(long)]
    pub git: bool,
    /// Claude Code: `SessionStart` (every source, `compact` included) and `PreCompact` hooks
    /// in `.claude/settings.local.json`
    #[arg(long)]
    pub claude: bool,
    /// Codex: `SessionStart` (every source, `compact` included) and `PreCompact` hooks in
    /// `.codex/hooks.json`
    #[arg(long)]
    pub codex: bool,
    /// Git: also when `core.hooksPath` names a folder outside this repository, whose hooks
    /// run for every repository that uses it
    #[arg(long)]
    pub global: bool,
    /// Print what would change and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

impl Targets {
    /// The agent hosts named.
    pub fn hosts(&self) -> Vec<Host> {
        let mut hosts = Vec::new();
        if self.claude {
            hosts.push(Host::Claude);
        }
        if self.codex {
            hosts.push(Host::Codex);
        }
        hosts
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
    /// Folders to remove once the files are gone.
    pub remove_dirs: Vec<PathBuf>,
    /// Local git config keys.
    pub config: Vec<ConfigChange>,
    /// Who runs the git hooks and where epiphany's lines go, when `install` wires git.
    pub git_hooks: Option<GitHooks>,
}

/// Who runs the git hooks, and where epiphany's lines live.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct GitHooks {
    /// `lefthook` (its config names the hooks; it writes the scripts), `husky` (its tracked
    /// `.husky/` scripts), `pre-commit` (the framework owns a hook script and runs
    /// `<hook>.legacy`), or `git` (plain scripts in the hooks folder git runs).
    pub manager: &'static str,
    /// What showed it: the manager's config or the folder git runs hooks from.
    pub found: String,
    /// The files epiphany's lines are in (relative to the repository root when inside it).
    pub files: Vec<String>,
}

impl GitHooks {
    /// Hooks that are scripts in `hooks`, epiphany's lines in `files`.
    pub fn found_in(root: &Path, hooks: &Path, files: Vec<PathBuf>) -> GitHooks {
        let legacy = files
            .iter()
            .any(|file| file.extension().is_some_and(|ext| ext == "legacy"));
        let manager = match () {
            _ if hooks.ends_with(".husky") => "husky",
            _ if legacy => "pre-commit",
            _ => "git",
        };
        GitHooks {
            manager,
            found: shown(root, hooks),
            files: files.iter().map(|file| shown(root, file)).collect(),
        }
    }
}

/// `path` relative to the repository root when inside it, else as it is.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

impl Plan {
    /// Adds the changes to one agent host's settings.
    pub fn add(&mut self, host: HostPlan) {
        self.files.extend(host.files);
        self.remove_dirs.extend(host.remove_dirs);
    }
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
    /// Who runs the git hooks and where epiphany's lines are (`install` of the git hooks;
    /// `null` otherwise).
    git_hooks: Option<GitHooks>,
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
        if let Some(GitHooks {
            manager,
            found,
            files,
        }) = &self.git_hooks
        {
            let run_by = match *manager {
                "git" => format!("git runs the hooks in `{found}`"),
                manager => format!("{manager} runs the git hooks (`{found}`)"),
            };
            let files: Vec<String> = files.iter().map(|file| format!("`{file}`")).collect();
            writeln!(out, "{run_by}; epiphany's lines are in {}", files.join(", "))?;
        }
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

/// The `.gitattributes` lines earlier versions added to route the first store format to their
/// merge driver; install and uninstall take them out (the store's own `.gitattributes` needs
/// no driver).
pub fn legacy_attribute_lines() -> Vec<String> {
    vec![
        ".epiphany/rollout.jsonl merge=epiphany diff=epiphany".to_owned(),
        ".epiphany/state.msgpack merge=epiphany diff=epiphany -text".to_owned(),
    ]
}

/// The local git config keys of that merge driver, removed the same way.
pub const LEGACY_CONFIG_KEYS: [&str; 2] = ["merge.epiphany.name", "merge.epiphany.driver"];

/// The local git config key that lets `git diff` show a file marked `diff=epiphany` as text,
/// with its value for `exe`.
pub fn textconv_entry(exe: &str) -> (&'static str, String) {
    ("diff.epiphany.textconv", format!("{exe} textconv"))
}

/// What is on disk for the agent-host settings file at `relative` (under the repository root),
/// with the backup `install` keeps for it under `backups`.
pub fn read_host_file(root: &Path, backups: &Path, relative: &str) -> Result<HostFile> {
    let path = root.join(relative);
    let dir = path.parent().unwrap_or(root).to_path_buf();
    let backup_path = backups.join(format!(
        "{}.before-install",
        relative.trim_start_matches('.').replace('/', "-")
    ));
    // `.claude/` and `.codex/` can be committed as links (to a user's global settings): such a
    // folder is refused, never read or written through.
    let dir_entries = if fs::dirs_below(root, &dir)? {
        let entries = std::fs::read_dir(&dir)
            .with_context(|| format!("failed to read `{}`", dir.display()))?;
        Some(entries.count())
    } else {
        None
    };
    Ok(HostFile {
        text: read_optional(root, &path)?,
        backup: read_optional(root, &backup_path)?,
        path,
        backup_path,
        dir,
        dir_exists: dir_entries.is_some(),
        dir_entries: dir_entries.unwrap_or(0),
    })
}

/// Where `install` keeps the agent-host settings files as they were: in the git directory, out
/// of the work tree and out of git's history.
pub fn backups_dir(root: &Path) -> Result<PathBuf> {
    Ok(git::git_dir(root)?.join("epiphany"))
}

/// A settings file that is not JSON stops the subcommand before anything is written.
pub fn settings_error(problem: Problem) -> anyhow::Error {
    Failure::input(problem.to_string())
        .with_hint("fix or move the file, then rerun; nothing was changed")
        .into()
}

/// The most of a hook script, settings file or `.gitattributes` that is read.
const HOOK_FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// Reads a file that may not exist. In the work tree at `root` (which anyone can commit to)
/// no component below the root may be a link; in the git directory (which no commit reaches,
/// and whose `hooks/` some people link on purpose) only the file itself may not be. Either way
/// it must be a regular text file of at most 4 MiB.
pub fn read_optional(root: &Path, path: &Path) -> Result<Option<String>> {
    let bytes = fs::read_below(checked_from(root, path), path, HOOK_FILE_LIMIT)?;
    bytes
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| Failure::input(format!("`{}` is not UTF-8 text", path.display())))
        })
        .transpose()
        .map_err(Into::into)
}

/// Where the links on the way to `path` start to be refused: the work tree's root for a path
/// committed content can reach, else the directory holding the file.
fn checked_from<'a>(root: &'a Path, path: &'a Path) -> &'a Path {
    if in_work_tree(root, path) {
        root
    } else {
        path.parent().unwrap_or(path)
    }
}

/// Whether `path` lies in the work tree at `root`, outside its `.git`.
pub fn in_work_tree(root: &Path, path: &Path) -> bool {
    path.starts_with(root) && !path.starts_with(root.join(".git"))
}

/// The folder this repository's hook scripts are kept in: the common `hooks/` of every
/// worktree, or `core.hooksPath`; with husky (`core.hooksPath` = `.husky/_`, generated and
/// wiped by every `npm install`), the tracked `.husky/` whose scripts husky's run. A folder
/// outside the repository (a `core.hooksPath` in the global git config, shared by every
/// repository) is refused unless `global`.
pub fn git_hooks_dir(root: &Path, global: bool) -> Result<PathBuf> {
    let mut hooks = git::hooks_dir(root)?;
    if hooks.ends_with(".husky/_") {
        hooks.pop();
    }
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let inside = hooks.starts_with(real(root)) || hooks.starts_with(real(&git::common_dir(root)?));
    if !inside && !global {
        return Err(Failure::input(format!(
            "git runs this repository's hooks from `{}` (core.hooksPath), outside the repository: hooks there run for every repository that uses that folder",
            hooks.display()
        ))
        .with_hint("pass --global to change that folder anyway, or give this repository its own: `git config --local core.hooksPath .git/hooks`; nothing was changed")
        .into());
    }
    Ok(hooks)
}

/// The line the pre-commit framework writes into every hook script it owns.
const PRE_COMMIT_MARK: &str = "# File generated by pre-commit: https://pre-commit.com";

/// The script epiphany's block goes in for hook `name` in `dir`: the hook itself, or, when the
/// pre-commit framework owns it (and rewrites it on every `pre-commit install`), the
/// `<name>.legacy` script pre-commit runs before its own hooks.
pub fn hook_script(root: &Path, dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    let framework = read_optional(root, &path)?.is_some_and(|text| text.contains(PRE_COMMIT_MARK));
    Ok(match framework {
        true => dir.join(format!("{name}.legacy")),
        false => path,
    })
}

/// A change of the hook script at `path`: a new script is made executable, an existing one
/// keeps its mode (a hook someone disabled stays disabled).
pub fn hook_change(path: PathBuf, before: Option<String>, after: Option<String>) -> FileChange {
    let runs = runs(&path);
    let change = FileChange::new(path, before, after);
    match runs {
        true => change.executable(),
        false => change,
    }
}

/// Whether git runs the script at `path` (a missing one will be made to).
fn runs(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path).map_or(true, |meta| meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        true
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
            apply_file(root, change)?;
        }
        for dir in &plan.remove_dirs {
            std::fs::remove_dir(dir)
                .with_context(|| format!("failed to remove `{}`", dir.display()))?;
        }
        for key in plan.config.iter().filter(|c| c.action != "unchanged") {
            git::set_local_config(root, key.key, key.value.as_deref())?;
        }
    }
    let shown = |path: &Path| shown(root, path);
    let files = plan
        .files
        .iter()
        .map(|change| FileReport {
            path: shown(&change.path),
            action: change.action(),
        })
        .chain(plan.remove_dirs.iter().map(|dir| FileReport {
            path: format!("{}/", shown(dir)),
            action: "delete",
        }))
        .collect();
    ctx.ui.emit(&HooksReport {
        dry_run,
        git_hooks: plan.git_hooks,
        files,
        git_config: plan.config,
    })?;
    Ok(Status::Ok)
}

fn apply_file(root: &Path, change: &FileChange) -> Result<()> {
    let Some(text) = &change.after else {
        return std::fs::remove_file(&change.path)
            .with_context(|| format!("failed to delete `{}`", change.path.display()));
    };
    if let Some(parent) = change.path.parent() {
        if in_work_tree(root, parent) {
            fs::create_dirs_below(root, parent)?;
        } else {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("failed to create `{}`", parent.display()))?;
        }
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
