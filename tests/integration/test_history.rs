//! What a store does to the repository it lives in, over a long history: git carries only the
//! records, every history operation stays clean at any size, a rollback stays small, lost
//! records are named, `verify` never blocks a writer, and a shallow clone never resumes on
//! history it does not have. All through the binary and real git commands.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::common::observation_patch;
use crate::common::snapshot_names;
use crate::test_git::assert_whole;
use crate::test_git::git_clean;
use crate::test_git::observe;
use crate::test_git::repository;

/// Every path git has ever held under `.epiphany/`, in any commit of any branch.
fn paths_in_history(env: &TestEnv) -> Vec<String> {
    let listed = env.git(&[
        "log",
        "--all",
        "--name-only",
        "--format=",
        "--",
        ".epiphany",
    ]);
    let mut paths: Vec<String> = listed.lines().map(str::to_owned).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Asserts git never held anything under `.epiphany/` but the records and the two attribute
/// files.
fn assert_only_records_in_git(env: &TestEnv) {
    for path in paths_in_history(env) {
        assert!(
            path.starts_with(".epiphany/rollout/")
                || path == ".epiphany/.gitignore"
                || path == ".epiphany/.gitattributes",
            "git carries `{path}`"
        );
    }
}

#[test]
fn git_carries_only_records_through_writes_merges_and_clones() {
    let env = repository().with_var("EPIPHANY_SNAPSHOT_EVERY", "3");
    for round in 0..12 {
        for write in 0..4 {
            env.update(&observation_patch(&format!("{round}-{write}")));
        }
        env.commit_all(&format!("round {round}"));
    }
    env.git(&["checkout", "-q", "-b", "feature", "HEAD~3"]);
    for id in ["f1", "f2", "f3", "f4"] {
        observe(&env, id);
    }
    env.git(&["checkout", "-q", "main"]);
    git_clean(&env, &["merge", "-q", "--no-edit", "feature"]);
    assert!(
        snapshot_names(&env.root().join(".epiphany/cache/snapshots")).len() > 2,
        "the writes cached snapshots"
    );
    assert_only_records_in_git(&env);
    assert_eq!(
        env.git(&["status", "--porcelain"]),
        "",
        "the cache is ignored"
    );

    let head = env.json(&["show"]);
    let mut expected: Vec<String> = (0..12)
        .flat_map(|round| (0..4).map(move |write| format!("{round}-{write}")))
        .collect();
    expected.extend(["f1", "f2", "f3", "f4"].map(str::to_owned));
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_whole(&env, &expected);

    // A fresh clone has no cache: it folds the records once, caches the fold, and reads the
    // same state as the original.
    let clone = env.sibling("clone");
    let path = clone.root().display().to_string();
    env.git(&["clone", "-q", ".", &path]);
    assert!(!clone.root().join(".epiphany/cache").exists());
    assert_eq!(clone.json(&["show"]), head);
    assert_eq!(
        snapshot_names(&clone.root().join(".epiphany/cache/snapshots")).len(),
        1,
        "the first read cached its fold"
    );
    assert_eq!(clone.json(&["show"]), head);
    assert_whole(&clone, &expected);
}

/// A state whose fold is far past the size at which git's rename detection pairs unrelated
/// files: branches that write on it merge, rebase and cherry-pick without a conflict, since git
/// sees only new segments.
#[test]
fn a_store_past_eight_mib_merges_rebases_and_cherry_picks_cleanly() {
    let env = repository();
    let observations: Vec<Value> = (0..9000)
        .map(|i| {
            json!({"id": format!("big-{i}"), "source_kind": "test", "status": "ok",
                   "summary": format!("{i}: {}", "the lexer keeps the span of every token it retries ".repeat(18)),
                   "evidence_ids": ["ev-big"]})
        })
        .collect();
    env.update(&json!({
        "observations": observations,
        "evidence": [{"id": "ev-big", "kind": "test", "status": "ok", "summary": "big"}]
    }));
    env.commit_all("a large state");
    let fold = snapshot_names(&env.root().join(".epiphany/cache/snapshots"));
    let size = std::fs::metadata(env.root().join(".epiphany/cache/snapshots").join(&fold[0]))
        .expect("fold")
        .len();
    assert!(size > 8 << 20, "the fold is {size} bytes");

    env.git(&["checkout", "-q", "-b", "feature"]);
    observe(&env, "f1");
    observe(&env, "f2");
    env.git(&["checkout", "-q", "main"]);
    observe(&env, "m1");
    observe(&env, "m2");
    env.git(&["branch", "-q", "before-merge"]);
    git_clean(&env, &["merge", "-q", "--no-edit", "feature"]);
    let merged = env.json(&["show"]);
    assert_eq!(merged["observations"].as_array().map(Vec::len), Some(9004));
    assert_eq!(env.json(&["verify"])["ok"], true);

    env.git(&["reset", "-q", "--hard", "before-merge"]);
    git_clean(&env, &["rebase", "-q", "feature"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    assert_eq!(
        env.json(&["show"])["observations"].as_array().map(Vec::len),
        Some(9004)
    );

    env.git(&["checkout", "-q", "feature"]);
    git_clean(&env, &["cherry-pick", "before-merge"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    assert_eq!(
        env.json(&["show"])["observations"].as_array().map(Vec::len),
        Some(9003)
    );
}

/// A commit that reached another branch and was then undone with `reset` (soft or mixed) or
/// amended: the next write starts a new segment instead of appending to the one that commit
/// holds, so merging that branch is clean.
#[test]
fn a_write_after_undoing_a_shared_commit_never_appends_to_its_segment() {
    for undo in [
        &["reset", "-q", "--soft", "HEAD~1"][..],
        &["reset", "-q", "--mixed", "HEAD~1"],
    ] {
        let env = repository();
        env.update(&observation_patch("shared"));
        env.commit_all("shared");
        env.git(&["branch", "other"]);
        env.git(undo);
        env.update(&observation_patch("after"));
        env.commit_all("after");
        git_clean(&env, &["merge", "-q", "--no-edit", "other"]);
        assert_whole(&env, &["shared", "after"]);
    }

    let env = repository();
    env.update(&observation_patch("shared"));
    env.commit_all("shared");
    env.git(&["branch", "other"]);
    env.update(&observation_patch("amended"));
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "--amend", "--no-edit"]);
    env.update(&observation_patch("after"));
    env.commit_all("after");
    git_clean(&env, &["merge", "-q", "--no-edit", "other"]);
    assert_whole(&env, &["shared", "amended", "after"]);
}

/// Should two versions of one segment meet all the same (a history rewritten by hand), git's
/// union driver joins them: every line is an immutable record.
#[test]
fn two_versions_of_one_segment_merge_as_their_union() {
    let env = repository();
    env.update(&observation_patch("base"));
    env.commit_all("base");
    let segment = env.last_segment();
    let relative = segment
        .strip_prefix(env.root())
        .expect("inside")
        .display()
        .to_string();
    let base = std::fs::read_to_string(&segment).expect("segment");
    // Two branches append different records to the same file, as only a hand-made history
    // does: each line is copied from a store that wrote it.
    // Their lines claim this store's identity (listed first: the one their writers stamp).
    let identity = String::from_utf8(env.read(".epiphany/rollout/identity")).expect("utf-8");
    let adopt = |store: &TestEnv| {
        let own = String::from_utf8(store.read(".epiphany/rollout/identity")).expect("utf-8");
        store.write(".epiphany/rollout/identity", format!("{identity}{own}"));
    };
    let other = repository();
    adopt(&other);
    other.update(&observation_patch("theirs"));
    let theirs_line = other
        .rollout_text()
        .lines()
        .last()
        .expect("line")
        .to_owned();
    let ours = repository();
    adopt(&ours);
    ours.update(&observation_patch("ours"));
    let ours_line = ours.rollout_text().lines().last().expect("line").to_owned();
    env.git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(&segment, format!("{base}{theirs_line}\n")).expect("append");
    env.commit_all("theirs");
    env.git(&["checkout", "-q", "main"]);
    std::fs::write(&segment, format!("{base}{ours_line}\n")).expect("append");
    env.commit_all("ours");
    git_clean(&env, &["merge", "-q", "--no-edit", "feature"]);
    let merged = std::fs::read_to_string(env.root().join(&relative)).expect("merged");
    assert!(
        merged.contains(&ours_line) && merged.contains(&theirs_line),
        "{merged}"
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

#[test]
fn a_rollback_record_names_what_it_restores_and_stays_small() {
    let env = repository().with_var("EPIPHANY_SNAPSHOT_EVERY", "4");
    let nodes: Vec<Value> = (0..400)
        .map(|i| {
            json!({"id": format!("node-{i}"), "title": format!("Node {i}"),
                        "purpose": format!("keeps the span of request {i} intact across retries")})
        })
        .collect();
    env.update(&json!({"upsert": {"architecture_nodes": nodes}}));
    for i in 0..9 {
        env.update(&observation_patch(&i.to_string()));
    }
    let before_last = env.json(&["show", "--revision", "HEAD~1"]);
    let report = env.json(&["rollback", "--to-revision", "HEAD~1"]);
    assert_eq!(
        report["changed_fields"],
        json!(["observations", "evidence"])
    );
    let line = env.rollout_text().lines().last().expect("line").to_owned();
    assert!(
        line.len() < 1024,
        "the rollback record is {} bytes",
        line.len()
    );
    let record: Value = serde_json::from_str(&line).expect("record");
    assert!(record["restore"]["tips"].is_array(), "{record}");
    assert!(record["restore"].get("state").is_none(), "{record}");

    // The head, a full replay and the revision it restored agree (revision and turn aside).
    let without_revision = |mut state: Value| {
        state["revision"] = Value::Null;
        state
    };
    let head = env.json(&["show"]);
    assert_eq!(
        without_revision(head.clone()),
        without_revision(before_last)
    );
    let records = head["revision"].as_u64().expect("revision");
    assert_eq!(
        env.json(&["show", "--revision", &records.to_string()]),
        head
    );
    assert_eq!(env.json(&["verify"])["ok"], true);

    // Rolling back past several snapshots, and then rolling back the rollback.
    env.ok(&["rollback", "--to-revision", "3"]);
    assert_eq!(
        env.json(&["show"])["observations"].as_array().map(Vec::len),
        Some(1)
    );
    env.ok(&["rollback", "--to-revision", "HEAD~1"]);
    assert_eq!(
        without_revision(env.json(&["show"])),
        without_revision(head)
    );
    let records = env.json(&["show"])["revision"].as_u64().expect("revision");
    assert_eq!(
        env.json(&["show", "--revision", &records.to_string()]),
        env.json(&["show"])
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// A store whose snapshots git tracked (written before they left it) is upgraded by its next
/// write: the snapshots leave git's index and the work tree for the cache, the attribute files
/// are this version's, and nothing read changes.
#[test]
fn a_store_with_tracked_snapshots_is_upgraded_by_its_next_write() {
    let env = TestEnv::bare();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/v3");
    let store = env.root().join(".epiphany");
    for dir in ["rollout", "snapshots"] {
        std::fs::create_dir_all(store.join(dir)).expect("dir");
        for entry in std::fs::read_dir(fixture.join(dir)).expect("fixture") {
            let path = entry.expect("entry").path();
            std::fs::copy(&path, store.join(dir).join(path.file_name().expect("name")))
                .expect("copy");
        }
    }
    std::fs::write(
        store.join(".gitattributes"),
        "rollout/** -text\nsnapshots/** -text -merge diff=epiphany\n",
    )
    .expect("attributes");
    std::fs::write(store.join(".gitignore"), "cache/\nlock\n.tmp-*\n").expect("ignore");
    env.commit_all("an older store");
    let before = env.json(&["show"]);

    env.update(&observation_patch("upgraded"));
    assert!(!store.join("snapshots").exists());
    let status = env.git(&["status", "--porcelain", "--", ".epiphany"]);
    assert!(
        status
            .lines()
            .filter(|line| line.contains("snapshots/"))
            .all(|line| line.starts_with("D ")),
        "the snapshots leave the index:\n{status}"
    );
    assert!(status.contains("snapshots/"), "{status}");
    let attributes = String::from_utf8(env.read(".epiphany/.gitattributes")).expect("utf-8");
    assert!(attributes.contains("merge=union"), "{attributes}");
    env.commit_all("upgrade");
    assert_eq!(env.git(&["status", "--porcelain"]), "");
    let after = env.json(&["show"]);
    assert_eq!(after["objective"], before["objective"]);
    assert_eq!(
        after["observations"].as_array().map(Vec::len),
        before["observations"].as_array().map(|o| o.len() + 1)
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Records lost from the rollout are an error, never an older or empty state: a deleted
/// `rollout/` or a truncated committed segment (git's commit holds them), and uncommitted
/// records whose fold this checkout cached. Writers refuse and change nothing, `verify` names
/// the loss; restoring the files, or accepting the loss with `verify --repair`, ends it.
#[test]
fn lost_records_are_an_error_until_restored() {
    // Committed records, the whole rollout deleted.
    let env = repository();
    observe(&env, "kept");
    let head = env.json(&["show"]);
    std::fs::remove_dir_all(env.root().join(".epiphany/rollout")).expect("remove");
    assert_lost(&env);
    env.git(&["checkout", "--", ".epiphany/rollout"]);
    assert_eq!(env.json(&["show"]), head);

    // A committed segment cut short.
    let segment = env.last_segment();
    let bytes = std::fs::read(&segment).expect("segment");
    std::fs::write(&segment, &bytes[..bytes.len() / 2]).expect("truncate");
    assert_lost(&env);
    std::fs::write(&segment, &bytes).expect("restore");
    assert_eq!(env.json(&["show"]), head);

    // Uncommitted records: only the cached fold knows them.
    env.update(&observation_patch("uncommitted-1"));
    env.update(&observation_patch("uncommitted-2"));
    env.ok(&["show"]);
    let segment = env.last_segment();
    let bytes = std::fs::read(&segment).expect("segment");
    let first_line = bytes.iter().position(|b| *b == b'\n').expect("a line") + 1;
    std::fs::write(&segment, &bytes[..first_line]).expect("drop a line");
    assert_lost(&env);
    // Accepting the loss: the cache is rebuilt from the records that are left.
    env.ok(&["verify", "--repair"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    let after = env.json(&["show"]);
    assert_eq!(
        after["revision"].as_u64(),
        head["revision"].as_u64().map(|r| r + 1)
    );

    // Checking out an older commit is no loss: the cache holds folds of the newer one.
    env.commit_all("one more");
    env.git(&["checkout", "-q", "HEAD~2"]);
    assert_eq!(env.json(&["verify"])["ok"], true);
    env.ok(&["show"]);
}

/// Asserts that reads and writes refuse a store with lost records, naming them, and that the
/// refused write changed nothing.
fn assert_lost(env: &TestEnv) {
    let read = env.run(&["--json", "show"]);
    assert_eq!(read.code, 2, "{read}");
    let error = &read.json()["error"];
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("records are missing")),
        "{read}"
    );
    assert!(
        error["hint"]
            .as_str()
            .is_some_and(|h| h.contains("verify --repair")),
        "{read}"
    );
    let before = env.store_bytes();
    let write = env.run_with_stdin(&["update"], observation_patch("refused").to_string());
    assert_eq!(write.code, 2, "{write}");
    assert_eq!(
        env.store_bytes(),
        before,
        "a refused write changed the store"
    );
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.code, 1, "{verify}");
    assert!(
        verify.stdout.contains("lost") || verify.stdout.contains("missing"),
        "{verify}"
    );
}

/// `verify` reads without holding the writers' lock: a write beside a long `verify` lands at
/// once, with a lock wait far shorter than the check.
#[test]
fn a_write_beside_a_long_verify_succeeds() {
    let env = repository();
    for chunk in 0..40 {
        let evidence = format!("ev-{chunk}");
        let observations: Vec<Value> = (chunk * 500..(chunk + 1) * 500)
            .map(|i| {
                json!({"id": format!("o-{i}"), "summary": format!("observation {i}"),
                            "source_kind": "test", "status": "ok", "evidence_ids": [evidence]})
            })
            .collect();
        env.update(&json!({"observations": observations,
                           "evidence": [{"id": evidence, "kind": "t", "status": "ok", "summary": "s"}]}));
    }
    let started = std::time::Instant::now();
    let mut verify = env.std_command(&["verify"]).spawn().expect("verify");
    std::thread::sleep(std::time::Duration::from_millis(150));
    let write = env.ok_with(
        &["update"],
        &[("EPIPHANY_LOCK_TIMEOUT_MS", "100")],
        observation_patch("beside").to_string(),
    );
    let wrote_after = started.elapsed();
    let status = verify.wait().expect("verify ends");
    let verified_after = started.elapsed();
    assert!(status.success(), "verify: {status}");
    assert!(write.code == 0, "{write}");
    assert!(
        wrote_after < verified_after,
        "the check ended ({verified_after:?}) before the write ({wrote_after:?}): it proves nothing"
    );
}

/// In a shallow clone git lacks the commit the map was written at, but the checkpoint's
/// reference carries the fingerprint of what was checked (issue 46): a change to the cited
/// code is still seen, and no view resumes on it.
#[test]
fn a_shallow_clone_never_resumes_on_changed_cited_code() {
    let env = TestEnv::bare();
    env.ok(&["init"]);
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.commit_all("code");
    env.update(&json!({"investigation_checkpoint": {
        "checkpoint_id": "ck-1", "kind": "bug", "disposition": "resume_ready",
        "focus": "the lexer", "next_action": "read lex", "code_refs": [{"path": "src/lexer.rs"}]}}));
    env.commit_all("checkpoint");
    env.write("README", "more history\n");
    env.commit_all("readme");
    let clone = env.sibling("shallow");
    let url = format!("file://{}", env.root().display());
    let path = clone.root().display().to_string();
    env.git(&["clone", "-q", "--depth", "1", &url, &path]);
    clone.write("src/lexer.rs", "pub fn lex() { changed }\n");

    let verdict = clone.json_allowing(&["reorient", "--check"], 1);
    assert_eq!(verdict["action"], "regather", "{verdict}");
    assert_eq!(
        verdict["reasons"],
        json!(["checkpoint_paths_changed"]),
        "{verdict}"
    );
    for args in [&["reorient"][..], &["prompt"], &["scene"]] {
        let output = clone.ok(args);
        assert!(!output.stdout.contains("aligned"), "{args:?}: {output}");
        assert!(output.stdout.contains("src/lexer.rs"), "{args:?}: {output}");
    }
    let hook = clone.run_with_stdin(
        &["hook", "session-start"],
        json!({"hook_event_name": "SessionStart", "source": "startup"}).to_string(),
    );
    assert_eq!(hook.code, 0, "{hook}");
    assert!(!hook.stdout.contains("aligned"), "{hook}");
    assert!(!hook.stdout.contains("resume from"), "{hook}");
    // Changes in the work tree against HEAD are still reported.
    let freshness = clone.json(&["freshness"]);
    assert!(
        freshness.to_string().contains("src/lexer.rs"),
        "{freshness}"
    );
}
