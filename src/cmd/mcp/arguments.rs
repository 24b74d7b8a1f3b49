//! A tool call's arguments: checked against the tool's input schema, turned into the command
//! line they stand for, and every complaint (ours or clap's) worded with the tool's argument
//! names, saying what was wrong and what is accepted, never repeating a value given.
//!
//! Arguments are taken as models send them: an argument given as `null`, and a list argument
//! given as `[]`, are arguments not given; a single value where a list is taken is a list of
//! one; an integer may come as a number or as its digits in a string.

use serde_json::Map;
use serde_json::Value;

use crate::cmd::is_flag_name;
use crate::cmd::mcp::schema::accepted;
use crate::cmd::mcp::schema::types_of;
use crate::policy::secrets::conceal_values;
use crate::state::decode::json_type_name;

/// Global flags the server sets itself, and clap's own.
const MANAGED_ARGS: [&str; 4] = ["json", "quiet", "directory", "help"];
/// What joins a command and its subcommand in a tool's name (no command name holds it).
pub const SUBCOMMAND: char = '_';

/// The command's own arguments, without the ones the server manages.
pub fn own_args(command: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    command
        .get_arguments()
        .filter(|arg| !MANAGED_ARGS.contains(&arg.get_id().as_str()))
}

/// Whether an argument was given at all: `null` and an empty list say nothing.
pub fn is_given(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// Checks the arguments against the input schema: known names, types, choices, and the
/// required ones present. The message names arguments as the tool does and says what each
/// takes.
pub fn check_arguments(
    command: &clap::Command,
    schema: &Value,
    arguments: &Map<String, Value>,
) -> Result<(), String> {
    let tool = command.get_name();
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    for (key, value) in arguments {
        let Some(property) = properties.get(key) else {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(format!(
                "`{tool}` has no argument `{key}`; its arguments are: {}",
                known.join(", ")
            ));
        };
        if is_given(value) {
            check_value(key, property, value)?;
        }
    }
    let missing: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|id| !arguments.get(*id).is_some_and(is_given))
        .map(|id| format!("`{id}` ({})", accepted(&properties[id])))
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
    let expected = types_of(schema);
    if expected == ["array"] {
        let items = &schema["items"];
        return match value {
            Value::Array(values) => (values.iter().enumerate()).try_for_each(|(at, item)| {
                check_value(key, items, item).map_err(|_| {
                    format!(
                        "argument `{key}` must be {}; item {} is {}",
                        accepted(schema),
                        at + 1,
                        json_type_name(item)
                    )
                })
            }),
            // One value where several may be given is a list of one.
            single => check_value(key, items, single)
                .map_err(|_| wrong_type(key, schema, single)),
        };
    }
    let fits = |expected: &str| match (expected, value) {
        ("boolean", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("integer", Value::Number(number)) => number.is_i64() || number.is_u64(),
        ("integer", Value::String(text)) => text.trim().parse::<i64>().is_ok(),
        _ => false,
    };
    if !expected.iter().any(|one| fits(one)) {
        return Err(wrong_type(key, schema, value));
    }
    if let (Some(choices), Value::String(text)) = (schema["enum"].as_array(), value)
        && !choices.iter().any(|choice| choice == text)
    {
        // The value is not repeated: it may be a secret given in the wrong place.
        return Err(format!(
            "argument `{key}` must be {} (a string of {} characters was given)",
            accepted(schema),
            text.chars().count()
        ));
    }
    Ok(())
}

fn wrong_type(key: &str, schema: &Value, value: &Value) -> String {
    let given = match value {
        Value::String(text) if types_of(schema).contains(&"integer") => {
            format!("a string that is not a whole number ({} characters)", text.chars().count())
        }
        Value::Number(_) if types_of(schema).contains(&"integer") => {
            "a number that is not a whole number".to_owned()
        }
        other => json_type_name(other).to_owned(),
    };
    format!("argument `{key}` must be {}, not {given}", accepted(schema))
}

/// The argv the tool arguments stand for: options by long name, then positionals after `--`.
/// The arguments have been checked: every key names an argument of `command`.
pub fn command_line(command: &clap::Command, arguments: &Map<String, Value>) -> Vec<String> {
    let mut argv = vec!["epiphany".to_owned(), "--json".to_owned()];
    argv.extend(command.get_name().split(SUBCOMMAND).map(str::to_owned));
    let mut positionals: Vec<(usize, Vec<String>)> = Vec::new();
    for arg in own_args(command) {
        let Some(value) = arguments.get(arg.get_id().as_str()).filter(|v| is_given(v)) else {
            continue;
        };
        let values: Vec<String> = match value {
            Value::Bool(false) => continue,
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
/// nothing of the values given (`argv`) repeated. `schema` is the tool's input schema: it says
/// what an argument takes.
pub fn clap_message(
    command: &clap::Command,
    schema: &Value,
    err: &clap::Error,
    argv: &[String],
) -> String {
    use clap::error::ContextKind;
    use clap::error::ContextValue;
    use clap::error::ErrorKind;
    let ids = |kind: ContextKind| -> Vec<String> {
        match err.get(kind) {
            Some(ContextValue::String(one)) => vec![argument_id(command, one)],
            Some(ContextValue::Strings(many)) => {
                many.iter().map(|s| argument_id(command, s)).collect()
            }
            _ => Vec::new(),
        }
    };
    let names = |kind: ContextKind| -> String {
        let names: Vec<String> = ids(kind).iter().map(|id| format!("`{id}`")).collect();
        names.join(", ")
    };
    let takes = |kind: ContextKind| -> String {
        let taken: Vec<String> = (ids(kind).iter())
            .filter_map(|id| schema["properties"].get(id))
            .map(accepted)
            .collect();
        match taken.as_slice() {
            [] => String::new(),
            _ => format!(" ({})", taken.join("; ")),
        }
    };
    let tool = command.get_name();
    match err.kind() {
        ErrorKind::MissingRequiredArgument => format!(
            "`{tool}` needs the argument {}{}",
            names(ContextKind::InvalidArg),
            takes(ContextKind::InvalidArg)
        ),
        ErrorKind::ArgumentConflict => format!(
            "`{tool}`: {} cannot be given together with {}; give one of them",
            names(ContextKind::InvalidArg),
            names(ContextKind::PriorArg)
        ),
        ErrorKind::InvalidValue => format!(
            "`{tool}`: {} needs a value{}",
            names(ContextKind::InvalidArg),
            takes(ContextKind::InvalidArg)
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

/// The argument's id for clap's display of it (`--used <N>`, `<QUERY>`, `--check`).
fn argument_id(command: &clap::Command, shown: &str) -> String {
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
        Some(arg) => arg.get_id().as_str().to_owned(),
        None => shown.to_owned(),
    }
}

/// `text` with `--flag <VALUE>` and `--flag` replaced by the arguments' names.
pub fn renamed_flags(command: &clap::Command, text: &str) -> String {
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
    use clap::CommandFactory;
    use serde_json::json;

    use super::*;
    use crate::cmd::Cli;
    use crate::cmd::mcp::schema::input_schema;

    fn subcommand(name: &str) -> clap::Command {
        Cli::command()
            .find_subcommand(name)
            .cloned()
            .expect("subcommand")
    }

    fn schema(name: &str) -> Value {
        let tool = crate::cmd::declared_tool(name).expect("declared");
        input_schema(&subcommand(name), &tool)
    }

    fn check(name: &str, arguments: Value) -> Result<(), String> {
        check_arguments(
            &subcommand(name),
            &schema(name),
            arguments.as_object().expect("object"),
        )
    }

    fn argv(name: &str, arguments: Value) -> Vec<String> {
        command_line(&subcommand(name), arguments.as_object().expect("object"))
    }

    #[test]
    fn revisions_are_numbers_or_names() {
        for (name, key) in [("show", "revision"), ("diff", "from"), ("diff", "to")] {
            assert_eq!(
                schema(name)["properties"][key]["type"],
                json!(["integer", "string"])
            );
            for value in [json!(3), json!("3"), json!("HEAD~1"), json!("5d2f")] {
                assert_eq!(check(name, json!({ key: value })), Ok(()));
            }
        }
        assert_eq!(
            argv("rollback", json!({"to_revision": 2})),
            ["epiphany", "--json", "rollback", "--to-revision=2"]
        );
    }

    #[test]
    fn arguments_become_a_command_line() {
        let arguments = json!({"expected_revision": 3, "file": "-", "turn_id": "t", "input": "{}"});
        assert_eq!(
            argv("update", arguments),
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

    /// See: issue 50. `note refs: []` became `--ref` with no value and was refused.
    #[test]
    fn null_and_empty_lists_are_arguments_not_given() {
        let plain = argv("note", json!({"text": "t"}));
        for nothing in [json!([]), Value::Null] {
            let arguments = json!({"text": "t", "refs": nothing, "dry_run": null, "kind": null});
            assert_eq!(check("note", arguments.clone()), Ok(()));
            assert_eq!(argv("note", arguments), plain);
            let arguments = json!({"query": "q", "path_prefixes": nothing});
            assert_eq!(argv("retrieve", arguments), ["epiphany", "--json", "retrieve", "--", "q"]);
        }
        assert_eq!(
            argv("note", json!({"text": "t", "dry_run": false})),
            plain
        );
        // A required list given empty is missing, and the message says what it takes.
        assert_eq!(
            check("retrieve", json!({"query": []})),
            Err("`retrieve` needs the argument `query` (a string or a list of them)".to_owned())
        );
    }

    #[test]
    fn bad_arguments_are_named_as_the_tool_names_them_with_what_they_take() {
        let refused = |name: &str, arguments: Value| check(name, arguments).expect_err("refused");
        assert_eq!(
            refused("pressure", json!({})),
            "`pressure` needs the argument `used` (an integer)"
        );
        let unknown = refused("show", json!({"colour": "red"}));
        assert!(
            unknown.starts_with("`show` has no argument `colour`; its arguments are: revision"),
            "{unknown}"
        );
        assert_eq!(
            refused("pressure", json!({"used": "three"})),
            "argument `used` must be an integer, not a string that is not a whole number (5 characters)"
        );
        assert_eq!(
            refused("pressure", json!({"used": 2.5})),
            "argument `used` must be an integer, not a number that is not a whole number"
        );
        assert_eq!(
            refused("show", json!({"revision": true})),
            "argument `revision` must be an integer or a string, not a boolean"
        );
        let choice = refused("retrieve", json!({"query": "q", "mode": "fuzzy-hunter2"}));
        assert_eq!(
            choice,
            "argument `mode` must be one of hybrid, exact, lexical, semantic (a string of 13 characters was given)"
        );
        assert_eq!(
            refused("context", json!({"nodes": ["n", 1]})),
            "argument `nodes` must be a string or a list of them; item 2 is a number"
        );
        assert_eq!(
            refused("context", json!({"nodes": {"id": "n"}})),
            "argument `nodes` must be a string or a list of them, not an object"
        );
    }

    #[test]
    fn clap_errors_name_arguments_not_flags() {
        let command = subcommand("pressure");
        let schema = schema("pressure");
        let err = Cli::command()
            .try_get_matches_from(["epiphany", "--json", "pressure"])
            .expect_err("missing --used");
        assert_eq!(
            clap_message(&command, &schema, &err, &[]),
            "`pressure` needs the argument `used` (an integer)"
        );
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        let argv =
            ["epiphany", "--json", "pressure", &format!("--used={token}")].map(str::to_owned);
        let err = Cli::command()
            .try_get_matches_from(&argv)
            .expect_err("not a number");
        let message = clap_message(&command, &schema, &err, &argv);
        assert!(message.contains("`used`"), "{message}");
        assert!(!message.contains("ghp_"), "{message}");
        let err = Cli::command()
            .try_get_matches_from(["epiphany", "--json", "pressure", "--used"])
            .expect_err("no value");
        assert_eq!(
            clap_message(&command, &schema, &err, &[]),
            "`pressure`: `used` needs a value (an integer)"
        );
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
