//! The store inside git's history: merges (repeated, both directions, octopus), rebases,
//! cherry-picks, reverts, worktrees and fresh clones, all with git's own commands and no
//! `hooks install`. After each: git reports no conflict, `verify` passes, every record from
//! every side is there exactly once, and the head equals a full replay.

use std::collections::BTreeSet;

use serde_json::Value;
use serde_json::json;

use crate::common::Output;
use crate::common::TestEnv;
use crate::common::node_json;
use crate::common::observation_patch;
use crate::common::sealed_line;
use crate::common::snapshot_names;
use crate::common::unfingerprinted;

/// A repository with a store, an objective and a first commit. Snapshots are written every
/// other record, so reads cross snapshots written on different branches.
pub(crate) fn repository() -> TestEnv {
    let env = TestEnv::bare().with_var("EPIPHANY_SNAPSHOT_EVERY", "2");
    env.ok(&["init"]);
    env.update(&json!({"objective": "shared"}));
    env.write("src/lib.rs", "pub fn lex() {}\n");
    env.commit_all("base");
    env
}

/// Writes observation `obs-<id>` and commits it.
pub(crate) fn observe(env: &TestEnv, id: &str) {
    env.update(&observation_patch(id));
    env.commit_all(&format!("observe {id}"));
}

/// Runs a git command that must succeed without a conflict or conflict markers.
pub(crate) fn git_clean(env: &TestEnv, args: &[&str]) {
    git_clean_with(env, args, &[]);
}

/// [`git_clean`] with more environment variables for git (and the hooks it runs).
fn git_clean_with(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) {
    let output = env.git_output_with(args, vars);
    assert!(
        output.status.success(),
        "git {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let status = env.git(&["status", "--porcelain"]);
    assert!(
        !status
            .lines()
            .any(|l| l.starts_with("UU") || l.starts_with("AA")),
        "unmerged paths after git {args:?}:\n{status}"
    );
    for (path, bytes) in env.store_bytes() {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("<<<<<<<") && !text.contains(">>>>>>>"),
            "conflict markers in {path} after git {args:?}"
        );
    }
}

/// Writes the `feature` observations on a new `feature` branch and the `main` ones on main,
/// then merges the feature branch into main.
fn merge_a_feature_branch(env: &TestEnv, feature: &[&str], main: &[&str]) {
    merge_a_feature_branch_with(env, feature, main, &[]);
}

/// [`merge_a_feature_branch`] with more environment variables for the merge (and its hooks).
fn merge_a_feature_branch_with(
    env: &TestEnv,
    feature: &[&str],
    main: &[&str],
    vars: &[(&str, &str)],
) {
    env.git(&["checkout", "-q", "-b", "feature"]);
    for id in feature {
        observe(env, id);
    }
    env.git(&["checkout", "-q", "main"]);
    for id in main {
        observe(env, id);
    }
    git_clean_with(env, &["merge", "--no-edit", "feature"], vars);
}

fn observation_ids(env: &TestEnv) -> BTreeSet<String> {
    env.json(&["show"])["observations"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|o| o["id"].as_str().expect("id").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `verify` passes, every record is listed once, and the head equals a replay from scratch.
pub(crate) fn assert_whole(env: &TestEnv, observations: &[&str]) -> Value {
    let verify = env.json(&["verify"]);
    assert_eq!(verify["ok"], true, "{verify}");
    let head = env.json(&["show"]);
    let records = head["revision"].as_u64().expect("revision");
    assert_eq!(verify["records"], records, "{verify}");
    let replay = env.json(&["show", "--revision", &records.to_string()]);
    assert_eq!(head, replay, "the head differs from a full replay");
    let log = env.json(&["log"]);
    let ids: BTreeSet<&str> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len() as u64, records, "each record once in the log");
    let expected: BTreeSet<String> = observations.iter().map(|id| format!("obs-{id}")).collect();
    assert_eq!(observation_ids(env), expected);
    head
}

#[test]
fn two_branches_merged_twice_in_both_directions() {
    let env = repository();
    merge_a_feature_branch(&env, &["f1", "f2"], &["m1"]);
    assert_whole(&env, &["f1", "f2", "m1"]);

    // Both sides go on; main is merged back into the feature branch, then again into main.
    observe(&env, "m2");
    env.git(&["checkout", "-q", "feature"]);
    observe(&env, "f3");
    git_clean(&env, &["merge", "--no-edit", "main"]);
    assert_whole(&env, &["f1", "f2", "f3", "m1", "m2"]);
    observe(&env, "f4");
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m3");
    git_clean(&env, &["merge", "--no-edit", "feature"]);
    let head = assert_whole(&env, &["f1", "f2", "f3", "f4", "m1", "m2", "m3"]);
    assert!(head.get("conflicts").is_none(), "{head}");

    // A write after the merges descends from both sides.
    env.update(&json!({"objective": "after the merges"}));
    assert_whole(&env, &["f1", "f2", "f3", "f4", "m1", "m2", "m3"]);
    let log = env.json(&["log", "--limit", "1"]);
    assert_eq!(
        log["entries"][0]["parents"].as_array().map(Vec::len),
        Some(2)
    );
}

#[test]
fn a_rebase_of_three_commits() {
    let env = repository();
    env.git(&["checkout", "-q", "-b", "feature"]);
    observe(&env, "f1");
    observe(&env, "f2");
    observe(&env, "f3");
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m1");
    env.git(&["checkout", "-q", "feature"]);
    git_clean(&env, &["rebase", "main"]);
    assert_whole(&env, &["f1", "f2", "f3", "m1"]);
    observe(&env, "f4");
    env.git(&["checkout", "-q", "main"]);
    git_clean(&env, &["merge", "--no-edit", "feature"]);
    assert_whole(&env, &["f1", "f2", "f3", "f4", "m1"]);
}

#[test]
fn cherry_picks_then_a_merge_of_the_same_branch() {
    let env = repository();
    env.git(&["checkout", "-q", "-b", "feature"]);
    observe(&env, "f1");
    observe(&env, "f2");
    observe(&env, "f3");
    let picks: Vec<String> = env
        .git(&["rev-list", "--reverse", "main..feature"])
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect();
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m1");
    for commit in &picks {
        git_clean(&env, &["cherry-pick", commit]);
    }
    let picked = env.json(&["verify"]);
    assert_eq!(picked["ok"], true, "{picked}");
    assert!(observation_ids(&env).contains("obs-f3"));
    git_clean(&env, &["merge", "--no-edit", "feature"]);
    assert_whole(&env, &["f1", "f2", "f3", "m1"]);
    // Lines that reached main twice (picked, then merged) count once.
    env.update(&json!({"objective": "after the merge"}));
    assert_whole(&env, &["f1", "f2", "f3", "m1"]);
}

#[test]
fn an_octopus_merge() {
    let env = repository();
    for branch in ["a", "b", "c"] {
        env.git(&["checkout", "-q", "-b", branch, "main"]);
        observe(&env, branch);
    }
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "main");
    git_clean(&env, &["merge", "--no-edit", "a", "b", "c"]);
    assert_whole(&env, &["a", "b", "c", "main"]);
}

#[test]
fn two_worktrees_write_concurrently_and_merge() {
    let env = repository();
    let other = env.sibling("other");
    let path = other.root().display().to_string();
    env.git(&["worktree", "add", "-q", "-b", "other", &path]);
    std::thread::scope(|scope| {
        let here = &env;
        let there = &other;
        scope.spawn(move || here.write_observations(0, 5));
        scope.spawn(move || there.write_observations(1, 5));
    });
    other.commit_all("other worktree");
    env.commit_all("main worktree");
    git_clean(&env, &["merge", "--no-edit", "other"]);
    let expected: Vec<String> = (0..2)
        .flat_map(|w| (0..5).map(move |n| format!("{w}-{n}")))
        .collect();
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_whole(&env, &expected);
}

#[test]
fn a_fresh_clone_without_set_up_merges_a_branch() {
    let env = repository();
    env.git(&["checkout", "-q", "-b", "feature"]);
    observe(&env, "f1");
    env.git(&["checkout", "-q", "main"]);
    let clone = env.sibling("clone");
    let path = clone.root().display().to_string();
    env.git(&["clone", "-q", "--no-local", ".", &path]);
    let merge_config = clone.git_output(&["config", "--get-regexp", "^merge\\."]);
    assert!(
        merge_config.stdout.is_empty(),
        "a clone has no merge set-up"
    );
    clone.git(&["checkout", "-q", "-b", "feature", "origin/feature"]);
    clone.git(&["checkout", "-q", "main"]);
    observe(&clone, "c1");
    git_clean(&clone, &["merge", "--no-edit", "feature"]);
    assert_whole(&clone, &["c1", "f1"]);
}

/// What a user's `.git/info/attributes` may say: it overrides the `-text` of the store's own
/// `.gitattributes`, so git checks the rollout out with `\r\n` line endings.
const CRLF_ATTRIBUTE: &str = "* text eol=crlf\n";

/// What a store checked out with CRLF line endings must still do: read every record as it was
/// written (`show` as `before`, `log` listing each), pass `verify` with a note that counts the
/// converted lines and names the attribute to remove, take a write, and pass everything after.
fn assert_reads_through_crlf(env: &TestEnv, before: &Value, observations: &[&str]) {
    let converted = env.rollout_text().matches("\r\n").count();
    assert!(converted > 0, "git checked the rollout out with CRLF");
    assert_eq!(env.json(&["show"]), *before);
    env.ok(&["scene"]);
    let log = env.json(&["log"]);
    let listed = log["entries"]
        .as_array()
        .map(|entries| entries.len() as u64);
    assert_eq!(listed, before["revision"].as_u64(), "{log}");
    let verify = env.ok(&["verify"]);
    for said in [
        format!("note: {converted} rollout line(s) end in CRLF"),
        "overrides `.epiphany/.gitattributes`".to_owned(),
        "remove the `eol`/`text` attribute for `.epiphany/` from `.git/info/attributes`".to_owned(),
    ] {
        assert!(verify.stdout.contains(&said), "{said}: {verify}");
    }
    env.update(&observation_patch("after"));
    let mut expected = observations.to_vec();
    expected.push("after");
    assert_whole(env, &expected);
}

/// `* text eol=crlf` in `.git/info/attributes`, then the store checked out again: every line
/// ends in `\r\n`, and every record still reads (each used to read as damaged, and every
/// command but `verify` stopped with exit 2).
#[test]
fn a_store_checked_out_with_crlf_line_endings_reads_as_written() {
    let env = TestEnv::new();
    env.update(&observation_patch("a"));
    env.update(&observation_patch("b"));
    env.commit_all("two records");
    let before = env.json(&["show"]);
    env.write(".git/info/attributes", CRLF_ATTRIBUTE);
    std::fs::remove_dir_all(env.root().join(".epiphany")).expect("remove the store");
    env.git(&["checkout", "--", ".epiphany"]);
    assert_eq!(env.json(&["freshness", "--check"])["fresh"], true);
    assert_reads_through_crlf(&env, &before, &["a", "b"]);
}

/// A fresh clone checked out under `* text eol=crlf` in `.git/info/attributes` (which
/// overrides the store's `-text`): the rollout's lines end in `\r\n`, the clone has only
/// records to read (no snapshot is tracked), and it reads what the original reads.
#[test]
fn a_clone_checked_out_with_crlf_line_endings_reads_as_written() {
    let env = repository();
    observe(&env, "a");
    observe(&env, "b");
    observe(&env, "c");
    let before = env.json(&["show"]);
    let clone = crlf_clone_of(&env, "main");
    assert!(!clone.root().join(".epiphany/snapshots").exists());
    assert_eq!(clone.json(&["verify"])["ok"], true);
    assert_reads_through_crlf(&clone, &before, &["a", "b", "c"]);
}

#[test]
fn a_revert_of_a_state_commit() {
    let env = repository();
    observe(&env, "kept");
    observe(&env, "reverted");
    git_clean(&env, &["revert", "--no-edit", "HEAD"]);
    assert_whole(&env, &["kept"]);
    observe(&env, "after");
    assert_whole(&env, &["after", "kept"]);
}

/// A segment another branch committed can reach the work tree staged but not committed
/// (`git merge --squash`, `git checkout <branch> -- .epiphany/`). A write then starts a
/// segment of its own instead of appending to that one: appending made two versions of one
/// file, and merging the branch later stopped with an add/add conflict inside the rollout.
#[test]
fn a_write_never_appends_to_a_segment_staged_from_another_branch() {
    let squash: &[&str] = &["merge", "--squash", "feature"];
    let checkout: &[&str] = &["checkout", "feature", "--", ".epiphany/"];
    for bring in [squash, checkout] {
        let env = repository();
        env.git(&["checkout", "-q", "-b", "feature"]);
        observe(&env, "f1");
        env.git(&["checkout", "-q", "main"]);
        git_clean(&env, bring);
        env.update(&observation_patch("m1"));
        // Unstaged changes to tracked rollout files: the write appended to a staged segment.
        let appended = env.git_output(&["diff", "--quiet", "--", ".epiphany/rollout"]);
        assert!(
            appended.status.success(),
            "{bring:?}: a staged segment changed"
        );
        env.commit_all("the feature's records, then m1");
        env.git(&["checkout", "-q", "feature"]);
        observe(&env, "f2");
        env.git(&["checkout", "-q", "main"]);
        git_clean(&env, &["merge", "--no-edit", "feature"]);
        assert_whole(&env, &["f1", "f2", "m1"]);
    }
}

/// Two clones that write the same first record (the same patch on the same parents in the
/// same second) still start two segment files, so one that went on writing merges the other's
/// without a conflict; the shared record counts once.
#[test]
fn clones_that_write_the_same_first_record_never_share_a_segment() {
    let env = repository().with_var("EPIPHANY_NOW", "2026-06-01T00:00:00Z");
    let clone = env.sibling("clone");
    let path = clone.root().display().to_string();
    env.git(&["clone", "-q", ".", &path]);
    observe(&env, "same");
    clone.update(&observation_patch("same"));
    observe(&clone, "extra");
    git_clean(
        &clone,
        &["pull", "--no-rebase", "--no-edit", "origin", "main"],
    );
    assert_whole(&clone, &["extra", "same"]);
}

/// Writes between two commits go to one segment; a commit seals it, and the next write starts
/// another.
#[test]
fn writes_share_a_segment_until_a_commit() {
    let env = repository();
    let before = env.rollout_segments().len();
    env.update(&observation_patch("a"));
    env.update(&observation_patch("b"));
    assert_eq!(env.rollout_segments().len(), before + 1);
    env.commit_all("a and b");
    env.update(&observation_patch("c"));
    assert_eq!(env.rollout_segments().len(), before + 2);
    assert_whole(&env, &["a", "b", "c"]);
}

/// After a merge the first read starts from a fold this clone cached (the cache holds both
/// branches' folds, never tracked) and folds what the merge brought in. A damaged cached fold
/// is never served: `verify` names it and `--repair` rewrites it; writes go on.
#[test]
fn a_read_after_a_merge_starts_from_the_cached_folds_and_never_a_damaged_one() {
    let env = repository();
    merge_a_feature_branch(&env, &["f1", "f2", "f3"], &["m1", "m2"]);
    let cache = env.root().join(".epiphany/cache/snapshots");
    let first = assert_whole(&env, &["f1", "f2", "f3", "m1", "m2"]);
    assert_eq!(
        env.git(&["status", "--porcelain"]),
        "",
        "the cache is not tracked"
    );
    let names = snapshot_names(&cache);
    assert!(!names.is_empty(), "the writes cached their folds");
    let mut damaged = Vec::new();
    for name in &names {
        let path = cache.join(name);
        let mut bytes = std::fs::read(&path).expect("cached fold");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x5a;
        std::fs::write(&path, &bytes).expect("damage");
        damaged.push((name, bytes));
    }
    assert_eq!(env.json(&["show"]), first, "a damaged fold is never served");
    let verify = env.json_allowing(&["verify"], 1);
    let problems = verify["problems"].to_string();
    // Each fold still damaged (the read that replayed may have rewritten or thinned some) is
    // named.
    damaged.retain(|(name, bytes)| std::fs::read(cache.join(name)).is_ok_and(|now| now == *bytes));
    assert!(!damaged.is_empty());
    assert!(
        damaged
            .iter()
            .all(|(name, _)| problems.contains(name.as_str())),
        "{names:?}: {verify}"
    );
    env.ok(&["verify", "--repair"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    env.update(&observation_patch("after"));
    assert_whole(&env, &["f1", "f2", "f3", "m1", "m2", "after"]);
}

/// After a merge of two branches that only appended, the first read joins the two branches'
/// snapshots instead of replaying both (it parses only the records past them, so an edit to a
/// line both snapshots cover goes unseen until `verify` replays everything), and what it reads
/// is the replay's state, kept for the reads after it.
#[test]
fn a_merge_of_appends_is_read_from_both_branches_snapshots() {
    let env = repository();
    env.git(&["checkout", "-q", "-b", "feature"]);
    // Two records in one segment: the first is covered by the mark on the second.
    env.update(&observation_patch("f1"));
    observe(&env, "f2");
    observe(&env, "f3");
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m1");
    observe(&env, "m2");
    git_clean(&env, &["merge", "--no-edit", "feature"]);
    let feature = env
        .rollout_segments()
        .into_iter()
        .find(|path| std::fs::read_to_string(path).is_ok_and(|text| text.contains("obs-f1")))
        .expect("the feature branch's segment");
    let text = std::fs::read_to_string(&feature).expect("read");
    std::fs::write(
        &feature,
        text.replacen(r#""summary":"f1""#, r#""summary":"F1""#, 1),
    )
    .expect("edit a line the feature branch's snapshot covers");
    let head = env.json(&["show"]);
    let summaries: Vec<&str> = head["observations"]
        .as_array()
        .expect("observations")
        .iter()
        .map(|o| o["summary"].as_str().expect("summary"))
        .collect();
    assert!(
        summaries.contains(&"f1"),
        "read from the snapshot: {summaries:?}"
    );
    assert_eq!(summaries.len(), 5, "{summaries:?}");
    let verify = env.json_allowing(&["verify"], 1);
    assert!(
        verify["problems"].to_string().contains("edited"),
        "{verify}"
    );
    std::fs::write(&feature, text).expect("undo the edit");
    assert_eq!(
        assert_whole(&env, &["f1", "f2", "f3", "m1", "m2"]),
        head,
        "the joined head is the replay's"
    );
}

/// After git merges a branch from another clone, of which this clone cached no fold, the
/// first read starts from its own newest fold and places the branch's records among its own
/// (both sides only appended) instead of replaying the history from before the fork: a line
/// that fold covers is not read again (an edit of it goes unseen until `verify`), and what
/// every read prints, whole or only the newest items, is the replay's.
#[test]
fn a_merge_of_a_branch_without_a_cached_fold_is_placed_onto_the_newest_fold() {
    let env = repository();
    let theirs = env.sibling("theirs");
    let theirs_path = theirs.root().display().to_string();
    env.git(&["clone", "-q", "--no-local", ".", &theirs_path]);
    for id in ["t1", "t2", "t3"] {
        observe(&theirs, id);
    }
    // Two records in one segment: the first is covered by the mark on the second.
    env.update(&observation_patch("m1"));
    for id in ["m2", "m3", "m4"] {
        observe(&env, id);
    }
    env.git(&["fetch", "-q", &theirs_path, "main:theirs"]);
    git_clean(&env, &["merge", "--no-edit", "theirs"]);
    let ours = env
        .rollout_segments()
        .into_iter()
        .find(|path| std::fs::read_to_string(path).is_ok_and(|text| text.contains("obs-m1")))
        .expect("our branch's segment");
    let text = std::fs::read_to_string(&ours).expect("read");
    std::fs::write(
        &ours,
        text.replacen(r#""summary":"m1""#, r#""summary":"M1""#, 1),
    )
    .expect("edit a line our newest fold covers");
    let shown = env.json(&["show"]);
    let summaries: Vec<&str> = (shown["observations"]
        .as_array()
        .expect("observations")
        .iter())
    .map(|o| o["summary"].as_str().expect("summary"))
    .collect();
    assert!(
        summaries.contains(&"m1"),
        "read from the fold: {summaries:?}"
    );
    assert_eq!(summaries.len(), 7, "{summaries:?}");
    let verify = env.json_allowing(&["verify"], 1);
    assert!(
        verify["problems"].to_string().contains("edited"),
        "{verify}"
    );
    std::fs::write(&ours, text).expect("undo the edit");
    let views = |env: &TestEnv| ["show", "scene", "prompt", "log"].map(|view| env.json(&[view]));
    let placed = views(&env);
    std::fs::remove_dir_all(env.root().join(".epiphany/cache/snapshots")).expect("drop the folds");
    assert_eq!(placed, views(&env), "the placed head is the replay's");
    assert_whole(&env, &["m1", "m2", "m3", "m4", "t1", "t2", "t3"]);
}

/// The cached folds of all `records` records.
fn folds_of(env: &TestEnv, records: u64) -> Vec<String> {
    let mut names = snapshot_names(&env.root().join(".epiphany/cache/snapshots"));
    names.retain(|name| name.starts_with(&format!("{records:012}-")));
    names
}

/// `index`, which the `post-merge` hook runs in the background, caches the fold of a merge,
/// so the first command after the merge does not compute it.
#[test]
fn index_after_a_merge_caches_the_fold() {
    let env = repository();
    merge_a_feature_branch(&env, &["f1", "f2"], &["m1"]);
    assert_eq!(folds_of(&env, 4), Vec::<String>::new());
    env.ok(&["index"]);
    assert_eq!(folds_of(&env, 4).len(), 1);
    assert_whole(&env, &["f1", "f2", "m1"]);
}

/// Through git's own hook: with `hooks install`, a merge starts the background `index` of the
/// `post-merge` hook, which caches the merge's fold without any command asking for it.
#[test]
fn the_post_merge_hook_caches_the_fold_in_the_background() {
    let env = repository();
    env.ok(&["hooks", "install", "--git"]);
    // The hook's `index` takes the snapshot cadence from the environment git passes it.
    let cadence = [("EPIPHANY_SNAPSHOT_EVERY", "2")];
    merge_a_feature_branch_with(&env, &["f1", "f2"], &["m1"], &cadence);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while folds_of(&env, 4).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(folds_of(&env, 4).len(), 1, "the hook cached no fold");
    assert_whole(&env, &["f1", "f2", "m1"]);
}

#[test]
fn concurrent_graph_edits_keep_both_and_a_clash_is_a_conflict_until_rewritten() {
    let env = repository();
    env.update(
        &json!({"upsert": {"architecture_nodes": [node_json("lexer", "tokens", "src/lib.rs")]}}),
    );
    env.commit_all("map");
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.update(&json!({"upsert": {"architecture_nodes": [node_json("parser", "trees", "src/lib.rs"), node_json("lexer", "feature's lexer", "src/lib.rs")]}}));
    env.commit_all("feature map");
    env.git(&["checkout", "-q", "main"]);
    env.update(&json!({"upsert": {"architecture_nodes": [node_json("checker", "types", "src/lib.rs"), node_json("lexer", "main's lexer", "src/lib.rs")]}}));
    env.commit_all("main map");
    git_clean(&env, &["merge", "--no-edit", "feature"]);

    let head = env.json(&["show"]);
    let nodes: BTreeSet<&str> = head["graphs"]["architecture"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id"))
        .collect();
    assert_eq!(nodes, BTreeSet::from(["checker", "lexer", "parser"]));
    let conflicts = head["conflicts"].as_array().expect("a conflict");
    assert_eq!(conflicts.len(), 1, "{head}");
    assert_eq!(conflicts[0]["key"], "architecture_nodes/lexer");
    assert_eq!(conflicts[0]["records"].as_array().map(Vec::len), Some(2));
    assert_eq!(env.json(&["verify"])["ok"], true);
    let scene = env.run(&["scene"]);
    assert!(scene.stdout.contains("architecture_nodes/lexer"), "{scene}");
    let check = env.run(&["freshness", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(
        check.stdout.contains("architecture_nodes/lexer")
            || check.stderr.contains("architecture_nodes/lexer"),
        "{check}"
    );

    env.update(
        &json!({"upsert": {"architecture_nodes": [node_json("lexer", "settled", "src/lib.rs")]}}),
    );
    let settled = env.json(&["show"]);
    assert!(settled.get("conflicts").is_none(), "{settled}");
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// A rollback replaces the whole state. Folded after what another branch wrote meanwhile (which
/// it never saw), it overwrites that too: each field it overwrote is listed as a conflict (it
/// used to vanish silently, with `verify` and `freshness --check` passing), until a write that
/// saw both sides writes it again.
#[test]
fn a_rollback_merged_with_concurrent_writes_lists_what_it_overwrote() {
    let env = repository();
    env.git(&["checkout", "-q", "-b", "feature"]);
    let feature_node = node_json("feature", "the feature's node", "src/lib.rs");
    env.update(
        &json!({"objective": "the feature's", "upsert": {"architecture_nodes": [feature_node]}}),
    );
    env.commit_all("feature");
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m1");
    env.ok(&["rollback", "--to-revision", "1"]);
    env.commit_all("rolled m1 back");
    git_clean(&env, &["merge", "--no-edit", "feature"]);

    let head = env.json(&["show"]);
    let keys: BTreeSet<&str> = (head["conflicts"].as_array().expect("conflicts").iter())
        .map(|c| c["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, BTreeSet::from(["graphs", "objective"]), "{head}");
    assert_eq!(env.json(&["verify"])["ok"], true);
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);

    env.update(&json!({
        "objective": "the feature's, kept",
        "graphs": {"architecture": {"nodes": [node_json("feature", "kept", "src/lib.rs")]}}
    }));
    let settled = env.json(&["show"]);
    assert!(settled.get("conflicts").is_none(), "{settled}");
}

#[test]
fn revisions_take_record_ids_and_prefixes() {
    let env = repository();
    env.update(&json!({"objective": "second"}));
    let log = env.json(&["log"]);
    let first = log["entries"][1]["id"].as_str().expect("id").to_owned();
    assert_eq!(
        env.json(&["show", "--revision", &first[..10]])["objective"],
        "shared"
    );
    assert_eq!(
        env.json(&["show", "--revision", "HEAD~1"])["objective"],
        "shared"
    );
    let diff = env.json(&["diff", &first[..8], "HEAD"]);
    assert_eq!(diff["changed_fields"], json!(["objective"]));
    let rolled = env.json(&["rollback", "--to-revision", &first]);
    assert_eq!(rolled["changed_fields"], json!(["objective"]));
    let unknown = env.run(&["show", "--revision", "ffffffff"]);
    assert_eq!(unknown.code, 2, "{unknown}");
    assert!(
        unknown
            .stderr
            .contains("no record id starts with `ffffffff`"),
        "{unknown}"
    );
}

#[test]
fn rollback_restores_anchors_so_staleness_stays_visible() {
    let env = repository();
    env.update(
        &json!({"upsert": {"architecture_nodes": [node_json("lexer", "tokens", "src/lib.rs")]}}),
    );
    env.commit_all("map");
    env.write("src/lib.rs", "pub fn lex() { /* changed */ }\n");
    env.commit_all("change the cited code");
    let stale = env.run(&["freshness", "--check"]);
    assert_eq!(stale.code, 1, "{stale}");
    // Restating the node keeps what was checked of its references: still stale.
    env.update(
        &json!({"upsert": {"architecture_nodes": [node_json("lexer", "re-read", "src/lib.rs")]}}),
    );
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
    env.ok(&["recheck", "lexer"]);
    assert_eq!(env.run(&["freshness", "--check"]).code, 0);
    env.ok(&["rollback", "--to-revision", "HEAD~1"]);
    let again = env.run(&["freshness", "--check"]);
    assert_eq!(again.code, 1, "rollback must not hide staleness:\n{again}");
}

#[test]
fn a_write_that_would_leave_an_invalid_state_is_refused() {
    let env = repository();
    env.update(&json!({
        "upsert": {"architecture_nodes": [node_json("a", "x", "src/lib.rs"), node_json("b", "y", "src/lib.rs")]},
        "graph_frontier": {"active_node_ids": ["b"]}
    }));
    let before = env.store_bytes();
    let refused = env.run_with_stdin(
        &["--json", "update"],
        json!({"graphs": {"architecture": {"nodes": [node_json("a", "x", "src/lib.rs")]}}})
            .to_string(),
    );
    assert_eq!(refused.code, 2, "{refused}");
    assert_eq!(
        refused.json()["error"]["problems"],
        json!([{"path": "graph_frontier.active_node_ids[0]", "message": "names missing node \"b\""}])
    );
    let removed = env.run_with_stdin(
        &["update"],
        json!({"remove": {"architecture_nodes": ["b", "nope"]}}).to_string(),
    );
    assert_eq!(removed.code, 2, "{removed}");
    assert!(
        removed.stderr.contains("there is no record \"nope\""),
        "{removed}"
    );
    assert_eq!(env.store_bytes(), before);
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// A repository with `src/a.rs` committed and a store mapping node `a` onto it, written on a
/// branch `feature` at a commit of its own and committed there.
fn mapped_on_a_feature_branch() -> (TestEnv, String) {
    let env = TestEnv::bare();
    env.write("src/a.rs", "pub fn a() {}\n");
    env.write("src/b.rs", "pub fn b() {}\n");
    env.ok(&["init"]);
    env.commit_all("code");
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.write("src/b.rs", "pub fn b() { 2 }\n");
    let written_at = env.commit_all("feature work");
    env.update(&json!({
        "objective": "keep a mapped",
        "graphs": {"architecture": {"nodes": [node_json("a", "does a", "src/a.rs")]}},
        "graph_frontier": {"active_node_ids": ["a"]}
    }));
    env.commit_all("map a");
    (env, written_at)
}

/// A clone of `env`'s `branch` through git's transport (so that `--depth` applies).
fn clone_of(env: &TestEnv, branch: &str, extra: &[&str]) -> TestEnv {
    let clone = env.sibling("clone");
    let url = format!("file://{}", env.root().display());
    let path = clone.root().display().to_string();
    let mut args = vec!["clone", "-q", "--single-branch", "-b", branch];
    args.extend_from_slice(extra);
    args.extend([url.as_str(), path.as_str()]);
    env.git(&args);
    clone
}

/// [`clone_of`], checked out as git does for a user whose `.git/info/attributes` holds
/// [`CRLF_ATTRIBUTE`].
fn crlf_clone_of(env: &TestEnv, branch: &str) -> TestEnv {
    let clone = clone_of(env, branch, &["--no-checkout"]);
    clone.write(".git/info/attributes", CRLF_ATTRIBUTE);
    clone.git(&["reset", "-q", "--hard"]);
    clone
}

/// `feature` squash-merged into `main`, and a clone of `main` (which never had the feature's
/// commits), checked out with CRLF line endings when `crlf`: the clone, the squash commit, and
/// the clone's `freshness --check` (which passes).
fn squashed_into_a_clone(env: &TestEnv, crlf: bool) -> (TestEnv, String, Output) {
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--squash", "feature"]);
    let squashed = env.commit_all("squashed feature");
    let clone = match crlf {
        true => crlf_clone_of(env, "main"),
        false => clone_of(env, "main", &[]),
    };
    let fresh = clone.run(&["freshness", "--check"]);
    assert_eq!(fresh.code, 0, "{fresh}");
    (clone, squashed, fresh)
}

/// `freshness --check` (which must fail) after `path` is rewritten with `text` and committed.
fn stale_after_committing(env: &TestEnv, path: &str, text: &str) -> Value {
    env.write(path, text);
    env.commit_all(&format!("change {path}"));
    env.json_allowing(&["freshness", "--check"], 1)
}

/// After a squash merge the commit the records were written at is on no branch, and a clone
/// of the main branch does not have it. Freshness then compares with the commit where the
/// records entered the branch (it used to give up, and the check passed whatever changed).
#[test]
fn after_a_squash_merge_freshness_compares_with_where_the_records_entered() {
    let (env, written_at) = mapped_on_a_feature_branch();
    let (clone, squashed, fresh) = squashed_into_a_clone(&env, false);
    assert!(
        !clone
            .git_output(&["cat-file", "-e", &format!("{written_at}^{{commit}}")])
            .status
            .success(),
        "the clone must lack the commit the records name"
    );
    assert_compared_from_the_squash(&clone, &fresh, &squashed);
}

/// The squashed clone's reads say they compare from the squash commit, and a change to the
/// cited file after it makes node `a` stale.
fn assert_compared_from_the_squash(clone: &TestEnv, fresh: &Output, squashed: &str) {
    assert!(
        fresh.stderr.contains(&format!(
            "the records written there are compared with commit {squashed}, where they entered this branch"
        )),
        "{fresh}"
    );
    let stale = stale_after_committing(clone, "src/a.rs", "pub fn a() { changed }\n");
    assert_eq!(
        stale["stale_reasons"],
        json!(["cited_files_changed"]),
        "{stale}"
    );
    assert_eq!(stale["watcher"]["graph_node_ids"], json!(["a"]), "{stale}");
}

/// Records written at several commits that are all gone after a squash merge: each commit is
/// stood in for (all of them found in one search of the rollout), and each node is compared
/// from where its own records entered.
#[test]
fn after_a_squash_merge_every_gone_commit_is_stood_in_for() {
    let (env, first) = mapped_on_a_feature_branch();
    env.write("src/b.rs", "pub fn b() { 3 }\n");
    let second = env.commit_all("more feature work");
    env.update(&json!({"upsert": {"architecture_nodes": [node_json("b", "does b", "src/b.rs")]}}));
    env.commit_all("map b");
    let (clone, squashed, fresh) = squashed_into_a_clone(&env, false);
    for gone in [&first, &second] {
        assert!(
            fresh.stderr.contains(&format!(
                "commit {gone} recorded in the rollout is not in this repository (rebased or squash-merged?); the records written there are compared with commit {squashed}"
            )),
            "{gone}: {fresh}"
        );
    }
    let stale = stale_after_committing(&clone, "src/b.rs", "pub fn b() { changed }\n");
    assert_eq!(stale["watcher"]["graph_node_ids"], json!(["b"]), "{stale}");
}

/// In a clone checked out with CRLF line endings, where the records entered is still found:
/// the rollout's lines are measured as git stores them (with `\n` endings), not as they are on
/// disk (a record past the end of every committed version entered nowhere, and the check
/// failed as if the clone were shallow).
#[test]
fn after_a_squash_merge_a_clone_with_crlf_line_endings_finds_where_the_records_entered() {
    let (env, _) = mapped_on_a_feature_branch();
    let (clone, squashed, fresh) = squashed_into_a_clone(&env, true);
    assert!(
        clone.rollout_text().contains("\r\n"),
        "{}",
        clone.rollout_text()
    );
    assert_compared_from_the_squash(&clone, &fresh, &squashed);
}

/// See: issue 46. A shallow clone (CI's default) may end before the records entered, so git
/// cannot say what changed since they were written; but every reference carries the
/// fingerprint of what was checked of it, which the work tree alone answers for: a changed
/// cited file fails the check (naming the node), an unchanged one passes it, with or without
/// the history. (References written before fingerprints still fail with `history_unknown`
/// there: `policy::freshness` tests it.)
#[test]
fn a_shallow_clone_judges_the_map_by_what_its_references_checked() {
    let (env, _) = mapped_on_a_feature_branch();
    env.write("README", "more history\n");
    env.commit_all("readme");
    let unchanged = clone_of(&env, "feature", &["--depth", "1"]);
    let check = unchanged.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 0, "{check}");
    let certificates = &check.json()["certificates"];
    assert_eq!(certificates[0]["status"], "unchanged", "{check}");
    env.write("src/a.rs", "pub fn a() { changed }\n");
    env.commit_all("change a");
    env.write("README", "even more history\n");
    env.commit_all("readme again");
    let clone = clone_of(&env, "feature", &["--depth", "1"]);
    let check = clone.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    let report = check.json();
    assert_eq!(
        report["stale_reasons"],
        json!(["cited_files_changed"]),
        "{check}"
    );
    assert_eq!(report["watcher"]["graph_node_ids"], json!(["a"]), "{check}");
    let scene = clone.ok(&["scene"]);
    assert!(
        !scene.stdout.contains("fresh: the work tree matches"),
        "{scene}"
    );
    clone.git(&["fetch", "-q", "--unshallow"]);
    let stale = clone.json_allowing(&["freshness", "--check"], 1);
    assert_eq!(
        stale["stale_reasons"],
        json!(["cited_files_changed"]),
        "{stale}"
    );
}

/// See: issue 50 item 7. When git lacks the commit a reference written before fingerprints
/// was checked at (a shallow clone, rewritten history) and nothing stands in for it, `freshness
/// --check` can neither pass nor fail: exit 2 with the kind `history_unknown` the docs name
/// (it was `git`, as if asking git had failed).
#[test]
fn regression_50_unknown_history_is_its_own_error_kind() {
    let env = TestEnv::new();
    env.write("src/a.rs", "pub fn a() {}\n");
    env.commit_all("code");
    env.update(
        &json!({"graphs": {"architecture": {"nodes": [node_json("a", "does a", "src/a.rs")]}}}),
    );
    // The same node as a record of before fingerprints, written at a commit git lacks.
    let text = env.rollout_text();
    let written: Value =
        serde_json::from_str(text.lines().last().expect("a record")).expect("json");
    let mut body = unfingerprinted(&written);
    let object = body.as_object_mut().expect("a record");
    let parent = object.remove("id").expect("id");
    object.insert("parents".to_owned(), json!([parent]));
    object.insert("at".to_owned(), json!("2026-01-01T01:00:00Z"));
    object.insert(
        "git_head".to_owned(),
        json!("0123456789abcdef0123456789abcdef01234567"),
    );
    let (_, line) = sealed_line(&body);
    let segment = env.last_segment();
    let mut planted = std::fs::read_to_string(&segment).expect("segment");
    planted.push_str(&line);
    std::fs::write(&segment, planted).expect("plant");

    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 2, "{check}");
    let error = &check.json()["error"];
    assert_eq!(error["kind"], "history_unknown", "{check}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("cannot tell whether the state is fresh")),
        "{check}"
    );
}

/// A map written before the repository's first commit names no commit, but what its references
/// cite is fingerprinted: freshness judges it by the work tree (it used to pass the check
/// whatever changed, then to fail it with exit 2 whatever did).
#[test]
fn a_map_written_before_the_first_commit_is_judged_by_its_fingerprints() {
    let env = TestEnv::bare();
    env.write("src/a.rs", "pub fn a() {}\n");
    env.ok(&["init"]);
    let node = json!({"upsert": {"architecture_nodes": [node_json("a", "does a", "src/a.rs")]}});
    env.update(&node);
    env.commit_all("code and map");
    assert_eq!(env.run(&["freshness", "--check"]).code, 0);
    env.write("src/a.rs", "pub fn a() { changed }\n");
    env.commit_all("change a");
    let check = env.run(&["--json", "freshness", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert_eq!(
        check.json()["certificates"][0]["status"],
        "changed_since_checked",
        "{check}"
    );
    // Restating the node does not certify it; re-checking it does.
    env.update(&node);
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
    env.ok(&["recheck", "a"]);
    assert_eq!(env.json(&["freshness", "--check"])["fresh"], true);
}

/// A work tree whose `.git` is a file naming a git directory elsewhere (`git init` or `git
/// clone` with `--separate-git-dir`): the store goes at the top of the work tree (not beside
/// the git directory), records name the commit checked out, and freshness reads git as it does
/// in any clone (it used to see one changed path, the empty one, and call a stale map fresh).
#[test]
fn a_separate_git_dir_is_found_from_its_work_tree() {
    let elsewhere = TestEnv::plain();
    let work = elsewhere.sibling("wt");
    let git_dir = elsewhere.root().join("meta.git");
    elsewhere.git(&[
        "init",
        "-q",
        "-b",
        "main",
        "--separate-git-dir",
        &git_dir.display().to_string(),
        &work.root().display().to_string(),
    ]);
    work.write("src/a.rs", "pub fn a() {}\n");
    let head = work.commit_all("code");
    let created = work.json(&["-C", "src", "init", "--objective", "o"]);
    assert_eq!(created["root"], "[ROOT]", "{created}");
    assert!(work.root().join(".epiphany/rollout").is_dir());
    assert!(!elsewhere.root().join(".epiphany").exists());
    assert_eq!(work.json(&["log"])["entries"][0]["git_head"], head.as_str());

    let (env, _) = mapped_on_a_feature_branch();
    env.write("src/a.rs", "pub fn a() { changed }\n");
    env.commit_all("change a");
    let stale = env.json_allowing(&["freshness", "--check"], 1);
    let separate = env.sibling("meta.git");
    let clone = clone_of(
        &env,
        "feature",
        &["--separate-git-dir", &separate.root().display().to_string()],
    );
    assert!(clone.root().join(".git").is_file());
    let cloned = clone.json_allowing(&["freshness", "--check"], 1);
    assert_eq!(cloned["stale_reasons"], stale["stale_reasons"], "{cloned}");
    assert_eq!(
        cloned["watcher"]["changed_paths"], stale["watcher"]["changed_paths"],
        "{cloned}"
    );
    assert_eq!(
        cloned["watcher"]["graph_node_ids"],
        json!(["a"]),
        "{cloned}"
    );
}

/// `GIT_DIR` and `GIT_WORK_TREE` say where the repository is, as they do for git (dotfile
/// managers, CI runners): `init` puts the store at the top of that work tree, records name the
/// commit checked out, and freshness compares with git (all of which used to act as if outside
/// git).
#[test]
fn git_dir_and_git_work_tree_from_the_environment_are_honoured() {
    let elsewhere = TestEnv::plain();
    elsewhere.git(&["init", "-q", "--bare", "-b", "main", "repo.git"]);
    let git_dir = elsewhere.root().join("repo.git").display().to_string();
    elsewhere.git(&["--git-dir", &git_dir, "config", "core.bare", "false"]);
    let work = elsewhere.sibling("wt");
    let work_tree = work.root().display().to_string();
    let work = work
        .with_var("GIT_DIR", &git_dir)
        .with_var("GIT_WORK_TREE", &work_tree);
    let vars = [("GIT_DIR", git_dir.as_str()), ("GIT_WORK_TREE", &work_tree)];
    let commit = |message: &str| {
        for args in [&["add", "-A"][..], &["commit", "-q", "-m", message]] {
            let output = work.git_output_with(args, &vars);
            assert!(output.status.success(), "git {args:?}: {output:?}");
        }
        let head = work.git_output_with(&["rev-parse", "HEAD"], &vars);
        String::from_utf8(head.stdout)
            .expect("utf8")
            .trim()
            .to_owned()
    };
    work.write("src/a.rs", "pub fn a() {}\n");
    let head = commit("code");

    let created = work.json(&["-C", "src", "init", "--objective", "o"]);
    assert_eq!(created["root"], "[ROOT]", "{created}");
    assert!(work.root().join(".epiphany/rollout").is_dir());
    assert!(!work.root().join("src/.epiphany").exists());
    assert_eq!(
        work.json(&["-C", "src", "log"])["entries"][0]["git_head"],
        head.as_str()
    );
    work.update(
        &json!({"graphs": {"architecture": {"nodes": [node_json("a", "does a", "src/a.rs")]}}}),
    );
    commit("map a");
    assert_eq!(work.run(&["freshness", "--check"]).code, 0);
    work.write("src/a.rs", "pub fn a() { changed }\n");
    commit("change a");
    let stale = work.json_allowing(&["-C", "src", "freshness", "--check"], 1);
    assert_eq!(
        stale["stale_reasons"],
        json!(["cited_files_changed"]),
        "{stale}"
    );
    assert_eq!(stale["watcher"]["graph_node_ids"], json!(["a"]), "{stale}");
}
