//! How `hooks install` and `hooks uninstall` edit other tools' files: git hook scripts,
//! `.gitattributes`, lefthook's local config (`lefthook`), and the agent hosts' JSON hook
//! settings. Pure text and JSON transformations: installing twice changes nothing the second
//! time, and uninstalling removes exactly what installing added, leaving everything else
//! (other hooks, other settings) alone.
//!
//! For the agent hosts the whole plan is computed here from what the command read ([`HostFile`]):
//! which files to write or delete, the backup that lets `uninstall` restore a settings file byte
//! for byte, and the folder to remove when installing created it. Applying the plan is the
//! command's job.

use std::path::PathBuf;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;

use crate::state::problem::Problem;

pub mod lefthook;

/// First line of the block `hooks install` puts into a git hook script.
pub const BLOCK_START: &str = "# >>> epiphany >>>";
/// Last line of that block.
pub const BLOCK_END: &str = "# <<< epiphany <<<";

/// The hook script with our block in it: right after the shebang, so it runs even when the
/// existing script ends with `exit`. A missing script becomes a new POSIX shell script.
pub fn with_hook_block(existing: Option<&str>, body: &str) -> String {
    let block = format!(
        "{BLOCK_START}\n# Added by `epiphany hooks install`; `epiphany hooks uninstall` removes it.\n{}\n{BLOCK_END}\n",
        body.trim_end()
    );
    let current = existing.map(|text| without_hook_block(text).unwrap_or_default());
    match current.as_deref() {
        None | Some("") => format!("#!/bin/sh\n{block}"),
        Some(text) => match text.split_once('\n') {
            Some((first, rest)) if first.starts_with("#!") => format!("{first}\n{block}{rest}"),
            _ if text.starts_with("#!") => format!("{text}\n{block}"),
            _ => format!("{block}{text}"),
        },
    }
}

/// Shells that run our block (POSIX shell code) as written.
const POSIX_SHELLS: [&str; 10] = [
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "posh", "yash",
];

/// The interpreter an existing hook script's shebang names when it is not a POSIX shell, so
/// our shell block cannot go into it (`python3` for `#!/usr/bin/env python3`). A script without
/// a shebang is run by git with `sh`, and `env`'s options and variable assignments are looked
/// past.
pub fn foreign_interpreter(existing: &str) -> Option<String> {
    let shebang = existing.lines().next()?.strip_prefix("#!")?;
    let mut words = shebang.split_whitespace();
    let program = words.next()?;
    let mut name = program.rsplit('/').next().unwrap_or(program);
    if name == "env" {
        name = words
            .find(|word| !word.starts_with('-') && !word.contains('='))
            .map_or(name, |word| word.rsplit('/').next().unwrap_or(word));
    }
    (!POSIX_SHELLS.contains(&name)).then(|| name.to_owned())
}

/// The hook script without our block; `None` when nothing but a shebang would remain.
pub fn without_hook_block(existing: &str) -> Option<String> {
    let kept = outside_block(existing);
    let meaningful = kept
        .lines()
        .any(|line| !line.trim().is_empty() && !line.starts_with("#!"));
    meaningful.then_some(kept)
}

/// The lines of `existing` outside our marked block.
pub(crate) fn outside_block(existing: &str) -> String {
    let mut kept = String::with_capacity(existing.len());
    let mut inside = false;
    for line in existing.split_inclusive('\n') {
        match line.trim_end() {
            BLOCK_START => inside = true,
            BLOCK_END if inside => inside = false,
            _ if !inside => kept.push_str(line),
            _ => {}
        }
    }
    kept
}

/// `.gitattributes` without `lines`.
pub fn without_lines(existing: &str, lines: &[String]) -> String {
    existing
        .split_inclusive('\n')
        .filter(|line| !lines.iter().any(|ours| line.trim() == ours))
        .collect()
}

/// An agent host that runs epiphany's session hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code.
    Claude,
    /// OpenAI Codex.
    Codex,
}

/// One hook registration: the host's event, its matcher, and the `epiphany hook` subcommand.
#[derive(Debug, Clone, Copy)]
pub struct AgentHook {
    /// The host's event name (`SessionStart`, `PreCompact`).
    pub event: &'static str,
    /// Which sources of the event to match.
    pub matcher: &'static str,
    /// The `epiphany hook` subcommand it runs.
    pub subcommand: &'static str,
}

/// Both hosts fire `SessionStart` with source `startup`, `resume`, `clear` or `compact` (after
/// every compaction), and `PreCompact` with trigger `manual` or `auto`. Codex treats a matcher
/// made of letters, digits, `_` and `|` as exact alternatives, so every source is listed.
const SESSION_HOOKS: [AgentHook; 2] = [
    AgentHook {
        event: "SessionStart",
        matcher: "startup|resume|clear|compact",
        subcommand: "session-start",
    },
    AgentHook {
        event: "PreCompact",
        matcher: "manual|auto",
        subcommand: "pre-compact",
    },
];

impl Host {
    /// The value of `epiphany hook ... --host`.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
        }
    }

    /// The settings file the hooks go into, relative to the repository root. For Claude Code
    /// the machine-local project file: the command holds this machine's path to the binary,
    /// which a teammate's checkout would not have.
    pub fn settings_path(self) -> &'static str {
        match self {
            Host::Claude => ".claude/settings.local.json",
            Host::Codex => ".codex/hooks.json",
        }
    }

    /// Files earlier versions registered hooks in; ours are taken out of them.
    pub fn legacy_paths(self) -> &'static [&'static str] {
        match self {
            Host::Claude => &[".claude/settings.json"],
            Host::Codex => &[],
        }
    }

    /// The hooks registered for this host.
    pub fn hooks(self) -> &'static [AgentHook] {
        &SESSION_HOOKS
    }
}

/// The command line a host runs for `hook`: the binary by its absolute path (hosts run hooks
/// with their own `PATH`, which may not include it), then the subcommand and the host.
pub fn hook_command(exe: &str, hook: &AgentHook, host: Host) -> String {
    format!(
        "{} hook {} --host {}",
        shell_quote(exe),
        hook.subcommand,
        host.name()
    )
}

/// Quotes a word for a POSIX shell command line (also read correctly by zsh and fish).
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Whether a host's hook command is one of ours: its program is an `epiphany` binary (bare, or
/// by any path, quoted or not) and its first argument is `hook`.
pub fn is_our_command(command: &str) -> bool {
    let (program, rest) = first_word(command.trim_start());
    let name = program.rsplit('/').next().unwrap_or_default();
    let rest = rest.trim_start();
    (name == "epiphany" || name == "epiphany.exe") && (rest == "hook" || rest.starts_with("hook "))
}

/// The first shell word of `command` (unquoted) and what follows it.
fn first_word(command: &str) -> (String, &str) {
    let mut word = String::new();
    let mut chars = command.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((index, c)) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => return (word, &command[index..]),
            (None, '\'' | '"') => quote = Some(c),
            (Some(open), c) if c == open => quote = None,
            (None, '\\') => {
                if let Some((_, escaped)) = chars.next() {
                    word.push(escaped);
                }
            }
            (_, c) => word.push(c),
        }
    }
    (word, "")
}

/// Host settings (`{"hooks": {EVENT: [{"matcher", "hooks": [{"type", "command"}]}]}}`) with
/// this host's hooks registered once, replacing any earlier registration of ours.
pub fn with_agent_hooks(settings: Value, host: Host, exe: &str) -> Value {
    let mut settings = without_agent_hooks(settings);
    if !settings.is_object() {
        settings = json!({});
    }
    for hook in host.hooks() {
        let entry = json!({
            "matcher": hook.matcher,
            "hooks": [{"type": "command", "command": hook_command(exe, hook, host), "timeout": 30}]
        });
        let events = settings
            .as_object_mut()
            .map(|root| root.entry("hooks").or_insert_with(|| json!({})));
        if let Some(Value::Object(events)) = events {
            match events.entry(hook.event).or_insert_with(|| json!([])) {
                Value::Array(groups) => groups.push(entry),
                other => *other = json!([entry]),
            }
        }
    }
    settings
}

/// Host settings without any hook command of ours. Groups, events and the `hooks` key that
/// only held ours go with them; anything else, empty or not, stays as it was.
pub fn without_agent_hooks(mut settings: Value) -> Value {
    let Some(Value::Object(events)) = settings.get_mut("hooks") else {
        return settings;
    };
    let mut removed = false;
    let mut emptied = Vec::new();
    for (event, groups) in events.iter_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        let had = groups.len();
        groups.retain_mut(|group| {
            let Some(Value::Array(handlers)) = group.get_mut("hooks") else {
                return true;
            };
            let count = handlers.len();
            handlers.retain(|handler| !is_ours(handler));
            removed |= handlers.len() < count;
            !(handlers.is_empty() && count > 0)
        });
        if groups.is_empty() && had > 0 {
            emptied.push(event.clone());
        }
    }
    for event in emptied {
        events.remove(&event);
    }
    if removed
        && events.is_empty()
        && let Some(root) = settings.as_object_mut()
    {
        root.remove("hooks");
    }
    settings
}

/// `settings` without empty hook lists, groups and events, to compare two files for what they
/// mean to the host.
fn pruned(mut settings: Value) -> Value {
    if let Some(Value::Object(events)) = settings.get_mut("hooks") {
        for groups in events.values_mut() {
            if let Value::Array(groups) = groups {
                groups.retain(|group| {
                    group
                        .get("hooks")
                        .and_then(Value::as_array)
                        .is_none_or(|handlers| !handlers.is_empty())
                });
            }
        }
        events.retain(|_, groups| groups.as_array().is_none_or(|groups| !groups.is_empty()));
        if events.is_empty()
            && let Some(root) = settings.as_object_mut()
        {
            root.remove("hooks");
        }
    }
    settings
}

fn is_ours(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(is_our_command)
}

/// A file to write or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// Its content now (`None`: it does not exist).
    pub before: Option<String>,
    /// Its content after the change (`None`: delete it).
    pub after: Option<String>,
    /// Whether it is an executable script.
    pub executable: bool,
}

impl FileChange {
    /// A change of `path` from `before` to `after`.
    pub fn new(path: PathBuf, before: Option<String>, after: Option<String>) -> FileChange {
        FileChange {
            path,
            before,
            after,
            executable: false,
        }
    }

    /// Marks the file as an executable script.
    pub fn executable(mut self) -> FileChange {
        self.executable = true;
        self
    }

    /// `unchanged`, `create`, `delete` or `update`.
    pub fn action(&self) -> &'static str {
        match (&self.before, &self.after) {
            (before, after) if before == after => "unchanged",
            (None, Some(_)) => "create",
            (Some(_), None) => "delete",
            _ => "update",
        }
    }
}

/// What the command read about one host settings file.
#[derive(Debug, Clone, Default)]
pub struct HostFile {
    /// The settings file.
    pub path: PathBuf,
    /// Its content (`None`: it does not exist).
    pub text: Option<String>,
    /// Where `install` keeps what the file was before it (outside the work tree).
    pub backup_path: PathBuf,
    /// That backup, when there is one.
    pub backup: Option<String>,
    /// The folder that holds the settings file.
    pub dir: PathBuf,
    /// Whether that folder exists.
    pub dir_exists: bool,
    /// How many entries it has.
    pub dir_entries: usize,
}

/// What `install` remembers about a settings file it changed for the first time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Backup {
    /// The file's bytes before (`None`: it did not exist).
    original: Option<String>,
    /// Whether `install` created the folder that holds it.
    created_dir: bool,
}

/// The changes a hooks subcommand makes to agent-host settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPlan {
    /// Files to write or delete, settings and backups.
    pub files: Vec<FileChange>,
    /// Folders to remove (empty ones that `install` created).
    pub remove_dirs: Vec<PathBuf>,
}

/// The settings in `file`, `{}` when it is absent or blank. A file that is not JSON is one
/// problem with the file as a whole, which its message names.
fn parse_settings(file: &HostFile) -> Result<Value, Problem> {
    match file.text.as_deref() {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text).map_err(|err| {
            Problem::whole(format!(
                "`{}` is not valid JSON: {err}",
                file.path.display()
            ))
        }),
        _ => Ok(json!({})),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// Registers `host`'s hooks in `file`, calling the binary at `exe`. The first time the file is
/// changed, a backup of its bytes is planned so that `uninstall` can put them back.
pub fn plan_host_install(file: &HostFile, host: Host, exe: &str) -> Result<HostPlan, Problem> {
    let current = parse_settings(file)?;
    let installed = with_agent_hooks(current.clone(), host, exe);
    let mut plan = HostPlan::default();
    if installed == current {
        plan.files.push(FileChange::new(
            file.path.clone(),
            file.text.clone(),
            file.text.clone(),
        ));
        return Ok(plan);
    }
    plan.files.push(FileChange::new(
        file.path.clone(),
        file.text.clone(),
        Some(pretty(&installed)),
    ));
    let pristine = without_agent_hooks(current.clone()) == current;
    if file.backup.is_none() && pristine {
        let backup = Backup {
            original: file.text.clone(),
            created_dir: !file.dir_exists,
        };
        let text = serde_json::to_string(&backup).unwrap_or_default() + "\n";
        plan.files
            .push(FileChange::new(file.backup_path.clone(), None, Some(text)));
    }
    Ok(plan)
}

/// Takes our hooks out of `file`. When nothing else changed since `install`, the file gets its
/// bytes back exactly (or disappears, with the folder `install` created for it); otherwise the
/// rest of its settings stay, re-serialized.
pub fn plan_host_uninstall(file: &HostFile) -> Result<HostPlan, Problem> {
    let mut plan = HostPlan::default();
    let backup: Option<Backup> = file
        .backup
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok());
    if file.text.is_none() && file.backup.is_none() {
        return Ok(plan);
    }
    let current = parse_settings(file)?;
    let stripped = without_agent_hooks(current.clone());
    let original_value = |backup: &Backup| match backup.original.as_deref() {
        Some(text) if !text.trim().is_empty() => serde_json::from_str::<Value>(text).ok(),
        _ => Some(json!({})),
    };
    let (after, created_dir) = match &backup {
        Some(backup) if original_value(backup).map(pruned) == Some(pruned(stripped.clone())) => {
            (backup.original.clone(), backup.created_dir)
        }
        _ if stripped == current => (file.text.clone(), false),
        _ => ((stripped != json!({})).then(|| pretty(&stripped)), false),
    };
    let deleted = file.text.is_some() && after.is_none();
    plan.files
        .push(FileChange::new(file.path.clone(), file.text.clone(), after));
    if let Some(text) = &file.backup {
        plan.files.push(FileChange::new(
            file.backup_path.clone(),
            Some(text.clone()),
            None,
        ));
    }
    let left = file.dir_entries.saturating_sub(usize::from(deleted));
    if created_dir && deleted && left == 0 {
        plan.remove_dirs.push(file.dir.clone());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_hook_script_is_created_and_removed_whole() {
        let script = with_hook_block(None, "run-me &");
        assert!(
            script.starts_with("#!/bin/sh\n# >>> epiphany >>>\n"),
            "{script}"
        );
        assert!(
            script.contains("run-me &\n# <<< epiphany <<<\n"),
            "{script}"
        );
        assert_eq!(without_hook_block(&script), None);
    }

    #[test]
    fn only_a_hook_in_a_posix_shell_takes_our_block() {
        for shell in [
            "#!/bin/sh\nexit 0\n",
            "#!/bin/bash -e\n",
            "#! /usr/bin/env bash\n",
            "#!/usr/bin/env -S zsh -f\n",
            "#!/usr/bin/env LC_ALL=C dash\n",
            "#!/bin/ksh\r\n",
            "make lint\n",
            "",
        ] {
            assert_eq!(foreign_interpreter(shell), None, "{shell:?}");
        }
        for (script, interpreter) in [
            ("#!/usr/bin/env python3\nprint(1)\n", "python3"),
            ("#!/usr/bin/perl -w\n", "perl"),
            ("#!/usr/bin/env node\n", "node"),
            ("#!/usr/bin/env\n", "env"),
            ("#!/usr/local/bin/fish\n", "fish"),
        ] {
            assert_eq!(
                foreign_interpreter(script).as_deref(),
                Some(interpreter),
                "{script:?}"
            );
        }
    }

    #[test]
    fn an_existing_hook_is_chained_not_replaced() {
        let existing = "#!/bin/bash\nset -e\nmake lint\nexit 0\n";
        let script = with_hook_block(Some(existing), "run-me &");
        assert!(
            script.starts_with("#!/bin/bash\n# >>> epiphany >>>"),
            "{script}"
        );
        assert!(
            script.ends_with("# <<< epiphany <<<\nset -e\nmake lint\nexit 0\n"),
            "{script}"
        );
        assert_eq!(
            with_hook_block(Some(&script), "run-me &"),
            script,
            "idempotent"
        );
        assert_eq!(without_hook_block(&script).as_deref(), Some(existing));
    }

    #[test]
    fn gitattributes_lines_are_removed_exactly() {
        let ours = vec!["a merge=x".to_owned()];
        let text = "*.png binary\n  a merge=x\nb merge=x\n";
        assert_eq!(without_lines(text, &ours), "*.png binary\nb merge=x\n");
    }

    const EXE: &str = "/opt/epi phany/bin/epiphany";

    #[test]
    fn our_commands_are_recognised_by_program_and_subcommand() {
        for ours in [
            "epiphany hook session-start",
            "'/opt/epi phany/bin/epiphany' hook session-start --host claude",
            "/usr/local/bin/epiphany hook pre-compact --host codex",
            r"/opt/epi\ phany/bin/epiphany hook",
        ] {
            assert!(is_our_command(ours), "{ours}");
        }
        for foreign in [
            "notify",
            "epiphany-notify hook x",
            "epiphany show",
            "bash -c 'epiphany hook session-start'",
        ] {
            assert!(!is_our_command(foreign), "{foreign}");
        }
        let command = hook_command(EXE, &Host::Codex.hooks()[0], Host::Codex);
        assert_eq!(
            command,
            "'/opt/epi phany/bin/epiphany' hook session-start --host codex"
        );
        assert!(is_our_command(&command));
    }

    #[test]
    fn agent_hooks_are_registered_once_beside_foreign_hooks() {
        let foreign = json!({"model": "x", "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "other"}]}]}});
        let installed = with_agent_hooks(foreign.clone(), Host::Claude, EXE);
        assert_eq!(
            installed["hooks"]["SessionStart"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(
            installed["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "'/opt/epi phany/bin/epiphany' hook pre-compact --host claude"
        );
        assert_eq!(
            with_agent_hooks(installed.clone(), Host::Claude, EXE),
            installed
        );
        // A reinstall from elsewhere replaces the old path instead of adding a second hook.
        let moved = with_agent_hooks(installed.clone(), Host::Claude, "/new/epiphany");
        assert_eq!(
            moved["hooks"]["SessionStart"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(without_agent_hooks(installed), foreign);
        let old_style = json!({"hooks": {"SessionStart": [{"matcher": "startup|resume|clear",
            "hooks": [{"type": "command", "command": "epiphany hook session-start"}]}]}});
        assert_eq!(without_agent_hooks(old_style), json!({}));
    }

    fn host_file(text: Option<&str>, dir_entries: usize) -> HostFile {
        HostFile {
            path: PathBuf::from("/r/.codex/hooks.json"),
            text: text.map(str::to_owned),
            backup_path: PathBuf::from("/r/.git/epiphany/codex-hooks.json"),
            backup: None,
            dir: PathBuf::from("/r/.codex"),
            dir_exists: dir_entries > 0 || text.is_some(),
            dir_entries,
        }
    }

    /// The file as it is once `plan` is applied to `file`.
    fn applied(file: &HostFile, plan: &HostPlan) -> HostFile {
        let mut next = file.clone();
        for change in &plan.files {
            if change.path == file.path {
                next.text = change.after.clone();
                next.dir_exists = true;
                next.dir_entries =
                    file.dir_entries + usize::from(file.text.is_none() && change.after.is_some());
            } else if change.path == file.backup_path {
                next.backup = change.after.clone();
            }
        }
        next
    }

    #[test]
    fn uninstall_gives_a_file_its_bytes_back() {
        let original = "{\"model\":\"x\",   \"hooks\": {}}";
        let file = host_file(Some(original), 1);
        let install = plan_host_install(&file, Host::Codex, EXE).expect("plan");
        assert_eq!(
            install.files.len(),
            2,
            "the settings and a backup: {install:?}"
        );
        let installed = applied(&file, &install);
        let again = plan_host_install(&installed, Host::Codex, EXE).expect("plan");
        assert!(
            again.files.iter().all(|f| f.action() == "unchanged"),
            "{again:?}"
        );
        let uninstall = plan_host_uninstall(&installed).expect("plan");
        let restored = applied(&installed, &uninstall);
        assert_eq!(restored.text.as_deref(), Some(original));
        assert_eq!(restored.backup, None);
        assert!(uninstall.remove_dirs.is_empty());
    }

    #[test]
    fn uninstall_removes_what_install_created() {
        let file = host_file(None, 0);
        let installed = applied(
            &file,
            &plan_host_install(&file, Host::Codex, EXE).expect("plan"),
        );
        assert!(installed.text.is_some());
        let uninstall = plan_host_uninstall(&installed).expect("plan");
        assert_eq!(applied(&installed, &uninstall).text, None);
        assert_eq!(uninstall.remove_dirs, [PathBuf::from("/r/.codex")]);
        // A folder that holds something else stays.
        let mut crowded = installed.clone();
        crowded.dir_entries += 1;
        assert!(
            plan_host_uninstall(&crowded)
                .expect("plan")
                .remove_dirs
                .is_empty()
        );
    }

    #[test]
    fn settings_edited_since_install_keep_the_edit() {
        let file = host_file(Some("{\"model\": \"x\"}"), 1);
        let mut installed = applied(
            &file,
            &plan_host_install(&file, Host::Codex, EXE).expect("plan"),
        );
        let mut edited: Value =
            serde_json::from_str(installed.text.as_deref().expect("text")).expect("json");
        edited["model"] = json!("y");
        installed.text = Some(edited.to_string());
        let uninstall = plan_host_uninstall(&installed).expect("plan");
        let after = applied(&installed, &uninstall);
        let value: Value =
            serde_json::from_str(after.text.as_deref().expect("kept")).expect("json");
        assert_eq!(value, json!({"model": "y"}));
        assert_eq!(after.backup, None);
    }

    #[test]
    fn a_file_without_our_hooks_is_left_alone() {
        let file = host_file(Some("{ \"hooks\": {\"Stop\": []} }"), 1);
        let plan = plan_host_uninstall(&file).expect("plan");
        assert!(
            plan.files.iter().all(|f| f.action() == "unchanged"),
            "{plan:?}"
        );
        let broken = host_file(Some("{not json"), 1);
        let problem = plan_host_install(&broken, Host::Claude, EXE).expect_err("not JSON");
        assert!(
            problem.path.is_empty() && problem.message.contains("` is not valid JSON: "),
            "{problem}"
        );
    }
}
