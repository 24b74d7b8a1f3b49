//! `epiphany` keeps a coding agent's durable, typed understanding of a repository in a
//! git-tracked `.epiphany/` directory, and gives fast hybrid code retrieval over the same
//! repository.
//!
//! A tour of the crate:
//! - [`cli`] is the process boundary: it parses the command line, builds the per-process
//!   [`ctx::Ctx`] (the only reader of the environment and the clock) and maps results to exit
//!   codes; [`ui`] is the only module that prints; [`error`] classifies failures.
//! - [`cmd`] holds the command line's definition and one thin module per subcommand: resolve
//!   arguments, read through `state`, decide through `policy`, search through `search`, hand a
//!   report to `ui`. `cmd::mcp` serves the commands as Model Context Protocol tools, through
//!   the same parser and dispatch as the command line.
//! - [`state`] owns the typed model and its persistence: the rollout of content-addressed
//!   records and its fold, the MessagePack snapshots, the locked write path, the file walker
//!   and the git adapter.
//! - [`search`] owns retrieval: chunking, tokenization, the tantivy index and its manifest.
//! - [`policy`] is pure decision logic over the state and explicit inputs: validation,
//!   drafting and gating, and every projection. It never touches the file system,
//!   the clock, the environment or git.
//! - Beside the commands, the glue several of them share: [`input`] reads patch documents and
//!   streamed text, [`render`] holds the shared human text and the draft report, [`signals`]
//!   gathers the live signals projections read (git changes, the index, cited files; which
//!   commits to compare with is `policy::freshness`'s decision), and
//!   [`code_refs`] checks and re-reads code references against the work tree, and [`write`] is
//!   the one write path of a patch, whichever command writes it.
//! - [`parallel`] spreads independent pieces of work (rollout parsing, hit excerpts) over the
//!   cores.
//!
//! The crate is a library only for its binary and its tests: `pub` is kept for what they use
//! (`cli::main` and the allocator's counter in `search::syntax` for `src/main.rs`; the command
//! definition, and the code-reference reading and judging the property tests drive, for
//! `tests/`), and everything else is visible to the crate alone, so the compiler reports what
//! nothing uses.
//!
//! [`write`]: mod@write

pub mod cli;
pub mod cmd;
pub mod code_refs;
pub(crate) mod ctx;
pub(crate) mod error;
pub(crate) mod input;
pub(crate) mod parallel;
pub mod policy;
pub(crate) mod render;
pub mod search;
pub(crate) mod signals;
pub mod state;
pub(crate) mod ui;
pub(crate) mod wire;
pub(crate) mod write;
