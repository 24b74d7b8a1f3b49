//! Strict decoding of patch input (docs/writes.md#patch-decoding): a bare patch or an
//! `{"expected_revision", "patch"}` envelope, checked against the patch's JSON Schema before
//! serde reads it, so that every problem is reported at once with its path (every unknown
//! field with the closest known one, every missing field, every wrong type or value), not the
//! first one serde stops at.
//!
//! A shape problem does not stop the check: where the document breaks the schema, a stand-in
//! takes its place (a missing field gets an empty value of its type, a wrong value the type's
//! empty value or the first allowed one, an unknown field is dropped, a malformed code
//! reference left out), so what is left decodes and the write path validates it as usual.
//! [`ShapeProblems`] keeps what decoding found; the write path lists it with its own problems,
//! less those that only restate a problem at a stand-in, and refuses the write.
//!
//! The schema is the one `epiphany schema patch` prints ([`patch_schema`]): what decoding
//! enforces and what the schema says are the same document. Meaning (ids, references) is the
//! validator's job (`policy::update`).

use std::sync::OnceLock;

use serde_json::Value;

use crate::state::patch::Envelope;
use crate::state::patch::Patch;
use crate::state::problem::Problem;
use crate::state::problem::join;

mod duplicates;
mod schema;

pub use duplicates::duplicate_keys;
use schema::Check;

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

/// What decoding found wrong with the shape of a patch document, each problem at its path as
/// written (`patch.observations[0].summary` in an envelope), in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapeProblems {
    /// Every shape problem: unknown fields, missing required fields, wrong types, values
    /// outside an enumeration or a range, repeated keys.
    pub problems: Vec<Problem>,
    /// Where the patch lies in the document: `patch` in an envelope, empty for a bare patch.
    pub patch_at: &'static str,
}

impl ShapeProblems {
    /// Whether the document's shape is right.
    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// Whether a problem found at `path` in the patch restates one decoding reported: it lies
    /// at or under a path decoding named, where a stand-in stood in for what was written.
    pub fn covers(&self, path: &str) -> bool {
        let written = join(self.patch_at, path);
        self.problems.iter().any(|problem| {
            problem.path.is_empty()
                || written
                    .strip_prefix(problem.path.as_str())
                    .is_some_and(|rest| {
                        rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')
                    })
        })
    }

    /// Decoding's problems, then each problem the later checks found in the decoded patch
    /// (`in_patch`, paths in the patch) that [`ShapeProblems::covers`] does not, placed where
    /// the patch lies as written, then `besides` (problems of other input, such as a
    /// verifier record), each once.
    pub fn merged(&self, in_patch: Vec<Problem>, besides: Vec<Problem>) -> Vec<Problem> {
        let mut merged = self.problems.clone();
        let found = in_patch
            .into_iter()
            .filter(|problem| !self.covers(&problem.path))
            .map(|problem| problem.under(self.patch_at))
            .chain(besides);
        for problem in found {
            if !merged.contains(&problem) {
                merged.push(problem);
            }
        }
        merged
    }
}

/// Patch input as decoded: what could be read (stand-ins where the shape is wrong), and what
/// was wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The envelope (a bare patch has no expected revision).
    pub envelope: Envelope,
    /// The shape problems; when there is any, the patch must not be written.
    pub shape: ShapeProblems,
}

/// Decodes patch input: either a bare patch or an `{"expected_revision", "patch"}` envelope.
/// Every shape problem is reported, each with its path, beside what could be read of the rest
/// (see the module docs). Only input with nothing to validate is an error: text that is not
/// JSON, a document that is not an object, or one the schema admits and serde still refuses.
pub fn decode_patch_input(text: &str) -> Result<Decoded, Vec<Problem>> {
    // A JSON object that names a key twice keeps the last value silently; input that says two
    // things is refused, and the last value validated like the rest.
    let mut problems = duplicate_keys(text);
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            problems.push(Problem::whole(err.to_string()));
            return Err(problems);
        }
    };
    let Value::Object(mut object) = value else {
        problems.push(Problem::whole(format!(
            "expected a JSON object (a patch or an envelope), found {}",
            json_type_name(&value)
        )));
        return Err(problems);
    };
    if !object.contains_key("patch") {
        let patch = decode_patch(Value::Object(object), "", &mut problems)?;
        return Ok(Decoded {
            envelope: Envelope {
                expected_revision: None,
                patch,
            },
            shape: ShapeProblems {
                problems,
                patch_at: "",
            },
        });
    }
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
    let patch = decode_patch(patch, "patch", &mut problems)?;
    Ok(Decoded {
        envelope: Envelope {
            expected_revision,
            patch,
        },
        shape: ShapeProblems {
            problems,
            patch_at: "patch",
        },
    })
}

/// Checks `value` against the patch schema, adding every problem to `problems`, then reads it,
/// with stand-ins where it breaks the schema.
fn decode_patch(
    mut value: Value,
    prefix: &str,
    problems: &mut Vec<Problem>,
) -> Result<Patch, Vec<Problem>> {
    let schema = cached_patch_schema();
    let mut check = Check {
        root: schema,
        problems: Vec::new(),
    };
    check.value(&value, schema, prefix);
    if !check.problems.is_empty() {
        check.repair(&mut value, schema, 0);
        problems.append(&mut check.problems);
    }
    // The schema admitted it (or its stand-ins), so serde does too; should they ever disagree,
    // serde's word is reported rather than a panic, and nothing is left to validate.
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let mut all = std::mem::take(problems);
        all.push(Problem::new(
            join(prefix, if path == "." { "" } else { &path }),
            err.inner().to_string(),
        ));
        all
    })
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
    use serde_json::Map;

    use super::*;

    /// Every problem decoding finds in `text`, whether or not something decoded.
    fn texts(text: &str) -> Vec<String> {
        let problems = match decode_patch_input(text) {
            Ok(decoded) => decoded.shape.problems,
            Err(problems) => problems,
        };
        assert!(!problems.is_empty(), "{text} decoded without a problem");
        problems.iter().map(ToString::to_string).collect()
    }

    /// What decoded from `text`, which has shape problems.
    fn stand_ins(text: &str) -> Patch {
        let decoded = decode_patch_input(text).expect("something decodes");
        assert!(!decoded.shape.is_empty(), "{text} has no shape problem");
        decoded.envelope.patch
    }

    #[test]
    fn bare_patch_and_envelope_decode_alike() {
        let bare = decode_patch_input(r#"{"objective":"x"}"#).expect("bare");
        assert!(bare.shape.is_empty());
        assert_eq!(bare.envelope.expected_revision, None);
        assert_eq!(bare.envelope.patch.objective.as_deref(), Some("x"));
        let wrapped = decode_patch_input(r#"{"expected_revision":4,"patch":{"objective":"x"}}"#)
            .expect("env");
        assert!(wrapped.shape.is_empty());
        assert_eq!(wrapped.envelope.expected_revision, Some(4));
        assert_eq!(wrapped.envelope.patch, bare.envelope.patch);
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
    fn text_that_is_no_json_object_leaves_nothing_to_validate() {
        assert!(decode_patch_input("not json").is_err());
        assert!(decode_patch_input("[1, 2]").is_err());
        let problems = decode_patch_input(r#"{"objective": "a", "objective": "#).expect_err("cut");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(problems[0].path, "objective");
    }

    #[test]
    fn what_breaks_the_shape_gets_a_stand_in_and_the_rest_decodes_as_written() {
        // A missing required field: an empty value of its type; the rest as written.
        let patch = stand_ins(
            r#"{"objective":"o","planning":{"objective_drafts":[{"id":"d","title":"t","summary":"s","status":"draft","source_item_ids":["b9"]}]}}"#,
        );
        assert_eq!(patch.objective.as_deref(), Some("o"));
        let draft = &patch.planning.as_ref().expect("planning").objective_drafts[0];
        assert_eq!(draft.source_item_ids, ["b9"]);
        assert!(draft.acceptance_criteria.is_empty());
        // An unknown field is dropped, a wrong type becomes the type's empty value, a value
        // outside an enumeration the first allowed one, a number out of range its bound.
        let patch = stand_ins(
            r#"{"objectiv":"x","subgoals":"nope","mode":{"name":"m","kind":"plans"},"graph_checkpoint":{"checkpoint_id":"c","graph_revision":-2}}"#,
        );
        assert_eq!(patch.objective, None);
        assert_eq!(patch.subgoals, None);
        assert_eq!(
            serde_json::to_value(&patch.mode).expect("mode")["kind"],
            "plan"
        );
        assert_eq!(
            patch
                .graph_checkpoint
                .as_ref()
                .expect("checkpoint")
                .graph_revision,
            0
        );
        // A malformed code reference is left out; the well-formed one beside it stays.
        let patch = stand_ins(
            r#"{"observations":[{"id":"o","summary":"s","source_kind":"k","status":"ok","evidence_ids":["e"],"code_refs":[{"start_line":3},{"path":"a.rs"}]}]}"#,
        );
        let refs = &patch.observations[0].code_refs;
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].path, "a.rs");
        // A patch that is no object at all stands in as empty.
        let decoded = decode_patch_input(r#"{"expected_revision":2,"patch":5}"#).expect("envelope");
        assert!(decoded.envelope.patch.is_empty());
        assert_eq!(decoded.envelope.expected_revision, Some(2));
        assert_eq!(decoded.shape.problems[0].path, "patch");
    }

    #[test]
    fn later_problems_are_listed_after_decodings_unless_a_stand_in_caused_them() {
        let shape = ShapeProblems {
            problems: vec![
                Problem::new(
                    "patch.planning.objective_drafts[0].acceptance_criteria",
                    "is required",
                ),
                Problem::new("patch.upsert.subgoals[1]", "expected an object, found null"),
            ],
            patch_at: "patch",
        };
        assert!(shape.covers("planning.objective_drafts[0].acceptance_criteria"));
        assert!(shape.covers("upsert.subgoals[1].title"));
        assert!(!shape.covers("upsert.subgoals[10].title"));
        assert!(!shape.covers("planning.objective_drafts[0].acceptance"));
        let merged = shape.merged(
            vec![
                Problem::new(
                    "planning.objective_drafts[0].acceptance_criteria",
                    "must hold one",
                ),
                Problem::new(
                    "planning.objective_drafts[0].source_item_ids[0]",
                    "names b9",
                ),
                Problem::new(
                    "planning.objective_drafts[0].source_item_ids[0]",
                    "names b9",
                ),
            ],
            vec![Problem::new("verifierEvidence.status", "must be accepting")],
        );
        let paths: Vec<&str> = merged.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "patch.planning.objective_drafts[0].acceptance_criteria",
                "patch.upsert.subgoals[1]",
                "patch.planning.objective_drafts[0].source_item_ids[0]",
                "verifierEvidence.status",
            ]
        );
        let whole = ShapeProblems {
            problems: vec![Problem::whole("not an object")],
            patch_at: "",
        };
        assert!(whole.covers("objective"));
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

        /// Whatever a JSON object holds, its stand-ins make it decode: a shape problem never
        /// leaves the rest of a patch unchecked.
        #[test]
        fn every_json_object_decodes_with_stand_ins(
            fields in proptest::collection::vec(
                (proptest::sample::select(crate::state::patch::PATCH_FIELDS), json()),
                0..4,
            ),
            inner in proptest::collection::vec((proptest::sample::select(INNER_NAMES), json()), 0..4),
        ) {
            let mut patch = Map::new();
            for (name, value) in fields {
                patch.insert(name.to_owned(), value);
            }
            // Put the inner fields into a record of each kind, so the walk reaches the leaves.
            let record = Value::Object(inner.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
            patch.insert("observations".to_owned(), Value::Array(vec![record.clone()]));
            patch.insert("upsert".to_owned(), serde_json::json!({
                "architecture_nodes": [record.clone()], "architecture_edges": [record.clone()],
                "backlog": [record.clone()], "objective_drafts": [record.clone()],
            }));
            patch.insert("investigation_checkpoint".to_owned(), record.clone());
            patch.insert("planning".to_owned(), serde_json::json!({
                "captures": [record.clone()], "backlog_items": [record],
            }));
            let text = Value::Object(patch).to_string();
            let decoded = decode_patch_input(&text);
            proptest::prop_assert!(decoded.is_ok(), "{text}: {decoded:?}");
        }
    }

    /// Field names of the records the property places its values in.
    const INNER_NAMES: &[&str] = &[
        "id",
        "title",
        "purpose",
        "summary",
        "status",
        "kind",
        "code_refs",
        "evidence_ids",
        "source_id",
        "target_id",
        "disposition",
        "focus",
        "priority",
        "source",
        "source_refs",
        "acceptance_criteria",
        "scope",
        "lane_plan",
        "start_line",
        "path",
        "colour",
    ];

    /// Any JSON value, a few levels deep.
    fn json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z_]{0,8}".prop_map(Value::from),
            proptest::sample::select(&["resume_ready", "plan", "path", "github_issue"][..])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((proptest::sample::select(INNER_NAMES), inner), 0..4)
                    .prop_map(|fields| Value::Object(
                        fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                    )),
            ]
        })
    }
}
