//! The live signals projections read besides the state: the retrieval index summary, the
//! work tree's changes since each anchored record was written, and the cited files as they are
//! now.
//!
//! This is where `freshness`, `reorient`, `scene`, `prompt` and the session-start hook touch
//! the outside world (git, the index, the cited files), through the one [`observe`]; the
//! policies they feed stay pure. Inside git the changes come from git: committed, staged,
//! unstaged and untracked files since each anchor commit, `.epiphany/` excluded, renames
//! followed. Outside git they fall back to the retrieval index manifest's dirty paths.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;

use crate::code_refs::read_cited_files;
use crate::code_refs::read_cited_files_at;
use crate::ctx::Ctx;
use crate::error::Failure;
use crate::policy::freshness::ChangeSource;
use crate::policy::freshness::Freshness;
use crate::policy::freshness::WatcherInput;
use crate::policy::freshness::WorkTreeChanges;
use crate::policy::freshness::assess_freshness;
use crate::policy::freshness::commits_to_compare;
use crate::policy::freshness::definitions_to_compare;
use crate::policy::freshness::manifest_changes;
use crate::policy::recheck::paths_to_read;
use crate::search;
use crate::search::definitions::DefinitionCache;
use crate::search::syntax::Tags;
use crate::state::git;
use crate::state::model::RetrievalState;
use crate::state::model::State;
use crate::state::store::Head;
use crate::state::store::Revision;
use crate::state::store::STORE_DIR;
use crate::state::store::Store;

/// What the projections read besides the state, observed once per command.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The retrieval index summary (docs/retrieval.md#retrieval-summary).
    pub retrieval: RetrievalState,
    /// Freshness: the index, the graph, the work tree's changes, every reference re-checked.
    pub freshness: Freshness,
    /// Commits records were written at that this repository lacks and nothing could stand in
    /// for (a shallow clone cut off before the records entered): what changed since them is
    /// unknown, so a check cannot call the state fresh.
    pub unknown_commits: Vec<String>,
}

/// Observes the work tree for `head` (changes since each anchored record, or since revision
/// `since`'s commit; the cited files re-read; the index summary) and assesses freshness once:
/// `freshness`, `reorient`, `scene`, `prompt`, `graph`, `recheck` and the session hooks all read
/// this. Every parse of a cited file, now or as a commit held it, goes through the one bounded
/// reader ([`read_cited_files`]) within the command's parse deadline
/// ([`Ctx::parse_deadline`]).
pub fn observe(ctx: &Ctx, store: &Store, head: &Head, since: Option<u64>) -> Result<Observed> {
    let deadline = ctx.parse_deadline();
    if head.has_state() {
        // Files cited by symbol are parsed once git has said what changed.
        search::syntax::warm_up(symbol_cited_paths(&head.state), Tags::Definitions);
    }
    let retrieval = retrieval_summary(store);
    let (watcher, unknown_commits) = watcher_input(ctx, store, head, Some(&retrieval), since)?;
    let state = head.has_state().then_some(&head.state);
    let cited = state.map(|state| {
        let renames = match &watcher {
            WatcherInput::Observed(changes) => changes.renames.clone(),
            WatcherInput::Unavailable(_) | WatcherInput::Unknown(_) => Default::default(),
        };
        let cache = DefinitionCache::open(store.dir(), &store.cache_dir());
        let wanted = paths_to_read(state, &renames);
        let cited = read_cited_files(store.root(), &wanted, Some(&cache), deadline);
        cache.save();
        cited
    });
    let late_parses: Vec<&str> = (cited.iter())
        .flat_map(|c| c.unjudged.iter().map(String::as_str))
        .collect();
    note_late_parses(ctx, &late_parses);
    let freshness = assess_freshness(
        state,
        &head.anchors,
        Some(&retrieval),
        &watcher,
        cited.as_ref(),
    );
    Ok(Observed {
        retrieval,
        freshness,
        unknown_commits,
    })
}

/// Says on stderr which cited files the command's parse deadline cut short, if any: the
/// references citing a symbol there were not judged
/// ([`crate::policy::recheck::CitedFiles::unjudged`]).
fn note_late_parses(ctx: &Ctx, late: &[&str]) {
    if !late.is_empty() {
        ctx.ui.status(&format!(
            "note: {} cited file(s) not parsed, parsing ran out of time: the references citing \
             a symbol there were not judged: {}",
            late.len(),
            late.join(", ")
        ));
    }
}

/// The paths the graph nodes and the checkpoint cite a symbol in.
fn symbol_cited_paths(state: &State) -> impl Iterator<Item = &str> {
    let nodes = state
        .graphs
        .each()
        .into_iter()
        .flat_map(|(_, graph)| &graph.nodes);
    let checkpoint = state.investigation_checkpoint.iter();
    (nodes.flat_map(|node| &node.code_refs))
        .chain(checkpoint.flat_map(|checkpoint| &checkpoint.code_refs))
        .filter(|code_ref| code_ref.symbol.is_some())
        .map(|code_ref| code_ref.path.as_str())
}

/// The retrieval index summary (docs/retrieval.md#retrieval-summary) for this store's work tree.
/// Without an index it is the baseline summary, `ready`: `retrieve` answers from a query-time scan,
/// and every view says so the same way. An index that exists but cannot be used reads as stale.
pub fn retrieval_summary(store: &Store) -> RetrievalState {
    search::status(store.root(), &store.cache_dir()).state
}

/// What the watcher sees: the work tree's changes since each anchored record of `head` was
/// written, or since revision `since`'s commit for every record; and the commits git could
/// not compare with at all.
fn watcher_input(
    ctx: &Ctx,
    store: &Store,
    head: &Head,
    retrieval: Option<&RetrievalState>,
    since: Option<u64>,
) -> Result<(WatcherInput, Vec<String>)> {
    let input = |watcher: WatcherInput| Ok((watcher, Vec::new()));
    let observed_at_unix_seconds = ctx.now.as_second();
    let watched_root = store.root().display().to_string();
    let in_git = git::work_tree_root(store.root()).is_some();
    if !head.has_state() && since.is_none() {
        // Before the first write nothing is anchored, so nothing can have changed under it.
        return input(nothing_anchored(
            in_git,
            watched_root,
            observed_at_unix_seconds,
        ));
    }
    if !in_git {
        if since.is_some() {
            return Err(Failure::usage(
                "`--since` compares with a commit, but this store is not in a git repository",
            )
            .into());
        }
        return input(manifest_changes(
            retrieval,
            watched_root,
            observed_at_unix_seconds,
        ));
    }
    let Some(base_commit) = base_commit(store, head, since)? else {
        return input(WatcherInput::Unknown(
            "the last write recorded no git commit (it came before the first commit); write the state again after committing".to_owned(),
        ));
    };
    let commits = commits_to_compare(&base_commit, since, &head.anchors);
    let mut changes = match git_changes(ctx, store, &commits)? {
        Ok(changes) => changes,
        Err(uncompared) => return input(WatcherInput::Unavailable(uncompared.to_string())),
    };
    let mut unknown = changes.unknown_commits;
    let (base_commit, since_base) = match changes.since.remove(&base_commit) {
        Some(since_base) => (base_commit, since_base),
        // Git lacks the commit (rewritten history, a shallow clone): what changed since is
        // unknown, but what the work tree changed against HEAD is still worth reporting.
        None => {
            let gone = format!(
                "commit {base_commit} recorded in the rollout is not in this repository (rewritten history, or a shallow clone?)"
            );
            let Some((head_commit, since_head)) = changes_since_head(store) else {
                return Ok((WatcherInput::Unknown(gone), unknown));
            };
            ctx.ui
                .warn(&format!("{gone}; the work tree is compared with HEAD"));
            if !unknown.contains(&base_commit) {
                unknown.push(base_commit);
            }
            (head_commit, since_head)
        }
    };
    let mut observed = WorkTreeChanges {
        source: ChangeSource::Git,
        watched_root,
        observed_at_unix_seconds,
        base_commit: Some(base_commit),
        since_revision: since,
        since_base,
        since_commit: changes.since,
        renames: changes.renames,
        unknown_commits: unknown.clone(),
        cited_then: BTreeMap::new(),
    };
    let earlier = definitions_to_compare(&head.state, &head.anchors, &observed);
    observed.cited_then = read_cited_files_at(
        store.root(),
        &earlier,
        &changes.stand_ins,
        ctx.parse_deadline(),
    );
    Ok((WatcherInput::Observed(observed), unknown))
}

/// The watcher's input before the first write: no changes, from git when the store is in a
/// work tree, else from the index manifest.
fn nothing_anchored(
    in_git: bool,
    watched_root: String,
    observed_at_unix_seconds: i64,
) -> WatcherInput {
    WatcherInput::Observed(WorkTreeChanges {
        source: if in_git {
            ChangeSource::Git
        } else {
            ChangeSource::Manifest
        },
        watched_root,
        observed_at_unix_seconds,
        base_commit: None,
        since_revision: None,
        since_base: BTreeSet::new(),
        since_commit: Default::default(),
        renames: Default::default(),
        unknown_commits: Vec::new(),
        cited_then: BTreeMap::new(),
    })
}

/// The commit the work tree is compared with: revision `since`'s, else the last write's;
/// `None` when the last write recorded none. A `since` revision without one is a usage error.
fn base_commit(store: &Store, head: &Head, since: Option<u64>) -> Result<Option<String>> {
    Ok(match since {
        Some(revision) => Some(record_at(store, revision)?.git_head.ok_or_else(|| {
            Failure::usage(format!(
                "revision {revision} was written outside git or before the first commit; it has no commit to compare with"
            ))
        })?),
        None => head.last_git_head.clone(),
    })
}

/// The work tree's changes since each of `commits`, from git (the store's own directory left
/// out), warning about every commit that is not in the repository, and about git's own files
/// when they keep the work tree from being compared.
fn git_changes(
    ctx: &Ctx,
    store: &Store,
    commits: &[String],
) -> Result<Result<git::WorkTreeChanges, git::Uncompared>> {
    // Searched only when a commit is gone (rebased or squash-merged work, a shallow clone).
    let mut written_at = |gone: &[&str]| {
        store.first_lines_written_at(gone).unwrap_or_else(|err| {
            ctx.ui
                .warn(&format!("the rollout could not be read: {err:#}"));
            git::WrittenAt::new()
        })
    };
    let changes =
        match git::work_tree_changes(store.root(), commits, Path::new(STORE_DIR), &mut written_at)?
        {
            Ok(changes) => changes,
            Err(uncompared) => {
                if let git::Uncompared::Unreadable(_) = uncompared {
                    ctx.ui.warn(&uncompared.to_string());
                }
                return Ok(Err(uncompared));
            }
        };
    for (commit, stand_in) in &changes.stand_ins {
        ctx.ui.warn(&format!(
            "commit {commit} recorded in the rollout is not in this repository (rebased or squash-merged?); the records written there are compared with commit {stand_in}, where they entered this branch"
        ));
    }
    for commit in &changes.unknown_commits {
        ctx.ui.warn(&format!(
            "commit {commit} recorded in the rollout is not in this repository; records written there are compared with the last write's commit"
        ));
    }
    Ok(Ok(changes))
}

/// HEAD's commit and the paths the work tree changed since it, when git can tell.
fn changes_since_head(store: &Store) -> Option<(String, BTreeSet<String>)> {
    let head_commit = git::head_commit(store.root());
    let against_head = head_commit.as_ref().and_then(|head| {
        let commits = [head.clone()];
        let mut none = |_: &[&str]| git::WrittenAt::new();
        git::work_tree_changes(store.root(), &commits, Path::new(STORE_DIR), &mut none)
            .ok()
            .and_then(Result::ok)
            .and_then(|mut changes| changes.since.remove(head))
    });
    head_commit.zip(against_head)
}

/// The record that produced `revision`.
fn record_at(store: &Store, revision: u64) -> Result<crate::state::rollout::Record> {
    let history = store.sound_history()?;
    let count = history.resolve(&Revision::Number(revision))?;
    count
        .checked_sub(1)
        .and_then(|at| history.records.get(at).cloned())
        .ok_or_else(|| {
            Failure::usage("revision 0 is the empty state; no write produced it")
                .with_hint("list revisions with `epiphany log`")
                .into()
        })
}
