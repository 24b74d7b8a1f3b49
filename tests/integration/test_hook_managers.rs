//! Hook managers through their real tools: lefthook keeps epiphany's commands across its own
//! `install`, and a hooks folder git ignores is this machine's.

use crate::common::TestEnv;
use crate::test_hooks::map_a_file;

/// Runs `lefthook install`, as its npm package does on every `npm install`.
fn lefthook_install(env: &TestEnv) {
    let output = std::process::Command::new("lefthook")
        .arg("install")
        .current_dir(env.root())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()
        .expect("lefthook");
    assert!(output.status.success(), "{output:?}");
}

fn text(env: &TestEnv, path: &str) -> String {
    String::from_utf8(env.read(path)).expect("utf8")
}

/// See: issue 50 item 4. lefthook writes every hook script itself and moves any other to
/// `<hook>.old`, which it never runs, so a block chained into the script was dropped by the
/// next `npm install`. With a `lefthook.yml`, epiphany's commands go in lefthook's
/// machine-local `lefthook-local.yml`, `install` says so, they survive `lefthook install`,
/// lefthook runs them (a stale push is refused through it) and uninstall takes them out.
#[test]
#[ignore = "needs lefthook (npm install -g lefthook); .ci/run runs it"]
fn regression_50_lefthook_keeps_the_hooks() {
    crate::common::require_tool("lefthook", &["version"]);
    let env = TestEnv::new();
    map_a_file(&env);
    let shared = "pre-commit:\n  commands:\n    lint:\n      run: echo linted\n";
    env.write("lefthook.yml", shared);
    env.write(".gitignore", "lefthook-local.yml\n");
    lefthook_install(&env);
    // An earlier install chained into the hook scripts: moved to `.old` by lefthook.
    env.write(
        ".git/hooks/post-merge",
        "#!/bin/sh\n# >>> epiphany >>>\nx\n# <<< epiphany <<<\n",
    );
    let installed = env.run(&["hooks", "install", "--git", "--pre-push"]);
    assert_eq!(installed.code, 0, "{installed}");
    assert!(
        installed.stdout.starts_with(
            "lefthook runs the git hooks (`lefthook.yml`); epiphany's lines are in `lefthook-local.yml`\n"
        ),
        "{installed}"
    );
    assert!(
        installed.stderr.contains("run `lefthook install`"),
        "{installed}"
    );
    assert!(
        !env.root().join(".git/hooks/post-merge").exists(),
        "{installed}"
    );
    let report = env.json(&["hooks", "install", "--git", "--pre-push"]);
    assert_eq!(report["git_hooks"]["manager"], "lefthook", "{report}");
    assert_eq!(
        report["git_hooks"]["files"][0], "lefthook-local.yml",
        "{report}"
    );
    let local = text(&env, "lefthook-local.yml");
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();
    assert!(local.contains(&format!("{exe} -q index")), "{local}");
    assert!(local.contains("use_stdin: true"), "{local}");
    assert_eq!(
        text(&env, "lefthook.yml"),
        shared,
        "the team's config is left alone"
    );

    lefthook_install(&env);
    assert_eq!(text(&env, "lefthook-local.yml"), local);
    assert!(text(&env, ".git/hooks/pre-push").contains("lefthook"));
    env.commit_all("map");
    let remote = env.bare_remote();
    let pushed = env.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");
    env.write("src/lib.rs", "pub fn cited() { let _ = 1; }\n");
    env.commit_all("change what the map cites");
    let refused = env.push(&remote, "HEAD:main");
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("the map is stale"),
        "{refused:?}"
    );

    env.ok(&["hooks", "uninstall", "--git"]);
    assert!(!env.root().join("lefthook-local.yml").exists());
    assert_eq!(text(&env, "lefthook.yml"), shared);
    let pushed = env.push(&remote, "HEAD:main");
    assert!(pushed.status.success(), "{pushed:?}");
}

/// See: issue 50 item 4. A hooks folder inside the repository that git ignores is this
/// machine's: its hooks call this binary by its absolute path, with no warning, and run when
/// `epiphany` is not on `PATH` (git's push here has no such `PATH`); a folder git does not
/// ignore gets `epiphany` from `PATH` and a warning that says why.
#[test]
fn regression_50_an_ignored_hooks_folder_is_this_machines() {
    let env = TestEnv::new();
    map_a_file(&env);
    env.write(".gitignore", ".githooks/\n");
    std::fs::create_dir_all(env.root().join(".githooks")).expect("mkdir");
    env.git(&["config", "core.hooksPath", ".githooks"]);
    let installed = env.run(&["hooks", "install", "--git", "--pre-push"]);
    assert_eq!(installed.code, 0, "{installed}");
    assert!(!installed.stderr.contains("warning"), "{installed}");
    assert!(
        installed.stdout.starts_with(
            "git runs the hooks in `.githooks`; epiphany's lines are in `.githooks/post-commit`"
        ),
        "{installed}"
    );
    let exe = assert_cmd::cargo::cargo_bin("epiphany")
        .display()
        .to_string();
    assert!(text(&env, ".githooks/pre-push").contains(&exe));
    env.commit_all("map");
    env.write("src/lib.rs", "pub fn cited() { let _ = 1; }\n");
    env.commit_all("change what the map cites");
    let refused = env.push(&env.bare_remote(), "HEAD:main");
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("the map is stale"),
        "{refused:?}"
    );

    let other = TestEnv::new();
    std::fs::create_dir_all(other.root().join(".githooks")).expect("mkdir");
    other.git(&["config", "core.hooksPath", ".githooks"]);
    let installed = other.run(&["hooks", "install", "--git"]);
    assert!(
        installed
            .stderr
            .contains("which git does not ignore, so the repository can track it: they call `epiphany` from PATH"),
        "{installed}"
    );
}
