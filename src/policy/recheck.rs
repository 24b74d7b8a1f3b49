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

use serde::Serialize;

use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::OwnerRef;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::follow_symbol;
use crate::policy::code_ref::graph_code_refs_mut;
use crate::policy::code_ref::range_holds;
use crate::policy::code_ref::ref_lines;
use crate::policy::code_ref::visit_state_code_refs;
use crate::state::model::CodeRef;
use crate::state::model::Graphs;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Upsert;

/// What is wrong with a stored reference now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefFindingKind {
    /// The file is gone (or the path now leads outside the repository), and git saw no
    /// rename.
    Missing,
    /// git followed the file to another path (`renamed_to`).
    Renamed,
    /// The symbol no longer occurs in the file.
    SymbolMissing,
    /// The symbol occurs, but not in the cited lines (`symbol_lines` says where).
    MovedLines,
    /// The cited lines run past the end of the file.
    LinesPastEnd,
    /// The file is still to be written (the reference was recorded as a plan).
    Planned,
}

impl RefFindingKind {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RefFindingKind::Missing => "missing",
            RefFindingKind::Renamed => "renamed",
            RefFindingKind::SymbolMissing => "symbol_missing",
            RefFindingKind::MovedLines => "moved_lines",
            RefFindingKind::LinesPastEnd => "lines_past_end",
            RefFindingKind::Planned => "planned",
        }
    }
}

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
    /// What it means.
    pub note: String,
}

/// What the caller read from the work tree for the re-check: every cited path (and every path
/// git renamed one to), with the symbols asked about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitedFiles {
    /// Cited path (repository-relative, as stored) → what is there now.
    pub files: HashMap<String, CitedFile>,
}

/// The paths and symbols the re-check needs read: every cited path with the symbols cited in
/// it, plus, for a cited path git renamed, the new path with the same symbols.
pub fn paths_to_read(
    state: &State,
    renames: &BTreeMap<String, String>,
) -> BTreeMap<String, BTreeSet<String>> {
    // Gathered borrowed (tens of thousands of references, a few hundred files), owned once.
    let mut borrowed: HashMap<&str, HashSet<&str>> = HashMap::new();
    visit_state_code_refs(state, |_, code_ref| {
        let symbols = borrowed.entry(code_ref.path.as_str()).or_default();
        if let Some(symbol) = &code_ref.symbol {
            symbols.insert(symbol.as_str());
        }
    });
    let mut wanted: BTreeMap<String, BTreeSet<String>> = borrowed
        .into_iter()
        .map(|(path, symbols)| {
            let symbols = symbols.into_iter().map(str::to_owned).collect();
            (path.to_owned(), symbols)
        })
        .collect();
    let renamed: Vec<(String, BTreeSet<String>)> = wanted
        .iter()
        .filter_map(|(path, symbols)| Some((renames.get(path)?.clone(), symbols.clone())))
        .collect();
    for (path, symbols) in renamed {
        wanted.entry(path).or_default().extend(symbols);
    }
    wanted
}

/// Re-checks every reference of the state against the cited files (`None`: the work tree was
/// not read). `renames` is git's old path → new path.
pub fn recheck_references(
    state: Option<&State>,
    cited: Option<&CitedFiles>,
    renames: &BTreeMap<String, String>,
) -> ReferenceFreshness {
    let (Some(state), Some(cited)) = (state, cited) else {
        return ReferenceFreshness {
            note: "references not re-checked".to_owned(),
            ..ReferenceFreshness::default()
        };
    };
    let mut findings = Vec::new();
    let mut checked_ref_count = 0;
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
        checked_ref_count += 1;
        let file = cited
            .files
            .get(&code_ref.path)
            .unwrap_or(&CitedFile::Missing);
        let renamed = renames.get(&code_ref.path).and_then(|to| {
            let target = cited.files.get(to)?;
            matches!(target, CitedFile::File { .. } | CitedFile::Directory)
                .then_some((to.as_str(), target))
        });
        findings.extend(recheck_one(owner, code_ref, file, renamed));
    });
    let blocking_count = findings.iter().filter(|f| f.blocking).count();
    let fixable_count = findings
        .iter()
        .filter(|f| f.reanchored.is_some() && f.owner.is_rewritable())
        .count();
    let note = references_note(&findings, blocking_count, fixable_count, checked_ref_count);
    ReferenceFreshness {
        checked: true,
        checked_ref_count,
        cited_file_count: cited.files.len(),
        findings,
        blocking_count,
        fixable_count,
        note,
    }
}

/// What is wrong with one reference, before it is tied to its owner.
struct Verdict {
    kind: RefFindingKind,
    renamed_to: Option<String>,
    symbol_lines: Vec<u32>,
    reanchored: Option<CodeRef>,
}

impl Verdict {
    fn of(kind: RefFindingKind) -> Option<Verdict> {
        Some(Verdict {
            kind,
            renamed_to: None,
            symbol_lines: Vec::new(),
            reanchored: None,
        })
    }

    fn into_finding(self, owner: RefOwner, code_ref: &CodeRef) -> RefFinding {
        RefFinding {
            blocking: self.kind != RefFindingKind::Planned && owner.is_rewritable(),
            kind: self.kind,
            owner,
            code_ref: code_ref.clone(),
            renamed_to: self.renamed_to,
            symbol_lines: self.symbol_lines,
            reanchored: self.reanchored,
        }
    }
}

/// The finding for one reference, if it no longer holds.
/// The owner is named (copied) only for a reference that does not hold.
pub fn recheck_one(
    owner: OwnerRef<'_>,
    code_ref: &CodeRef,
    file: &CitedFile,
    renamed: Option<(&str, &CitedFile)>,
) -> Option<RefFinding> {
    assess_ref(code_ref, file, renamed).map(|v| v.into_finding(owner.to_owner(), code_ref))
}

fn assess_ref(
    code_ref: &CodeRef,
    file: &CitedFile,
    renamed: Option<(&str, &CitedFile)>,
) -> Option<Verdict> {
    match file {
        CitedFile::Missing if code_ref.planned => Verdict::of(RefFindingKind::Planned),
        CitedFile::Missing => match renamed {
            Some((to, target)) => {
                let moved = CodeRef {
                    path: to.to_owned(),
                    ..code_ref.clone()
                };
                // Follow the symbol into the renamed file when it moved there too.
                let holds = |symbol: &str| match target.definitions_of(symbol) {
                    Some(spans) => {
                        ref_lines(&moved).is_none_or(|(start, end)| range_holds(start, end, &spans))
                    }
                    None => in_range(&moved, target.lines_of(symbol)),
                };
                let reanchored = match &moved.symbol {
                    Some(symbol) if !holds(symbol) => {
                        follow_symbol(&moved, target).unwrap_or(moved)
                    }
                    _ => moved,
                };
                Some(Verdict {
                    kind: RefFindingKind::Renamed,
                    renamed_to: Some(to.to_owned()),
                    symbol_lines: Vec::new(),
                    reanchored: Some(reanchored),
                })
            }
            None => Verdict::of(RefFindingKind::Missing),
        },
        // Not a file of the repository any more: gone, as far as the reference goes.
        CitedFile::Elsewhere => Verdict::of(RefFindingKind::Missing),
        CitedFile::Directory => None,
        CitedFile::File { line_count, .. } => {
            if let Some(symbol) = &code_ref.symbol
                && let Some(spans) = file.definitions_of(symbol)
            {
                if spans.is_empty() {
                    return Verdict::of(RefFindingKind::SymbolMissing);
                }
                let holds =
                    ref_lines(code_ref).is_none_or(|(start, end)| range_holds(start, end, &spans));
                if holds {
                    return None;
                }
                return Some(Verdict {
                    kind: RefFindingKind::MovedLines,
                    renamed_to: None,
                    symbol_lines: spans.iter().map(|&(first, _)| first).collect(),
                    reanchored: follow_symbol(code_ref, file),
                });
            }
            if let Some(symbol) = &code_ref.symbol {
                let lines = file.lines_of(symbol);
                if lines.is_empty() {
                    return Verdict::of(RefFindingKind::SymbolMissing);
                }
                if !in_range(code_ref, lines) {
                    return Some(Verdict {
                        kind: RefFindingKind::MovedLines,
                        renamed_to: None,
                        symbol_lines: lines.to_vec(),
                        reanchored: follow_symbol(code_ref, file),
                    });
                }
            }
            let (start, end) = ref_lines(code_ref)?;
            if start.max(end) <= *line_count {
                return None;
            }
            // With the symbol still inside, cutting the range at the end of the file is safe;
            // without a symbol nothing says where the cited lines went.
            Some(Verdict {
                reanchored: code_ref.symbol.as_ref().map(|_| CodeRef {
                    end_line: code_ref.end_line.map(|_| *line_count),
                    ..code_ref.clone()
                }),
                ..Verdict::of(RefFindingKind::LinesPastEnd)?
            })
        }
    }
}

/// Whether the reference has no range, or one of `lines` lies in it.
fn in_range(code_ref: &CodeRef, lines: &[u32]) -> bool {
    match ref_lines(code_ref) {
        None => !lines.is_empty(),
        Some((start, end)) => lines.iter().any(|line| (start..=end).contains(line)),
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
        .filter(|f| f.owner.is_rewritable())
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

    fn state() -> State {
        let mut state = State::default();
        let mut a = node("a", &[]);
        a.code_refs = vec![located("src/a.rs", 1, 2, "alpha")];
        let gone = node("gone", &["src/gone.rs"]);
        let moved = node("moved", &["src/old.rs"]);
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
            wanted["src/a.rs"].iter().collect::<Vec<_>>(),
            vec!["alpha", "beta", "ghost"]
        );
        let files = wanted
            .iter()
            .map(|(path, symbols)| {
                let symbols: Vec<&str> = symbols.iter().map(String::as_str).collect();
                let found = match path.as_str() {
                    "src/a.rs" => file(SOURCE, &symbols),
                    "src/new_home.rs" => file("x\n", &symbols),
                    _ => CitedFile::Missing,
                };
                (path.clone(), found)
            })
            .collect();
        (CitedFiles { files }, renames)
    }

    #[test]
    fn every_kind_of_finding_in_state_order() {
        let state = state();
        let (cited, renames) = cited();
        let report = recheck_references(Some(&state), Some(&cited), &renames);
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
        };
        let report = recheck_references(Some(&state), Some(&cited), &renames);
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
        let report = recheck_references(Some(&state), Some(&cited), &renames);
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
        let with_symbol = recheck_one(owner, &located("x", 4, 9, "beta"), &text, None);
        let with_symbol = with_symbol.expect("finding");
        assert_eq!(with_symbol.kind, RefFindingKind::LinesPastEnd);
        assert_eq!(with_symbol.reanchored.map(|r| r.end_line), Some(Some(4)));
        let bare = CodeRef {
            symbol: None,
            ..located("x", 2, 9, "")
        };
        let without = recheck_one(owner, &bare, &text, None).expect("finding");
        assert!(without.reanchored.is_none());
        assert!(recheck_one(owner, &located("x", 3, 4, "beta"), &text, None).is_none());
        assert!(recheck_one(owner, &CodeRef::to_path("x"), &text, None).is_none());
    }
}
