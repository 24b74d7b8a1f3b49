//! Faults a shared store must survive: writers killed at random points, readers racing
//! writers, hostile input, secrets, paths that escape, links out of the store, huge input.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::common::observation_patch;

/// Kills writers with SIGKILL at spread-out points of their run, hundreds of times. After
/// every kill the store loads; at the end `verify` passes (or names only a torn tail), and the
/// state holds exactly the records the rollout holds: nothing fully written was lost.
#[test]
fn writers_killed_at_random_points_never_break_the_store() {
    const ITERATIONS: u64 = 240;
    let env = TestEnv::new();
    // Spread the kills over the whole life of one write on this machine, however fast it is.
    let started = std::time::Instant::now();
    env.update(&observation_patch("warm-up"));
    let span_micros = (started.elapsed().as_micros() as u64 * 5 / 4).max(1);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for iteration in 0..ITERATIONS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = env
            .std_command(&["update"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let patch = observation_patch(&format!("k{iteration}")).to_string();
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(patch.as_bytes());
        }
        std::thread::sleep(Duration::from_micros(seed % span_micros));
        let _ = child.kill();
        let _ = child.wait();
        let shown = env.run(&["--json", "show"]);
        assert_eq!(
            shown.code, 0,
            "after kill {iteration} the store must load:\n{shown}"
        );
    }
    let verify = env.run(&["--json", "verify"]);
    let report = verify.json();
    for problem in report["problems"].as_array().expect("problems") {
        let message = problem["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("torn"),
            "only a torn tail may remain: {report}"
        );
    }
    let rollout = env.rollout_text();
    let complete = rollout
        .split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .count();
    let state = env.json(&["show"]);
    assert_eq!(state["revision"].as_u64(), Some(complete as u64));
    assert_eq!(
        state["observations"].as_array().map_or(0, Vec::len),
        complete
    );
    assert!(
        complete > 1,
        "no kill landed after a write: the test exercised nothing"
    );
    // The next write cuts any torn tail and the store verifies clean.
    env.update(&observation_patch("after"));
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Writers and readers in separate processes at once: no write is lost and no reader ever
/// sees a half-written state (every state a reader sees has one observation per revision).
#[test]
fn readers_never_see_a_half_written_state() {
    const WRITERS: usize = 4;
    const UPDATES: usize = 20;
    let env = TestEnv::new();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (env, done) = (&env, &done);
                scope.spawn(move || {
                    let mut last = 0;
                    let mut reads = 0;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let output = env.run(&["--json", "show"]);
                        assert_eq!(output.code, 0, "{output}");
                        let state = output.json();
                        let revision = state["revision"].as_u64().expect("revision");
                        let observations =
                            state["observations"].as_array().map_or(0, Vec::len) as u64;
                        assert_eq!(observations, revision, "a reader saw a torn state: {state}");
                        assert!(
                            revision >= last,
                            "revisions went backwards: {last} -> {revision}"
                        );
                        last = revision;
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let env = &env;
                scope.spawn(move || env.write_observations(writer, UPDATES))
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        for reader in readers {
            assert!(reader.join().expect("reader") > 0);
        }
    });
    assert_eq!(env.json(&["show"])["revision"], WRITERS * UPDATES);
    assert_eq!(env.json(&["verify"])["ok"], true);
}

#[test]
fn secrets_are_redacted_before_they_reach_the_store_and_reported() {
    let env = TestEnv::new();
    let patch = json!({
        "objective": "rotate the key AKIAIOSFODNN7EXAMPLE",
        "scratch": {"notes": ["curl -H 'Authorization: Bearer abcdefghijklmnop0123456789'", "db password=hunter2hunter2"]}
    });
    let output = env.run_with_stdin(&["--json", "update"], patch.to_string());
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.json()["redactions"],
        json!([
            {"kind": "aws_access_key", "count": 1},
            {"kind": "curl_auth_header", "count": 1},
            {"kind": "secret_assignment", "count": 1}
        ])
    );
    assert!(
        output
            .stderr
            .contains("warning: redacted 1 aws_access_key secret(s)"),
        "{output}"
    );
    let stored: String = env
        .store_bytes()
        .iter()
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .collect();
    for secret in [
        "AKIAIOSFODNN7EXAMPLE",
        "abcdefghijklmnop0123456789",
        "hunter2hunter2",
    ] {
        assert!(!stored.contains(secret), "`{secret}` reached the store");
    }
    assert_eq!(
        env.json(&["show"])["objective"],
        "rotate the key [REDACTED:aws_access_key]"
    );
}

/// Whichever record carries it, whole or record by record, a code reference outside the
/// repository is refused and nothing is written.
#[test]
fn code_refs_that_escape_the_repository_are_refused() {
    let env = TestEnv::new();
    env.write("src/a.rs", "// a\n");
    env.update(&json!({"upsert": {"architecture_nodes": [
        {"id": "a", "title": "A", "purpose": "p"}, {"id": "b", "title": "B", "purpose": "p"}]}}));
    let before = env.store_bytes();
    let mut observed = observation_patch("x");
    observed["observations"][0]["code_refs"] =
        json!([{"path": "../../etc/passwd"}, {"path": "/etc/shadow"}]);
    let node = json!({"id": "n", "title": "t", "purpose": "p",
                      "code_refs": [{"path": "/etc/hosts"}]});
    let cases = [
        (
            observed,
            "observations/obs-x.code_refs: `../../etc/passwd`: the path leaves the repository",
        ),
        (
            json!({"graphs": {"architecture": {"nodes": [node]}}}),
            "architecture_nodes/n.code_refs: `/etc/hosts`: the path is absolute",
        ),
        (
            json!({"upsert": {"architecture_nodes": [node]}}),
            "architecture_nodes/n.code_refs: `/etc/hosts`: the path is absolute",
        ),
        (
            json!({"upsert": {"architecture_edges": [{"source_id": "a", "target_id": "b",
            "kind": "calls", "code_refs": [{"path": "src/../../x.rs"}]}]}}),
            "the path leaves the repository",
        ),
        (
            json!({"upsert": {"dataflow_nodes": [node]}}),
            "dataflow_nodes/n.code_refs: `/etc/hosts`: the path is absolute",
        ),
    ];
    for (patch, message) in cases {
        let output = env.run_with_stdin(&["update"], patch.to_string());
        assert_eq!(output.code, 2, "{patch}:\n{output}");
        assert!(output.stderr.contains(message), "{patch}:\n{output}");
        assert_eq!(env.store_bytes(), before, "{patch}");
    }
}

/// A symbolic link is content anyone can commit. A code reference is read through one only
/// while it stays inside the repository, and only a regular file is read: a link to
/// `/dev/zero` would otherwise stall every write and freshness check that reads it, and a link
/// to a file outside would let a reference's symbol check answer questions about that file.
#[test]
fn code_refs_are_never_read_through_links_that_leave_the_repository() {
    let env = TestEnv::new();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.txt"), "API_TOKEN = 1\n").expect("write");
    env.write("src/real.rs", "// real\nfn real() {}\n");
    env.write("src/cited.rs", "// cited\nfn cited() {}\n");
    let link = |target: &Path, at: &str| {
        std::os::unix::fs::symlink(target, env.root().join(at)).expect("symlink");
    };
    link(Path::new("/dev/zero"), "src/zero.rs");
    link(&outside.path().join("secret.txt"), "src/secret.rs");
    link(Path::new("real.rs"), "src/alias.rs");
    env.commit_all("code, and links someone committed");

    // A link that stays inside is read like the file it names.
    let mut observed = observation_patch("alias");
    observed["observations"][0]["code_refs"] = json!([{"path": "src/alias.rs", "symbol": "real"}]);
    env.update(&observed);

    let before = env.store_bytes();
    for (path, symbol) in [("src/zero.rs", "x"), ("src/secret.rs", "API_TOKEN")] {
        let node = json!({"id": "n", "title": "N", "purpose": "p",
                          "code_refs": [{"path": path, "symbol": symbol}]});
        let patch = json!({"upsert": {"architecture_nodes": [node]}});
        let output = env.run_with_stdin(&["update"], patch.to_string());
        assert_eq!(output.code, 2, "{path}:\n{output}");
        assert!(
            output.stderr.contains(&format!(
                "architecture_nodes/n.code_refs: `{path}#{symbol}`: leads outside the repository"
            )),
            "{path}:\n{output}"
        );
        assert_eq!(env.store_bytes(), before, "{path}");
    }

    // A cited file that a teammate replaced with a link to a device reads as gone.
    env.update(
        &json!({"upsert": {"architecture_nodes": [{"id": "c", "title": "C",
        "purpose": "p", "code_refs": [{"path": "src/cited.rs", "symbol": "cited"}]}]}}),
    );
    env.commit_all("map");
    std::fs::remove_file(env.root().join("src/cited.rs")).expect("remove");
    link(Path::new("/dev/zero"), "src/cited.rs");
    env.commit_all("replace the file with a link");
    let fresh = env.json_answer(&["freshness", "--check"]);
    assert_eq!(fresh["exit"], 1, "{fresh}");
    let findings = &fresh["stdout"]["references"]["findings"];
    let kinds: Vec<(&str, &str)> = findings
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let path = f["code_ref"]["path"].as_str().unwrap_or("");
            (path, f["kind"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(kinds, [("src/cited.rs", "missing")], "{fresh}");
    env.ok(&["scene"]);
}

/// Characters that act on a terminal instead of showing: C0 controls but newline and tab, DEL,
/// C1 controls, and the bidirectional overrides.
fn hidden_characters(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

/// State text is written by whoever can commit. Shown to a person or injected into an agent's
/// context, an escape sequence in it could retitle, clear or recolour the terminal, a carriage
/// return could hide the start of a line, a direction override could make it read backwards:
/// every human output and the prompt show them as visible escapes, JSON keeps the text exact.
#[test]
fn control_characters_in_the_state_never_reach_a_terminal() {
    let env = TestEnv::new();
    env.write("src/a.rs", "// a\n");
    let objective = "ship\u{1b}]0;pwned\u{7}\u{1b}[2J\rhidden\u{0}\u{9b}31m";
    env.update(&json!({
        "objective": objective,
        "upsert": {"architecture_nodes": [{"id": "n", "title": "evil\u{1b}[31m",
            "purpose": "reads \u{202e}txt.exe", "code_refs": [{"path": "src/a.rs"}]}]},
        "observations": [{"id": "o", "summary": "bell\u{7}", "source_kind": "test",
                          "status": "ok", "evidence_ids": ["e"]}],
        "evidence": [{"id": "e", "kind": "test", "status": "ok", "summary": "\u{8}\u{8}ok"}],
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "debug",
            "disposition": "resume_ready", "focus": "\u{1b}[8mconcealed", "next_action": "go"}
    }));
    for args in [
        &["show"][..],
        &["scene"],
        &["prompt"],
        &["log"],
        &["context", "--node", "n"],
        &["graph", "--node", "n"],
        &["freshness"],
        &["reorient"],
        &["diff", "0", "1"],
    ] {
        let output = env.run(args);
        assert!(output.code == 0 || output.code == 1, "{args:?}: {output}");
        assert_eq!(
            hidden_characters(&output.stdout),
            [],
            "{args:?}: {}",
            output.stdout.escape_debug()
        );
        assert_eq!(hidden_characters(&output.stderr), [], "{args:?}: {output}");
    }
    let scene = env.ok(&["scene"]).stdout;
    assert!(
        scene.contains("objective: ship\\u{1b}]0;pwned\\u{7}"),
        "{scene}"
    );
    // The prompt goes into an agent's context as it is, in JSON too.
    let prompt = env.json(&["prompt"]);
    let text = prompt["text"].as_str().expect("text");
    assert_eq!(hidden_characters(text), [], "{}", text.escape_debug());
    assert!(text.contains("\\u{202e}txt.exe"), "{text}");
    // The data itself is kept exactly; JSON escapes it.
    assert_eq!(env.json(&["show"])["objective"], objective);
    // An error that quotes its input shows it the same way.
    let refused = env.run_with_stdin(
        &["update"],
        json!({"upsert": {"architecture_nodes": [{"id": "m", "title": "t", "purpose": "p",
            "code_refs": [{"path": "/abs\u{1b}[2J"}]}]}})
        .to_string(),
    );
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("/abs\\u{1b}[2J"), "{refused}");
    assert_eq!(hidden_characters(&refused.stderr), [], "{refused}");
    // Ids are one line of visible text: an escape in one is refused, and shown escaped.
    let mut forged = observation_patch("x");
    forged["observations"][0]["id"] = json!("o\u{1b}[2J");
    let refused = env.run_with_stdin(&["update"], forged.to_string());
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused
            .stderr
            .contains(r#""o\u{1b}[2J" holds a line break"#),
        "{refused}"
    );
    assert_eq!(hidden_characters(&refused.stderr), [], "{refused}");
}

#[test]
fn the_store_never_writes_through_a_symlink() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "one"}));
    let outside = env.root().join("outside.jsonl");
    let segment = env.last_segment();
    std::fs::copy(&segment, &outside).expect("copy");
    let original = std::fs::read(&outside).expect("read");
    std::fs::remove_file(&segment).expect("remove");
    std::os::unix::fs::symlink(&outside, &segment).expect("symlink");
    let output = env.run_with_stdin(&["update"], json!({"objective": "two"}).to_string());
    assert_eq!(output.code, 2, "{output}");
    assert!(output.stderr.contains("is a symbolic link"), "{output}");
    assert_eq!(std::fs::read(&outside).expect("read"), original);
}

#[test]
fn a_huge_patch_is_refused_with_a_message() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let mut huge = br#"{"objective": ""#.to_vec();
    huge.resize(100 * 1024 * 1024, b'a');
    huge.extend_from_slice(br#""}"#);
    let output = env.run_with_stdin(&["update"], huge);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output
            .stderr
            .contains("stdin is larger than 64 MiB; refusing to read it"),
        "{output}"
    );
    assert_eq!(env.store_bytes(), before);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Arbitrary bytes and arbitrary JSON on stdin are input errors, never a crash.
    #[test]
    fn hostile_update_input_is_exit_two(bytes in proptest::collection::vec(any::<u8>(), 0..512), json_like in "[{}\\[\\]\":,a-z0-9 ]{0,200}") {
        let env = TestEnv::new();
        let before = env.store_bytes();
        for input in [bytes.clone(), json_like.clone().into_bytes()] {
            let output = env.run_with_stdin(&["update"], input);
            prop_assert!(output.code == 2 || output.code == 0, "{}", output);
            prop_assert!(!output.stderr.contains("panicked"), "{}", output);
            if output.code == 2 {
                prop_assert_eq!(&env.store_bytes(), &before);
            }
        }
    }
}

/// A link committed at any cache path: `index` (which the git hooks run unattended) either
/// refuses with a clear error or writes beside it, and the victim outside stays intact.
#[test]
fn index_never_writes_through_a_committed_link() {
    let cases: [(&str, bool); 6] = [
        (".epiphany/cache", true),
        (".epiphany/cache/retrieval", true),
        (".epiphany/cache/retrieval/lock", false),
        (".epiphany/cache/retrieval/CURRENT", false),
        (".epiphany/cache/retrieval/gen-1", true),
        (".epiphany/cache/retrieval/gen-1/index", true),
    ];
    for (link, to_dir) in cases {
        let env = TestEnv::new();
        env.write("src/lib.rs", "pub fn parse_config() {}\n");
        let outside = tempfile::tempdir().expect("tempdir");
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "precious\n").expect("write");
        let target = if to_dir {
            outside.path()
        } else {
            victim.as_path()
        };
        let link_path = env.root().join(link);
        // Writes keep a note in the cache: the link takes the directory's place.
        let _ = std::fs::remove_dir_all(&link_path);
        std::fs::create_dir_all(link_path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, &link_path).expect("symlink");
        env.git(&["add", "-f", "."]);

        let output = env.run(&["index"]);
        assert!(
            output.code == 0 || output.stderr.contains("is a symbolic link"),
            "{link}: {output}"
        );
        assert_eq!(
            std::fs::read(&victim).expect("victim"),
            b"precious\n",
            "{link}"
        );
        let names: Vec<_> = std::fs::read_dir(outside.path())
            .expect("read")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["victim"], "{link}: written outside the repository");
    }
}

/// A link committed where a read remembers its fold (`cache/`, `cache/snapshots/`): the read
/// answers as usual, writes nothing outside the repository, `verify --repair` refuses to
/// rebuild the cache through it, and neither reads or removes what the link points at.
#[test]
fn a_read_never_remembers_its_fold_through_a_committed_link() {
    // Writes store no snapshot; a read with a cadence of 2 remembers its fold of 3 records.
    let store_of_three = || {
        let env = TestEnv::new().with_var("EPIPHANY_SNAPSHOT_EVERY", "100");
        for id in ["1", "2", "3"] {
            env.update(&observation_patch(id));
        }
        env
    };
    let show_remembering = |env: &TestEnv| -> Value {
        let output = env
            .command(&["--json", "show"])
            .env("EPIPHANY_SNAPSHOT_EVERY", "2")
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        serde_json::from_slice(&output.stdout).expect("json")
    };
    let unlinked = store_of_three();
    show_remembering(&unlinked);
    let remembered = std::fs::read_dir(unlinked.root().join(".epiphany/cache/snapshots"));
    assert_eq!(remembered.expect("remembered").count(), 1);

    for link in [".epiphany/cache", ".epiphany/cache/snapshots"] {
        let env = store_of_three();
        let expected = env.json(&["show"]);
        let outside = tempfile::tempdir().expect("tempdir");
        // Named like a snapshot: what a link-following cleanup would remove.
        let victim = "000000000009-0123456789abcdef.snapshot";
        std::fs::write(outside.path().join(victim), "precious\n").expect("write");
        std::fs::create_dir(outside.path().join("snapshots")).expect("mkdir");
        std::fs::write(outside.path().join("snapshots").join(victim), "precious\n").expect("write");
        let link_path = env.root().join(link);
        // Writes keep a note in the cache: the link takes the directory's place.
        let _ = std::fs::remove_dir_all(&link_path);
        std::fs::create_dir_all(link_path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), &link_path).expect("symlink");
        env.git(&["add", "-f", "."]);

        assert_eq!(show_remembering(&env), expected, "{link}");
        // Rebuilding the cache would write through the link: refused, naming it.
        let repair = env.run(&["verify", "--repair"]);
        assert_eq!(repair.code, 2, "{link}: {repair}");
        assert!(
            repair.stderr.contains("is a symbolic link"),
            "{link}: {repair}"
        );
        let mut names: Vec<String> = walkdir(outside.path());
        names.sort();
        assert_eq!(
            names,
            [victim.to_owned(), format!("snapshots/{victim}")],
            "{link}: something outside the repository was written or removed"
        );
    }
}

/// The files below `dir`, as paths relative to it.
fn walkdir(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read") {
        let path = entry.expect("entry").path();
        let relative = path
            .strip_prefix(dir)
            .expect("inside")
            .display()
            .to_string();
        if path.is_dir() {
            found.extend(
                walkdir(&path)
                    .into_iter()
                    .map(|p| format!("{relative}/{p}")),
            );
        } else {
            found.push(relative);
        }
    }
    found
}

/// An index run killed at any point, or a leftover deletion file in the published index, never
/// stops the next incremental `index`.
#[test]
fn index_recovers_from_interrupted_runs_without_full() {
    let env = TestEnv::new();
    for i in 0..200 {
        env.write(
            &format!("src/m{i}.rs"),
            format!("pub fn item_{i}() {{}}\n").repeat(40),
        );
    }
    env.ok(&["index"]);
    for round in 0..6u64 {
        for i in 0..50 {
            env.write(
                &format!("src/m{i}.rs"),
                format!("pub fn edit_{round}_{i}() {{}}\n"),
            );
        }
        let mut child = env.std_command(&["index"]).spawn().expect("spawn");
        std::thread::sleep(Duration::from_millis(5 + round * 40));
        let _ = child.kill();
        let _ = child.wait();
        // Orphaned deletion files beside every live segment, at the next opstamps.
        let current = std::fs::read_to_string(env.root().join(".epiphany/cache/retrieval/CURRENT"))
            .expect("CURRENT");
        let index_dir = env.root().join(format!(
            ".epiphany/cache/retrieval/gen-{}/index",
            current.trim()
        ));
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(index_dir.join("meta.json")).expect("meta"))
                .expect("meta.json");
        let opstamp = meta["opstamp"].as_u64().expect("opstamp");
        for segment in meta["segments"].as_array().expect("segments") {
            let id = segment["segment_id"].as_str().expect("id").replace('-', "");
            for stamp in opstamp + 1..opstamp + 20 {
                std::fs::write(index_dir.join(format!("{id}.{stamp}.del")), b"junk").expect("del");
            }
        }
        // One more edit, so that this run builds a new generation from the planted one.
        env.write("src/m199.rs", format!("pub fn last_{round}() {{}}\n"));
        let output = env.run(&["--json", "index"]);
        assert_eq!(output.code, 0, "round {round}: {output}");
        let current = std::fs::read_to_string(env.root().join(".epiphany/cache/retrieval/CURRENT"))
            .expect("CURRENT");
        let carried = std::fs::read_dir(env.root().join(format!(
            ".epiphany/cache/retrieval/gen-{}/index",
            current.trim()
        )))
        .expect("index dir")
        .filter(|entry| {
            let path = entry.as_ref().expect("entry").path();
            std::fs::read(path).is_ok_and(|bytes| bytes == b"junk")
        })
        .count();
        assert_eq!(
            carried, 0,
            "round {round}: leftovers carried into the new generation"
        );
        let hit = env.json(&["retrieve", &format!("edit_{round}_7"), "--mode", "exact"]);
        assert!(
            hit.to_string().contains("src/m7.rs"),
            "round {round}: {hit}"
        );
    }
}
