//! Strict decoding of patch input (docs/writes.md#patch-decoding): a bare patch or an
//! `{"expected_revision", "patch"}` envelope, checked against the patch's JSON Schema before
//! serde reads it, so that every problem is reported at once with its path (every unknown
//! field with the closest known one, every missing field, every wrong type or value), not the
//! first one serde stops at.
//!
//! The schema is the one `epiphany schema patch` prints ([`patch_schema`]): what decoding
//! enforces and what the schema says are the same document. Meaning (ids, references) is the
//! validator's job (`policy::update`).

use std::sync::OnceLock;

use serde_json::Map;
use serde_json::Value;

use crate::state::patch::Envelope;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::problem::item;
use crate::state::problem::join;

/// The JSON Schema of a patch as decoding enforces it: the one derived from the types, with the
/// shape rules the validator adds where the stored state is looser (a checkpoint's
/// `next_action`, an observation's evidence, an objective draft's acceptance criteria).
pub fn patch_schema() -> Value {
    let mut schema = schemars::schema_for!(Patch).to_value();
    tighten(&mut schema, "/$defs");
    schema
}

/// The envelope's schema, built around [`patch_schema`]'s rules.
pub fn envelope_schema() -> Value {
    let mut schema = schemars::schema_for!(Envelope).to_value();
    tighten(&mut schema, "/$defs");
    schema
}

fn tighten(schema: &mut Value, defs: &str) {
    let require = |schema: &mut Value, def: &str, field: &str| {
        if let Some(required) = schema
            .pointer_mut(&format!("{defs}/{def}/required"))
            .and_then(Value::as_array_mut)
            && !required.iter().any(|r| r == field)
        {
            required.push(Value::String(field.to_owned()));
        }
    };
    let at_least_one = |schema: &mut Value, def: &str, field: &str| {
        if let Some(property) = schema
            .pointer_mut(&format!("{defs}/{def}/properties/{field}"))
            .and_then(Value::as_object_mut)
        {
            property.insert("minItems".to_owned(), Value::from(1));
        }
    };
    require(schema, "InvestigationCheckpoint", "next_action");
    require(schema, "Observation", "evidence_ids");
    at_least_one(schema, "Observation", "evidence_ids");
    require(schema, "ObjectiveDraft", "acceptance_criteria");
    at_least_one(schema, "ObjectiveDraft", "acceptance_criteria");
}

/// The patch schema, built once.
fn cached_patch_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(patch_schema)
}

/// Decodes patch input: either a bare patch or an `{"expected_revision", "patch"}` envelope.
/// Every problem is reported, each with its path.
pub fn decode_patch_input(text: &str) -> Result<Envelope, Vec<Problem>> {
    // A JSON object that names a key twice keeps the last value silently; input that says two
    // things is refused instead.
    let duplicates = duplicate_keys(text);
    if !duplicates.is_empty() {
        return Err(duplicates);
    }
    let value: Value =
        serde_json::from_str(text).map_err(|err| vec![Problem::whole(err.to_string())])?;
    let Value::Object(mut object) = value else {
        return Err(vec![Problem::whole(format!(
            "expected a JSON object (a patch or an envelope), found {}",
            json_type_name(&value)
        ))]);
    };
    if !object.contains_key("patch") {
        return decode_patch(Value::Object(object), "").map(|patch| Envelope {
            expected_revision: None,
            patch,
        });
    }
    let mut problems = Vec::new();
    for key in object.keys() {
        if key != "patch" && key != "expected_revision" {
            problems.push(Problem::new(
                key.clone(),
                unknown_field(key, &["patch", "expected_revision"]),
            ));
        }
    }
    let expected_revision = match object.remove("expected_revision") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(revision) => Some(revision),
            None => {
                problems.push(Problem::new(
                    "expected_revision",
                    format!("must be a non-negative integer, found {value}"),
                ));
                None
            }
        },
    };
    let patch = object.remove("patch").unwrap_or(Value::Null);
    match decode_patch(patch, "patch") {
        Ok(patch) if problems.is_empty() => Ok(Envelope {
            expected_revision,
            patch,
        }),
        Ok(_) => Err(problems),
        Err(more) => {
            problems.extend(more);
            Err(problems)
        }
    }
}

/// Checks `value` against the patch schema, then reads it.
fn decode_patch(value: Value, prefix: &str) -> Result<Patch, Vec<Problem>> {
    let schema = cached_patch_schema();
    let mut check = Check {
        root: schema,
        problems: Vec::new(),
    };
    check.value(&value, schema, prefix);
    if !check.problems.is_empty() {
        return Err(check.problems);
    }
    // The schema admitted it, so serde does too; should they ever disagree, serde's word is
    // reported rather than a panic.
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        vec![Problem::new(
            join(prefix, if path == "." { "" } else { &path }),
            err.inner().to_string(),
        )]
    })
}

/// A walk of a JSON value against a JSON Schema (the subset schemars writes: `$ref` into
/// `$defs`, `type`, `enum`, `const`, `anyOf`, `oneOf`, `allOf`, `properties`, `required`,
/// `additionalProperties`, `items`, `minItems`, `minimum`, `maximum` and integer `format`s),
/// collecting every problem. An object accepts only the properties its schema names.
struct Check<'a> {
    root: &'a Value,
    problems: Vec<Problem>,
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

    fn value(&mut self, value: &Value, schema: &'a Value, path: &str) {
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

/// The problem of an unknown field, naming the closest known one or, failing that, all of them.
pub fn unknown_field(key: &str, known: &[&str]) -> String {
    match closest(key, known) {
        Some(close) => format!("unknown field `{key}`; did you mean `{close}`?"),
        None => format!("unknown field `{key}` (known fields: {})", known.join(", ")),
    }
}

/// The known name closest to `typed`: the one it is a prefix or an extension of, or the nearest
/// within a few edits (a third of its length, at least two).
pub fn closest<'a>(typed: &str, known: &[&'a str]) -> Option<&'a str> {
    let lowered = typed.to_lowercase().replace('-', "_");
    let budget = (lowered.chars().count() / 3).max(2);
    known
        .iter()
        .map(|name| {
            let distance = edit_distance(&lowered, name);
            let related = name.starts_with(lowered.as_str()) || lowered.starts_with(*name);
            let score = if related && lowered.len() >= 3 {
                0
            } else {
                distance
            };
            (score, *name)
        })
        .filter(|(score, _)| *score <= budget)
        .min_by_key(|(score, _)| *score)
        .map(|(_, name)| name)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Every key that appears more than once in the same object, as a problem at the path of the
/// object. Text that is not JSON has none (decoding it reports why).
pub fn duplicate_keys(text: &str) -> Vec<Problem> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let _ = serde::de::DeserializeSeed::deserialize(
        DuplicateScan {
            path: String::new(),
            found: &mut found,
        },
        &mut deserializer,
    );
    found
}

/// Walks a JSON document without keeping it, noting repeated keys.
struct DuplicateScan<'a> {
    path: String,
    found: &'a mut Vec<Problem>,
}

impl<'de> serde::de::DeserializeSeed<'de> for DuplicateScan<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DuplicateScan<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let seed = DuplicateScan {
                path: item(&self.path, index),
                found: &mut *self.found,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !seen.insert(key.clone()) {
                self.found
                    .push(Problem::new(path.clone(), format!("duplicate key `{key}`")));
            }
            let seed = DuplicateScan {
                path,
                found: &mut *self.found,
            };
            map.next_value_seed(seed)?;
        }
        Ok(())
    }
}

/// A JSON value's type as an error message names it (`a string`, `an object`, ...).
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        decode_patch_input(text)
            .expect_err("invalid")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn bare_patch_and_envelope_decode_alike() {
        let bare = decode_patch_input(r#"{"objective":"x"}"#).expect("bare");
        assert_eq!(bare.expected_revision, None);
        assert_eq!(bare.patch.objective.as_deref(), Some("x"));
        let wrapped = decode_patch_input(r#"{"expected_revision":4,"patch":{"objective":"x"}}"#)
            .expect("env");
        assert_eq!(wrapped.expected_revision, Some(4));
        assert_eq!(wrapped.patch, bare.patch);
    }

    #[test]
    fn every_problem_of_every_item_is_reported_with_its_path() {
        assert_eq!(
            texts(r#"{"observations":[{"id":"o1"},{"id":"o2"}]}"#),
            [
                "observations[0].summary: is required",
                "observations[0].source_kind: is required",
                "observations[0].status: is required",
                "observations[0].evidence_ids: is required",
                "observations[1].summary: is required",
                "observations[1].source_kind: is required",
                "observations[1].status: is required",
                "observations[1].evidence_ids: is required",
            ]
        );
        assert_eq!(
            texts(
                r#"{"objectiv":"x","subgoals":"nope","observations":[{"id":"o","summary":"s","source_kind":"k","status":"ok","evidence_ids":["e"],"colour":1}]}"#
            ),
            [
                "objectiv: unknown field `objectiv`; did you mean `objective`?",
                "subgoals: expected an array or null, found the string \"nope\"",
                "observations[0].colour: unknown field `colour` (known fields: id, summary, source_kind, status, code_refs, evidence_ids, supersedes)",
            ]
        );
    }

    #[test]
    fn the_checkpoint_refuses_unknown_fields_like_every_object() {
        // It flattens its brief into itself, which serde cannot police; the schema can.
        assert_eq!(
            texts(
                r#"{"patch":{"investigation_checkpoint":{"checkpoint_id":"c","kind":"k","disposition":"resume_ready","focus":"f","next_action":"n","code_ref":[],"sumary":"s","open_question":[]}}}"#
            ),
            [
                "patch.investigation_checkpoint.code_ref: unknown field `code_ref`; did you mean `code_refs`?",
                "patch.investigation_checkpoint.sumary: unknown field `sumary`; did you mean `summary`?",
                "patch.investigation_checkpoint.open_question: unknown field `open_question`; did you mean `open_questions`?",
            ]
        );
    }

    #[test]
    fn values_outside_an_enumeration_name_the_allowed_ones() {
        assert_eq!(
            texts(
                r#"{"mode":{"name":"m","kind":"plans"},"investigation_checkpoint":{"checkpoint_id":"c","kind":"k","disposition":"resume","focus":"f"}}"#
            ),
            [
                "mode.kind: unknown value \"plans\"; did you mean \"plan\"? (allowed: \"plan\", \"default\")",
                "investigation_checkpoint.next_action: is required",
                "investigation_checkpoint.disposition: unknown value \"resume\"; did you mean \"resume_ready\"? (allowed: \"resume_ready\", \"regather_required\")",
            ]
        );
    }

    #[test]
    fn envelopes_and_numbers_are_checked_too() {
        assert_eq!(
            texts(
                r#"{"expected_revison":1,"expected_revision":-1,"patch":{"graph_checkpoint":{"checkpoint_id":"c","graph_revision":-2}}}"#
            ),
            [
                "expected_revison: unknown field `expected_revison`; did you mean `expected_revision`?",
                "expected_revision: must be a non-negative integer, found -1",
                "patch.graph_checkpoint.graph_revision: must be at least 0",
            ]
        );
        assert_eq!(
            texts(r#"{"remove":{"architecture_edges":[{"source_id":"a"}]}}"#),
            [
                "remove.architecture_edges[0].target_id: is required",
                "remove.architecture_edges[0].kind: is required",
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        assert_eq!(
            texts(r#"{"objective":"a","scratch":{"notes":[],"notes":["x"]},"objective":"b"}"#),
            [
                "scratch.notes: duplicate key `notes`",
                "objective: duplicate key `objective`"
            ]
        );
        let nested = duplicate_keys(r#"{"patch":{"observations":[{"id":"a","id":"b"}]}}"#);
        assert_eq!(nested[0].path, "patch.observations[0].id");
        assert!(duplicate_keys(r#"{"a":{"x":1},"b":{"x":1}}"#).is_empty());
        assert!(duplicate_keys("not json").is_empty());
    }

    #[test]
    fn closest_names_allow_typos_prefixes_and_plurals() {
        let known = ["summary", "code_refs", "open_questions", "kind"];
        assert_eq!(closest("sumary", &known), Some("summary"));
        assert_eq!(closest("code_ref", &known), Some("code_refs"));
        assert_eq!(closest("open-question", &known), Some("open_questions"));
        assert_eq!(closest("colour", &known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
            let _ = decode_patch_input(&text);
        }

        #[test]
        fn arbitrary_json_shapes_never_panic(text in "[{}\\[\\]\":,0-9a-z_ .-]{0,300}") {
            let _ = decode_patch_input(&text);
        }
    }
}
