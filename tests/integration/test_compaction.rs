//! `epiphany compact` (issue 49, item 1): the committed segments become one, every record
//! stays readable before and after the commit, cached folds keep serving (in the clone that
//! compacted and in one that pulls the compaction), and git merges a compaction with a branch
//! that did not compact, or compacted the same segments, without a conflict or a lost record.

use serde_json::Value;

use crate::common::TestEnv;
use crate::common::file_names;
use crate::common::observation_patch;
use crate::common::snapshot_names;

/// A store with `writes` committed segments (each write on its own commit) and a fold cached
/// after every write.
fn committed_store(writes: usize) -> TestEnv {
    let env = TestEnv::bare().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.commit_all("code");
    env.ok(&["init"]);
    for write in 1..=writes {
        env.update(&observation_patch(&format!("w{write}")));
        env.commit_all(&format!("write {write}"));
    }
    env
}

/// The state as `show --json` prints it.
fn state(env: &TestEnv) -> Value {
    env.json(&["show"])
}

/// The observation ids the head holds, newest first.
fn observation_ids(env: &TestEnv) -> Vec<String> {
    let observations = state(env)["observations"].clone();
    (observations.as_array().expect("observations").iter())
        .map(|observation| observation["id"].as_str().expect("id").to_owned())
        .collect()
}

/// The file names in the store's `rollout/`, sorted.
fn rollout_names(env: &TestEnv) -> Vec<String> {
    file_names(&env.root().join(".epiphany/rollout"))
}

fn cached(env: &TestEnv) -> Vec<String> {
    snapshot_names(&env.root().join(".epiphany/cache/snapshots"))
}

/// Clones `env` into a sibling directory.
fn clone_of(env: &TestEnv) -> TestEnv {
    let clone = env.sibling("clone");
    let (from, into) = (env.root().display(), clone.root().display());
    env.git(&["clone", "-q", &from.to_string(), &into.to_string()]);
    clone
}

fn is_clean(env: &TestEnv, path: &str) -> bool {
    env.git(&["status", "--porcelain", "--", path]).is_empty()
}

#[test]
fn compacting_keeps_every_record_readable_before_and_after_the_commit() {
    let env = committed_store(4);
    let before = state(&env);
    let segments_before: Vec<String> = rollout_names(&env)
        .into_iter()
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    assert_eq!(segments_before.len(), 4, "a segment a write");

    let report = env.json(&["compact"]);
    assert_eq!(report["compacted"], true, "{report}");
    assert_eq!(report["parts"], serde_json::json!(segments_before));
    assert_eq!(report["records"], 4);
    assert_eq!(report["snapshots_removed"], 0, "{report}");
    assert!(
        report["snapshots_moved"].as_u64().expect("moved") >= 1,
        "{report}"
    );
    let segment = report["segment"].as_str().expect("segment").to_owned();
    let manifest = report["manifest"].as_str().expect("manifest").to_owned();
    assert_eq!(
        rollout_names(&env),
        [segment.clone(), manifest.clone(), "identity".to_owned()]
    );
    // The manifest names each part and its committed length.
    let listed =
        String::from_utf8(env.read(&format!(".epiphany/rollout/{manifest}"))).expect("test io");
    for part in &segments_before {
        let committed = env.git(&["cat-file", "-s", &format!("HEAD:.epiphany/rollout/{part}")]);
        assert!(
            listed.contains(&format!("{part} {}", committed.trim())),
            "{listed}"
        );
    }

    // Not committed yet: the removed segments are no loss, and the moved fold serves the
    // read (a read that folded everything would cache a new one).
    let folds = cached(&env);
    assert_eq!(state(&env), before);
    env.ok(&["verify"]);
    assert_eq!(
        cached(&env),
        folds,
        "a read after the compaction folded anew"
    );

    env.commit_all("compact the rollout");
    assert_eq!(state(&env), before);
    env.ok(&["verify"]);
    // Writes go on in new segments. A compaction leaves the compacted segment alone while it
    // would make up most of the next one (git would take that for its rename), and takes it
    // along once the segments written since outweigh it.
    env.update(&observation_patch("w5"));
    env.commit_all("write 5");
    let early = env.json(&["compact"]);
    assert_eq!(early["compacted"], false, "{early}");
    assert_eq!(early["left"][0]["segment"], segment.as_str(), "{early}");
    assert!(
        early["left"][0]["reason"]
            .as_str()
            .expect("reason")
            .contains("rename")
    );
    for write in 6..=11 {
        env.update(&observation_patch(&format!("w{write}")));
        env.commit_all(&format!("write {write}"));
    }
    let again = env.json(&["compact"]);
    assert_eq!(
        again["parts"].as_array().expect("parts").len(),
        8,
        "{again}"
    );
    assert!(again["parts"][0] == segment.as_str(), "{again}");
    env.commit_all("compact again");
    assert_eq!(observation_ids(&env).len(), 11);
    assert_eq!(observation_ids(&env)[0], "obs-w11");
    let names = rollout_names(&env);
    assert_eq!(
        names.len(),
        3,
        "one segment, its manifest, the identity: {names:?}"
    );
    assert!(
        !names.contains(&manifest),
        "the first manifest went with its segment"
    );
    env.ok(&["verify"]);
}

#[test]
fn a_branch_that_did_not_compact_merges_both_ways_without_losing_a_record() {
    let env = committed_store(3);
    env.git(&["branch", "side"]);
    env.ok(&["compact"]);
    env.commit_all("compact");
    env.update(&observation_patch("main"));
    env.commit_all("main writes");

    env.git(&["checkout", "-q", "side"]);
    env.update(&observation_patch("side"));
    env.commit_all("side writes");
    // The side branch takes the compaction in: its copies of the parts go.
    env.git(&["merge", "-q", "--no-edit", "main"]);
    let ids = observation_ids(&env);
    for id in ["obs-main", "obs-side", "obs-w3", "obs-w2", "obs-w1"] {
        assert!(ids.contains(&id.to_owned()), "{id} in {ids:?}");
    }
    env.ok(&["verify"]);

    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--no-edit", "side"]);
    assert_eq!(observation_ids(&env).len(), 5);
    env.ok(&["verify"]);
    assert!(is_clean(&env, ".epiphany"));
}

#[test]
fn two_branches_compacting_the_same_segments_write_one_file() {
    let env = committed_store(3);
    env.git(&["branch", "side"]);
    let ours = env.json(&["compact"]);
    env.commit_all("compact on main");
    env.git(&["checkout", "-q", "side"]);
    let theirs = env.json(&["compact"]);
    assert_eq!(
        ours["segment"], theirs["segment"],
        "the same bytes, the same name"
    );
    env.commit_all("compact on side");
    env.update(&observation_patch("side"));
    env.commit_all("side writes");
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--no-edit", "side"]);
    assert_eq!(observation_ids(&env)[0], "obs-side");
    assert_eq!(observation_ids(&env).len(), 4);
    env.ok(&["verify"]);
}

#[test]
fn a_clone_that_pulls_a_compaction_reads_on_from_the_fold_it_cached() {
    let env = committed_store(3);
    let clone = clone_of(&env);
    // A fresh clone folds every record once and caches the fold.
    let before = state(&clone);
    let folds = cached(&clone);
    assert_eq!(folds.len(), 1, "{folds:?}");

    env.ok(&["compact"]);
    env.commit_all("compact");
    clone.git(&["pull", "-q", "--no-rebase", "origin", "main"]);
    assert_eq!(state(&clone), before);
    // The fold is cached again with its marks moved (a fold anew would leave the old one
    // beside it), and later reads start from it as they are.
    let moved = cached(&clone);
    assert_eq!(
        moved.len(),
        1,
        "the pulled compaction made the clone fold anew: {moved:?}"
    );
    assert_ne!(moved, folds);
    assert_eq!(state(&clone), before);
    assert_eq!(cached(&clone), moved);
    clone.ok(&["verify"]);
}

#[test]
fn a_compacted_segment_deleted_before_its_commit_is_a_loss_naming_its_parts() {
    let env = committed_store(3);
    let report = env.json(&["compact"]);
    let segment = report["segment"].as_str().expect("segment");
    let first_part = report["parts"][0].as_str().expect("part");
    std::fs::remove_file(env.root().join(".epiphany/rollout").join(segment)).expect("test io");
    let output = env.run(&["--json", "show"]);
    assert_eq!(output.code, 2, "{output}");
    let message = output.json()["error"]["message"]
        .as_str()
        .expect("test io")
        .to_owned();
    assert!(message.contains("records are missing"), "{message}");
    assert!(message.contains(first_part), "{message}");
    // Restoring the parts from git ends it.
    env.git(&["checkout", "HEAD", "--", ".epiphany/rollout"]);
    env.ok(&["verify"]);
}

#[test]
fn segments_changed_or_written_since_the_commit_are_left_as_they_are() {
    let env = committed_store(4);
    env.update(&observation_patch("uncommitted"));
    let names: Vec<String> = (env.rollout_segments().iter())
        .map(|path| {
            path.file_name()
                .expect("test io")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let (committed, uncommitted): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|name| is_committed(&env, name));
    assert_eq!((committed.len(), uncommitted.len()), (4, 1));
    // A committed segment that grew since: another segment's line appended (a record twice
    // is one record).
    let rollout = env.root().join(".epiphany/rollout");
    let line = std::fs::read_to_string(rollout.join(&committed[2])).expect("test io");
    let grown = &committed[0];
    let mut bytes = std::fs::read(rollout.join(grown)).expect("test io");
    bytes.extend_from_slice(line.as_bytes());
    std::fs::write(rollout.join(grown), bytes).expect("test io");

    let report = env.json(&["compact"]);
    assert_eq!(
        report["parts"],
        serde_json::json!(committed[1..]),
        "{report}"
    );
    assert_eq!(
        report["left"],
        serde_json::json!([{"segment": grown, "reason": "it grew since the commit"}])
    );
    assert!(rollout.join(grown).exists() && rollout.join(&uncommitted[0]).exists());
    assert_eq!(
        observation_ids(&env),
        ["obs-uncommitted", "obs-w4", "obs-w3", "obs-w2", "obs-w1"]
    );
    env.ok(&["verify"]);
}

fn is_committed(env: &TestEnv, name: &str) -> bool {
    env.git_output(&["cat-file", "-e", &format!("HEAD:.epiphany/rollout/{name}")])
        .status
        .success()
}

#[test]
fn a_dry_run_and_nothing_to_compact_write_nothing() {
    let env = committed_store(3);
    let before = env.store_bytes();
    let report = env.json(&["compact", "--dry-run"]);
    assert_eq!(
        (report["compacted"].clone(), report["dry_run"].clone()),
        (true.into(), true.into())
    );
    assert_eq!(env.store_bytes(), before);

    env.ok(&["compact"]);
    env.commit_all("compact");
    let before = env.store_bytes();
    let output = env.ok(&["compact"]);
    assert!(output.stdout.contains("nothing to compact"), "{output}");
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn outside_git_and_before_a_commit_nothing_is_compacted_and_damage_is_refused() {
    let outside = TestEnv::plain();
    outside.ok(&["init"]);
    outside.update(&observation_patch("w1"));
    nothing_to_compact(&outside, "outside git");

    let uncommitted = TestEnv::new();
    uncommitted.update(&observation_patch("w1"));
    nothing_to_compact(&uncommitted, "before the first commit");

    let damaged = committed_store(3);
    let segment = damaged.rollout_segments()[0].clone();
    let text = std::fs::read_to_string(&segment).expect("test io");
    std::fs::write(&segment, text.replacen("\"at\"", "\"At\"", 1)).expect("test io");
    refused(&damaged, "over a damaged line");
}

/// Asserts that `compact` says no commit holds the rollout, and changes nothing.
fn nothing_to_compact(env: &TestEnv, what: &str) {
    let before = env.store_bytes();
    let report = env.json(&["compact"]);
    assert_eq!(report["compacted"], false, "{what}: {report}");
    let reason = report["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("no commit holds the rollout"),
        "{what}: {reason}"
    );
    assert_eq!(env.store_bytes(), before, "{what}: the store changed");
}

/// Asserts that `compact` refuses a damaged rollout (exit 2, kind `corrupt`), the store
/// unchanged.
fn refused(env: &TestEnv, what: &str) {
    let before = env.store_bytes();
    let output = env.run(&["--json", "compact"]);
    assert_eq!(output.code, 2, "{what}: {output}");
    assert_eq!(
        output.json()["error"]["kind"],
        "corrupt",
        "{what}: {output}"
    );
    assert_eq!(env.store_bytes(), before, "{what}: the store changed");
}

#[test]
fn verify_suggests_compacting_hundreds_of_committed_segments_and_compact_joins_them() {
    let env = TestEnv::bare();
    env.ok(&["init"]);
    let first = env.update(&observation_patch("w0"));
    let written: Value =
        serde_json::from_str(env.rollout_text().lines().next().expect("a record")).expect("json");
    // 499 more records, each in a segment of its own, as 499 commits would leave them.
    let mut parent = first["id"].as_str().expect("id").to_owned();
    for write in 1..500 {
        let mut body = written.clone();
        let object = body.as_object_mut().expect("a record");
        object.remove("id");
        object.insert("parents".to_owned(), serde_json::json!([parent]));
        object.insert("patch".to_owned(), observation_patch(&format!("w{write}")));
        let (id, line) = crate::common::sealed_line(&body);
        env.write(
            &format!(
                ".epiphany/rollout/20260101T000000Z-{}-{write:08x}.jsonl",
                &id[..16]
            ),
            line,
        );
        parent = id;
    }
    env.commit_all("500 segments");
    let notes = env.json(&["verify"])["notes"].to_string();
    assert!(notes.contains("500 rollout segment files"), "{notes}");
    assert!(notes.contains("epiphany compact"), "{notes}");

    let report = env.json(&["compact"]);
    assert_eq!(report["parts"].as_array().expect("parts").len(), 500);
    assert_eq!(report["records"], 500);
    env.commit_all("compact");
    let verify = env.json(&["verify"]);
    assert_eq!(verify["notes"], serde_json::json!([]), "{verify}");
    assert_eq!(verify["records"], 500);
    assert_eq!(observation_ids(&env).len(), 500);
}

#[test]
fn branches_that_compacted_different_segments_merge_and_each_record_counts_once() {
    let env = committed_store(3);
    env.git(&["branch", "side"]);
    env.ok(&["compact"]);
    env.commit_all("compact two");
    env.git(&["checkout", "-q", "side"]);
    env.update(&observation_patch("side"));
    env.commit_all("side writes");
    env.ok(&["compact"]);
    env.commit_all("compact three");
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--no-edit", "side"]);
    assert_eq!(
        observation_ids(&env),
        ["obs-side", "obs-w3", "obs-w2", "obs-w1"]
    );
    let verify = env.json(&["verify"]);
    assert_eq!(verify["records"], 4, "{verify}");
    assert!(
        verify["notes"]
            .to_string()
            .contains("two branches compacted the same segments"),
        "{verify}"
    );
    assert!(is_clean(&env, ".epiphany"));
}

#[test]
fn a_branch_rebased_onto_a_compaction_and_a_compaction_reverted_keep_every_record() {
    let env = committed_store(4);
    env.git(&["checkout", "-q", "-b", "side"]);
    for write in ["s1", "s2"] {
        env.update(&observation_patch(write));
        env.commit_all(write);
    }
    env.git(&["checkout", "-q", "main"]);
    env.ok(&["compact"]);
    env.commit_all("compact");

    env.git(&["checkout", "-q", "side"]);
    env.git(&["rebase", "-q", "main"]);
    assert_eq!(observation_ids(&env).len(), 6);
    env.ok(&["verify"]);

    env.git(&["checkout", "-q", "main"]);
    env.git(&["revert", "--no-edit", "HEAD"]);
    assert_eq!(env.rollout_segments().len(), 4, "the parts are back");
    assert_eq!(observation_ids(&env).len(), 4);
    env.ok(&["verify"]);
    env.git(&["revert", "--no-edit", "HEAD"]);
    assert_eq!(env.rollout_segments().len(), 1, "the compaction is back");
    assert_eq!(observation_ids(&env).len(), 4);
    env.ok(&["verify"]);
}
