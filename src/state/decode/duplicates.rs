//! Keys repeated in one object of a JSON document: serde_json keeps the last value silently,
//! and input that says two things is refused.

use crate::state::problem::Problem;
use crate::state::problem::item;
use crate::state::problem::join;

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
