//! How `hooks install` and `hooks uninstall` edit other tools' files: git hook scripts,
//! `.gitattributes`, and the agent hosts' JSON hook settings. Pure text and JSON
//! transformations: installing twice changes nothing the second time, and uninstalling removes
//! exactly what installing added, leaving everything else (other hooks, other settings) alone.

use serde_json::Value;
use serde_json::json;

/// First line of the block `hooks install` puts into a git hook script.
pub const BLOCK_START: &str = "# >>> epiphany >>>";
/// Last line of that block.
pub const BLOCK_END: &str = "# <<< epiphany <<<";
/// Marks the agent-host hook commands that belong to epiphany.
pub const AGENT_COMMAND_PREFIX: &str = "epiphany hook ";

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

/// The hook script without our block; `None` when nothing but a shebang would remain.
pub fn without_hook_block(existing: &str) -> Option<String> {
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
    let meaningful = kept
        .lines()
        .any(|line| !line.trim().is_empty() && !line.starts_with("#!"));
    meaningful.then_some(kept)
}

/// `.gitattributes` with each of `lines` present once.
pub fn with_lines(existing: &str, lines: &[String]) -> String {
    let mut text = existing.to_owned();
    for line in lines {
        if !existing.lines().any(|present| present.trim() == line) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// `.gitattributes` without `lines`.
pub fn without_lines(existing: &str, lines: &[String]) -> String {
    existing
        .split_inclusive('\n')
        .filter(|line| !lines.iter().any(|ours| line.trim() == ours))
        .collect()
}

/// One agent-host hook to register: the event, its matcher, and the command to run.
#[derive(Debug, Clone, Copy)]
pub struct AgentHook {
    /// The host's event name (`SessionStart`, `PreCompact`).
    pub event: &'static str,
    /// Which sources of the event to match (`startup|resume|clear|compact`).
    pub matcher: &'static str,
    /// The command line.
    pub command: &'static str,
}

/// Host settings (`{"hooks": {EVENT: [{"matcher", "hooks": [{"type", "command"}]}]}}`) with
/// our hooks registered once, replacing an older registration of ours.
pub fn with_agent_hooks(settings: Value, hooks: &[AgentHook]) -> Value {
    let mut settings = without_agent_hooks(settings);
    if !settings.is_object() {
        settings = json!({});
    }
    for hook in hooks {
        let entry = json!({
            "matcher": hook.matcher,
            "hooks": [{"type": "command", "command": hook.command, "timeout": 30}]
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

/// Host settings without any hook command of ours; groups and events left empty are dropped.
pub fn without_agent_hooks(mut settings: Value) -> Value {
    let Some(Value::Object(events)) = settings.get_mut("hooks") else {
        return settings;
    };
    for groups in events.values_mut() {
        if let Value::Array(groups) = groups {
            for group in groups.iter_mut() {
                if let Some(Value::Array(handlers)) = group.get_mut("hooks") {
                    handlers.retain(|handler| !is_ours(handler));
                }
            }
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
    settings
}

fn is_ours(handler: &Value) -> bool {
    handler
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| command.starts_with(AGENT_COMMAND_PREFIX))
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
    fn gitattributes_lines_are_added_once_and_removed_exactly() {
        let ours = vec!["a merge=x".to_owned()];
        let text = with_lines("*.png binary", &ours);
        assert_eq!(text, "*.png binary\na merge=x\n");
        assert_eq!(with_lines(&text, &ours), text);
        assert_eq!(without_lines(&text, &ours), "*.png binary\n");
    }

    #[test]
    fn agent_hooks_are_registered_once_beside_foreign_hooks() {
        let hooks = [AgentHook {
            event: "SessionStart",
            matcher: "startup",
            command: "epiphany hook session-start",
        }];
        let foreign = json!({"model": "x", "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "other"}]}]}});
        let installed = with_agent_hooks(foreign.clone(), &hooks);
        assert_eq!(
            installed["hooks"]["SessionStart"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(with_agent_hooks(installed.clone(), &hooks), installed);
        assert_eq!(without_agent_hooks(installed), foreign);
        assert_eq!(
            without_agent_hooks(with_agent_hooks(json!({}), &hooks)),
            json!({})
        );
    }
}
