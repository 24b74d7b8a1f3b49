//! Never a partial state served quietly (issue 46, item 9): a read that finds a committed
//! rollout segment missing or shorter than git has it fails (exit 2), naming the segment and
//! the remedy, with or without a cache, as `verify` and writers do; restoring the files ends
//! it. What git does on its own (uncommitted records, merges, fresh clones, branches from
//! before `init`, no git at all) is no loss.

use serde_json::Value;

use crate::common::TestEnv;
use crate::common::observation_patch;

/// The reads that must refuse a store with lost records.
const READS: [&[&str]; 5] = [
    &["show"],
    &["scene"],
    &["prompt"],
    &["context", "--observation", "obs-w1"],
    &["freshness"],
];

/// A store with five committed segments (each write on its own commit), the cache holding a
/// fold of the first three only: the newest segment's records lie past every cached fold.
fn committed_store() -> TestEnv {
    let env = TestEnv::bare();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.commit_all("code");
    env.ok(&["init", "--objective", "keep spans"]);
    env.commit_all("init");
    for write in 1..=3 {
        // A snapshot after every write: the cache holds a fold of everything so far.
        env.ok_with(
            &["update"],
            &[("EPIPHANY_SNAPSHOT_EVERY", "1")],
            observation_patch(&format!("w{write}")).to_string(),
        );
        env.commit_all(&format!("write {write}"));
    }
    env.update(&observation_patch("w4"));
    env.commit_all("write 4");
    assert_eq!(env.rollout_segments().len(), 5, "one segment a commit");
    env
}

/// Asserts that every read refuses the store (exit 2, kind `corrupt`), naming `segment` and
/// how to restore it, and leaves the rollout as it is.
fn assert_refused(env: &TestEnv, segment: &str, what: &str) {
    let before = env.store_bytes();
    for read in READS {
        let mut args = vec!["--json"];
        args.extend_from_slice(read);
        let output = env.run(&args);
        assert_eq!(output.code, 2, "{what}: `{}`\n{output}", read.join(" "));
        let error: Value = output.json()["error"].clone();
        let message = error["message"].as_str().expect("message");
        assert_eq!(error["kind"], "corrupt", "{what}: {error}");
        assert!(message.contains("records are missing"), "{what}: {message}");
        assert!(
            message.contains(&format!("`{segment}`")),
            "{what}: {message}"
        );
        assert!(
            message.contains(&format!("git checkout HEAD -- .epiphany/rollout/{segment}")),
            "{what}: {message}"
        );
        let text = env.run(read);
        assert_eq!(text.code, 2, "{what}: `{}`\n{text}", read.join(" "));
        assert!(
            text.stderr.starts_with("error: records are missing from "),
            "{what}: {text}"
        );
        assert!(
            text.stderr
                .contains("hint: restore the missing rollout files"),
            "{text}"
        );
    }
    assert_eq!(
        env.store_bytes(),
        before,
        "{what}: a refused read changed the store"
    );
}

/// Asserts that every read passes and `show` is `head` again.
fn assert_restored(env: &TestEnv, head: &Value, what: &str) {
    for read in READS {
        let output = env.run(read);
        assert_eq!(output.code, 0, "{what}: `{}`\n{output}", read.join(" "));
    }
    assert_eq!(&env.json(&["show"]), head, "{what}");
}

/// A deleted or truncated committed segment used to read as a state without its records
/// (exit 0, no warning) whenever no cached fold held them: with no cache at all, or with a
/// cache whose folds end before the segment.
#[test]
fn regression_46_a_committed_segment_deleted_or_cut_stops_every_read() {
    // See: issue 46, item 9.
    let env = committed_store();
    let head = env.json(&["show"]);
    assert_eq!(head["revision"], 5, "{head}");
    let segments = env.rollout_segments();
    let name = |path: &std::path::Path| {
        path.file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_owned()
    };
    let newest = segments.last().expect("newest").clone();
    let middle = segments[2].clone();
    for (path, cache) in [
        (&newest, true),
        (&newest, false),
        (&middle, true),
        (&middle, false),
    ] {
        let bytes = std::fs::read(path).expect("segment");
        if !cache {
            std::fs::remove_dir_all(env.root().join(".epiphany/cache")).expect("no cache");
        }
        let what = format!("{} deleted, cache: {cache}", name(path));
        std::fs::remove_file(path).expect("delete");
        assert_refused(&env, &name(path), &what);
        env.git(&["checkout", "--", ".epiphany/"]);
        assert_restored(&env, &head, &what);

        // Cut after its first line: what is left is a sound record, one short.
        let what = format!("{} truncated, cache: {cache}", name(path));
        let first_line = bytes.iter().position(|b| *b == b'\n').expect("a line") + 1;
        let cut = if first_line < bytes.len() {
            first_line
        } else {
            bytes.len() / 2
        };
        if !cache {
            std::fs::remove_dir_all(env.root().join(".epiphany/cache")).expect("no cache");
        }
        std::fs::write(path, &bytes[..cut]).expect("truncate");
        assert_refused(&env, &name(path), &what);
        env.git(&["checkout", "--", ".epiphany/"]);
        assert_restored(&env, &head, &what);
    }
}

/// Writers and `verify` find the same loss the reads do, and a write refused for it writes
/// nothing.
#[test]
fn writers_and_verify_name_the_same_loss() {
    let env = committed_store();
    let newest = env.last_segment();
    std::fs::remove_file(&newest).expect("delete");
    std::fs::remove_dir_all(env.root().join(".epiphany/cache")).expect("no cache");
    let before = env.store_bytes();
    let write = env.run_with_stdin(&["--json", "update"], observation_patch("w5").to_string());
    assert_eq!(write.code, 2, "{write}");
    let name = newest.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(write.stdout.contains(name), "{write}");
    assert_eq!(env.store_bytes(), before);
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(verify.code, 1, "{verify}");
    assert!(verify.stdout.contains(name), "{verify}");
}

/// What git does on its own loses nothing: records not yet committed, a merge of two branches
/// (segments only grow) and a fresh clone without a cache all read.
#[test]
fn reads_pass_where_git_lost_nothing() {
    let env = committed_store();

    // Uncommitted records: the work tree holds more than the commit.
    env.update(&observation_patch("uncommitted"));
    for read in READS {
        env.ok(read);
    }

    // A merge of two branches that both wrote.
    env.commit_all("uncommitted no more");
    env.git(&["checkout", "-q", "-b", "side"]);
    env.update(&observation_patch("side"));
    env.commit_all("side");
    env.git(&["checkout", "-q", "main"]);
    env.update(&observation_patch("main"));
    env.commit_all("main");
    env.git(&["merge", "-q", "--no-edit", "side"]);
    let merged = env.json(&["show"]);
    assert_eq!(merged["revision"], 8, "{merged}");
    for read in READS {
        env.ok(read);
    }

    // A fresh clone, with no cache.
    let clone = env.sibling("clone");
    env.git(&[
        "clone",
        "-q",
        &env.root().display().to_string(),
        &clone.root().display().to_string(),
    ]);
    assert!(!clone.root().join(".epiphany/cache").exists());
    assert_eq!(clone.json(&["show"])["revision"], 8);
    for read in READS {
        clone.ok(read);
    }
}

/// A store whose records no commit holds yet reads on a branch from before `init` (its commit
/// holds no rollout to compare with), and a store outside git reads with nothing to compare.
#[test]
fn reads_pass_with_nothing_committed_to_compare_with() {
    let env = TestEnv::bare();
    env.write("src/lexer.rs", "pub fn lex() {}\n");
    env.commit_all("code");
    env.git(&["branch", "before-init"]);
    env.ok(&["init", "--objective", "keep spans"]);
    env.update(&observation_patch("w1"));
    env.git(&["checkout", "-q", "before-init"]);
    for read in READS {
        env.ok(read);
    }
    assert_eq!(env.json(&["show"])["revision"], 2);

    let outside = TestEnv::plain();
    outside.ok(&["init", "--objective", "keep spans"]);
    outside.update(&observation_patch("w1"));
    for read in READS {
        outside.ok(read);
    }
}

/// What the commit holds is measured once per `rollout/` tree: the note in `cache/` names
/// HEAD's tree, a note of another tree (or no note, or a damaged one) is measured again, and
/// none of them changes what a read finds.
#[test]
fn the_committed_sizes_are_noted_per_rollout_tree() {
    let env = committed_store();
    let note_path = env.root().join(".epiphany/cache/committed-rollout.msgpack");
    let note = || -> Value {
        rmp_serde::from_slice(&std::fs::read(&note_path).expect("a note")).expect("msgpack")
    };
    let tree = |env: &TestEnv| {
        env.git(&["rev-parse", "HEAD:.epiphany/rollout"])
            .trim()
            .to_owned()
    };
    env.ok(&["scene"]);
    assert_eq!(note()["tree"], tree(&env));
    // A `[name, blob, size]` per committed segment, in name order.
    let files = || -> Vec<(String, String, u64)> {
        serde_json::from_value(note()["files"].clone()).expect("entries")
    };
    assert_eq!(files().len(), 5);
    env.update(&observation_patch("w5"));
    env.commit_all("write 5");
    env.ok(&["scene"]);
    assert_eq!(note()["tree"], tree(&env));
    // Five segments' sizes came from the note, the new one's from git: all as committed.
    let files = files();
    assert_eq!(files.len(), 6);
    assert!(files.is_sorted_by(|a, b| a.0 < b.0), "{files:?}");
    for (name, blob, size) in &files {
        let path = format!("HEAD:.epiphany/rollout/{name}");
        assert_eq!(blob, env.git(&["rev-parse", &path]).trim(), "{name}");
        let committed = env.git(&["cat-file", "-s", &path]);
        assert_eq!(
            *size,
            committed.trim().parse::<u64>().expect("size"),
            "{name}"
        );
    }
    std::fs::write(&note_path, "{not msgpack").expect("damage");
    env.ok(&["scene"]);
    assert_eq!(note()["tree"], tree(&env));
    // The newest segment goes: the noted sizes still say it was committed.
    let newest = env.last_segment();
    std::fs::remove_file(&newest).expect("delete");
    assert_eq!(env.run(&["scene"]).code, 2);
}
