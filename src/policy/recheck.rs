//! Claims re-checked mechanically: every code reference the state holds, against the work tree
//! as it is now. A reference can point at a file that is gone (`missing`), that git saw renamed
//! (`renamed`), a symbol that no longer occurs (`symbol_missing`), a symbol that now occurs at
//! other lines (`moved_lines`), or lines past the end of a file that shrank (`lines_past_end`).
//! Where the file's language is parsed, a symbol means its definition: `symbol_missing` when
//! no definition is left (a mention in a comment does not count), `moved_lines` when the
//! reference's lines are no longer the definition's span ([`range_holds`]), and re-anchoring
//! takes the definition's span.
//!
//! Renames and moved lines can be repaired mechanically; [`reanchor_patch`] drafts the patch
//! that does it (it writes nothing: re-anchoring happens only through a write that rewrites the
//! record). Graphs and the investigation checkpoint are rewritten wholesale by a patch, so their
//! findings can be fixed and fail `freshness --check`. Observations and evidence are appended
//! once and kept as written — a record of what was seen then — so their findings are reported
//! but do not fail the check ([`RefFinding::blocking`]). A reference marked `planned` (its file
//! was still to be written) reads as `planned` until the file exists.
//!
//! Pure: the caller reads the cited files and hands in what it found.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::collections::HashSet;

use crate::policy::code_ref::Asked;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::OwnerRef;
use crate::policy::code_ref::RefFindingKind;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::fingerprint_in;
use crate::policy::code_ref::format_code_ref;
use crate::policy::code_ref::graph_code_refs_mut;
use crate::policy::code_ref::judge;
use crate::policy::code_ref::visit_state_code_refs;
use crate::state::model::CodeRef;
use crate::state::model::GraphKind;
use crate::state::model::Graphs;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Recheck;
use crate::state::patch::Upsert;
use crate::state::problem::Problem;

/// One stored reference that no longer says what is true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefFinding {
    /// What is wrong.
    pub kind: RefFindingKind,
    /// The record that carries the reference.
    pub owner: RefOwner,
    /// The reference as stored.
    pub code_ref: CodeRef,
    /// Where git followed the file, for `renamed`.
    pub renamed_to: Option<String>,
    /// Where the symbol occurs now, for `moved_lines` (where its definitions start, where the
    /// language is parsed).
    pub symbol_lines: Vec<u32>,
    /// The reference re-anchored mechanically, when that is possible.
    pub reanchored: Option<CodeRef>,
    /// Whether it fails `freshness --check`: the record can be rewritten (graphs, the
    /// checkpoint) and the reference is not a plan.
    pub blocking: bool,
}

impl RefFinding {
    /// Whether `freshness --fix` repairs it: its record can be rewritten, it has a repair, and
    /// the repair carries what was checked of it (a reference written before fingerprints
    /// carries the fingerprint of its text at its record's commit, when git has that; else only
    /// a re-read repairs it: `epiphany recheck`).
    pub fn fixable(&self) -> bool {
        self.owner.is_rewritable()
            && self.reanchored.as_ref().is_some_and(|repair| {
                repair.fingerprint.is_some() || self.owner.anchor_key().is_none()
            })
    }
}

/// The references' re-check in the freshness report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReferenceFreshness {
    /// Whether the work tree was read at all.
    pub checked: bool,
    /// References re-checked.
    pub checked_ref_count: usize,
    /// Files read: the cited paths, and the paths git renamed them to.
    pub cited_file_count: usize,
    /// Every reference that no longer holds, in state order (graphs, checkpoint,
    /// observations, evidence).
    pub findings: Vec<RefFinding>,
    /// Findings that fail the check.
    pub blocking_count: usize,
    /// Findings `freshness --fix` can repair.
    pub fixable_count: usize,
    /// References citing a symbol in a file whose parse ran out of the command's time, as
    /// `record: ref`, in state order: not judged, so neither found broken nor certified.
    pub unjudged: Vec<String>,
    /// How many of them the check cannot pass with (on the graphs or the checkpoint).
    pub unjudged_blocking_count: usize,
    /// References citing a symbol in a file too large to parse, as `record: ref`, in state
    /// order: judged by the lines the symbol occurs on.
    pub judged_by_lines: Vec<String>,
    /// What it means.
    pub note: String,
}

/// What the caller read from the work tree for the re-check: every cited path (and every path
/// git renamed one to), with the symbols asked about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitedFiles {
    /// Cited path (repository-relative, as stored) → what is there now.
    pub files: HashMap<String, CitedFile>,
    /// Files of a parsed language whose parse the command's time ran out before: a reference
    /// citing a symbol there is not judged at all (neither found broken nor certified: judged
    /// by its lines it could be either wrongly), and is named.
    pub unjudged: BTreeSet<String>,
    /// Files of a parsed language too large to parse: a reference citing a symbol there is
    /// judged by the lines the symbol occurs on, as the write path judged it, and is named.
    pub by_lines: BTreeSet<String>,
}

impl CitedFiles {
    /// Whether `code_ref`, read at `path`, cites a symbol in a file whose parse was cut short.
    pub fn is_unjudged(&self, code_ref: &CodeRef, path: &str) -> bool {
        code_ref.symbol.is_some() && self.unjudged.contains(path)
    }
}

/// The paths the re-check needs read, each with what its references ask of it ([`Asked`]):
/// every cited path, plus, for a cited path git renamed, the new path asked the same.
pub fn paths_to_read(state: &State, renames: &BTreeMap<String, String>) -> BTreeMap<String, Asked> {
    // Gathered by borrowed path (tens of thousands of references, a few hundred files).
    let mut borrowed: HashMap<&str, Asked> = HashMap::new();
    visit_state_code_refs(state, |_, code_ref| {
        borrowed
            .entry(code_ref.path.as_str())
            .or_default()
            .cite(code_ref);
    });
    let mut wanted: BTreeMap<String, Asked> = borrowed
        .into_iter()
        .map(|(path, asked)| (path.to_owned(), asked))
        .collect();
    let renamed: Vec<(String, Asked)> = wanted
        .iter()
        .filter_map(|(path, asked)| Some((renames.get(path)?.clone(), asked.clone())))
        .collect();
    for (path, asked) in renamed {
        wanted.entry(path).or_default().merge(&asked);
    }
    wanted
}

/// Re-checks every reference of the state against the cited files (`None`: the work tree was
/// not read). `renames` is git's old path → new path; `earlier` gives a cited file as it was
/// when the record under an anchor key (docs/store.md#anchors) was written, where it was read.
pub fn recheck_references<'c>(
    state: Option<&State>,
    cited: Option<&CitedFiles>,
    renames: &BTreeMap<String, String>,
    earlier: &dyn Fn(&str, &str) -> Option<&'c CitedFile>,
) -> ReferenceFreshness {
    let (Some(state), Some(cited)) = (state, cited) else {
        return ReferenceFreshness {
            note: "references not re-checked".to_owned(),
            ..ReferenceFreshness::default()
        };
    };
    let mut findings = Vec::new();
    let mut checked_ref_count = 0;
    let (mut unjudged, mut unjudged_blocking_count, mut judged_by_lines) =
        (Vec::new(), 0, Vec::new());
    // A superseded observation was read again: its successor carries the references that count.
    let superseded: HashSet<&str> = (state.observations.iter())
        .filter_map(|o| o.supersedes.as_deref())
        .collect();
    visit_state_code_refs(state, |owner, code_ref| {
        if let OwnerRef::Observation(observation) = owner
            && superseded.contains(observation.id.as_str())
        {
            return;
        }
        let file = cited
            .files
            .get(&code_ref.path)
            .unwrap_or(&CitedFile::Missing);
        let renamed = renames.get(&code_ref.path).and_then(|to| {
            let target = cited.files.get(to)?;
            matches!(target, CitedFile::File { .. } | CitedFile::Directory)
                .then_some((to.as_str(), target))
        });
        let read_at = match (file, renamed) {
            (CitedFile::Missing, Some((to, _))) => to,
            _ => code_ref.path.as_str(),
        };
        let named = || format!("{}: {}", owner.to_owner().key(), format_code_ref(code_ref));
        if cited.is_unjudged(code_ref, read_at) {
            unjudged.push(named());
            unjudged_blocking_count += usize::from(owner.to_owner().is_rewritable());
            return;
        }
        if code_ref.symbol.is_some() && cited.by_lines.contains(read_at) {
            judged_by_lines.push(named());
        }
        checked_ref_count += 1;
        let then = owner
            .anchor_key()
            .and_then(|key| earlier(&key, &code_ref.path));
        findings.extend(recheck_one(owner, code_ref, file, renamed, then));
    });
    let blocking_count = findings.iter().filter(|f| f.blocking).count();
    let fixable_count = findings.iter().filter(|f| f.fixable()).count();
    let mut note = references_note(&findings, blocking_count, fixable_count, checked_ref_count);
    if !unjudged.is_empty() {
        note.push_str(&format!(
            "; {} not judged: parsing their files ran out of time",
            unjudged.len()
        ));
    }
    if !judged_by_lines.is_empty() {
        note.push_str(&format!(
            "; {} judged by the lines their symbol occurs on: their files are too large to parse",
            judged_by_lines.len()
        ));
    }
    ReferenceFreshness {
        checked: true,
        checked_ref_count,
        cited_file_count: cited.files.len(),
        findings,
        blocking_count,
        fixable_count,
        unjudged,
        unjudged_blocking_count,
        judged_by_lines,
        note,
    }
}

/// The finding for one reference, if it no longer holds: [`judge`]'s verdict on `file`, or on
/// the file git renamed it to (`renamed`) when it is gone. `earlier` is its file as it was when
/// the record was written, when known, so that a repair keeps the part of a definition it cited.
/// The owner is named (copied) only for a reference that does not hold.
pub fn recheck_one(
    owner: OwnerRef<'_>,
    code_ref: &CodeRef,
    file: &CitedFile,
    renamed: Option<(&str, &CitedFile)>,
    earlier: Option<&CitedFile>,
) -> Option<RefFinding> {
    // A reference written before fingerprints is repaired with the fingerprint of what it cited
    // when its record was written, so that the repair certifies nothing new.
    let checked = |repair: CodeRef| match &code_ref.fingerprint {
        Some(_) => repair,
        None => CodeRef {
            fingerprint: earlier.and_then(|earlier| fingerprint_in(code_ref, earlier)),
            ..repair
        },
    };
    let finding = |kind, renamed_to, symbol_lines, reanchored: Option<CodeRef>| RefFinding {
        blocking: kind != RefFindingKind::Planned && owner.to_owner().is_rewritable(),
        kind,
        owner: owner.to_owner(),
        code_ref: code_ref.clone(),
        renamed_to,
        symbol_lines,
        reanchored: reanchored.map(checked),
    };
    match (file, renamed) {
        (CitedFile::Missing, _) if code_ref.planned => {
            Some(finding(RefFindingKind::Planned, None, Vec::new(), None))
        }
        (CitedFile::Missing, Some((to, target))) => {
            let moved = CodeRef {
                path: to.to_owned(),
                ..code_ref.clone()
            };
            // Follow the symbol into the renamed file when it moved there too.
            let reanchored = match judge(&moved, target, earlier) {
                Ok(_) => moved,
                Err(breach) => breach.repair.unwrap_or(moved),
            };
            Some(finding(
                RefFindingKind::Renamed,
                Some(to.to_owned()),
                Vec::new(),
                Some(reanchored),
            ))
        }
        _ => {
            let breach = judge(code_ref, file, earlier).err()?;
            Some(finding(
                breach.kind,
                None,
                breach.symbol_lines,
                breach.repair,
            ))
        }
    }
}

fn references_note(
    findings: &[RefFinding],
    blocking: usize,
    fixable: usize,
    total: usize,
) -> String {
    if findings.is_empty() {
        return format!("all {total} code references hold");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for finding in findings {
        *counts.entry(finding.kind.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = counts
        .into_iter()
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    let mut note = format!(
        "{} of {total} code references no longer hold ({})",
        findings.len(),
        counts.join(", ")
    );
    if blocking < findings.len() {
        note.push_str(&format!(
            "; {} on observations, evidence or plans are reported only",
            findings.len() - blocking
        ));
    }
    if fixable > 0 {
        note.push_str(&format!(
            "; {fixable} can be re-anchored: `epiphany freshness --fix | epiphany update`"
        ));
    }
    note
}

/// The patch that re-anchors every fixable finding on the graphs and the investigation
/// checkpoint (renamed paths, moved or cut line ranges): each graph node, edge or link it
/// touches is upserted whole, nothing else of the map is restated, and the checkpoint is
/// replaced; `None` when there is nothing to fix. Writes nothing.
pub fn reanchor_patch(state: &State, findings: &[RefFinding]) -> Option<Patch> {
    let fixes: Vec<(&RefOwner, &CodeRef, &CodeRef)> = findings
        .iter()
        .filter(|f| f.fixable())
        .filter_map(|f| Some((&f.owner, &f.code_ref, f.reanchored.as_ref()?)))
        .collect();
    if fixes.is_empty() {
        return None;
    }
    let fix = |owner: &RefOwner, code_ref: &mut CodeRef| {
        if let Some((_, _, fixed)) = fixes
            .iter()
            .find(|(o, old, _)| *o == owner && *old == &*code_ref)
        {
            *code_ref = (*fixed).clone();
            true
        } else {
            false
        }
    };
    let mut graphs = state.graphs.clone();
    for (owner, code_ref) in graph_code_refs_mut(&mut graphs) {
        fix(&owner, code_ref);
    }
    let upsert = changed_graph_records(&state.graphs, graphs);
    let mut checkpoint = state.investigation_checkpoint.clone();
    let mut checkpoint_fixed = false;
    if let Some(checkpoint) = checkpoint.as_mut() {
        let owner = RefOwner::InvestigationCheckpoint {
            id: checkpoint.brief.checkpoint_id.clone(),
        };
        for code_ref in &mut checkpoint.code_refs {
            checkpoint_fixed |= fix(&owner, code_ref);
        }
    }
    (!upsert.is_empty() || checkpoint_fixed).then(|| Patch {
        upsert,
        investigation_checkpoint: checkpoint.filter(|_| checkpoint_fixed).map(Box::new),
        ..Patch::default()
    })
}

/// The patch `epiphany recheck` writes for the graph nodes and checkpoint `recheck` names,
/// which someone read again and found still right: each is restated with every reference
/// fingerprinted anew (the fingerprint left out, for the write path to take from the code),
/// where `findings` (the references' re-check now) has a repair, moved there; with `recheck`
/// itself, which moves their anchors. A reference that no longer holds and has no repair (its
/// file or symbol is gone) cannot be certified: each is a problem, naming its record.
pub fn reread_patch(
    state: &State,
    recheck: Recheck,
    findings: &[RefFinding],
) -> Result<Patch, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut reread = |owner: RefOwner, code_refs: &mut Vec<CodeRef>| {
        for code_ref in code_refs.iter_mut().filter(|r| !r.planned) {
            let finding = (findings.iter()).find(|f| f.owner == owner && f.code_ref == *code_ref);
            match finding.map(|f| (f.kind, f.reanchored.as_ref())) {
                None => {}
                Some((_, Some(repair))) => *code_ref = repair.clone(),
                Some((kind, None)) => problems.push(Problem::new(
                    owner.key(),
                    format!(
                        "`{}` no longer holds ({}); cite where the code is now (`epiphany node set` or `checkpoint set` with `--ref`)",
                        format_code_ref(code_ref),
                        kind.as_str()
                    ),
                )),
            }
            code_ref.fingerprint = None;
        }
    };
    let mut upsert = Upsert::default();
    for (graph, nodes) in state.graphs.each() {
        let (ids, out) = match graph {
            GraphKind::Architecture => {
                (&recheck.architecture_nodes, &mut upsert.architecture_nodes)
            }
            GraphKind::Dataflow => (&recheck.dataflow_nodes, &mut upsert.dataflow_nodes),
        };
        for node in (nodes.nodes.iter()).filter(|node| ids.contains(&node.id)) {
            let mut node = node.clone();
            let owner = RefOwner::Node {
                graph,
                id: node.id.clone(),
            };
            reread(owner, &mut node.code_refs);
            out.push(node);
        }
    }
    let checkpoint = (state.investigation_checkpoint.as_ref())
        .filter(|_| recheck.investigation_checkpoint)
        .map(|checkpoint| {
            let mut checkpoint = checkpoint.clone();
            let owner = RefOwner::InvestigationCheckpoint {
                id: checkpoint.brief.checkpoint_id.clone(),
            };
            reread(owner, &mut checkpoint.code_refs);
            Box::new(checkpoint)
        });
    match problems.is_empty() {
        true => Ok(Patch {
            upsert,
            investigation_checkpoint: checkpoint,
            recheck,
            ..Patch::default()
        }),
        false => Err(problems),
    }
}

/// The graph records of `after` that differ from the same place in `before` (the same graphs
/// with some code references rewritten in place), as upserts.
fn changed_graph_records(before: &Graphs, after: Graphs) -> Upsert {
    fn changed<T: PartialEq>(before: &[T], after: Vec<T>) -> Vec<T> {
        after
            .into_iter()
            .zip(before)
            .filter_map(|(new, old)| (new != *old).then_some(new))
            .collect()
    }
    let Graphs {
        architecture,
        dataflow,
        links,
    } = after;
    Upsert {
        architecture_nodes: changed(&before.architecture.nodes, architecture.nodes),
        architecture_edges: changed(&before.architecture.edges, architecture.edges),
        dataflow_nodes: changed(&before.dataflow.nodes, dataflow.nodes),
        dataflow_edges: changed(&before.dataflow.edges, dataflow.edges),
        links: changed(&before.links, links),
        ..Upsert::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_ref::scan_text;
    use crate::policy::fixtures::checkpoint;
    use crate::policy::fixtures::edge;
    use crate::policy::fixtures::node;
    use crate::state::model::Disposition;
    use crate::state::model::GraphEdge;
    use crate::state::model::GraphKind;
    use crate::state::model::GraphLink;
    use crate::state::model::Observation;

    fn located(path: &str, start: u32, end: u32, symbol: &str) -> CodeRef {
        CodeRef {
            start_line: Some(start),
            end_line: Some(end),
            symbol: Some(symbol.into()),
            ..CodeRef::to_path(path)
        }
    }

    fn file(text: &str, symbols: &[&str]) -> CitedFile {
        scan_text(text, &symbols.iter().map(|s| (*s).to_owned()).collect())
    }

    const SOURCE: &str = "// one\n// two\nfn alpha() {}\nfn beta() {}\n";

    /// `code_ref` as a write stores it: with the fingerprint of what it cited then.
    fn checked(code_ref: CodeRef) -> CodeRef {
        CodeRef {
            fingerprint: Some("0123456789abcdef".into()),
            ..code_ref
        }
    }

    fn state() -> State {
        let mut state = State::default();
        let mut a = node("a", &[]);
        a.code_refs = vec![checked(located("src/a.rs", 1, 2, "alpha"))];
        let gone = node("gone", &["src/gone.rs"]);
        let mut moved = node("moved", &[]);
        moved.code_refs = vec![checked(CodeRef::to_path("src/old.rs"))];
        let mut b = node("b", &[]);
        b.code_refs = vec![located("src/a.rs", 4, 4, "beta")];
        state.graphs.architecture.nodes = vec![a, gone, moved, b];
        let mut planned = CodeRef::to_path("src/new.rs");
        planned.planned = true;
        state.investigation_checkpoint = Some(checkpoint(Disposition::ResumeReady, &[]));
        if let Some(ck) = state.investigation_checkpoint.as_mut() {
            ck.code_refs = vec![planned, located("src/a.rs", 9, 12, "ghost")];
        }
        state.observations = vec![Observation {
            id: "o".into(),
            summary: "s".into(),
            source_kind: "test".into(),
            status: "ok".into(),
            code_refs: vec![CodeRef::to_path("src/gone.rs")],
            evidence_ids: vec!["e".into()],
            supersedes: None,
        }];
        state
    }

    fn cited() -> (CitedFiles, BTreeMap<String, String>) {
        let renames = BTreeMap::from([("src/old.rs".to_owned(), "src/new_home.rs".to_owned())]);
        let wanted = paths_to_read(&state(), &renames);
        assert!(wanted.contains_key("src/new_home.rs"), "{wanted:?}");
        assert_eq!(
            wanted["src/a.rs"].symbols.iter().collect::<Vec<_>>(),
            vec!["alpha", "beta", "ghost"]
        );
        let files = wanted
            .iter()
            .map(|(path, asked)| {
                let symbols: Vec<&str> = asked.symbols.iter().map(String::as_str).collect();
                let found = match path.as_str() {
                    "src/a.rs" => file(SOURCE, &symbols),
                    "src/new_home.rs" => file("x\n", &symbols),
                    _ => CitedFile::Missing,
                };
                (path.clone(), found)
            })
            .collect();
        (
            CitedFiles {
                files,
                ..CitedFiles::default()
            },
            renames,
        )
    }

    #[test]
    fn every_kind_of_finding_in_state_order() {
        let state = state();
        let (cited, renames) = cited();
        let report = recheck_references(Some(&state), Some(&cited), &renames, &|_, _| None);
        let kinds: Vec<(&str, RefFindingKind, bool)> = report
            .findings
            .iter()
            .map(|f| (f.code_ref.path.as_str(), f.kind, f.blocking))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("src/a.rs", RefFindingKind::MovedLines, true),
                ("src/gone.rs", RefFindingKind::Missing, true),
                ("src/old.rs", RefFindingKind::Renamed, true),
                ("src/new.rs", RefFindingKind::Planned, false),
                ("src/a.rs", RefFindingKind::SymbolMissing, true),
                ("src/gone.rs", RefFindingKind::Missing, false),
            ]
        );
        assert_eq!(report.findings[0].symbol_lines, vec![3]);
        assert_eq!(
            report.findings[0]
                .reanchored
                .as_ref()
                .map(|r| (r.start_line, r.end_line)),
            Some((Some(3), Some(4)))
        );
        assert_eq!(
            report.findings[2].renamed_to.as_deref(),
            Some("src/new_home.rs")
        );
        assert_eq!(report.blocking_count, 4);
        assert_eq!(report.fixable_count, 2);
        assert_eq!(report.checked_ref_count, 7);
        assert!(
            report.note.contains("`epiphany freshness --fix"),
            "{}",
            report.note
        );
        assert_eq!(
            report.findings[5].owner,
            RefOwner::Observation { id: "o".into() }
        );
    }

    /// A symbol in a file whose parse ran out of time is not judged: its reference is neither
    /// found broken nor counted as checked, but named; a file too large to parse is judged by
    /// its lines and named.
    #[test]
    fn references_in_a_file_not_parsed_in_time_are_named_not_judged() {
        let state = state();
        let (mut late, renames) = cited();
        late.unjudged.insert("src/a.rs".to_owned());
        let report = recheck_references(Some(&state), Some(&late), &renames, &|_, _| None);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.code_ref.path != "src/a.rs"),
            "{:?}",
            report.findings
        );
        assert_eq!(
            report.unjudged,
            vec![
                "architecture_nodes/a: src/a.rs:1-2#alpha",
                "architecture_nodes/b: src/a.rs:4#beta",
                "investigation_checkpoint: src/a.rs:9-12#ghost",
            ]
        );
        assert_eq!(report.unjudged_blocking_count, 3);
        assert_eq!(report.checked_ref_count, 4);
        assert!(
            report
                .note
                .ends_with("; 3 not judged: parsing their files ran out of time")
        );

        let (mut large, renames) = cited();
        large.by_lines.insert("src/a.rs".to_owned());
        let report = recheck_references(Some(&state), Some(&large), &renames, &|_, _| None);
        assert_eq!(
            report.judged_by_lines.len(),
            3,
            "{:?}",
            report.judged_by_lines
        );
        assert_eq!(report.checked_ref_count, 7);
    }

    /// A repair never certifies: it keeps the fingerprint of the check before it, and a reference
    /// written before fingerprints is repaired by `--fix` only with the fingerprint of its text
    /// when its record was written; without that text only a re-read repairs it.
    #[test]
    fn a_repair_carries_the_earlier_check() {
        let node = crate::policy::fixtures::node("a", &[]);
        let owner = OwnerRef::Node(GraphKind::Architecture, &node);
        let now = file(SOURCE, &["alpha"]);
        let stored = checked(located("x", 1, 2, "alpha"));
        let finding = recheck_one(owner, &stored, &now, None, None).expect("moved");
        assert_eq!(
            finding
                .reanchored
                .as_ref()
                .and_then(|r| r.fingerprint.clone()),
            stored.fingerprint
        );
        assert!(finding.fixable());
        let legacy = located("x", 1, 2, "alpha");
        let unknown = recheck_one(owner, &legacy, &now, None, None).expect("moved");
        assert!(unknown.reanchored.is_some() && !unknown.fixable());
        let then = file("fn alpha() {}\n", &["alpha"]);
        let then = then.with_definitions(&[crate::policy::code_map::Definition {
            name: "alpha".into(),
            kind: "function".into(),
            line: 1,
            start_line: 1,
            end_line: 1,
            signature: "fn alpha() {}".into(),
        }]);
        let legacy = located("x", 1, 1, "alpha");
        let known = recheck_one(owner, &legacy, &now, None, Some(&then)).expect("moved");
        assert!(known.fixable());
        assert_eq!(
            known.reanchored.and_then(|r| r.fingerprint),
            Some(crate::policy::code_ref::fingerprint(
                b"fn alpha() {}",
                crate::policy::code_ref::Cited::File
            ))
        );
    }

    #[test]
    fn the_fix_upserts_the_edges_and_links_it_re_anchors() {
        let old = || vec![CodeRef::to_path("src/old.rs")];
        let mut state = State::default();
        let steady = edge(Some("steady"), "b", "c", "feeds");
        let moved = GraphEdge {
            code_refs: old(),
            ..edge(None, "a", "b", "feeds")
        };
        state.graphs.dataflow.edges = vec![steady, moved];
        state.graphs.links = vec![GraphLink {
            dataflow_node_id: "a".into(),
            architecture_node_id: "x".into(),
            relationship: None,
            code_refs: old(),
        }];
        let renames = BTreeMap::from([("src/old.rs".to_owned(), "src/new.rs".to_owned())]);
        let cited = CitedFiles {
            files: HashMap::from([("src/new.rs".to_owned(), file("x\n", &[]))]),
            ..CitedFiles::default()
        };
        let report = recheck_references(Some(&state), Some(&cited), &renames, &|_, _| None);
        let patch = reanchor_patch(&state, &report.findings).expect("a fix");
        let new = vec![CodeRef::to_path("src/new.rs")];
        let edges = &patch.upsert.dataflow_edges;
        assert_eq!(edges.len(), 1, "the steady edge is not restated");
        assert_eq!((edges[0].id.as_deref(), &edges[0].code_refs), (None, &new));
        assert_eq!(patch.upsert.links.len(), 1);
        assert_eq!(patch.upsert.links[0].code_refs, new);
        assert_eq!(patch.upsert.keys().len(), 2);
    }

    #[test]
    fn the_fix_rewrites_only_what_can_be_fixed() {
        let state = state();
        let (cited, renames) = cited();
        let report = recheck_references(Some(&state), Some(&cited), &renames, &|_, _| None);
        let patch = reanchor_patch(&state, &report.findings).expect("a fix");
        assert!(patch.investigation_checkpoint.is_none());
        assert!(patch.graphs.is_none(), "the map is not restated");
        // Only the two re-anchored nodes are written: `gone` needs a person, `b` holds.
        let nodes = &patch.upsert.architecture_nodes;
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["a", "moved"]);
        assert_eq!(nodes[0].code_refs[0].start_line, Some(3));
        assert_eq!(nodes[1].code_refs[0].path, "src/new_home.rs");
        assert_eq!(patch.upsert.keys().len(), 2, "{:?}", patch.upsert);
        assert!(reanchor_patch(&state, &[]).is_none());
        assert_eq!(
            RefOwner::Node {
                graph: GraphKind::Architecture,
                id: "a".into()
            }
            .to_string(),
            "architecture node \"a\""
        );
    }

    #[test]
    fn lines_past_the_end_are_cut_only_when_a_symbol_vouches() {
        let node = crate::policy::fixtures::node("a", &[]);
        let owner = OwnerRef::Node(GraphKind::Architecture, &node);
        let text = file(SOURCE, &["beta"]);
        let with_symbol = recheck_one(owner, &located("x", 4, 9, "beta"), &text, None, None);
        let with_symbol = with_symbol.expect("finding");
        assert_eq!(with_symbol.kind, RefFindingKind::LinesPastEnd);
        assert_eq!(with_symbol.reanchored.map(|r| r.end_line), Some(Some(4)));
        let bare = CodeRef {
            symbol: None,
            ..located("x", 2, 9, "")
        };
        let without = recheck_one(owner, &bare, &text, None, None).expect("finding");
        assert!(without.reanchored.is_none());
        assert!(recheck_one(owner, &located("x", 3, 4, "beta"), &text, None, None).is_none());
        assert!(recheck_one(owner, &CodeRef::to_path("x"), &text, None, None).is_none());
    }
}
