//! Exact lookup by name: files whose name, and directories whose name, is one of the query's
//! identifiers in any spelling convention (docs/retrieval.md#exact-lookup), and path-prefix scoping
//! (docs/retrieval.md#request-validation). Definition names are the other half of exact lookup;
//! they live in the index's `defs` field.
//!
//! Deterministic and index-free: it scores the walker's listing, so it is always fresh. Pure
//! functions over paths; no file contents are read here.

use std::path::Component;
use std::path::Path;

use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::hit::Ranking;
use crate::search::symbols;
use crate::state::walk::Listing;

/// How well `path` matches the query's identifiers (normalised, see
/// [`crate::search::tokenize::query_identifiers`]) by name: 3 for each identifier that is the
/// file's whole stem (`SocketAddr` ~ `socketaddr.rs`, `cancellation token` ~
/// `cancellation_token.rs`), 1 for one the stem contains (four characters or more), and 1 for
/// each identifier that is a directory's whole name. 0 when nothing matches.
pub fn path_score(identifiers: &[String], path: &str) -> f32 {
    // Called for every file of the tree on every query: nothing is allocated for directories.
    let (dirs, name) = path.rsplit_once('/').unwrap_or(("", path));
    let stem = symbols::normalize(name.split('.').next().unwrap_or(name));
    let mut score = 0.0;
    for identifier in identifiers {
        if stem == *identifier {
            score += 3.0;
        } else if identifier.len() >= 4 && stem.contains(identifier.as_str()) {
            score += 1.0;
        }
        let is_a_dir = !dirs.is_empty()
            && dirs
                .split('/')
                .any(|dir| symbols::normalizes_to(dir, identifier));
        if is_a_dir {
            score += 1.0;
        }
    }
    score
}

/// Directories under `prefixes` whose own name is one of the identifiers, best first.
pub fn directory_hits(listing: &Listing, identifiers: &[String], prefixes: &[String]) -> Vec<Hit> {
    let mut hits: Vec<Hit> = listing
        .dirs
        .iter()
        .filter(|dir| !dir.path.is_empty() && in_scope(prefixes, &dir.path))
        .filter_map(|dir| {
            let name = dir.path.rsplit('/').next().unwrap_or(&dir.path);
            let matched = identifiers
                .iter()
                .filter(|identifier| symbols::normalizes_to(name, identifier))
                .count();
            (matched > 0).then(|| Hit {
                kind: HitKind::Directory,
                ranking: Ranking::Exact,
                path: dir.path.clone(),
                score: matched as f32,
                start_line: None,
                end_line: None,
                excerpt: None,
                record: None,
                why: crate::search::why::Why::default(),
            })
        })
        .collect();
    crate::search::hit::sort(&mut hits);
    hits
}

/// Prefixes after normalisation, and the ones that were dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefixes {
    /// Root-relative, `/`-separated, sorted and unique.
    pub kept: Vec<String>,
    /// The prefixes given that point outside the root or use `..`.
    pub dropped: Vec<String>,
}

/// Normalises path prefixes (docs/retrieval.md#request-validation): empty and `.` mean "everything"
/// and are dropped; absolute prefixes are made relative to `root`; `.` components are removed; a
/// prefix with `..`, or outside the root, is dropped. The rest is sorted and de-duplicated.
pub fn normalize_prefixes(root: &Path, raw: &[&Path]) -> Prefixes {
    let mut prefixes = Prefixes::default();
    for &given in raw {
        let relative = if given.is_absolute() {
            match given.strip_prefix(root) {
                Ok(relative) => relative,
                Err(_) => {
                    prefixes.dropped.push(given.display().to_string());
                    continue;
                }
            }
        } else {
            given
        };
        let mut parts = Vec::new();
        let mut valid = true;
        for component in relative.components() {
            match component {
                Component::Normal(part) => match part.to_str() {
                    Some(part) => parts.push(part),
                    None => valid = false,
                },
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => valid = false,
            }
        }
        if !valid {
            prefixes.dropped.push(given.display().to_string());
        } else if !parts.is_empty() {
            prefixes.kept.push(parts.join("/"));
        }
    }
    prefixes.kept.sort();
    prefixes.kept.dedup();
    prefixes
}

/// Whether `path` is under one of `prefixes` (component-wise); everything is when none given.
pub fn in_scope(prefixes: &[String], path: &str) -> bool {
    prefixes.is_empty()
        || prefixes
            .iter()
            .any(|prefix| Path::new(path).starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::walk::DirStat;
    use crate::state::walk::FileStat;

    fn file(path: &str) -> FileStat {
        FileStat {
            path: path.to_owned(),
            size_bytes: 1,
            modified_unix_nanos: 1,
        }
    }

    #[test]
    fn path_scores_match_identifiers_across_conventions() {
        let ids = |query: &str| crate::search::tokenize::query_identifiers(query);
        assert_eq!(path_score(&ids("SocketAddr"), "src/net/socketaddr.rs"), 3.0);
        assert_eq!(
            path_score(&ids("CancellationToken"), "src/cancellation_token.rs"),
            3.0
        );
        assert_eq!(
            path_score(
                &ids("where is the cancellation token"),
                "src/cancellation_token.rs"
            ),
            3.0 + 1.0 + 1.0
        );
        assert_eq!(path_score(&ids("render"), "src/render/frame.rs"), 1.0);
        assert_eq!(path_score(&ids("the of"), "src/the_of.rs"), 0.0);
        let listing = Listing {
            files: vec![file("src/walk/mod.rs")],
            dirs: ["", "src", "src/walk", "docs/walk"]
                .iter()
                .map(|path| DirStat {
                    path: (*path).to_owned(),
                    modified_unix_nanos: 1,
                })
                .collect(),
            unreadable: Vec::new(),
        };
        let hits = directory_hits(&listing, &ids("walk"), &["src".to_owned()]);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            (hits[0].kind, hits[0].path.as_str()),
            (HitKind::Directory, "src/walk")
        );
    }

    #[test]
    fn prefixes_are_normalised_and_bad_ones_dropped() {
        let root = Path::new("/repo");
        let raw = [
            Path::new("./src/"),
            Path::new("src"),
            Path::new("/repo/crates/a"),
            Path::new("/elsewhere"),
            Path::new("../up"),
            Path::new("a/../b"),
            Path::new("."),
            Path::new(""),
        ];
        let prefixes = normalize_prefixes(root, &raw);
        assert_eq!(prefixes.kept, ["crates/a", "src"]);
        assert_eq!(prefixes.dropped, ["/elsewhere", "../up", "a/../b"]);
        assert!(in_scope(&prefixes.kept, "src/lib.rs"));
        assert!(!in_scope(&prefixes.kept, "srcx/lib.rs"));
        assert!(in_scope(&[], "anything"));
    }
}
