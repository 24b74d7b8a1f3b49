//! `distill` (docs/drafting.md#distill): one claimed observation becomes a typed observation and
//! the evidence record behind it, with deterministic ids.
//!
//! Owns normalisation, the evidence-kind defaults, salient-line selection for tool and model
//! output, the summary limit and the `obs-<hex12>` / `ev-<hex12>` fingerprint. It reads no
//! state and writes nothing: the result is a draft patch for `update` or `promote`. Validation
//! messages are those of docs/drafting.md#distill-validation, field names in snake_case
//! (`source_kind must not be empty`).
//!
//! The text can be any size, so it is fed to a [`TextDigest`] in chunks and only what the
//! result depends on is kept: the collapsed text up to one scalar past the fingerprint limit
//! (that decides `truncate(text, 4096)`), and the few candidate lines of the salient-line
//! selection, each cut one scalar past the summary limit (that decides the summary).
//!
//! The summary is stored, so it holds no secret, not even part of one: the text is redacted
//! ([`crate::policy::secrets`]) before it is cut to the limit, and a text the digest had to cut
//! loses the word its cut went through (the start of a credential is too short for any rule
//! to know it) and shows `...` there instead.

use std::collections::BTreeMap;

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
const LEADING_LINES: usize = 2;

/// Why a draft cannot be made (the first failure of docs/drafting.md#distill-validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistillError {
    /// The source kind is blank.
    EmptySourceKind,
    /// The status is blank.
    EmptyStatus,
    /// The text is blank.
    EmptyText,
}

impl std::fmt::Display for DistillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DistillError::EmptySourceKind => "source_kind must not be empty",
            DistillError::EmptyStatus => "status must not be empty",
            DistillError::EmptyText => "text must not be empty",
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
    ) -> Result<DistillRequest, DistillError> {
        let source_kind = collapse(source_kind);
        if source_kind.is_empty() {
            return Err(DistillError::EmptySourceKind);
        }
        let status = collapse(status);
        if status.is_empty() {
            return Err(DistillError::EmptyStatus);
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
    pub fn distill(self, text: TextDigest) -> Result<Distilled, DistillError> {
        let text = text.finish();
        if text.collapsed.is_empty() {
            return Err(DistillError::EmptyText);
        }
        let body = match text.salient {
            Some(salient) if is_source_output(&self.source_kind) => salient,
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
        let fingerprint = hex12(
            [
                self.source_kind.as_str(),
                self.status.as_str(),
                self.subject.as_deref().unwrap_or(""),
                &truncate(&text.collapsed, FINGERPRINT_TEXT_LIMIT),
            ]
            .join("\0")
            .as_bytes(),
        );
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
        if self.is_settled() {
            return;
        }
        for (index, part) in chunk.split('\n').enumerate() {
            if index > 0 {
                self.end_line();
            }
            self.push_line_part(part);
        }
    }

    /// Whether more text can no longer change the result: the fingerprint text is complete and
    /// the salient-line selection is full (high-signal lines outrank every other line).
    fn is_settled(&self) -> bool {
        self.collapsed.scalars == FINGERPRINT_TEXT_LIMIT + 1
            && self.high_signal.len() == SALIENT_LINES
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
        let text = if line.shown.scalars > SUMMARY_LIMIT {
            close_cut(&line.shown.text)
        } else {
            line.shown.text
        };
        if line.high_signal {
            keep_first(&mut self.high_signal, SALIENT_LINES, &text);
        } else if line.warning {
            keep_first(&mut self.warnings, SALIENT_LINES, &text);
        }
        keep_first(&mut self.leading, LEADING_LINES, &text);
    }

    fn finish(mut self) -> DigestedText {
        self.end_line();
        let selection = [self.high_signal, self.warnings, self.leading]
            .into_iter()
            .find(|lines| !lines.is_empty());
        DigestedText {
            capped: self.collapsed.scalars > FINGERPRINT_TEXT_LIMIT,
            chars: self.chars,
            collapsed: self.collapsed.text,
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
mod tests {
    use super::*;

    fn draft(source_kind: &str, subject: Option<&str>, text: &str) -> Distilled {
        DistillRequest::new(source_kind, "ok", subject, None, vec![])
            .and_then(|request| request.distill(TextDigest::of(text)))
            .expect("distill")
    }

    /// Feeds `text` in pieces of `size` bytes (cut at char boundaries).
    fn digest_in_pieces(text: &str, size: usize) -> TextDigest {
        let mut digest = TextDigest::default();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = size.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            digest.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        digest
    }

    #[test]
    fn binary_input_is_told_from_text() {
        assert!(looks_binary(b"ELF\x7f\x00\x01"));
        assert!(looks_binary(&[0xff; 64]));
        assert!(!looks_binary(b"plain text\n"));
        assert!(!looks_binary("caf\u{e9} \u{1f980}".as_bytes()));
        // One Latin-1 letter in a line of text, and a character cut by the block's end.
        assert!(!looks_binary(
            b"na\xefve log line that is otherwise plain ascii text"
        ));
        assert!(!looks_binary(&"\u{1f980}".as_bytes()[..2]));
        // A short line with one bad byte (it used to be counted a binary blob and dropped).
        assert!(!looks_binary(b"caf\xe9 failed"));
        assert!(looks_binary(&[0xfe; 6]));
        assert_eq!(
            binary_summary(3, 0xabc),
            "binary input, 3 bytes (crc32 00000abc); not distilled as text"
        );
    }

    #[test]
    fn smoke_vector_matches_the_specification() {
        let distilled = draft(
            "smoke",
            Some("thread/epiphany/update"),
            "  live smoke returned revision 1  ",
        );
        assert_eq!(distilled.observation.id, "obs-443e1ad007f7");
        assert_eq!(distilled.evidence.id, "ev-443e1ad007f7");
        assert_eq!(distilled.evidence.kind, "verification");
        assert_eq!(
            distilled.observation.summary,
            "thread/epiphany/update: live smoke returned revision 1"
        );
        assert_eq!(distilled.observation.evidence_ids, vec!["ev-443e1ad007f7"]);
    }

    #[test]
    fn the_draft_says_when_its_summary_leaves_text_out() {
        let short = draft("note", None, "all of it");
        assert!(!short.shortened);
        assert_eq!(short.text_chars, 9);
        assert!(!draft("note", Some("subject"), "all of it").shortened);
        let long = draft("note", None, &"word ".repeat(100));
        assert!(long.shortened);
        assert_eq!(long.text_chars, 500);
        let salient = draft("shell-tool", None, "noise\ntest result: ok\nmore noise");
        assert!(salient.shortened);
    }

    #[test]
    fn tool_vector_matches_the_specification() {
        let distilled = draft("tool", None, "hello world");
        assert_eq!(distilled.observation.id, "obs-1562498e2366");
        assert_eq!(distilled.evidence.id, "ev-1562498e2366");
        assert_eq!(distilled.evidence.kind, "tool-output");
        assert_eq!(distilled.observation.summary, "hello world");
    }

    #[test]
    fn result_lines_outrank_the_rest() {
        let text = "Compiling epiphany v0.1.0\nrunning 36 tests\nlots of harmless output\n\
                    test result: ok. 36 passed; 0 failed; 0 ignored\r\nFinished `test` profile\n";
        let distilled = draft("shell-tool", Some("cargo test"), text);
        assert_eq!(
            distilled.observation.summary,
            "cargo test: test result: ok. 36 passed; 0 failed; 0 ignored | Finished `test` profile"
        );
        assert_eq!(distilled.evidence.kind, "tool-output");
    }

    #[test]
    fn warning_only_output_keeps_the_warning() {
        let text =
            "compiling fixture\nwarning: suspicious configuration\ngenerated intermediate files";
        let distilled = draft("shell-tool", Some("cargo check"), text);
        assert_eq!(
            distilled.observation.summary,
            "cargo check: warning: suspicious configuration"
        );
    }

    #[test]
    fn at_most_three_salient_lines_in_input_order() {
        let text = "error one\nwarning two\nERROR three\n\n  exit   code 2 \nfailed five";
        let distilled = draft("command", None, text);
        assert_eq!(
            distilled.observation.summary,
            "error one | ERROR three | exit code 2"
        );
    }

    #[test]
    fn without_markers_the_first_two_lines_stand_in() {
        let distilled = draft("assistant", None, "\n  first  line \n\nsecond\nthird\n");
        assert_eq!(distilled.observation.summary, "first line | second");
        assert_eq!(distilled.evidence.kind, "model-output");
        let single = draft("model-output", None, "one single line");
        assert_eq!(single.observation.summary, "one single line");
    }

    #[test]
    fn other_sources_summarise_the_collapsed_text() {
        let distilled = draft("note", Some(" the  subject "), "error here\nand there");
        assert_eq!(
            distilled.observation.summary,
            "the subject: error here and there"
        );
        assert_eq!(distilled.evidence.kind, "observation");
    }

    #[test]
    fn evidence_kind_defaults_follow_the_table_in_order() {
        let cases = [
            ("tool-test", "verification"),
            ("Smoke", "verification"),
            ("verification-run", "verification"),
            ("shell-tool", "tool-output"),
            ("COMMAND", "tool-output"),
            ("model", "model-output"),
            ("assistant-note", "model-output"),
            ("human", "observation"),
        ];
        for (source_kind, kind) in cases {
            assert_eq!(default_evidence_kind(source_kind), kind, "{source_kind}");
        }
        let explicit = DistillRequest::new("tool", "ok", None, Some("  custom  kind "), vec![])
            .and_then(|request| request.distill(TextDigest::of("x")))
            .expect("distill");
        assert_eq!(explicit.evidence.kind, "custom kind");
        let blank = DistillRequest::new("tool", "ok", None, Some("  "), vec![])
            .and_then(|request| request.distill(TextDigest::of("x")))
            .expect("distill");
        assert_eq!(blank.evidence.kind, "tool-output");
    }

    #[test]
    fn validation_runs_in_order() {
        assert_eq!(
            DistillRequest::new(" \t", "", None, None, vec![]),
            Err(DistillError::EmptySourceKind)
        );
        assert_eq!(
            DistillRequest::new("tool", " \n", None, None, vec![]),
            Err(DistillError::EmptyStatus)
        );
        let request = DistillRequest::new("tool", "ok", None, None, vec![]).expect("request");
        assert_eq!(
            request.distill(TextDigest::of(" \n\r\n ")),
            Err(DistillError::EmptyText)
        );
    }

    #[test]
    fn same_input_same_ids_and_subject_changes_them() {
        let (plain, spaced) = (draft("note", None, "x y"), draft("note", None, " x\n y "));
        assert_eq!(
            (plain.observation, plain.evidence),
            (spaced.observation, spaced.evidence)
        );
        // Lines matter to the summary of tool output, never to the ids.
        let (joined, split) = (draft("tool", None, "x y"), draft("tool", None, "x\ny"));
        assert_eq!(joined.observation.id, split.observation.id);
        assert_eq!(split.observation.summary, "x | y");
        assert_ne!(
            draft("tool", None, "x").observation.id,
            draft("tool", Some("s"), "x").observation.id
        );
    }

    #[test]
    fn summaries_are_cut_at_the_limit() {
        let long = "a".repeat(400);
        let summary = draft("note", Some("subject"), &long).observation.summary;
        assert_eq!(summary.chars().count(), SUMMARY_LIMIT);
        assert!(summary.starts_with("subject: aaa") && summary.ends_with("aaa..."));
    }

    #[test]
    fn the_fingerprint_sees_only_the_first_4096_scalars() {
        let base = "word ".repeat(1000);
        let longer = format!("{base} and more that differs");
        let other = format!("{base} entirely different tail");
        assert_eq!(
            draft("tool", None, &longer).observation.id,
            draft("tool", None, &other).observation.id
        );
        let exact = "b".repeat(FINGERPRINT_TEXT_LIMIT);
        let one_more = "b".repeat(FINGERPRINT_TEXT_LIMIT + 1);
        assert_ne!(
            draft("tool", None, &exact).observation.id,
            draft("tool", None, &one_more).observation.id
        );
    }

    #[test]
    fn chunking_never_changes_the_result() {
        let text = "  Compiling x\r\nwarn\u{2003}ing: soon\n\nerr\tor in é line\nlast   words ";
        let whole = DistillRequest::new("shell", "ok", None, None, vec![])
            .and_then(|request| request.distill(TextDigest::of(text)))
            .expect("whole");
        for size in 1..8 {
            let pieces = DistillRequest::new("shell", "ok", None, None, vec![])
                .and_then(|request| request.distill(digest_in_pieces(text, size)))
                .expect("pieces");
            assert_eq!(pieces, whole, "piece size {size}");
        }
        assert_eq!(whole.observation.summary, "Compiling x | warn ing: soon");
    }

    #[test]
    fn markers_split_across_chunks_are_found() {
        let mut digest = TextDigest::default();
        for piece in ["noise then tes", "t res", "ult: ok\n", "plain\n"] {
            digest.push(piece);
        }
        let distilled = DistillRequest::new("tool", "ok", None, None, vec![])
            .and_then(|request| request.distill(digest))
            .expect("distill");
        assert_eq!(distilled.observation.summary, "noise then test result: ok");
    }

    #[test]
    fn a_settled_digest_ignores_the_rest() {
        let head = format!("{}\nerror 1\nerror 2\nerror 3\n", "word ".repeat(1000));
        let mut digest = TextDigest::of(&head);
        assert!(digest.is_settled());
        digest.push("error 4\nwarning\n");
        let request = DistillRequest::new("tool", "ok", None, None, vec![]).expect("request");
        let settled = request.clone().distill(digest).expect("distill");
        let whole = request
            .distill(TextDigest::of(&format!("{head}error 4\nwarning\n")))
            .expect("distill");
        assert_eq!(settled, whole);
        assert_eq!(settled.observation.summary, "error 1 | error 2 | error 3");
    }

    #[test]
    fn a_huge_line_keeps_only_what_the_summary_needs() {
        let line = format!("error {}", "x".repeat(100_000));
        let mut digest = TextDigest::default();
        digest.push(&line);
        assert_eq!(digest.line.shown.text.chars().count(), SUMMARY_LIMIT + 1);
        assert_eq!(
            digest.collapsed.text.chars().count(),
            FINGERPRINT_TEXT_LIMIT + 1
        );
        let distilled = DistillRequest::new("tool", "ok", None, None, vec![])
            .and_then(|request| request.distill(digest))
            .expect("distill");
        // The word the digest's cut went through may be a credential's start: it goes.
        assert_eq!(distilled.observation.summary, "error...");
        assert!(distilled.shortened);
    }

    #[test]
    fn secrets_are_redacted_whole_before_the_summary_is_cut() {
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        // Cut first, 26 of the token's 42 characters would be stored.
        let text = format!("{} {token} tail", "a".repeat(290));
        let distilled = draft("test", None, &text);
        assert_eq!(
            distilled.observation.summary,
            format!("{} [REDACTED:github_token] tail", "a".repeat(290))
        );
        assert_eq!(distilled.evidence.summary, distilled.observation.summary);
        assert_eq!(distilled.redactions.get("github_token"), Some(&1));
        assert!(!distilled.shortened);
        // The marker is longer than the key; the summary still keeps to the limit.
        for width in 280..320 {
            let text = format!("{} AKIAIOSFODNN7EXAMPLE tail", "a".repeat(width));
            let summary = draft("test", None, &text).observation.summary;
            assert!(summary.chars().count() <= SUMMARY_LIMIT, "{summary}");
            assert!(!summary.contains("AKIA"), "{summary}");
        }
    }

    #[test]
    fn a_line_cut_by_the_digest_loses_the_word_the_cut_went_through() {
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        // The salient line is kept to 321 scalars, which ends inside the token.
        let line = format!("error {} {token} tail", "a".repeat(300));
        let distilled = draft("shell-tool", None, &format!("{line}\nfinished"));
        let summary = &distilled.observation.summary;
        assert!(
            !summary.contains("ghp_") && !summary.contains("12345"),
            "{summary}"
        );
        assert!(
            summary.starts_with(&format!("error {}...", "a".repeat(300))),
            "{summary}"
        );
        assert!(summary.chars().count() <= SUMMARY_LIMIT, "{summary}");
        // The same for the collapsed text of other sources, cut at the fingerprint limit,
        // once a private key block before it is redacted.
        let key = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}Q\n-----END RSA PRIVATE KEY-----",
            "MIIEabc0".repeat(502)
        );
        // The token starts at scalar 4080: 17 of its characters are within the limit.
        let text = format!("{key}\n{token}");
        assert_eq!(text.find("ghp_"), Some(4080));
        let distilled = draft("note", None, &text);
        assert_eq!(distilled.observation.summary, "[REDACTED:private_key]...");
        assert_eq!(distilled.redactions.get("private_key"), Some(&1));
    }

    #[test]
    fn code_refs_go_on_both_records() {
        let code_refs = vec![CodeRef::to_path("src/lib.rs")];
        let distilled = DistillRequest::new("tool", "ok", None, None, code_refs.clone())
            .and_then(|request| request.distill(TextDigest::of("x")))
            .expect("distill");
        assert_eq!(distilled.observation.code_refs, code_refs);
        assert_eq!(distilled.evidence.code_refs, code_refs);
        let patch = distilled.into_patch();
        assert_eq!(patch.observations.len(), 1);
        assert_eq!(patch.evidence.len(), 1);
    }
}
