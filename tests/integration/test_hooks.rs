//! `hooks install|uninstall`, the merge driver and textconv, through real git commands.

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
    env.write(".gitattributes", "*.png binary\n");

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
    assert!(
        env.git(&["config", "--local", "merge.epiphany.driver"])
            .contains("merge-driver %O %A %B %P")
    );

    insta::assert_snapshot!(env.run(&["hooks", "install", "--git", "--pre-push"]), @r"
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
    let config = std::process::Command::new("git")
        .args(["config", "--local", "--get", "merge.epiphany.driver"])
        .current_dir(env.root())
        .output()
        .expect("git config");
    assert!(
        !config.status.success(),
        "the merge driver key should be gone"
    );
}

#[test]
fn agent_host_hooks_are_added_beside_existing_settings() {
    let env = TestEnv::new();
    env.write(".claude/settings.json", r#"{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}"#);
    env.ok(&["hooks", "install", "--claude", "--codex"]);
    let claude: Value = serde_json::from_slice(&env.read(".claude/settings.json")).expect("json");
    assert_eq!(claude["model"], "opus");
    assert_eq!(claude["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
    assert_eq!(
        claude["hooks"]["SessionStart"][0]["matcher"],
        "startup|resume|clear|compact"
    );
    assert_eq!(
        claude["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "epiphany hook session-start"
    );
    assert_eq!(
        claude["hooks"]["PreCompact"][0]["hooks"][0]["command"],
        "epiphany hook pre-compact"
    );
    let codex: Value = serde_json::from_slice(&env.read(".codex/hooks.json")).expect("json");
    assert_eq!(
        codex["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "epiphany hook session-start"
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

    env.ok(&["hooks", "uninstall", "--claude", "--codex"]);
    let claude: Value = serde_json::from_slice(&env.read(".claude/settings.json")).expect("json");
    assert_eq!(
        claude,
        json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}})
    );
    assert!(!env.root().join(".codex/hooks.json").exists());
}

#[test]
fn broken_host_settings_are_reported_not_overwritten() {
    let env = TestEnv::new();
    env.write(".claude/settings.json", "{not json");
    let output = env.run(&["hooks", "install", "--claude"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output
            .stderr
            .contains(".claude/settings.json` is not valid JSON"),
        "{output}"
    );
    assert_eq!(env.read(".claude/settings.json"), b"{not json");
}

#[test]
fn git_diff_shows_readable_state() {
    let env = installed();
    let mut command = env.command(&["update"]);
    command.env("EPIPHANY_SNAPSHOT_EVERY", "1");
    let output = command
        .write_stdin(json!({"objective": "a readable diff"}).to_string())
        .output()
        .expect("run");
    assert!(output.status.success());
    env.git(&["add", "-N", ".epiphany"]);
    let diff = env.git(&["diff", "--", ".epiphany/"]);
    assert!(
        diff.contains("+  \"objective\": \"a readable diff\""),
        "{diff}"
    );
    assert!(diff.contains("+# snapshot of 2 records"), "{diff}");
}

fn additional_context(output: &crate::common::Output) -> String {
    let document = output.json();
    assert_eq!(
        document["hookSpecificOutput"]["hookEventName"], "SessionStart",
        "{output}"
    );
    document["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context")
        .to_owned()
}

#[test]
fn session_start_injects_the_verdict_and_the_state_under_the_cap() {
    let env = TestEnv::new();
    let observations: Vec<Value> = (0..400)
        .map(|i| json!({"id": format!("obs-{i}"), "summary": format!("observation {i} about the retry path of the lexer {}", "and its spans ".repeat(200)),
                        "source_kind": "test", "status": "ok", "evidence_ids": [format!("ev-{i}")]}))
        .collect();
    let evidence: Vec<Value> = (0..400)
        .map(|i| json!({"id": format!("ev-{i}"), "kind": "test", "status": "ok", "summary": format!("evidence {i} for the lexer")}))
        .collect();
    env.update(&json!({"objective": "keep spans across retries", "observations": observations, "evidence": evidence}));
    let host_input = json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "compact", "cwd": env.root()});
    let output = env.run_with_stdin(&["hook", "session-start"], host_input.to_string());
    assert_eq!(output.code, 0, "{output}");
    let context = additional_context(&output);
    assert!(
        context.chars().count() <= 10_000,
        "{} characters",
        context.chars().count()
    );
    assert!(
        context.starts_with("<epiphany_reorient>\nVerdict: regather."),
        "{context}"
    );
    assert!(context.contains("Reasons: missing_checkpoint"), "{context}");
    assert!(
        context.contains("Objective: keep spans across retries"),
        "{context}"
    );
    assert!(
        context.contains("epiphany context --observation"),
        "the omission line names the fetch command: {context}"
    );
    assert!(
        context.trim_end().ends_with("</epiphany_state>"),
        "{context}"
    );
}

#[test]
fn session_start_works_from_a_subdirectory_and_ignores_garbage_input() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "o"}));
    env.write("sub/file.txt", "x");
    let output = env.run_with_stdin(&["-C", "sub", "hook", "session-start"], "not json at all");
    assert_eq!(output.code, 0, "{output}");
    assert!(
        additional_context(&output).contains("Objective: o"),
        "{output}"
    );
}

#[test]
fn hooks_never_fail_the_host() {
    let env = TestEnv::bare();
    let nothing = env.run_with_stdin(&["hook", "session-start"], "{}");
    assert_eq!(
        (nothing.code, nothing.stdout.as_str()),
        (0, ""),
        "{nothing}"
    );
    let env = TestEnv::new();
    env.update(&json!({"objective": "o"}));
    std::fs::write(env.last_segment(), b"\x00\x01broken\n").expect("write");
    for hook in ["session-start", "pre-compact"] {
        let output = env.run_with_stdin(&["hook", hook], "{}");
        assert_eq!(output.code, 0, "{output}");
        assert_eq!(output.stdout, "", "{output}");
        assert!(
            output.stderr.contains("warning: epiphany hook skipped"),
            "{output}"
        );
    }
}

#[test]
fn pre_compact_asks_for_a_checkpoint_only_when_there_is_state() {
    let env = TestEnv::new();
    let before_any_write = env.run_with_stdin(&["hook", "pre-compact"], r#"{"trigger": "auto"}"#);
    assert_eq!(
        (before_any_write.code, before_any_write.stdout.as_str()),
        (0, "")
    );
    env.update(&json!({"objective": "o"}));
    let output = env.run_with_stdin(&["hook", "pre-compact"], r#"{"trigger": "auto"}"#);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.starts_with("<epiphany_checkpoint_directive>"),
        "{output}"
    );
    assert!(
        output.stdout.contains("investigation_checkpoint"),
        "{output}"
    );
}
