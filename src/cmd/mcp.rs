//! `epiphany mcp`: the commands as Model Context Protocol tools over stdio.
//!
//! One implementation, two doors: every tool call is parsed by the same clap definitions and
//! run by the same `cmd::run` as the command line, in-process, with JSON output captured and
//! standard input handed over as a string. Tool input schemas are generated from those clap
//! definitions, so a new flag shows up in both doors at once. Only protocol messages go to
//! stdout; command status lines and warnings go to stderr.

use std::any::TypeId;
use std::io::BufRead;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::ArgAction;
use clap::CommandFactory;
use clap::FromArgMatches;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::cli::Cli;
use crate::cli::Ctx;
use crate::cli::Status;
use crate::cli::report_failure;
use crate::ui::Ui;

/// Serve the commands as Model Context Protocol tools over stdio.
///
/// Speaks JSON-RPC 2.0, one message per line, on stdin and stdout (`initialize`,
/// `tools/list`, `tools/call`, `ping`). Each tool is a command; its arguments are the
/// command's flags by name (`expected_revision`, `path_prefix`, ...), plus `input` for text the
/// command reads on stdin and `directory` to run elsewhere than the server's directory.
/// Read-only commands are annotated as such. Register it in an MCP client as
/// `epiphany mcp` (for example `claude mcp add epiphany -- epiphany mcp`).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// The protocol revision this server speaks when the client does not ask for one it knows.
const PROTOCOL_VERSION: &str = "2025-06-18";
const KNOWN_PROTOCOL_VERSIONS: [&str; 3] = ["2024-11-05", "2025-03-26", "2025-06-18"];

/// Commands that are plumbing for git and hosts, not tools for an agent.
const NOT_TOOLS: [&str; 6] = [
    "mcp",
    "hook",
    "hooks",
    "merge-driver",
    "textconv",
    "completions",
];
/// Commands that write the store or the index; every other tool only reads.
const WRITERS: [&str; 5] = ["init", "update", "promote", "rollback", "index"];
/// Commands that read text from stdin.
const READS_STDIN: [&str; 3] = ["update", "promote", "distill"];
/// Global flags the server sets itself.
const MANAGED_ARGS: [&str; 4] = ["json", "quiet", "directory", "help"];

/// Runs `mcp`.
pub fn run(ctx: &Ctx, _args: &Args) -> Result<Status> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(response) = handle_message(ctx, &line) {
            writeln!(stdout, "{response}")?;
            stdout.flush()?;
        }
    }
    Ok(Status::Ok)
}

/// Answers one JSON-RPC message; notifications get no answer.
pub fn handle_message(ctx: &Ctx, line: &str) -> Option<Value> {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(err) => {
            return Some(rpc_error(
                Value::Null,
                -32700,
                &format!("parse error: {err}"),
            ));
        }
    };
    let id = message.get("id").cloned();
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    let id = id?;
    let result = match method {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools() })),
        "tools/call" => call_tool(ctx, &params),
        other => Err((-32601, format!("method not found: {other}"))),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => rpc_error(id, code, &message),
    })
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|version| KNOWN_PROTOCOL_VERSIONS.contains(version))
        .unwrap_or(PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "epiphany", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "epiphany keeps this repository's typed understanding (objective, graphs, observations, evidence, checkpoint) in .epiphany/. Start with `reorient` and `prompt`; record findings with `distill` then `update`; search code with `retrieve`."
    })
}

/// Every command an agent may call, with its input schema and annotations.
pub fn tools() -> Vec<Value> {
    Cli::command()
        .get_subcommands()
        .filter(|command| !NOT_TOOLS.contains(&command.get_name()))
        .map(|command| {
            let name = command.get_name();
            let read_only = !WRITERS.contains(&name);
            let description = command
                .get_long_about()
                .or(command.get_about())
                .map(ToString::to_string)
                .unwrap_or_default();
            json!({
                "name": name,
                "description": description,
                "inputSchema": input_schema(command),
                "annotations": {
                    "readOnlyHint": read_only,
                    "destructiveHint": false,
                    "idempotentHint": read_only,
                    "openWorldHint": false
                }
            })
        })
        .collect()
}

/// A JSON Schema of the command's arguments, named by their clap ids.
fn input_schema(command: &clap::Command) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if MANAGED_ARGS.contains(&id) {
            continue;
        }
        let mut schema = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => json!({"type": "boolean"}),
            ArgAction::Append => json!({"type": "array", "items": value_schema(arg)}),
            _ => value_schema(arg),
        };
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            schema["description"] = json!(help.to_string());
        }
        if arg.is_required_set() {
            required.push(json!(id));
        }
        properties.insert(id.to_owned(), schema);
    }
    if READS_STDIN.contains(&command.get_name()) {
        properties.insert(
            "input".to_owned(),
            json!({"type": "string", "description": "What the command reads on stdin: the patch or envelope JSON for update and promote, the observed text for distill"}),
        );
    }
    properties.insert(
        "directory".to_owned(),
        json!({"type": "string", "description": "Run as if started in this directory (relative to the server's)"}),
    );
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn value_schema(arg: &clap::Arg) -> Value {
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_owned())
        .collect();
    if !choices.is_empty() {
        return json!({"type": "string", "enum": choices});
    }
    let type_id = arg.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<usize>(),
        TypeId::of::<i64>(),
        TypeId::of::<i32>(),
    ];
    if integers.iter().any(|integer| type_id == *integer) {
        json!({"type": "integer"})
    } else {
        json!({"type": "string"})
    }
}

/// Runs one tool call through the command line's own parser and dispatch.
fn call_tool(ctx: &Ctx, params: &Value) -> Result<Value, (i64, String)> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(command) = Cli::command()
        .get_subcommands()
        .find(|c| c.get_name() == name)
        .cloned()
    else {
        return Err((-32602, format!("unknown tool `{name}`")));
    };
    if NOT_TOOLS.contains(&name) {
        return Err((-32602, format!("unknown tool `{name}`")));
    }
    let empty = Map::new();
    let arguments = params
        .get("arguments")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let argv = match command_line(&command, arguments) {
        Ok(argv) => argv,
        Err(message) => return Ok(tool_error(&message)),
    };
    let parsed = Cli::command()
        .try_get_matches_from(&argv)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => return Ok(tool_error(&err.render().to_string())),
    };
    let stdin = arguments
        .get("input")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let directory = arguments
        .get("directory")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let (ui, captured) = Ui::capturing();
    let code = match ctx.for_call(directory.as_deref(), ui, stdin) {
        Ok(call) => match crate::cmd::run(&call, &cli.command) {
            Ok(Status::Ok) => 0,
            Ok(Status::No) => 1,
            Err(err) => report_failure(&call.ui, &err),
        },
        Err(err) => report_failure(&Ui::capturing().0, &err),
    };
    let text = String::from_utf8_lossy(&captured.take()).into_owned();
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": code >= 2,
        "_meta": {"exit_code": code}
    });
    if let Ok(document @ Value::Object(_)) = serde_json::from_str::<Value>(&text) {
        result["structuredContent"] = document;
    }
    Ok(result)
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true, "_meta": {"exit_code": 2}})
}

/// The argv the tool arguments stand for: options by long name, then positionals after `--`.
fn command_line(
    command: &clap::Command,
    arguments: &Map<String, Value>,
) -> Result<Vec<String>, String> {
    let mut argv = vec![
        "epiphany".to_owned(),
        "--json".to_owned(),
        command.get_name().to_owned(),
    ];
    let mut positionals: Vec<(usize, Vec<String>)> = Vec::new();
    for (key, value) in arguments {
        if key == "input" || key == "directory" {
            continue;
        }
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_id().as_str() == key && !MANAGED_ARGS.contains(&key.as_str()))
            .ok_or_else(|| format!("`{}` has no argument `{key}`", command.get_name()))?;
        let values: Vec<String> = match value {
            Value::Null | Value::Bool(false) => continue,
            Value::Bool(true) => Vec::new(),
            Value::Array(items) => items.iter().map(scalar).collect::<Result<_, _>>()?,
            other => vec![scalar(other)?],
        };
        if arg.is_positional() {
            let order = command
                .get_positionals()
                .position(|p| p.get_id() == arg.get_id());
            positionals.push((order.unwrap_or(usize::MAX), values));
            continue;
        }
        let long = arg
            .get_long()
            .ok_or_else(|| format!("argument `{key}` cannot be given by name"))?;
        if values.is_empty() {
            argv.push(format!("--{long}"));
        }
        for value in values {
            argv.push(format!("--{long}={value}"));
        }
    }
    if !positionals.is_empty() {
        positionals.sort_by_key(|(index, _)| *index);
        argv.push("--".to_owned());
        argv.extend(positionals.into_iter().flat_map(|(_, values)| values));
    }
    Ok(argv)
}

fn scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        other => Err(format!("expected a string or a number, found {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Value {
        tools()
            .into_iter()
            .find(|t| t["name"] == name)
            .expect("tool")
    }

    #[test]
    fn tools_carry_schemas_from_the_command_definitions() {
        let update = tool("update");
        assert_eq!(update["annotations"]["readOnlyHint"], false);
        let properties = &update["inputSchema"]["properties"];
        assert_eq!(properties["expected_revision"]["type"], "integer");
        assert_eq!(properties["input"]["type"], "string");
        assert_eq!(properties["file"]["type"], "string");
        let show = tool("show");
        assert_eq!(show["annotations"]["readOnlyHint"], true);
        assert!(
            tools()
                .iter()
                .all(|t| t["name"] != "mcp" && t["name"] != "hook")
        );
    }

    #[test]
    fn arguments_become_a_command_line() {
        let command = Cli::command()
            .find_subcommand("update")
            .cloned()
            .expect("update");
        let arguments = json!({"expected_revision": 3, "file": "-", "turn_id": "t", "input": "{}"});
        let argv = command_line(&command, arguments.as_object().expect("object")).expect("argv");
        assert_eq!(
            argv,
            [
                "epiphany",
                "--json",
                "update",
                "--expected-revision=3",
                "--turn-id=t",
                "--",
                "-"
            ]
        );
        let bad = json!({"nope": 1});
        assert!(command_line(&command, bad.as_object().expect("object")).is_err());
    }
}
