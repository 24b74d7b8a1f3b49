//! A problem with input or with a state, and where it is: the one shape every check reports in,
//! from decoding a patch to validating the state a write produces (docs/writes.md#problems).
//!
//! It lives in `state`, the lowest layer, so that decoding (`state::patch`) and the rules of
//! `policy` report alike; it knows nothing about how a command prints it.

use std::fmt;

use serde::Serialize;

/// One problem: the path of the item it concerns and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct Problem {
    /// Where: a JSON path into the patch or state (`observations[1].summary`,
    /// `upsert.architecture_nodes[0].code_refs[2]`), a command-line argument (`--ref`), or
    /// empty when the problem concerns the input as a whole.
    pub path: String,
    /// What is wrong, in one sentence.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A problem with the input as a whole.
    pub fn whole(message: impl Into<String>) -> Problem {
        Problem::new("", message)
    }

    /// The same problem, its path placed under `prefix` (`patch` for an envelope's patch).
    pub fn under(mut self, prefix: &str) -> Problem {
        self.path = join(prefix, &self.path);
        self
    }

    /// What identifies the problem apart from list positions: two states that hold the same
    /// broken record at different places have the same problem (a write that inserts a record
    /// before it does not add one).
    pub fn identity(&self) -> (String, String) {
        let mut path = String::with_capacity(self.path.len());
        let mut in_index = false;
        for c in self.path.chars() {
            match c {
                '[' => {
                    in_index = true;
                    path.push(c);
                }
                ']' => {
                    in_index = false;
                    path.push(c);
                }
                c if in_index && c.is_ascii_digit() => {}
                c => path.push(c),
            }
        }
        (path, self.message.clone())
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A problem can stand as an error on its own: a clap value parser reports it after the
/// argument and its value.
impl std::error::Error for Problem {}

/// `parent.child`, or either alone when the other is empty; an index (`[2]`) joins without a
/// dot.
pub fn join(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty()) {
        (true, _) => child.to_owned(),
        (_, true) => parent.to_owned(),
        _ if child.starts_with('[') => format!("{parent}{child}"),
        _ => format!("{parent}.{child}"),
    }
}

/// The path of item `index` of the list at `list`: `observations[1]`.
pub fn item(list: &str, index: usize) -> String {
    format!("{list}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_and_print() {
        assert_eq!(join("", "objective"), "objective");
        assert_eq!(
            join("patch", "observations[1].summary"),
            "patch.observations[1].summary"
        );
        assert_eq!(join("observations", "[1]"), "observations[1]");
        assert_eq!(item("observations", 1), "observations[1]");
        let problem = Problem::new("observations[1].summary", "must not be empty");
        assert_eq!(
            problem.to_string(),
            "observations[1].summary: must not be empty"
        );
        assert_eq!(Problem::whole("not JSON").to_string(), "not JSON");
        assert_eq!(
            problem.clone().under("patch").path,
            "patch.observations[1].summary"
        );
    }

    #[test]
    fn identity_ignores_list_positions_only() {
        let a = Problem::new("graphs.architecture.nodes[3].title", "must not be empty");
        let b = Problem::new("graphs.architecture.nodes[12].title", "must not be empty");
        let c = Problem::new("graphs.dataflow.nodes[3].title", "must not be empty");
        assert_eq!(a.identity(), b.identity());
        assert_ne!(a.identity(), c.identity());
    }
}
