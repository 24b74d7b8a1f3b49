//! `distill`'s tests: the specification's vectors, the digest in chunks, secrets, and outputs
//! captured from real test runners and compilers (tests/fixtures/tool_output/).

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
    let text = "compiling fixture\nwarning: suspicious configuration\ngenerated intermediate files";
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
        Err(BlankField::SourceKind)
    );
    assert_eq!(
        DistillRequest::new("tool", " \n", None, None, vec![]),
        Err(BlankField::Status)
    );
    let request = DistillRequest::new("tool", "ok", None, None, vec![]).expect("request");
    assert_eq!(
        request.distill(TextDigest::of(" \n\r\n ")),
        Err(BlankField::Text)
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
fn the_last_totals_line_stands_for_the_run_and_a_failing_one_outranks_passing_ones() {
    let text = "test result: ok. 3 passed; 0 failed\n\
                test result: FAILED. 1 passed; 1 failed\n\
                test result: ok. 0 passed; 0 failed\n";
    assert_eq!(
        draft("test", None, text).observation.summary,
        "test result: FAILED. 1 passed; 1 failed"
    );
    let passing = "test result: ok. 3 passed; 0 failed\ntest result: ok. 9 passed; 0 failed\n";
    assert_eq!(
        draft("test", None, passing).observation.summary,
        "test result: ok. 9 passed; 0 failed"
    );
    // Only source-output and verification kinds read results; a note stays as written.
    assert_eq!(
        draft("finding", None, "test result: ok. 3 passed\nbecause")
            .observation
            .summary,
        "test result: ok. 3 passed because"
    );
}

#[test]
fn code_refs_change_the_ids() {
    let with = |path: &str| {
        DistillRequest::new("note", "ok", None, None, vec![CodeRef::to_path(path)])
            .and_then(|request| request.distill(TextDigest::of("same text")))
            .expect("distill")
            .observation
            .id
    };
    assert_ne!(with("src/a.rs"), with("src/b.rs"));
    assert_ne!(
        with("src/a.rs"),
        draft("note", None, "same text").observation.id
    );
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

/// What `distill --source-kind test` keeps of each captured output: the totals, then what
/// failed and where.
#[test]
fn captured_runner_and_compiler_outputs_keep_totals_and_failures() {
    let cases = [
        (
            include_str!("../../../tests/fixtures/tool_output/cargo-test-failing.txt"),
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s | test tests::carries_into_the_next_digit ... FAILED | thread 'tests::carries_into_the_next_digit' (8327) panicked at src/lib.rs:21:9:",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/cargo-test-passing.txt"),
            "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s | Finished `test` profile [unoptimized + debuginfo] target(s) in 0.31s",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/cargo-nextest-failing.txt"),
            "Summary [ 0.019s] 3 tests run: 2 passed, 1 failed, 0 skipped | FAIL [ 0.009s] (3/3) rs tests::carries_into_the_next_digit | test tests::carries_into_the_next_digit ... FAILED | thread 'tests::carries_into_the_next_digit' (8360) panicked at src/lib.rs:21:9:",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/cargo-build-error.txt"),
            "error[E0425]: cannot find value `c` in this scope | --> src/lib.rs:2:13 | For more information about this error, try `rustc --explain E0425`.",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/pytest-failing.txt"),
            "1 failed, 2 passed in 0.07s | test_calc.py:14: AssertionError | FAILED test_calc.py::test_carries_into_the_next_digit - assert 10 == 11",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/go-test-failing.txt"),
            "FAIL example.com/calc 0.005s | --- FAIL: TestCarriesIntoTheNextDigit (0.00s) | calc_test.go:19: Add(5, 5) = 10, want 11",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/go-test-v-failing.txt"),
            "FAIL example.com/calc 0.004s | calc_test.go:19: Add(5, 5) = 10, want 11 | --- FAIL: TestCarriesIntoTheNextDigit (0.00s)",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/go-build-error.txt"),
            "FAIL example.com/calc [build failed] | ./calc.go:4:17: undefined: c",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/jest-failing.txt"),
            "Tests: 1 failed, 2 passed, 3 total | FAIL ./calc.test.js | ✕ carries into the next digit (9 ms) | ● add › carries into the next digit",
        ),
        (
            include_str!("../../../tests/fixtures/tool_output/vitest-failing.txt"),
            "Tests 1 failed | 2 passed (3) | FAIL vt/calc.test.mjs > add > carries into the next digit | AssertionError: expected 10 to be 11 // Object.is equality | ❯ vt/calc.test.mjs:13:23",
        ),
    ];
    for (output, summary) in cases {
        assert_eq!(draft("test", None, output).observation.summary, summary);
        assert_eq!(
            draft("shell-tool", None, output).observation.summary,
            summary
        );
    }
}
