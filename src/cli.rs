//! The process boundary: parse the command line, build the one [`Ctx`] of this process, run
//! the command, and map its outcome to an exit code in exactly one place.
//!
//! This is the only module that reads the environment (`EPIPHANY_*` variables) and the clock;
//! everything below receives them through `Ctx`.

use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use anyhow::Result;
use clap::Parser;

use crate::cmd::Command;
use crate::error;
use crate::error::Failure;
use crate::policy::secrets::conceal_values;
use crate::state::git;
use crate::state::store::DEFAULT_SNAPSHOT_EVERY;
use crate::state::store::Store;
use crate::state::store::Transaction;
use crate::state::store::WriteOptions;
use crate::state::store::WriteScope;
use crate::state::store::WriteStamp;
use crate::ui::Ui;

const EXIT_CODES: &str = "\
Exit codes:
  0  success; for checks: fresh/valid; for queries: answered (an empty answer is still 0)
  1  the command worked and the answer is \"no\" (a check found staleness, verify found a
     mismatch, promote rejected the patch, reorient says regather)
  2  usage or input error, missing or unreadable store, corrupt file, I/O or git failure
  3  conflict: --expected-revision does not match, or the store lock could not be taken

Environment:
  EPIPHANY_NOW              RFC 3339 time to use as \"now\" (for reproducible tests)
  EPIPHANY_LOCK_TIMEOUT_MS  how long a writer waits for the store lock (default 10000)
  EPIPHANY_SNAPSHOT_EVERY   records past the newest snapshot after which a write stores a
                            new one (default 128)";

/// Durable, typed, reviewable understanding of a codebase for coding agents.
///
/// `epiphany` keeps the objective, subgoals, invariants, architecture and dataflow graphs with
/// code references, observations, evidence, churn and an investigation checkpoint in a
/// git-tracked `.epiphany/` directory, and gives fast hybrid code retrieval over the same
/// repository. `update` is the one write path; `distill` and `propose` draft patches,
/// `promote` gates them; every projection is read-only.
#[derive(Debug, Parser)]
#[command(name = "epiphany", version, after_long_help = EXIT_CODES, max_term_width = 100)]
pub struct Cli {
    /// Run as if started in DIR
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// Print machine-readable JSON on stdout (one document)
    #[arg(long, global = true)]
    pub json: bool,
    /// Print nothing but errors; the exit code carries the answer
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The command to run
    #[command(subcommand)]
    pub command: Command,
}

/// What a command reports besides its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Success; a check passed.
    Ok,
    /// The command worked and the answer is "no" (exit 1).
    No,
}

/// Per-process context: where we run, how to print, what time it is, how long to wait, and
/// where standard input comes from.
#[derive(Debug)]
pub struct Ctx {
    /// The directory the command runs in (after `-C`).
    pub cwd: PathBuf,
    /// The printer.
    pub ui: Ui,
    /// "Now", from the clock or `EPIPHANY_NOW`.
    pub now: jiff::Timestamp,
    /// How long a writer waits for the store lock.
    pub lock_timeout: Duration,
    /// Records past the newest snapshot after which a write stores a new one (and a read
    /// remembers the fold it computed).
    pub snapshot_every: usize,
    /// Standard input: the process's, or bytes handed over by an in-process caller (`mcp`).
    pub stdin: Stdin,
    /// The embedding model directory `EPIPHANY_MODEL` names (absolute), for `index`.
    pub model_dir: Option<PathBuf>,
    /// Set when the caller gave up on the command (an MCP client's `notifications/cancelled`):
    /// long work (`index`) stops at the next file.
    pub cancel: Cancel,
}

/// A flag a caller sets to stop a command's long work; never set on the command line.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks the command to stop.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the command was asked to stop.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Where a command's standard input comes from.
#[derive(Debug, Clone)]
pub enum Stdin {
    /// The process's standard input.
    Process,
    /// Bytes given by the caller.
    Given(Vec<u8>),
}

impl Ctx {
    /// Builds the context from the global arguments and the environment.
    #[allow(clippy::disallowed_methods)]
    fn from_env(cli: &Cli) -> Result<Ctx> {
        let base = std::env::current_dir().context("failed to read the current directory")?;
        let ui = Ui::new(cli.json, cli.quiet);
        let ctx = Ctx::build(&base, cli.directory.as_deref(), ui, Stdin::Process)?;
        // Git's own variables, honoured as git does: relative to where the command runs.
        let git_path = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(|value| ctx.cwd.join(value))
        };
        git::use_environment(git::Environment {
            git_dir: git_path("GIT_DIR"),
            work_tree: git_path("GIT_WORK_TREE"),
            cwd: ctx.cwd.clone(),
        });
        Ok(ctx)
    }

    /// A context for one command run in-process (by `mcp`): output captured by `ui`, standard
    /// input given, the clock read afresh, relative to this context's directory.
    pub fn for_call(
        &self,
        directory: Option<&Path>,
        ui: Ui,
        stdin: Vec<u8>,
        cancel: Cancel,
    ) -> Result<Ctx> {
        let ctx = Ctx::build(&self.cwd, directory, ui, Stdin::Given(stdin))?;
        Ok(Ctx { cancel, ..ctx })
    }

    #[allow(clippy::disallowed_methods)]
    fn build(base: &Path, directory: Option<&Path>, ui: Ui, stdin: Stdin) -> Result<Ctx> {
        let cwd = match directory {
            Some(dir) => base.join(dir),
            None => base.to_path_buf(),
        };
        if !cwd.is_dir() {
            return Err(
                Failure::usage(format!("`-C {}`: no such directory", cwd.display())).into(),
            );
        }
        let now = match std::env::var("EPIPHANY_NOW") {
            Ok(text) if !text.trim().is_empty() => text.trim().parse().map_err(|err| {
                Failure::usage(format!(
                    "EPIPHANY_NOW=`{text}` is not an RFC 3339 time: {err}"
                ))
            })?,
            _ => jiff::Timestamp::now(),
        };
        let lock_timeout = match std::env::var("EPIPHANY_LOCK_TIMEOUT_MS") {
            Ok(text) => Duration::from_millis(text.trim().parse().map_err(|_| {
                Failure::usage(format!(
                    "EPIPHANY_LOCK_TIMEOUT_MS=`{text}` is not a number of milliseconds"
                ))
            })?),
            Err(_) => Duration::from_secs(10),
        };
        let snapshot_every = match std::env::var("EPIPHANY_SNAPSHOT_EVERY") {
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(every) if every > 0 => every,
                _ => {
                    return Err(Failure::usage(format!(
                        "EPIPHANY_SNAPSHOT_EVERY=`{text}` is not a positive number of records"
                    ))
                    .into());
                }
            },
            Err(_) => DEFAULT_SNAPSHOT_EVERY,
        };
        let model_dir = std::env::var_os("EPIPHANY_MODEL")
            .filter(|dir| !dir.is_empty())
            .map(|dir| base.join(dir));
        Ok(Ctx {
            cwd,
            ui,
            now,
            lock_timeout,
            snapshot_every,
            stdin,
            model_dir,
            cancel: Cancel::default(),
        })
    }

    /// A reader over standard input.
    pub fn stdin(&self) -> Box<dyn std::io::Read + '_> {
        match &self.stdin {
            Stdin::Process => Box::new(std::io::stdin().lock()),
            Stdin::Given(bytes) => Box::new(bytes.as_slice()),
        }
    }

    /// Whether standard input is a terminal (so reading it would wait for a person).
    pub fn stdin_is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        matches!(self.stdin, Stdin::Process) && std::io::stdin().is_terminal()
    }

    /// The store that contains the working directory.
    pub fn store(&self) -> Result<Store> {
        self.store_in(&self.cwd)
    }

    /// The store that contains `dir`, with this process's snapshot cadence.
    pub fn store_in(&self, dir: &std::path::Path) -> Result<Store> {
        Store::discover(dir).map(|store| store.with_snapshot_every(self.snapshot_every))
    }

    /// "Now" as RFC 3339 UTC, whole seconds.
    pub fn now_rfc3339(&self) -> String {
        self.now
            .round(jiff::Unit::Second)
            .map_or_else(|_| self.now.to_string(), |t| t.to_string())
    }

    /// Takes the store's write lock and reads its head: the start of every write.
    pub fn begin<'s>(&self, store: &'s Store, scope: WriteScope) -> Result<Transaction<'s>> {
        store.begin(&self.write_options(), scope)
    }

    /// How this process writes: the lock wait.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            lock_timeout: self.lock_timeout,
        }
    }

    /// When and on which commit a write made now happens.
    pub fn stamp(&self, store: &Store) -> WriteStamp {
        WriteStamp {
            at: self.now_rfc3339(),
            git_head: git::head_commit(store.root()),
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // `--help` and `--version`.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let argv: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            if wants_json(argv.iter()) {
                return report_error(&Ui::new(true, false), &usage_failure(&err, &argv).into());
            }
            let text = concealed(&err.render().to_string(), &argv);
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    let ctx = match Ctx::from_env(&cli) {
        Ok(ctx) => ctx,
        Err(err) => return report_error(&Ui::new(json, cli.quiet), &err),
    };
    match crate::cmd::run(&ctx, &cli.command) {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::No) => ExitCode::from(1),
        Err(err) => report_error(&ctx.ui, &err),
    }
}

/// Whether `--json` is among the arguments (before any `--`), so that even an argument the
/// parser refuses is reported as the JSON error document scripts expect.
fn wants_json<S: AsRef<str>>(args: impl Iterator<Item = S>) -> bool {
    args.map_while(|arg| (arg.as_ref() != "--").then(|| arg.as_ref() == "--json"))
        .any(|json| json)
}

/// A parse error's text without the values typed in `argv` ([`conceal_values`]): flags and
/// command names are shown, what was given for them is not.
fn concealed(text: &str, argv: &[String]) -> String {
    let commands = command_names(&<Cli as clap::CommandFactory>::command());
    conceal_values(text, argv.iter().map(String::as_str), |arg| {
        is_flag_name(arg) || commands.iter().any(|name| name == arg)
    })
}

/// `-x` or `--some-name`.
pub fn is_flag_name(arg: &str) -> bool {
    let name = arg
        .strip_prefix("--")
        .or_else(|| arg.strip_prefix('-'))
        .unwrap_or_default();
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The names of every subcommand of `command`, at any depth.
fn command_names(command: &clap::Command) -> Vec<String> {
    command
        .get_subcommands()
        .flat_map(|sub| {
            let mut names = command_names(sub);
            names.push(sub.get_name().to_owned());
            names
        })
        .collect()
}

/// A command-line parsing error as a usage failure: clap's first line is the message, its
/// `tip:` (or the `--help` pointer) the hint. Nothing typed in `argv` is repeated but the
/// names of flags and commands.
fn usage_failure(err: &clap::Error, argv: &[String]) -> Failure {
    let text = concealed(&err.render().to_string(), argv);
    let mut lines = text.lines().map(str::trim);
    let first = lines
        .by_ref()
        .find(|line| !line.is_empty())
        .unwrap_or("invalid command line");
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // "the following required arguments were not provided:" lists them on the next lines.
    if message.ends_with(':') {
        let listed: Vec<&str> = lines.by_ref().take_while(|line| !line.is_empty()).collect();
        message = format!("{} {}", message, listed.join(", "));
    }
    let hint = lines
        .find_map(|line| line.strip_prefix("tip: "))
        .map_or_else(
            || "see `epiphany --help`, or `epiphany COMMAND --help`".to_owned(),
            str::to_owned,
        );
    Failure::usage(message).with_hint(hint)
}

fn report_error(ui: &Ui, err: &anyhow::Error) -> ExitCode {
    ExitCode::from(report_failure(ui, err))
}

/// Reports an error through `ui` and returns its exit code (0 for a closed stdout).
pub fn report_failure(ui: &Ui, err: &anyhow::Error) -> u8 {
    if error::is_broken_pipe(err) {
        return 0;
    }
    let failure = error::classify(err);
    let causes: Vec<String> = err.chain().skip(1).map(ToString::to_string).collect();
    ui.error(&failure, &causes);
    failure.kind.exit_code()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors_never_repeat_a_value() {
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        for argv in [
            vec!["update", "--expected-revision", token],
            vec!["update", &format!("--expected-revision={token}")],
            vec!["scene", token],
            vec!["log", "--limit", "hunter2-is-my-password"],
            vec![
                "update",
                "--turn-id",
                "-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----",
            ],
        ] {
            let full: Vec<&str> = std::iter::once("epiphany")
                .chain(argv.iter().copied())
                .collect();
            let err = Cli::try_parse_from(full.clone()).expect_err("refused");
            let argv: Vec<String> = argv.iter().map(|arg| (*arg).to_owned()).collect();
            let failure = usage_failure(&err, &argv);
            let shown = format!("{} {:?}", failure.message, failure.hint);
            let plain = concealed(&err.render().to_string(), &argv);
            for text in [&shown, &plain] {
                assert!(!text.contains(token), "{text}");
                assert!(
                    !text.contains("hunter2") && !text.contains("MIIEv"),
                    "{text}"
                );
            }
        }
        assert!(is_flag_name("--expected-revision") && is_flag_name("-C"));
        assert!(!is_flag_name("-----BEGIN") && !is_flag_name("--") && !is_flag_name("value"));
    }

    #[test]
    fn json_is_seen_before_the_end_of_options_only() {
        let args = |list: &[&str]| {
            list.iter()
                .map(|arg| (*arg).to_owned())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(wants_json(args(&["scene", "--json", "--bogus"])));
        assert!(!wants_json(args(&["distill", "--", "--json"])));
        assert!(!wants_json(args(&["scene", "--jsonx"])));
    }

    #[test]
    fn parse_errors_become_usage_failures_with_a_hint() {
        let err = Cli::try_parse_from(["epiphany", "scene", "--bogus"]).expect_err("bogus");
        let failure = usage_failure(&err, &["scene".to_owned(), "--bogus".to_owned()]);
        assert_eq!(failure.kind, crate::error::ErrorKind::Usage);
        assert!(failure.message.contains("--bogus"), "{}", failure.message);
        assert!(!failure.message.starts_with("error:"));
        assert!(failure.hint.is_some());
    }
}
