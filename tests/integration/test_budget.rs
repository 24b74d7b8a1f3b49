//! A command that promises its time (`prompt`, the session-start hook, `map`) shares one
//! deadline among all its parses: past it, the files left are left out and named. And a FIFO
//! `.gitignore` in an untracked directory, which libgit2 would read itself, blocks no read.
//! The deadline is set to nothing through `EPIPHANY_PARSE_TIME_MS` (for tests only), so that
//! no assertion depends on the machine's speed.

use crate::common::TestEnv;

/// The address-space limit of each run.
const MEMORY_LIMIT: u64 = 1024 * 1024 * 1024;

/// A repository whose state cites a symbol in a parsed file, with more parsed files beside it.
/// The cited file is long enough for its parse to look at the deadline (the parser reports its
/// progress every hundred steps; a few lines finish before the first report).
fn cited_repository() -> TestEnv {
    let env = TestEnv::new();
    let filler: String = (0..2_000).map(|i| format!("fn f{i}() {{}}\n")).collect();
    env.write(
        "src/lib.rs",
        format!("pub fn parse_config() -> u8 {{\n    0\n}}\n{filler}"),
    );
    env.write(
        "src/other.rs",
        "pub fn other() { crate::parse_config(); }\n",
    );
    env.write("web/app.js", "function start() {\n  return 1;\n}\n");
    env.commit_all("code");
    env.ok(&[
        "node",
        "set",
        "config",
        "--purpose",
        "reads the config",
        "--ref",
        "src/lib.rs#parse_config",
    ]);
    env.commit_all("map");
    env
}

#[test]
fn past_the_deadline_prompt_and_session_start_leave_files_out_and_name_them() {
    let env = cited_repository().with_var("EPIPHANY_PARSE_TIME_MS", "0");
    // What an earlier read parsed is kept; without it, the cited file must be parsed now.
    let cache = env.root().join(".epiphany/cache/definitions.msgpack");
    let _ = std::fs::remove_file(&cache);
    let prompt = env.run_limited(&["prompt"], "", MEMORY_LIMIT);
    assert_eq!(prompt.code, 0, "{prompt}");
    // The map section names what it left out; nothing was parsed, so no file is shown.
    assert!(
        prompt.stdout.contains(
            "3 file(s) left out, parsing ran out of time: src/lib.rs, src/other.rs, web/app.js"
        ),
        "{prompt}"
    );
    assert!(!prompt.stdout.contains("parse_config() -> u8"), "{prompt}");
    assert!(
        prompt.stdout.trim_end().ends_with("</epiphany_state>"),
        "{prompt}"
    );
    // The cited file was judged by its lines, and the command says so.
    assert!(
        prompt.stderr.contains(
            "note: 1 cited file(s) not parsed, parsing ran out of time: their references were \
             judged by the lines their symbol occurs on: src/lib.rs"
        ),
        "{prompt}"
    );

    let hook = env.run_limited(&["hook", "session-start"], "{}", MEMORY_LIMIT);
    assert_eq!(hook.code, 0, "{hook}");
    let context = hook.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        context.contains("3 file(s) left out, parsing ran out of time"),
        "{context}"
    );
    assert!(hook.stderr.contains("1 cited file(s) not parsed"), "{hook}");
    assert!(!cache.exists(), "a parse cut short is not kept");

    // The next command with time to parse maps every file and judges by definitions again:
    // nothing about the cut-short run was kept.
    let normal = cited_repository();
    let full = normal.ok(&["prompt"]);
    assert!(full.stdout.contains("parse_config() -> u8"), "{full}");
    assert!(!full.stdout.contains("left out, parsing"), "{full}");
    assert!(!full.stderr.contains("not parsed"), "{full}");
}

#[test]
fn past_the_deadline_map_counts_and_names_what_it_left_out() {
    let env = cited_repository().with_var("EPIPHANY_PARSE_TIME_MS", "0");
    let mapped = env.run_limited(&["--json", "map"], "", MEMORY_LIMIT);
    assert_eq!(mapped.code, 0, "{mapped}");
    let report = mapped.json();
    assert_eq!(report["left_out_files"], 3, "{report}");
    assert_eq!(report["ranked_files"], 0, "{report}");
    assert!(
        mapped
            .stderr
            .contains("note: 3 file(s) left out, parsing ran out of time: src/lib.rs"),
        "{mapped}"
    );
    // With an index, the files changed since it was built are parsed under the same deadline.
    let indexed = cited_repository();
    indexed.ok(&["index"]);
    indexed.write("src/lib.rs", "pub fn parse_config() -> u16 {\n    0\n}\n");
    let late = indexed.with_var("EPIPHANY_PARSE_TIME_MS", "0");
    let overlay = late
        .run_limited(&["--json", "map"], "", MEMORY_LIMIT)
        .json();
    assert_eq!(overlay["source"], "index_overlay", "{overlay}");
    assert_eq!(overlay["left_out_files"], 1, "{overlay}");
    assert_eq!(overlay["ranked_files"], 2, "{overlay}");
}

#[test]
fn a_bad_parse_time_is_a_usage_error() {
    let env = TestEnv::new().with_var("EPIPHANY_PARSE_TIME_MS", "soon");
    let out = env.run(&["prompt"]);
    assert_eq!(out.code, 2, "{out}");
    assert!(
        out.stderr
            .contains("EPIPHANY_PARSE_TIME_MS=`soon` is not a number of milliseconds"),
        "{out}"
    );
}

/// libgit2 reads the `.gitignore` of every directory it lists untracked files in, following
/// links and opening FIFOs: one left in an untracked directory would block every comparison
/// with git. It is refused like a committed one: every read finishes, and those that compare
/// with git name it.
#[test]
fn a_fifo_gitignore_in_an_untracked_directory_blocks_no_read() {
    let env = cited_repository();
    std::fs::create_dir_all(env.root().join("scratch/deeper")).expect("mkdir");
    env.write("scratch/deeper/notes.rs", "pub fn scratch() {}\n");
    let fifo = env.root().join("scratch/deeper/.gitignore");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: `name` is a valid C string that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
    let named = "scratch/deeper/.gitignore";
    for (args, stdin) in [
        (&["scene"][..], ""),
        (&["prompt"], ""),
        (&["freshness"], ""),
        (&["hook", "session-start"], "{}"),
        (&["hook", "pre-compact"], "{}"),
    ] {
        let out = env.run_limited(args, stdin, MEMORY_LIMIT);
        assert!(out.code == 0 || out.code == 1, "{args:?}: {out}");
        if args != ["hook", "pre-compact"] {
            assert!(
                out.stdout.contains(named) || out.stderr.contains(named),
                "{args:?}: {out}"
            );
        }
    }
    let freshness = env.run_limited(&["--json", "freshness"], "", MEMORY_LIMIT);
    assert!(freshness.stdout.contains(named), "{freshness}");
    // The walk reads no ignore file that is not a regular file: the map and a search finish,
    // and find what is beside it.
    let mapped = env.run_limited(&["--json", "map"], "", MEMORY_LIMIT);
    assert_eq!(mapped.code, 0, "{mapped}");
    assert!(
        mapped.stdout.contains("scratch/deeper/notes.rs"),
        "{mapped}"
    );
    let found = env.run_limited(&["--json", "retrieve", "parse config"], "", MEMORY_LIMIT);
    assert_eq!(found.code, 0, "{found}");
    assert!(found.stdout.contains("src/lib.rs"), "{found}");
}
