//! The outlines of an index generation: per parsed file, its definitions and referenced
//! names ([`crate::search::syntax::Outline`]) with the content hash they were parsed from,
//! kept in `gen-<N>/outlines.msgpack` beside the manifest. A separate file, so that a query
//! that only searches never decodes them; the map and the freshness check read them.
//!
//! A build carries the outlines of unchanged files from the previous generation and reuses
//! any whose path and content hash match (a full rebuild parses only what changed); only the
//! rest are parsed, spread over threads ([`crate::parallel`]).
//!
//! [`gather`] gives the outlines of the work tree as it is now, for the map: the index's for
//! unchanged files and files changed since parsed now; without an index, the work tree's
//! parsed files parsed now, the wanted ones first, until a time bound. Either way no parse
//! goes past the command's [`Deadline`]: the files it leaves out are named.

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use anyhow::Result;
use serde::Deserialize;
use serde::Serialize;

use crate::policy::code_map::first_pass;
use crate::search::index;
use crate::search::index::Opened;
use crate::search::manifest;
use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::search::syntax::Outline;
use crate::search::syntax::PARSER_VERSION;
use crate::state::fs;
use crate::state::walk;
use crate::state::walk::FileStat;

/// The file name in a generation directory.
pub const FILE_NAME: &str = "outlines.msgpack";
/// Why an index whose outlines these parsers cannot use is rebuilt.
pub const UNUSABLE: &str =
    "its code outlines are missing or were made by another version of the parsers";
/// The most of an outlines file that is read (256 MiB).
const LIMIT: u64 = 256 * 1024 * 1024;

/// One parsed file's outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileOutline {
    /// Path relative to the root.
    pub path: String,
    /// SHA-256 of the contents it was parsed from, hex.
    pub content_hash: String,
    /// What the file defines and references.
    pub outline: Outline,
}

/// The outlines of a generation, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outlines {
    /// One entry per parsed file.
    pub files: Vec<FileOutline>,
    /// The [`PARSER_VERSION`] they were made with; 1 when the file does not say (written
    /// before versions were, when the outlines were all there was).
    #[serde(default = "first_parser_version")]
    pub parser_version: u32,
}

fn first_parser_version() -> u32 {
    1
}

impl Default for Outlines {
    fn default() -> Self {
        Outlines {
            parser_version: PARSER_VERSION,
            files: Vec::new(),
        }
    }
}

impl Outlines {
    /// Made by these parsers.
    pub fn new(files: Vec<FileOutline>) -> Outlines {
        Outlines {
            files,
            ..Outlines::default()
        }
    }

    /// Reads the outlines at `path`, below `store_dir` (no link is followed); `None` when
    /// there are none, they do not decode or another version of the parsers made them.
    pub fn load(store_dir: &Path, path: &Path) -> Option<Outlines> {
        let bytes = fs::read_below(store_dir, path, LIMIT).ok()??;
        rmp_serde::from_slice(&bytes)
            .ok()
            .filter(|outlines: &Outlines| outlines.parser_version == PARSER_VERSION)
    }

    /// Writes them atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        fs::write_atomic(path, &rmp_serde::to_vec(self)?)
    }

    /// The files that used up their parse budget, by path.
    pub fn over_budget_files(&self) -> Vec<String> {
        (self.files.iter())
            .filter(|file| file.outline.over_budget)
            .map(|file| file.path.clone())
            .collect()
    }

    /// The outline of `path` if it was parsed from contents with hash `content_hash`.
    pub fn find(&self, path: &str, content_hash: &str) -> Option<&FileOutline> {
        let at = self
            .files
            .binary_search_by(|file| file.path.as_str().cmp(path))
            .ok()?;
        let file = &self.files[at];
        (file.content_hash == content_hash).then_some(file)
    }
}

/// Where the outlines of a map came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The index, and nothing changed since it was built.
    Index,
    /// The index, with the files changed since parsed now.
    IndexOverlay,
    /// No usable index: the work tree, parsed now.
    Scan,
}

/// The outlines of the work tree as it is now.
#[derive(Debug)]
pub struct Gathered {
    /// Parsed files with their outlines, sorted by path.
    pub files: Vec<(String, Outline)>,
    /// Where they came from.
    pub source: Source,
    /// Files of a parsed language left out because the time bound (without an index) or the
    /// command's deadline ran out, sorted.
    pub left_out: Vec<String>,
    /// What the walk of the work tree did not read, when it walked ([`walk::Listing::unreadable`]):
    /// ignore files it refused (a link, a FIFO, a device, over 1 MiB: their rules are not
    /// applied) and entries it could not read.
    pub not_read: Vec<String>,
}

/// The outlines of the parsed files under `root` as they are now: from the index in
/// `cache_dir` when it is usable, files changed since parsed now; otherwise every parsed
/// file, those `wanted` says first, then those the most other files import ([`first_pass`]),
/// parsed on every core until `budget` has passed (see [`ALWAYS_PARSED`]). No parse goes past
/// `deadline`. Fails with [`super::READ_CANCELLED`] once `cancelled`, asked before each file,
/// says the caller gave up.
pub fn gather(
    root: &Path,
    cache_dir: Option<&Path>,
    wanted: &(dyn Fn(&str) -> bool + Sync),
    budget: Duration,
    deadline: Deadline,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Gathered> {
    let started = Instant::now();
    if let Some(layout) = cache_dir.map(index::Layout::new)
        && let Opened::Ready(persistent) = index::open(&layout)
        && let Some(stored) = layout.load_outlines(persistent.manifest.generation)
    {
        let manifest = &persistent.manifest;
        let listing = super::current_listing(root, manifest);
        let changes = manifest::compare(manifest, &listing.files, root);
        let mut files: Vec<(String, Outline)> = changes
            .unchanged
            .iter()
            .filter_map(|(entry, _)| stored.find(&entry.path, &entry.content_hash))
            .map(|file| (file.path.clone(), file.outline.clone()))
            .collect();
        let mut changed: Vec<&FileStat> = changes
            .modified
            .iter()
            .map(|(_, stat, _)| *stat)
            .chain(changes.added.iter().copied())
            .filter(|stat| syntax::grammar(&stat.path).is_some())
            .collect();
        let source = if changed.is_empty() && changes.removed.is_empty() {
            Source::Index
        } else {
            Source::IndexOverlay
        };
        changed.sort_by(|a, b| a.path.cmp(&b.path));
        let (parsed, left_out) = parse_all(root, &changed, None, deadline, cancelled)?;
        files.extend(parsed);
        files.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(Gathered {
            files,
            source,
            left_out,
            not_read: listing.unreadable,
        });
    }
    let listing = walk::list(root);
    let parseable: Vec<&FileStat> = listing
        .files
        .iter()
        .filter(|stat| syntax::grammar(&stat.path).is_some())
        .collect();
    let parseable = first_pass(root, parseable, wanted, started + budget / 2);
    let bound = Some(started + budget);
    let (mut files, left_out) = parse_all(root, &parseable, bound, deadline, cancelled)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Gathered {
        files,
        source: Source::Scan,
        left_out,
        not_read: listing.unreadable,
    })
}

/// Files each thread of the first pass reads whatever the time bound, so that a slow start
/// (a busy machine, a long listing) still orders by what some files import.
const ALWAYS_READ: usize = 64;

/// `files` in the order a map without an index parses them: those `wanted` says first, then
/// the ones the most other files import ([`first_pass::order`]), reading each file's import
/// lines on every core until `deadline` (a file not read by then is ordered as if nothing
/// imported it).
fn first_pass<'a>(
    root: &Path,
    files: Vec<&'a FileStat>,
    wanted: &(dyn Fn(&str) -> bool + Sync),
    deadline: Instant,
) -> Vec<&'a FileStat> {
    let threads = crate::parallel::cores().min(files.len().div_ceil(64).max(1));
    let pieces: Vec<Vec<(usize, &FileStat)>> = (0..threads)
        .map(|first| {
            (files.iter().copied().enumerate())
                .skip(first)
                .step_by(threads)
                .collect()
        })
        .collect();
    // Each text is dropped once its words are taken: a hundred files of a megabyte each held
    // together cost as much memory as a parse is granted.
    let words: Vec<Vec<(usize, Vec<String>)>> = crate::parallel::map_pieces(&pieces, |piece| {
        (piece.iter().enumerate())
            .take_while(|(done, _)| *done < ALWAYS_READ || Instant::now() < deadline)
            .filter_map(|(_, (at, stat))| {
                let text = walk::read_text(root, stat).ok()?;
                let words = first_pass::imported_words(&text).into_iter();
                Some((*at, words.map(str::to_owned).collect()))
            })
            .collect()
    });
    let mut read: Vec<Option<Vec<String>>> = vec![None; files.len()];
    for (at, words) in words.into_iter().flatten() {
        read[at] = Some(words);
    }
    let (first, rest): (Vec<usize>, Vec<usize>) =
        (0..files.len()).partition(|&at| wanted(&files[at].path));
    let named: Vec<(&str, Option<foldhash::HashSet<&str>>)> = (rest.iter())
        .map(|&at| {
            let words = (read[at].as_ref()).map(|words| words.iter().map(String::as_str).collect());
            (files[at].path.as_str(), words)
        })
        .collect();
    let ranked = first_pass::order(&named).into_iter().map(|at| rest[at]);
    first
        .into_iter()
        .chain(ranked)
        .map(|at| files[at])
        .collect()
}

/// Files each thread parses whatever the time bound, as long as they add up to at most
/// [`ALWAYS_PARSED_BYTES`]: a grammar's first use compiles its query, which must not leave a
/// small tree half mapped.
const ALWAYS_PARSED: usize = 16;
/// The most bytes of files a thread parses past the time bound (256 KiB, about 50 ms of
/// parsing): without it, sixteen cited 1 MB files a thread kept every session start at the
/// command's 5 s parse deadline instead of the compact map's 30 ms.
const ALWAYS_PARSED_BYTES: u64 = 256 << 10;

/// Parsed files with their outlines, and the paths of the files left out.
type Parsed = (Vec<(String, Outline)>, Vec<String>);

/// Reads and parses `files` on every core, in their order on each; with a time bound, files
/// not done by then (past the first [`ALWAYS_PARSED`] of each thread, within
/// [`ALWAYS_PARSED_BYTES`]) are left out, and so are
/// files `deadline` cuts short or comes before, whatever their place: the paths left out come
/// back sorted.
fn parse_all(
    root: &Path,
    files: &[&FileStat],
    bound: Option<Instant>,
    deadline: Deadline,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Parsed> {
    let threads = crate::parallel::cores().min(files.len().div_ceil(16).max(1));
    // Interleaved, so that every thread starts with the first files.
    let pieces: Vec<Vec<&FileStat>> = (0..threads)
        .map(|first| files.iter().skip(first).step_by(threads).copied().collect())
        .collect();
    let results = crate::parallel::map_pieces(&pieces, |piece| {
        let mut parsed = Vec::new();
        let mut left_out = Vec::new();
        let mut always_bytes = 0u64;
        for (done, stat) in piece.iter().enumerate() {
            if cancelled() {
                break;
            }
            let with_this = always_bytes.saturating_add(stat.size_bytes);
            let always = done < ALWAYS_PARSED && with_this <= ALWAYS_PARSED_BYTES;
            let bound_past = !always && bound.is_some_and(|at| Instant::now() >= at);
            if bound_past || deadline.is_past() {
                left_out.push(stat.path.clone());
                continue;
            }
            if always {
                always_bytes = with_this;
            }
            let Ok(text) = walk::read_text(root, stat) else {
                continue;
            };
            // A file begun within the time bound is stopped at it too.
            let deadline = match always {
                true => deadline,
                false => deadline.or_sooner(bound),
            };
            match syntax::outline_by(&stat.path, &text, deadline) {
                Some(Ok(outline)) => parsed.push((stat.path.clone(), outline)),
                Some(Err(Late)) => left_out.push(stat.path.clone()),
                None => {}
            }
        }
        (parsed, left_out)
    });
    if cancelled() {
        anyhow::bail!(super::READ_CANCELLED);
    }
    let mut all = Vec::new();
    let mut left_out = Vec::new();
    for (parsed, left) in results {
        all.extend(parsed);
        left_out.extend(left);
    }
    left_out.sort();
    Ok((all, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outlines are MessagePack arrays: a field left out would shift every field after it.
    #[test]
    fn every_reference_form_survives_the_encoding() {
        let outline = Outline {
            macro_references: vec!["format".to_owned()],
            over_budget: true,
            ..Outline::default()
        };
        let outlines = Outlines::new(vec![FileOutline {
            path: "a.rs".to_owned(),
            content_hash: "0".repeat(64),
            outline,
        }]);
        let bytes = rmp_serde::to_vec(&outlines).expect("encodes");
        let decoded: Outlines = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(decoded, outlines);
    }
}
