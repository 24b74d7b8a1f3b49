//! The files a proposal's nodes cite, read from the work tree as it is now and parsed for what
//! they define, reference and import ([`syntax::uses`]): what `propose` draws its edges from
//! (docs/drafting.md#reference-edges). Nothing is kept; the index is not read, since its
//! outlines hold names without their places.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use crate::policy::code_map::uses::FileUses;
use crate::search::syntax;
use crate::state::fs;
use crate::state::walk;

/// Files each thread parses whatever the time: the first files are the ones the proposal
/// itself cites, and a grammar's first use compiles its query.
const ALWAYS_PARSED: usize = 16;

/// The files at `paths` (slash paths below `root`), by path, parsed on every core in the order
/// given (the most wanted first) until `budget` has passed; the first `ALWAYS_PARSED` of each
/// thread are parsed whatever the time. A file that is missing, outside `root`, behind a
/// symbolic link, too large, not text, or in a language that is not parsed, is left out.
pub fn parse_cited(root: &Path, paths: &[String], budget: Duration) -> BTreeMap<String, FileUses> {
    let deadline = Instant::now() + budget;
    let threads = crate::parallel::cores().min(paths.len().div_ceil(8).max(1));
    // Interleaved, so that every thread starts with the most wanted files.
    let pieces: Vec<Vec<&String>> = (0..threads)
        .map(|first| paths.iter().skip(first).step_by(threads).collect())
        .collect();
    let parsed = crate::parallel::map_pieces(&pieces, |piece| {
        let mut parsed = Vec::new();
        for (done, path) in piece.iter().enumerate() {
            if done >= ALWAYS_PARSED && Instant::now() >= deadline {
                break;
            }
            let climbs = path.starts_with('/') || path.split('/').any(|part| part == "..");
            if climbs || syntax::grammar(path).is_none() {
                continue;
            }
            let read = fs::read_below(root, &root.join(path), walk::max_bytes(path));
            let Some(text) =
                (read.ok().flatten()).and_then(|bytes| walk::text_of(path, bytes).ok())
            else {
                continue;
            };
            if let Some(uses) = syntax::uses(path, &text) {
                parsed.push(((*path).clone(), uses));
            }
        }
        parsed
    });
    parsed.into_iter().flatten().collect()
}
