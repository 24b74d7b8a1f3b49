//! The walk of a JSON value against the patch's JSON Schema (docs/writes.md#patch-decoding):
//! [`Check::value`] collects every problem with its path, and [`Check::repair`] puts a stand-in
//! wherever that walk found one, so the rest decodes and is validated as usual.

use serde_json::Map;
use serde_json::Value;

use crate::state::problem::Problem;
use crate::state::problem::item;
use crate::state::problem::join;

use super::closest;
use super::json_type_name;
use super::unknown_field;

/// A walk of a JSON value against a JSON Schema (the subset schemars writes: `$ref` into
/// `$defs`, `type`, `enum`, `const`, `anyOf`, `oneOf`, `allOf`, `properties`, `required`,
/// `additionalProperties`, `items`, `minItems`, `minimum`, `maximum` and integer `format`s),
/// collecting every problem. An object accepts only the properties its schema names.
pub(super) struct Check<'a> {
    /// The whole schema, which `$ref`s point into.
    pub(super) root: &'a Value,
    /// Every problem found so far.
    pub(super) problems: Vec<Problem>,
}

impl<'a> Check<'a> {
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let mut schema = schema;
        // A `$ref` with siblings (schemars puts a description beside it) means the target.
        while let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            match reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
            {
                Some(target) => schema = target,
                None => break,
            }
        }
        schema
    }

    /// Checks `value`, at `path`, against `schema`, adding every problem.
    pub(super) fn value(&mut self, value: &Value, schema: &'a Value, path: &str) {
        let schema = self.resolve(schema);
        if schema == &Value::Bool(true) || schema.as_object().is_some_and(Map::is_empty) {
            return;
        }
        if let Some(branches) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            self.alternatives(value, branches, path);
            return;
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            for part in parts {
                self.value(value, part, path);
            }
        }
        if let Some(types) = schema.get("type")
            && !type_admits(types, value)
        {
            self.problems.push(Problem::new(
                path,
                format!("expected {}, found {}", type_names(types), describe(value)),
            ));
            return;
        }
        if let Some(allowed) = allowed_values(schema)
            && !allowed.contains(value)
        {
            self.problems
                .push(Problem::new(path, unknown_value(value, &allowed)));
            return;
        }
        match value {
            Value::Object(fields) => self.object(fields, schema, path),
            Value::Array(items) => self.array(items, schema, path),
            Value::Number(number) => self.number(number, schema, path),
            _ => {}
        }
    }

    /// `anyOf` / `oneOf`: the value must match one branch. When none does, the problems of
    /// the branch whose type fits the value are the ones worth reading.
    fn alternatives(&mut self, value: &Value, branches: &'a [Value], path: &str) {
        let mut fitting = Vec::new();
        for branch in branches {
            let mut trial = Check {
                root: self.root,
                problems: Vec::new(),
            };
            trial.value(value, branch, path);
            if trial.problems.is_empty() {
                return;
            }
            let branch = self.resolve(branch);
            if branch.get("type").is_none_or(|t| type_admits(t, value)) {
                fitting.push(trial.problems);
            }
        }
        let constants: Vec<Value> = branches
            .iter()
            .filter_map(|branch| allowed_values(self.resolve(branch)))
            .flatten()
            .collect();
        match fitting.len() {
            1 => self.problems.extend(fitting.remove(0)),
            _ if !constants.is_empty() && constants.len() == branches.len() => {
                self.problems
                    .push(Problem::new(path, unknown_value(value, &constants)));
            }
            _ => {
                let types: Vec<String> = branches
                    .iter()
                    .filter_map(|branch| self.resolve(branch).get("type").map(type_names))
                    .collect();
                let expected = match types.is_empty() {
                    true => "another shape".to_owned(),
                    false => types.join(" or "),
                };
                self.problems.push(Problem::new(
                    path,
                    format!("expected {expected}, found {}", describe(value)),
                ));
            }
        }
    }

    fn object(&mut self, fields: &Map<String, Value>, schema: &'a Value, path: &str) {
        let mut properties: Vec<(&'a str, &'a Value)> = Vec::new();
        let mut required: Vec<&'a str> = Vec::new();
        collect_properties(self, schema, &mut properties, &mut required);
        let extra = schema
            .get("additionalProperties")
            .filter(|extra| extra.is_object());
        if properties.is_empty() && schema.get("properties").is_none() {
            // A map (or a schema that names no properties): each value checked alike.
            if let Some(extra) = extra {
                for (key, field) in fields {
                    self.value(field, extra, &join(path, key));
                }
            }
            return;
        }
        for name in &required {
            if !fields.contains_key(*name) {
                self.problems
                    .push(Problem::new(join(path, name), "is required"));
            }
        }
        let names: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
        for (key, field) in fields {
            let at = join(path, key);
            match properties.iter().find(|(name, _)| name == key) {
                Some((_, property)) => self.value(field, property, &at),
                None => match extra {
                    Some(extra) => self.value(field, extra, &at),
                    None => self
                        .problems
                        .push(Problem::new(at, unknown_field(key, &names))),
                },
            }
        }
    }

    fn array(&mut self, items: &[Value], schema: &'a Value, path: &str) {
        if let Some(least) = schema.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < least
        {
            self.problems.push(Problem::new(
                path,
                format!("must hold at least {least} item(s)"),
            ));
        }
        if let Some(each) = schema.get("items") {
            for (index, value) in items.iter().enumerate() {
                self.value(value, each, &item(path, index));
            }
        }
    }

    fn number(&mut self, number: &serde_json::Number, schema: &Value, path: &str) {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        let value = number.as_f64().unwrap_or_default();
        let largest = match schema.get("format").and_then(Value::as_str) {
            Some("uint8") => Some(f64::from(u8::MAX)),
            Some("uint16") => Some(f64::from(u16::MAX)),
            Some("uint32") => Some(f64::from(u32::MAX)),
            _ => None,
        };
        if let Some(least) = bound("minimum")
            && value < least
        {
            self.problems
                .push(Problem::new(path, format!("must be at least {least}")));
        }
        if let Some(most) = bound("maximum").or(largest)
            && value > most
        {
            self.problems
                .push(Problem::new(path, format!("must be at most {most}")));
        }
    }
}

/// The definition whose malformed items are left out of a list rather than given stand-ins:
/// nothing names a code reference, and its problems are reported by the record that holds it,
/// not by its position, so leaving one out moves no other problem.
const LEFT_OUT_WHEN_MALFORMED: &str = "#/$defs/CodeRef";

/// How deep a stand-in for a missing object is built (the patch's types nest far less).
const STAND_IN_DEPTH: usize = 16;

impl<'a> Check<'a> {
    /// Whether `value` matches `schema` with no problem.
    fn admits(&self, value: &Value, schema: &'a Value) -> bool {
        let mut trial = Check {
            root: self.root,
            problems: Vec::new(),
        };
        trial.value(value, schema, "");
        trial.problems.is_empty()
    }

    /// Makes `value` match `schema`, following the walk of [`Check::value`]: every place that
    /// walk found a problem gets a stand-in ([`Check::stand_in`]) or loses what the schema
    /// does not know, and the rest is left as written.
    pub(super) fn repair(&self, value: &mut Value, schema: &'a Value, depth: usize) {
        let schema = self.resolve(schema);
        if schema == &Value::Bool(true) || schema.as_object().is_some_and(Map::is_empty) {
            return;
        }
        if let Some(branches) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            if branches.iter().any(|branch| self.admits(value, branch)) {
                return;
            }
            let fitting: Vec<&'a Value> = branches
                .iter()
                .filter(|branch| {
                    self.resolve(branch)
                        .get("type")
                        .is_none_or(|t| type_admits(t, value))
                })
                .collect();
            match fitting.as_slice() {
                [branch] => self.repair(value, branch, depth),
                _ => *value = self.stand_in(schema, depth),
            }
            return;
        }
        if schema
            .get("type")
            .is_some_and(|types| !type_admits(types, value))
            || allowed_values(schema).is_some_and(|allowed| !allowed.contains(value))
        {
            *value = self.stand_in(schema, depth);
            return;
        }
        match value {
            Value::Object(fields) => self.repair_object(fields, schema, depth),
            Value::Array(items) => {
                let Some(each) = schema.get("items") else {
                    return;
                };
                if each.get("$ref").and_then(Value::as_str) == Some(LEFT_OUT_WHEN_MALFORMED) {
                    items.retain(|item| self.admits(item, each));
                }
                for item in items {
                    self.repair(item, each, depth + 1);
                }
            }
            Value::Number(number) => {
                let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
                let found = number.as_f64().unwrap_or_default();
                let largest = match schema.get("format").and_then(Value::as_str) {
                    Some("uint8") => Some(f64::from(u8::MAX)),
                    Some("uint16") => Some(f64::from(u16::MAX)),
                    Some("uint32") => Some(f64::from(u32::MAX)),
                    _ => None,
                };
                if let Some(least) = bound("minimum").filter(|least| found < *least) {
                    *value = number_like(least, schema);
                } else if let Some(most) = bound("maximum").or(largest).filter(|most| found > *most)
                {
                    *value = number_like(most, schema);
                }
            }
            _ => {}
        }
    }

    fn repair_object(&self, fields: &mut Map<String, Value>, schema: &'a Value, depth: usize) {
        let mut properties: Vec<(&'a str, &'a Value)> = Vec::new();
        let mut required: Vec<&'a str> = Vec::new();
        collect_properties(self, schema, &mut properties, &mut required);
        let extra = schema
            .get("additionalProperties")
            .filter(|extra| extra.is_object());
        if properties.is_empty() && schema.get("properties").is_none() {
            if let Some(extra) = extra {
                for field in fields.values_mut() {
                    self.repair(field, extra, depth + 1);
                }
            }
            return;
        }
        fields.retain(|key, _| extra.is_some() || properties.iter().any(|(name, _)| name == key));
        for (key, field) in fields.iter_mut() {
            match properties.iter().find(|(name, _)| name == key) {
                Some((_, property)) => self.repair(field, property, depth + 1),
                None => {
                    if let Some(extra) = extra {
                        self.repair(field, extra, depth + 1);
                    }
                }
            }
        }
        for name in required {
            if !fields.contains_key(name) {
                let stand_in = properties
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map_or(Value::Null, |(_, property)| {
                        self.stand_in(property, depth + 1)
                    });
                fields.insert(name.to_owned(), stand_in);
            }
        }
    }

    /// The plainest value `schema` admits: null where it allows null, else the first allowed
    /// value, an empty string, list or `false`, the least number, or an object holding a
    /// stand-in for each required field. The validator then finds any stand-in that matters
    /// empty, at the path decoding already named.
    fn stand_in(&self, schema: &'a Value, depth: usize) -> Value {
        let schema = self.resolve(schema);
        if depth > STAND_IN_DEPTH {
            return Value::Null;
        }
        if let Some(branches) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            let null = Value::from("null");
            return match branches.iter().find(|branch| {
                self.resolve(branch)
                    .get("type")
                    .is_some_and(|t| t == &null || t.as_array().is_some_and(|t| t.contains(&null)))
            }) {
                Some(_) => Value::Null,
                None => branches
                    .first()
                    .map_or(Value::Null, |first| self.stand_in(first, depth + 1)),
            };
        }
        if let Some(first) = allowed_values(schema).and_then(|allowed| allowed.into_iter().next()) {
            return first;
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ if schema.get("properties").is_some() => vec!["object"],
            _ => Vec::new(),
        };
        if types.contains(&"null") {
            return Value::Null;
        }
        match types.first().copied() {
            Some("string") => Value::from(""),
            Some("array") => Value::Array(Vec::new()),
            Some("boolean") => Value::Bool(false),
            Some("integer" | "number") => number_like(
                schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0),
                schema,
            ),
            Some("object") => {
                let mut fields = Map::new();
                self.repair_object(&mut fields, schema, depth);
                Value::Object(fields)
            }
            _ => Value::Null,
        }
    }
}

/// `number` as a JSON value of the schema's type: whole for an integer.
fn number_like(number: f64, schema: &Value) -> Value {
    let integer = match schema.get("type") {
        Some(Value::String(name)) => name == "integer",
        Some(Value::Array(names)) => names.iter().any(|name| name == "integer"),
        _ => false,
    };
    if integer {
        // Bounds of the patch's integers are whole and within i64.
        return Value::from(number as i64);
    }
    serde_json::Number::from_f64(number).map_or(Value::from(0), Value::Number)
}

/// The properties and required names of an object schema, its `allOf` parts included (how a
/// flattened struct may appear).
fn collect_properties<'a>(
    check: &Check<'a>,
    schema: &'a Value,
    properties: &mut Vec<(&'a str, &'a Value)>,
    required: &mut Vec<&'a str>,
) {
    let schema = check.resolve(schema);
    if let Some(own) = schema.get("properties").and_then(Value::as_object) {
        properties.extend(own.iter().map(|(name, property)| (name.as_str(), property)));
    }
    if let Some(names) = schema.get("required").and_then(Value::as_array) {
        required.extend(names.iter().filter_map(Value::as_str));
    }
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        collect_properties(check, part, properties, required);
    }
}

/// The values an `enum` or `const` allows, if the schema limits them.
fn allowed_values(schema: &Value) -> Option<Vec<Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.clone());
    }
    schema.get("const").map(|value| vec![value.clone()])
}

fn type_admits(types: &Value, value: &Value) -> bool {
    let admits = |name: &str| match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => value.is_u64() || value.is_i64(),
        _ => true,
    };
    match types {
        Value::String(name) => admits(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(admits),
        _ => true,
    }
}

fn type_names(types: &Value) -> String {
    let name = |name: &str| match name {
        "null" => "null",
        "boolean" => "a boolean",
        "string" => "a string",
        "array" => "an array",
        "object" => "an object",
        "number" => "a number",
        "integer" => "an integer",
        _ => "a value",
    };
    match types {
        Value::String(one) => name(one).to_owned(),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(name)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_owned(),
    }
}

/// A value as a problem names it: its type, and short text values quoted.
fn describe(value: &Value) -> String {
    match value {
        Value::String(text) if text.chars().count() <= 40 => format!("the string {value}"),
        Value::Number(number) => format!("the number {number}"),
        Value::Bool(flag) => format!("{flag}"),
        other => json_type_name(other).to_owned(),
    }
}

fn unknown_value(value: &Value, allowed: &[Value]) -> String {
    let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
    let closest = value.as_str().and_then(|text| {
        closest(
            text,
            allowed
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
        )
    });
    match closest {
        Some(close) => format!(
            "unknown value {value}; did you mean \"{close}\"? (allowed: {})",
            names.join(", ")
        ),
        None => format!("unknown value {value} (allowed: {})", names.join(", ")),
    }
}
