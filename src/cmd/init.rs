//! `epiphany init`: create the store at the root of the git work tree (or here, outside git).

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
use crate::policy::text::is_blank;
use crate::state::fs;
use crate::state::git;
use crate::state::patch::Patch;
use crate::state::rollout::Source;
use crate::state::store::STAGING_PREFIX;
use crate::state::store::STORE_DIR;
use crate::state::store::Store;
use crate::write::PatchWrite;
use crate::ui::Report;

/// Create the `.epiphany/` store.
///
/// The store goes at the root of the enclosing git work tree, or in the current directory when
/// there is none. It holds `rollout/` (the immutable records, in segment files that branches
/// only ever add) and `snapshots/` (cached folds of them), both meant to be committed; a
/// `.gitattributes` that lets git merge them with no set-up in any clone; and a `.gitignore`
/// for the derived `cache/` and the lock file.
/// Running `init` again is harmless: it says the store exists and exits 0. With `--objective`,
/// the store and its objective are created together or not at all; run again on a store that
/// has no objective yet (an interrupted or earlier `init`), it sets it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Record this objective as the first revision (when the store is new, or has no objective
    /// yet)
    #[arg(long, value_name = "TEXT")]
    pub objective: Option<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Create the store that keeps this repository's understanding (objective, graphs, observations, checkpoint). Call once before the first write; calling it again is harmless. `objective` records the goal at the same time.").idempotent().report(schema_of::<InitReport>);

/// What `init` did.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct InitReport {
    /// The directory that holds `.epiphany/`.
    pub root: String,
    /// The head revision.
    pub revision: u64,
    /// Whether this call created the store.
    pub created: bool,
}

impl Report for InitReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.created {
            writeln!(
                out,
                "created {}/.epiphany at revision {}",
                self.root, self.revision
            )
        } else {
            writeln!(
                out,
                "{}/.epiphany already exists (revision {})",
                self.root, self.revision
            )
        }
    }
}

/// Runs `init`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { objective } = args;
    if objective.as_deref().is_some_and(is_blank) {
        return Err(Failure::usage("`--objective` must not be empty").into());
    }
    let root = store_root(&ctx.cwd)?;
    let (store, created) = match objective {
        Some(objective) => create_with_objective(ctx, &root, objective)?,
        None => Store::create(&root)?,
    };
    let store = store.with_snapshot_every(ctx.snapshot_every);
    let mut revision = store.head()?.state.revision;
    if !created && store.give_identity(ctx.lock_timeout)? {
        ctx.ui.status("the store had no identity (it was created by an earlier version): `.epiphany/rollout/identity` now holds one, which its new records carry; commit it with them");
    }
    if let Some(objective) = objective.as_ref().filter(|_| !created) {
        if store.head()?.state.objective.is_some() {
            ctx.ui.warn(
                "the store already exists and has an objective; `--objective` was ignored (use `epiphany update`)",
            );
        } else {
            // An earlier `init` made the store without its objective (or was interrupted).
            revision = write_objective(ctx, &store, objective, revision)?;
            ctx.ui
                .status("the store already existed without an objective; it is set now");
        }
    }
    let landed = format!(
        "the store in `{}` is at revision {revision}",
        root.display()
    );
    let report = InitReport {
        root: root.display().to_string(),
        revision,
        created,
    };
    ctx.ui.emit_landed(&report, &landed);
    Ok(Status::Ok)
}

/// Creates the store with its objective as its first record, all or nothing: the store is
/// assembled in a temporary directory beside it, with the record written, and moved into
/// place in one rename. A run killed at any point leaves either no store (and a temporary
/// directory the next `init` removes) or the store with its objective. When the store exists
/// already (or another `init` wins the rename), it is opened instead.
fn create_with_objective(ctx: &Ctx, root: &Path, objective: &str) -> Result<(Store, bool)> {
    let dir = root.join(STORE_DIR);
    Store::set_aside_leftovers(root)?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        return Store::create(root);
    }
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(root)
        .with_context(|| format!("failed to create a directory in `{}`", root.display()))?;
    let (staged, _) = Store::create(staging.path())?;
    let staged = staged.with_snapshot_every(ctx.snapshot_every);
    write_objective(ctx, &staged, objective, 0)?;
    // Derived data and the lock stay behind: they name the temporary directory.
    let _ = std::fs::remove_dir_all(staged.cache_dir());
    let _ = std::fs::remove_file(staged.dir().join("lock"));
    match std::fs::rename(staged.dir(), &dir) {
        Ok(()) => {
            // The store is in place: a failing sync no longer refuses it.
            if let Err(err) = fs::sync_dir(root) {
                ctx.ui.warn(&format!(
                    "the store is created, but it may not survive a crash: {err:#}"
                ));
            }
            let (store, _) = Store::create(root)?;
            Ok((store, true))
        }
        Err(_) if std::fs::symlink_metadata(&dir).is_ok() => Store::create(root),
        Err(err) => Err(err).with_context(|| format!("failed to create `{}`", dir.display())),
    }
}

/// Writes `objective` as the store's objective, expecting revision `expected`; answers the
/// new revision.
fn write_objective(ctx: &Ctx, store: &Store, objective: &str, expected: u64) -> Result<u64> {
    let patch = Patch {
        objective: Some(objective.to_owned()),
        ..Patch::default()
    };
    let write = PatchWrite {
        source: Source::Init,
        changed_fields: patch.changed_fields(),
        patch,
        expected_revision: Some(expected),
        turn_id: None,
        allow_missing_paths: false,
        refs_from_cwd: false,
        malformed: None,
    };
    Ok(write.commit(ctx, store)?.committed.revision)
}

/// Where the store goes for a command run in `cwd`: the top of the git work tree, or `cwd`
/// outside git. Refused in a bare repository (it has no work tree, and `cwd` is git's own
/// directory) and inside another store's directory (every other command would find the outer
/// store from there).
fn store_root(cwd: &Path) -> Result<PathBuf> {
    if let Some(root) = git::work_tree_root(cwd) {
        return Ok(root);
    }
    if let Some(git_dir) = git::bare_git_dir(cwd) {
        return Err(Failure::usage(format!(
            "`{}` is in the bare git repository `{}`, which has no work tree for the store",
            cwd.display(),
            git_dir.display()
        ))
        .with_hint("run `epiphany init` in a clone or a worktree of it (`git worktree add <dir>`); nothing was created")
        .into());
    }
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    if let Some(store) =
        (canonical.ancestors()).find(|dir| dir.file_name() == Some(STORE_DIR.as_ref()))
    {
        let outer = store.parent().unwrap_or(store);
        return Err(Failure::usage(format!(
            "`{}` is inside the store `{}`; a store there would be nested in it",
            cwd.display(),
            store.display()
        ))
        .with_hint(format!(
            "run `epiphany init` in `{}` (the store is already there) or in a directory outside it; nothing was created",
            outer.display()
        ))
        .into());
    }
    Ok(cwd.to_path_buf())
}
