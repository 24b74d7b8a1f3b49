//! `epiphany completions`: shell completion scripts generated from the command definitions.

use anyhow::Result;
use clap::CommandFactory;

use crate::cmd::Cli;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::Tool;

/// Print a shell completion script.
///
/// For example: `epiphany completions bash > ~/.local/share/bash-completion/completions/epiphany`,
/// or `epiphany completions zsh > "${fpath[1]}/_epiphany"`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate completions for
    pub shell: clap_complete::Shell,
}

/// Plumbing: not offered as an MCP tool.
pub const TOOL: Tool = Tool::PLUMBING;

/// Runs `completions`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { shell } = args;
    let mut script = Vec::new();
    clap_complete::generate(*shell, &mut Cli::command(), "epiphany", &mut script);
    ctx.ui.emit_text(&String::from_utf8_lossy(&script))?;
    Ok(Status::Ok)
}
