//! Records belong to their store (docs/store.md#store-identity): a segment copied from another
//! repository is named by `verify` and refused by readers and writers, while branches and
//! clones of one store keep working; and a record whose parent git removed says what git did
//! (a revert, a rebase, a force-push, a cherry-pick). Through the binary and real git.

use serde_json::Value;

use crate::common::TestEnv;

/// A store with its `init` committed and one note committed on top.
fn store_with_a_note(note: &str) -> TestEnv {
    let env = TestEnv::new();
    env.commit_all("init");
    env.ok(&["note", note]);
    env.commit_all(note);
    env
}

fn identity(env: &TestEnv) -> String {
    let bytes = env.read(".epiphany/rollout/identity");
    String::from_utf8(bytes).expect("utf-8").trim().to_owned()
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

/// The notes `verify --json` gives, and that it passed.
fn verified_notes(env: &TestEnv) -> Vec<String> {
    let report = env.json(&["verify"]);
    assert_eq!(report["ok"], true, "{report}");
    (report["notes"].as_array().expect("notes").iter())
        .map(|note| note.as_str().expect("text").to_owned())
        .collect()
}

/// See: issue 49 item 3. A segment copied from another repository (two records of another
/// store) is named by `verify`, with the segment, the count and the store they claim; `scene`,
/// `show` and a write refuse it with the remedy, and change nothing; once `git rm` removes it,
/// the store reads and verifies again.
#[test]
fn regression_49_a_segment_from_another_repository_is_named_and_refused() {
    let env = store_with_a_note("ours");
    let other = TestEnv::new();
    other.ok(&["note", "theirs, one"]);
    other.ok(&["note", "theirs, two"]);
    let theirs = other.last_segment();
    let name = file_name(&theirs);
    std::fs::copy(&theirs, env.root().join(".epiphany/rollout").join(&name)).expect("copy");
    env.commit_all("bring a segment from elsewhere");
    let (ours, foreign) = (identity(&env), identity(&other));
    assert_ne!(ours, foreign);

    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.code, 1, "{verify}");
    let report = verify.json();
    let problems = report["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1, "{report}");
    assert_eq!(problems[0]["segment"], name.as_str());
    let message = problems[0]["message"].as_str().expect("message");
    assert!(message.starts_with("2 record(s)"), "{message}");
    assert!(
        message.contains(&format!("claim store `{foreign}`")),
        "{message}"
    );
    assert!(
        message.contains(&format!("this store is `{ours}`")),
        "{message}"
    );
    // Only this store's records are replayed.
    assert_eq!(report["records"], 1, "{report}");

    let before = env.store_bytes();
    for args in [
        &["--json", "scene"][..],
        &["--json", "show"],
        &["--json", "note", "more"],
    ] {
        let refused = env.run(args);
        assert_eq!(refused.code, 2, "{args:?}: {refused}");
        let error = &refused.json()["error"];
        assert_eq!(error["kind"], "corrupt", "{refused}");
        let message = error["message"].as_str().expect("message");
        assert!(message.contains(&name), "{message}");
        assert!(message.contains("another store"), "{message}");
        assert!(
            error["hint"].as_str().expect("hint").contains("git rm"),
            "{refused}"
        );
    }
    assert_eq!(
        env.store_bytes(),
        before,
        "a refused command changed the store"
    );

    env.git(&["rm", "-q", &format!(".epiphany/rollout/{name}")]);
    env.git(&["commit", "-q", "-m", "remove the foreign segment"]);
    assert!(verified_notes(&env).is_empty());
    assert_eq!(env.json(&["show"])["revision"], 1);
    env.ok(&["note", "more"]);
}

/// A cherry-pick, a merge and a clone of one store keep every record its own, and two clones
/// that each ran `init` and were merged join their identities (git's union of the file).
#[test]
fn branches_and_clones_of_one_store_keep_their_records() {
    let env = store_with_a_note("base");
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.ok(&["note", "on the feature"]);
    let feature = env.commit_all("feature");
    env.git(&["checkout", "-q", "main"]);
    env.ok(&["note", "on main"]);
    env.commit_all("main");
    env.git(&["cherry-pick", feature.as_str()]);
    assert!(verified_notes(&env).is_empty());
    env.git(&["merge", "-q", "--no-edit", "feature"]);
    assert!(verified_notes(&env).is_empty());
    assert_eq!(env.json(&["show"])["revision"], 3);

    let clone = env.sibling("clone");
    env.git(&["clone", "-q", ".", &clone.root().display().to_string()]);
    clone.ok(&["note", "in the clone"]);
    assert!(verified_notes(&clone).is_empty());
    assert_eq!(identity(&clone), identity(&env));

    // Two inits on two branches, merged: one store with both identities.
    let twice = TestEnv::bare();
    twice.write("README", "code\n");
    twice.commit_all("code");
    twice.git(&["checkout", "-q", "-b", "other"]);
    twice.ok(&["init", "--objective", "other's"]);
    twice.commit_all("init on other");
    twice.git(&["checkout", "-q", "main"]);
    twice.ok(&["init"]);
    twice.ok(&["note", "main's"]);
    twice.commit_all("init on main");
    twice.git(&["merge", "-q", "--no-edit", "other"]);
    let identities = String::from_utf8(twice.read(".epiphany/rollout/identity")).expect("utf-8");
    assert_eq!(identities.lines().count(), 2, "{identities}");
    assert!(verified_notes(&twice).is_empty());
    assert_eq!(twice.json(&["show"])["objective"], "other's");
}

/// A store `init` created before identities (no `rollout/identity`) reads, writes and
/// verifies as before; `init` run again gives it one, and the records written after carry it.
#[test]
fn an_older_store_without_an_identity_is_given_one_by_init() {
    let env = store_with_a_note("before identities");
    env.git(&["rm", "-q", ".epiphany/rollout/identity"]);
    // Written as an older binary did: no claim.
    let segment = env.last_segment();
    let text = std::fs::read_to_string(&segment).expect("read");
    assert!(text.contains("\"store\":"), "{text}");
    let (_, line) = crate::common::sealed_line(&serde_json::json!({
        "parents": [], "at": "2026-01-01T00:00:00Z", "source": "update",
        "changed_fields": ["objective"], "patch": {"objective": "older"}}));
    std::fs::write(&segment, line).expect("write");
    let _ = std::fs::remove_dir_all(env.root().join(".epiphany/cache"));
    env.commit_all("an older store");
    env.ok(&["note", "still no identity"]);
    assert!(!env.root().join(".epiphany/rollout/identity").exists());
    assert!(!env.rollout_text().contains("\"store\":"));
    assert!(verified_notes(&env).is_empty());

    let init = env.ok(&["init"]);
    assert!(init.stderr.contains("rollout/identity"), "{init}");
    let given = identity(&env);
    env.ok(&["note", "with an identity"]);
    let claims = env
        .rollout_text()
        .matches(&format!("\"store\":\"{given}\""))
        .count();
    assert_eq!(claims, 1);
    assert!(verified_notes(&env).is_empty());
    assert_eq!(env.json(&["show"])["revision"], 3);
}

/// The note `verify` gives for a record whose parent the rollout lacks.
fn missing_parent_note(env: &TestEnv) -> String {
    let notes = verified_notes(env);
    let found: Vec<&String> = (notes.iter())
        .filter(|note| note.contains("names a parent that is not in the rollout"))
        .collect();
    assert_eq!(found.len(), 1, "{notes:?}");
    found[0].clone()
}

/// Two notes in two commits after `init`'s: the second's record names the first's.
fn two_commits(env: &TestEnv) -> (String, String) {
    env.ok(&["note", "first"]);
    let first = env.commit_all("first");
    let first_segment = file_name(&env.last_segment());
    env.ok(&["note", "second"]);
    env.commit_all("second");
    (first, first_segment)
}

/// See: issue 49 item 3. Each way git can take a record's parent away gets its own words:
/// a revert names the reverting commit and the segment it removed; a rebase that dropped the
/// commit says so; a force-push names the remote branch; a cherry-pick names the branch that
/// holds the parent.
#[test]
fn regression_49_a_missing_parent_says_what_git_did() {
    let reverted = TestEnv::new();
    reverted.commit_all("init");
    let (first, segment) = two_commits(&reverted);
    reverted.git(&["revert", "--no-edit", first.as_str()]);
    let revert = reverted.git(&["rev-parse", "HEAD"]);
    let note = missing_parent_note(&reverted);
    assert!(
        note.contains(&format!(
            "commit {} reverted commit {} and so removed segment `{segment}`",
            &revert[..10],
            &first[..10]
        )),
        "{note}"
    );

    let rebased = TestEnv::new();
    rebased.commit_all("init");
    let (first, _) = two_commits(&rebased);
    let before = rebased.git(&["rev-parse", "HEAD"]);
    rebased.git(&[
        "rebase",
        "-q",
        "--onto",
        &format!("{first}~1"),
        first.as_str(),
    ]);
    let note = missing_parent_note(&rebased);
    assert!(
        note.contains("a rebase dropped the commit that added it"),
        "{note}"
    );
    assert!(note.contains(&before[..10]), "{note}");

    let picked = TestEnv::new();
    picked.commit_all("init");
    picked.git(&["checkout", "-q", "-b", "feature"]);
    two_commits(&picked);
    let second = picked.git(&["rev-parse", "HEAD"]);
    picked.git(&["checkout", "-q", "main"]);
    picked.git(&["cherry-pick", second.trim()]);
    let note = missing_parent_note(&picked);
    assert!(
        note.contains("`feature` holds it but this branch never did"),
        "{note}"
    );
    assert!(
        !note.contains("rebase") && !note.contains("revert"),
        "{note}"
    );
}

/// See: issue 49 item 3. A clone that pulls a branch someone force-pushed without a commit
/// says so, naming the remote branch.
#[test]
fn regression_49_a_force_push_is_named() {
    let env = TestEnv::new();
    env.commit_all("init");
    let remote = env.bare_remote();
    let url = remote.root().display().to_string();
    env.git(&["remote", "add", "origin", &url]);
    let (first, _) = two_commits(&env);
    env.git(&["push", "-q", "origin", "main"]);

    let clone = env.sibling("clone");
    env.git(&[
        "clone",
        "-q",
        "-b",
        "main",
        &url,
        &clone.root().display().to_string(),
    ]);
    assert_eq!(clone.json(&["show"])["revision"], 2);

    let pushed = env.git(&["rev-parse", "HEAD"]);
    env.git(&[
        "rebase",
        "-q",
        "--onto",
        &format!("{first}~1"),
        first.as_str(),
    ]);
    env.git(&["push", "-q", "--force", "origin", "main"]);
    clone.git(&["fetch", "-q", "origin"]);
    clone.git(&["reset", "-q", "--hard", "origin/main"]);
    let note = missing_parent_note(&clone);
    assert!(
        note.contains("`origin/main` was force-pushed without the commit that added it"),
        "{note}"
    );
    assert!(note.contains(&pushed[..10]), "{note}");
    let shown: Value = clone.json(&["show"]);
    assert_eq!(shown["revision"], 1);
}
