//! `epiphany hooks uninstall`.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::cmd::hooks::ConfigChange;
use crate::cmd::hooks::INDEX_HOOKS;
use crate::cmd::hooks::LEGACY_CONFIG_KEYS;
use crate::cmd::hooks::PRE_PUSH_HOOK;
use crate::cmd::hooks::Plan;
use crate::cmd::hooks::Targets;
use crate::cmd::hooks::backups_dir;
use crate::cmd::hooks::carry_out;
use crate::cmd::hooks::git_hooks_dir;
use crate::cmd::hooks::hook_change;
use crate::cmd::hooks::lefthook;
use crate::cmd::hooks::legacy_attribute_lines;
use crate::cmd::hooks::read_host_file;
use crate::cmd::hooks::read_optional;
use crate::cmd::hooks::repository_root;
use crate::cmd::hooks::settings_error;
use crate::cmd::hooks::textconv_entry;
use crate::policy::hooks::FileChange;
use crate::policy::hooks::Host;
use crate::policy::hooks::plan_host_uninstall;
use crate::policy::hooks::without_hook_block;
use crate::policy::hooks::without_lines;

/// Remove what `hooks install` added, and nothing else.
///
/// Takes epiphany's marked block out of git hook scripts (deleting a script only when nothing
/// else is left in it) and out of lefthook's local config, its lines out of `.gitattributes`,
/// its keys out of the local git config, and its commands out of the Claude Code and Codex
/// hook settings. A settings file nobody
/// else changed since `install` gets its exact bytes back, and a folder `install` created for
/// it is removed. With no target named, all of them.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which integrations to remove
    #[command(flatten)]
    pub targets: Targets,
}

/// Runs `hooks uninstall`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Status> {
    let Args { targets } = args;
    let root = repository_root(ctx)?;
    let all = !(targets.git || targets.claude || targets.codex);
    let mut plan = Plan::default();
    if targets.git || all {
        let hooks = git_hooks_dir(&root, targets.global)?;
        for name in INDEX_HOOKS.into_iter().chain([PRE_PUSH_HOOK]) {
            // The block is in the hook, or in the `.legacy` script the pre-commit framework
            // moved it to (or `install` put it in), or in the `.old` script lefthook moved it
            // to.
            let scripts = ["", ".legacy", ".old"].map(|ext| hooks.join(format!("{name}{ext}")));
            for path in scripts {
                if let Some(before) = read_optional(&root, &path)? {
                    let after = without_hook_block(&before);
                    plan.files.push(hook_change(path, Some(before), after));
                }
            }
        }
        lefthook::plan_uninstall(&root, &mut plan)?;
        let attributes = root.join(".gitattributes");
        if let Some(before) = read_optional(&root, &attributes)? {
            let after = without_lines(&before, &legacy_attribute_lines());
            let after = (!after.trim().is_empty()).then_some(after);
            plan.files
                .push(FileChange::new(attributes, Some(before), after));
        }
        for key in LEGACY_CONFIG_KEYS.into_iter().chain([textconv_entry("").0]) {
            plan.config.push(ConfigChange::plan(&root, key, None)?);
        }
    }
    let hosts = if all {
        vec![Host::Claude, Host::Codex]
    } else {
        targets.hosts()
    };
    let backups = backups_dir(&root)?;
    for host in hosts {
        for path in std::iter::once(host.settings_path()).chain(host.legacy_paths().iter().copied())
        {
            let file = read_host_file(&root, &backups, path)?;
            plan.add(plan_host_uninstall(&file).map_err(settings_error)?);
        }
    }
    // The folder for the backups goes too once the last backup in it does.
    let backups_left = std::fs::read_dir(&backups).map_or(0, Iterator::count);
    let backups_deleted = plan
        .files
        .iter()
        .filter(|f| f.path.starts_with(&backups) && f.after.is_none())
        .count();
    if backups_left > 0 && backups_left == backups_deleted {
        plan.remove_dirs.push(backups);
    }
    carry_out(ctx, &root, plan, targets.dry_run)
}
