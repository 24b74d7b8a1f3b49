//! The tools: every command a [`Tool`] declaration offers, listed lean (see [`super::schema`])
//! and called through the command line's own parser, and the subset one server offers
//! (`epiphany mcp --tools`).
//!
//! A tool's arguments are its flags and positionals by their clap ids (`expected_revision`,
//! `path_prefixes`, `query`), plus `input` for what the command reads on stdin and `directory`
//! to run elsewhere than the server's directory; [`super::arguments`] checks them and turns
//! them into a command line. A call that fails (exit 2 or 3) is a tool error whose text is the
//! command's error document; any other call carries its report as `structuredContent`, which
//! matches the tool's `outputSchema`.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::CommandFactory;
use clap::FromArgMatches;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::cmd::Cli;
use crate::cmd::Tool;
use crate::cmd::mcp::arguments::SUBCOMMAND;
use crate::cmd::mcp::arguments::check_arguments;
use crate::cmd::mcp::arguments::clap_message;
use crate::cmd::mcp::arguments::command_line;
use crate::cmd::mcp::arguments::renamed_flags;
use crate::cmd::mcp::protocol::Revision;
use crate::cmd::mcp::protocol::RpcError;
use crate::cmd::mcp::protocol::code;
use crate::cmd::mcp::schema::DIRECTORY;
use crate::cmd::mcp::schema::INPUT;
use crate::cmd::mcp::schema::input_schema;
use crate::cmd::mcp::schema::outline;
use crate::ctx::Cancel;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::ctx::report_failure;
use crate::state::decode::json_type_name;
use crate::ui::Ui;

/// The names `--tools` takes besides tool names: the tools that only read, the ones that
/// write, all of them.
const SETS: [&str; 3] = ["read", "write", "all"];

/// Every offered command with its declaration. A command with subcommands (`node set`,
/// `node rm`) is offered as one tool per subcommand, named `node_set`, `node_rm`, and as
/// itself too when the subcommand is optional (`conflicts`, `conflicts_settle`). Built once:
/// clap keeps names as static strings, so the joined names are made (and kept) only once.
fn offered() -> &'static [(clap::Command, Tool)] {
    static OFFERED: OnceLock<Vec<(clap::Command, Tool)>> = OnceLock::new();
    OFFERED.get_or_init(|| {
        let mut tools = Vec::new();
        for command in Cli::command().get_subcommands() {
            let Some(tool) =
                crate::cmd::declared_tool(command.get_name()).filter(|tool| tool.offered)
            else {
                continue;
            };
            if !command.is_subcommand_required_set() {
                tools.push((command.clone(), tool));
            }
            for sub in command.get_subcommands() {
                let tool = tool.subcommand(sub.get_name());
                if !tool.offered {
                    continue;
                }
                let name = format!("{}{SUBCOMMAND}{}", command.get_name(), sub.get_name());
                let name: &'static str = Box::leak(name.into_boxed_str());
                tools.push((sub.clone().name(name), tool));
            }
        }
        tools
    })
}

/// The tools one server offers, in the order of the command line's help.
#[derive(Debug, Clone)]
pub struct Toolbox {
    names: Vec<&'static str>,
}

impl Default for Toolbox {
    fn default() -> Toolbox {
        Toolbox {
            names: offered().iter().map(|(command, _)| command.get_name()).collect(),
        }
    }
}

impl Toolbox {
    /// The tools `spec` names, as `--tools` takes it: `read`, `write`, `all`, or tool names,
    /// separated by commas (`read,index`). A name that is neither is refused with the ones
    /// accepted.
    pub fn parse(spec: &str) -> Result<Toolbox, String> {
        let mut wanted: Vec<&str> = Vec::new();
        for word in spec.split(',').map(str::trim).filter(|word| !word.is_empty()) {
            let known = offered().iter().any(|(command, _)| command.get_name() == word);
            if !known && !SETS.contains(&word) {
                let names: Vec<&str> = offered().iter().map(|(c, _)| c.get_name()).collect();
                return Err(format!(
                    "`{word}` is no tool; give {}, or tool names separated by commas: {}",
                    SETS.join(", "),
                    names.join(", ")
                ));
            }
            wanted.push(word);
        }
        if wanted.is_empty() {
            return Err(format!(
                "name the tools to serve: {}, or tool names separated by commas",
                SETS.join(", ")
            ));
        }
        let names = (offered().iter())
            .filter(|(command, tool)| {
                wanted.iter().any(|word| match *word {
                    "all" => true,
                    "read" => tool.read_only,
                    "write" => !tool.read_only,
                    name => command.get_name() == name,
                })
            })
            .map(|(command, _)| command.get_name())
            .collect();
        Ok(Toolbox { names })
    }

    fn tools(&self) -> impl Iterator<Item = &'static (clap::Command, Tool)> {
        (offered().iter()).filter(|(command, _)| self.names.contains(&command.get_name()))
    }

    /// The `tools/list` entries, with what `revision` defines.
    pub fn list(&self, revision: Revision) -> Vec<Value> {
        self.tools()
            .map(|(command, tool)| describe(command, tool, revision))
            .collect()
    }

    /// Checks what the protocol itself requires of a `tools/call` (a tool this server offers,
    /// an object of arguments): a request that fails it is a protocol error (-32602), answered
    /// at once.
    pub fn prepare(&self, params: &Map<String, Value>) -> Result<Prepared, RpcError> {
        let name = params.get("name").and_then(Value::as_str);
        let Some((command, tool)) =
            name.and_then(|name| self.tools().find(|(command, _)| command.get_name() == name))
        else {
            let what = match name {
                Some(name) => format!("unknown tool `{name}`"),
                None => "`name` must be the name of a tool".to_owned(),
            };
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                format!("{what}; the tools are: {}", self.names.join(", ")),
            ));
        };
        let mut arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(other) => {
                return Err(RpcError::new(
                    code::INVALID_PARAMS,
                    format!(
                        "`arguments` must be an object, not {}",
                        json_type_name(other)
                    ),
                ));
            }
        };
        if let Some((name, value)) = tool.default_argument
            && arguments.get(name).is_none_or(Value::is_null)
        {
            arguments.insert(name.to_owned(), json!(value));
        }
        Ok(Prepared {
            command: command.clone(),
            tool: *tool,
            arguments,
        })
    }
}

/// A tool's entry in `tools/list`: what it answers and when to use it, for a model (a
/// subcommand's tool says what it does, then what its family is for), its arguments, and
/// from the revisions that define them its annotations and the outline of its report.
fn describe(command: &clap::Command, tool: &Tool, revision: Revision) -> Value {
    let description = match command.get_name().contains(SUBCOMMAND) {
        true => {
            let about = command.get_about().map(ToString::to_string).unwrap_or_default();
            format!("{about}. {}", tool.about)
        }
        false => tool.about.to_owned(),
    };
    let mut entry = json!({
        "name": command.get_name(),
        "description": description,
        "inputSchema": input_schema(command, tool),
    });
    if revision >= Revision::ANNOTATIONS {
        // The store is append-only and the cache is derived, so no call destroys anything.
        // The destructive and idempotent hints mean something only for a tool that writes.
        entry["annotations"] = match tool.read_only {
            true => json!({"readOnlyHint": true, "openWorldHint": false}),
            false => json!({
                "readOnlyHint": false,
                "destructiveHint": false,
                "idempotentHint": tool.idempotent,
                "openWorldHint": false
            }),
        };
    }
    if revision >= Revision::STRUCTURED
        && let Some(schema) = tool.report
    {
        entry["outputSchema"] = outline(&schema().to_value());
    }
    entry
}

/// A `tools/call` whose tool exists and whose arguments are an object: ready to run.
pub struct Prepared {
    command: clap::Command,
    tool: Tool,
    arguments: Map<String, Value>,
}

/// Runs a prepared call through the command line's own parser and dispatch; `cancel`, once
/// set, stops the command's long work.
pub fn call(
    ctx: &Ctx,
    prepared: &Prepared,
    revision: Revision,
    cancel: &Cancel,
) -> Result<Value, RpcError> {
    let Prepared {
        command,
        tool,
        arguments,
    } = prepared;
    let schema = input_schema(command, tool);
    if let Err(message) = check_arguments(command, &schema, arguments) {
        return Ok(tool_error(&message));
    }
    let argv = command_line(command, arguments);
    let parsed = Cli::command()
        .try_get_matches_from(&argv)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => return Ok(tool_error(&clap_message(command, &schema, &err, &argv))),
    };
    let stdin = arguments
        .get(INPUT)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let directory = arguments
        .get(DIRECTORY)
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let (ui, captured) = Ui::capturing();
    let code = match ctx.for_call(directory.as_deref(), ui, stdin, cancel.clone()) {
        Ok(call) => match crate::cmd::run(&call, &cli.command) {
            Ok(Status::Ok) => 0,
            Ok(Status::No) => 1,
            Err(err) => report_failure(&call.ui, &err),
        },
        Err(err) => {
            let (ui, captured) = Ui::capturing();
            let code = report_failure(&ui, &err);
            let text = String::from_utf8_lossy(&captured.take()).into_owned();
            return Ok(result(text, code, None));
        }
    };
    let mut text = String::from_utf8_lossy(&captured.take()).into_owned();
    if code >= 2 {
        // The command's own complaints name its flags; the tool's caller knows arguments.
        text = renamed_flags(command, &text);
    }
    // Exit 1 is an answer ("stale", "rejected"), not a failure: its report is the result.
    let structured = (code < 2 && revision >= Revision::STRUCTURED)
        .then(|| serde_json::from_str::<Value>(&text).ok())
        .flatten()
        .filter(Value::is_object);
    Ok(result(text, code, structured))
}

fn result(text: String, code: u8, structured: Option<Value>) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": text}],
        "isError": code >= 2,
        "_meta": {"exit_code": code}
    });
    if let Some(document) = structured {
        result["structuredContent"] = document;
    }
    result
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true, "_meta": {"exit_code": 2}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Value {
        Toolbox::default()
            .list(Revision::LATEST)
            .into_iter()
            .find(|t| t["name"] == name)
            .expect("tool")
    }

    fn names(toolbox: &Toolbox) -> Vec<String> {
        (toolbox.list(Revision::LATEST).into_iter())
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    }

    #[test]
    fn every_command_declares_how_it_is_offered() {
        for command in Cli::command().get_subcommands() {
            assert!(
                crate::cmd::declared_tool(command.get_name()).is_some(),
                "`{}` declares no `TOOL`",
                command.get_name()
            );
        }
    }

    #[test]
    fn tools_carry_schemas_from_the_command_definitions() {
        let update = tool("update");
        assert_eq!(update["annotations"]["readOnlyHint"], false);
        assert_eq!(update["annotations"]["idempotentHint"], false);
        let properties = &update["inputSchema"]["properties"];
        assert_eq!(properties["expected_revision"]["type"], "integer");
        assert_eq!(properties["input"]["type"], "string");
        assert_eq!(properties["file"]["type"], "string");
        assert_eq!(update["outputSchema"]["type"], "object");
        let show = tool("show");
        assert_eq!(show["annotations"]["readOnlyHint"], true);
        let init = tool("init");
        assert_eq!(init["annotations"]["readOnlyHint"], false);
        assert_eq!(init["annotations"]["idempotentHint"], true);
        let names = names(&Toolbox::default());
        for plumbing in [
            "mcp",
            "hook",
            "hooks",
            "merge-driver",
            "textconv",
            "completions",
        ] {
            assert!(!names.contains(&plumbing.to_owned()), "{plumbing} is offered");
        }
        for tool in Toolbox::default().list(Revision::LATEST) {
            assert_eq!(tool["outputSchema"]["type"], "object", "{}", tool["name"]);
        }
    }

    /// Hosts show every description to the model: each says what the tool answers in the
    /// tool's own terms, never in the command line's.
    #[test]
    fn descriptions_are_written_for_a_model() {
        let cli_talk = ["--", "stdin", "standard input", "exit ", "-C ", "see `"];
        for tool in Toolbox::default().list(Revision::LATEST) {
            let name = &tool["name"];
            let mut texts = vec![tool["description"].as_str().expect("a description")];
            let properties = tool["inputSchema"]["properties"].as_object().expect("properties");
            for (argument, schema) in properties {
                let text = schema["description"].as_str();
                assert!(text.is_some(), "{name}: `{argument}` is not described");
                texts.extend(text);
            }
            assert!(texts[0].len() >= 40, "{name}: {}", texts[0]);
            for text in texts {
                for talk in cli_talk {
                    assert!(!text.contains(talk), "{name}: `{talk}` in {text:?}");
                }
            }
        }
    }

    #[test]
    fn older_revisions_get_only_what_they_define() {
        let oldest = Revision::named("2024-11-05").expect("known");
        for tool in Toolbox::default().list(oldest) {
            assert!(tool.get("annotations").is_none());
            assert!(tool.get("outputSchema").is_none());
        }
        let middle = Revision::named("2025-03-26").expect("known");
        for tool in Toolbox::default().list(middle) {
            assert!(tool.get("annotations").is_some());
            assert!(tool.get("outputSchema").is_none());
        }
    }

    #[test]
    fn a_toolbox_serves_the_set_or_the_tools_named() {
        let all = names(&Toolbox::default());
        assert_eq!(names(&Toolbox::parse("all").expect("all")), all);
        let read = names(&Toolbox::parse("read").expect("read"));
        let write = names(&Toolbox::parse("write").expect("write"));
        assert!(read.contains(&"retrieve".to_owned()) && !read.contains(&"update".to_owned()));
        assert!(write.contains(&"update".to_owned()) && !write.contains(&"scene".to_owned()));
        assert_eq!(read.len() + write.len(), all.len());
        for name in &read {
            assert_eq!(tool(name)["annotations"]["readOnlyHint"], true, "{name}");
        }
        assert_eq!(
            names(&Toolbox::parse(" retrieve,scene ").expect("names")),
            ["scene", "retrieve"]
        );
        let mixed = names(&Toolbox::parse("read,index").expect("mixed"));
        assert_eq!(mixed.len(), read.len() + 1);
        let unknown = Toolbox::parse("scene,nope").expect_err("unknown");
        assert!(
            unknown.starts_with("`nope` is no tool; give read, write, all, or tool names"),
            "{unknown}"
        );
        assert!(unknown.contains("node_set"), "{unknown}");
        assert!(Toolbox::parse(",").is_err());

        let scene = Toolbox::parse("scene").expect("scene");
        let params = json!({"name": "show", "arguments": {}});
        let refused = scene.prepare(params.as_object().expect("object")).err().expect("refused");
        assert_eq!(refused.message, "unknown tool `show`; the tools are: scene");
    }
}
