//! `hook pre-push` judges what is pushed: each commit git hands the hook on stdin, as a fresh
//! clone of the remote would have it after the push, never the work tree (whose uncommitted
//! `recheck` the remote never sees).
//!
//! A commit without a store passes. The commit checked out, in a work tree with no change at
//! all, is judged where it stands. Any other commit is checked out, sharing this repository's
//! objects, in a temporary directory, and judged there by this binary run as `hook pre-push
//! --work-tree` (a process of its own: git's variables for this repository, `GIT_DIR` in a
//! linked worktree, must not reach it). That costs a checkout of the commit's files.

use std::io::Read;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::state::git;
use crate::state::store::STORE_DIR;

/// The most of git's list of pushed refs that is read: a line per ref, a mirror of tens of
/// thousands of tags fits.
const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// One line git writes to the hook's stdin for each ref it pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pushed {
    /// The local ref pushed (`refs/heads/main`, or what the user typed).
    local_ref: String,
    /// The commit pushed.
    commit: String,
}

/// The refs pushed, from git's lines `<local ref> <local sha> <remote ref> <remote sha>`: a
/// deleted ref (its local sha all zeros) pushes no commit; a commit pushed under several names
/// is judged once.
fn pushed(input: &str) -> Result<Vec<Pushed>> {
    let mut found: Vec<Pushed> = Vec::new();
    for line in input.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [local_ref, commit, _, _] = fields[..] else {
            anyhow::bail!("git handed the hook a line it does not understand: `{line}`");
        };
        let deleted = commit.bytes().all(|byte| byte == b'0');
        if !deleted && found.iter().all(|seen| seen.commit != commit) {
            found.push(Pushed {
                local_ref: local_ref.to_owned(),
                commit: commit.to_owned(),
            });
        }
    }
    Ok(found)
}

/// Judges every commit pushed; the first refusal stops the push.
pub(super) fn judge_pushed(ctx: &Ctx, strict: bool) -> Result<Status> {
    let mut input = Vec::new();
    ctx.stdin().take(MAX_INPUT).read_to_end(&mut input)?;
    let commits = match pushed(&String::from_utf8_lossy(&input)) {
        Ok(commits) => commits,
        Err(err) => return super::cannot_check(ctx, strict, &format!("{err:#}")),
    };
    for push in commits {
        let status = match judge(ctx, strict, &push) {
            Ok(status) => status,
            Err(err) => super::cannot_check(ctx, strict, &super::problem_of(&err))?,
        };
        if status == Status::No {
            return Ok(Status::No);
        }
    }
    Ok(Status::Ok)
}

/// Judges one pushed commit.
fn judge(ctx: &Ctx, strict: bool, push: &Pushed) -> Result<Status> {
    let Some(root) = git::work_tree_root(&ctx.cwd) else {
        return Ok(Status::Ok);
    };
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let below = canonical(&ctx.cwd)
        .strip_prefix(canonical(&root))
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // The store the work tree's commands would find: the nearest `.epiphany/` up to the root.
    let Some(store_at) = below
        .ancestors()
        .find(|dir| git::commit_holds(&root, &push.commit, &dir.join(STORE_DIR)) == Some(true))
    else {
        return Ok(Status::Ok);
    };
    if git::head_commit(&root).as_deref() == Some(push.commit.as_str()) && git::is_clean(&root) {
        return super::pre_push(ctx, strict, true);
    }
    let checkout = tempfile::Builder::new()
        .prefix("epiphany-push-")
        .tempdir()
        .context("failed to create a temporary directory for the pushed commit")?;
    git::check_out_at(&root, &push.commit, checkout.path())?;
    judge_in(checkout.path().join(store_at), strict, push)
}

/// Runs this binary's `hook pre-push --work-tree` in `dir` of a checkout of `push`'s commit.
fn judge_in(dir: PathBuf, strict: bool, push: &Pushed) -> Result<Status> {
    let exe = std::env::current_exe().context("failed to locate the epiphany binary")?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("-C")
        .arg(&dir)
        .args(["hook", "pre-push", "--work-tree"])
        .args(strict.then_some("--strict"))
        .stdin(std::process::Stdio::null());
    for variable in git::LOCATING_VARIABLES {
        command.env_remove(variable);
    }
    let status = command
        .status()
        .with_context(|| format!("failed to check `{}` ({})", push.local_ref, push.commit))?;
    match status.code() {
        Some(0) => Ok(Status::Ok),
        Some(1) => Ok(Status::No),
        _ => anyhow::bail!(
            "the check of `{}` ({}) ended with {status}",
            push.local_ref,
            push.commit
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";
    const ZERO: &str = "0000000000000000000000000000000000000000";

    #[test]
    fn each_pushed_commit_once_and_no_deleted_ref() {
        let input = format!(
            "refs/heads/main {A} refs/heads/main {ZERO}\nrefs/heads/gone {ZERO} refs/heads/gone {B}\n\nrefs/tags/v1 {A} refs/tags/v1 {ZERO}\nHEAD {B} refs/heads/side {A}\n"
        );
        let found = pushed(&input).expect("parsed");
        assert_eq!(
            found,
            vec![
                Pushed {
                    local_ref: "refs/heads/main".to_owned(),
                    commit: A.to_owned()
                },
                Pushed {
                    local_ref: "HEAD".to_owned(),
                    commit: B.to_owned()
                },
            ]
        );
        assert!(pushed("").expect("nothing pushed").is_empty());
    }

    #[test]
    fn a_line_git_never_writes_is_refused() {
        let err = pushed("refs/heads/main 1111\n").expect_err("three fields short");
        assert!(err.to_string().contains("`refs/heads/main 1111`"), "{err}");
    }
}
