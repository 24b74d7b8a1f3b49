//! Code references against the work tree: checked when written, re-read when freshness asks.
//!
//! The write path hands every patch through [`audit_patch_refs`] before validation: each code
//! reference (graphs, checkpoint, observations, evidence) and each frontier dirty path is
//! resolved against the directory the command runs in and stored relative to the repository
//! root; it must exist unless the write allows missing paths (then it is marked `planned`),
//! and its lines and symbol must hold against the file. References already in the state are
//! not checked again: a write never fails for what it did not change. `freshness` reads the
//! cited files through [`read_cited_files`]. A file citing a symbol in a parsed language is
//! parsed ([`syntax`]): there the symbol must have a definition, and a symbol cited without
//! lines is stored with its definition's span. Either path tells the reader what its
//! references ask of each file ([`Asked`]): a file over the size limit ([`MAX_FILE_BYTES`]) is
//! never held, but streamed in chunks, taking on the way only the fingerprints (and first lines)
//! of the texts they may cite. The rules themselves are `policy::code_ref`'s; this module only
//! reads files.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;
use std::path::PathBuf;

use crate::ctx::Ctx;
use crate::error::Failure;
use crate::policy::code_ref::Asked;
use crate::policy::code_ref::CODE_REF_SYNTAX;
use crate::policy::code_ref::Cited;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::cited_text;
use crate::policy::code_ref::code_ref_key;
use crate::policy::code_ref::escape_reason;
use crate::policy::code_ref::format_code_ref;
use crate::policy::code_ref::is_absolute;
use crate::policy::code_ref::located_problems;
use crate::policy::code_ref::patch_code_refs_mut;
use crate::policy::code_ref::path_candidates;
use crate::policy::code_ref::path_refusal;
use crate::policy::code_ref::shape_problems;
use crate::policy::code_ref::strip_root;
use crate::policy::code_ref::visit_state_code_refs;
use crate::policy::update::UpdateRefusal;
use crate::state::git;
use crate::state::model::CodeRef;
use crate::state::model::GraphKind;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::patch::Recheck;
use crate::state::paths::slash_key;
use crate::state::problem::Problem;
use crate::state::problem::item;
use crate::state::problem::join;
use crate::state::walk::MAX_FILE_BYTES;

mod read;

use read::Parse;
use read::Parser;
pub use read::read_cited_files;
pub use read::read_cited_files_at;
use read::read_files;

/// What the audit of a patch found.
#[derive(Debug, Default)]
pub struct RefAudit {
    /// Every violation; the write must not happen when there is any.
    pub problems: Vec<Problem>,
    /// References recorded as plans (their file does not exist yet), as `path (record)`.
    pub planned: Vec<String>,
    /// References whose symbol was judged by where it occurs, not by its definition, because
    /// their file, of a parsed language, is too large to parse ([`MAX_FILE_BYTES`]), as
    /// `path#symbol (record)`.
    pub unparsed: Vec<String>,
}

/// Where references are resolved: the repository root and the directory the command runs in.
#[derive(Debug, Clone)]
pub struct Resolver {
    root: PathBuf,
    /// The working directory relative to the root (`""` at the root or outside it).
    cwd: String,
    /// Whether a relative path means the working directory first (typed on the command line)
    /// or the root first (written in a patch document).
    cwd_first: bool,
}

impl Resolver {
    /// A resolver for the repository at `root` and a command running in `cwd`.
    pub fn new(root: &Path, cwd: &Path, cwd_first: bool) -> Resolver {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let cwd = cwd
            .canonicalize()
            .ok()
            .and_then(|cwd| {
                cwd.strip_prefix(&root)
                    .ok()
                    .map(|rest| slash_key(&rest.to_string_lossy()))
            })
            .unwrap_or_default();
        Resolver {
            root,
            cwd,
            cwd_first,
        }
    }

    /// The repository-relative path `typed` names and whether it exists; `None` when it
    /// cannot be inside the repository (left for validation to refuse). A path that exists
    /// in none of its readings is given in its most likely one.
    fn resolve(&self, typed: &str, stat: &mut Stat) -> Option<(String, bool)> {
        let candidates = if is_absolute(typed) {
            let canonical = Path::new(typed)
                .canonicalize()
                .ok()
                .and_then(|path| path.strip_prefix(&self.root).ok().map(Path::to_path_buf))
                .map(|rest| slash_key(&rest.to_string_lossy()));
            canonical
                .or_else(|| strip_root(typed, &self.root.to_string_lossy()))
                .into_iter()
                .collect()
        } else {
            path_candidates(typed, &self.cwd, self.cwd_first)
        };
        let existing = candidates
            .iter()
            .find(|candidate| stat.exists(&self.root, candidate));
        match existing {
            Some(found) => Some((found.clone(), true)),
            None => candidates.into_iter().next().map(|first| (first, false)),
        }
    }

    /// [`Resolver::resolve`], or why `typed` can name no file of the repository: it ends with a
    /// separator, it leaves the repository, or [`path_refusal`] refuses it.
    fn settle(&self, typed: &str, stat: &mut Stat) -> Result<(String, bool), &'static str> {
        if typed.ends_with(['/', '\\']) {
            return Err("ends with a separator: it names a directory, not a file");
        }
        let Some((path, exists)) = self.resolve(typed, stat) else {
            return Err(escape_reason(typed).unwrap_or("names no file"));
        };
        match path_refusal(&path) {
            Some(reason) => Err(reason),
            None => Ok((path, exists)),
        }
    }
}

/// File-system answers, asked once per path.
#[derive(Default)]
struct Stat(HashMap<String, bool>);

impl Stat {
    fn exists(&mut self, root: &Path, relative: &str) -> bool {
        *self
            .0
            .entry(relative.to_owned())
            .or_insert_with(|| root.join(relative).symlink_metadata().is_ok())
    }
}

/// Checks, resolves and marks every code reference and frontier dirty path of `patch` against
/// the work tree, in place. A reference the patch restates on the graphs or the checkpoint that
/// `state` already holds there, and a dirty path already on the frontier, pass unchanged; the
/// references of new observations and evidence are new claims and are always checked.
pub fn audit_patch_refs(
    resolver: &Resolver,
    state: &State,
    patch: &mut Patch,
    allow_missing: bool,
) -> RefAudit {
    let mut audit = RefAudit::default();
    let rechecked = rechecked_records(&patch.recheck);
    let mut refs = patch_code_refs_mut(patch);
    let is_new_claim = |owner: &RefOwner| {
        matches!(
            owner,
            RefOwner::Observation { .. } | RefOwner::Evidence { .. }
        )
    };
    if !refs.is_empty() {
        if refs.iter().any(|(owner, _)| !is_new_claim(owner)) {
            // A restated reference keeps the fingerprint of its last check (its own record's
            // first, else any record's citing it so), unless the patch says it was re-read.
            let mut known: HashMap<(String, bool), Option<String>> = HashMap::new();
            let mut own: HashMap<(String, String), String> = HashMap::new();
            visit_state_code_refs(state, |owner, r| {
                let stored = known.entry((code_ref_key(r), r.planned)).or_default();
                if stored.is_none() {
                    stored.clone_from(&r.fingerprint);
                }
                if let (Some(key), Some(fingerprint)) = (owner.anchor_key(), &r.fingerprint) {
                    own.insert((key, code_ref_key(r)), fingerprint.clone());
                }
            });
            refs.retain_mut(|(owner, r)| {
                if is_new_claim(owner) || rechecked.contains(&owner.key()) {
                    return true;
                }
                let Some(stored) = known.get(&(code_ref_key(r), r.planned)) else {
                    return true;
                };
                let mine = (owner.anchor_key()).and_then(|key| own.get(&(key, code_ref_key(r))));
                let stored = mine.or(stored.as_ref());
                match &r.fingerprint {
                    None => {
                        r.fingerprint = stored.cloned();
                        false
                    }
                    // Another fingerprint is a claim about the code: checked like a new one.
                    Some(claimed) => Some(claimed) != stored,
                }
            });
        }
        let labelled = refs
            .into_iter()
            .map(|(owner, code_ref)| (join(&owner.key(), "code_refs"), code_ref))
            .collect();
        audit_refs(resolver, labelled, allow_missing, &mut audit);
    }
    if let Some(frontier) = patch.graph_frontier.as_mut() {
        let stored: HashSet<&String> = state
            .graph_frontier
            .iter()
            .flat_map(|f| &f.dirty_paths)
            .collect();
        let mut stat = Stat::default();
        for (index, path) in frontier.dirty_paths.iter_mut().enumerate() {
            if stored.contains(path) {
                continue;
            }
            let at = item("graph_frontier.dirty_paths", index);
            let (resolved, exists) = match resolver.settle(path, &mut stat) {
                Ok(settled) => settled,
                Err(reason) => {
                    audit
                        .problems
                        .push(Problem::new(at, format!("\"{path}\" {reason}")));
                    continue;
                }
            };
            if !exists && !allow_missing {
                audit.problems.push(Problem::new(at, format!(
                    "\"{resolved}\": no such file in the work tree (for a file still to be written, pass `--allow-missing-paths`)"
                )));
            } else if exists && resolver.root.join(&resolved).is_dir() {
                audit.problems.push(Problem::new(
                    at,
                    format!("\"{resolved}\" is a directory: a dirty path names a file"),
                ));
            }
            *path = resolved;
        }
    }
    audit
}

/// Whether `patch` carries a reference of the graphs or the checkpoint without a fingerprint:
/// one it restates takes the fingerprint the state holds for it (never one made now), so the
/// write must read the stored graphs.
pub fn restates_unfingerprinted(patch: &mut Patch) -> bool {
    patch_code_refs_mut(patch)
        .iter()
        .any(|(owner, code_ref)| owner.anchor_key().is_some() && code_ref.fingerprint.is_none())
}

/// The keys of the records a patch re-checks (`architecture_nodes/ID`, ...): their references
/// were read again, and are fingerprinted anew.
fn rechecked_records(recheck: &Recheck) -> HashSet<String> {
    let node = |graph: GraphKind, id: &String| {
        RefOwner::Node {
            graph,
            id: id.clone(),
        }
        .key()
    };
    (recheck.architecture_nodes.iter())
        .map(|id| node(GraphKind::Architecture, id))
        .chain((recheck.dataflow_nodes.iter()).map(|id| node(GraphKind::Dataflow, id)))
        .chain(
            recheck
                .investigation_checkpoint
                .then(|| RefOwner::InvestigationCheckpoint { id: String::new() }.key()),
        )
        .collect()
}

/// Checks, resolves and marks the given references; each comes with the path its problems are
/// reported at (`architecture_nodes/a.code_refs`, `--code-ref`).
pub fn audit_refs(
    resolver: &Resolver,
    refs: Vec<(String, &mut CodeRef)>,
    allow_missing: bool,
    audit: &mut RefAudit,
) {
    let mut stat = Stat::default();
    // First settle every path, so each file is read once with all the symbols cited in it.
    let mut settled: Vec<(String, &mut CodeRef, Option<bool>)> = Vec::new();
    let mut wanted: BTreeMap<String, Asked> = BTreeMap::new();
    for (label, code_ref) in refs {
        let typed = format_code_ref(code_ref);
        for problem in shape_problems(code_ref) {
            audit
                .problems
                .push(Problem::new(&label, format!("`{typed}`: {problem}")));
        }
        let (path, exists) = match resolver.settle(&code_ref.path, &mut stat) {
            Ok(settled) => settled,
            Err(reason) => {
                audit.problems.push(Problem::new(
                    &label,
                    format!("`{typed}`: the path {reason}"),
                ));
                settled.push((label, code_ref, None));
                continue;
            }
        };
        code_ref.path = path;
        if exists {
            wanted
                .entry(code_ref.path.clone())
                .or_default()
                .cite(code_ref);
        }
        settled.push((label, code_ref, Some(exists)));
    }
    let files = read_files(&resolver.root, &wanted, Parser::FRESH);
    for (label, code_ref, exists) in settled {
        match exists {
            None => {}
            Some(false) if allow_missing || code_ref.planned => {
                code_ref.planned = true;
                audit.planned.push(format!("{} ({label})", code_ref.path));
            }
            Some(false) => audit.problems.push(Problem::new(&label, format!(
                "`{}`: no such file in the work tree (for a file still to be written, pass `--allow-missing-paths`)",
                format_code_ref(code_ref)
            ))),
            Some(true) => {
                code_ref.planned = false;
                let (file, parse) = files
                    .get(&code_ref.path)
                    .map_or((&CitedFile::Missing, Parse::Done), |(file, parse)| (file, *parse));
                let problems = located_problems(code_ref, file);
                for problem in &problems {
                    audit.problems.push(Problem::new(
                        &label,
                        format!("`{}`: {problem}", format_code_ref(code_ref)),
                    ));
                }
                if !problems.is_empty() {
                    continue;
                }
                let Some(cited) = cited_text(code_ref, file) else {
                    continue;
                };
                if let Some(symbol) = &code_ref.symbol
                    && parse == Parse::TooLarge
                {
                    (audit.unparsed).push(format!("{}#{symbol} ({label})", code_ref.path));
                }
                // A symbol without lines cites its definition: its span is stored.
                if let (Cited::Lines((first, last)), None, Some(_)) =
                    (cited, code_ref.start_line, &code_ref.symbol)
                {
                    code_ref.start_line = Some(first);
                    code_ref.end_line = Some(last);
                }
                // Cited now: what it cites is what the writer checked, unless the reference
                // brings the fingerprint of an earlier check (a repair by `freshness --fix`).
                if code_ref.fingerprint.is_none() {
                    code_ref.fingerprint = file.fingerprint(cited);
                }
            }
        }
    }
}

/// Code refs typed on the command line (`flag`: `--ref`, `--code-ref`), resolved against the
/// current directory first, stored relative to the repository root (the store's, else git's,
/// else the current directory), and checked against the work tree; a file that does not exist
/// yet is marked `planned` when `allow_missing`. Every problem is reported at `flag`, and
/// `refused` says what did not happen because of them.
pub fn resolve_typed_refs(
    ctx: &Ctx,
    code_refs: &[CodeRef],
    allow_missing: bool,
    flag: &str,
    refused: &str,
) -> anyhow::Result<Vec<CodeRef>> {
    let mut code_refs = code_refs.to_vec();
    if code_refs.is_empty() {
        return Ok(code_refs);
    }
    let root = match ctx.store() {
        Ok(store) => store.root().to_path_buf(),
        Err(_) => git::work_tree_root(&ctx.cwd).unwrap_or_else(|| ctx.cwd.clone()),
    };
    let resolver = Resolver::new(&root, &ctx.cwd, true);
    let mut audit = RefAudit::default();
    let labelled = code_refs
        .iter_mut()
        .map(|code_ref| (flag.to_owned(), code_ref))
        .collect();
    audit_refs(&resolver, labelled, allow_missing, &mut audit);
    if !audit.problems.is_empty() {
        return Err(Failure::usage(format!("invalid `{flag}`; {refused}"))
            .with_problems(audit.problems)
            .with_hint(format!(
                "a code ref is {CODE_REF_SYNTAX}, relative to the current directory; pass `--allow-missing-paths` for files still to be written"
            ))
            .into());
    }
    Ok(code_refs)
}

/// Adds the reference problems to the write path's own verdict: a refusal for another reason
/// (an empty patch, a revision conflict) stands; otherwise every problem is listed together.
pub fn with_ref_problems(
    checked: Result<(), UpdateRefusal>,
    problems: Vec<Problem>,
) -> Result<(), UpdateRefusal> {
    match checked {
        Err(UpdateRefusal::Invalid(mut reasons)) => {
            reasons.extend(problems);
            Err(UpdateRefusal::Invalid(reasons))
        }
        Ok(()) if !problems.is_empty() => Err(UpdateRefusal::Invalid(problems)),
        other => other,
    }
}

/// Says on stderr which references were recorded as plans, and which were judged by where
/// their symbol occurs because their file is too large to parse.
pub fn warn_ref_notes(ctx: &Ctx, audit: &RefAudit) {
    let RefAudit {
        planned, unparsed, ..
    } = audit;
    if !planned.is_empty() {
        ctx.ui.warn(&format!(
            "{} code reference(s) name files that do not exist yet, recorded as planned: {}",
            planned.len(),
            planned.join(", ")
        ));
    }
    if !unparsed.is_empty() {
        ctx.ui.warn(&format!(
            "{} code reference(s) cite a symbol in a file over {} MiB, which is not parsed: \
             each was judged by the lines the symbol occurs on, not by its definition: {}",
            unparsed.len(),
            MAX_FILE_BYTES / (1024 * 1024),
            unparsed.join(", ")
        ));
    }
}
