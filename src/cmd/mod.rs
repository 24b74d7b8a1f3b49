//! The command line: [`Cli`] (the global flags and the subcommand), and the registry of one
//! module per subcommand, listed once in `commands!`, which declares the modules, the
//! `Command` enum (in help order), the dispatch and the MCP tools.
//!
//! Every command module has the same shape: an `Args` struct whose doc comments are the help
//! text, a `run(ctx, args) -> Result<Status>`, and a report type that renders as text or JSON.
//! Commands stay thin: they read input, call `state`, `policy` or `search`, and emit a report.
//! Next to its `Args` each declares a [`Tool`]: whether and how `epiphany mcp` offers it, and
//! the JSON Schema of its report; the commands depend on nothing above them for that.

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use schemars::JsonSchema;
use schemars::Schema;
use schemars::transform::RecursiveTransform;
use schemars::transform::Transform;

use crate::ctx::Ctx;
use crate::ctx::Status;

/// Declares, from one list of `module => Variant, "name";`, every command module, the
/// [`Command`] enum, [`run`] and [`declared_tool`]. `name` is the subcommand as typed (clap's kebab
/// case of the variant; a test holds them equal).
macro_rules! commands {
    ($($module:ident => $variant:ident, $name:literal;)*) => {
        $(pub(crate) mod $module;)*

        /// Every subcommand. The help text of each comes from the doc comment of its `Args`.
        #[derive(Debug, clap::Subcommand)]
        #[allow(missing_docs)]
        pub enum Command {
            $($variant($module::Args),)*
        }

        /// Runs one command.
        pub fn run(ctx: &Ctx, command: &Command) -> Result<Status> {
            match command {
                $(Command::$variant(args) => $module::run(ctx, args),)*
            }
        }

        /// How the subcommand named `name` is offered over MCP and what its report looks
        /// like: the `TOOL` its module declares next to its `Args`.
        pub fn declared_tool(name: &str) -> Option<Tool> {
            Some(match name {
                $($name => $module::TOOL,)*
                _ => return None,
            })
        }
    };
}

commands! {
    init => Init, "init";
    show => Show, "show";
    log => Log, "log";
    diff => Diff, "diff";
    rollback => Rollback, "rollback";
    verify => Verify, "verify";
    compact => Compact, "compact";
    conflicts => Conflicts, "conflicts";
    update => Update, "update";
    distill => Distill, "distill";
    propose => Propose, "propose";
    promote => Promote, "promote";
    note => Note, "note";
    node => Node, "node";
    edge => Edge, "edge";
    checkpoint => Checkpoint, "checkpoint";
    subgoal => Subgoal, "subgoal";
    backlog => Backlog, "backlog";
    recheck => Recheck, "recheck";
    scene => Scene, "scene";
    context => Context, "context";
    graph => Graph, "graph";
    map => Map, "map";
    planning => Planning, "planning";
    freshness => Freshness, "freshness";
    pressure => Pressure, "pressure";
    reorient => Reorient, "reorient";
    prompt => Prompt, "prompt";
    index => Index, "index";
    retrieve => Retrieve, "retrieve";
    hooks => Hooks, "hooks";
    hook => Hook, "hook";
    merge_driver => MergeDriver, "merge-driver";
    textconv => Textconv, "textconv";
    mcp => Mcp, "mcp";
    completions => Completions, "completions";
    schema => Schema, "schema";
}

const EXIT_CODES: &str = "\
Exit codes:
  0  success; for checks: fresh/valid; for queries: answered (an empty answer is still 0)
  1  the command worked and the answer is \"no\" (a check found staleness, verify found a
     mismatch, promote rejected the patch, reorient says regather)
  2  usage or input error, missing or unreadable store, corrupt file, I/O or git failure
  3  conflict: --expected-revision does not match, or the store lock could not be taken";

/// The top-level help's epilogue: the exit codes, and the environment variables the context
/// reads ([`crate::ctx::VARIABLES`]), each description wrapped to the help's width.
fn after_long_help() -> String {
    const INDENT: usize = 28;
    const WIDTH: usize = 92;
    let mut text = format!("{EXIT_CODES}\n\nEnvironment:");
    for (name, description) in crate::ctx::VARIABLES {
        let mut line = format!("  {name:<width$}", width = INDENT - 2);
        for word in description.split(' ') {
            if line.len() + word.len() > WIDTH && line.trim().len() > name.len() {
                text.push('\n');
                text.push_str(line.trim_end());
                line = " ".repeat(INDENT);
            }
            line.push_str(word);
            line.push(' ');
        }
        text.push('\n');
        text.push_str(line.trim_end());
    }
    text
}

/// Durable, typed, reviewable understanding of a codebase for coding agents.
///
/// `epiphany` keeps the objective, subgoals, invariants, architecture and dataflow graphs with
/// code references, observations, evidence, churn and an investigation checkpoint in a
/// git-tracked `.epiphany/` directory, and gives fast hybrid code retrieval over the same
/// repository. `update` is the one write path; `distill` and `propose` draft patches,
/// `promote` gates them; every projection is read-only.
#[derive(Debug, Parser)]
#[command(name = "epiphany", version, after_long_help = after_long_help(), max_term_width = 100)]
pub struct Cli {
    /// Run as if started in DIR
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// Print machine-readable JSON on stdout (one document)
    #[arg(long, global = true)]
    pub json: bool,
    /// Print nothing but errors; the exit code carries the answer
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The command to run
    #[command(subcommand)]
    pub command: Command,
}

/// `-x` or `--some-name`.
pub fn is_flag_name(arg: &str) -> bool {
    let name = arg
        .strip_prefix("--")
        .or_else(|| arg.strip_prefix('-'))
        .unwrap_or_default();
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// How a command is offered as an MCP tool and what its `--json` report looks like, declared
/// next to the command's `Args` (`pub const TOOL: Tool = ...`).
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Offered to agents at all; plumbing for git and hosts is not.
    pub offered: bool,
    /// Writes nothing anywhere (neither the store nor the cache).
    pub read_only: bool,
    /// A second identical call changes nothing more than the first did.
    pub idempotent: bool,
    /// What the command reads on standard input, offered as the `input` argument.
    pub input: Option<&'static str>,
    /// The JSON Schema of the command's `--json` report (also printed by `epiphany schema`).
    pub report: Option<fn() -> Schema>,
    /// An argument the tool takes when the caller leaves it out, where the command line's
    /// default would not do for an agent (`show` pages its lists: hosts cap a tool's result).
    pub default_argument: Option<(&'static str, u64)>,
    /// What the tool answers and when to use it, written for a model: hosts show it to the
    /// model in every session, so it names arguments, never flags. A command with subcommands
    /// says what the family is for; each subcommand's tool opens with its own help line.
    pub about: &'static str,
    /// Arguments described for a model where the help line of the flag would not do (it
    /// talks about stdin or exit codes), by argument name.
    pub arguments: &'static [(&'static str, &'static str)],
    /// How a subcommand is offered where it differs from its family (`conflicts settle`
    /// writes, `conflicts` only reads), by subcommand name; the others are offered as this.
    pub subcommands: &'static [(&'static str, Tool)],
}

impl Tool {
    /// A command that only reads: asking twice gives the same answer and changes nothing.
    pub const READER: Tool = Tool {
        offered: true,
        read_only: true,
        idempotent: true,
        input: None,
        report: None,
        default_argument: None,
        about: "",
        arguments: &[],
        subcommands: &[],
    };
    /// A command that writes the store or the cache.
    pub const WRITER: Tool = Tool {
        offered: true,
        read_only: false,
        idempotent: false,
        input: None,
        report: None,
        default_argument: None,
        about: "",
        arguments: &[],
        subcommands: &[],
    };
    /// Plumbing for git and agent hosts, not a tool for an agent.
    pub const PLUMBING: Tool = Tool {
        offered: false,
        read_only: false,
        idempotent: false,
        input: None,
        report: None,
        default_argument: None,
        about: "",
        arguments: &[],
        subcommands: &[],
    };

    /// The same, with the schema of its report.
    pub const fn report(mut self, schema: fn() -> Schema) -> Tool {
        self.report = Some(schema);
        self
    }

    /// The same, reading `what` on standard input.
    pub const fn input(mut self, what: &'static str) -> Tool {
        self.input = Some(what);
        self
    }

    /// The same, taking `value` for the argument `name` when the caller leaves it out.
    pub const fn default_argument(mut self, name: &'static str, value: u64) -> Tool {
        self.default_argument = Some((name, value));
        self
    }

    /// The same, described for a model as `about` (see [`Tool::about`]).
    pub const fn about(mut self, about: &'static str) -> Tool {
        self.about = about;
        self
    }

    /// The same, with `arguments` described for a model (see [`Tool::arguments`]).
    pub const fn arguments(mut self, arguments: &'static [(&'static str, &'static str)]) -> Tool {
        self.arguments = arguments;
        self
    }

    /// The same, with `subcommands` offered as they say (see [`Tool::subcommands`]).
    pub const fn subcommands(mut self, subcommands: &'static [(&'static str, Tool)]) -> Tool {
        self.subcommands = subcommands;
        self
    }

    /// How the subcommand `name` of this family is offered.
    pub fn subcommand(&self, name: &str) -> Tool {
        (self.subcommands.iter())
            .find(|(subcommand, _)| *subcommand == name)
            .map_or(*self, |(_, tool)| *tool)
    }

    /// The same, marked idempotent: repeating the call writes nothing new.
    pub const fn idempotent(mut self) -> Tool {
        self.idempotent = true;
        self
    }
}

/// The JSON Schema of `T`, for [`Tool::report`]. Rust's integer widths (`"format": "uint64"`)
/// are dropped: they are no JSON Schema format, validators such as ajv (the MCP TypeScript SDK's)
/// warn about each, and `"type": "integer"` with `"minimum": 0` already says what they meant.
pub fn schema_of<T: JsonSchema>() -> Schema {
    let mut schema = schemars::schema_for!(T);
    drop_widths(&mut schema);
    schema
}

/// The JSON Schema of a report printed in one of two shapes, `A` or `B`, each described by its
/// entry in `shapes`: what [`schema_of`] gives for a serde `untagged` enum of the two, an object
/// either way (MCP clients require an object schema). Each shape is printed where it is made,
/// so no such enum exists.
pub fn schema_of_either<A: JsonSchema, B: JsonSchema>(
    description: &str,
    shapes: [&str; 2],
) -> Schema {
    let mut generator = schemars::SchemaGenerator::default();
    let shape = |mut schema: Schema, about: &str| {
        schema.insert("description".to_owned(), about.into());
        schema
    };
    let (a, b) = (
        generator.subschema_for::<A>(),
        generator.subschema_for::<B>(),
    );
    let (a, b) = (shape(a, shapes[0]), shape(b, shapes[1]));
    let mut schema = schemars::json_schema!({
        "anyOf": [a, b],
        "description": description,
        "$schema": schemars::generate::SchemaSettings::default().meta_schema,
        "$defs": generator.take_definitions(false),
        "type": "object",
    });
    drop_widths(&mut schema);
    schema
}

/// Drops Rust's integer widths from `schema` (see [`schema_of`]).
fn drop_widths(schema: &mut Schema) {
    let mut drop_widths = RecursiveTransform(|schema: &mut Schema| {
        if schema
            .get("format")
            .and_then(serde_json::Value::as_str)
            .is_some_and(is_rust_width)
        {
            schema.remove("format");
        }
    });
    drop_widths.transform(schema);
}

/// `uint`, `uint8` ... `int64`, `float`, `double`: schemars' names for Rust's number types.
fn is_rust_width(format: &str) -> bool {
    matches!(format, "float" | "double")
        || format
            .strip_prefix("uint")
            .or_else(|| format.strip_prefix("int"))
            .is_some_and(|width| matches!(width, "" | "8" | "16" | "32" | "64" | "128"))
}

/// Text a writer of patches reads on standard input, for [`Tool::input`].
pub const PATCH_INPUT: &str =
    "The patch as JSON text, or the envelope `distill` or `propose` returned";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_schemas_carry_no_rust_number_formats() {
        let text = schema_of::<crate::cmd::index::IndexReport>()
            .to_value()
            .to_string();
        assert!(!text.contains("uint"), "{text}");
        assert!(text.contains("\"minimum\":0"), "{text}");
        assert!(is_rust_width("uint64") && is_rust_width("int32") && is_rust_width("double"));
        assert!(!is_rust_width("date-time") && !is_rust_width("uri") && !is_rust_width("8"));
    }
}
