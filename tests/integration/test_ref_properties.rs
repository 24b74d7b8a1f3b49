//! One judge for "a reference holds", as a property: a reference the write path accepts is
//! fresh on the unchanged tree, for generated references of every shape (a whole definition,
//! its first line alone, a part of it, a window around it, its symbol alone, lines alone) to
//! every definition (nested ones and two on one line included) of real files in all eight
//! parsed languages: the code-map fixtures, `tests/fixtures/refs/` and this repository's own
//! sources. The write path is `code_refs::audit_refs` on the files as a patch cites them; the
//! reading is freshness's, on the files as the whole state cites them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;

use crate::common::TestEnv;
use epiphany::code_refs::RefAudit;
use epiphany::code_refs::Resolver;
use epiphany::code_refs::audit_refs;
use epiphany::code_refs::read_cited_files;
use epiphany::policy::code_ref::Asked;
use epiphany::policy::code_ref::OwnerRef;
use epiphany::policy::code_ref::RefOwner;
use epiphany::policy::code_ref::parse_code_ref;
use epiphany::policy::freshness::CertificateStatus;
use epiphany::policy::freshness::certify_by_fingerprints;
use epiphany::policy::recheck::recheck_one;
use epiphany::search::syntax;
use epiphany::state::model::CodeRef;
use epiphany::state::model::GraphKind;
use epiphany::state::model::Observation;
use proptest::prelude::*;
use proptest::test_runner::Config;
use proptest::test_runner::RngAlgorithm;
use proptest::test_runner::TestRng;
use proptest::test_runner::TestRunner;

/// A file to cite: the root it is cited under, its path there, its line count and its
/// definitions as (name, first line, last line).
#[derive(Debug)]
struct Source {
    root: PathBuf,
    path: String,
    lines: u32,
    definitions: Vec<(String, u32, u32)>,
}

/// What a generated reference cites of its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    Whole,
    FirstLine,
    Part,
    Window,
    SymbolAlone,
    LinesAlone,
}

const SHAPES: [Shape; 6] = [
    Shape::Whole,
    Shape::FirstLine,
    Shape::Part,
    Shape::Window,
    Shape::SymbolAlone,
    Shape::LinesAlone,
];

/// The project's own sources that are cited too: real Rust of every size.
const OWN_SOURCES: [&str; 5] = [
    "src/policy/code_ref/judge.rs",
    "src/code_refs/mod.rs",
    "src/search/syntax/mod.rs",
    "src/policy/freshness/watch.rs",
    "src/state/model/records.rs",
];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_below(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = (std::fs::read_dir(dir).expect("fixture dir"))
        .map(|entry| entry.expect("entry").path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            files_below(&entry, found);
        } else {
            found.push(entry);
        }
    }
}

fn source(root: &Path, path: &str) -> Source {
    let text = std::fs::read_to_string(root.join(path)).expect("source text");
    let definitions = (syntax::definitions(path, &text)
        .expect("a parsed language")
        .into_iter())
    .filter(|d| (d.name.chars()).all(|c| c.is_alphanumeric() || c == '_' || c == '$'))
    .map(|d| (d.name, d.start_line, d.end_line))
    .collect();
    Source {
        root: root.to_path_buf(),
        path: path.to_owned(),
        lines: u32::try_from(text.lines().count()).expect("lines"),
        definitions,
    }
}

/// Every file cited: each language's code-map fixtures, the files of
/// `tests/fixtures/refs/`, and [`OWN_SOURCES`].
fn corpus() -> Vec<Source> {
    let fixtures = manifest_dir().join("tests/fixtures");
    let mut roots: Vec<PathBuf> = (std::fs::read_dir(fixtures.join("code-map")).expect("code-map"))
        .map(|entry| entry.expect("entry").path())
        .collect();
    roots.sort();
    roots.push(fixtures.join("refs"));
    let mut sources = Vec::new();
    for root in roots {
        let mut files = Vec::new();
        files_below(&root, &mut files);
        for file in files {
            let path = file.strip_prefix(&root).expect("below root");
            sources.push(source(&root, &path.to_string_lossy()));
        }
    }
    let own = manifest_dir();
    sources.extend(OWN_SOURCES.iter().map(|path| source(&own, path)));
    sources
}

/// The reference `shape` makes to `definition` of `source`, `a` and `b` choosing its lines.
fn reference(
    source: &Source,
    (name, first, last): &(String, u32, u32),
    shape: Shape,
    a: u32,
    b: u32,
) -> String {
    let path = &source.path;
    let (first, last) = (*first, *last);
    match shape {
        Shape::Whole => format!("{path}:{first}-{last}#{name}"),
        Shape::FirstLine => format!("{path}:{first}#{name}"),
        Shape::Part if last > first => {
            let start = first + 1 + a % (last - first);
            let end = start + b % (last - start + 1);
            format!("{path}:{start}-{end}#{name}")
        }
        Shape::Part => format!("{path}:{first}-{last}#{name}"),
        // A window starts before the definition (one that starts on its first line and ends
        // elsewhere cited all of it before it grew or shrank, docs/freshness.md).
        Shape::Window if first > 1 => {
            let start = first.saturating_sub(1 + a % 3).max(1);
            let end = (last + b % 4).min(source.lines);
            format!("{path}:{start}-{end}#{name}")
        }
        Shape::Window => format!("{path}:{first}-{last}#{name}"),
        Shape::SymbolAlone => format!("{path}#{name}"),
        Shape::LinesAlone => format!("{path}:{first}-{last}"),
    }
}

/// How many references of each shape were generated and accepted.
#[derive(Default)]
struct Tally {
    generated: BTreeMap<Shape, usize>,
    accepted: BTreeMap<Shape, usize>,
}

/// Writes `typed` as one patch would, then reads them as freshness does: every reference the
/// write accepted must hold and its record be certified unchanged. Returns the shapes accepted.
fn write_then_read(
    source: &Source,
    typed: &[(Shape, String)],
) -> Result<Vec<Shape>, TestCaseError> {
    let resolver = Resolver::new(&source.root, &source.root, false);
    let mut refs: Vec<CodeRef> = (typed.iter())
        .map(|(_, text)| parse_code_ref(text).expect("a well-formed reference"))
        .collect();
    let mut audit = RefAudit::default();
    let labelled = (refs.iter_mut().enumerate())
        .map(|(i, r)| (format!("ref{i}"), r))
        .collect();
    audit_refs(&resolver, labelled, false, &mut audit);
    let refused: BTreeSet<String> = (audit.problems.iter()).map(|p| p.path.clone()).collect();
    let accepted: Vec<(Shape, CodeRef)> = (typed.iter().zip(refs).enumerate())
        .filter(|(i, _)| !refused.contains(&format!("ref{i}")))
        .map(|(_, ((shape, _), r))| (*shape, r))
        .collect();

    let mut wanted: BTreeMap<String, Asked> = BTreeMap::new();
    for (_, r) in &accepted {
        wanted.entry(r.path.clone()).or_default().cite(r);
    }
    let cited = read_cited_files(&source.root, &wanted, None, syntax::Deadline::NONE);
    let holder = Observation {
        id: "o".into(),
        summary: "s".into(),
        source_kind: "test".into(),
        status: "ok".into(),
        code_refs: Vec::new(),
        evidence_ids: Vec::new(),
        supersedes: None,
    };
    for (shape, r) in &accepted {
        prop_assert!(
            r.fingerprint.is_some(),
            "{shape:?} {r:?} was not fingerprinted"
        );
        let file = &cited.files[&r.path];
        let finding = recheck_one(OwnerRef::Observation(&holder), r, file, None, None);
        prop_assert!(
            finding.is_none(),
            "{shape:?} accepted when written, then {finding:?}"
        );
    }
    let refs: Vec<CodeRef> = accepted.iter().map(|(_, r)| r.clone()).collect();
    let owner = RefOwner::Node {
        graph: GraphKind::Architecture,
        id: "n".into(),
    };
    if let Some(certificate) = certify_by_fingerprints(owner, &refs, "n", &BTreeMap::new(), &cited)
    {
        prop_assert_eq!(
            certificate.status,
            CertificateStatus::Unchanged,
            "{:?}",
            refs
        );
    }
    Ok(accepted.into_iter().map(|(shape, _)| shape).collect())
}

#[test]
fn a_reference_accepted_when_written_is_fresh_on_the_unchanged_tree() {
    let sources = corpus();
    let languages: BTreeSet<_> = (sources.iter())
        .filter_map(|s| syntax::grammar(&s.path))
        .map(|g| format!("{g:?}"))
        .collect();
    // TypeScript and TSX are one language with two grammars.
    assert_eq!(languages.len(), 9, "{languages:?}");
    let tally = RefCell::new(Tally::default());
    let case = (
        0..sources.len(),
        proptest::collection::vec(
            (any::<usize>(), 0..SHAPES.len(), any::<u32>(), any::<u32>()),
            1..8,
        ),
    );
    let config = Config {
        cases: 1500,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let outcome = runner.run(&case, |(file, picks)| {
        let source = &sources[file];
        if source.definitions.is_empty() {
            return Ok(());
        }
        let typed: Vec<(Shape, String)> = (picks.iter())
            .map(|&(def, shape, a, b)| {
                let definition = &source.definitions[def % source.definitions.len()];
                let shape = SHAPES[shape];
                (shape, reference(source, definition, shape, a, b))
            })
            .collect();
        let accepted = write_then_read(source, &typed)?;
        let mut tally = tally.borrow_mut();
        for (shape, _) in &typed {
            *tally.generated.entry(*shape).or_default() += 1;
        }
        for shape in accepted {
            *tally.accepted.entry(shape).or_default() += 1;
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    // The property must not hold by refusing: every shape is accepted.
    let tally = tally.into_inner();
    let total: usize = tally.generated.values().sum();
    assert!(total > 5000, "only {total} references generated");
    for shape in SHAPES {
        let generated = tally.generated.get(&shape).copied().unwrap_or(0);
        let accepted = tally.accepted.get(&shape).copied().unwrap_or(0);
        assert!(
            accepted * 10 >= generated * 8,
            "{shape:?}: {accepted} of {generated} accepted"
        );
    }
}

/// How a generated edit changes a cited definition's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Edit {
    /// A comment line inserted after a line of the definition, before its last.
    LineInside,
    /// A comment added at the end of one of its lines.
    TrailingComment,
}

/// `text` with the edit `pick` chooses inside lines `first..=last` (1-based), or `None` when the
/// definition has no line the edit can safely go to.
fn edit_inside(
    text: &str,
    path: &str,
    (first, last): (u32, u32),
    pick: usize,
) -> Option<(Edit, String)> {
    let comment = if path.ends_with(".py") { "#" } else { "//" };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let index = |line: u32| usize::try_from(line - 1).expect("line");
    let safe = |line: &str| !line.trim_end().ends_with('\\');
    let inside: Vec<u32> = (first..last).filter(|&k| safe(&lines[index(k)])).collect();
    if !inside.is_empty() {
        let after = inside[pick % inside.len()];
        let next = &lines[index(after + 1)];
        let indent = &next[..next.len() - next.trim_start().len()];
        lines.insert(index(after + 1), format!("{indent}{comment} edited {pick}"));
        return Some((Edit::LineInside, lines.join("\n") + "\n"));
    }
    let plain = |line: &str| safe(line) && !line.contains(['"', '\'', '`']) && !line.contains("/*");
    let candidates: Vec<u32> = (first..=last)
        .filter(|&k| plain(&lines[index(k)]))
        .collect();
    let line = *candidates.get(pick % candidates.len().max(1))?;
    lines[index(line)].push_str(&format!(" {comment} edited {pick}"));
    Some((Edit::TrailingComment, lines.join("\n") + "\n"))
}

/// Runs `freshness --fix | update`, as the hint says; a fix that finds nothing prints nothing.
fn fix_and_update(env: &TestEnv) {
    let fix = env.run(&["freshness", "--fix"]);
    assert_eq!(fix.code, 0, "{fix}");
    if !fix.stdout.trim().is_empty() {
        let update = env.run_with_stdin(&["update"], fix.stdout.clone());
        assert_eq!(update.code, 0, "{update}");
    }
}

fn check(env: &TestEnv) -> i32 {
    env.run(&["freshness", "--check"]).code
}

#[test]
fn an_edit_inside_a_cited_definition_stays_stale_until_rechecked() {
    let sources: Vec<Source> = corpus()
        .into_iter()
        .filter(|s| s.root != manifest_dir())
        .collect();
    let case = (
        0..sources.len(),
        any::<usize>(),
        0..SHAPES.len() - 1,
        any::<u32>(),
        any::<u32>(),
        any::<usize>(),
    );
    let config = Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    };
    let edits = RefCell::new(BTreeMap::<Edit, usize>::new());
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let outcome = runner.run(&case, |(file, def, shape, a, b, pick)| {
        let source = &sources[file];
        let Some(definition) = source
            .definitions
            .get(def % source.definitions.len().max(1))
        else {
            return Ok(());
        };
        let text = std::fs::read_to_string(source.root.join(&source.path)).expect("source");
        let Some((edit, edited)) =
            edit_inside(&text, &source.path, (definition.1, definition.2), pick)
        else {
            return Ok(());
        };
        let reference = reference(source, definition, SHAPES[shape], a, b);
        let env = TestEnv::new();
        env.write(&source.path, &text);
        env.commit_all("code");
        env.ok(&[
            "node",
            "set",
            "n",
            "--purpose",
            "cited",
            "--ref",
            &reference,
        ]);
        prop_assert_eq!(check(&env), 0, "{} fresh when written", reference);

        // Lines added above everything only move it: fixed, it stays certified.
        let comment = if source.path.ends_with(".py") {
            "#"
        } else {
            "//"
        };
        let moved = format!("{comment} moved\n{text}");
        env.write(&source.path, &moved);
        fix_and_update(&env);
        prop_assert_eq!(check(&env), 0, "{} after a move and its fix", reference);

        env.write(&source.path, format!("{comment} moved\n{edited}"));
        prop_assert_eq!(check(&env), 1, "{} after {:?}", reference, edit);
        fix_and_update(&env);
        prop_assert_eq!(
            check(&env),
            1,
            "{} after {:?} and --fix | update",
            reference,
            edit
        );
        env.ok(&["recheck", "n"]);
        prop_assert_eq!(check(&env), 0, "{} after recheck", reference);
        *edits.borrow_mut().entry(edit).or_default() += 1;
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    let edits = edits.into_inner();
    let total: usize = edits.values().sum();
    assert!(total >= 30 && edits.len() == 2, "{edits:?}");
}
