//! Branches and pushes: a branch from before `init` is a branch without a store, and the
//! pre-push hook judges the commits being pushed, through git's own `push` to a bare remote.

use serde_json::json;

use crate::common::TestEnv;
use crate::test_hooks::map_a_file;

/// A repository whose branch `old` was made before `init`, and whose `main` has a store with a
/// node citing `src/lib.rs`, a search index and the git hooks (strict pre-push), all
/// committed; `old` is checked out, so git has left the store's ignored cache and lock behind.
fn on_a_branch_from_before_init() -> (TestEnv, TestEnv) {
    let env = TestEnv::bare();
    env.write("src/lib.rs", "pub fn cited() {}\n");
    env.commit_all("code, before init");
    env.git(&["branch", "old"]);
    env.ok(&["init", "--objective", "map the library"]);
    env.ok(&[
        "node",
        "set",
        "lib",
        "--purpose",
        "the library",
        "--ref",
        "src/lib.rs",
    ]);
    env.ok(&["index"]);
    env.ok(&["hooks", "install", "--git", "--pre-push=strict"]);
    env.commit_all("map");
    let remote = env.bare_remote();
    let pushed = env.push(&remote, "main");
    assert!(pushed.status.success(), "{pushed:?}");
    env.git(&["checkout", "-q", "old"]);
    assert!(env.root().join(".epiphany/cache").is_dir());
    assert!(env.root().join(".epiphany/lock").is_file());
    assert!(!env.root().join(".epiphany/rollout").exists());
    (env, remote)
}

/// See: issue 50 item 6. On a branch from before `init`, the cache and lock git leaves behind
/// are no store: a read says there is none (not that it is damaged), the session hook says
/// nothing, a strict pre-push lets the branch go silently, and `init` (with an objective or
/// without) makes a store there.
#[test]
fn regression_50_a_branch_from_before_init_has_no_store() {
    let (env, remote) = on_a_branch_from_before_init();
    for args in [["--json", "scene"], ["--json", "verify"]] {
        let read = env.run(&args);
        assert_eq!(read.code, 2, "{read}");
        let error = &read.json()["error"];
        assert_eq!(error["kind"], "no_store", "{read}");
        assert!(!read.stdout.contains("incomplete"), "{read}");
    }
    let wrote = env.run(&["note", "a finding"]);
    assert_eq!(wrote.code, 2, "{wrote}");
    assert!(wrote.stderr.contains("epiphany init"), "{wrote}");
    assert!(!env.root().join(".epiphany/rollout").exists());

    let start = env.run_with_stdin(&["hook", "session-start", "--host", "claude"], "{}");
    assert_eq!((start.code, start.stdout.as_str()), (0, ""), "{start}");
    assert!(start.stderr.is_empty(), "{start}");

    env.write("b.txt", "b\n");
    env.commit_all("work on the old branch");
    let pushed = env.push(&remote, "old");
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(pushed.stderr.is_empty(), "{pushed:?}");

    let created = env.json(&["init", "--objective", "a store here too"]);
    assert_eq!(created["created"], true, "{created}");
    let scene = env.json(&["scene"]);
    assert_eq!(scene["objective"], "a store here too", "{scene}");
    assert!(
        !env.root().join(".epiphany/cache/snapshots").exists(),
        "the other branch's cache was set aside"
    );

    let (env, _) = on_a_branch_from_before_init();
    let created = env.json(&["init"]);
    assert_eq!(created["created"], true, "{created}");
    env.update(&json!({"objective": "o"}));
}

/// See: issue 50 item 6. Where the commit checked out holds records, the same leftovers are a
/// store that lost them: every read refuses it and says how to restore it.
#[test]
fn regression_50_leftovers_where_records_are_committed_are_damage() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "o"}));
    env.commit_all("store");
    for tracked in ["rollout", ".gitattributes", ".gitignore"] {
        let path = env.root().join(".epiphany").join(tracked);
        match path.is_dir() {
            true => std::fs::remove_dir_all(path).expect("rm"),
            false => std::fs::remove_file(path).expect("rm"),
        }
    }
    let read = env.run(&["--json", "scene"]);
    assert_eq!(read.code, 2, "{read}");
    assert_eq!(read.json()["error"]["kind"], "corrupt", "{read}");
    assert!(
        read.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the store is incomplete")),
        "{read}"
    );
    let init = env.run(&["init"]);
    assert_eq!(init.code, 2, "{init}");
    assert!(
        env.root().join(".epiphany/cache").is_dir(),
        "nothing set aside"
    );
}

/// A repository with the node `lib` citing `src/lib.rs`, the strict pre-push hook, everything
/// committed, and a bare remote; then `src/lib.rs` changes in a commit, so the map that commit
/// holds is stale.
fn stale_commit() -> (TestEnv, TestEnv) {
    let env = TestEnv::new();
    map_a_file(&env);
    env.ok(&["hooks", "install", "--git", "--pre-push=strict"]);
    env.commit_all("map");
    let remote = env.bare_remote();
    env.write("src/lib.rs", "pub fn cited() { let _ = 1; }\n");
    env.commit_all("change what the map cites");
    (env, remote)
}

fn refused_as_stale(pushed: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&pushed.stderr);
    assert!(!pushed.status.success(), "{pushed:?}");
    assert!(
        stderr.contains("the push is refused: the map is stale: cited code changed since it was checked: src/lib.rs"),
        "{stderr}"
    );
}

/// See: issue 50 item 5. The hook judges the commits git pushes, not the work tree: a
/// `recheck` not yet committed leaves the pushed map stale and the push refused (CI on a clone
/// of the remote would fail `freshness --check`); committed, it goes. A stale map in the work
/// tree does not hold up a pushed commit whose map is fresh, and a branch other than the one
/// checked out is judged by its own commit.
#[test]
fn regression_50_pre_push_judges_the_pushed_commits() {
    let (env, remote) = stale_commit();
    env.ok(&["recheck", "lib"]);
    // The map is fresh in the work tree; the retrieval index may not be yet, as the
    // post-commit hook builds it in the background.
    let fresh = env.ok(&["--json", "freshness"]).json();
    let stale = fresh["stale_reasons"].as_array().expect("stale_reasons");
    assert!(
        stale.iter().all(|reason| reason == "index_stale"),
        "the work tree's map is fresh: {fresh}"
    );
    refused_as_stale(&env.push(&remote, "HEAD:main"));

    env.commit_all("re-read");
    let pushed = env.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(pushed.stderr.is_empty(), "{pushed:?}");
    // What the hook let through passes CI's check on a clone of the remote.
    let clone = env.sibling("clone");
    let (url, into) = (remote.root().display(), clone.root().display());
    env.git(&[
        "clone",
        "-q",
        "-b",
        "main",
        &url.to_string(),
        &into.to_string(),
    ]);
    let checked = clone.run(&["freshness", "--check"]);
    assert_eq!(checked.code, 0, "{checked}");

    // Stale in the work tree only: the pushed commit is fresh.
    env.write("src/lib.rs", "pub fn cited() { let _ = 2; }\n");
    assert_eq!(env.run(&["freshness", "--check"]).code, 1);
    env.git(&["checkout", "-q", "-b", "side"]);
    let pushed = env.push(&remote, "side");
    assert!(pushed.status.success(), "{pushed:?}");

    // A stale branch pushed from a fresh checkout; a ref deleted pushes nothing to judge.
    env.git(&["checkout", "-q", "--", "src/lib.rs"]);
    env.git(&["checkout", "-q", "main"]);
    env.git(&["branch", "stale", "HEAD~1"]);
    refused_as_stale(&env.push(&remote, "stale"));
    let deleted = env.push(&remote, ":side");
    assert!(deleted.status.success(), "{deleted:?}");
}

/// See: issue 50 item 5. From a linked worktree (git hands its hooks `GIT_DIR`), the pushed
/// commit is judged, not the worktree's files.
#[test]
fn regression_50_pre_push_from_a_linked_worktree_judges_the_commit() {
    let (env, remote) = stale_commit();
    let linked = env.sibling("linked");
    env.git(&[
        "worktree",
        "add",
        "-q",
        &linked.root().display().to_string(),
        "-b",
        "linked",
    ]);
    linked.ok(&["recheck", "lib"]);
    refused_as_stale(&linked.push(&remote, "linked"));
    linked.commit_all("re-read");
    let pushed = linked.push(&remote, "linked");
    assert!(pushed.status.success(), "{pushed:?}");
}
