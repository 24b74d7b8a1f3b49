//! `epiphany edge add|rm`: write one graph edge, or remove it, in one line.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::node::graph_kind;
use crate::cmd::update::WROTE_NOTHING;
use crate::cmd::update::WriteFlags;
use crate::cmd::update::input_failure;
use crate::cmd::update::write_edit;
use crate::cmd::update::write_outcome_schema;
use crate::code_refs::resolve_typed_refs;
use crate::cmd::Tool;
use crate::policy::code_ref::parse_code_ref;
use crate::policy::one_line::map::EdgeInput;
use crate::policy::one_line::map::edge_add;
use crate::policy::one_line::map::edge_rm;
use crate::state::model::CodeRef;
use crate::state::model::GraphKind;
use crate::state::patch::EdgeRef;
use crate::state::problem::Problem;

/// Add or remove one edge between two nodes of the same graph.
///
/// `edge add SOURCE TARGET --kind K` writes the edge (an edge with the same `--id`, or with
/// the same ends and kind, is replaced); the graph is the one that holds both nodes unless
/// `--graph` says. `edge rm SOURCE TARGET --kind K` or `edge rm --id ID` removes one (and its
/// id from the frontier) and lists what it removed. Each reads the graph as it stands when the
/// write takes the store lock; `--expected-revision` refuses any other revision.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// `edge` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add an edge (or replace the one with the same id, or the same ends and kind)
    Add(AddArgs),
    /// Remove an edge, named by its ends and kind or by its id
    Rm(RmArgs),
}

/// `edge add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The source node id
    pub source: String,
    /// The target node id
    pub target: String,
    /// The relation (`calls`, `feeds`, ...)
    #[arg(long, value_name = "KIND")]
    pub kind: String,
    /// An id for the edge (edges may be anonymous)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Short label
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Where it lives in the code: PATH[:START[-END]][#SYMBOL] (repeatable)
    #[arg(long = "ref", value_name = "REF", value_parser = parse_code_ref)]
    pub refs: Vec<CodeRef>,
    /// Which graph (default: the one that holds both nodes)
    #[arg(long, value_name = "GRAPH", value_parser = graph_kind)]
    pub graph: Option<GraphKind>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// `edge rm`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// The source node id (with TARGET and `--kind`)
    #[arg(requires_all = ["target", "kind"], conflicts_with = "id")]
    pub source: Option<String>,
    /// The target node id
    pub target: Option<String>,
    /// The relation
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// The edge's id, instead of its ends and kind
    #[arg(long, value_name = "ID", required_unless_present = "source")]
    pub id: Option<String>,
    /// Which graph (default: the one that has the edge)
    #[arg(long, value_name = "GRAPH", value_parser = graph_kind)]
    pub graph: Option<GraphKind>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub flags: WriteFlags,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::WRITER
    .about("Edges relate two graph nodes (`calls`, `feeds`, ...).").report(write_outcome_schema);

/// Runs `edge`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    match &args.action {
        Action::Add(args) => add(ctx, args),
        Action::Rm(args) => rm(ctx, args),
    }
}

fn add(ctx: &Ctx, args: &AddArgs) -> Result<Status> {
    let AddArgs {
        source,
        target,
        kind,
        id,
        label,
        refs,
        graph,
        flags,
    } = args;
    let store = ctx.store()?;
    let input = EdgeInput {
        source,
        target,
        kind,
        id: id.as_deref(),
        label: label.as_deref(),
        refs: resolve_typed_refs(ctx, refs, flags.allow_missing_paths, "--ref", WROTE_NOTHING)?,
        graph: *graph,
    };
    write_edit(ctx, &store, flags, "the edge was not written", |state| {
        edge_add(state, input)
    })
}

fn rm(ctx: &Ctx, args: &RmArgs) -> Result<Status> {
    let RmArgs {
        source,
        target,
        kind,
        id,
        graph,
        flags,
    } = args;
    let named = match (id, source, target, kind) {
        (Some(id), ..) => EdgeRef::Id(id.clone()),
        (None, Some(source), Some(target), Some(kind)) => EdgeRef::Ends {
            source_id: source.clone(),
            target_id: target.clone(),
            kind: kind.clone(),
        },
        _ => {
            let problem = Problem::new("EDGE", "name it by SOURCE TARGET --kind K, or by --id");
            return Err(input_failure("no edge was named", vec![problem]));
        }
    };
    let store = ctx.store()?;
    write_edit(ctx, &store, flags, "the edge was not removed", |state| {
        edge_rm(state, *graph, &named)
    })
}
