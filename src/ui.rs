//! The only place that prints. stdout carries data (one report, as human text or as one JSON
//! document); stderr carries status, warnings, hints, errors and progress bars.
//!
//! Text for a person shows control characters as visible escapes ([`printable`]): it quotes
//! state that anyone who can commit may have written. JSON escapes them itself. Status lines,
//! warnings, hints and errors are redacted ([`redacted`]): they may quote what was typed.
//!
//! Progress bars appear only when stderr is a terminal and neither `--json` nor `--quiet` is
//! set. Writes to a closed stdout surface as `BrokenPipe` errors, which the top level turns
//! into a quiet exit 0.

use std::io::IsTerminal;
use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;

use anyhow::Result;
use indicatif::ProgressBar;
use indicatif::ProgressDrawTarget;
use indicatif::ProgressStyle;
use serde::Serialize;

use crate::error::ErrorBody;
use crate::error::ErrorDocument;
use crate::error::Failure;
use crate::policy::secrets::redacted;
use crate::policy::text::printable;
use crate::state::problem::Problem;

/// A command's result, printable for a person or for a script.
pub trait Report: Serialize {
    /// Writes the human rendering.
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()>;
}

/// How and where to print.
#[derive(Debug, Clone)]
pub struct Ui {
    json: bool,
    quiet: bool,
    stderr_is_terminal: bool,
    /// Where stdout goes when a caller captures it instead of the process's stdout.
    capture: Option<Captured>,
}

/// Output captured from an in-process command run.
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far.
    pub fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut bytes| std::mem::take(&mut *bytes))
            .unwrap_or_default()
    }
}

impl Ui {
    /// A printer for the global output flags.
    pub fn new(json: bool, quiet: bool) -> Ui {
        Ui {
            json,
            quiet,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            capture: None,
        }
    }

    /// A JSON printer whose stdout goes into the returned buffer (stderr still goes to stderr).
    pub fn capturing() -> (Ui, Captured) {
        let captured = Captured::default();
        let ui = Ui {
            json: true,
            quiet: false,
            stderr_is_terminal: false,
            capture: Some(captured.clone()),
        };
        (ui, captured)
    }

    /// Runs `write` against stdout, or against the capture buffer.
    fn with_stdout(
        &self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match &self.capture {
            Some(Captured(buffer)) => {
                let mut bytes = buffer
                    .lock()
                    .map_err(|_| std::io::Error::other("the capture buffer is poisoned"))?;
                write(&mut *bytes)
            }
            None => {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                write(&mut out)?;
                out.flush()
            }
        }
    }

    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Whether `--quiet` was given.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Prints the report: one JSON document with `--json`, human text otherwise (nothing under
    /// `--quiet` unless `--json` asked for it explicitly).
    pub fn emit<R: Report>(&self, report: &R) -> Result<()> {
        self.with_stdout(|out| {
            if self.json {
                serde_json::to_writer(&mut *out, report)?;
                out.write_all(b"\n")
            } else if !self.quiet {
                report.human(&mut Printable(out))
            } else {
                Ok(())
            }
        })?;
        Ok(())
    }

    /// Prints the report of a write that already landed (`landed` says what is in the store).
    /// A report that cannot be printed (a full disk) is then a warning, not a failure: an
    /// exit status of 2 would have the caller retry a write that is there. A closed pipe is
    /// not worth a word, as everywhere.
    pub fn emit_landed<R: Report>(&self, report: &R, landed: &str) {
        if let Err(err) = self.emit(report) {
            let io = err
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind);
            if io != Some(std::io::ErrorKind::BrokenPipe) {
                self.warn(&format!(
                    "{landed}, but its report could not be printed: {err:#}"
                ));
            }
        }
    }

    /// Writes text to stdout (for payloads such as `completions` or `textconv`).
    pub fn emit_text(&self, text: &str) -> Result<()> {
        self.with_stdout(|out| out.write_all(printable(text).as_bytes()))?;
        Ok(())
    }

    /// A status line on stderr.
    pub fn status(&self, message: &str) {
        self.note("", message);
    }

    /// A warning on stderr.
    pub fn warn(&self, message: &str) {
        self.note("warning: ", message);
    }

    /// A hint on stderr.
    pub fn hint(&self, message: &str) {
        self.note("hint: ", message);
    }

    /// A line on stderr unless `--quiet`, its secrets redacted (a warning or a hint may quote
    /// what was typed). A stderr that cannot be written (closed, a full disk) loses the line:
    /// it never fails the command or panics, as `eprintln!` would.
    fn note(&self, label: &str, message: &str) {
        if !self.quiet {
            let line = format!("{label}{}\n", printable(&redacted(message)));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    /// A progress bar over `len` steps, hidden unless a person is watching stderr.
    pub fn progress(&self, len: u64, message: &'static str) -> ProgressBar {
        if self.json || self.quiet || !self.stderr_is_terminal {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {wide_msg}")
            .map(|style| style.progress_chars("=> "));
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.set_message(message);
        bar
    }

    /// Reports a failure: always on stderr, and with `--json` also on stdout as
    /// `{"error": {...}}`.
    pub fn error(&self, failure: &Failure, causes: &[String]) {
        // An error may quote its input (a decode error names the value it could not read): it
        // never quotes a secret.
        let clean = |text: &str| redacted(text).into_owned();
        let failure = &Failure {
            message: clean(&failure.message),
            problems: (failure.problems.iter())
                .map(|p| Problem::new(clean(&p.path), clean(&p.message)))
                .collect(),
            hint: failure.hint.as_deref().map(clean),
            ..failure.clone()
        };
        let causes: Vec<String> = causes.iter().map(|cause| clean(cause)).collect();
        let mut message = failure.message.clone();
        for cause in &causes {
            message.push_str(": ");
            message.push_str(cause);
        }
        if self.json {
            let document = ErrorDocument {
                error: ErrorBody {
                    kind: failure.kind,
                    message,
                    hint: failure.hint.clone(),
                    problems: failure.problems.clone(),
                    problems_omitted: failure.problems_omitted,
                },
            };
            let _ = self.with_stdout(|out| {
                serde_json::to_writer(&mut *out, &document)?;
                writeln!(out)
            });
        }
        let mut err = Printable(&mut std::io::stderr().lock());
        let _ = writeln!(err, "error: {}", failure.message);
        for problem in &failure.problems {
            let _ = writeln!(err, "  - {problem}");
        }
        if failure.problems_omitted > 0 {
            let _ = writeln!(
                err,
                "  ... and {} more problem(s) not listed",
                failure.problems_omitted
            );
        }
        for cause in &causes {
            let _ = writeln!(err, "  caused by: {cause}");
        }
        if let Some(hint) = &failure.hint {
            let _ = writeln!(err, "hint: {hint}");
        }
    }
}

/// A writer for a person's eyes: control characters become visible escapes ([`printable`]).
/// Reports write whole strings at a time, so no character is split between two writes.
struct Printable<'a>(&'a mut dyn Write);

impl Write for Printable<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .write_all(printable(&String::from_utf8_lossy(buf)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
