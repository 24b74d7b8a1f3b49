//! `epiphany retrieve`: ranked files and line ranges for a question about the code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::map::note_not_read;
use crate::policy::code_map;
use crate::cmd::schema_of;
use crate::policy::secrets::redacted;
use crate::search;
use crate::search::QUERY_TIME_REVISION;
use crate::search::exact;
use crate::search::hit::Hit;
use crate::search::hit::HitKind;
use crate::search::retrieve;
use crate::search::retrieve::Request;
use crate::search::retrieve::SearchPath;
use crate::search::why::Why;
use crate::state::model::RetrievalState;
use crate::state::model::RetrievalStatus;
use crate::state::store::Store;
use crate::ui::Report;

/// Lines of each excerpt shown in the human output; the rest are counted. Ten hits then
/// print at most about 150 lines, and an excerpt's first lines hold its first match: the
/// JSON output carries every line (at most 24).
const HUMAN_EXCERPT_LINES: usize = 12;

/// Find the files and lines that answer a question about the code.
///
/// Fuses BM25 search over overlapping chunks of every text file (code-aware tokens:
/// `validatePatch` matches "validate patch"; paths and definition names count too) with exact
/// lookup of the identifiers the query names (files and definitions, across conventions:
/// `SocketAddr` finds `socketaddr.rs` and `struct SocketAddr`), by reciprocal rank. Uses the index built by `epiphany index` when
/// there is one; files changed since are searched as they are now and listed as dirty. Works in
/// any directory, with or without a store: without an index it searches at query time. Never
/// writes anything.
///
/// `--mode semantic` ranks chunks by cosine similarity between their vectors and the query's,
/// with the embedding model the index was built with (`epiphany index --model DIR`); it
/// fails, saying why, when the index has no vectors. Hybrid does not use the vectors: fused
/// in, they did not improve ranking on the development sets.
///
/// With `-q`, prints nothing and exits 0 when something was found, 1 when nothing was.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to look for: words, identifiers or a question (several words are joined)
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Show at most N results (clamped to 1-50)
    #[arg(long, short = 'n', value_name = "N", default_value_t = retrieve::DEFAULT_LIMIT)]
    pub limit: usize,
    /// Only search under this path, relative to the workspace root (repeatable)
    #[arg(long = "path-prefix", value_name = "P")]
    pub path_prefixes: Vec<PathBuf>,
    /// Which searches to run
    #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
    pub mode: ModeArg,
    /// What to search: the code, the state's records (current and superseded), or both
    #[arg(long, value_enum, default_value_t = ScopeArg::Code)]
    pub scope: ScopeArg,
}

/// What to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// The work tree's files
    Code,
    /// The state's records: observations, evidence, graph nodes and edges, checkpoint,
    /// planning, and records superseded or rolled back (from the rollout)
    State,
    /// Code and state, fused by rank
    All,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("Find the files and lines that answer a question about the code, by keyword and identifier search; `scope` also searches the state's records. Works without an index.").report(schema_of::<RetrieveReport>);

/// Which searches to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Chunk search and exact lookup, fused by reciprocal rank
    Hybrid,
    /// Files and definitions named by the query's identifiers (`SocketAddr` ~ `socket_addr`)
    Exact,
    /// BM25 chunk search alone
    Lexical,
    /// Embedding search alone: chunks by cosine similarity to the query (needs an index built
    /// with `epiphany index --model DIR`)
    Semantic,
}

/// The ranked answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RetrieveReport {
    /// The query as answered, its secrets redacted: a report never shows back a secret typed.
    query: String,
    index: RetrievalState,
    /// How the query was answered: `index`, `index_overlay` (the index plus the files changed
    /// since, read now) or `scan` (no usable index; the work tree was searched).
    search: SearchPath,
    /// Why an existing index was not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    index_problem: Option<String>,
    /// Files of a parsed language searched without their definitions because parsing ran out
    /// of the command's time (their text was searched; a note on stderr names them).
    left_out_files: usize,
    results: Vec<Hit>,
}

impl Report for RetrieveReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.results.is_empty() {
            return writeln!(out, "no results for `{}`", self.query);
        }
        for (rank, hit) in self.results.iter().enumerate() {
            if rank > 0 {
                writeln!(out)?;
            }
            let why = why_line(&hit.why);
            match (hit.kind, hit.start_line, hit.end_line) {
                (HitKind::Chunk | HitKind::Definition, Some(start), Some(end)) => {
                    writeln!(out, "{}:{start}-{end}  ({:.2}){why}", hit.path, hit.score)?;
                    excerpt_lines(out, hit, Some(start))?;
                }
                (HitKind::StateRecord, _, _) => {
                    if let Some(record) = &hit.record {
                        writeln!(
                            out,
                            "{} {} (revision {}, {})  ({:.2}){why}",
                            record.kind, record.id, record.revision, record.status, hit.score
                        )?;
                    }
                    excerpt_lines(out, hit, None)?;
                }
                (HitKind::Directory, _, _) => {
                    writeln!(out, "{}/  ({:.2}, directory name){why}", hit.path, hit.score)?;
                }
                _ => writeln!(out, "{}  ({:.2}, file name){why}", hit.path, hit.score)?,
            }
        }
        Ok(())
    }
}

/// The first [`HUMAN_EXCERPT_LINES`] lines of a hit's excerpt, numbered from `start` when it
/// has line numbers, and how many more there are.
fn excerpt_lines(out: &mut dyn Write, hit: &Hit, start: Option<u32>) -> std::io::Result<()> {
    let lines: Vec<&str> = hit.excerpt.iter().flat_map(|text| text.lines()).collect();
    for (at, line) in lines.iter().take(HUMAN_EXCERPT_LINES).enumerate() {
        let shown = match start {
            Some(start) => format!("  {:>5}  {line}", start as usize + at),
            None => format!("         {line}"),
        };
        writeln!(out, "{}", shown.trim_end())?;
    }
    if lines.len() > HUMAN_EXCERPT_LINES {
        writeln!(out, "         ({} more lines)", lines.len() - HUMAN_EXCERPT_LINES)?;
    }
    Ok(())
}

/// Why a hit matched, as a line's tail: `  matched a, b; path c; defines Name (line 7)`.
fn why_line(why: &Why) -> String {
    let mut parts = Vec::new();
    if !why.terms.is_empty() {
        parts.push(format!("matched {}", why.terms.join(", ")));
    }
    if !why.path.is_empty() {
        parts.push(format!("path {}", why.path.join(", ")));
    }
    if let Some(defined) = &why.definition {
        parts.push(format!("defines {} (line {})", defined.name, defined.line));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("  {}", parts.join("; "))
    }
}

/// The state's records that match `query`, as hits. The head state and the rollout's
/// patches go to [`search::state::state_docs`] as JSON, so this is the only place that knows
/// how the store hands them out.
fn state_hits(store: &Store, query: &str, limit: usize) -> Result<Vec<Hit>> {
    let head = store.head()?;
    let revision = head.state.revision;
    let state = serde_json::to_value(&head.state)?;
    let patches: Vec<(u64, serde_json::Value)> = store
        .sound_history()?
        .records
        .iter()
        .enumerate()
        .filter_map(|(at, record)| {
            let mut patch = serde_json::to_value(record.patch.as_ref()?).ok()?;
            // Upserted records count as records of their collection; removals hold no text.
            let object = patch.as_object_mut()?;
            object.remove("remove");
            if let Some(serde_json::Value::Object(upserted)) = object.remove("upsert") {
                object.extend(upserted);
            }
            Some((at as u64 + 1, patch))
        })
        .collect();
    let docs = search::state::state_docs(&state, revision, &patches);
    Ok(search::state::hits(
        search::state::search(&docs, query, limit)?,
        query,
    ))
}

/// The files the map's nodes and edges that match `query` cite, best first; none when the
/// head does not load (the code search does not depend on the map).
fn map_citations(store: &Store, query: &str) -> Vec<String> {
    let Ok(head) = store.head_with_newest(0) else {
        return Vec::new();
    };
    let Ok(graphs) = serde_json::to_value(&head.state.graphs) else {
        return Vec::new();
    };
    let state = serde_json::json!({ "graphs": graphs });
    let docs = search::state::state_docs(&state, head.state.revision, &[]);
    search::state::map_citations(&docs, query).unwrap_or_default()
}

/// Runs `retrieve`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        query,
        limit,
        path_prefixes,
        mode,
        scope,
    } = args;
    let store = ctx.store().ok();
    let root = store.as_ref().map_or(ctx.cwd.as_path(), Store::root);
    let raw: Vec<&std::path::Path> = path_prefixes.iter().map(PathBuf::as_path).collect();
    let prefixes = exact::normalize_prefixes(root, &raw);
    for dropped in &prefixes.dropped {
        ctx.ui.warn(&format!(
            "ignoring `--path-prefix {dropped}`: it leaves the workspace root `{}`",
            root.display()
        ));
    }
    let mode = match mode {
        ModeArg::Hybrid => retrieve::Mode::Hybrid,
        ModeArg::Exact => retrieve::Mode::Exact,
        ModeArg::Lexical => retrieve::Mode::Lexical,
        ModeArg::Semantic => retrieve::Mode::Semantic,
    };
    let mut request = Request::new(&query.join(" "), Some(*limit), prefixes.kept, mode)?
        .with_deadline(ctx.parse_deadline());
    if let (Some(store), ScopeArg::Code | ScopeArg::All) = (&store, scope) {
        request = request.with_cited(map_citations(store, &query.join(" ")));
    }
    let cache_dir = store.as_ref().map(Store::cache_dir);
    let cancel = &ctx.cancel;
    let now = ctx.now.as_second();
    let answer =
        retrieve::retrieve(root, cache_dir.as_deref(), &request, now, &|| cancel.is_set())?;
    note_not_read(ctx, &answer.not_read);
    if let Some(named) = code_map::first_named(&answer.left_out) {
        ctx.ui.status(&format!(
            "note: {} file(s) searched without their definitions, parsing ran out of time: \
             {named} (`epiphany index` parses them all)",
            answer.left_out.len()
        ));
    }
    let dirty = answer.index.dirty_paths.len();
    if answer.index.status == RetrievalStatus::Stale && dirty > 0 {
        ctx.ui.status(&format!(
            "note: {dirty} file(s) changed since `epiphany index`; searched as they are now"
        ));
    } else if store.is_some() && answer.index.index_revision.as_deref() == Some(QUERY_TIME_REVISION)
    {
        ctx.ui
            .hint("no search index yet: run `epiphany index` to make searches faster");
    }
    let results = match scope {
        ScopeArg::Code => answer.results,
        ScopeArg::State | ScopeArg::All => {
            let Some(store) = store.as_ref() else {
                return Err(Failure::usage("`--scope state` needs a store")
                    .with_hint("run `epiphany init` first, or search code with `--scope code`")
                    .into());
            };
            let hits = state_hits(store, &answer.query, request.limit())?;
            if *scope == ScopeArg::State {
                hits
            } else {
                search::state::fuse(answer.results, hits, request.limit())
            }
        }
    };
    let found = !results.is_empty();
    ctx.ui.emit(&RetrieveReport {
        query: redacted(&answer.query).into_owned(),
        index: answer.index,
        search: answer.search,
        index_problem: answer.index_problem,
        left_out_files: answer.left_out.len(),
        results,
    })?;
    Ok(if ctx.ui.quiet() && !found {
        Status::No
    } else {
        Status::Ok
    })
}
