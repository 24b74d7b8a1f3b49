//! `epiphany graph`: a bounded traversal of the architecture and dataflow graphs. Read-only;
//! works with or without git.

use std::io::Write;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::context::GraphIds;
use crate::cmd::map::Format;
use crate::cmd::Tool;
use crate::cmd::schema_of;
use crate::policy::graph_query::Direction;
use crate::policy::graph_query::GraphQuery;
use crate::policy::graph_query::draw;
use crate::policy::graph_query::query_graph;
use crate::policy::projection::StateStatus;
use crate::render;
use crate::signals::observe;
use crate::ui::Report;
use crate::wire::graph::GraphQueryResult;
use crate::wire::graph::GraphSlice;

/// Walk the graphs from named nodes, edges, paths, symbols, edge kinds or the frontier.
///
/// Starts from the named nodes and edges (an edge starts from both its endpoints), the
/// nodes, edges and links whose code refs match `--path` (the same file, matched by trailing
/// path components) and `--symbol`, the edges of each `--edge-kind`, and with `--frontier` the
/// active frontier. Then follows edges `--depth` hops (1 to 3; 0 reads as 1) in `--direction`,
/// and each architecture/dataflow link one step. Ids that lead nowhere are listed under
/// `missing`; they are not an error. `--format mermaid|dot` draws what was reached (nodes
/// whose cited files changed since they were written are marked).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Start from these nodes and these edges' endpoints
    #[command(flatten)]
    pub start: GraphIds,
    /// Start from records citing this path (repeatable)
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<String>,
    /// Start from records citing this symbol (repeatable)
    #[arg(long = "symbol", value_name = "S")]
    pub symbols: Vec<String>,
    /// Start from edges of this kind (repeatable)
    #[arg(long = "edge-kind", value_name = "K")]
    pub edge_kinds: Vec<String>,
    /// Start from the active frontier too
    #[arg(long)]
    pub frontier: bool,
    /// Which way to follow edges
    #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
    pub direction: DirectionArg,
    /// How many hops to walk (clamped to 1-3)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub depth: u64,
    /// How to show it: text, or a Mermaid or DOT picture (stale nodes marked)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// How `mcp` offers this command as a tool and `schema` describes its report.
pub const TOOL: Tool = Tool::READER
    .about("Walk the architecture and dataflow graphs from nodes, edges, paths, symbols, edge kinds or the frontier, a few hops along edges; as text, Mermaid or DOT.").report(schema_of::<GraphQueryResult>);

/// `--direction` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DirectionArg {
    /// Against edges: from target to source
    #[value(name = "in", alias = "incoming")]
    In,
    /// Along edges: from source to target
    #[value(name = "out", alias = "outgoing")]
    Out,
    /// Both ways
    Both,
}

/// Whether the slice holds no node, edge or link.
fn nothing_selected(slice: &GraphSlice) -> bool {
    slice.architecture_nodes.is_empty()
        && slice.architecture_edges.is_empty()
        && slice.dataflow_nodes.is_empty()
        && slice.dataflow_edges.is_empty()
        && slice.links.is_empty()
}

impl Report for GraphQueryResult {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some(picture) = &self.picture {
            return out.write_all(picture.as_bytes());
        }
        if self.state_status == StateStatus::Missing {
            writeln!(out, "no state yet")?;
        } else if nothing_selected(&self.graph) {
            writeln!(out, "nothing matched")?;
        } else {
            render::graph_slice(out, &self.graph)?;
        }
        render::id_line(out, "matched paths", &self.matched.paths)?;
        render::id_line(out, "matched symbols", &self.matched.symbols)?;
        render::id_line(out, "matched edge kinds", &self.matched.edge_kinds)?;
        render::id_line(out, "missing nodes", &self.missing.node_ids)?;
        render::id_line(out, "missing edges", &self.missing.edge_ids)
    }
}

/// Runs `graph`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args {
        start: GraphIds { nodes, edges },
        paths,
        symbols,
        edge_kinds,
        frontier,
        direction,
        depth,
        format,
    } = args;
    let query = GraphQuery {
        node_ids: nodes.clone(),
        edge_ids: edges.clone(),
        paths: paths.clone(),
        symbols: symbols.clone(),
        edge_kinds: edge_kinds.clone(),
        frontier: *frontier,
        direction: match direction {
            DirectionArg::In => Direction::Incoming,
            DirectionArg::Out => Direction::Outgoing,
            DirectionArg::Both => Direction::Both,
        },
        depth: *depth,
    };
    // The graph query reads the graphs only: no observation or evidence record is decoded.
    let store = ctx.store()?;
    let head = store.head_with_newest(0)?;
    let state = head.has_state().then_some(&head.state);
    let mut result = query_graph(state, &query);
    if let Some(language) = format.language() {
        // Stale nodes are marked when freshness can be read (it needs git).
        let stale = observe(ctx, &store, &head, None)
            .map(|observed| observed.freshness.staleness().stale_node_ids)
            .unwrap_or_default();
        let stale = stale.iter().map(String::as_str).collect();
        result.picture = Some(draw(&result.graph, &stale, language));
    }
    ctx.ui.emit(&GraphQueryResult::from(result))?;
    Ok(Status::Ok)
}
