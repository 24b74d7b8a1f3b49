//! `epiphany init`: create the store at the root of the git work tree (or here, outside git).

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::cmd::update::PatchWrite;
use crate::cmd::update::commit_patch;
use crate::error::Failure;
use crate::mcp::Tool;
use crate::mcp::schema_of;
use crate::policy::text::is_blank;
use crate::state::git;
use crate::state::patch::Patch;
use crate::state::rollout::Source;
use crate::state::store::STORE_DIR;
use crate::state::store::Store;
use crate::ui::Report;

/// Create the `.epiphany/` store.
///
/// The store goes at the root of the enclosing git work tree, or in the current directory when
/// there is none. It holds `rollout/` (the immutable records, in segment files that branches
/// only ever add) and `snapshots/` (cached folds of them), both meant to be committed; a
/// `.gitattributes` that lets git merge them with no set-up in any clone; and a `.gitignore`
/// for the derived `cache/` and the lock file.
/// Running `init` again is harmless: it says the store exists and exits 0.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Record this objective as the first revision (only when the store is new)
    #[arg(long, value_name = "TEXT")]
    pub objective: Option<String>,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER.idempotent().report(schema_of::<InitReport>);

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
    let (store, created) = Store::create(&root)?;
    let store = store.with_snapshot_every(ctx.snapshot_every);
    let mut revision = store.head()?.state.revision;
    match objective {
        Some(objective) if created => {
            let patch = Patch {
                objective: Some(objective.clone()),
                ..Patch::default()
            };
            let write = PatchWrite {
                source: Source::Init,
                changed_fields: patch.changed_fields(),
                patch,
                expected_revision: Some(0),
                turn_id: None,
                allow_missing_paths: false,
            };
            revision = commit_patch(ctx, &store, write)?.committed.revision;
        }
        Some(_) => ctx
            .ui
            .warn("the store already exists; `--objective` was ignored (use `epiphany update`)"),
        None => {}
    }
    ctx.ui.emit(&InitReport {
        root: root.display().to_string(),
        revision,
        created,
    })?;
    Ok(Status::Ok)
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
