//! `distill` (docs/drafting.md#distill): one claimed observation becomes a typed observation and
//! the evidence record behind it, with deterministic ids.
//!
//! Owns normalisation, the evidence-kind defaults, salient-line selection for tool and model
//! output (test totals and failures first: [`lines`]), the summary limit and the
//! `obs-<hex12>` / `ev-<hex12>` fingerprint. It reads no
//! state and writes nothing: the result is a draft patch for `update` or `promote`. Validation
//! messages are those of docs/drafting.md#distill-validation, field names in snake_case
//! (`source_kind must not be empty`).
//!
//! The text can be any size, so it is fed to a [`TextDigest`] in chunks and only what the
//! result depends on is kept: the collapsed text up to one scalar past the fingerprint limit
//! (that decides `truncate(text, 4096)`), and the few candidate lines of the salient-line
//! selection, each cut one scalar past the summary limit (that decides the summary). The last
//! totals line is the one kept (runners print the whole run's totals last), so the digest
//! always reads to the end.
//!
//! The summary is stored, so it holds no secret, not even part of one: the text is redacted
//! ([`crate::policy::secrets`]) before it is cut to the limit, and a text the digest had to cut
//! loses the word its cut went through (the start of a credential is too short for any rule
//! to know it) and shows `...` there instead.

pub mod lines;

use std::collections::BTreeMap;

use crate::policy::code_ref::code_ref_key;
use crate::policy::distill::lines::LineClass;
use crate::policy::distill::lines::classify;
use crate::policy::distill::lines::counts_something;
use crate::policy::distill::lines::reports_failure;
use crate::policy::distill::lines::strip_rules;
use crate::policy::secrets::redact_text;
use crate::policy::secrets::truncate_redacted;
use crate::policy::text::collapse;
use crate::policy::text::hex12;
use crate::policy::text::truncate;
use crate::state::model::CodeRef;
use crate::state::model::EvidenceRecord;
use crate::state::model::Observation;
use crate::state::patch::Patch;

/// The longest summary, in Unicode scalars.
pub const SUMMARY_LIMIT: usize = 320;
/// How much of the collapsed text the fingerprint hashes, in Unicode scalars.
pub const FINGERPRINT_TEXT_LIMIT: usize = 4096;

const HIGH_SIGNAL: [&str; 6] = [
    "exit code",
    "test result",
    "finished",
    "passed",
    "failed",
    "error",
];
const WARNING: &str = "warning";
/// The longest marker minus one: how much of a line to remember across chunk boundaries.
const MARKER_OVERLAP: usize = 10;
const SALIENT_LINES: usize = 3;
/// Failure lines kept after the totals line.
const FAILURE_LINES: usize = 3;
const LEADING_LINES: usize = 2;

/// Why a draft cannot be made: the first required field found blank (the failures of
/// docs/drafting.md#distill-validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlankField {
    /// The source kind.
    SourceKind,
    /// The status.
    Status,
    /// The text.
    Text,
}

impl std::fmt::Display for BlankField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlankField::SourceKind => "source_kind must not be empty",
            BlankField::Status => "status must not be empty",
            BlankField::Text => "text must not be empty",
        })
    }
}

/// Everything but the text, normalised and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistillRequest {
    source_kind: String,
    status: String,
    subject: Option<String>,
    evidence_kind: String,
    code_refs: Vec<CodeRef>,
}

impl DistillRequest {
    /// Collapses the fields and checks source kind and status
    /// (docs/drafting.md#distill-validation, steps 1–2), and picks the evidence kind
    /// (docs/drafting.md#evidence-kind-defaults). A blank subject or evidence kind counts as
    /// absent.
    pub fn new(
        source_kind: &str,
        status: &str,
        subject: Option<&str>,
        evidence_kind: Option<&str>,
        code_refs: Vec<CodeRef>,
    ) -> Result<DistillRequest, BlankField> {
        let source_kind = collapse(source_kind);
        if source_kind.is_empty() {
            return Err(BlankField::SourceKind);
        }
        let status = collapse(status);
        if status.is_empty() {
            return Err(BlankField::Status);
        }
        let non_empty = |value: Option<&str>| Some(collapse(value?)).filter(|v| !v.is_empty());
        let evidence_kind =
            non_empty(evidence_kind).unwrap_or_else(|| default_evidence_kind(&source_kind).into());
        Ok(DistillRequest {
            subject: non_empty(subject),
            source_kind,
            status,
            evidence_kind,
            code_refs,
        })
    }

    /// Drafts the observation and its evidence from the digested text
    /// (docs/drafting.md#distill-summary-and-ids; the empty text is step 3 of
    /// docs/drafting.md#distill-validation).
    pub fn distill(self, text: TextDigest) -> Result<Distilled, BlankField> {
        let text = text.finish();
        if text.collapsed.is_empty() {
            return Err(BlankField::Text);
        }
        let source_output = is_source_output(&self.source_kind);
        let verification = default_evidence_kind(&self.source_kind) == "verification";
        let body = match (text.results, text.salient) {
            (Some(results), _) if source_output || verification => results,
            (_, Some(salient)) if source_output => salient,
            _ if text.capped => close_cut(&text.collapsed),
            _ => text.collapsed.clone(),
        };
        let full = match &self.subject {
            Some(subject) => format!("{subject}: {body}"),
            None => body.clone(),
        };
        let mut redactions = BTreeMap::new();
        let redacted = redact_text(&full, &mut redactions).unwrap_or(full);
        let summary = truncate_redacted(&redacted, SUMMARY_LIMIT);
        let shortened = summary != redacted || body != text.collapsed || text.capped;
        let fingerprint = self.fingerprint(&text.collapsed);
        let evidence_id = format!("ev-{fingerprint}");
        Ok(Distilled {
            shortened,
            redactions,
            text_chars: text.chars,
            observation: Observation {
                id: format!("obs-{fingerprint}"),
                summary: summary.clone(),
                source_kind: self.source_kind,
                status: self.status.clone(),
                code_refs: self.code_refs.clone(),
                evidence_ids: vec![evidence_id.clone()],
                supersedes: None,
            },
            evidence: EvidenceRecord {
                id: evidence_id,
                kind: self.evidence_kind,
                status: self.status,
                summary,
                code_refs: self.code_refs,
            },
        })
    }

    /// `hex12` of the source kind, status, subject and collapsed text (cut at the fingerprint
    /// limit), then the keys of the code refs, sorted, when there are any: the same text about
    /// two places drafts two ids.
    fn fingerprint(&self, collapsed: &str) -> String {
        let mut keys: Vec<String> = self.code_refs.iter().map(code_ref_key).collect();
        keys.sort();
        keys.dedup();
        let text = truncate(collapsed, FINGERPRINT_TEXT_LIMIT);
        let mut parts = vec![
            self.source_kind.as_str(),
            self.status.as_str(),
            self.subject.as_deref().unwrap_or(""),
            &text,
        ];
        parts.extend(keys.iter().map(String::as_str));
        hex12(parts.join("\0").as_bytes())
    }
}

/// A drafted observation and the evidence record it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distilled {
    /// `obs-<hex12>`, citing the evidence.
    pub observation: Observation,
    /// `ev-<hex12>`, same fingerprint.
    pub evidence: EvidenceRecord,
    /// Whether the summary leaves part of the text out (salient lines only, or cut at the
    /// summary limit).
    pub shortened: bool,
    /// How many characters the text had, as given.
    pub text_chars: u64,
    /// The secrets redacted from the summary, by kind.
    pub redactions: BTreeMap<&'static str, usize>,
}

impl Distilled {
    /// The draft as a patch: one observation, one evidence record.
    pub fn into_patch(self) -> Patch {
        Patch {
            observations: vec![self.observation],
            evidence: vec![self.evidence],
            ..Patch::default()
        }
    }
}

/// How much of the input is looked at to tell text from binary.
pub const BINARY_PROBE_BYTES: usize = 8192;

/// Invalid UTF-8 sequences that a block may hold and still be text, however short it is.
const STRAY_SEQUENCES: usize = 3;

/// Whether the first block of the input is binary rather than text: it holds a NUL byte, or
/// more than [`STRAY_SEQUENCES`] invalid UTF-8 sequences and more than one in 32 bytes (a
/// stray Latin-1 letter in a log, even a one-line one, is still text). A character cut by the
/// end of the block does not count.
pub fn looks_binary(first_block: &[u8]) -> bool {
    if first_block.contains(&0) {
        return true;
    }
    let mut invalid = 0;
    let mut rest = first_block;
    while let Err(err) = std::str::from_utf8(rest) {
        let Some(length) = err.error_len() else {
            break;
        };
        invalid += 1;
        rest = &rest[err.valid_up_to() + length..];
    }
    invalid > STRAY_SEQUENCES && invalid * 32 > first_block.len()
}

/// The text that stands for binary input in a draft: its size and checksum, so the same input
/// always drafts the same ids and different inputs draft different ones.
pub fn binary_summary(bytes: u64, crc32: u32) -> String {
    format!("binary input, {bytes} bytes (crc32 {crc32:08x}); not distilled as text")
}

/// The evidence kind implied by a source kind (docs/drafting.md#evidence-kind-defaults): the first
/// matching row wins.
pub fn default_evidence_kind(source_kind: &str) -> &'static str {
    let kind = source_kind.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|needle| kind.contains(needle));
    if has(&["test", "smoke", "verification"]) {
        "verification"
    } else if has(&["tool", "command", "shell"]) {
        "tool-output"
    } else if has(&["model", "assistant"]) {
        "model-output"
    } else {
        "observation"
    }
}

/// Whether the summary of this source kind is built from salient lines.
fn is_source_output(source_kind: &str) -> bool {
    let kind = source_kind.to_ascii_lowercase();
    ["tool", "command", "shell", "model", "assistant"]
        .iter()
        .any(|needle| kind.contains(needle))
}

/// The text to distill, taken in chunks of any size and split anywhere. Keeps bounded state
/// however long the text is.
#[derive(Debug, Default)]
pub struct TextDigest {
    chars: u64,
    collapsed: Capped<{ FINGERPRINT_TEXT_LIMIT + 1 }>,
    line: Line,
    high_signal: Vec<String>,
    warnings: Vec<String>,
    leading: Vec<String>,
    failing_totals: Option<String>,
    totals: Option<String>,
    failures: Vec<String>,
}

/// The current line: its collapsed start, and what markers it has shown so far.
#[derive(Debug, Default)]
struct Line {
    shown: Capped<{ SUMMARY_LIMIT + 1 }>,
    started: bool,
    gap: bool,
    tail: String,
    high_signal: bool,
    warning: bool,
}

/// What the digest kept once the text ended.
struct DigestedText {
    collapsed: String,
    /// Whether the collapsed text was cut at the fingerprint limit.
    capped: bool,
    chars: u64,
    /// The totals and failures of a test run or build, when the text has any.
    results: Option<String>,
    salient: Option<String>,
}

impl TextDigest {
    /// A digest of one whole text.
    pub fn of(text: &str) -> TextDigest {
        let mut digest = TextDigest::default();
        digest.push(text);
        digest
    }

    /// Feeds the next chunk. Lines end at `\n`; every other whitespace (including `\r`)
    /// separates words.
    pub fn push(&mut self, chunk: &str) {
        self.chars += chunk.chars().count() as u64;
        for (index, part) in chunk.split('\n').enumerate() {
            if index > 0 {
                self.end_line();
            }
            self.push_line_part(part);
        }
    }

    fn push_line_part(&mut self, part: &str) {
        let words = collapse(part);
        if words.is_empty() {
            self.line.gap |= !part.is_empty();
            return;
        }
        let line = &mut self.line;
        let space = line.started && (line.gap || part.starts_with(char::is_whitespace));
        if !line.started {
            if !self.collapsed.is_empty() {
                self.collapsed.push(" ");
            }
            line.started = true;
        }
        let piece = if space { format!(" {words}") } else { words };
        self.collapsed.push(&piece);
        line.shown.push(&piece);
        line.note_markers(&piece);
        line.gap = part.ends_with(char::is_whitespace);
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if !line.started {
            return;
        }
        let shown = strip_escapes(&line.shown.text);
        let text = if line.shown.scalars > SUMMARY_LIMIT {
            close_cut(&shown)
        } else {
            shown
        };
        self.keep_result(&text);
        if line.high_signal {
            keep_first(&mut self.high_signal, SALIENT_LINES, &text);
        } else if line.warning {
            keep_first(&mut self.warnings, SALIENT_LINES, &text);
        }
        keep_first(&mut self.leading, LEADING_LINES, &text);
    }

    /// Keeps a line of a test run's or build's results: the last totals line that reports a
    /// failure, else the last one that counts something (a later `0 passed` of an empty test
    /// binary does not stand for the run), and the first distinct failure lines.
    fn keep_result(&mut self, text: &str) {
        match classify(text) {
            LineClass::Totals => {
                let totals = strip_rules(text).to_owned();
                if reports_failure(&totals) {
                    self.failing_totals = Some(totals);
                } else if self.totals.is_none() || counts_something(&totals) {
                    self.totals = Some(totals);
                }
            }
            LineClass::Failure if !self.failures.iter().any(|kept| kept == text) => {
                keep_first(&mut self.failures, FAILURE_LINES, text);
            }
            LineClass::Failure | LineClass::Other => {}
        }
    }

    fn finish(mut self) -> DigestedText {
        self.end_line();
        let totals = self.failing_totals.or(self.totals);
        let mut results: Vec<String> = totals.into_iter().chain(self.failures).collect();
        // What the results leave of the salient lines' three, the first salient lines that
        // are neither totals nor failures fill (the specification's example keeps `Finished`
        // after the totals).
        if !results.is_empty() {
            let others =
                (self.high_signal.iter()).filter(|line| classify(line) == LineClass::Other);
            for line in others {
                if results.len() < SALIENT_LINES {
                    results.push(line.clone());
                }
            }
        }
        let selection = [self.high_signal, self.warnings, self.leading]
            .into_iter()
            .find(|lines| !lines.is_empty());
        DigestedText {
            capped: self.collapsed.scalars > FINGERPRINT_TEXT_LIMIT,
            chars: self.chars,
            collapsed: self.collapsed.text,
            results: (!results.is_empty()).then(|| results.join(" | ")),
            salient: selection.map(|lines| lines.join(" | ")),
        }
    }
}

impl Line {
    /// Looks for the markers in the line so far; a marker may straddle two pieces, so the last
    /// few characters of the previous piece are searched again.
    fn note_markers(&mut self, piece: &str) {
        if self.high_signal {
            return;
        }
        let window = format!("{}{}", self.tail, piece.to_ascii_lowercase());
        self.high_signal = HIGH_SIGNAL.iter().any(|marker| window.contains(marker));
        self.warning |= window.contains(WARNING);
        let keep_from = window
            .char_indices()
            .rev()
            .nth(MARKER_OVERLAP - 1)
            .map_or(0, |(at, _)| at);
        self.tail = window[keep_from..].to_owned();
    }
}

/// A text the digest cut at its limit, ready to be redacted: the word the cut went through
/// may be the start of a credential, too short for any rule to know it, so it goes, and `...`
/// marks the cut.
fn close_cut(text: &str) -> String {
    let kept = text
        .rfind(char::is_whitespace)
        .map_or("", |at| text[..at].trim_end());
    format!("{kept}...")
}

/// `line` without terminal escape sequences (`ESC [ ... letter`), which colour some runners'
/// output even when it is piped.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    out
}

fn keep_first(lines: &mut Vec<String>, limit: usize, line: &str) {
    if lines.len() < limit {
        lines.push(line.to_owned());
    }
}

/// The first `N` Unicode scalars of everything pushed.
#[derive(Debug, Default)]
struct Capped<const N: usize> {
    text: String,
    scalars: usize,
}

impl<const N: usize> Capped<N> {
    fn push(&mut self, piece: &str) {
        let room = N - self.scalars;
        // A piece has no more scalars than bytes.
        let cut = if piece.len() <= room {
            piece.len()
        } else {
            piece
                .char_indices()
                .nth(room)
                .map_or(piece.len(), |(at, _)| at)
        };
        self.text.push_str(&piece[..cut]);
        self.scalars += piece[..cut].chars().count();
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

#[cfg(test)]
mod tests;
