//! `epiphany map`: the ranked repository map, its files and key definitions within a budget.

use std::collections::HashSet;
use std::path::Path;
use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::error::Failure;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::code_map;
use crate::policy::code_map::MapFile;
use crate::policy::code_map::MapInput;
use crate::policy::code_map::Seeds;
use crate::policy::picture::Language;
use crate::search::outlines;
use crate::search::outlines::Source;
use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::state::model::State;
use crate::state::store::Store;
use crate::state::walk::max_bytes;
use crate::ui::Report;

/// The default budget of the map, in characters.
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// How long listing and parsing may take without an index: the whole command then stays
/// within about 3x a ripgrep search of a large tree (50 to 100 ms for cargo's, measured by
/// `bench/code-map.sh`), parsing what fits of a large tree and all of a small one.
pub const SCAN_BUDGET: Duration = Duration::from_millis(100);
/// The most characters of map `prompt` and the session-start hook carry.
pub const COMPACT_MAX_CHARS: usize = 1500;
/// How long they may parse without an index: they run at every session start.
const COMPACT_SCAN_BUDGET: Duration = Duration::from_millis(30);

/// Show the most central files with their key definitions' signature lines.
///
/// Files of the parsed languages (Rust, Python, JavaScript, TypeScript, Go, Java, C, C++)
/// are ranked by PageRank over which file references names which file defines, personalised
/// by what the state cites (graph nodes, more heavily the frontier and the investigation
/// checkpoint) and by every `--focus`: a path or directory, a graph node id (the files it
/// cites) or a definition's name (the files defining it). A focus ranks by what is related to
/// it, following references both ways (what it uses and what uses it, such as its tests), and
/// the focused files come first. Each file shows its definitions most referenced first; the
/// whole map fits in `--max-chars`. Uses the outlines `epiphany index`
/// stored, parsing files changed since; without an index it parses the work tree for at most
/// 100 ms, focused and cited files first, and says how many files it left out. Works with or
/// without a store; never writes anything.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rank the map around this path, directory, graph node or definition name (repeatable)
    #[arg(long = "focus", value_name = "PATH|NODE|SYMBOL")]
    pub focus: Vec<String>,
    /// The most characters the map may take
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CHARS)]
    pub max_chars: usize,
    /// How to show it: ranked text, or the shown files' reference graph as Mermaid or DOT
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// How the map (or the graph) is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Text
    Text,
    /// A Mermaid flowchart
    Mermaid,
    /// A Graphviz digraph
    Dot,
}

impl Format {
    /// The picture language, for a picture.
    pub fn language(self) -> Option<Language> {
        match self {
            Format::Text => None,
            Format::Mermaid => Some(Language::Mermaid),
            Format::Dot => Some(Language::Dot),
        }
    }
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("The most central files and their key definitions, ranked around `focus` and what the state cites. Use it to find your way in unfamiliar code.").report(schema_of::<MapReport>);

/// The ranked map.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MapReport {
    /// Where the outlines came from: `index`, `index_overlay` (the index plus the files
    /// changed since, parsed now) or `scan` (no usable index; parsed now).
    pub source: Source,
    /// Parsed files ranked.
    pub ranked_files: usize,
    /// Files of a parsed language left out because parsing ran out of time (without an index,
    /// or the command's own time to parse).
    pub left_out_files: usize,
    /// What the walk of the work tree did not read: ignore files it refused (a link, a FIFO, a
    /// device, over 1 MiB; their rules are not applied) and entries it could not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
    /// The shown files, best first, with their key definitions.
    pub files: Vec<MapFile>,
    /// The picture (`--format mermaid|dot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picture: Option<String>,
}

impl Report for MapReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some(picture) = &self.picture {
            return out.write_all(picture.as_bytes());
        }
        if self.ranked_files == 0 {
            return writeln!(out, "no parsed source files");
        }
        if self.files.is_empty() {
            return writeln!(out, "no file fits in the budget (raise --max-chars)");
        }
        out.write_all(code_map::render(&self.files).as_bytes())
    }
}

/// The outlines of the tree at `root` (from the index in `cache_dir`, or parsed now for at
/// most the scan budget), no parse past the deadline, and the seeds of its ranking: what
/// `state` cites and every focus. A focus that names nothing is a usage error; the parsing
/// stops once `cancelled` says so.
pub fn build(
    root: &std::path::Path,
    cache_dir: Option<&std::path::Path>,
    state: Option<&State>,
    focus: &[String],
    (budget, deadline): (Duration, Deadline),
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<(outlines::Gathered, Seeds)> {
    let mut seeds = state.map(Seeds::from_state).unwrap_or_default();
    let wanted: HashSet<String> = seeds.paths.keys().cloned().collect();
    let focus_paths: Vec<String> = focus
        .iter()
        .map(|focus| {
            focus
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_owned()
        })
        .collect();
    let is_wanted = |path: &str| {
        wanted.contains(path)
            || focus_paths
                .iter()
                .any(|focus| path == focus || is_under(path, focus))
    };
    let gathered = outlines::gather(root, cache_dir, &is_wanted, budget, deadline, cancelled)?;
    for (raw, focus) in focus.iter().zip(&focus_paths) {
        let before = seeds.clone();
        let nodes = state
            .into_iter()
            .flat_map(|state| state.graphs.each())
            .flat_map(|(_, graph)| &graph.nodes)
            .filter(|node| node.id == *raw);
        for node in nodes {
            for code_ref in &node.code_refs {
                seeds.add_focus(&code_ref.path);
                seeds.symbols.extend(code_ref.symbol.clone());
            }
        }
        for (path, outline) in &gathered.files {
            if path == focus || is_under(path, focus) {
                seeds.add_focus(path);
            }
            if outline.named(raw).next().is_some() {
                seeds.add_focus(path);
                seeds.symbols.insert(raw.clone());
            }
        }
        if seeds == before {
            return Err(Failure::usage(unfocused(root, raw, focus))
            .with_hint("focus on a path relative to the repository root, a node id from `epiphany graph`, or a function, type or class name")
            .into());
        }
    }
    Ok((gathered, seeds))
}

/// Why `--focus raw` (the path `focus`) found nothing to focus on: a file the map does not read
/// says so, rather than that it is not there.
fn unfocused(root: &Path, raw: &str, focus: &str) -> String {
    let size = std::fs::metadata(root.join(focus))
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|meta| meta.len());
    match size {
        Some(bytes) if bytes > max_bytes(focus) => format!(
            "`--focus {raw}` is a file of {bytes} bytes, larger than the map reads ({} bytes): it has no outline",
            max_bytes(focus)
        ),
        Some(_) if syntax::grammar(focus).is_none() => {
            format!("`--focus {raw}` is a file in a language the map does not parse")
        }
        _ => format!("`--focus {raw}` names no parsed file, directory, graph node or definition"),
    }
}

fn is_under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The compact map `prompt` and the session-start hook carry: the file blocks (path line and
/// definition lines, best first) of at most [`COMPACT_MAX_CHARS`], seeded by the state, parsed
/// within the command's deadline; when parsing ran out of time, a last block names what it
/// left out.
pub fn compact_blocks(ctx: &Ctx, store: &Store, state: &State) -> Vec<String> {
    let Ok((gathered, seeds)) = build(
        store.root(),
        Some(&store.cache_dir()),
        Some(state),
        &[],
        (COMPACT_SCAN_BUDGET, ctx.parse_deadline()),
        &|| false,
    ) else {
        return Vec::new();
    };
    let selected = code_map::select(ranked(&gathered, &seeds), COMPACT_MAX_CHARS);
    (selected.iter())
        .map(|file| code_map::render(std::slice::from_ref(file)))
        .chain(code_map::left_out_line(&gathered.left_out))
        .collect()
}

/// Says on stderr what the walk of the work tree did not read, if anything (`map`, `retrieve`).
pub fn note_not_read(ctx: &Ctx, not_read: &[String]) {
    if !not_read.is_empty() {
        ctx.ui.warn(&format!(
            "{} path(s) not read: ignore files that are links, FIFOs, devices or over 1 MiB are \
             refused and their rules not applied, and entries that cannot be read are skipped: {}",
            not_read.len(),
            not_read.join(", ")
        ));
    }
}

/// The ranked files of gathered outlines.
pub fn ranked(gathered: &outlines::Gathered, seeds: &Seeds) -> Vec<MapFile> {
    code_map::ranked(&inputs(gathered), seeds)
}

fn inputs(gathered: &outlines::Gathered) -> Vec<MapInput<'_>> {
    (gathered.files.iter())
        .filter_map(|(path, outline)| {
            let scoping = syntax::scoping(path)?;
            Some(MapInput {
                path,
                scoping,
                outline,
            })
        })
        .collect()
}

/// Runs `map`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let store = ctx.store().ok();
    let root = store.as_ref().map_or(ctx.cwd.as_path(), Store::root);
    let head = store
        .as_ref()
        .and_then(|store| store.head_with_newest(0).ok());
    let state = head
        .as_ref()
        .filter(|head| head.has_state())
        .map(|head| &head.state);
    let cache_dir = store.as_ref().map(Store::cache_dir);
    let cancel = &ctx.cancel;
    let cancelled = || cancel.is_set();
    let (gathered, seeds) = build(
        root,
        cache_dir.as_deref(),
        state,
        &args.focus,
        (SCAN_BUDGET, ctx.parse_deadline()),
        &cancelled,
    )?;
    if let Some(line) = code_map::left_out_line(&gathered.left_out) {
        ctx.ui.status(&format!("note: {line}"));
    }
    note_not_read(ctx, &gathered.not_read);
    let files = code_map::select(ranked(&gathered, &seeds), args.max_chars);
    let picture = args
        .format
        .language()
        .map(|language| code_map::picture(&files, &inputs(&gathered), language));
    ctx.ui.emit(&MapReport {
        source: gathered.source,
        ranked_files: gathered.files.len(),
        left_out_files: gathered.left_out.len(),
        not_read: gathered.not_read,
        files,
        picture,
    })?;
    Ok(Status::Ok)
}
