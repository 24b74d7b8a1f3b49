//! Reading command input: patch and envelope documents from a file or stdin, with a size
//! ceiling so a runaway pipe is refused with a message instead of exhausting memory; and text
//! of any size streamed in bounded chunks, for commands that digest rather than keep it.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Failure;
use crate::state::decode::ShapeProblems;
use crate::state::decode::decode_patch_input;
use crate::state::patch::Envelope;
use crate::state::problem::Problem;

/// The largest patch or envelope document accepted.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The UTF-8 encoding of U+FEFF, the byte order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much streamed text is held at once.
const TEXT_CHUNK_BYTES: usize = 64 * 1024;

/// Reads a whole document from `path`, or stdin when it is absent or `-`.
pub fn read_document(ctx: &Ctx, path: Option<&Path>) -> Result<(String, String)> {
    let (name, reader): (String, Box<dyn Read + '_>) = match path {
        None => ("stdin".to_owned(), ctx.stdin()),
        Some(path) if path == Path::new("-") => ("stdin".to_owned(), ctx.stdin()),
        Some(path) => {
            let full = ctx.cwd.join(path);
            let file = std::fs::File::open(&full).map_err(|err| {
                Failure::input(format!("cannot open `{}`: {err}", path.display()))
                    .with_hint("pass a patch file, or `-` to read stdin")
            })?;
            (format!("`{}`", path.display()), Box::new(file))
        }
    };
    let mut bytes = Vec::new();
    reader
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("failed to read {name}"))?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(Failure::input(format!(
            "{name} is larger than {} MiB; refusing to read it",
            MAX_DOCUMENT_BYTES / (1024 * 1024)
        ))
        .with_hint("split the patch into smaller updates")
        .into());
    }
    // Some editors and shells (Windows PowerShell's `Out-File`) start UTF-8 files with a
    // byte order mark, which JSON parsers refuse.
    if bytes.starts_with(UTF8_BOM) {
        bytes.drain(..UTF8_BOM.len());
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::input(format!("{name} is not valid UTF-8")))?;
    Ok((name, text))
}

/// A patch document as read: what decoded, and what was wrong with its shape.
#[derive(Debug)]
pub struct PatchInput {
    /// The envelope (a bare patch has no expected revision), with stand-ins where the shape
    /// is wrong.
    pub envelope: Envelope,
    /// What was wrong with the shape, when anything was: then nothing may be written.
    pub malformed: Option<Malformed>,
}

/// A patch document whose shape is wrong. The write path checks what decoded as usual, lists
/// these problems with its own, and refuses the write.
#[derive(Debug, Clone)]
pub struct Malformed {
    /// The document, as errors name it (`stdin`, `` `patch.json` ``).
    pub document: String,
    /// The shape problems, at their paths as written.
    pub shape: ShapeProblems,
}

impl Malformed {
    /// The refusal of a malformed patch: every shape problem, then every problem the later
    /// checks found in what decoded (`in_patch`, paths in the patch) that does not restate one
    /// of them, then `besides` (problems of other input, such as a verifier record).
    pub fn refusal(&self, in_patch: Vec<Problem>, besides: Vec<Problem>) -> anyhow::Error {
        Failure::input(format!("{} is not a valid patch", self.document))
            .with_problems(self.shape.merged(in_patch, besides))
            .with_hint(MALFORMED_HINT)
            .into()
    }
}

const MALFORMED_HINT: &str =
    "fix every problem listed; `epiphany schema patch` has every field and rule";

/// Reads a bare patch or an envelope from `path` or stdin, strictly: text that is not a JSON
/// object is refused here; a document whose shape is wrong comes back with what decoded and
/// its problems, for the write path to validate the rest and refuse.
pub fn read_envelope(ctx: &Ctx, path: Option<&Path>) -> Result<PatchInput> {
    let (name, text) = read_document(ctx, path)?;
    if text.trim().is_empty() {
        return Err(
            Failure::input(format!("{name} is empty; expected a patch or an envelope"))
                .with_hint("pipe `epiphany distill --json ...` in, or pass a patch file")
                .into(),
        );
    }
    if let Some(message) = upstream_error(&text) {
        return Err(Failure::input(format!(
            "{name} holds an error from the command before it, not a patch: {message}"
        ))
        .with_hint("fix the command that drafts the patch; nothing was written")
        .into());
    }
    let decoded = decode_patch_input(&text).map_err(|problems| {
        Failure::input(format!("{name} is not a valid patch"))
            .with_problems(problems)
            .with_hint(MALFORMED_HINT)
    })?;
    Ok(PatchInput {
        envelope: decoded.envelope,
        malformed: (!decoded.shape.is_empty()).then_some(Malformed {
            document: name,
            shape: decoded.shape,
        }),
    })
}

/// The message of an `{"error": {...}}` document, which a failed `--json` command prints in
/// place of its report (so a broken pipeline says what broke upstream).
fn upstream_error(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let object = value.as_object().filter(|object| object.len() == 1)?;
    let message = object.get("error")?.get("message")?.as_str()?;
    Some(message.to_owned())
}

/// Streams text from `reader` to `sink` in chunks of at most 64 KiB, however long the text is.
/// Chunks end anywhere except inside a character. Invalid UTF-8 becomes U+FFFD, exactly as
/// `String::from_utf8_lossy` on the whole text would make it.
pub fn stream_text(mut reader: impl Read, mut sink: impl FnMut(&str)) -> std::io::Result<()> {
    let mut buf = vec![0u8; TEXT_CHUNK_BYTES];
    // Bytes of a character cut by the previous read, moved to the front of `buf`.
    let mut carry = 0;
    loop {
        let read = match reader.read(&mut buf[carry..]) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if read == 0 {
            if carry > 0 {
                sink(&String::from_utf8_lossy(&buf[..carry]));
            }
            return Ok(());
        }
        let filled = carry + read;
        let mut start = 0;
        carry = loop {
            match std::str::from_utf8(&buf[start..filled]) {
                Ok(text) => {
                    sink(text);
                    break 0;
                }
                Err(err) => {
                    let valid_end = start + err.valid_up_to();
                    sink(&String::from_utf8_lossy(&buf[start..valid_end]));
                    match err.error_len() {
                        Some(invalid) => {
                            sink("\u{FFFD}");
                            start = valid_end + invalid;
                        }
                        None => {
                            buf.copy_within(valid_end..filled, 0);
                            break filled - valid_end;
                        }
                    }
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per call, to cut every character.
    struct OneByteAtATime<'a>(&'a [u8]);

    impl Read for OneByteAtATime<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    fn streamed(reader: impl Read) -> String {
        let mut out = String::new();
        stream_text(reader, |chunk| out.push_str(chunk)).expect("stream");
        out
    }

    #[test]
    fn error_documents_are_recognised() {
        assert_eq!(
            upstream_error(r#"{"error": {"kind": "usage", "message": "bad flag"}}"#),
            Some("bad flag".to_owned())
        );
        assert_eq!(upstream_error(r#"{"error": "x"}"#), None);
        assert_eq!(
            upstream_error(r#"{"error": {"message": "m"}, "patch": {}}"#),
            None
        );
        assert_eq!(upstream_error("not json"), None);
    }

    #[test]
    fn streaming_decodes_like_lossy_utf8() {
        let cases: [&[u8]; 5] = [
            b"plain ascii\nlines\n",
            "é ü 日本 🦀".as_bytes(),
            b"bad \xff byte and \xe6\x97 cut char then more",
            b"ends inside a char \xf0\x9f\xa6",
            b"",
        ];
        for bytes in cases {
            let expected = String::from_utf8_lossy(bytes);
            assert_eq!(streamed(OneByteAtATime(bytes)), expected);
            assert_eq!(streamed(bytes), expected);
        }
    }

    #[test]
    fn long_input_arrives_in_bounded_chunks() {
        let text = "line of text\n".repeat(20_000);
        let mut chunks = 0;
        let mut total = 0;
        stream_text(text.as_bytes(), |chunk| {
            assert!(chunk.len() <= TEXT_CHUNK_BYTES);
            chunks += 1;
            total += chunk.len();
        })
        .expect("stream");
        assert_eq!(total, text.len());
        assert!(chunks > 1);
    }
}
