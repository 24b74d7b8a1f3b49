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
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use crate::ctx::Ctx;
use crate::error::Failure;
use crate::policy::code_map::Definition;
use crate::policy::code_ref::Asked;
use crate::policy::code_ref::CODE_REF_SYNTAX;
use crate::policy::code_ref::Cited;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::RefOwner;
use crate::policy::code_ref::Scan;
use crate::policy::code_ref::cited_text;
use crate::policy::code_ref::code_ref_key;
use crate::policy::code_ref::escape_reason;
use crate::policy::code_ref::format_code_ref;
use crate::policy::code_ref::is_absolute;
use crate::policy::code_ref::located_problems;
use crate::policy::code_ref::patch_code_refs_mut;
use crate::policy::code_ref::path_candidates;
use crate::policy::code_ref::path_refusal;
use crate::policy::code_ref::scan_bytes;
use crate::policy::code_ref::shape_problems;
use crate::policy::code_ref::strip_root;
use crate::policy::code_ref::visit_state_code_refs;
use crate::policy::recheck::CitedFiles;
use crate::policy::update::UpdateRefusal;
use crate::search::definitions::DefinitionCache;
use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
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

/// Whether a cited file's contents are larger than the index takes ([`MAX_FILE_BYTES`]), so
/// that no read parses them.
fn is_over_parse_limit(bytes: &[u8]) -> bool {
    u64::try_from(bytes.len()).map_or(true, |len| len > MAX_FILE_BYTES)
}

/// Reads every wanted path under `root`: what is there, its line count, and where each
/// symbol occurs. Paths that would leave the root read as missing, and links that lead out of
/// it as [`CitedFile::Elsewhere`]. A file citing a symbol in a parsed language is parsed for its
/// definitions, exactly as the write path parses it, so that both judge a reference alike;
/// with `cache`, only files whose contents it has not seen are parsed (the others' definitions
/// are the ones parsing gave for the same bytes). This is the one bounded path every command
/// that re-reads cited files takes: a file over the size limit ([`MAX_FILE_BYTES`]) is streamed
/// for what `wanted` asks of it, not parsed, and named in [`CitedFiles::by_lines`] (when it
/// cites a symbol in a parsed language), and every parse shares the command's
/// `deadline`: a file it cuts short is named in [`CitedFiles::unjudged`].
pub fn read_cited_files(
    root: &Path,
    wanted: &BTreeMap<String, Asked>,
    cache: Option<&DefinitionCache>,
    deadline: Deadline,
) -> CitedFiles {
    let parser = Parser { cache, deadline };
    let mut cited = CitedFiles::default();
    for (path, (file, parse)) in read_files(root, wanted, parser) {
        match parse {
            Parse::Done => {}
            Parse::Late => {
                cited.unjudged.insert(path.clone());
            }
            Parse::TooLarge => {
                cited.by_lines.insert(path.clone());
            }
        }
        cited.files.insert(path, file);
    }
    cited
}

/// What became of a cited file's parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    /// Parsed, or not asked for (no symbol cited, a language that is not parsed, not a file).
    Done,
    /// The command's deadline passed first: its symbols were not judged.
    Late,
    /// Over the size limit ([`MAX_FILE_BYTES`]): judged by the lines its symbols occur on.
    TooLarge,
}

/// How the cited files of a parsed language are parsed: afresh or through the cache of earlier
/// parses, within the command's deadline.
#[derive(Debug, Clone, Copy)]
struct Parser<'a> {
    cache: Option<&'a DefinitionCache>,
    deadline: Deadline,
}

impl Parser<'_> {
    /// Parses everything it is asked to.
    const FRESH: Parser<'static> = Parser {
        cache: None,
        deadline: Deadline::NONE,
    };

    fn definitions(self, path: &str, text: &str) -> Result<Option<Vec<Definition>>, Late> {
        match self.cache {
            None => syntax::definitions_by(path, text, self.deadline),
            Some(cache) => cache.definitions(path, text, self.deadline),
        }
    }
}

/// The most of an earlier version of a cited file that is read from git (16 MiB).
const EARLIER_FILE_LIMIT: usize = 16 * 1024 * 1024;

/// A cited file as a commit held it: (commit, path), the symbols cited, its contents.
type EarlierFile<'a> = (&'a (String, String), &'a BTreeSet<String>, &'a Vec<u8>);

/// Cited files as commits held them, read from git and parsed like the work tree's:
/// (commit, cited path) → the symbols cited there, as
/// [`crate::policy::freshness::definitions_to_compare`] asks. A commit git lacks is read at
/// its stand-in in `stand_ins` (where its records entered the branch); what git cannot give,
/// a language that is not parsed, or a parse the command's `deadline` cut short, is left out.
pub fn read_cited_files_at(
    root: &Path,
    wanted: &BTreeMap<(String, String), BTreeSet<String>>,
    stand_ins: &BTreeMap<String, String>,
    deadline: Deadline,
) -> BTreeMap<(String, String), CitedFile> {
    let commit_of = |commit: &String| stand_ins.get(commit).unwrap_or(commit).clone();
    let blobs: BTreeSet<(String, String)> = (wanted.keys())
        .filter(|(_, path)| syntax::grammar(path).is_some())
        .map(|(commit, path)| (commit_of(commit), slash_key(path)))
        .collect();
    let contents = git::files_at(root, &blobs, EARLIER_FILE_LIMIT);
    let found: Vec<EarlierFile<'_>> = (wanted.iter())
        .filter_map(|(key, symbols)| {
            let bytes = contents.get(&(commit_of(&key.0), slash_key(&key.1)))?;
            Some((key, symbols, bytes))
        })
        .collect();
    // Parsed over the cores, like the work tree's files.
    crate::parallel::map_chunks(&found, |piece| {
        let parser = Parser {
            cache: None,
            deadline,
        };
        (piece.iter())
            .filter_map(|(key, symbols, bytes)| {
                match read_contents(&key.1, Arc::from(&bytes[..]), symbols, Some(parser)) {
                    (_, Parse::Late) => None,
                    (file, Parse::Done | Parse::TooLarge) => Some(((*key).clone(), file)),
                }
            })
            .collect()
    })
    .into_iter()
    .collect()
}

/// Every wanted file as [`read_file`] reads it, and what became of its parse.
fn read_files(
    root: &Path,
    wanted: &BTreeMap<String, Asked>,
    parser: Parser<'_>,
) -> HashMap<String, (CitedFile, Parse)> {
    // Links are resolved against the root as the file system has it (it may lie below a link).
    let Ok(real_root) = root.canonicalize() else {
        return wanted
            .keys()
            .map(|path| (path.clone(), (CitedFile::Missing, Parse::Done)))
            .collect();
    };
    // Files citing a symbol in a parsed language are parsed: spread over the cores, with one
    // buffer per thread (hundreds of cited files cost no more allocations than one).
    let entries: Vec<(&String, &Asked, Option<Parser<'_>>)> = wanted
        .iter()
        .map(|(path, asked)| {
            let parse = !asked.symbols.is_empty() && syntax::grammar(path).is_some();
            (path, asked, parse.then_some(parser))
        })
        .collect();
    let parsed = entries
        .iter()
        .filter(|(_, _, parse)| parse.is_some())
        .count();
    crate::parallel::map_chunks_on(&entries, parsed.div_ceil(8), |piece| {
        let mut buffer = Vec::new();
        (piece.iter())
            .map(|&(path, asked, parse)| {
                let cited = read_file(&real_root, path, asked, parse, &mut buffer);
                (path.clone(), cited)
            })
            .collect()
    })
    .into_iter()
    .collect()
}

/// The bytes a cited file over the size limit is read in at a time (256 KiB).
const STREAM_CHUNK_BYTES: usize = 256 * 1024;

/// Reads `path` below `real_root` (itself resolved). A path is followed through symbolic links
/// only while it stays inside the root, and only a regular file is read: a committed link to
/// `/dev/zero` or to a file outside the repository is [`CitedFile::Elsewhere`], never opened.
/// Says too what became of its parse. A file over the size limit ([`MAX_FILE_BYTES`]) is never
/// held: it is streamed ([`stream`]) and judged by its lines, never parsed (its parse is
/// [`Parse::TooLarge`] when `parse` asked for one).
fn read_file(
    real_root: &Path,
    path: &str,
    asked: &Asked,
    parse: Option<Parser<'_>>,
    buffer: &mut Vec<u8>,
) -> (CitedFile, Parse) {
    let (mut file, len) = match open_below(real_root, path) {
        Ok(opened) => opened,
        Err(unread) => return (unread, Parse::Done),
    };
    if len > MAX_FILE_BYTES {
        let not_parsed = if parse.is_some() {
            Parse::TooLarge
        } else {
            Parse::Done
        };
        return match stream(file, len, asked) {
            Some(streamed) => (streamed, not_parsed),
            None => (CitedFile::Missing, Parse::Done),
        };
    }
    buffer.clear();
    if file.read_to_end(buffer).is_err() {
        return (CitedFile::Missing, Parse::Done);
    }
    read_contents(path, Arc::from(&buffer[..]), &asked.symbols, parse)
}

/// Streams the `len` bytes of `file` in chunks of [`STREAM_CHUNK_BYTES`] through a [`Scan`]
/// taking what `asked` asks, so that only the texts its references may cite are kept (as their
/// fingerprints and, when asked, first lines), never the file. `None` when it cannot be read,
/// or holds another size now than it did when opened (it changed while being read).
fn stream(mut file: std::fs::File, len: u64, asked: &Asked) -> Option<CitedFile> {
    let mut scan = Scan::taking(asked);
    let mut chunk = vec![0; STREAM_CHUNK_BYTES];
    let mut read: u64 = 0;
    loop {
        let got = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(got) => got,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        read += u64::try_from(got).ok()?;
        if read > len {
            return None;
        }
        scan.feed(&chunk[..got]);
    }
    (read == len).then(|| scan.finish())
}

/// Opens `path` below `real_root` (itself resolved) with its size, or says what is there
/// instead.
fn open_below(real_root: &Path, path: &str) -> Result<(std::fs::File, u64), CitedFile> {
    if escape_reason(path).is_some() {
        return Err(CitedFile::Missing);
    }
    let Ok(resolved) = real_root.join(path).canonicalize() else {
        return Err(CitedFile::Missing);
    };
    if !resolved.starts_with(real_root) {
        return Err(CitedFile::Elsewhere);
    }
    match std::fs::metadata(&resolved) {
        Ok(meta) if meta.is_dir() => return Err(CitedFile::Directory),
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(CitedFile::Elsewhere),
        Err(_) => return Err(CitedFile::Missing),
    }
    let Ok(file) = std::fs::File::open(&resolved) else {
        return Err(CitedFile::Missing);
    };
    // What was opened is checked again: the path may have been swapped since it was resolved.
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok((file, meta.len())),
        _ => Err(CitedFile::Elsewhere),
    }
}

/// What `text`, the contents of `path`, says about `symbols`: where each occurs, and with a
/// `parse`r, where the language is parsed and the file is no larger than the index takes
/// ([`MAX_FILE_BYTES`]), their definitions (a symbol means its definition). A larger file is
/// judged by its lines and mentions, as a language that is not parsed: a committed reference
/// to a huge file must not make every read parse it. A file the parser's deadline cut short
/// has no definitions either; which of the two happened is said.
fn read_contents(
    path: &str,
    text: Arc<[u8]>,
    symbols: &BTreeSet<String>,
    parse: Option<Parser<'_>>,
) -> (CitedFile, Parse) {
    let scanned = scan_bytes(Arc::clone(&text), symbols);
    let Some(parser) = parse else {
        return (scanned, Parse::Done);
    };
    if is_over_parse_limit(&text) {
        return (scanned, Parse::TooLarge);
    }
    let parsed = (std::str::from_utf8(&text).ok()).map(|text| parser.definitions(path, text));
    match parsed {
        Some(Ok(Some(definitions))) => (scanned.with_definitions(&definitions), Parse::Done),
        Some(Err(Late)) => (scanned, Parse::Late),
        Some(Ok(None)) | None => (scanned, Parse::Done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_ref::Text;
    use crate::policy::code_ref::fingerprint_in;

    /// A cited file over the size limit is streamed, never held: judged by its lines, it keeps
    /// only the fingerprints of what its references cite, the ones the file held whole gives.
    #[test]
    fn a_file_over_the_size_limit_is_streamed_and_judged_by_its_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let line = "pub fn g() -> u32 { 0 }\n";
        let lines = usize::try_from(MAX_FILE_BYTES).expect("size") / line.len() + 1;
        let text = format!("pub fn wanted() {{}}\n{}", line.repeat(lines));
        std::fs::write(dir.path().join("huge.rs"), &text).expect("write");
        std::fs::write(dir.path().join("small.rs"), "pub fn wanted() {}\n").expect("write");
        let cite = |path: &str, lines: Option<(u32, u32)>, symbol: &str| CodeRef {
            start_line: lines.map(|(start, _)| start),
            end_line: lines.map(|(_, end)| end),
            symbol: Some(symbol.to_owned()),
            ..CodeRef::to_path(path)
        };
        let refs = [
            cite("huge.rs", None, "wanted"),
            cite("huge.rs", Some((1000, 1002)), "g"),
            cite("huge.rs", Some((1, 1)), "wanted"),
        ];
        let mut asked = Asked::default();
        refs.iter().for_each(|code_ref| asked.cite(code_ref));
        let wanted = BTreeMap::from([
            ("huge.rs".to_owned(), asked.clone()),
            ("small.rs".to_owned(), asked.clone()),
        ]);
        let read = read_files(dir.path(), &wanted, Parser::FRESH);
        let (huge, parse) = &read["huge.rs"];
        assert_eq!(*parse, Parse::TooLarge);
        assert_eq!(huge.lines_of("wanted"), &[1]);
        assert_eq!(huge.definitions_of("wanted"), None, "not parsed");
        let CitedFile::File {
            text: Text::Taken(_),
            line_count,
            ..
        } = huge
        else {
            panic!("kept whole");
        };
        assert_eq!(*line_count, u32::try_from(lines + 1).expect("lines"));
        let whole = scan_bytes(Arc::from(text.as_bytes()), &asked.symbols);
        for code_ref in &refs {
            let streamed = fingerprint_in(code_ref, huge);
            assert!(streamed.is_some(), "{code_ref:?}");
            assert_eq!(streamed, fingerprint_in(code_ref, &whole), "{code_ref:?}");
        }
        let (small, parse) = &read["small.rs"];
        assert_eq!(*parse, Parse::Done);
        assert_eq!(small.definitions_of("wanted"), Some(vec![(1, 1)]));
    }

    #[test]
    fn a_file_that_changed_size_while_read_is_not_taken() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.rs");
        std::fs::write(&path, "0123456789").expect("write");
        let open = || std::fs::File::open(&path).expect("open");
        let asked = Asked::default();
        let Some(CitedFile::File { line_count, .. }) = stream(open(), 10, &asked) else {
            panic!("not taken");
        };
        assert_eq!(line_count, 1);
        assert_eq!(stream(open(), 4, &asked), None, "longer now");
        assert_eq!(stream(open(), 12, &asked), None, "shorter now");
    }
}
