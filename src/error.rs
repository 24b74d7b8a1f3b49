//! Error classification: what kind of failure an error is, the exit code it maps to, the hint
//! that goes with it, and the list of problems it carries.
//!
//! Commands raise [`Failure`] values inside `anyhow` errors; `state` and `search` raise their
//! own typed errors ([`StoreError`], [`SearchError`]), which never name a command or a flag:
//! this module gives them their kind and the hint a user acts on. The top level finds the first
//! typed error in the chain with [`classify`]. Errors that carry none are I/O or internal
//! errors and still exit 2: 101 is left to panics.

use std::fmt;

use serde::Serialize;

use crate::search::error::SearchError;
use crate::search::retrieve::MAX_LIMIT;
use crate::state::error::StoreError;
use crate::state::problem::Problem;

/// What went wrong, as scripts see it in `{"error": {"kind": ...}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Bad flags or arguments.
    Usage,
    /// Bad input data (a patch, an envelope, a code reference).
    Input,
    /// No `.epiphany/` store was found.
    NoStore,
    /// A store file does not decode or is inconsistent.
    Corrupt,
    /// Reading or writing a file failed.
    Io,
    /// Asking git failed.
    Git,
    /// A check cannot pass or fail: git lacks the commits the records were written at (a
    /// shallow clone, rewritten history), so what changed since is unknown.
    HistoryUnknown,
    /// The store moved past the expected revision.
    Conflict,
    /// The store lock could not be taken in time.
    Locked,
    /// Anything else.
    Internal,
}

impl ErrorKind {
    /// The process exit code for this kind (docs/cli.md#exit-codes).
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Conflict | ErrorKind::Locked => 3,
            _ => 2,
        }
    }
}

/// A classified failure with an optional hint and a list of problems.
#[derive(Debug, Clone)]
pub struct Failure {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// One-line message.
    pub message: String,
    /// What the user can do about it.
    pub hint: Option<String>,
    /// Every individual problem, when there are several (the first [`MAX_PROBLEMS`]).
    pub problems: Vec<Problem>,
    /// How many problems were left out of `problems`.
    pub problems_omitted: usize,
}

/// How many problems an error lists; the rest are counted, so a refused patch with a million
/// problems still prints a short answer.
pub const MAX_PROBLEMS: usize = 100;

impl Failure {
    /// A failure of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            hint: None,
            problems: Vec::new(),
            problems_omitted: 0,
        }
    }

    /// Bad arguments.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Usage, message)
    }

    /// Bad input data.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Input, message)
    }

    /// A revision conflict.
    pub fn conflict(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Conflict, message)
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// Adds the individual problems: the first [`MAX_PROBLEMS`], and a count of the rest.
    pub fn with_problems(mut self, mut problems: Vec<Problem>) -> Failure {
        self.problems_omitted = problems.len().saturating_sub(MAX_PROBLEMS);
        problems.truncate(MAX_PROBLEMS);
        problems.shrink_to_fit();
        self.problems = problems;
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The document `--json` prints on stdout when a command fails.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ErrorDocument {
    /// The failure.
    pub error: ErrorBody,
}

/// The body of [`ErrorDocument`].
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The message, with its causes.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    /// Every individual problem, when there are several (at most 100), each with the path of
    /// what it concerns (`observations[1].summary`; empty for the input as a whole).
    pub problems: Vec<Problem>,
    /// How many more problems there were than `problems` lists.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub problems_omitted: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl From<&StoreError> for Failure {
    fn from(err: &StoreError) -> Failure {
        let revisions = "list revisions and record ids with `epiphany log`";
        let (kind, hint) = match err {
            StoreError::NoStore { .. } => (ErrorKind::NoStore, "run `epiphany init` to create one"),
            StoreError::NotADirectory { .. } => {
                (ErrorKind::Corrupt, "move it aside and run `epiphany init`")
            }
            StoreError::MisplacedFile { .. } => (
                ErrorKind::Corrupt,
                "move the file aside (a file git tracks there: restore the store with `git checkout -- .epiphany/`)",
            ),
            StoreError::Incomplete { .. } => (
                ErrorKind::Corrupt,
                "restore it from git (`git checkout -- .epiphany/`), or move it aside and run `epiphany init`",
            ),
            StoreError::Link { .. } => (
                ErrorKind::Corrupt,
                "replace the link with the file or directory it stands for",
            ),
            StoreError::NotAFile { .. } | StoreError::TooLarge { .. } => (
                ErrorKind::Corrupt,
                "move it aside: epiphany reads only a regular file of its own there (a cache file is made again when it is missing)",
            ),
            StoreError::Locked { .. } => (
                ErrorKind::Locked,
                "retry, or raise the wait with `EPIPHANY_LOCK_TIMEOUT_MS`",
            ),
            StoreError::LostRecords { .. } => (
                ErrorKind::Corrupt,
                "restore the missing rollout files (`git checkout HEAD -- .epiphany/rollout`, `git stash pop`, or a backup); to accept the loss instead, commit the removal of any committed segment, then `epiphany verify --repair` rebuilds the cache from the records that are left",
            ),
            StoreError::ForeignRecords { .. } => (
                ErrorKind::Corrupt,
                "remove that segment and commit the removal (`git rm <segment> && git commit`), or `git revert` the commit that brought it; delete it when it was never committed. `epiphany verify` names every such segment. A store never folds another store's records",
            ),
            StoreError::DamagedRollout { .. } => (
                ErrorKind::Corrupt,
                "run `epiphany verify` for every problem; the line must be restored as it was written (from git or a backup)",
            ),
            StoreError::NoSuchRevision { .. }
            | StoreError::BeforeTheFirstRevision { .. }
            | StoreError::UnknownRecordId { .. }
            | StoreError::AmbiguousRecordId { .. } => (ErrorKind::Usage, revisions),
        };
        Failure::new(kind, err.to_string()).with_hint(hint)
    }
}

impl From<&SearchError> for Failure {
    fn from(err: &SearchError) -> Failure {
        let (kind, hint) = match err {
            SearchError::EmptyQuery => (
                ErrorKind::Usage,
                "pass what to look for, e.g. `epiphany retrieve \"where are patches validated\"`"
                    .to_owned(),
            ),
            SearchError::QueryTooLong { .. } => (
                ErrorKind::Usage,
                "ask with the words and identifiers that matter: results are ranked by them, not by sentences"
                    .to_owned(),
            ),
            SearchError::ZeroLimit => (
                ErrorKind::Usage,
                format!("use a limit between 1 and {MAX_LIMIT}"),
            ),
            SearchError::SemanticUnavailable { .. } => (
                ErrorKind::Usage,
                "build the index with an embedding model: `epiphany index --model DIR` (a model2vec \
                 directory with `model.safetensors` and `tokenizer.json`), or set `EPIPHANY_MODEL`"
                    .to_owned(),
            ),
            SearchError::IndexBusy { .. } => (
                ErrorKind::Locked,
                "wait for it to finish, then rerun `epiphany index`".to_owned(),
            ),
        };
        Failure::new(kind, err.to_string()).with_hint(hint)
    }
}

/// The typed failure one link of an error chain carries, if any.
fn typed(cause: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    if let Some(failure) = cause.downcast_ref::<Failure>() {
        return Some(failure.clone());
    }
    if let Some(err) = cause.downcast_ref::<StoreError>() {
        return Some(err.into());
    }
    cause.downcast_ref::<SearchError>().map(Failure::from)
}

/// The failure that classifies `err`: the outermost typed error in its chain ([`Failure`],
/// [`StoreError`], [`SearchError`]), or one derived from the underlying error type.
pub fn classify(err: &anyhow::Error) -> Failure {
    if let Some(failure) = err.chain().find_map(typed) {
        let mut failure = failure;
        failure.message = err.to_string();
        return failure;
    }
    let kind = if err.chain().any(|cause| cause.is::<git2::Error>()) {
        ErrorKind::Git
    } else if err.chain().any(|cause| cause.is::<std::io::Error>()) {
        ErrorKind::Io
    } else {
        ErrorKind::Internal
    };
    Failure::new(kind, err.to_string())
}

/// Whether the error is a closed stdout (a reader such as `head` went away).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_finds_the_failure_under_context() {
        let err = anyhow::Error::from(Failure::conflict("moved").with_hint("retry"))
            .context("failed to update");
        let failure = classify(&err);
        assert_eq!(failure.kind, ErrorKind::Conflict);
        assert_eq!(failure.kind.exit_code(), 3);
        assert_eq!(failure.message, "failed to update");
        assert_eq!(failure.hint.as_deref(), Some("retry"));
    }

    #[test]
    fn problem_lists_are_capped_with_a_count() {
        let problems = (0..250)
            .map(|n| Problem::whole(format!("problem {n}")))
            .collect();
        let failure = Failure::input("bad").with_problems(problems);
        assert_eq!(failure.problems.len(), MAX_PROBLEMS);
        assert_eq!(failure.problems[99].message, "problem 99");
        assert_eq!(failure.problems_omitted, 150);
        let few = Failure::input("bad").with_problems(vec![Problem::whole("one")]);
        assert_eq!((few.problems.len(), few.problems_omitted), (1, 0));
    }

    #[test]
    fn io_errors_exit_two() {
        let err = anyhow::Error::from(std::io::Error::other("disk")).context("failed to read `x`");
        assert_eq!(classify(&err).kind, ErrorKind::Io);
        assert_eq!(classify(&err).kind.exit_code(), 2);
    }

    #[test]
    fn typed_errors_below_the_commands_get_their_kind_and_hint_here() {
        let err = anyhow::Error::from(StoreError::Locked {
            path: "/r/.epiphany/lock".into(),
            millis: 10,
        });
        let failure = classify(&err);
        assert_eq!(failure.kind, ErrorKind::Locked);
        assert_eq!(failure.kind.exit_code(), 3);
        assert_eq!(
            failure.message,
            "another epiphany process held `/r/.epiphany/lock` for more than 10 ms"
        );
        assert!(
            failure
                .hint
                .is_some_and(|hint| hint.contains("EPIPHANY_LOCK_TIMEOUT_MS"))
        );
        let wrapped = anyhow::Error::from(SearchError::EmptyQuery).context("failed to search");
        let failure = classify(&wrapped);
        assert_eq!(failure.kind, ErrorKind::Usage);
        assert_eq!(failure.message, "failed to search");
        assert!(
            failure
                .hint
                .is_some_and(|hint| hint.contains("epiphany retrieve"))
        );
    }
}
