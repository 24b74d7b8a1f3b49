//! The definitions of cited files, as the code-ref judge reads them
//! ([`syntax::definitions`]), kept in `cache/definitions.msgpack` under the SHA-256 of each
//! file's language and contents: every read of the state re-checks every reference that cites
//! a symbol, and parsing the cited files again each time made `freshness` (and `scene`,
//! `prompt`, the session hooks) five times slower; with this, a read parses only the cited files
//! that changed since a read last parsed them.
//!
//! Keyed by contents, the cache cannot answer for a file as it no longer is: a hit is exactly
//! what parsing those bytes gives (the parsers' version and this binary's are in the file, and a
//! file written by others is dropped whole). It lives in the ignored `cache/` directory; it is
//! read only as a regular file inside the store, never through a link, and a cache that cannot
//! be read or written costs a parse, never a failure.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Deserialize;
use serde::Serialize;
use sha2::Digest;
use sha2::Sha256;

use crate::policy::code_map::Definition;
use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::search::syntax::PARSER_VERSION;
use crate::state::fs;
use crate::state::fs::Durability;

/// The file name in the store's cache directory.
const FILE_NAME: &str = "definitions.msgpack";

/// The most of the file that is read (64 MiB).
const LIMIT: u64 = 64 * 1024 * 1024;

/// What made the definitions: the parsers' version and this binary's (the definitions query
/// changes with the binary, not always with [`PARSER_VERSION`]).
fn maker() -> String {
    format!("{PARSER_VERSION}/{}", env!("CARGO_PKG_VERSION"))
}

/// Key ([`key`]) → a file's definitions, `None` when it used up its parse budget.
type Entries = HashMap<String, Option<Vec<Definition>>>;

/// The file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    maker: String,
    /// Key ([`key`]) → the file's definitions; `None` for a file that used up its parse
    /// budget (the CPU time of its thread and its memory, which a busy machine does not
    /// shorten), so that it is not parsed again until it changes, as the index keeps it. A
    /// file the command's deadline cut short is not kept: it is parsed again next time.
    files: Entries,
}

/// The cache of one command: what the file held when opened, and what this command looked up.
#[derive(Debug)]
pub struct DefinitionCache {
    store_dir: PathBuf,
    path: PathBuf,
    known: Entries,
    /// The entries this command used, and whether it parsed any.
    used: Mutex<(Entries, bool)>,
}

/// The key of `text`, the contents of `path`: its grammar and its bytes.
fn key(path: &str, text: &str) -> Option<String> {
    let grammar = syntax::grammar(path)?;
    let mut hasher = Sha256::new();
    hasher.update(format!("{grammar:?}\0").as_bytes());
    hasher.update(text.as_bytes());
    Some(hex::encode(hasher.finalize()))
}

impl DefinitionCache {
    /// The cache in `cache_dir` of the store at `store_dir`, as far as it can be read.
    pub fn open(store_dir: &Path, cache_dir: &Path) -> DefinitionCache {
        let path = cache_dir.join(FILE_NAME);
        let stored: Stored = fs::read_below(store_dir, &path, LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| rmp_serde::from_slice(&bytes).ok())
            .filter(|stored: &Stored| stored.maker == maker())
            .unwrap_or_default();
        DefinitionCache {
            store_dir: store_dir.to_path_buf(),
            path,
            known: stored.files,
            used: Mutex::new((HashMap::new(), false)),
        }
    }

    /// What [`syntax::definitions_by`] gives for `text`, the contents of `path`: from the
    /// cache when these bytes were parsed before (or used up their budget), else parsed now
    /// within `deadline` (and kept).
    pub fn definitions(
        &self,
        path: &str,
        text: &str,
        deadline: Deadline,
    ) -> Result<Option<Vec<Definition>>, Late> {
        let Some(key) = key(path, text) else {
            return Ok(None);
        };
        let (definitions, parsed) = match self.known.get(&key) {
            Some(found) => (found.clone(), false),
            None => (syntax::definitions_by(path, text, deadline)?, true),
        };
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        used.0.insert(key, definitions.clone());
        used.1 |= parsed;
        Ok(definitions)
    }

    /// Keeps what this command used, when it parsed anything: the entries of files no longer
    /// cited, or no longer as they were, go. Best effort: a cache that cannot be written is
    /// parsed again next time.
    pub fn save(self) {
        let (files, parsed) = self
            .used
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !parsed {
            return;
        }
        let stored = Stored {
            maker: maker(),
            files,
        };
        if let (Ok(bytes), Some(dir)) = (rmp_serde::to_vec(&stored), self.path.parent()) {
            let _ = fs::create_dirs_below(&self.store_dir, dir)
                .and_then(|()| fs::replace(&self.path, &bytes, Durability::Visible));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_what_parsing_gives_and_only_parsing_is_saved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache_dir = dir.path().join("cache");
        let text = "fn a() {}\nconst B: u8 = 1;\n";
        let cache = DefinitionCache::open(dir.path(), &cache_dir);
        let parsed = cache.definitions("src/a.rs", text, Deadline::NONE);
        assert_eq!(parsed, Ok(syntax::definitions("src/a.rs", text)));
        assert_eq!(
            cache.definitions("README.md", "# a", Deadline::NONE),
            Ok(None)
        );
        cache.save();
        assert!(cache_dir.join(FILE_NAME).is_file());

        let again = DefinitionCache::open(dir.path(), &cache_dir);
        assert_eq!(again.known.len(), 1);
        assert_eq!(again.definitions("src/a.rs", text, Deadline::NONE), parsed);
        // Other bytes, or the same bytes in another language, are another key.
        assert_ne!(key("src/a.rs", text), key("src/a.rs", "fn b() {}\n"));
        assert_ne!(key("src/a.rs", text), key("src/a.c", text));
        let before = std::fs::read(cache_dir.join(FILE_NAME)).expect("cache");
        again.save();
        assert_eq!(
            std::fs::read(cache_dir.join(FILE_NAME)).expect("cache"),
            before
        );
    }

    #[test]
    fn a_cache_of_another_maker_or_unreadable_is_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache_dir = dir.path().join("cache");
        std::fs::create_dir_all(&cache_dir).expect("mkdir");
        let other = Stored {
            maker: "0/0".into(),
            files: HashMap::from([(String::from("k"), Some(Vec::new()))]),
        };
        let bytes = rmp_serde::to_vec(&other).expect("encode");
        std::fs::write(cache_dir.join(FILE_NAME), bytes).expect("write");
        assert!(
            DefinitionCache::open(dir.path(), &cache_dir)
                .known
                .is_empty()
        );
        std::fs::write(cache_dir.join(FILE_NAME), b"not msgpack").expect("write");
        assert!(
            DefinitionCache::open(dir.path(), &cache_dir)
                .known
                .is_empty()
        );
    }
}
