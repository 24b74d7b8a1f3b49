//! `epiphany diff`: a readable line diff of the state between two revisions.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::Ctx;
use crate::cli::Status;
use crate::error::Failure;
use crate::policy::update::changed_fields_between;
use crate::state::patch::ChangedField;
use crate::ui::Report;

/// Show what changed in the state between two revisions.
///
/// With no revisions, compares the previous revision with the head; with one, compares it with
/// the head; with two, compares the first with the second. The diff is a unified line diff of
/// the pretty-printed JSON state.
///
/// A revision is a number, or a name relative to the head as in git: `HEAD` (also `@`) is the
/// head, `HEAD~N` is N revisions before it, and each trailing `^` is one more before
/// (`HEAD^`, `HEAD^^`, `HEAD~2^`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The older revision: N, HEAD, HEAD~N, HEAD^ (default: the one before the head)
    #[arg(value_name = "REV_A")]
    pub from: Option<String>,
    /// The newer revision: N, HEAD, HEAD~N, HEAD^ (default: the head)
    #[arg(value_name = "REV_B")]
    pub to: Option<String>,
}

/// Resolves a revision name against the head revision: a number, or `HEAD`/`@` followed by
/// any mix of `~N`, `~` and `^` steps back. `Err` says why the name is not one.
pub fn resolve_revision(name: &str, head: u64) -> std::result::Result<u64, String> {
    let name = name.trim();
    if let Ok(number) = name.parse::<u64>() {
        return Ok(number);
    }
    let steps = name
        .strip_prefix("HEAD")
        .or_else(|| name.strip_prefix('@'))
        .ok_or_else(|| {
            format!("`{name}` is not a revision (a number, `HEAD`, `HEAD~N` or `HEAD^`)")
        })?;
    let mut back: u64 = 0;
    let mut rest = steps;
    while let Some(first) = rest.chars().next() {
        rest = &rest[first.len_utf8()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        rest = &rest[digits.len()..];
        let count = match (first, digits.as_str()) {
            ('~' | '^', "") => 1,
            ('~', digits) => digits
                .parse::<u64>()
                .map_err(|_| format!("`{name}`: `~{digits}` is too far back"))?,
            // `^N` picks the N-th parent in git; a revision has only one.
            ('^', "1") => 1,
            ('^', other) => {
                return Err(format!(
                    "`{name}`: a revision has one parent, so `^{other}` names nothing"
                ));
            }
            (other, _) => {
                return Err(format!(
                    "`{name}`: unexpected `{other}` (expected `~N` or `^` after `HEAD`)"
                ));
            }
        };
        back = back.saturating_add(count);
    }
    head.checked_sub(back).ok_or_else(|| {
        format!("`{name}` is {back} revisions before the head, but the head is revision {head}")
    })
}

/// The difference between two revisions.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct DiffReport {
    from: u64,
    to: u64,
    changed_fields: Vec<ChangedField>,
    diff: String,
}

impl Report for DiffReport {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.diff.is_empty() {
            return writeln!(
                out,
                "no differences between revision {} and revision {}",
                self.from, self.to
            );
        }
        out.write_all(self.diff.as_bytes())
    }
}

/// Runs `diff`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { from, to } = args;
    let store = ctx.store()?;
    let head = store.head()?.state.revision;
    let resolve = |name: &str| {
        resolve_revision(name, head).map_err(|message| {
            Failure::usage(message).with_hint("list revisions with `epiphany log`")
        })
    };
    let to = match to {
        Some(name) => resolve(name)?,
        None => head,
    };
    let from = match from {
        Some(name) => resolve(name)?,
        None => to.saturating_sub(1),
    };
    let (before, after) = (store.state_at(from)?, store.state_at(to)?);
    let pretty = |state| serde_json::to_string_pretty(state).map(|text| text + "\n");
    let (old_text, new_text) = (pretty(&before)?, pretty(&after)?);
    let diff = similar::TextDiff::from_lines(&old_text, &new_text);
    let unified = if old_text == new_text {
        String::new()
    } else {
        diff.unified_diff()
            .context_radius(3)
            .header(&format!("revision {from}"), &format!("revision {to}"))
            .to_string()
    };
    let report = DiffReport {
        from,
        to,
        changed_fields: changed_fields_between(&before, &after),
        diff: unified,
    };
    ctx.ui.emit(&report)?;
    Ok(Status::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_names_resolve_like_git() {
        for (name, expected) in [
            ("3", 3),
            ("HEAD", 7),
            ("@", 7),
            ("HEAD~", 6),
            ("HEAD^", 6),
            ("HEAD^^", 5),
            ("HEAD~3", 4),
            ("HEAD~2^", 4),
            ("@~7", 0),
            (" HEAD~1 ", 6),
        ] {
            assert_eq!(resolve_revision(name, 7), Ok(expected), "{name}");
        }
    }

    #[test]
    fn bad_revision_names_say_why() {
        for (name, expected) in [
            ("HEAD~8", "the head is revision 7"),
            ("HEAD^2", "one parent"),
            ("HEAD:x", "unexpected `:`"),
            ("main", "is not a revision"),
            ("-1", "is not a revision"),
            ("HEADé", "unexpected `é`"),
        ] {
            let err = resolve_revision(name, 7).expect_err(name);
            assert!(err.contains(expected), "{name}: {err}");
        }
    }
}
