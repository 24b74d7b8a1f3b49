//! `epiphany node set|rm`: write one graph node, or remove it with what names it, in one line.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::update::WROTE_NOTHING;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::write_edit;
use crate::cmd::update::write_outcome_schema;
use crate::code_refs::resolve_typed_refs;
use crate::cmd::Tool;
use crate::policy::code_ref::parse_code_ref;
use crate::policy::one_line::map::NodeChanges;
use crate::policy::one_line::map::node_rm;
use crate::policy::one_line::map::node_set;
use crate::state::model::CodeRef;
use crate::state::model::GraphKind;
use crate::state::problem::Problem;

/// Write or remove one node of the architecture or dataflow graph.
///
/// `node set ID` creates the node (it needs `--purpose`; its title defaults to its id) or
/// changes the values given and keeps the rest; `--ref` replaces its code refs. Without
/// `--graph`, the node is looked for in both graphs, and a new one goes to the architecture
/// graph. Rewriting a node unchanged writes nothing: to say a node still holds after the code
/// it cites changed, run `epiphany recheck ID`.
///
/// `node rm ID` removes the node, the edges and links that name it, and its place (and its
/// edges' places) on the frontier and the graph checkpoint, in one write, and lists what it
/// removed.
///
/// Each reads the node as it stands when the write takes the store lock, so a concurrent
/// write of another of its values is kept; `--expected-revision` refuses any other revision.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// `node` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Create a node, or change the values given and keep the rest
    Set(SetArgs),
    /// Remove a node and every edge, link and frontier entry that names it, listing them
    Rm(RmArgs),
}

/// `node set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The node id
    pub id: String,
    /// Short title (a new node's defaults to its id)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// What it is for (required for a new node)
    #[arg(long, value_name = "TEXT")]
    pub purpose: Option<String>,
    /// How it works
    #[arg(long, value_name = "TEXT")]
    pub mechanism: Option<String>,
    /// Free-form status (`candidate`, `verified`, ...)
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Where it lives in the code: PATH[:START[-END]][#SYMBOL] (repeatable; replaces its refs)
    #[arg(long = "ref", value_name = "REF", value_parser = parse_code_ref)]
    pub refs: Vec<CodeRef>,
    /// Which graph (default: the one that holds the node, else architecture)
    #[arg(long, value_name = "GRAPH", value_parser = graph_kind)]
    pub graph: Option<GraphKind>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// `node rm`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// The node id
    pub id: String,
    /// Which graph (default: the one that holds the node)
    #[arg(long, value_name = "GRAPH", value_parser = graph_kind)]
    pub graph: Option<GraphKind>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Nodes are the components of the architecture or dataflow graph, each citing the code it lives in (`refs`, each `PATH[:START[-END]][#SYMBOL]`).").report(write_outcome_schema);

/// `architecture` or `dataflow`: the value parser of `--graph`, whose problem clap prints
/// after the argument and its value, as it does [`parse_code_ref`]'s.
pub fn graph_kind(text: &str) -> Result<GraphKind, Problem> {
    match text {
        "architecture" => Ok(GraphKind::Architecture),
        "dataflow" => Ok(GraphKind::Dataflow),
        other => Err(Problem::whole(format!(
            "`{other}` is no graph; use `architecture` or `dataflow`"
        ))),
    }
}

/// Runs `node`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    match &args.action {
        Action::Set(args) => set(ctx, args),
        Action::Rm(args) => rm(ctx, args),
    }
}

fn set(ctx: &Ctx, args: &SetArgs) -> Result<Status> {
    let SetArgs {
        id,
        title,
        purpose,
        mechanism,
        status,
        refs,
        graph,
        flags,
    } = args;
    let store = ctx.store()?;
    let changes = NodeChanges {
        title: title.as_deref(),
        purpose: purpose.as_deref(),
        mechanism: mechanism.as_deref(),
        status: status.as_deref(),
        refs: (!refs.is_empty())
            .then(|| {
                resolve_typed_refs(ctx, refs, flags.allow_missing_paths, "--ref", WROTE_NOTHING)
            })
            .transpose()?,
    };
    write_edit(ctx, &store, flags, "the node was not written", |state| {
        node_set(state, id, *graph, changes)
    })
}

fn rm(ctx: &Ctx, args: &RmArgs) -> Result<Status> {
    let RmArgs { id, graph, flags } = args;
    let store = ctx.store()?;
    write_edit(ctx, &store, flags, "the node was not removed", |state| {
        node_rm(state, id, *graph)
    })
}
