//! The tools: every command a [`Tool`] declaration offers, listed with schemas derived from its
//! clap definition and its report type, and called through the command line's own parser.
//!
//! A tool's arguments are its flags and positionals by their clap ids (`expected_revision`,
//! `path_prefixes`, `query`), plus `input` for what the command reads on stdin and `directory`
//! to run elsewhere than the server's directory. Arguments are checked against the input
//! schema before anything runs, and every complaint names arguments as the tool spells them,
//! never as command-line flags. A call that fails (exit 2 or 3) is a tool error whose text is
//! the command's error document; any other call carries its report as `structuredContent`,
//! which matches the tool's `outputSchema`.

use std::any::TypeId;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::ArgAction;
use clap::CommandFactory;
use clap::FromArgMatches;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::ctx::Cancel;
use crate::cmd::Cli;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::is_flag_name;
use crate::ctx::report_failure;
use crate::cmd::Tool;
use crate::cmd::mcp::protocol::Revision;
use crate::cmd::mcp::protocol::RpcError;
use crate::cmd::mcp::protocol::code;
use crate::policy::secrets::conceal_values;
use crate::state::decode::json_type_name;
use crate::ui::Ui;

/// Global flags the server sets itself, and clap's own.
const MANAGED_ARGS: [&str; 4] = ["json", "quiet", "directory", "help"];
/// The argument that carries standard input.
const INPUT: &str = "input";
/// The argument that picks the directory to run in.
const DIRECTORY: &str = "directory";
/// What joins a command and its subcommand in a tool's name (no command name holds it).
const SUBCOMMAND: char = '_';

/// Every offered command with its declaration. A command with subcommands (`node set`,
/// `node rm`) is offered as one tool per subcommand, named `node_set`, `node_rm`. Built once:
/// clap keeps names as static strings, so the joined names are made (and kept) only once.
fn offered() -> impl Iterator<Item = (clap::Command, Tool)> {
    static OFFERED: OnceLock<Vec<(clap::Command, Tool)>> = OnceLock::new();
    let tools = OFFERED.get_or_init(|| {
        let mut tools = Vec::new();
        for command in Cli::command().get_subcommands() {
            let Some(tool) =
                crate::cmd::declared_tool(command.get_name()).filter(|tool| tool.offered)
            else {
                continue;
            };
            if !command.has_subcommands() {
                tools.push((command.clone(), tool));
                continue;
            }
            for sub in command.get_subcommands() {
                let name = format!("{}{SUBCOMMAND}{}", command.get_name(), sub.get_name());
                let name: &'static str = Box::leak(name.into_boxed_str());
                tools.push((sub.clone().name(name), tool));
            }
        }
        tools
    });
    tools.iter().cloned()
}

/// The `tools/list` entries, with what `revision` defines.
pub fn list(revision: Revision) -> Vec<Value> {
    offered()
        .map(|(command, tool)| describe(&command, &tool, revision))
        .collect()
}

fn describe(command: &clap::Command, tool: &Tool, revision: Revision) -> Value {
    let description = command
        .get_long_about()
        .or(command.get_about())
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut entry = json!({
        "name": command.get_name(),
        "description": description,
        "inputSchema": input_schema(command, tool),
    });
    if revision >= Revision::ANNOTATIONS {
        // The store is append-only and the cache is derived, so no call destroys anything.
        entry["annotations"] = json!({
            "readOnlyHint": tool.read_only,
            "destructiveHint": false,
            "idempotentHint": tool.idempotent,
            "openWorldHint": false
        });
    }
    if revision >= Revision::STRUCTURED
        && let Some(schema) = tool.report
    {
        entry["outputSchema"] = schema().to_value();
    }
    entry
}

/// A JSON Schema of the command's arguments, named by their clap ids.
fn input_schema(command: &clap::Command, tool: &Tool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in own_args(command) {
        let id = arg.get_id().as_str();
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
        if let Some((name, value)) = tool.default_argument
            && name == id
        {
            schema["default"] = json!(value);
        }
        properties.insert(id.to_owned(), schema);
    }
    if let Some(what) = tool.input {
        properties.insert(
            INPUT.to_owned(),
            json!({"type": "string", "description": what}),
        );
    }
    properties.insert(
        DIRECTORY.to_owned(),
        json!({"type": "string", "description": "Run as if started in this directory (relative to the server's)"}),
    );
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The command's own arguments, without the ones the server manages.
fn own_args(command: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    command
        .get_arguments()
        .filter(|arg| !MANAGED_ARGS.contains(&arg.get_id().as_str()))
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
    } else if type_id == TypeId::of::<crate::state::store::Revision>() {
        // A revision is a number, `HEAD~N` or a record id: models send numbers as numbers.
        json!({"type": ["integer", "string"]})
    } else {
        json!({"type": "string"})
    }
}

/// A `tools/call` whose tool exists and whose arguments are an object: ready to run.
pub struct Prepared {
    command: clap::Command,
    tool: Tool,
    arguments: Map<String, Value>,
}

/// Checks what the protocol itself requires of a `tools/call` (a known tool, an object of
/// arguments): a request that fails it is a protocol error (-32602), answered at once.
pub fn prepare(params: &Map<String, Value>) -> Result<Prepared, RpcError> {
    let name = match params.get("name") {
        Some(Value::String(name)) => name.as_str(),
        _ => {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                "`name` must be the name of a tool",
            ));
        }
    };
    let Some((command, tool)) = offered().find(|(command, _)| command.get_name() == name) else {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            format!("unknown tool `{name}`"),
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
        command,
        tool,
        arguments,
    })
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
        Err(err) => return Ok(tool_error(&clap_message(command, &err, &argv))),
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

/// Checks the arguments against the input schema: known names, types, choices, and the
/// required ones present. The message names arguments as the tool does.
fn check_arguments(
    command: &clap::Command,
    schema: &Value,
    arguments: &Map<String, Value>,
) -> Result<(), String> {
    let tool = command.get_name();
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (key, value) in arguments {
        let Some(property) = properties.get(key) else {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(format!(
                "`{tool}` has no argument `{key}`; its arguments are: {}",
                known.join(", ")
            ));
        };
        if value.is_null() {
            continue;
        }
        check_value(key, property, value)?;
    }
    let missing: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|id| arguments.get(*id).is_none_or(Value::is_null))
        .map(|id| format!("`{id}`"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "`{tool}` needs the argument{} {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    Ok(())
}

fn check_value(key: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let expected: Vec<&str> = match &schema["type"] {
        Value::Array(types) => types.iter().filter_map(Value::as_str).collect(),
        one => vec![one.as_str().unwrap_or("string")],
    };
    if expected == ["array"] {
        return match value {
            Value::Array(items) => {
                (items.iter()).try_for_each(|item| check_value(key, &schema["items"], item))
            }
            // One value where several may be given is a list of one.
            single => check_value(key, &schema["items"], single),
        };
    }
    let fits = |expected: &str| match (expected, value) {
        ("boolean", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("integer", Value::Number(number)) => number.is_i64() || number.is_u64(),
        ("integer", Value::String(text)) => text.trim().parse::<i64>().is_ok(),
        _ => false,
    };
    if !expected.iter().any(|one| fits(one)) {
        let named: Vec<String> = (expected.iter())
            .map(|one| match *one {
                "integer" | "array" => format!("an {one}"),
                _ => format!("a {one}"),
            })
            .collect();
        return Err(format!(
            "argument `{key}` must be {}, not {}",
            named.join(" or "),
            json_type_name(value)
        ));
    }
    if let (Some(choices), Value::String(text)) = (schema["enum"].as_array(), value)
        && !choices.iter().any(|choice| choice == text)
    {
        let names: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
        // The value is not repeated: it may be a secret given in the wrong place.
        return Err(format!(
            "argument `{key}` must be one of {} (a string of {} characters was given)",
            names.join(", "),
            text.chars().count()
        ));
    }
    Ok(())
}

/// The argv the tool arguments stand for: options by long name, then positionals after `--`.
/// The arguments have been checked: every key names an argument of `command`.
fn command_line(command: &clap::Command, arguments: &Map<String, Value>) -> Vec<String> {
    let mut argv = vec!["epiphany".to_owned(), "--json".to_owned()];
    argv.extend(command.get_name().split(SUBCOMMAND).map(str::to_owned));
    let mut positionals: Vec<(usize, Vec<String>)> = Vec::new();
    for arg in own_args(command) {
        let Some(value) = arguments.get(arg.get_id().as_str()) else {
            continue;
        };
        let values: Vec<String> = match value {
            Value::Null | Value::Bool(false) => continue,
            Value::Bool(true) => Vec::new(),
            Value::Array(items) => items.iter().map(scalar).collect(),
            other => vec![scalar(other)],
        };
        if arg.is_positional() {
            let order = command
                .get_positionals()
                .position(|p| p.get_id() == arg.get_id());
            positionals.push((order.unwrap_or(usize::MAX), values));
            continue;
        }
        let Some(long) = arg.get_long() else {
            continue;
        };
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
    argv
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.trim().to_owned(),
        other => other.to_string(),
    }
}

/// A clap error about a tool call, with every flag replaced by the argument's name, and
/// nothing of the values given (`argv`) repeated.
fn clap_message(command: &clap::Command, err: &clap::Error, argv: &[String]) -> String {
    use clap::error::ContextKind;
    use clap::error::ContextValue;
    use clap::error::ErrorKind;
    let names = |kind: ContextKind| -> String {
        let shown = match err.get(kind) {
            Some(ContextValue::String(one)) => vec![argument_name(command, one)],
            Some(ContextValue::Strings(many)) => {
                many.iter().map(|s| argument_name(command, s)).collect()
            }
            _ => Vec::new(),
        };
        shown.join(", ")
    };
    let tool = command.get_name();
    match err.kind() {
        ErrorKind::MissingRequiredArgument => {
            format!(
                "`{tool}` needs the argument {}",
                names(ContextKind::InvalidArg)
            )
        }
        ErrorKind::ArgumentConflict => format!(
            "`{tool}`: {} cannot be given together with {}",
            names(ContextKind::InvalidArg),
            names(ContextKind::PriorArg)
        ),
        ErrorKind::InvalidValue => format!(
            "`{tool}`: the value given is not valid for {}",
            names(ContextKind::InvalidArg)
        ),
        ErrorKind::ValueValidation => {
            let reason = std::error::Error::source(err)
                .map(|source| format!(": {source}"))
                .unwrap_or_default();
            without_values(
                &format!(
                    "`{tool}`: the value given is not valid for {}{reason}",
                    names(ContextKind::InvalidArg)
                ),
                tool,
                argv,
            )
        }
        _ => {
            let rendered = without_values(&err.render().to_string(), tool, argv);
            let first = rendered
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            renamed_flags(command, first)
        }
    }
}

/// `text` without the values of `argv` (the command line a call to `tool` became): only the
/// names of flags and of the tool are repeated.
fn without_values(text: &str, tool: &str, argv: &[String]) -> String {
    conceal_values(text, argv.iter().map(String::as_str), |arg| {
        is_flag_name(arg) || [tool, "epiphany", "--"].contains(&arg)
    })
}

/// The argument's name for clap's display of it (`--used <N>`, `<QUERY>`, `--check`).
fn argument_name(command: &clap::Command, shown: &str) -> String {
    let found = own_args(command).find(|arg| match arg.get_long() {
        Some(long) => {
            let flag = format!("--{long}");
            shown == flag
                || shown.starts_with(&format!("{flag} "))
                || shown.starts_with(&format!("{flag}="))
        }
        None => {
            let names = arg
                .get_value_names()
                .map(|names| names.iter().map(ToString::to_string).collect::<Vec<_>>())
                .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()]);
            names
                .iter()
                .any(|name| shown.starts_with(&format!("<{name}>")))
        }
    });
    match found {
        Some(arg) => format!("`{}`", arg.get_id().as_str()),
        None => format!("`{shown}`"),
    }
}

/// `text` with `--flag <VALUE>` and `--flag` replaced by the arguments' names.
fn renamed_flags(command: &clap::Command, text: &str) -> String {
    let mut text = text.to_owned();
    let mut args: Vec<&clap::Arg> = own_args(command)
        .filter(|a| a.get_long().is_some())
        .collect();
    // Longer flags first, so `--limit-chars` is not half-replaced by `--limit`.
    args.sort_by_key(|arg| std::cmp::Reverse(arg.get_long().map_or(0, str::len)));
    for arg in args {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let id = format!("`{}`", arg.get_id().as_str());
        for name in arg.get_value_names().into_iter().flatten() {
            for shown in [format!("--{long} <{name}>"), format!("--{long} {name}")] {
                text = text.replace(&format!("`{shown}`"), &id);
                text = text.replace(&shown, &id);
            }
        }
        text = text.replace(&format!("`--{long}`"), &id);
        text = text.replace(&format!("--{long}"), &id);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Value {
        list(Revision::LATEST)
            .into_iter()
            .find(|t| t["name"] == name)
            .expect("tool")
    }

    fn subcommand(name: &str) -> clap::Command {
        Cli::command()
            .find_subcommand(name)
            .cloned()
            .expect("subcommand")
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
        let names: Vec<Value> = list(Revision::LATEST)
            .into_iter()
            .map(|t| t["name"].clone())
            .collect();
        for plumbing in [
            "mcp",
            "hook",
            "hooks",
            "merge-driver",
            "textconv",
            "completions",
        ] {
            assert!(!names.contains(&json!(plumbing)), "{plumbing} is offered");
        }
        for tool in list(Revision::LATEST) {
            assert_eq!(tool["outputSchema"]["type"], "object", "{}", tool["name"]);
        }
    }

    #[test]
    fn older_revisions_get_only_what_they_define() {
        let oldest = Revision::named("2024-11-05").expect("known");
        for tool in list(oldest) {
            assert!(tool.get("annotations").is_none());
            assert!(tool.get("outputSchema").is_none());
        }
        let middle = Revision::named("2025-03-26").expect("known");
        for tool in list(middle) {
            assert!(tool.get("annotations").is_some());
            assert!(tool.get("outputSchema").is_none());
        }
    }

    #[test]
    fn revisions_are_numbers_or_names() {
        for (name, key) in [("show", "revision"), ("diff", "from"), ("diff", "to")] {
            let command = subcommand(name);
            let tool = crate::cmd::declared_tool(name).expect("declared");
            let schema = input_schema(&command, &tool);
            assert_eq!(
                schema["properties"][key]["type"],
                json!(["integer", "string"])
            );
            for value in [json!(3), json!("3"), json!("HEAD~1"), json!("5d2f")] {
                let arguments = json!({ key: value });
                let arguments = arguments.as_object().expect("object");
                assert_eq!(check_arguments(&command, &schema, arguments), Ok(()));
            }
        }
        let command = subcommand("rollback");
        let arguments = json!({"to_revision": 2});
        let argv = command_line(&command, arguments.as_object().expect("object"));
        assert_eq!(argv, ["epiphany", "--json", "rollback", "--to-revision=2"]);
    }

    #[test]
    fn arguments_become_a_command_line() {
        let command = subcommand("update");
        let arguments = json!({"expected_revision": 3, "file": "-", "turn_id": "t", "input": "{}"});
        let argv = command_line(&command, arguments.as_object().expect("object"));
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
    }

    #[test]
    fn bad_arguments_are_named_as_the_tool_names_them() {
        let check = |name: &str, arguments: Value| {
            let command = subcommand(name);
            let tool = crate::cmd::declared_tool(name).expect("declared");
            let schema = input_schema(&command, &tool);
            check_arguments(&command, &schema, arguments.as_object().expect("object"))
                .expect_err("refused")
        };
        let missing = check("pressure", json!({}));
        assert_eq!(missing, "`pressure` needs the argument `used`");
        assert!(!missing.contains("--"), "{missing}");
        let unknown = check("show", json!({"colour": "red"}));
        assert!(
            unknown.starts_with("`show` has no argument `colour`"),
            "{unknown}"
        );
        let wrong = check("pressure", json!({"used": "three"}));
        assert_eq!(wrong, "argument `used` must be an integer, not a string");
        let revision = check("show", json!({"revision": true}));
        assert_eq!(
            revision,
            "argument `revision` must be an integer or a string, not a boolean"
        );
        let choice = check("retrieve", json!({"query": "q", "mode": "fuzzy-hunter2"}));
        assert!(
            choice.starts_with("argument `mode` must be one of"),
            "{choice}"
        );
        assert!(!choice.contains("hunter2"), "{choice}");
        let item = check("context", json!({"nodes": ["n", 1]}));
        assert_eq!(item, "argument `nodes` must be a string, not a number");
    }

    #[test]
    fn clap_errors_name_arguments_not_flags() {
        let command = subcommand("pressure");
        let err = Cli::command()
            .try_get_matches_from(["epiphany", "--json", "pressure"])
            .expect_err("missing --used");
        assert_eq!(
            clap_message(&command, &err, &[]),
            "`pressure` needs the argument `used`"
        );
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        let argv =
            ["epiphany", "--json", "pressure", &format!("--used={token}")].map(str::to_owned);
        let err = Cli::command()
            .try_get_matches_from(&argv)
            .expect_err("not a number");
        let message = clap_message(&command, &err, &argv);
        assert!(message.contains("`used`"), "{message}");
        assert!(!message.contains("ghp_"), "{message}");
        assert_eq!(
            renamed_flags(&command, "a value is required for '--used <N>'"),
            "a value is required for '`used`'"
        );
        let distill = subcommand("distill");
        assert_eq!(
            renamed_flags(
                &distill,
                "pass `--text TEXT`, or a non-blank `--source-kind`"
            ),
            "pass `text`, or a non-blank `source_kind`"
        );
    }
}
