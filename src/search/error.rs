//! What can go wrong in a search, typed. The command layer (`crate::error`) decides the exit
//! code and the hint a user reads, so nothing here names a command or a flag.

use std::path::PathBuf;

/// A retrieval failure a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query is blank.
    #[error("query must not be empty")]
    EmptyQuery,
    /// A query longer than a search takes ([`crate::search::retrieve::MAX_QUERY_WORDS`],
    /// [`crate::search::retrieve::MAX_QUERY_BYTES`]).
    #[error(
        "the query is too long: {words} words in {bytes} bytes, where a search takes at most {max_words} words in {max_bytes} bytes"
    )]
    QueryTooLong {
        /// Its words (runs of non-blank characters).
        words: usize,
        /// Its length in bytes, trimmed.
        bytes: usize,
        /// The most words taken.
        max_words: usize,
        /// The most bytes taken.
        max_bytes: usize,
    },
    /// A result limit of zero.
    #[error("`--limit` must be greater than zero")]
    ZeroLimit,
    /// Semantic search was asked for but the index has no usable vectors.
    #[error("semantic search is not available: {reason}")]
    SemanticUnavailable {
        /// Why not: no index, no model recorded, or a model or vectors that no longer load.
        reason: String,
    },
    /// Another index run holds the index lock.
    #[error("another `epiphany index` holds `{}`", .path.display())]
    IndexBusy {
        /// The lock file.
        path: PathBuf,
    },
}
