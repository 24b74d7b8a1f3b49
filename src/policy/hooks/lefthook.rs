//! lefthook's machine-local config: epiphany's git hook commands as a marked block of YAML.
//!
//! lefthook writes every hook script itself (on each `lefthook install`, which its npm package
//! runs on every `npm install`), moving any other script to `<hook>.old`, which it never runs:
//! a block chained into the script would be dropped. So with lefthook the commands go in its
//! config instead, in the machine-local file lefthook merges over `lefthook.yml`
//! (`lefthook-local.yml`): the command calls this machine's binary, and the team's shared
//! config is not touched. A top-level key names a hook, and YAML allows it once: a local
//! config that already configures one of our hooks outside the block is refused, with the
//! lines to add by hand.

use crate::policy::hooks::BLOCK_END;
use crate::policy::hooks::BLOCK_START;
use crate::policy::hooks::outside_block;

/// The names lefthook reads its machine-local config from, the one `install` creates first.
pub const LOCAL_CONFIGS: [&str; 4] = [
    "lefthook-local.yml",
    ".lefthook-local.yml",
    "lefthook-local.yaml",
    ".lefthook-local.yaml",
];

/// The names of lefthook's shared config: one of them at the top of the work tree means
/// lefthook manages the repository's hooks.
pub const CONFIGS: [&str; 8] = [
    "lefthook.yml",
    ".lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yaml",
    "lefthook.toml",
    ".lefthook.toml",
    "lefthook.json",
    ".lefthook.json",
];

/// The name of epiphany's command under each hook.
const COMMAND: &str = "epiphany";

/// One of epiphany's commands for lefthook to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LefthookCommand {
    /// The git hook (`post-commit`, `pre-push`).
    pub hook: &'static str,
    /// The shell line to run.
    pub run: String,
    /// Whether the command reads what git hands the hook on stdin (the refs a push sends).
    pub stdin: bool,
}

/// `text` as a YAML single-quoted scalar, which takes every character as written but `'`.
fn yaml_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The marked block for `commands`.
pub fn lefthook_block(commands: &[LefthookCommand]) -> String {
    let mut block = format!(
        "{BLOCK_START}\n# Added by `epiphany hooks install`; `epiphany hooks uninstall` removes it.\n"
    );
    for command in commands {
        block.push_str(&format!("{}:\n  commands:\n    {COMMAND}:\n", command.hook));
        if command.stdin {
            block.push_str("      use_stdin: true\n");
        }
        block.push_str(&format!("      run: {}\n", yaml_quoted(&command.run)));
    }
    block.push_str(BLOCK_END);
    block.push('\n');
    block
}

/// The hooks among `hooks` that `text` configures at its top level.
fn configured<'a>(text: &str, hooks: impl Iterator<Item = &'a str>) -> Vec<String> {
    let keys: Vec<&str> = (text.lines())
        .filter(|line| !line.starts_with([' ', '\t', '#', '-']))
        .filter_map(|line| line.split_once(':').map(|(key, _)| key.trim()))
        .map(|key| key.trim_matches(['"', '\'']))
        .collect();
    hooks
        .filter(|hook| keys.contains(hook))
        .map(str::to_owned)
        .collect()
}

/// The local config with our block holding `commands`, in place of any block of ours it had
/// and after the rest; `Err` with the hooks it already configures outside the block.
pub fn with_lefthook_block(
    existing: Option<&str>,
    commands: &[LefthookCommand],
) -> Result<String, Vec<String>> {
    let rest = existing.map_or_else(String::new, |text| {
        without_lefthook_block(text).unwrap_or_default()
    });
    let taken = configured(&rest, commands.iter().map(|command| command.hook));
    if !taken.is_empty() {
        return Err(taken);
    }
    let mut text = rest;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&lefthook_block(commands));
    Ok(text)
}

/// The local config without our block; `None` when nothing but blank lines would remain.
pub fn without_lefthook_block(existing: &str) -> Option<String> {
    let kept = outside_block(existing);
    kept.lines()
        .any(|line| !line.trim().is_empty())
        .then_some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Vec<LefthookCommand> {
        vec![
            LefthookCommand {
                hook: "post-commit",
                run: "( '/opt/my tools/epiphany' -q index >/dev/null 2>&1 & )".to_owned(),
                stdin: false,
            },
            LefthookCommand {
                hook: "pre-push",
                run: "if [ -x x ]; then x hook pre-push || exit 1; else echo \"it's gone\" >&2; fi"
                    .to_owned(),
                stdin: true,
            },
        ]
    }

    #[test]
    fn the_block_is_yaml_lefthook_reads_and_comes_out_whole() {
        let created = with_lefthook_block(None, &commands()).expect("no conflict");
        assert_eq!(
            created,
            "# >>> epiphany >>>\n# Added by `epiphany hooks install`; `epiphany hooks uninstall` removes it.\npost-commit:\n  commands:\n    epiphany:\n      run: '( ''/opt/my tools/epiphany'' -q index >/dev/null 2>&1 & )'\npre-push:\n  commands:\n    epiphany:\n      use_stdin: true\n      run: 'if [ -x x ]; then x hook pre-push || exit 1; else echo \"it''s gone\" >&2; fi'\n# <<< epiphany <<<\n"
        );
        assert_eq!(without_lefthook_block(&created), None);
        assert_eq!(
            with_lefthook_block(Some(&created), &commands()).as_deref(),
            Ok(created.as_str()),
            "installing twice changes nothing"
        );
    }

    #[test]
    fn the_rest_of_the_local_config_is_kept() {
        let mine = "pre-commit:\n  commands:\n    lint:\n      run: npm run lint";
        let installed = with_lefthook_block(Some(mine), &commands()).expect("no conflict");
        assert!(
            installed.starts_with(&format!("{mine}\n# >>> epiphany")),
            "{installed}"
        );
        assert_eq!(
            without_lefthook_block(&installed).as_deref(),
            Some(format!("{mine}\n").as_str())
        );
    }

    #[test]
    fn a_hook_the_local_config_configures_already_is_refused() {
        for mine in [
            "post-commit:\n  commands:\n    mine:\n      run: make\n",
            "\"pre-push\": {}\n",
        ] {
            let refused = with_lefthook_block(Some(mine), &commands()).expect_err(mine);
            assert_eq!(refused.len(), 1, "{mine}: {refused:?}");
        }
        let nested = "pre-commit:\n  commands:\n    post-commit:\n      run: x\n";
        assert!(with_lefthook_block(Some(nested), &commands()).is_ok());
    }
}
