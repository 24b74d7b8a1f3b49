//! The schemas a tool is listed with, kept lean because hosts put every tool into the model's
//! context: the input schema from the command's clap definition (arguments by their clap ids,
//! described for a model), and the outline of the report's schema as `outputSchema`.
//!
//! An argument's description is the tool's own wording when it declares one, else the one of
//! [`SHARED_ARGUMENTS`] (the write flags every one-line write shares, written once here), else
//! the first line of the command-line help with flags renamed to arguments. The outline names
//! the report's top-level fields (per shape when it has several), which is what a model reads
//! in it, and leaves out their types, which are required, the nested definitions and the
//! descriptions (`epiphany schema` and the `schema` tool print the full schema): whatever
//! matches the full schema matches its outline.

use std::any::TypeId;

use clap::ArgAction;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::cmd::Tool;
use crate::cmd::mcp::arguments::own_args;
use crate::cmd::mcp::arguments::renamed_flags;

/// The argument that carries standard input.
pub const INPUT: &str = "input";
/// The argument that picks the directory to run in.
pub const DIRECTORY: &str = "directory";

/// Descriptions of arguments many tools share, for a model: one definition, inlined in each
/// tool that has the argument.
const SHARED_ARGUMENTS: [(&str, &str); 5] = [
    (DIRECTORY, "Run in this directory instead of the server's"),
    (
        "expected_revision",
        "Write only if the store is still at this revision (else a conflict error)",
    ),
    ("turn_id", "Your turn id, recorded with the write"),
    (
        "allow_missing_paths",
        "Accept code refs to files not written yet (recorded as planned)",
    ),
    (
        "dry_run",
        "Check everything and return the patch that would be written, writing nothing",
    ),
];

/// A JSON Schema of the command's arguments, named by their clap ids.
pub fn input_schema(command: &clap::Command, tool: &Tool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in own_args(command) {
        let id = arg.get_id().as_str();
        let mut schema = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => json!({"type": "boolean"}),
            ArgAction::Append => json!({"type": "array", "items": value_schema(arg)}),
            _ => value_schema(arg),
        };
        if let Some(description) = argument_description(command, tool, arg) {
            schema["description"] = json!(description);
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
        json!({"type": "string", "description": shared_description(DIRECTORY)}),
    );
    let mut schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn shared_description(id: &str) -> Option<&'static str> {
    (SHARED_ARGUMENTS.iter())
        .find(|(name, _)| *name == id)
        .map(|(_, description)| *description)
}

/// How a model reads the argument: the tool's wording, the shared one, or the first line of
/// the command-line help with flags named as arguments and the command line's own remarks
/// (`(repeatable)`: a list says so by its type) left out.
fn argument_description(command: &clap::Command, tool: &Tool, arg: &clap::Arg) -> Option<String> {
    let id = arg.get_id().as_str();
    if let Some((_, description)) = tool.arguments.iter().find(|(name, _)| *name == id) {
        return Some((*description).to_owned());
    }
    if let Some(description) = shared_description(id) {
        return Some(description.to_owned());
    }
    let help = arg.get_help()?.to_string();
    let help = help
        .replace(" (repeatable)", "")
        .replace("(repeatable; ", "(")
        .replace("repeatable; ", "");
    Some(renamed_flags(command, &help))
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

/// What a property schema accepts, in words: `an integer`, `a string or a list of strings`,
/// `one of in, out, both`.
pub fn accepted(schema: &Value) -> String {
    if let Some(choices) = schema["enum"].as_array() {
        let names: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
        return format!("one of {}", names.join(", "));
    }
    let types = types_of(schema);
    if types == ["array"] {
        let item = accepted(&schema["items"]);
        return format!("{item} or a list of them");
    }
    let named: Vec<String> = types.iter().map(|one| with_article(one)).collect();
    named.join(" or ")
}

/// `a string`, `an integer`.
pub fn with_article(type_name: &str) -> String {
    match type_name {
        "integer" | "array" | "object" => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}

/// The JSON types a property schema names (`"type": "x"` or `"type": ["x", "y"]`).
pub fn types_of(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::Array(types) => types.iter().filter_map(Value::as_str).collect(),
        one => vec![one.as_str().unwrap_or("string")],
    }
}

/// The outline of a report's JSON Schema: an object schema naming its top-level fields, for
/// each shape when it has several (`anyOf`, `oneOf`).
pub fn outline(schema: &Value) -> Value {
    let definitions = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    object_outline(schema, &definitions)
}

/// `schema` with `$ref`s to `definitions` followed.
fn resolved<'a>(mut schema: &'a Value, definitions: &'a Map<String, Value>) -> &'a Value {
    // A reference to a reference ends: schemars never makes a cycle of bare references.
    for _ in 0..8 {
        let Some(name) = (schema.get("$ref").and_then(Value::as_str))
            .and_then(|reference| reference.strip_prefix("#/$defs/"))
            .and_then(|name| definitions.get(name))
        else {
            break;
        };
        schema = name;
    }
    schema
}

fn object_outline(schema: &Value, definitions: &Map<String, Value>) -> Value {
    let schema = resolved(schema, definitions);
    for shapes in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(shapes).and_then(Value::as_array) {
            let outlined: Vec<Value> = (branches.iter())
                .map(|branch| object_outline(branch, definitions))
                .collect();
            return json!({ "type": "object", shapes: outlined });
        }
    }
    let properties: Map<String, Value> = (schema.get("properties").and_then(Value::as_object))
        .into_iter()
        .flatten()
        .map(|(name, _)| (name.clone(), json!({})))
        .collect();
    json!({"type": "object", "properties": properties})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outline_names_the_top_level_fields_of_each_shape() {
        let schema = json!({
            "anyOf": [{"$ref": "#/$defs/Report"}, {"$ref": "#/$defs/Draft"}],
            "$defs": {
                "Report": {"type": "object", "description": "long", "properties": {
                    "revision": {"type": "integer", "minimum": 0, "description": "d"},
                    "source": {"$ref": "#/$defs/Source"},
                    "id": {"type": ["string", "null"]}
                }, "required": ["revision"]},
                "Source": {"oneOf": [{"const": "init"}, {"type": "string", "const": "update"}]},
                "Draft": {"type": "object", "properties": {"patch": {"$ref": "#/$defs/Patch"}}},
                "Patch": {"type": "object", "properties": {"deep": {"type": "string"}}}
            }
        });
        assert_eq!(
            outline(&schema),
            json!({"type": "object", "anyOf": [
                {"type": "object", "properties": {"revision": {}, "source": {}, "id": {}}},
                {"type": "object", "properties": {"patch": {}}}
            ]})
        );
    }

    /// Every report's outline is a schema a validator takes, and small.
    #[test]
    fn every_report_schema_has_a_small_valid_outline() {
        for (name, schema) in crate::cmd::schema::report_schemas() {
            let schema = schema.to_value();
            let outlined = outline(&schema);
            assert!(
                jsonschema::validator_for(&outlined).is_ok(),
                "{name}: {outlined}"
            );
            assert!(outlined.to_string().len() < 1_000, "{name}: {outlined}");
        }
    }

    #[test]
    fn accepted_says_what_a_property_takes() {
        assert_eq!(accepted(&json!({"type": "integer"})), "an integer");
        assert_eq!(
            accepted(&json!({"type": ["integer", "string"]})),
            "an integer or a string"
        );
        assert_eq!(
            accepted(&json!({"type": "string", "enum": ["in", "out"]})),
            "one of in, out"
        );
        assert_eq!(
            accepted(&json!({"type": "array", "items": {"type": "string"}})),
            "a string or a list of them"
        );
    }
}
