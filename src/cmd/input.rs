//! Reading command input: patch and envelope documents from a file or stdin, with a size
//! ceiling so a runaway pipe is refused with a message instead of exhausting memory.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use anyhow::Result;

use crate::cli::Ctx;
use crate::error::Failure;
use crate::state::patch::Envelope;
use crate::state::patch::decode_patch_input;

/// The largest patch or envelope document accepted.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a whole document from `path`, or stdin when it is absent or `-`.
pub fn read_document(ctx: &Ctx, path: Option<&Path>) -> Result<(String, String)> {
    let (name, reader): (String, Box<dyn Read>) = match path {
        None => ("stdin".to_owned(), Box::new(std::io::stdin().lock())),
        Some(path) if path == Path::new("-") => {
            ("stdin".to_owned(), Box::new(std::io::stdin().lock()))
        }
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
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::input(format!("{name} is not valid UTF-8")))?;
    Ok((name, text))
}

/// Reads a bare patch or an envelope from `path` or stdin, strictly.
pub fn read_envelope(ctx: &Ctx, path: Option<&Path>) -> Result<Envelope> {
    let (name, text) = read_document(ctx, path)?;
    if text.trim().is_empty() {
        return Err(
            Failure::input(format!("{name} is empty; expected a patch or an envelope"))
                .with_hint("pipe `epiphany distill --json ...` in, or pass a patch file")
                .into(),
        );
    }
    decode_patch_input(&text).map_err(|problems| {
        Failure::input(format!("{name} is not a valid patch"))
            .with_problems(problems)
            .with_hint("patch fields are snake_case; see `epiphany update --help`")
            .into()
    })
}
