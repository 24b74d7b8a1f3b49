//! What happened to a parent a record names that the rollout does not hold, in one sentence,
//! from what git and the cache still show of it ([`Trail`]). A missing parent is no failure
//! (the record applies on its own), but the words must say what git did: a revert, a rebase
//! that dropped a commit, a force-push, a cherry-pick. Where the facts cannot tell two of
//! those apart, the sentence says so.

use crate::state::lineage::Departure;
use crate::state::lineage::Trail;

/// How long a commit id is shown.
const SHORT: usize = 10;

/// Why the parent is missing, as the note after "names a parent that is not in the rollout".
pub fn missing_parent(trail: &Trail) -> String {
    if trail.damaged {
        return "its line is in the rollout but does not verify (listed above), so it is not read"
            .to_owned();
    }
    if let Some(removal) = &trail.removed {
        let commit = short(&removal.commit);
        let segment = &removal.segment;
        return match reverted(&removal.message) {
            Some(reverted) => format!(
                "commit {commit} reverted commit {} and so removed segment `{segment}`, which held it (`git revert {commit}` brings it back)",
                short(reverted)
            ),
            None => format!(
                "commit {commit} (\"{}\") removed segment `{segment}`, which held it",
                subject(&removal.message)
            ),
        };
    }
    let forced = |d: &&Departure| d.message.contains("forced-update");
    if let Some(departure) = trail.departures.iter().find(forced) {
        let branch = short_ref(&departure.reference);
        return format!(
            "`{branch}` was force-pushed without the commit that added it (before the push it was at {}, which holds it and which `git reflog {branch}` still shows)",
            short(&departure.commit),
        );
    }
    let rebased = |d: &&Departure| d.message.starts_with("rebase");
    if let Some(departure) = trail.departures.iter().find(rebased) {
        return format!(
            "a rebase dropped the commit that added it from this branch (before the rebase the branch was at {}, which holds it and which `git reflog` still shows)",
            short(&departure.commit)
        );
    }
    let rewritten = |d: &&Departure| {
        ["reset", "commit (amend)"]
            .iter()
            .any(|how| d.message.starts_with(how))
    };
    if let Some(departure) = trail.departures.iter().find(rewritten) {
        return format!(
            "this branch was moved off the commits that hold it (`{}`; before that it was at {}, which `git reflog` still shows)",
            subject(&departure.message),
            short(&departure.commit)
        );
    }
    if let Some(reference) = trail.refs.first() {
        return format!(
            "`{reference}` holds it but this branch never did: the record was brought here without it (a cherry-pick)"
        );
    }
    if trail.cached {
        return "a fold cached in this clone held it, but no commit git still has does: the commit that held it was dropped or replaced (a rebase, a reset or a force-push) and git no longer has it".to_owned();
    }
    "nothing in this clone ever held it: it was written in another clone whose commit never reached this one (a cherry-pick from there) or was dropped before this clone fetched it (a rebase or force-push there); the two cannot be told apart from here".to_owned()
}

/// The commit a `git revert` message names (`This reverts commit <id>.`).
fn reverted(message: &str) -> Option<&str> {
    let rest = message.split("This reverts commit ").nth(1)?;
    let id = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    (id.len() >= 7).then_some(id)
}

/// A message's first line.
fn subject(message: &str) -> &str {
    message.lines().next().unwrap_or_default().trim()
}

fn short(commit: &str) -> &str {
    commit.get(..SHORT).unwrap_or(commit)
}

/// `refs/remotes/origin/main` as `origin/main`, `refs/heads/main` as `main`.
fn short_ref(reference: &str) -> &str {
    ["refs/remotes/", "refs/heads/"]
        .iter()
        .find_map(|prefix| reference.strip_prefix(prefix))
        .unwrap_or(reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::lineage::Removal;

    const OLD: &str = "0123456789abcdef0123456789abcdef01234567";

    fn departure(reference: &str, message: &str) -> Departure {
        Departure {
            reference: reference.to_owned(),
            commit: OLD.to_owned(),
            message: message.to_owned(),
        }
    }

    fn removal(message: &str) -> Trail {
        Trail {
            removed: Some(Removal {
                commit: "fedcba9876543210fedcba9876543210fedcba98".to_owned(),
                message: message.to_owned(),
                segment: "s.jsonl".to_owned(),
            }),
            ..Trail::default()
        }
    }

    #[test]
    fn a_revert_and_a_deletion_name_the_commit_that_removed_the_segment() {
        let reverted = missing_parent(&removal(&format!(
            "Revert \"x\"\n\nThis reverts commit {OLD}.\n"
        )));
        assert_eq!(
            reverted,
            "commit fedcba9876 reverted commit 0123456789 and so removed segment `s.jsonl`, which held it (`git revert fedcba9876` brings it back)"
        );
        let deleted = missing_parent(&removal("drop the old notes\n\nbody"));
        assert_eq!(
            deleted,
            "commit fedcba9876 (\"drop the old notes\") removed segment `s.jsonl`, which held it"
        );
    }

    #[test]
    fn a_rewritten_history_says_how_it_was_rewritten() {
        let trail = |departures: Vec<Departure>| Trail {
            departures,
            refs: vec!["feature".to_owned()],
            ..Trail::default()
        };
        // A fetch that was forced wins over the reset that followed it.
        let forced = trail(vec![
            departure("HEAD", "reset: moving to origin/main"),
            departure("refs/remotes/origin/main", "fetch: forced-update"),
        ]);
        assert!(
            missing_parent(&forced).starts_with("`origin/main` was force-pushed"),
            "{}",
            missing_parent(&forced)
        );
        let rebased = trail(vec![departure("refs/heads/main", "rebase (finish): x")]);
        assert!(missing_parent(&rebased).starts_with("a rebase dropped"));
        let reset = trail(vec![departure("HEAD", "reset: moving to HEAD~1")]);
        assert!(missing_parent(&reset).contains("`reset: moving to HEAD~1`"));
        // Checking another branch out leaves nothing behind: the branch that holds it speaks.
        let checkout = trail(vec![departure("HEAD", "checkout: moving from a to b")]);
        assert_eq!(
            missing_parent(&checkout),
            "`feature` holds it but this branch never did: the record was brought here without it (a cherry-pick)"
        );
    }

    #[test]
    fn without_git_the_cache_or_nothing_speaks() {
        let cached = Trail {
            cached: true,
            ..Trail::default()
        };
        assert!(missing_parent(&cached).starts_with("a fold cached in this clone held it"));
        assert!(missing_parent(&Trail::default()).contains("cannot be told apart"));
        let damaged = Trail {
            cached: true,
            damaged: true,
            ..Trail::default()
        };
        assert!(missing_parent(&damaged).starts_with("its line is in the rollout"));
    }
}
