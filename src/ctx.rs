//! The context every command runs in: where, how to print, what time it is, how long to wait,
//! where standard input comes from, and how to stop. [`Ctx::from_env`] is the only place that
//! reads the environment (`EPIPHANY_*` variables) and the clock; everything below receives
//! them through `Ctx`.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::Result;

use crate::error;
use crate::error::Failure;
use crate::search::syntax::Deadline;
use crate::state::git;
use crate::state::store::DEFAULT_SNAPSHOT_EVERY;
use crate::state::store::Store;
use crate::state::store::Transaction;
use crate::state::store::WriteScope;
use crate::ui::Ui;

/// `EPIPHANY_NOW`: the time to use as "now".
pub const NOW: &str = "EPIPHANY_NOW";
/// `EPIPHANY_LOCK_TIMEOUT_MS`: how long a writer waits for the store lock.
pub const LOCK_TIMEOUT_MS: &str = "EPIPHANY_LOCK_TIMEOUT_MS";
/// `EPIPHANY_SNAPSHOT_EVERY`: the snapshot cadence.
pub const SNAPSHOT_EVERY: &str = "EPIPHANY_SNAPSHOT_EVERY";
/// `EPIPHANY_MODEL`: the embedding model directory.
pub const MODEL: &str = "EPIPHANY_MODEL";
/// `EPIPHANY_PARSE_TIME_MS`: for tests only, how long a command may parse ([`PARSE_TIME`]
/// otherwise).
pub const PARSE_TIME_MS: &str = "EPIPHANY_PARSE_TIME_MS";

/// How long a command may spend parsing, counted from its start and shared by every parse it
/// does: the code map's files (`prompt`, the session-start hook, `map`) and the files
/// references cite (every command that re-reads them). Ordinary code within reach parses in far less; past it, what is left is
/// left out and named, so that a repository of hostile files (each within its own parse budget,
/// but twenty of them) cannot hold a session start for tens of seconds.
pub const PARSE_TIME: Duration = Duration::from_secs(5);

/// Every variable of epiphany's own that [`Ctx::from_env`] reads, with what it does: the
/// top-level `--help` lists these (git's own variables, `GIT_DIR` and `GIT_WORK_TREE`, are
/// honoured as git honours them).
pub const VARIABLES: [(&str, &str); 5] = [
    (
        NOW,
        "RFC 3339 time to use as \"now\" (for reproducible tests)",
    ),
    (
        LOCK_TIMEOUT_MS,
        "how long a writer waits for the store lock (default 10000)",
    ),
    (
        SNAPSHOT_EVERY,
        "records past the newest snapshot after which a write stores a new one (default 128)",
    ),
    (
        MODEL,
        "the embedding model directory `index` uses when `--model` is not given",
    ),
    (
        PARSE_TIME_MS,
        "for tests only: how long a command may parse, all its parses together (default 5000)",
    ),
];

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
    /// long work (`index`, and `retrieve` or `map` reading the work tree) stops at the next
    /// file.
    pub cancel: Cancel,
    /// When the command started.
    pub started: Instant,
    /// How long the command may parse ([`PARSE_TIME`]).
    pub parse_time: Duration,
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
    pub fn from_env(directory: Option<&Path>, json: bool, quiet: bool) -> Result<Ctx> {
        let base = std::env::current_dir().context("failed to read the current directory")?;
        let ui = Ui::new(json, quiet);
        let ctx = Ctx::build(&base, directory, ui, Stdin::Process)?;
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
        let now = match std::env::var(NOW) {
            Ok(text) if !text.trim().is_empty() => text.trim().parse().map_err(|err| {
                Failure::usage(format!("{NOW}=`{text}` is not an RFC 3339 time: {err}"))
            })?,
            _ => jiff::Timestamp::now(),
        };
        let lock_timeout = match std::env::var(LOCK_TIMEOUT_MS) {
            Ok(text) => Duration::from_millis(text.trim().parse().map_err(|_| {
                Failure::usage(format!(
                    "{LOCK_TIMEOUT_MS}=`{text}` is not a number of milliseconds"
                ))
            })?),
            Err(_) => Duration::from_secs(10),
        };
        let snapshot_every = match std::env::var(SNAPSHOT_EVERY) {
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(every) if every > 0 => every,
                _ => {
                    return Err(Failure::usage(format!(
                        "{SNAPSHOT_EVERY}=`{text}` is not a positive number of records"
                    ))
                    .into());
                }
            },
            Err(_) => DEFAULT_SNAPSHOT_EVERY,
        };
        let model_dir = std::env::var_os(MODEL)
            .filter(|dir| !dir.is_empty())
            .map(|dir| base.join(dir));
        let parse_time = match std::env::var(PARSE_TIME_MS) {
            Ok(text) => Duration::from_millis(text.trim().parse().map_err(|_| {
                Failure::usage(format!(
                    "{PARSE_TIME_MS}=`{text}` is not a number of milliseconds"
                ))
            })?),
            Err(_) => PARSE_TIME,
        };
        Ok(Ctx {
            cwd,
            ui,
            now,
            lock_timeout,
            snapshot_every,
            stdin,
            model_dir,
            cancel: Cancel::default(),
            started: Instant::now(),
            parse_time,
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

    /// The deadline shared by every parse of the command (the code map's files, the cited
    /// files): [`Ctx::parse_time`] after it started.
    pub fn parse_deadline(&self) -> Deadline {
        Deadline::at(self.started + self.parse_time)
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

    /// Takes the store's write lock and reads its head: the start of every write. A write
    /// whose caller gave up while it waited for the lock stops there, with nothing written.
    pub fn begin<'s>(&self, store: &'s Store, scope: WriteScope) -> Result<Transaction<'s>> {
        let tx = store.begin(self.lock_timeout, scope)?;
        if self.cancel.is_set() {
            anyhow::bail!(
                "the write was cancelled while it waited for the lock; nothing was written"
            );
        }
        Ok(tx)
    }
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
