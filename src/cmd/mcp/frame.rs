//! The stdio transport's framing: one JSON-RPC message per line, at most [`MAX_LINE_BYTES`] of
//! it kept. A longer line is read past, keeping only its two ends, from which the request's
//! `id` is read when it can be, so that the caller still gets an answer to its request.
//!
//! This module owns reading lines and reading an `id` from the ends of one too long to parse;
//! what the messages mean is the protocol's.

use std::io::BufRead;

use serde::Deserializer as _;
use serde::de::IgnoredAny;
use serde::de::MapAccess;
use serde::de::Visitor;
use serde_json::Value;

/// The longest message (one line) the server reads: what stdin takes for a patch.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much of each end of a line too long to read is kept to find its `id`: clients write it
/// near the start (`{"jsonrpc":"2.0","id":…`) or last, after the parameters.
const EDGE_BYTES: usize = 64 * 1024;

/// A line as it was read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// All of it, its end of line included.
    Whole(Vec<u8>),
    /// It was longer than the limit and was read past; only its two ends are kept.
    TooLong(Edges),
}

/// The first and last bytes of a line too long to keep (at most [`EDGE_BYTES`] each, or the
/// limit when that is smaller).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Edges {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Edges {
    /// The request's `id`, when one end of the line shows it as a member of the top-level
    /// object: before any value cut off in the head, or in a run of whole members that ends
    /// the line in the tail.
    pub fn id(&self) -> Option<Value> {
        id_in_head(&self.head).or_else(|| id_in_tail(&self.tail))
    }

    /// Keeps the last `edge` bytes of what was read so far, with `more` appended.
    fn push_tail(&mut self, more: &[u8], edge: usize) {
        self.tail.extend_from_slice(more);
        // Cut only when twice the edge is reached, so that the cutting costs no more than
        // the copying.
        if self.tail.len() > 2 * edge {
            self.tail.drain(..self.tail.len() - edge);
        }
    }
}

/// Reads the next line of `input`, keeping at most `limit` bytes of it: a longer line is
/// consumed to its end, only its ends kept. `None` at the end of the input.
pub fn read_line(input: &mut impl BufRead, limit: usize) -> std::io::Result<Option<Line>> {
    let edge = EDGE_BYTES.min(limit);
    let mut line = Vec::new();
    let mut too_long: Option<Edges> = None;
    let mut read_any = false;
    loop {
        let buffer = match input.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buffer.is_empty() {
            break;
        }
        read_any = true;
        let (taken, ended) = match memchr::memchr(b'\n', buffer) {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        let piece = &buffer[..taken];
        match &mut too_long {
            Some(edges) => edges.push_tail(piece, edge),
            None if line.len() + taken > limit => {
                line.extend_from_slice(&piece[..piece.len().min(edge)]);
                let mut edges = Edges {
                    head: line[..line.len().min(edge)].to_vec(),
                    tail: Vec::new(),
                };
                edges.push_tail(&line[line.len().saturating_sub(edge)..], edge);
                edges.push_tail(&piece[piece.len().min(edge)..], edge);
                line = Vec::new();
                too_long = Some(edges);
            }
            None => line.extend_from_slice(piece),
        }
        input.consume(taken);
        if ended {
            break;
        }
    }
    Ok(read_any.then(|| match too_long {
        Some(mut edges) => {
            let cut = edges.tail.len().saturating_sub(edge);
            edges.tail.drain(..cut);
            Line::TooLong(edges)
        }
        None => Line::Whole(line),
    }))
}

/// Reads the top-level object's members in order until the `id`: serde_json does the reading,
/// so that a member cut off by the end of the head simply ends the search.
fn id_in_head(head: &[u8]) -> Option<Value> {
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_slice(head);
    // The visitor stops with an error once it holds the id, as the rest cannot be read.
    let _ = deserializer.deserialize_map(IdVisitor { found: &mut found });
    found
}

/// Visits a map's members until `id`, which it keeps.
struct IdVisitor<'a> {
    found: &'a mut Option<Value>,
}

impl<'de> Visitor<'de> for IdVisitor<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                *self.found = Some(map.next_value::<Value>()?);
                return Err(serde::de::Error::custom("the id is all that is read"));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// Finds `"id"` as the key of one of the whole members that end the line: the text from the
/// key to the end of the line, opened with a brace, must then read as an object.
fn id_in_tail(tail: &[u8]) -> Option<Value> {
    let finder = memchr::memmem::Finder::new(b"\"id\"");
    let starts: Vec<usize> = finder.find_iter(tail).collect();
    starts.into_iter().rev().find_map(|start| {
        let before = tail[..start].trim_ascii_end();
        if !matches!(before.last(), Some(b',' | b'{')) {
            return None;
        }
        let mut members = b"{".to_vec();
        members.extend_from_slice(&tail[start..]);
        let object: serde_json::Map<String, Value> = serde_json::from_slice(&members).ok()?;
        object.get("id").cloned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, limit: usize) -> Vec<Line> {
        // A small buffer: lines arrive in many pieces.
        let mut input = std::io::BufReader::with_capacity(7, text.as_bytes());
        std::iter::from_fn(|| read_line(&mut input, limit).expect("read")).collect()
    }

    #[test]
    fn long_lines_are_read_past_keeping_only_their_ends() {
        let long = format!("ab{}yz", "x".repeat(100));
        let read = lines(&format!("short\n{long}\nlast"), 50);
        let [Line::Whole(first), Line::TooLong(edges), Line::Whole(last)] = &read[..] else {
            panic!("three lines: {read:?}");
        };
        assert_eq!((&first[..], &last[..]), (&b"short\n"[..], &b"last"[..]));
        assert_eq!(edges.head, long.as_bytes()[..50]);
        assert_eq!(edges.tail, format!("{long}\n").as_bytes()[long.len() + 1 - 50..]);
    }

    #[test]
    fn the_id_is_read_from_either_end_of_a_line_too_long() {
        let big = "x".repeat(1000);
        let id_of = |line: String| match &lines(&line, 200)[..] {
            [Line::TooLong(edges)] => edges.id(),
            other => panic!("one long line: {other:?}"),
        };
        // The Python SDK writes the id first, the TypeScript SDK last.
        let first = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"{big}"}}"#);
        assert_eq!(id_of(first), Some(Value::from(7)));
        let last = format!(
            "{{\"method\":\"tools/call\",\"params\":{{\"a\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"r-9\"}}\r\n"
        );
        assert_eq!(id_of(last), Some(Value::from("r-9")));
        // An `id` inside the parameters is not the request's.
        let nested = format!(r#"{{"method":"m","params":{{"a":"{big}","id":3}}}}"#);
        assert_eq!(id_of(nested), None);
        let inside_text = format!(r#"{{"method":"m","params":"{big}, \"id\": 3 }}"}}"#);
        assert_eq!(id_of(inside_text), None);
        assert_eq!(id_of(big.clone()), None);
    }
}
