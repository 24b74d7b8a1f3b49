//! Every command shares one deadline among all its parses (the code map's files and the files
//! references cite): past it, the files left are left out and named, and a reference citing a
//! symbol in a file not parsed is named as not judged, never certified. And a FIFO
//! `.gitignore` in an untracked directory, which libgit2 would read itself, blocks no read.
//! Hostile files parsed on every core hold together no more than one parse is granted.
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
    // The cited file's references were not judged, and the command says so.
    assert!(
        prompt.stderr.contains(
            "note: 1 cited file(s) not parsed, parsing ran out of time: the references citing \
             a symbol there were not judged: src/lib.rs"
        ),
        "{prompt}"
    );

    let hook = env.run_limited(&["hook", "session-start"], "{}", MEMORY_LIMIT);
    let context = hook.session_context();
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

/// The compact map of `prompt` parses for 30 ms: past that bound it parses no more than
/// 256 KiB of files a thread, and a file begun within it is stopped at it. Four cited 2 MB
/// files, which no machine parses in 30 ms, are left out and named, and the small cited file
/// beside them is mapped (before, each thread parsed its first sixteen files whatever their
/// size, and every session start took the 5 s deadline on such a state).
#[test]
fn the_compact_map_parses_no_large_file_past_its_time_bound() {
    let env = TestEnv::new();
    let filler: String = (0..100_000)
        .map(|i| format!("pub fn g{i}(a: u8) -> u8 {{ a }}\n"))
        .collect();
    assert!(filler.len() > 2_000_000 && filler.len() < 4 << 20);
    let mut args = vec!["node", "set", "big", "--purpose", "generated tables"];
    let big: Vec<String> = (0..4).map(|n| format!("gen/t{n}.rs")).collect();
    for path in &big {
        env.write(path, &filler);
        args.extend(["--ref", path]);
    }
    env.write("src/lib.rs", "pub fn parse_config() -> u8 {\n    0\n}\n");
    args.extend(["--ref", "src/lib.rs"]);
    env.commit_all("code");
    env.ok(&args);
    let prompt = env.run_limited(&["prompt"], "", MEMORY_LIMIT);
    assert_eq!(prompt.code, 0, "{prompt}");
    assert!(prompt.stdout.contains("parse_config() -> u8"), "{prompt}");
    assert!(
        prompt.stdout.contains(
            "4 file(s) left out, parsing ran out of time: gen/t0.rs, gen/t1.rs, gen/t2.rs, 1 more"
        ),
        "{prompt}"
    );
    assert!(!prompt.stdout.contains("g99999"), "{prompt}");
}

/// The node's certificate status and the freshness report of `env`.
fn freshness_report(env: &TestEnv) -> (serde_json::Value, crate::common::Output) {
    let out = env.run_limited(&["--json", "freshness"], "", MEMORY_LIMIT);
    assert_eq!(out.code, 0, "{out}");
    (out.json(), out)
}

#[test]
fn past_the_deadline_freshness_scene_and_reorient_name_the_refs_left_unjudged() {
    let env = cited_repository().with_var("EPIPHANY_PARSE_TIME_MS", "0");
    let cache = env.root().join(".epiphany/cache/definitions.msgpack");
    let _ = std::fs::remove_file(&cache);
    let (report, out) = freshness_report(&env);
    let references = &report["references"];
    assert_eq!(
        references["unjudged"],
        serde_json::json!(["architecture_nodes/config: src/lib.rs:1-3#parse_config"]),
        "{report}"
    );
    assert_eq!(references["unjudged_blocking_count"], 1, "{report}");
    // Not judged: not found broken, and not certified.
    assert_eq!(references["findings"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["certificates"][0]["status"], "not_checkable",
        "{report}"
    );
    assert_eq!(report["fresh"], false, "{report}");
    assert!(
        (report["stale_reasons"].as_array().expect("reasons"))
            .contains(&serde_json::json!("references_unjudged")),
        "{report}"
    );
    assert!(out.stderr.contains("1 cited file(s) not parsed"), "{out}");
    let check = env.run_limited(&["freshness", "--check"], "", MEMORY_LIMIT);
    assert_eq!(check.code, 1, "{check}");
    assert!(
        check.stderr.contains("cite lines there without a symbol"),
        "{check}"
    );
    for args in [&["scene"][..], &["reorient"]] {
        let out = env.run_limited(args, "", MEMORY_LIMIT);
        assert_eq!(out.code, 0, "{args:?}: {out}");
        assert!(
            out.stderr.contains("not parsed, parsing ran out of time")
                && out.stderr.contains("src/lib.rs"),
            "{args:?}: {out}"
        );
    }
    let scene = env.run_limited(&["scene"], "", MEMORY_LIMIT);
    assert!(scene.stdout.contains("not checkable"), "{scene}");
    assert!(!cache.exists(), "a parse cut short is not kept");

    // With time to parse, the same reference is judged and certified.
    let (report, out) = freshness_report(&cited_repository());
    assert_eq!(
        report["references"]["unjudged"],
        serde_json::json!([]),
        "{report}"
    );
    assert_eq!(report["certificates"][0]["status"], "unchanged", "{report}");
    assert_eq!(report["fresh"], true, "{report}");
    assert!(!out.stderr.contains("not parsed"), "{out}");
}

#[test]
fn a_reference_to_a_file_too_large_to_parse_is_judged_by_its_lines_and_named() {
    let env = TestEnv::new();
    let filler = "// padding line that is not code at all, only here to make the file large\n";
    let large = format!(
        "pub fn parse_config() -> u8 {{\n    0\n}}\n{}",
        filler.repeat(4 * 1024 * 1024 / filler.len() + 1)
    );
    env.write("src/lib.rs", large);
    env.commit_all("code");
    let set = env.ok(&[
        "node",
        "set",
        "config",
        "--purpose",
        "reads the config",
        "--ref",
        "src/lib.rs:1#parse_config",
    ]);
    assert!(
        set.stderr
            .contains("judged by the lines the symbol occurs on"),
        "{set}"
    );
    env.commit_all("map");
    let (report, _) = freshness_report(&env);
    assert_eq!(
        report["references"]["judged_by_lines"],
        serde_json::json!(["architecture_nodes/config: src/lib.rs:1#parse_config"]),
        "{report}"
    );
    assert!(
        (report["references"]["note"].as_str().unwrap_or_default())
            .contains("1 judged by the lines their symbol occurs on"),
        "{report}"
    );
    // Judged by its lines, as when it was written: its cited line is what was checked.
    assert_eq!(report["certificates"][0]["status"], "unchanged", "{report}");
    env.write(
        "src/lib.rs",
        "pub fn parse_config() -> u16 {\n    0\n}\n".to_owned()
            + &filler.repeat(4 * 1024 * 1024 / filler.len() + 1),
    );
    let (report, _) = freshness_report(&env);
    assert_eq!(
        report["certificates"][0]["status"], "changed_since_checked",
        "{report}"
    );
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
    // Both name the ignore file they refused.
    let mapped = env.run_limited(&["--json", "map"], "", MEMORY_LIMIT);
    assert_eq!(mapped.code, 0, "{mapped}");
    assert!(
        mapped.stdout.contains("scratch/deeper/notes.rs"),
        "{mapped}"
    );
    assert_eq!(
        mapped.json()["not_read"],
        serde_json::json!([named]),
        "{mapped}"
    );
    assert!(
        mapped.stderr.contains("1 path(s) not read") && mapped.stderr.contains(named),
        "{mapped}"
    );
    let found = env.run_limited(&["--json", "retrieve", "parse config"], "", MEMORY_LIMIT);
    assert_eq!(found.code, 0, "{found}");
    assert!(found.stdout.contains("src/lib.rs"), "{found}");
    assert!(
        found.stderr.contains("1 path(s) not read") && found.stderr.contains(named),
        "{found}"
    );
}

/// A cited file that uses up its own parse budget (hostile: deeply nested arrays hold hundreds
/// of bytes per byte) is remembered as such, as the index remembers it: the next read does not
/// spend the budget on the same bytes again, so even past its deadline it judges the reference
/// (by the lines the symbol occurs on, as the first read did). A file the deadline cut short
/// is not kept.
#[test]
fn a_cited_file_over_its_parse_budget_is_not_parsed_again() {
    let env = TestEnv::new();
    let depth = 150_000;
    env.write(
        "web/nest.js",
        format!(
            "function hot() {{\n  return 1;\n}}\nvar a = {}{};\n",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    );
    env.commit_all("code");
    env.ok(&[
        "node",
        "set",
        "hot",
        "--purpose",
        "hot",
        "--ref",
        "web/nest.js#hot",
    ]);
    env.commit_all("map");
    let cache = env.root().join(".epiphany/cache/definitions.msgpack");
    let unjudged_past_the_deadline = || {
        let out = (env.command(&["--json", "freshness"]))
            .env("EPIPHANY_PARSE_TIME_MS", "0")
            .output()
            .expect("run");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        report["references"]["unjudged"].clone()
    };
    let _ = std::fs::remove_file(&cache);
    let unjudged = unjudged_past_the_deadline();
    assert!(
        unjudged.as_array().is_some_and(|refs| refs.len() == 1)
            && unjudged[0]
                .as_str()
                .is_some_and(|r| r.contains("web/nest.js")),
        "nothing kept: the file must be parsed, and the deadline passed: {unjudged}"
    );
    assert!(!cache.exists(), "a parse cut short is not kept");
    env.ok(&["freshness"]);
    assert!(cache.is_file(), "the verdict of its budget is kept");
    assert_eq!(
        unjudged_past_the_deadline(),
        serde_json::json!([]),
        "judged without parsing it again"
    );
}

/// A C file with a line `hot(` could define `hot` on, for a search without an index: only the
/// parser can say, and a file long enough for its parse to look at the deadline.
fn hot_c_repository(env: &TestEnv) {
    let filler: String = (0..2_000)
        .map(|i| format!("int f{i}(void) {{ return {i}; }}\n"))
        .collect();
    env.write(
        "src/hot.c",
        format!("int hot(void) {{\n  return 0;\n}}\n{filler}"),
    );
    env.commit_all("code");
}

/// `retrieve` without an index parses files only within the command's deadline: past it, a
/// file whose definitions only the parser can settle is searched as text alone, counted in
/// `left_out_files` and named in a note, as `map` names what it left out.
#[test]
fn past_the_deadline_retrieve_without_an_index_names_the_files_it_did_not_parse() {
    let env = TestEnv::new().with_var("EPIPHANY_PARSE_TIME_MS", "0");
    hot_c_repository(&env);
    let out = env.run(&["--json", "retrieve", "hot"]);
    assert_eq!(out.code, 0, "{out}");
    let report = out.json();
    assert_eq!(report["search"], "scan", "{report}");
    assert_eq!(report["left_out_files"], 1, "{report}");
    assert_eq!(
        report["results"][0]["path"], "src/hot.c",
        "searched as text: {report}"
    );
    assert!(
        out.stderr.contains(
            "note: 1 file(s) searched without their definitions, parsing ran out of time: \
             src/hot.c (`epiphany index` parses them all)"
        ),
        "{out}"
    );

    // With time to parse, the definition is found and nothing is left out.
    let normal = TestEnv::new();
    hot_c_repository(&normal);
    let out = normal.run(&["--json", "retrieve", "hot"]);
    assert_eq!(out.code, 0, "{out}");
    let report = out.json();
    assert_eq!(report["left_out_files"], 0, "{report}");
    assert_eq!(report["results"][0]["path"], "src/hot.c", "{report}");
    assert!(!out.stderr.contains("without their definitions"), "{out}");
}

/// `retrieve` with an index parses the files changed since it was built within the command's
/// deadline too: past it, a changed file is searched as text alone and named, as a scan names
/// what it did not parse.
#[test]
fn past_the_deadline_retrieve_with_an_index_names_the_changed_files_it_did_not_parse() {
    let env = TestEnv::new();
    hot_c_repository(&env);
    env.ok(&["index"]);
    let filler: String = (0..2_000)
        .map(|i| format!("int g{i}(void) {{ return {i}; }}\n"))
        .collect();
    env.write("src/cold.c", format!("/* hot path */\n{filler}"));

    // With time to parse, the changed file is parsed and not named.
    let out = env.run(&["--json", "retrieve", "hot"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["left_out_files"], 0, "{out}");
    assert!(!out.stderr.contains("without their definitions"), "{out}");

    // Past the deadline it is searched without its definitions, and named.
    let late = env.with_var("EPIPHANY_PARSE_TIME_MS", "0");
    let out = late.run(&["--json", "retrieve", "hot"]);
    assert_eq!(out.code, 0, "{out}");
    let report = out.json();
    assert_eq!(report["search"], "index_overlay", "{report}");
    assert!(
        out.stderr.contains("searched without their definitions")
            && out.stderr.contains("src/cold.c"),
        "the changed file was not parsed: {out}"
    );
    let paths: Vec<&str> = (report["results"].as_array().expect("results").iter())
        .filter_map(|result| result["path"].as_str())
        .collect();
    assert!(paths.contains(&"src/cold.c"), "searched as text: {report}");
}

/// The most memory the process held at once over one run of the binary, in bytes (the
/// kernel's count for the child): `args` run with `stdin`, their output dropped.
// The child is waited for by `wait4`, which gives its resource usage; `Child::wait` does not.
#[allow(clippy::zombie_processes)]
fn peak_memory(env: &TestEnv, args: &[&str], stdin: &[u8]) -> u64 {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = (env.std_command(args))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Closed when dropped, so that the command sees the end of its input.
    (child.stdin.take().expect("stdin"))
        .write_all(stdin)
        .expect("write");
    let pid = i32::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value for `wait4` to fill in; the child is ours
    // and not waited for by anything else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid and writable.
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "waited for the child");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?} failed: {status}"
    );
    u64::try_from(usage.ru_maxrss).expect("a size") * 1024
}

/// Hostile cited files parsed on two cores hold no more together than one parse is granted:
/// each takes about its whole budget (138 MiB for a megabyte of nested parentheses), and the
/// one that finished gives it back before the next one, on the other core, is granted its own.
/// The memory allocator kept what the first core freed for that core, so the two added up:
/// `hook session-start` on bench/hostile-repo.sh held 379 MiB.
#[test]
fn hostile_files_parsed_on_two_cores_hold_no_more_than_one_parse_is_granted() {
    let env = TestEnv::new().with_var("EPIPHANY_PARSE_TIME_MS", "600000");
    let depth = 500_000;
    let deep = format!(
        "int hot(void) {{\n  return {}0{};\n}}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    // Nine cited files are parsed on two threads, the first five on one: two deep ones each.
    let mut refs = Vec::new();
    for at in 0..9 {
        let text = if matches!(at, 0 | 1 | 5 | 6) {
            deep.as_str()
        } else {
            "int hot(void) { return 0; }\n"
        };
        env.write(&format!("src/f{at}.c"), text);
        refs.push(format!("src/f{at}.c#hot"));
    }
    env.commit_all("code");
    let mut args = vec!["node", "set", "hot", "--purpose", "hot"];
    for cited in &refs {
        args.extend(["--ref", cited]);
    }
    env.ok(&args);
    env.commit_all("map");
    // Parsed by this run, not read from what the write kept.
    let _ = std::fs::remove_file(env.root().join(".epiphany/cache/definitions.msgpack"));
    let peak = peak_memory(&env, &["freshness"], b"");
    assert!(peak < 256 << 20, "peak {} MiB", peak >> 20);
}
