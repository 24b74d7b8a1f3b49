//! `hooks install|uninstall`, the merge driver and textconv, through real git commands; the agent
//! hosts' hooks with payloads shaped as Claude Code and Codex document and send them.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

/// A repository with the store and the git integration committed on `main`.
fn installed() -> TestEnv {
    let env = TestEnv::new();
    env.update(&json!({"objective": "shared"}));
    env.ok(&["hooks", "install", "--git"]);
    env.commit_all("base");
    env
}

#[test]
fn install_is_idempotent_and_uninstall_restores_foreign_hooks() {
    let env = TestEnv::new();
    let foreign = "#!/bin/sh\necho foreign hook\nexit 0\n";
    env.write(".git/hooks/post-commit", foreign);
    // What an earlier version's install left: a merge driver for the first store format.
    env.write(
        ".gitattributes",
        "*.png binary\n.epiphany/rollout.jsonl merge=epiphany diff=epiphany\n",
    );
    env.git(&[
        "config",
        "--local",
        "merge.epiphany.driver",
        "old-epiphany merge-driver",
    ]);

    let dry = env.json(&["hooks", "install", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        String::from_utf8(env.read(".git/hooks/post-commit")).expect("utf8"),
        foreign
    );
    assert!(!env.root().join(".git/hooks/post-merge").exists());

    let first = env.json(&["hooks", "install", "--git", "--pre-push"]);
    let actions: Vec<(&str, &str)> = first["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().expect("path"),
                f["action"].as_str().expect("action"),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            (".git/hooks/post-commit", "update"),
            (".git/hooks/post-merge", "create"),
            (".git/hooks/post-checkout", "create"),
            (".git/hooks/pre-push", "create"),
            (".gitattributes", "update"),
        ]
    );
    let chained = String::from_utf8(env.read(".git/hooks/post-commit")).expect("utf8");
    assert!(
        chained.starts_with("#!/bin/sh\n# >>> epiphany >>>\n"),
        "{chained}"
    );
    assert!(chained.contains("-q index >/dev/null 2>&1 &"), "{chained}");
    assert!(
        chained.ends_with("echo foreign hook\nexit 0\n"),
        "{chained}"
    );
    // The store needs no merge driver: the old one is taken out, the diff textconv set.
    assert_eq!(
        String::from_utf8(env.read(".gitattributes")).expect("utf8"),
        "*.png binary\n"
    );
    assert!(
        env.git_output(&["config", "--local", "merge.epiphany.driver"])
            .stdout
            .is_empty()
    );
    assert!(
        env.git(&["config", "--local", "diff.epiphany.textconv"])
            .ends_with("textconv\n")
    );

    insta::assert_snapshot!(env.run(&["hooks", "install", "--git", "--pre-push"]), @r"
    git runs the hooks in `.git/hooks`; epiphany's lines are in `.git/hooks/post-commit`, `.git/hooks/post-merge`, `.git/hooks/post-checkout`, `.git/hooks/pre-push`
    nothing to change
    [exit status: 0]
    ");

    env.ok(&["hooks", "uninstall"]);
    assert_eq!(
        String::from_utf8(env.read(".git/hooks/post-commit")).expect("utf8"),
        foreign
    );
    assert!(!env.root().join(".git/hooks/post-merge").exists());
    assert!(!env.root().join(".git/hooks/pre-push").exists());
    assert_eq!(
        String::from_utf8(env.read(".gitattributes")).expect("utf8"),
        "*.png binary\n"
    );
    assert!(
        env.git_output(&["config", "--local", "diff.epiphany.textconv"])
            .stdout
            .is_empty(),
        "the textconv key should be gone"
    );
}

#[test]
fn broken_host_settings_are_reported_not_overwritten() {
    let env = TestEnv::new();
    env.write(".claude/settings.local.json", "{not json");
    let output = env.run(&["hooks", "install", "--claude"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output
            .stderr
            .contains(".claude/settings.local.json` is not valid JSON"),
        "{output}"
    );
    assert_eq!(env.read(".claude/settings.local.json"), b"{not json");
}

/// `git diff` of a write shows the record, a line of JSON, and nothing else: the snapshots are
/// a cache git never sees.
#[test]
fn git_diff_shows_the_record_and_no_snapshot() {
    let env = installed();
    env.ok_with(
        &["update"],
        &[("EPIPHANY_SNAPSHOT_EVERY", "1")],
        json!({"objective": "a readable diff"}).to_string(),
    );
    env.git(&["add", "-N", ".epiphany"]);
    let diff = env.git(&["diff", "--", ".epiphany/"]);
    assert!(
        diff.contains("\"patch\":{\"objective\":\"a readable diff\"}"),
        "{diff}"
    );
    assert!(!diff.contains(".snapshot"), "{diff}");
}

// ---------------------------------------------------------------------------------------------
// Agent hosts.
//
// Claude Code, hooks reference (https://code.claude.com/docs/en/hooks):
// - SessionStart input: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `source`
//   (`startup` | `resume` | `clear` | `compact`), `model`; matcher values are those sources.
// - PreCompact input: `session_id`, `transcript_path`, `cwd`, `permission_mode`,
//   `hook_event_name`, `trigger` (`manual` | `auto`), `custom_instructions`.
// - SessionStart output: `hookSpecificOutput.additionalContext` is added to Claude's context;
//   text injected by hooks is capped at 10,000 characters. `systemMessage` is a warning shown
//   to the user. PreCompact has no field that reaches the model.
//
// Codex, openai/codex `codex-rs/hooks`:
// - `src/events/session_start.rs`: `SessionStartSource::{Startup, Resume, Clear, Compact}`, the
//   source as matcher input; `src/schema.rs` `SessionStartCommandInput { session_id,
//   transcript_path, cwd, hook_event_name, model, permission_mode, source }`.
// - `src/events/common.rs` `matches_matcher`: a matcher of letters, digits, `_` and `|` is a set
//   of exact alternatives (so `startup|resume|clear` never matches `compact`).
// - `src/output_spill.rs`: `HOOK_OUTPUT_TOKEN_LIMIT: usize = 2_500`, with
//   `approx_token_count` = ceil(UTF-8 bytes / 4) (`codex-rs/utils/string`).
// - `schema/generated/*.command.output.schema.json`: the only fields a hook may print (quoted
//   below); `systemMessage` becomes a warning entry the user sees.
// ---------------------------------------------------------------------------------------------

/// `codex-rs/hooks/schema/generated/session-start.command.output.schema.json` (its
/// `additionalProperties: false` is what matters: any other field fails the hook).
fn codex_session_start_output_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "additionalProperties": false,
        "definitions": {"SessionStartHookSpecificOutputWire": {
            "additionalProperties": false,
            "properties": {
                "additionalContext": {"default": null, "type": "string"},
                "env": {"additionalProperties": {"type": "string"}, "default": {}, "type": "object"},
                "hookEventName": {"const": "SessionStart", "type": "string"}
            },
            "required": ["hookEventName"],
            "type": "object"
        }},
        "properties": {
            "continue": {"default": true, "type": "boolean"},
            "hookSpecificOutput": {"allOf": [{"$ref": "#/definitions/SessionStartHookSpecificOutputWire"}], "default": null},
            "stopReason": {"default": null, "type": "string"},
            "suppressOutput": {"default": false, "type": "boolean"},
            "systemMessage": {"default": null, "type": "string"}
        },
        "title": "session-start.command.output",
        "type": "object"
    })
}

/// `codex-rs/hooks/schema/generated/pre-compact.command.output.schema.json`.
fn codex_pre_compact_output_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "additionalProperties": false,
        "properties": {
            "continue": {"default": true, "type": "boolean"},
            "stopReason": {"default": null, "type": ["string", "null"]},
            "suppressOutput": {"default": false, "type": "boolean"},
            "systemMessage": {"default": null, "type": ["string", "null"]}
        },
        "title": "pre-compact.command.output",
        "type": "object"
    })
}

fn assert_matches(schema: &Value, document: &Value) {
    let validator = jsonschema::validator_for(schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{document}");
}

/// A Claude Code `SessionStart` payload, as the hooks reference shows it.
fn claude_session_start(env: &TestEnv, source: &str) -> Value {
    json!({
        "session_id": "abc123",
        "transcript_path": env.root().join(".claude-transcript.jsonl"),
        "cwd": env.root(),
        "hook_event_name": "SessionStart",
        "source": source,
        "model": "claude-sonnet-4-6"
    })
}

/// A Claude Code `PreCompact` payload, as the hooks reference shows it.
fn claude_pre_compact(env: &TestEnv, trigger: &str) -> Value {
    json!({
        "session_id": "abc123",
        "transcript_path": env.root().join(".claude-transcript.jsonl"),
        "cwd": env.root(),
        "permission_mode": "default",
        "hook_event_name": "PreCompact",
        "trigger": trigger,
        "custom_instructions": ""
    })
}

/// A Codex `SessionStart` payload: `SessionStartCommandInput` in `codex-rs/hooks/src/schema.rs`.
fn codex_session_start(env: &TestEnv, source: &str) -> Value {
    json!({
        "session_id": "019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b",
        "transcript_path": null,
        "cwd": env.root(),
        "hook_event_name": "SessionStart",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "source": source
    })
}

/// A Codex `PreCompact` payload: `pre-compact.command.input.schema.json` requires `cwd`,
/// `hook_event_name`, `model`, `session_id`, `transcript_path`, `trigger` and `turn_id`.
fn codex_pre_compact(env: &TestEnv, trigger: &str) -> Value {
    json!({
        "session_id": "019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b",
        "turn_id": "turn-7",
        "transcript_path": null,
        "cwd": env.root(),
        "hook_event_name": "PreCompact",
        "model": "gpt-5-codex",
        "trigger": trigger
    })
}

/// The hook commands registered for `event` in a host settings file.
fn registered(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|handler| handler["command"].as_str().map(str::to_owned))
        .collect()
}

fn read_json(env: &TestEnv, path: &str) -> Value {
    serde_json::from_slice(&env.read(path)).expect("json")
}

#[test]
fn agent_hooks_call_the_binary_by_its_absolute_path_for_every_session_start() {
    let env = TestEnv::new();
    let shared = "{\n\t\"model\": \"opus\", \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]}}";
    env.write(".claude/settings.json", shared);
    env.ok(&["hooks", "install", "--claude", "--codex"]);
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();

    // The shared, committed settings are not touched: the path is this machine's.
    assert_eq!(env.read(".claude/settings.json"), shared.as_bytes());
    // Both hosts run the hook for every way a session starts; Codex matchers are exact
    // alternatives, so `compact` has to be named to run after compaction.
    let registers_both_hooks = |path: &str, host: &str| {
        let settings = read_json(&env, path);
        assert_eq!(
            settings["hooks"]["SessionStart"][0]["matcher"],
            "startup|resume|clear|compact"
        );
        for (event, hook) in [
            ("SessionStart", "session-start"),
            ("PreCompact", "pre-compact"),
        ] {
            assert_eq!(
                registered(&settings, event),
                [format!("{exe} hook {hook} --host {host}")]
            );
        }
        settings
    };
    let claude = registers_both_hooks(".claude/settings.local.json", "claude");
    let codex = registers_both_hooks(".codex/hooks.json", "codex");
    // `HooksFile` in codex-rs/config denies unknown top-level fields: only `hooks` is there.
    assert_eq!(
        codex
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["hooks".to_owned()])
    );
    assert!(
        !env.root().join(".git/hooks/post-commit").exists(),
        "naming hosts leaves git alone"
    );

    let again = env.json(&["hooks", "install", "--claude", "--codex"]);
    assert!(
        again["files"]
            .as_array()
            .expect("files")
            .iter()
            .all(|f| f["action"] == "unchanged"),
        "{again}"
    );

    // The host runs the command with its own PATH, which need not contain epiphany.
    env.update(&json!({"objective": "found without PATH"}));
    let command = registered(&claude, "SessionStart").remove(0);
    let output = std::process::Command::new("/bin/sh")
        .args(["-c", &command])
        .env_clear()
        .env("PATH", "/nonexistent")
        .env("HOME", env.root())
        .current_dir(env.root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(claude_session_start(&env, "startup").to_string().as_bytes())?;
            child.wait_with_output()
        })
        .expect("run the hook as the host does");
    assert!(output.status.success(), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).expect("json");
    let context = document["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    assert!(
        context.contains("Objective: found without PATH"),
        "{context}"
    );
}

#[test]
fn a_reinstall_points_the_hooks_at_the_binary_again() {
    let env = TestEnv::new();
    // A registration whose binary is gone (moved, or reinstalled elsewhere): a host running it
    // gets exit 127. Running `hooks install` again replaces it; it does not add a second one.
    let stale = json!({"hooks": {
        "SessionStart": [{"matcher": "startup|resume|clear|compact", "hooks": [
            {"type": "command", "command": "'/gone/bin/epiphany' hook session-start --host claude", "timeout": 30}]}],
        "PreCompact": [{"matcher": "manual|auto", "hooks": [
            {"type": "command", "command": "/gone/bin/epiphany hook pre-compact --host claude", "timeout": 30}]}]
    }});
    env.write(".claude/settings.local.json", stale.to_string());
    // Earlier versions registered a bare `epiphany` in the shared settings.
    env.write(".claude/settings.json", json!({"hooks": {"SessionStart": [{"matcher": "startup|resume|clear",
        "hooks": [{"type": "command", "command": "epiphany hook session-start"}]}]}, "model": "opus"}).to_string());
    let output = env.run(&["hooks", "install", "--claude"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stderr.contains(
            "after moving or reinstalling epiphany, run `epiphany hooks install --claude` again"
        ),
        "{output}"
    );
    assert!(
        output.stderr.contains(
            "`.claude/settings.local.json` holds this machine's path to epiphany: keep it out of git"
        ),
        "{output}"
    );
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();
    let claude = read_json(&env, ".claude/settings.local.json");
    assert_eq!(
        registered(&claude, "SessionStart"),
        [format!("{exe} hook session-start --host claude")]
    );
    assert_eq!(
        registered(&claude, "PreCompact"),
        [format!("{exe} hook pre-compact --host claude")]
    );
    assert_eq!(
        read_json(&env, ".claude/settings.json"),
        json!({"model": "opus"})
    );
}

#[test]
fn uninstall_gives_settings_their_bytes_back_and_removes_what_it_created() {
    let env = TestEnv::new();
    let local = "{\"permissions\":{\"allow\":[\"Bash(cargo test)\"]}}";
    env.write(".claude/settings.local.json", local);
    let shared = "{ \"model\": \"opus\" }\n";
    env.write(".claude/settings.json", shared);
    env.ok(&["hooks", "install", "--claude", "--codex"]);
    assert_ne!(env.read(".claude/settings.local.json"), local.as_bytes());
    env.ok(&["hooks", "uninstall", "--claude", "--codex"]);
    assert_eq!(env.read(".claude/settings.local.json"), local.as_bytes());
    assert_eq!(env.read(".claude/settings.json"), shared.as_bytes());
    assert!(
        !env.root().join(".codex").exists(),
        "install created .codex/, uninstall removes it"
    );
    assert!(
        !env.root().join(".git/epiphany").exists(),
        "no backups left behind"
    );

    // A Codex folder that was there before stays, with its other files.
    env.write(".codex/config.toml", "model = \"gpt-5-codex\"\n");
    env.ok(&["hooks", "install", "--codex"]);
    env.ok(&["hooks", "uninstall"]);
    assert!(!env.root().join(".codex/hooks.json").exists());
    assert_eq!(env.read(".codex/config.toml"), b"model = \"gpt-5-codex\"\n");
}

#[test]
fn claude_code_gets_context_for_every_session_start_source() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "keep spans across retries"}));
    for source in ["startup", "resume", "clear", "compact"] {
        let input = claude_session_start(&env, source);
        let output = env.run_with_stdin(
            &["hook", "session-start", "--host", "claude"],
            input.to_string(),
        );
        let context = output.session_context();
        assert!(
            context.contains("Objective: keep spans across retries"),
            "{source}: {context}"
        );
        assert!(
            context.contains("<epiphany_reorient>"),
            "{source}: {context}"
        );
        assert_eq!(
            context.contains("<epiphany_compaction>"),
            source == "compact",
            "{source}: {context}"
        );
    }
}

#[test]
fn session_start_carries_the_code_map_around_the_checkpoint_within_the_budget() {
    let env = TestEnv::new();
    env.write("src/core.rs", "pub fn parse() {}\n");
    env.write("src/cited.rs", "pub fn cited_here() { parse(); }\n");
    env.update(&json!({"objective": "keep spans across retries"}));
    env.ok(&[
        "checkpoint",
        "set",
        "--focus",
        "spans",
        "--next",
        "read",
        "--ref",
        "src/cited.rs",
    ]);
    let input = claude_session_start(&env, "startup");
    let output = env.run_with_stdin(
        &["hook", "session-start", "--host", "claude"],
        input.to_string(),
    );
    let context = output.session_context();
    let map = context
        .split("## Code map")
        .nth(1)
        .expect("a code map section");
    assert!(
        map.contains("src/cited.rs\n      1  pub fn cited_here() {"),
        "{context}"
    );
    assert!(
        map.find("src/cited.rs") < map.find("src/core.rs"),
        "{context}"
    );
    // A tight budget keeps the state and drops the map first.
    let output = env.run_with_stdin(
        &[
            "hook",
            "session-start",
            "--host",
            "claude",
            "--max-chars",
            "3000",
        ],
        input.to_string(),
    );
    let context = output.session_context();
    assert!(context.chars().count() <= 3000, "{context}");
    assert!(
        context.contains("Objective: keep spans across retries"),
        "{context}"
    );
}

#[test]
fn codex_gets_context_in_the_shape_its_schema_allows() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "keep spans across retries"}));
    for source in ["startup", "resume", "clear", "compact"] {
        let input = codex_session_start(&env, source);
        let output = env.run_with_stdin(
            &["hook", "session-start", "--host", "codex"],
            input.to_string(),
        );
        assert_matches(&codex_session_start_output_schema(), &output.json());
        let context = output.session_context();
        assert!(
            context.contains("Objective: keep spans across retries"),
            "{source}: {context}"
        );
        assert!(
            context.len().div_ceil(4) <= 2_500,
            "{source}: {} bytes",
            context.len()
        );
    }
    // PreCompact has no context field in Codex: the hook records and prints nothing.
    let output = env.run_with_stdin(
        &["hook", "pre-compact", "--host", "codex"],
        codex_pre_compact(&env, "auto").to_string(),
    );
    assert_eq!((output.code, output.stdout.as_str()), (0, ""), "{output}");
}

#[test]
fn after_a_compaction_the_session_start_says_when_and_how_old_the_checkpoint_was() {
    let env = TestEnv::new();
    let checkpoint = json!({"investigation_checkpoint": {"checkpoint_id": "ck-lexer", "kind": "debug",
        "disposition": "resume_ready", "focus": "lexer retries", "next_action": "reread src/lexer.rs"}});
    env.update(&checkpoint); // written at 00:00:01 (the test clock adds a second per run)
    for _ in 0..3 {
        env.ok(&["show"]); // the clock moves on
    }
    let before = env.run_with_stdin(
        &["hook", "pre-compact", "--host", "claude"],
        claude_pre_compact(&env, "auto").to_string(),
    );
    assert_eq!((before.code, before.stdout.as_str()), (0, ""), "{before}");
    let recorded = read_json(&env, ".epiphany/cache/compactions.json");
    assert_eq!(recorded[0]["session_id"], "abc123");
    assert_eq!(recorded[0]["trigger"], "auto");
    assert!(
        recorded[0]["transcript_path"]
            .as_str()
            .expect("path")
            .ends_with(".claude-transcript.jsonl")
    );

    let after = env.run_with_stdin(
        &["hook", "session-start", "--host", "claude"],
        claude_session_start(&env, "compact").to_string(),
    );
    let context = after.session_context();
    assert!(context.starts_with("<epiphany_compaction>\nYour context was compacted (auto) less than a minute ago, at 2026-01-01T00:00:05Z"), "{context}");
    assert!(context.contains("The investigation checkpoint `ck-lexer` was saved less than a minute before the compaction"), "{context}");
    assert!(
        context.contains("Before the next compaction, save through `epiphany update`"),
        "{context}"
    );
    assert!(
        context.contains("Checkpoint: ck-lexer") || context.contains("ck-lexer"),
        "{context}"
    );

    // Another session's compaction is not this one's.
    let mut other = claude_session_start(&env, "compact");
    other["session_id"] = json!("other-session");
    let context = env
        .run_with_stdin(
            &["hook", "session-start", "--host", "claude"],
            other.to_string(),
        )
        .session_context();
    assert!(
        context.starts_with("<epiphany_compaction>\nYour context was just compacted:"),
        "{context}"
    );
}

/// Finding D2: `pre-compact` stored the host's session id as given, a token in it included.
/// What it stores is redacted, and the session start that follows still finds its record.
#[test]
fn pre_compact_stores_no_secret_from_the_host() {
    let env = TestEnv::new();
    let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
    let session = format!("s-{token}");
    let mut input = claude_pre_compact(&env, "manual");
    input["session_id"] = json!(session);
    input["transcript_path"] = json!(format!("/tmp/{token}.jsonl"));
    let output = env.run_with_stdin(&["hook", "pre-compact"], input.to_string());
    assert_eq!((output.code, output.stdout.as_str()), (0, ""), "{output}");
    let cache = String::from_utf8(env.read(".epiphany/cache/compactions.json")).expect("utf-8");
    assert!(!cache.contains("ghp_"), "{cache}");
    let recorded = read_json(&env, ".epiphany/cache/compactions.json");
    assert_eq!(recorded[0]["session_id"], "s-[REDACTED:github_token]");

    let mut start = claude_session_start(&env, "compact");
    start["session_id"] = json!(session);
    let context = env
        .run_with_stdin(
            &["hook", "session-start", "--host", "claude"],
            start.to_string(),
        )
        .session_context();
    assert!(
        context.starts_with("<epiphany_compaction>\nYour context was compacted (manual)"),
        "{context}"
    );
    assert!(!context.contains("ghp_"), "{context}");
}

#[test]
fn cjk_state_fits_each_hosts_budget_in_its_own_unit() {
    let env = TestEnv::new();
    let observations: Vec<Value> = (0..300)
        .map(|i| json!({"id": format!("obs-{i}"), "summary": format!("観測{i}：{}", "字句解析器はリトライ後もスパンを保持する。再試行経路の境界条件を確認した。".repeat(40)),
                        "source_kind": "test", "status": "ok", "evidence_ids": [format!("ev-{i}")]}))
        .collect();
    let evidence: Vec<Value> = (0..300)
        .map(|i| json!({"id": format!("ev-{i}"), "kind": "test", "status": "ok", "summary": format!("証拠{i}：字句解析のテストが通った")}))
        .collect();
    env.update(&json!({"objective": "リトライをまたいでスパンを保つ", "observations": observations, "evidence": evidence}));
    let context_for = |host: Option<&str>, input: Value| {
        let mut args = vec!["hook", "session-start"];
        if let Some(host) = host {
            args.extend(["--host", host]);
        }
        env.run_with_stdin(&args, input.to_string())
            .session_context()
    };
    let claude = context_for(Some("claude"), claude_session_start(&env, "startup"));
    assert!(
        claude.chars().count() <= 10_000,
        "{} characters",
        claude.chars().count()
    );
    assert!(
        claude.len() > 10_000,
        "Claude Code counts characters: {} bytes is fine",
        claude.len()
    );
    let codex = context_for(Some("codex"), codex_session_start(&env, "startup"));
    assert!(
        codex.len().div_ceil(4) <= 2_500,
        "{} bytes is over Codex's 2,500 tokens",
        codex.len()
    );
    assert!(
        codex.contains("Left out to stay within")
            && codex.contains("epiphany context --observation ID"),
        "what did not fit is named, with the command that fetches it: {codex}"
    );
    let unknown = context_for(None, json!({"source": "startup"}));
    assert!(unknown.len() <= 10_000 && unknown.chars().count() <= 10_000);
    for context in [&claude, &codex, &unknown] {
        assert!(
            context.contains("Objective: リトライをまたいでスパンを保つ"),
            "{context}"
        );
        assert!(
            context.trim_end().ends_with("</epiphany_state>"),
            "{context}"
        );
    }
}

#[test]
fn session_start_works_from_a_subdirectory_and_ignores_garbage_input() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "o"}));
    env.write("sub/file.txt", "x");
    let output = env.run_with_stdin(&["-C", "sub", "hook", "session-start"], "not json at all");
    assert!(
        output.session_context().contains("Objective: o"),
        "{output}"
    );
}

#[test]
fn a_store_problem_reaches_the_user_and_never_fails_the_host() {
    let env = TestEnv::bare();
    let nothing = env.run_with_stdin(&["hook", "session-start"], "{}");
    assert_eq!(
        (nothing.code, nothing.stdout.as_str()),
        (0, ""),
        "no store, nothing to say: {nothing}"
    );

    let env = TestEnv::new();
    env.update(&json!({"objective": "o"}));
    std::fs::write(env.last_segment(), b"\x00\x01broken\n").expect("write");
    let start = env.run_with_stdin(
        &["hook", "session-start", "--host", "codex"],
        codex_session_start(&env, "startup").to_string(),
    );
    assert_eq!(start.code, 0, "{start}");
    assert_matches(&codex_session_start_output_schema(), &start.json());
    let message = start.json()["systemMessage"]
        .as_str()
        .expect("shown to the user")
        .to_owned();
    assert!(
        message
            .starts_with("epiphany: this session starts without the repository's recorded state"),
        "{message}"
    );
    assert!(message.contains("rollout"), "{message}");
    assert!(
        start
            .session_context()
            .contains("Do not assume nothing was recorded"),
        "{start}"
    );
    let claude = env.run_with_stdin(
        &["hook", "session-start", "--host", "claude"],
        claude_session_start(&env, "resume").to_string(),
    );
    assert!(claude.json()["systemMessage"].is_string(), "{claude}");

    for (host, input) in [
        ("claude", claude_pre_compact(&env, "manual")),
        ("codex", codex_pre_compact(&env, "manual")),
    ] {
        let output =
            env.run_with_stdin(&["hook", "pre-compact", "--host", host], input.to_string());
        assert_eq!(output.code, 0, "{output}");
        assert_matches(&codex_pre_compact_output_schema(), &output.json());
        let message = output.json()["systemMessage"]
            .as_str()
            .expect("message")
            .to_owned();
        assert!(
            message.starts_with("epiphany: this compaction was not recorded"),
            "{message}"
        );
        assert!(
            output.stderr.contains("warning: epiphany hook:"),
            "{output}"
        );
    }
}

/// Makes a hook script executable, as git requires.
fn make_executable(env: &TestEnv, hook: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = env.root().join(".git/hooks").join(hook);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// epiphany's block is shell code: put after the shebang of a Python hook it made the hook a
/// SyntaxError, and a broken `pre-push` blocks every push. A hook whose interpreter is not a
/// POSIX shell is refused, with the command line to call from it, and nothing changes; a hook
/// run by bash through `env`, and one without a shebang (git runs it with `sh`), are chained.
#[test]
fn a_hook_in_another_language_is_refused_with_the_command_to_call_from_it() {
    let env = TestEnv::new();
    let python = "#!/usr/bin/env python3\nprint(\"checks ok\")\n";
    for hook in ["pre-push", "post-merge"] {
        env.write(&format!(".git/hooks/{hook}"), python);
        make_executable(&env, hook);
    }
    let config = env.read(".git/config");
    let refused = env.run(&["--json", "hooks", "install", "--git", "--pre-push"]);
    assert_eq!(refused.code, 2, "{refused}");
    let error = &refused.json()["error"];
    assert_eq!(error["kind"], "input", "{refused}");
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();
    assert_eq!(
        error["problems"],
        json!([
            {"path": "[ROOT]/.git/hooks/post-merge", "message": format!(
                "runs with `python3`: have it run `{exe} -q index` in the background"
            )},
            {"path": "[ROOT]/.git/hooks/pre-push", "message": format!(
                "runs with `python3`: have it run `{exe} hook pre-push` and refuse the push when that exits 1"
            )},
        ]),
        "{refused}"
    );
    assert!(
        (error["hint"].as_str()).is_some_and(|h| h.contains("nothing was changed")),
        "{refused}"
    );
    for hook in ["pre-push", "post-merge"] {
        assert_eq!(env.read(&format!(".git/hooks/{hook}")), python.as_bytes());
    }
    for hook in ["post-commit", "post-checkout"] {
        assert!(!env.root().join(".git/hooks").join(hook).exists(), "{hook}");
    }
    assert_eq!(env.read(".git/config"), config);

    let bash = "#!/usr/bin/env bash\necho bash hook >&2\n";
    let plain = "echo plain hook\n";
    env.write(".git/hooks/pre-push", bash);
    env.write(".git/hooks/post-merge", plain);
    env.ok(&["hooks", "install", "--git", "--pre-push"]);
    let pre_push = String::from_utf8(env.read(".git/hooks/pre-push")).expect("utf8");
    assert!(
        pre_push.starts_with("#!/usr/bin/env bash\n# >>> epiphany >>>\n")
            && pre_push.ends_with("# <<< epiphany <<<\necho bash hook >&2\n"),
        "{pre_push}"
    );
    let post_merge = String::from_utf8(env.read(".git/hooks/post-merge")).expect("utf8");
    assert!(
        post_merge.starts_with("# >>> epiphany >>>\n")
            && post_merge.ends_with("# <<< epiphany <<<\necho plain hook\n"),
        "{post_merge}"
    );
    for (shell, hook) in [("bash", "pre-push"), ("sh", "post-merge")] {
        let path = env.root().join(".git/hooks").join(hook);
        let parsed = std::process::Command::new(shell)
            .arg("-n")
            .arg(path)
            .output()
            .expect(shell);
        assert!(parsed.status.success(), "{hook}: {parsed:?}");
    }
    // git runs the chained pre-push hook: epiphany's check, then the hook's own line.
    env.commit_all("store");
    let pushed = env.push(&env.bare_remote(), "main");
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(
        String::from_utf8_lossy(&pushed.stderr).contains("bash hook"),
        "{pushed:?}"
    );
}

/// Commits `src/lib.rs` and maps it as the node `lib`.
pub fn map_a_file(env: &TestEnv) {
    env.write("src/lib.rs", "pub fn cited() {}\n");
    env.commit_all("code");
    env.ok(&[
        "node",
        "set",
        "lib",
        "--purpose",
        "the library",
        "--ref",
        "src/lib.rs",
    ]);
}

/// See: issue 30. Through git's own `push` and the installed hook: an uncited edit committed
/// and pushed at once (the index behind it, being rebuilt) goes through; an edit of a cited
/// file is refused with the reason; re-checking the node lets the push go; a repository
/// without a store pushes as if nothing were installed.
#[test]
fn regression_30_pre_push_refuses_only_a_stale_map() {
    let env = TestEnv::new();
    env.write("README.md", "read me\n");
    map_a_file(&env);
    env.ok(&["index"]);
    env.ok(&["hooks", "install", "--git", "--pre-push"]);
    env.commit_all("map");
    let remote = env.bare_remote();
    env.write("README.md", "read me again\n");
    env.commit_all("docs");
    let pushed = env.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(pushed.stderr.is_empty(), "{pushed:?}");

    env.write("src/lib.rs", "pub fn cited() { let _ = 1; }\n");
    env.commit_all("change what the map cites");
    let refused = env.push(&remote, "HEAD:main");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        stderr.contains(
            "the push is refused: the map is stale: cited code changed since it was checked: src/lib.rs"
        ) && stderr.contains("git push --no-verify"),
        "{stderr}"
    );
    env.ok(&["recheck", "lib"]);
    env.commit_all("re-read");
    let pushed = env.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");

    let plain = TestEnv::bare();
    plain.write("a.txt", "a\n");
    plain.commit_all("no store");
    plain.ok(&["hooks", "install", "--git", "--pre-push"]);
    let remote = plain.bare_remote();
    let pushed = plain.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(pushed.stderr.is_empty(), "{pushed:?}");
}

/// See: issue 30. A hook whose binary moved away (exit 127 before) lets the push go with a
/// warning that says so, or, installed with `--pre-push=strict`, refuses it.
#[test]
fn regression_30_a_moved_binary_is_said_and_fails_open_unless_strict() {
    for (mode, allowed, said) in [
        (
            "--pre-push",
            true,
            "is missing; the push goes ahead unchecked",
        ),
        (
            "--pre-push=strict",
            false,
            "is missing; the push is refused",
        ),
    ] {
        let env = TestEnv::new();
        let copy = env.root().join(".git/epiphany-copy");
        std::fs::copy(assert_cmd::cargo::cargo_bin("epiphany"), &copy).expect("copy");
        // Another test thread may fork while the copy is still open for writing here; its
        // child holds that descriptor until it execs, and running the copy meanwhile fails
        // with ETXTBSY. That passes in a moment.
        let installed = (0..100)
            .map(|_| {
                env.std_command_of(&copy, &["hooks", "install", "--git", mode])
                    .output()
            })
            .find(|run| {
                let busy =
                    matches!(run, Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy);
                if busy {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                !busy
            })
            .expect("the copy runs within two seconds")
            .expect("install");
        assert!(installed.status.success(), "{installed:?}");
        std::fs::remove_file(&copy).expect("move the binary away");
        env.commit_all("store");
        let pushed = env.push(&env.bare_remote(), "HEAD:main");
        assert_eq!(pushed.status.success(), allowed, "{mode}: {pushed:?}");
        let stderr = String::from_utf8_lossy(&pushed.stderr);
        assert!(stderr.contains(said), "{mode}: {stderr}");
    }
}

/// See: issue 30. A `core.hooksPath` outside the repository (a global one, shared by every
/// repository) is refused without `--global`, nothing written there; from a linked worktree
/// the hooks go to the common `hooks/` git runs, and uninstall there takes them out again.
#[test]
fn regression_30_hooks_go_where_git_runs_them_and_never_outside_unasked() {
    let env = TestEnv::new();
    env.commit_all("store");
    let shared = env.sibling("shared-hooks");
    std::fs::create_dir_all(shared.root()).expect("mkdir");
    let hooks_path = shared.root().display().to_string();
    env.git(&["config", "core.hooksPath", &hooks_path]);
    let refused = env.run(&["--json", "hooks", "install", "--git"]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("outside the repository")),
        "{refused}"
    );
    assert_eq!(std::fs::read_dir(shared.root()).expect("list").count(), 0);
    // The same folder spelled from inside the repository, absolute and relative.
    let climbing = shared
        .root()
        .strip_prefix(env.root().parent().expect("parent"))
        .expect("sibling");
    let relative = format!("../{}", climbing.display());
    for spelled in [
        format!("{}/{relative}", env.root().display()),
        relative.clone(),
    ] {
        env.git(&["config", "core.hooksPath", &spelled]);
        let refused = env.run(&["hooks", "install", "--git"]);
        assert_eq!(refused.code, 2, "{spelled}: {refused}");
        assert!(
            refused.stderr.contains("outside the repository"),
            "{refused}"
        );
        assert_eq!(std::fs::read_dir(shared.root()).expect("list").count(), 0);
    }
    env.git(&["config", "core.hooksPath", &hooks_path]);
    env.ok(&["hooks", "install", "--git", "--global"]);
    assert!(shared.root().join("post-commit").exists());
    env.ok(&["hooks", "uninstall", "--git", "--global"]);
    assert!(!shared.root().join("post-commit").exists());
    env.git(&["config", "--unset", "core.hooksPath"]);

    let worktree = env.sibling("linked");
    env.git(&[
        "worktree",
        "add",
        "-q",
        &worktree.root().display().to_string(),
        "-b",
        "side",
    ]);
    worktree.ok(&["hooks", "install", "--git"]);
    assert!(env.root().join(".git/hooks/post-commit").exists());
    assert!(!env.root().join(".git/worktrees/linked/hooks").exists());
    worktree.ok(&["hooks", "uninstall", "--git"]);
    assert!(!env.root().join(".git/hooks/post-commit").exists());
}

fn mode(env: &TestEnv, path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(env.root().join(path))
        .expect("stat")
        .permissions()
        .mode()
        & 0o777
}

/// See: issue 30. With husky 9's layout (`core.hooksPath` = `.husky/_`, generated and wiped by
/// every `npm install`) the lines go into the tracked `.husky/<hook>` scripts husky runs;
/// a tracked hooks folder gets `epiphany` from PATH (this machine's path would be wrong in
/// every other clone) and a warning saying so; a hook someone disabled stays disabled.
#[test]
fn regression_30_husky_tracked_and_disabled_hooks() {
    let env = TestEnv::new();
    env.write(".husky/_/h", "# generated by husky\n");
    env.write(".husky/pre-commit", "npm test\n");
    env.git(&["config", "core.hooksPath", ".husky/_"]);
    let installed = env.run(&["hooks", "install", "--git", "--pre-push"]);
    assert_eq!(installed.code, 0, "{installed}");
    assert!(
        installed
            .stderr
            .contains("so the repository can track it: they call `epiphany` from PATH"),
        "{installed}"
    );
    assert_eq!(
        std::fs::read_dir(env.root().join(".husky/_"))
            .expect("list")
            .count(),
        1,
        "husky's generated folder is left alone"
    );
    let pre_push = String::from_utf8(env.read(".husky/pre-push")).expect("utf8");
    assert!(
        pre_push.contains("if command -v epiphany >/dev/null 2>&1; then epiphany hook pre-push"),
        "{pre_push}"
    );
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();
    assert!(!pre_push.contains(&exe), "{pre_push}");
    assert!(
        String::from_utf8(env.read(".husky/post-commit"))
            .expect("utf8")
            .contains("epiphany -q index")
    );
    env.ok(&["hooks", "uninstall", "--git"]);
    assert!(!env.root().join(".husky/pre-push").exists());
    assert_eq!(env.read(".husky/pre-commit"), b"npm test\n");
    env.git(&["config", "--unset", "core.hooksPath"]);

    env.write(".git/hooks/post-merge", "#!/bin/sh\necho merged\n");
    assert_eq!(mode(&env, ".git/hooks/post-merge"), 0o644);
    env.ok(&["hooks", "install", "--git"]);
    assert_eq!(
        mode(&env, ".git/hooks/post-merge"),
        0o644,
        "a disabled hook stays disabled"
    );
    assert_eq!(mode(&env, ".git/hooks/post-commit"), 0o755);
    env.ok(&["hooks", "uninstall", "--git"]);
    assert_eq!(mode(&env, ".git/hooks/post-merge"), 0o644);
    assert_eq!(
        env.read(".git/hooks/post-merge"),
        b"#!/bin/sh\necho merged\n"
    );
}

/// Runs the pre-commit framework's own `install` for `hook_type`.
fn pre_commit_install(env: &TestEnv, hook_type: &str) {
    let output = std::process::Command::new("pre-commit")
        .args(["install", "--hook-type", hook_type])
        .current_dir(env.root())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()
        .expect("pre-commit");
    assert!(output.status.success(), "{output:?}");
}

/// See: issue 30. The real pre-commit framework (`pip install pre-commit`) moves a foreign
/// hook to `<hook>.legacy` and rewrites its own script on every `install`: epiphany's block
/// then lives in the `.legacy` script pre-commit runs, once, in either order of installs;
/// pushes still run the check, and uninstall takes the block out of `.legacy` too.
#[test]
#[ignore = "needs pre-commit (pip install pre-commit); .ci/run runs it"]
fn regression_30_the_block_survives_pre_commit_install() {
    crate::common::require_tool("pre-commit", &["--version"]);
    let env = TestEnv::new();
    env.write(".pre-commit-config.yaml", "repos: []\n");
    map_a_file(&env);
    env.ok(&["hooks", "install", "--git", "--pre-push"]);
    pre_commit_install(&env, "pre-push");
    let legacy = || String::from_utf8(env.read(".git/hooks/pre-push.legacy")).expect("utf8");
    let ours = || String::from_utf8(env.read(".git/hooks/pre-push")).expect("utf8");
    assert_eq!(
        legacy().matches("# >>> epiphany >>>").count(),
        1,
        "{}",
        legacy()
    );
    env.ok(&["hooks", "install", "--git", "--pre-push"]);
    pre_commit_install(&env, "pre-push");
    assert!(!ours().contains("epiphany >>>"), "{}", ours());
    assert_eq!(
        legacy().matches("# >>> epiphany >>>").count(),
        1,
        "{}",
        legacy()
    );
    // pre-commit runs the block: a stale map is refused through it.
    env.commit_all("map");
    env.write("src/lib.rs", "pub fn cited() { let _ = 1; }\n");
    env.commit_all("change what the map cites");
    let refused = env.push(&env.bare_remote(), "HEAD:main");
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("the map is stale"),
        "{refused:?}"
    );
    env.ok(&["hooks", "uninstall", "--git"]);
    assert!(!env.root().join(".git/hooks/pre-push.legacy").exists());
    assert!(ours().contains("File generated by pre-commit"));

    // pre-commit first, then epiphany: the block goes straight into `.legacy`.
    let other = TestEnv::new();
    other.write(".pre-commit-config.yaml", "repos: []\n");
    pre_commit_install(&other, "pre-push");
    other.ok(&["hooks", "install", "--git", "--pre-push"]);
    let legacy = String::from_utf8(other.read(".git/hooks/pre-push.legacy")).expect("utf8");
    assert!(legacy.contains("hook pre-push"), "{legacy}");
    assert_eq!(mode(&other, ".git/hooks/pre-push.legacy"), 0o755);
}
