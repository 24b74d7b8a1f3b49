//! The JSON shapes of the policy's reports: what `--json` prints, `mcp` returns and `schema`
//! describes for `scene`, `freshness`, `reorient`, `pressure`, `context`, `graph` and
//! `planning`.
//!
//! Each type here is the wire twin of a report the policy computes, with the field names,
//! documentation and serde attributes scripts rely on, and a `moved!` conversion that moves
//! the policy's value into it. The policy's reports carry no serde: they can change for their
//! own reasons, and a change to what scripts read is an edit here, which the contract snapshot
//! (`test_schema::the_json_contract_changes_only_on_purpose`) shows. A conversion names every
//! field of its source, so a field added to a policy report does not compile until it is
//! placed here or dropped on purpose.
//!
//! The small closed vocabularies the reports use (the status enums, `RefOwner`) keep their
//! own serde in the policy, as the state's records do: their names are their meaning. The
//! commands' own reports (`map`, `prompt`, `index`, the writes, ...) are defined with their
//! commands. No logic lives here but the move; rendering for a person stays with each command.

/// `impl From<$source> for $target`: destructures the source, naming every field, and builds
/// the twin field by field: moved as it is, or `: into` (a twin), `: map` (an optional twin),
/// `: each` (a list of twins).
macro_rules! moved {
    ($source:path => $target:ident { $($field:ident $(: $how:ident)?),* $(,)? }) => {
        impl From<$source> for $target {
            fn from(value: $source) -> Self {
                let $source { $($field),* } = value;
                Self { $($field: moved!(@$($how)? $field)),* }
            }
        }
    };
    (@ $field:ident) => { $field };
    (@into $field:ident) => { $field.into() };
    (@map $field:ident) => { $field.map(Into::into) };
    (@each $field:ident) => { $field.into_iter().map(Into::into).collect() };
}

pub mod context;
pub mod freshness;
pub mod graph;
pub mod planning;
pub mod pressure;
pub mod reorient;
pub mod scene;
