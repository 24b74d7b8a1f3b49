//! Error classification: what kind of failure an error is, the exit code it maps to, the hint
//! that goes with it, and the list of problems it carries.
//!
//! Commands raise [`Failure`] values inside `anyhow` errors; the top level finds the first one
//! in the chain with [`classify`]. Errors that carry no `Failure` are I/O or internal errors and
//! still exit 2: 101 is left to panics.

use std::fmt;

use serde::Serialize;

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
    pub problems: Vec<String>,
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

    /// A store file that does not decode.
    pub fn corrupt(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Corrupt, message)
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
    pub fn with_problems(mut self, mut problems: Vec<String>) -> Failure {
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
    /// Every individual problem, when there are several (at most 100).
    pub problems: Vec<String>,
    /// How many more problems there were than `problems` lists.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub problems_omitted: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// The failure that classifies `err`: the outermost [`Failure`] in its chain, or one derived
/// from the underlying error type.
pub fn classify(err: &anyhow::Error) -> Failure {
    if let Some(failure) = err
        .chain()
        .find_map(|cause| cause.downcast_ref::<Failure>())
    {
        let mut failure = failure.clone();
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
        let problems = (0..250).map(|n| format!("problem {n}")).collect();
        let failure = Failure::input("bad").with_problems(problems);
        assert_eq!(failure.problems.len(), MAX_PROBLEMS);
        assert_eq!(failure.problems[99], "problem 99");
        assert_eq!(failure.problems_omitted, 150);
        let few = Failure::input("bad").with_problems(vec!["one".into()]);
        assert_eq!((few.problems.len(), few.problems_omitted), (1, 0));
    }

    #[test]
    fn io_errors_exit_two() {
        let err = anyhow::Error::from(std::io::Error::other("disk")).context("failed to read `x`");
        assert_eq!(classify(&err).kind, ErrorKind::Io);
        assert_eq!(classify(&err).kind.exit_code(), 2);
    }
}
