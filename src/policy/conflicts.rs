//! Settling open conflicts (docs/store.md#conflicts): which conflicts a `conflicts settle`
//! names, which write of each it takes, and the one patch that writes those values again.
//! Written through the write path by a record that has seen every competitor, the patch
//! settles each conflict as any write of its key would.
//!
//! A conflict takes the value its last write in fold order on the side asked for left: with
//! three branches merged, "theirs" is the last of the merged-in writes. A field and the records
//! it holds are not written twice: the field's value settles its records' conflicts too.

use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::state::fields::ChangedField;
use crate::state::fields::Collection;
use crate::state::fold::is_append_key;
use crate::state::model::OpenConflict;
use crate::state::model::Side;
use crate::state::model::SideWrite;
use crate::state::model::State;
use crate::state::patch::Patch;
use crate::state::problem::Problem;

/// Which open conflicts to settle.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// Every one a write can settle.
    All,
    /// Those with these keys.
    Keys(&'a [String]),
}

/// The patch that settles the chosen conflicts, with the keys it writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// The patch.
    pub patch: Patch,
    /// The keys of the conflicts it settles, in the order they were listed.
    pub settled: Vec<String>,
}

/// The patch that settles the conflicts `selection` names among `open` (the head's, with what
/// each side wrote) by taking `take`'s value, against `head`; every problem when one cannot
/// be settled that way (an unknown key, no write on that side, a value no patch can write).
pub fn settle(
    open: &[OpenConflict],
    head: &State,
    selection: Selection<'_>,
    take: Side,
) -> Result<Settlement, Vec<Problem>> {
    let chosen = chosen(open, selection)?;
    // A field written whole settles the conflicts of the records it holds.
    let fields: Vec<&str> = (chosen.iter())
        .filter(|conflict| !conflict.key.contains('/'))
        .map(|conflict| conflict.key.as_str())
        .collect();
    let within_chosen_field = |key: &str| {
        collection_of(key)
            .is_some_and(|(collection, _)| fields.contains(&collection.field().as_str()))
    };
    let mut document = Map::new();
    let mut problems = Vec::new();
    let mut settled = Vec::new();
    for conflict in chosen {
        settled.push(conflict.key.clone());
        if within_chosen_field(&conflict.key) {
            continue;
        }
        let taken = (conflict.writes.iter().rev()).find(|write| write.side == take);
        let Some(write) = taken else {
            problems.push(no_write_on(conflict, take));
            continue;
        };
        if let Err(problem) = write_value(&mut document, head, &conflict.key, write, take) {
            problems.push(problem);
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let patch = serde_json::from_value(Value::Object(document)).map_err(|err| {
        vec![Problem::whole(format!(
            "the values taken do not make a patch ({err}); write the values to keep with `epiphany update`"
        ))]
    })?;
    Ok(Settlement { patch, settled })
}

/// The conflicts `selection` names, in the order they are listed; unknown keys and conflicts
/// no write settles by taking a side are problems.
fn chosen<'o>(
    open: &'o [OpenConflict],
    selection: Selection<'_>,
) -> Result<Vec<&'o OpenConflict>, Vec<Problem>> {
    let keys: Vec<String> = open.iter().map(|conflict| conflict.key.clone()).collect();
    match selection {
        Selection::All => {
            let settleable: Vec<&OpenConflict> = (open.iter())
                .filter(|conflict| !is_append_key(&conflict.key))
                .collect();
            match settleable.is_empty() {
                false => Ok(settleable),
                true => Err(open.iter().map(appended_twice).collect()),
            }
        }
        Selection::Keys(asked) => {
            let mut problems = Vec::new();
            let mut found = Vec::new();
            for (at, key) in asked.iter().enumerate() {
                match open.iter().find(|conflict| conflict.key == *key) {
                    Some(conflict) if is_append_key(key) => problems.push(appended_twice(conflict)),
                    Some(conflict) if !found.contains(&conflict) => found.push(conflict),
                    Some(_) => {}
                    None => problems.push(Problem::new(
                        format!("ID[{at}]"),
                        format!(
                            "`{key}` is no open conflict; the open ones are: {}",
                            keys.join(", ")
                        ),
                    )),
                }
            }
            match problems.is_empty() {
                true => Ok(found),
                false => Err(problems),
            }
        }
    }
}

/// Two branches appended different items with one id: the first stays, and it is no value to
/// take.
fn appended_twice(conflict: &OpenConflict) -> Problem {
    Problem::new(
        conflict.key.clone(),
        "two branches appended different items with this id; the first stays, and the next write of any kind settles it",
    )
}

fn no_write_on(conflict: &OpenConflict, take: Side) -> Problem {
    let other = match take {
        Side::Ours => Side::Theirs,
        Side::Theirs => Side::Ours,
    };
    let why = match take {
        Side::Ours => "every write of it came with a merge into the branch checked out",
        Side::Theirs => {
            "no write of it came with a merge (the branches met by a fast-forward, a rebase, a squash or a cherry-pick)"
        }
    };
    Problem::new(
        conflict.key.clone(),
        format!(
            "has no write of {}: {why}; take `{}` or write the value to keep",
            take.as_str(),
            other.as_str()
        ),
    )
}

/// The collection and record key of a record key (`architecture_nodes/lexer`).
fn collection_of(key: &str) -> Option<(Collection, &str)> {
    let (name, id) = key.split_once('/')?;
    let collection = Collection::ALL.into_iter().find(|c| c.as_str() == name)?;
    Some((collection, id))
}

/// Puts into `document` what writes `write`'s value of `key` again.
fn write_value(
    document: &mut Map<String, Value>,
    head: &State,
    key: &str,
    write: &SideWrite,
    take: Side,
) -> Result<(), Problem> {
    let Some((collection, id)) = collection_of(key) else {
        let known = ChangedField::ALL.iter().any(|field| field.as_str() == key);
        if !known || write.value.is_null() {
            return Err(Problem::new(
                key,
                format!(
                    "{} left it empty, and a patch cannot empty a field; write the value to keep instead",
                    take.as_str()
                ),
            ));
        }
        document.insert(key.to_owned(), write.value.clone());
        return Ok(());
    };
    let (verb, item) = match &write.value {
        Value::Null => ("remove", removal(head, collection, id).ok_or_else(|| {
            Problem::new(
                key,
                format!(
                    "{} removed it and the head holds no such record, so there is nothing to remove; write the record to keep it instead",
                    take.as_str()
                ),
            )
        })?),
        value => ("upsert", value.clone()),
    };
    let by_collection = document
        .entry(verb)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("`upsert` and `remove` are objects");
    let list = by_collection
        .entry(collection.as_str())
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .expect("a collection's records are a list");
    list.push(item);
    Ok(())
}

/// How `remove` names the record of `collection` with `key` that `head` holds: its id, or for
/// an edge without one its ends and kind, for a link its node pair.
fn removal(head: &State, collection: Collection, key: &str) -> Option<Value> {
    let at = (collection.keys_in(head).iter()).position(|held| held == key)?;
    let record = collection.value_at(head, at);
    let field = |name: &str| record.get(name).cloned().unwrap_or(Value::Null);
    Some(match collection {
        Collection::ArchitectureEdges | Collection::DataflowEdges => {
            match record.get("id").and_then(Value::as_str) {
                Some(id) if !id.trim().is_empty() => json!(id),
                _ => {
                    json!({"source_id": field("source_id"), "target_id": field("target_id"), "kind": field("kind")})
                }
            }
        }
        Collection::Links => json!({
            "dataflow_node_id": field("dataflow_node_id"),
            "architecture_node_id": field("architecture_node_id"),
        }),
        _ => json!(key),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(record: &str, side: Side, value: Value) -> SideWrite {
        SideWrite {
            record: record.to_owned(),
            at: "2026-01-01T00:00:00Z".to_owned(),
            side,
            value,
        }
    }

    fn node(id: &str, title: &str) -> Value {
        json!({"id": id, "title": title, "purpose": "p"})
    }

    fn open() -> Vec<OpenConflict> {
        vec![
            OpenConflict {
                key: "architecture_nodes/lexer".to_owned(),
                writes: vec![
                    write("a", Side::Theirs, node("lexer", "b's")),
                    write("b", Side::Ours, node("lexer", "main's")),
                    write("c", Side::Theirs, node("lexer", "c's")),
                ],
            },
            OpenConflict {
                key: "objective".to_owned(),
                writes: vec![
                    write("d", Side::Ours, json!("ours")),
                    write("e", Side::Theirs, json!("theirs")),
                ],
            },
        ]
    }

    #[test]
    fn every_conflict_takes_the_last_write_of_its_side() {
        let theirs =
            settle(&open(), &State::default(), Selection::All, Side::Theirs).expect("settles");
        assert_eq!(theirs.settled, ["architecture_nodes/lexer", "objective"]);
        assert_eq!(theirs.patch.objective.as_deref(), Some("theirs"));
        assert_eq!(theirs.patch.upsert.architecture_nodes[0].title, "c's");
        let ours = settle(&open(), &State::default(), Selection::All, Side::Ours).expect("settles");
        assert_eq!(ours.patch.objective.as_deref(), Some("ours"));
        assert_eq!(ours.patch.upsert.architecture_nodes[0].title, "main's");
    }

    #[test]
    fn only_the_keys_named_are_settled_and_an_unknown_one_is_refused() {
        let keys = ["objective".to_owned()];
        let one = settle(
            &open(),
            &State::default(),
            Selection::Keys(&keys),
            Side::Ours,
        )
        .expect("settles");
        assert_eq!(one.settled, ["objective"]);
        assert!(one.patch.upsert.is_empty());
        let keys = [
            "objective".to_owned(),
            "architecture_nodes/parser".to_owned(),
        ];
        let problems = settle(
            &open(),
            &State::default(),
            Selection::Keys(&keys),
            Side::Ours,
        )
        .expect_err("an unknown key");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "ID[1]");
        assert!(
            problems[0]
                .message
                .contains("architecture_nodes/lexer, objective"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_side_without_a_write_is_refused_naming_the_conflict() {
        let mut open = open();
        open[1].writes.retain(|write| write.side == Side::Ours);
        let problems =
            settle(&open, &State::default(), Selection::All, Side::Theirs).expect_err("no theirs");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "objective");
        assert!(problems[0].message.contains("take `ours`"), "{problems:?}");
    }

    #[test]
    fn a_removal_taken_removes_the_record_the_head_holds() {
        let mut open = open();
        open[0].writes[2].value = Value::Null;
        let mut head = State::default();
        head.graphs.architecture.nodes =
            vec![serde_json::from_value(node("lexer", "b's")).expect("node")];
        let keys = ["architecture_nodes/lexer".to_owned()];
        let removed = settle(&open, &head, Selection::Keys(&keys), Side::Theirs).expect("settles");
        assert_eq!(removed.patch.remove.architecture_nodes, ["lexer"]);
        let problems = settle(
            &open,
            &State::default(),
            Selection::Keys(&keys),
            Side::Theirs,
        )
        .expect_err("nothing to remove");
        assert!(
            problems[0].message.contains("nothing to remove"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_field_taken_whole_settles_the_records_it_holds() {
        let mut open = open();
        open.push(OpenConflict {
            key: "graphs".to_owned(),
            writes: vec![
                write(
                    "f",
                    Side::Ours,
                    json!({"architecture": {"nodes": [node("lexer", "whole")]}}),
                ),
                write("g", Side::Theirs, json!({})),
            ],
        });
        let settled =
            settle(&open, &State::default(), Selection::All, Side::Ours).expect("settles");
        assert!(settled.patch.upsert.is_empty(), "{:?}", settled.patch);
        assert_eq!(
            settled.patch.graphs.expect("graphs").architecture.nodes[0].title,
            "whole"
        );
        assert_eq!(settled.settled.len(), 3);
    }

    #[test]
    fn appended_items_with_one_id_are_left_to_the_next_write() {
        let appended = vec![OpenConflict {
            key: "observations/obs-1".to_owned(),
            writes: vec![
                write("a", Side::Ours, Value::Null),
                write("b", Side::Theirs, Value::Null),
            ],
        }];
        let problems = settle(&appended, &State::default(), Selection::All, Side::Theirs)
            .expect_err("nothing to take");
        assert!(problems[0].message.contains("next write"), "{problems:?}");
    }
}
