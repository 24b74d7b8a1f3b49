//! The shared test harness: a temporary git repository, the binary run as a user runs it
//! (clean environment, pinned clock), and output normalised for snapshots.

#![allow(dead_code)]
#![allow(clippy::disallowed_methods)] // tests read the real environment on purpose

use std::fmt;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command as StdCommand;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// The longest any one run of the binary may take in a test: far above what any run needs on
/// a loaded machine, well below what a hang would cost the suite.
pub const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// `promote` with a passing test verifier: the gate accepts any low-churn proposal with it.
pub const PASSING_VERIFIER: [&str; 7] = [
    "promote",
    "--verifier-kind",
    "test",
    "--verifier-status",
    "pass",
    "--verifier-summary",
    "suite green",
];

/// The `problems` of a refusal's JSON error, each as `path: message`.
pub fn problem_lines(error: &Value) -> Vec<String> {
    (error["problems"].as_array().expect("problems").iter())
        .map(|p| {
            let field = |key: &str| p[key].as_str().unwrap_or_else(|| panic!("no {key} in {p}"));
            format!("{}: {}", field("path"), field("message"))
        })
        .collect()
}

/// A graph node (as JSON) titled by its id in capitals, citing `path` as a whole file.
pub fn node_json(id: &str, purpose: &str, path: &str) -> Value {
    serde_json::json!({"id": id, "title": id.to_uppercase(), "purpose": purpose, "code_refs": [{"path": path}]})
}

/// `value` without the fingerprints of its code refs (anywhere in it), for comparing what
/// references say where what was checked of them is not the point.
pub fn unfingerprinted(value: &Value) -> Value {
    match value {
        Value::Object(map) => (map.iter())
            .filter(|(key, _)| *key != "fingerprint")
            .map(|(key, value)| (key.clone(), unfingerprinted(value)))
            .collect(),
        Value::Array(items) => items.iter().map(unfingerprinted).collect(),
        other => other.clone(),
    }
}

/// `distill --source-kind KIND --status ok ARGS`: the arguments of an `ok` draft.
pub fn distill_args<'a>(kind: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut full = vec!["distill", "--source-kind", kind, "--status", "ok"];
    full.extend_from_slice(args);
    full
}

/// A patch adding observation `obs-<id>` and the evidence `ev-<id>` it cites.
pub fn observation_patch(id: &str) -> Value {
    serde_json::json!({
        "observations": [{"id": format!("obs-{id}"), "summary": id, "source_kind": "test",
                          "status": "ok", "evidence_ids": [format!("ev-{id}")]}],
        "evidence": [{"id": format!("ev-{id}"), "kind": "test", "status": "ok", "summary": id}]
    })
}

/// Seals a record line the way `src/state/rollout.rs` does: the id is the SHA-256 of the line
/// without it. Answers the id and the line, to plant a record no write path would accept.
pub fn sealed_line(body: &Value) -> (String, String) {
    use sha2::Digest;
    let json = body.to_string();
    let id = hex::encode(sha2::Sha256::digest(json.as_bytes()));
    (id.clone(), format!("{{\"id\":\"{id}\",{}\n", &json[1..]))
}

/// The names of the entries in `dir`, sorted; none when it does not exist.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The snapshot files in `dir` (a store's `snapshots/` or `cache/snapshots/`), sorted; none
/// when it does not exist.
pub fn snapshot_names(dir: &Path) -> Vec<String> {
    let mut names = file_names(dir);
    names.retain(|name| name.ends_with(".snapshot"));
    names
}

/// `output` of `epiphany ARGS`, which must have exited 0.
fn succeeded(args: &[&str], output: Output) -> Output {
    assert_eq!(
        output.code,
        0,
        "`epiphany {}` failed:\n{output}",
        args.join(" ")
    );
    output
}

/// Fails unless `program args` runs and succeeds.
///
/// Tests that need a tool besides the Rust toolchain (the MCP Python SDK, pre-commit,
/// lefthook, strace, Graphviz) are marked `#[ignore = "needs ..."]`: a plain `cargo test`
/// reports them as ignored, never as passed without their tool. `.ci/run` installs the tools
/// and runs every test with `cargo test -- --include-ignored`; run so, a test whose tool is
/// missing fails here, naming it.
pub fn require_tool(program: &str, args: &[&str]) {
    let ran = StdCommand::new(program).args(args).output();
    assert!(
        ran.as_ref().is_ok_and(|output| output.status.success()),
        "this test needs `{program} {}`, which does not run here ({ran:?}): install it (.ci/run does), or run without --include-ignored",
        args.join(" ")
    );
}

/// A temporary repository to run `epiphany` in.
pub struct TestEnv {
    _dir: TempDir,
    root: PathBuf,
    clock: AtomicU32,
    vars: Vec<(String, String)>,
}

/// What one run printed and how it exited.
#[derive(Debug, Clone)]
pub struct Output {
    /// stdout, normalised.
    pub stdout: String,
    /// stderr, normalised.
    pub stderr: String,
    /// The exit code.
    pub code: i32,
}

impl Output {
    /// stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not one JSON document ({err}):\n{self}"))
    }

    /// The context a successful `hook session-start` gives its host (`additionalContext`).
    pub fn session_context(&self) -> String {
        assert_eq!(self.code, 0, "{self}");
        let document = self.json();
        assert_eq!(
            document["hookSpecificOutput"]["hookEventName"], "SessionStart",
            "{self}"
        );
        document["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("context")
            .to_owned()
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.stdout)?;
        if !self.stderr.is_empty() {
            write!(f, "------- stderr -------\n{}", self.stderr)?;
        }
        write!(f, "[exit status: {}]", self.code)
    }
}

impl TestEnv {
    /// An empty git repository, no store.
    pub fn bare() -> TestEnv {
        let env = TestEnv::plain();
        env.git(&["init", "-q", "-b", "main"]);
        env
    }

    /// A directory outside git, no store.
    pub fn plain() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("epiphany-test-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical root");
        TestEnv {
            _dir: dir,
            root,
            clock: AtomicU32::new(0),
            vars: Vec::new(),
        }
    }

    /// Sets an environment variable for every run of the binary.
    pub fn with_var(mut self, key: &str, value: &str) -> TestEnv {
        self.vars.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The same binary environment for another directory, `name` inside a new temporary one
    /// (not created: `git clone` or `git worktree add` creates it), with a clock running
    /// alongside this one's.
    pub fn sibling(&self, name: &str) -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("epiphany-test-")
            .tempdir()
            .expect("tempdir");
        let root = dir
            .path()
            .canonicalize()
            .expect("canonical root")
            .join(name);
        TestEnv {
            _dir: dir,
            root,
            clock: AtomicU32::new(self.clock.load(Ordering::Relaxed) + 1),
            vars: self.vars.clone(),
        }
    }

    /// A git repository with an initialised store.
    pub fn new() -> TestEnv {
        let env = TestEnv::bare();
        env.ok(&["init"]);
        env
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The binary with a clean environment and a clock that advances one second per run.
    pub fn std_command(&self, args: &[&str]) -> StdCommand {
        self.std_command_of(&assert_cmd::cargo::cargo_bin("epiphany"), args)
    }

    /// [`TestEnv::std_command`] running `program`, a copy of the binary elsewhere.
    pub fn std_command_of(&self, program: &Path, args: &[&str]) -> StdCommand {
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut command = StdCommand::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.root)
            .env("NO_COLOR", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .env(
                "EPIPHANY_NOW",
                format!("2026-01-01T00:{:02}:{:02}Z", tick / 60 % 60, tick % 60),
            )
            .current_dir(&self.root)
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .args(args);
        command
    }

    /// [`TestEnv::std_command`] with assert_cmd's conveniences (stdin, output capture).
    /// A run that outlives [`COMMAND_TIMEOUT`] is killed (and fails its test) instead of
    /// stalling the suite.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::from_std(self.std_command(args));
        command.timeout(COMMAND_TIMEOUT);
        command
    }

    /// Runs the binary.
    pub fn run(&self, args: &[&str]) -> Output {
        self.finish(self.command(args).output().expect("run"))
    }

    /// Runs the binary as a user who may read the repository but not write it, as CI jobs
    /// and read-only mounts see a checkout: as root, the run is `nobody`'s (the files stay
    /// root's); otherwise every write permission is taken away for the run.
    pub fn run_read_only(&self, args: &[&str]) -> Output {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let mut command = self.std_command(args);
        // SAFETY: `geteuid` has no preconditions and cannot fail.
        let is_root = unsafe { libc::geteuid() } == 0;
        let set_writable = |writable: bool| {
            for entry in walkdir(&self.root) {
                let mut permissions = std::fs::metadata(&entry).expect("stat").permissions();
                let mode = permissions.mode();
                permissions.set_mode(if writable {
                    mode | 0o200
                } else {
                    mode & !0o222
                });
                std::fs::set_permissions(&entry, permissions).expect("chmod");
            }
        };
        if is_root {
            let mut permissions = std::fs::metadata(&self.root).expect("stat").permissions();
            permissions.set_mode(0o755);
            std::fs::set_permissions(&self.root, permissions).expect("chmod");
            command.uid(65534).gid(65534);
        } else {
            set_writable(false);
        }
        let output = command.output().expect("run");
        if !is_root {
            set_writable(true);
        }
        self.finish(output)
    }

    /// Runs the binary with `stdin`, its address space limited to `bytes`: a run that would
    /// read without end fails to allocate (and aborts) instead of exhausting the machine.
    pub fn run_limited(&self, args: &[&str], stdin: impl Into<Vec<u8>>, bytes: u64) -> Output {
        use std::os::unix::process::CommandExt;
        let mut command = self.std_command(args);
        // SAFETY: `setrlimit` is async-signal-safe and touches nothing of the parent's.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let mut command = Command::from_std(command);
        command.timeout(COMMAND_TIMEOUT).write_stdin(stdin);
        self.finish(command.output().expect("run"))
    }

    /// Runs the binary with `stdin`.
    pub fn run_with_stdin(&self, args: &[&str], stdin: impl Into<Vec<u8>>) -> Output {
        self.finish(self.command(args).write_stdin(stdin).output().expect("run"))
    }

    /// Runs `--json ARGS` with `stdin`, whatever the exit code.
    pub fn run_json_with_stdin(&self, args: &[&str], stdin: impl Into<Vec<u8>>) -> Output {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        self.run_with_stdin(&full, stdin)
    }

    /// Runs the binary and insists on exit 0.
    pub fn ok(&self, args: &[&str]) -> Output {
        succeeded(args, self.run(args))
    }

    /// Runs the binary with extra environment `vars` and `stdin`, and insists on exit 0.
    pub fn ok_with(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
        stdin: impl Into<Vec<u8>>,
    ) -> Output {
        let mut command = self.command(args);
        command.envs(vars.iter().copied()).write_stdin(stdin);
        succeeded(args, self.finish(command.output().expect("run")))
    }

    /// Runs `--json ARGS` and insists on exit 0; returns the document.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        self.ok(&full).json()
    }

    /// Runs `--json ARGS` whatever the exit code; answers `{"exit": code, "stdout": document}`,
    /// the whole answer for a snapshot.
    pub fn json_answer(&self, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let output = self.run(&full);
        serde_json::json!({"exit": output.code, "stdout": output.json()})
    }

    /// Runs `--json ARGS`, insists on the given exit code, and returns the document.
    pub fn json_allowing(&self, args: &[&str], code: i32) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let output = self.run(&full);
        assert_eq!(
            output.code,
            code,
            "`epiphany {}`:\n{output}",
            full.join(" ")
        );
        output.json()
    }

    /// Applies a patch through `update` and insists on exit 0.
    pub fn update(&self, patch: &Value) -> Value {
        let output = self.run_with_stdin(&["--json", "update"], patch.to_string());
        assert_eq!(output.code, 0, "update failed:\n{output}");
        output.json()
    }

    /// Applies `updates` observation patches (`obs-<writer>-<n>`) one process at a time,
    /// waiting as long as it takes for the store lock; every one must land.
    pub fn write_observations(&self, writer: usize, updates: usize) {
        for update in 0..updates {
            self.ok_with(
                &["update"],
                &[("EPIPHANY_LOCK_TIMEOUT_MS", "60000")],
                observation_patch(&format!("{writer}-{update}")).to_string(),
            );
        }
    }

    /// Writes a file under the root, creating directories.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write");
    }

    /// Reads a file under the root.
    pub fn read(&self, relative: &str) -> Vec<u8> {
        std::fs::read(self.root.join(relative)).expect("read")
    }

    /// Every tracked file of the store (path and bytes, `cache/` and the lock left out), to
    /// prove a command changed nothing.
    pub fn store_bytes(&self) -> Vec<(String, Vec<u8>)> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>)>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.map(|e| e.expect("entry")) {
                let path = entry.path();
                let relative = path
                    .strip_prefix(base)
                    .expect("inside")
                    .display()
                    .to_string();
                if relative == "cache" || relative == "lock" {
                    continue;
                }
                if path.is_dir() {
                    walk(&path, base, out);
                } else {
                    out.push((relative, std::fs::read(&path).expect("read")));
                }
            }
        }
        let store = self.root.join(".epiphany");
        let mut files = Vec::new();
        walk(&store, &store, &mut files);
        files.sort();
        files
    }

    /// The rollout segments, in name order (the order they were started in).
    pub fn rollout_segments(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.root.join(".epiphany/rollout"))
            .map(|entries| entries.map(|e| e.expect("entry").path()).collect())
            .unwrap_or_default();
        found.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
        found.sort();
        found
    }

    /// The newest rollout segment.
    pub fn last_segment(&self) -> PathBuf {
        self.rollout_segments().pop().expect("a rollout segment")
    }

    /// Every rollout line, segment after segment.
    pub fn rollout_text(&self) -> String {
        self.rollout_segments()
            .iter()
            .map(|path| std::fs::read_to_string(path).expect("read segment"))
            .collect()
    }

    /// Runs git with a fixed identity and fixed dates, and insists on success.
    pub fn git(&self, args: &[&str]) -> String {
        let output = self.git_output(args);
        assert!(
            output.status.success(),
            "git {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs git with a fixed identity and fixed dates.
    pub fn git_output(&self, args: &[&str]) -> std::process::Output {
        self.git_output_with(args, &[])
    }

    /// [`TestEnv::git_output`] with more environment variables, which git's hooks see too.
    pub fn git_output_with(&self, args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
        StdCommand::new("git")
            .args(args)
            .envs(vars.iter().copied())
            .current_dir(&self.root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .expect("git")
    }

    /// A bare repository beside this one, to push to.
    pub fn bare_remote(&self) -> TestEnv {
        let remote = self.sibling("remote.git");
        self.git(&["init", "-q", "--bare", &remote.root().display().to_string()]);
        remote
    }

    /// Pushes `refspec` to `remote` as git does from the command line, running the pre-push
    /// hook.
    pub fn push(&self, remote: &TestEnv, refspec: &str) -> std::process::Output {
        let url = remote.root().display().to_string();
        self.git_output(&["push", "-q", &url, refspec])
    }

    /// Stages everything and commits.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }

    fn finish(&self, output: std::process::Output) -> Output {
        let normalise = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes).replace(&self.root.display().to_string(), "[ROOT]")
        };
        Output {
            stdout: normalise(&output.stdout),
            stderr: normalise(&output.stderr),
            code: output.status.code().unwrap_or(-1),
        }
    }
}

/// `root` and every file and directory below it, parents before children.
fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    let mut at = 0;
    while at < found.len() {
        if found[at].is_dir() && !found[at].is_symlink() {
            let entries = std::fs::read_dir(&found[at]).expect("read_dir");
            found.extend(entries.map(|entry| entry.expect("entry").path()));
        }
        at += 1;
    }
    found
}
