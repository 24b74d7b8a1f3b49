//! Exact/path search (§14.5): files and directories whose path contains every query term,
//! scored by where the terms appear, and path-prefix scoping (§14.4).
//!
//! Deterministic and index-free: it scores the walker's listing, so it is always fresh. Pure
//! functions over paths; no file contents are read here.

use std::path::Component;
use std::path::Path;

use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::state::walk::Listing;

/// The exact-search terms: the query split on every non-alphanumeric character, lowercased.
pub fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|piece| !piece.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The score of `path` for `terms`, or `None` when some term is not in the path.
pub fn score(terms: &[String], path: &str) -> Option<i64> {
    if terms.is_empty() {
        return None;
    }
    let lower = path.to_lowercase();
    if !terms.iter().all(|term| lower.contains(term.as_str())) {
        return None;
    }
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let mut total: i64 = terms
        .iter()
        .map(|term| {
            let in_name = if name.contains(term.as_str()) { 30 } else { 0 };
            in_name + 20
        })
        .sum();
    let joined: Vec<String> = [" ", "_", "-"]
        .iter()
        .map(|separator| terms.join(separator))
        .collect();
    total += if joined.iter().any(|phrase| name == phrase) {
        200
    } else if joined.iter().any(|phrase| name.contains(phrase.as_str())) {
        100
    } else if joined.iter().any(|phrase| lower.contains(phrase.as_str())) {
        50
    } else {
        0
    };
    let depth = path.split('/').count();
    Some(total - i64::try_from(depth).unwrap_or(i64::MAX))
}

/// The best `limit` exact hits among the listed files and directories under `prefixes`.
pub fn search(listing: &Listing, query: &str, prefixes: &[String], limit: usize) -> Vec<Hit> {
    let terms = terms(query);
    if terms.is_empty() {
        return Vec::new();
    }
    let files = listing
        .files
        .iter()
        .map(|file| (HitKind::ExactFile, file.path.as_str()));
    let dirs = listing
        .dirs
        .iter()
        .filter(|dir| !dir.path.is_empty())
        .map(|dir| (HitKind::ExactDirectory, dir.path.as_str()));
    let mut hits: Vec<Hit> = files
        .chain(dirs)
        .filter(|(_, path)| in_scope(prefixes, path))
        .filter_map(|(kind, path)| {
            score(&terms, path).map(|score| Hit {
                kind,
                path: path.to_owned(),
                score: score as f32,
                start_line: None,
                end_line: None,
                excerpt: None,
            })
        })
        .collect();
    crate::search::hit::sort(&mut hits);
    hits.truncate(limit);
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

/// Normalises path prefixes (§14.4): empty and `.` mean "everything" and are dropped; absolute
/// prefixes are made relative to `root`; `.` components are removed; a prefix with `..`, or
/// outside the root, is dropped. The rest is sorted and de-duplicated.
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
    fn spec_vector_scores_198() {
        let terms = terms("session checkpoint");
        assert_eq!(score(&terms, "src/session_checkpoint.rs"), Some(198));
    }

    #[test]
    fn every_term_must_be_in_the_path() {
        let terms = terms("Session, store!");
        assert_eq!(terms, ["session", "store"]);
        assert_eq!(score(&terms, "src/session.rs"), None);
        // 30+20 (session in name) + 20 (store in path) + 0 phrase - 2 depth
        assert_eq!(score(&terms, "store/session.rs"), Some(68));
        assert_eq!(score(&[], "a.rs"), None);
        // exact file-name phrase match: 200
        assert_eq!(score(&terms, "x/session-store"), Some(100 + 200 - 2));
    }

    #[test]
    fn search_ranks_files_before_directories_and_respects_prefixes() {
        let listing = Listing {
            files: vec![file("src/walk.rs"), file("docs/walk.md"), file("lib.rs")],
            dirs: ["", "src", "src/walk"]
                .iter()
                .map(|path| DirStat {
                    path: (*path).to_owned(),
                    modified_unix_nanos: 1,
                })
                .collect(),
            unreadable: 0,
        };
        let hits = search(&listing, "walk", &[], 10);
        let got: Vec<(HitKind, &str)> = hits.iter().map(|h| (h.kind, h.path.as_str())).collect();
        assert_eq!(
            got,
            [
                (HitKind::ExactFile, "docs/walk.md"),
                (HitKind::ExactFile, "src/walk.rs"),
                (HitKind::ExactDirectory, "src/walk"),
            ]
        );
        let scoped = search(&listing, "walk", &["src".to_owned()], 1);
        assert_eq!(scoped.len(), 1);
        assert_eq!(scoped[0].path, "src/walk.rs");
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
