//! The command registry: one module per subcommand, one dispatch `match`.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.

use anyhow::Result;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::mcp::Tool;

pub mod backlog;
pub mod checkpoint;
pub mod completions;
pub mod context;
pub mod diff;
pub mod distill;
pub mod edge;
pub mod freshness;
pub mod graph;
pub mod hook;
pub mod hooks;
pub mod index;
pub mod init;
pub mod log;
pub mod map;
pub mod mcp;
pub mod merge_driver;
pub mod node;
pub mod note;
pub mod planning;
pub mod pressure;
pub mod promote;
pub mod prompt;
pub mod propose;
pub mod recheck;
pub mod reorient;
pub mod retrieve;
pub mod rollback;
pub mod scene;
pub mod schema;
pub mod show;
pub mod subgoal;
pub mod textconv;
pub mod update;
pub mod verify;

/// Every subcommand. The help text of each comes from the doc comment of its `Args`.
#[derive(Debug, clap::Subcommand)]
#[allow(missing_docs)]
pub enum Command {
    Init(init::Args),
    Show(show::Args),
    Log(log::Args),
    Diff(diff::Args),
    Rollback(rollback::Args),
    Verify(verify::Args),
    Update(update::Args),
    Distill(distill::Args),
    Propose(propose::Args),
    Promote(promote::Args),
    Note(note::Args),
    Node(node::Args),
    Edge(edge::Args),
    Checkpoint(checkpoint::Args),
    Subgoal(subgoal::Args),
    Backlog(backlog::Args),
    Recheck(recheck::Args),
    Scene(scene::Args),
    Context(context::Args),
    Graph(graph::Args),
    Map(map::Args),
    Planning(planning::Args),
    Freshness(freshness::Args),
    Pressure(pressure::Args),
    Reorient(reorient::Args),
    Prompt(prompt::Args),
    Index(index::Args),
    Retrieve(retrieve::Args),
    Hooks(hooks::Args),
    Hook(hook::Args),
    MergeDriver(merge_driver::Args),
    Textconv(textconv::Args),
    Mcp(mcp::Args),
    Completions(completions::Args),
    Schema(schema::Args),
}

/// Runs one command.
pub fn run(ctx: &Ctx, command: &Command) -> Result<Status> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Show(args) => show::run(ctx, args),
        Command::Log(args) => log::run(ctx, args),
        Command::Diff(args) => diff::run(ctx, args),
        Command::Rollback(args) => rollback::run(ctx, args),
        Command::Verify(args) => verify::run(ctx, args),
        Command::Update(args) => update::run(ctx, args),
        Command::Distill(args) => distill::run(ctx, args),
        Command::Propose(args) => propose::run(ctx, args),
        Command::Promote(args) => promote::run(ctx, args),
        Command::Note(args) => note::run(ctx, args),
        Command::Node(args) => node::run(ctx, args),
        Command::Edge(args) => edge::run(ctx, args),
        Command::Checkpoint(args) => checkpoint::run(ctx, args),
        Command::Subgoal(args) => subgoal::run(ctx, args),
        Command::Backlog(args) => backlog::run(ctx, args),
        Command::Recheck(args) => recheck::run(ctx, args),
        Command::Scene(args) => scene::run(ctx, args),
        Command::Context(args) => context::run(ctx, args),
        Command::Graph(args) => graph::run(ctx, args),
        Command::Map(args) => map::run(ctx, args),
        Command::Planning(args) => planning::run(ctx, args),
        Command::Freshness(args) => freshness::run(ctx, args),
        Command::Pressure(args) => pressure::run(ctx, args),
        Command::Reorient(args) => reorient::run(ctx, args),
        Command::Prompt(args) => prompt::run(ctx, args),
        Command::Index(args) => index::run(ctx, args),
        Command::Retrieve(args) => retrieve::run(ctx, args),
        Command::Hooks(args) => hooks::run(ctx, args),
        Command::Hook(args) => hook::run(ctx, args),
        Command::MergeDriver(args) => merge_driver::run(ctx, args),
        Command::Textconv(args) => textconv::run(ctx, args),
        Command::Mcp(args) => mcp::run(ctx, args),
        Command::Completions(args) => completions::run(ctx, args),
        Command::Schema(args) => schema::run(ctx, args),
    }
}

/// How the subcommand named `name` is offered over MCP and what its report looks like: the
/// `TOOL` its module declares next to its `Args`.
pub fn tool(name: &str) -> Option<Tool> {
    Some(match name {
        "init" => init::TOOL,
        "show" => show::TOOL,
        "log" => log::TOOL,
        "diff" => diff::TOOL,
        "rollback" => rollback::TOOL,
        "verify" => verify::TOOL,
        "update" => update::TOOL,
        "distill" => distill::TOOL,
        "propose" => propose::TOOL,
        "promote" => promote::TOOL,
        "note" => note::TOOL,
        "node" => node::TOOL,
        "edge" => edge::TOOL,
        "checkpoint" => checkpoint::TOOL,
        "subgoal" => subgoal::TOOL,
        "backlog" => backlog::TOOL,
        "recheck" => recheck::TOOL,
        "scene" => scene::TOOL,
        "context" => context::TOOL,
        "graph" => graph::TOOL,
        "map" => map::TOOL,
        "planning" => planning::TOOL,
        "freshness" => freshness::TOOL,
        "pressure" => pressure::TOOL,
        "reorient" => reorient::TOOL,
        "prompt" => prompt::TOOL,
        "index" => index::TOOL,
        "retrieve" => retrieve::TOOL,
        "hooks" => hooks::TOOL,
        "hook" => hook::TOOL,
        "merge-driver" => merge_driver::TOOL,
        "textconv" => textconv::TOOL,
        "mcp" => mcp::TOOL,
        "completions" => completions::TOOL,
        "schema" => schema::TOOL,
        _ => return None,
    })
}
