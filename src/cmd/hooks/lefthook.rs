//! With lefthook managing the git hooks, epiphany's commands go in lefthook's machine-local
//! config (see `policy::hooks::lefthook` for why and how): found, read and planned here.

use std::path::Path;
use std::path::PathBuf;

use anyhow::Result;

use crate::cmd::hooks::GitHooks;
use crate::cmd::hooks::Plan;
use crate::cmd::hooks::hook_change;
use crate::cmd::hooks::read_optional;
use crate::cmd::hooks::shown;
use crate::ctx::Ctx;
use crate::error::Failure;
use crate::policy::hooks::FileChange;
use crate::policy::hooks::lefthook::CONFIGS;
use crate::policy::hooks::lefthook::LOCAL_CONFIGS;
use crate::policy::hooks::lefthook::LefthookCommand;
use crate::policy::hooks::lefthook::lefthook_block;
use crate::policy::hooks::lefthook::with_lefthook_block;
use crate::policy::hooks::lefthook::without_lefthook_block;
use crate::policy::hooks::without_hook_block;
use crate::state::git;

/// lefthook's shared config at the top of the work tree, when lefthook manages the hooks.
pub fn shared_config(root: &Path) -> Option<PathBuf> {
    CONFIGS
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
}

/// The local config epiphany's block goes in: the one lefthook reads, or a new
/// `lefthook-local.yml`.
fn local_config(root: &Path) -> PathBuf {
    LOCAL_CONFIGS
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| root.join(LOCAL_CONFIGS[0]))
}

/// Plans `lines` (hook, command, shell body) as lefthook commands in its local config, and
/// takes the block of an earlier install out of the hook scripts, where lefthook's
/// `install` would drop it (it moves a script it did not write to `<hook>.old`, never run).
pub fn plan(
    ctx: &Ctx,
    root: &Path,
    hooks: &Path,
    config: &Path,
    lines: &[(&'static str, String, String)],
    plan: &mut Plan,
) -> Result<GitHooks> {
    let commands: Vec<LefthookCommand> = (lines.iter())
        .map(|(hook, _, body)| LefthookCommand {
            hook,
            run: body.clone(),
            stdin: *hook == super::PRE_PUSH_HOOK,
        })
        .collect();
    let path = local_config(root);
    let before = read_optional(root, &path)?;
    let after = with_lefthook_block(before.as_deref(), &commands).map_err(|taken| {
        Failure::input(format!(
            "`{}` configures {} already; epiphany's commands cannot go in a second `{}:` key",
            shown(root, &path),
            taken.join(", "),
            taken[0]
        ))
        .with_hint(format!(
            "add epiphany's commands under those keys yourself, then rerun without --git; nothing was changed:\n{}",
            lefthook_block(&commands)
        ))
    })?;
    plan.files.push(FileChange::new(path.clone(), before, Some(after)));
    for (hook, _, _) in lines {
        for script in [hooks.join(hook), hooks.join(format!("{hook}.old"))] {
            if let Some(text) = read_optional(root, &script)?
                && without_hook_block(&text).as_deref() != Some(text.as_str())
            {
                plan.files
                    .push(hook_change(script, Some(text.clone()), without_hook_block(&text)));
            }
        }
    }
    if !git::is_ignored(root, &path) {
        ctx.ui.hint(&format!(
            "`{}` holds this machine's path to epiphany: keep it out of git (add it to `.gitignore`)",
            shown(root, &path)
        ));
    }
    let unrun: Vec<&str> = (lines.iter())
        .map(|(hook, _, _)| *hook)
        .filter(|hook| {
            let script = read_optional(root, &hooks.join(hook)).ok().flatten();
            !script.is_some_and(|text| text.contains("lefthook"))
        })
        .collect();
    if !unrun.is_empty() {
        ctx.ui.hint(&format!(
            "run `lefthook install` (its npm package runs it on `npm install`) so that git calls lefthook for {}",
            unrun.join(", ")
        ));
    }
    Ok(GitHooks {
        manager: "lefthook",
        found: shown(root, config),
        files: vec![shown(root, &path)],
    })
}

/// Plans taking epiphany's block out of every local config lefthook reads.
pub fn plan_uninstall(root: &Path, plan: &mut Plan) -> Result<()> {
    for name in LOCAL_CONFIGS {
        let path = root.join(name);
        if let Some(before) = read_optional(root, &path)? {
            let after = without_lefthook_block(&before);
            plan.files.push(FileChange::new(path, Some(before), after));
        }
    }
    Ok(())
}
