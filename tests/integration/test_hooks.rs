//! `hooks install|uninstall`, the merge driver and textconv, through real git commands.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;
use crate::common::observation_patch;

fn git_merge(env: &TestEnv, branch: &str) -> std::process::Output {
    std::process::Command::new("git")
        .args(["merge", "--no-edit", branch])
        .current_dir(env.root())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("git merge")
}

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
fn branches_that_both_wrote_merge_cleanly() {
    let env = installed();
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.update(&observation_patch("feature"));
    env.update(&json!({"scratch": {"summary": "feature notes"}}));
    env.commit_all("feature work");
    env.git(&["checkout", "-q", "main"]);
    env.update(&observation_patch("main"));
    env.commit_all("main work");

    let merge = git_merge(&env, "feature");
    assert!(
        merge.status.success(),
        "{}",
        String::from_utf8_lossy(&merge.stderr)
    );
    let state = env.json(&["show"]);
    assert_eq!(state["revision"], 4);
    let ids: Vec<&str> = state["observations"]
        .as_array()
        .expect("obs")
        .iter()
        .map(|o| o["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["obs-feature", "obs-main"]);
    assert_eq!(state["scratch"]["summary"], "feature notes");
    assert_eq!(env.json(&["verify"])["ok"], true);
    let log = env.json(&["log"]);
    let revisions: Vec<u64> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["revision"].as_u64().expect("rev"))
        .collect();
    assert_eq!(revisions, [4, 3, 2, 1]);
    // The next write continues the merged chain.
    env.update(&json!({"objective": "after the merge"}));
    assert_eq!(env.json(&["verify"])["ok"], true);
}

#[test]
fn the_same_field_written_on_both_branches_is_a_readable_conflict() {
    let env = installed();
    env.git(&["checkout", "-q", "-b", "feature"]);
    env.update(&json!({"objective": "feature objective"}));
    env.commit_all("feature objective");
    env.git(&["checkout", "-q", "main"]);
    env.update(&json!({"objective": "main objective"}));
    env.commit_all("main objective");
    let ours = env.read(".epiphany/rollout.jsonl");

    let merge = git_merge(&env, "feature");
    assert!(!merge.status.success(), "the merge must stop for a person");
    let stderr = String::from_utf8_lossy(&merge.stderr);
    assert!(stderr.contains("both sides replaced `objective`: ours is \"main objective\", theirs is \"feature objective\""), "{stderr}");
    assert_eq!(
        env.read(".epiphany/rollout.jsonl"),
        ours,
        "our rollout is left whole"
    );
    assert_eq!(env.json(&["show"])["objective"], "main objective");
    assert_eq!(env.json(&["verify"])["ok"], true);
}

#[test]
fn git_diff_shows_readable_state() {
    let env = installed();
    env.update(&json!({"objective": "a readable diff"}));
    let diff = env.git(&[
        "diff",
        "--",
        ".epiphany/state.msgpack",
        ".epiphany/rollout.jsonl",
    ]);
    assert!(
        diff.contains("+    \"objective\": \"a readable diff\""),
        "{diff}"
    );
    assert!(diff.contains("+# revision 2 (update)"), "{diff}");
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
    env.write(".epiphany/state.msgpack", b"\x00\x01broken");
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
