//! Rules about the code itself: policy stays pure, each lower layer names only what its
//! allow-list holds, the top-level modules form no cycle, state and search return typed errors,
//! `cmd/` holds only commands, no file or function outgrows its limit, and no test file is
//! forgotten.

use std::path::Path;

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn policy_is_pure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let forbidden = [
        "std::fs",
        "std::env",
        "std::process",
        "std::net",
        "std::io::stdout",
        "std::io::stdin",
        "SystemTime",
        "Instant::now",
        "Timestamp::now",
        "git2",
        "tantivy",
        "ignore::",
        "println!",
        "eprintln!",
        "print!",
    ];
    let mut offences = Vec::new();
    for file in rust_files(&root.join("src/policy")) {
        let text = std::fs::read_to_string(&file).expect("read");
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for needle in forbidden {
            if code.contains(needle) {
                offences.push(format!("{}: uses `{needle}`", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "src/policy must stay pure:\n{}",
        offences.join("\n")
    );
}

/// A module's own code: the text before its unit tests, without comment lines.
fn own_code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("read");
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path the code names under `crate::`, as its segments (`crate::state::model::State`
/// gives `["state", "model", "State"]`).
fn crate_paths(code: &str) -> Vec<Vec<&str>> {
    code.match_indices("crate::")
        .map(|(at, needle)| {
            let rest = &code[at + needle.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            rest[..end]
                .split("::")
                .filter(|part| !part.is_empty())
                .collect()
        })
        .collect()
}

#[test]
fn each_layer_names_only_what_it_is_allowed() {
    // What each lower layer's code may name under `crate::`, as path prefixes. Anything new
    // (a module added above, or a state module policy should not see) fails until listed.
    let rules: [(&str, &[&str]); 4] = [
        ("state", &["state", "parallel"]),
        ("wire", &["wire", "policy", "state::model"]),
        (
            "search",
            &[
                "search",
                "state::error",
                "state::fs",
                "state::model",
                "state::walk",
                "policy::code_map",
                "policy::peripheral",
                "parallel",
            ],
        ),
        (
            "policy",
            &[
                "policy",
                "state::fields",
                "state::fold",
                "state::lineage",
                "state::model",
                "state::patch",
                "state::paths",
                "state::problem",
                "state::rollout",
                "state::snapshot",
            ],
        ),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for (layer, allowed) in rules {
        for file in rust_files(&root.join(layer)) {
            for path in crate_paths(&own_code(&file)) {
                let named = path.join("::");
                let is_allowed = allowed
                    .iter()
                    .any(|prefix| named == *prefix || named.starts_with(&format!("{prefix}::")));
                if !is_allowed {
                    offences.push(format!("{}: names `crate::{named}`", file.display()));
                }
            }
        }
    }
    offences.sort();
    offences.dedup();
    assert!(
        offences.is_empty(),
        "a layer names what its allow-list does not hold:\n{}",
        offences.join("\n")
    );
}

/// The policy's structs that may be serialized, each for a reason. Its computed reports reach
/// scripts through their twins in `src/wire/`, so that a policy change cannot change `--json`
/// unseen; a new report goes there too. (Enums, the reports' closed vocabularies, keep theirs.)
const SERIALIZED_POLICY_STRUCTS: [(&str, &str); 11] = [
    ("Declaration", "stored in the index's outlines"),
    ("Definition", "stored in the index's outlines"),
    ("Import", "stored in the index's outlines"),
    ("Outline", "stored in the index's outlines"),
    (
        "MapDefinition",
        "part of `map`'s own report, rendered by the policy",
    ),
    (
        "MapFile",
        "part of `map`'s own report, rendered by the policy",
    ),
    ("Rendered", "part of `prompt`'s own report"),
    ("LeftOut", "part of `prompt`'s own report"),
    ("Page", "part of `show`'s own report"),
    ("Redaction", "part of the writes' own reports"),
    (
        "Backup",
        "stored beside a host's settings by `hooks install`",
    ),
];

#[test]
fn policy_reports_reach_json_only_through_wire() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/policy");
    let allowed: Vec<&str> = SERIALIZED_POLICY_STRUCTS.map(|(name, _)| name).to_vec();
    let mut found = Vec::new();
    for file in rust_files(&root) {
        let code = own_code(&file);
        let mut serialized = false;
        for line in code.lines().map(str::trim) {
            if line.starts_with("#[derive(") {
                serialized = (line.split(|c: char| !(c.is_alphanumeric() || c == ':')))
                    .any(|word| word == "Serialize" || word.ends_with("::Serialize"));
            } else if let Some(rest) = line
                .strip_prefix("pub struct ")
                .or(line.strip_prefix("struct "))
            {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if serialized {
                    found.push((name, file.display().to_string()));
                }
                serialized = false;
            } else if !line.starts_with("#[") {
                serialized = false;
            }
        }
    }
    let unlisted: Vec<String> = (found.iter())
        .filter(|(name, _)| !allowed.contains(&name.as_str()))
        .map(|(name, file)| format!("{file}: {name}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "serialized policy structs (give each a twin in src/wire/ or list it with a reason):\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<&&str> = (allowed.iter())
        .filter(|name| !found.iter().any(|(found, _)| found == *name))
        .collect();
    assert!(
        stale.is_empty(),
        "listed but no longer serialized: {stale:?}"
    );
}

#[test]
fn top_level_modules_form_no_cycle() {
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&root) {
        let relative = file.strip_prefix(&root).expect("under src");
        let first = relative.components().next().expect("a component");
        let module = first.as_os_str().to_str().expect("utf-8");
        let module = module.strip_suffix(".rs").unwrap_or(module).to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let named = edges.entry(module.clone()).or_default();
        for path in crate_paths(&own_code(&file)) {
            if let Some(target) = path.first().filter(|target| **target != module) {
                named.insert((*target).to_owned());
            }
        }
    }
    // Depth-first search; a module met again while on the stack closes a cycle.
    fn visit<'a>(
        module: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = stack.iter().position(|on| *on == module) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(module);
            return Some(cycle);
        }
        if !done.insert(module) {
            return None;
        }
        stack.push(module);
        for next in edges.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in edges.keys() {
        let cycle = visit(module, &edges, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "the top-level modules form a cycle: {}",
            cycle.unwrap_or_default().join(" -> ")
        );
    }
    // The layers the rest stands on are there, so the search saw real code.
    assert!(edges["cmd"].contains("state") && edges["policy"].contains("state"));
}

#[test]
fn state_and_search_leave_hints_to_the_commands() {
    // Their failures are typed (`StoreError`, `SearchError`); `crate::error` gives them the
    // exit code and the hint, so these layers never raise a CLI `Failure` themselves.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offences = Vec::new();
    for dir in ["src/state", "src/search"] {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).expect("read");
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for needle in ["crate::error", "Failure::", "with_hint("] {
                if code.contains(needle) {
                    offences.push(format!("{}: uses `{needle}`", file.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "state and search return typed errors, not CLI failures:\n{}",
        offences.join("\n")
    );
}

#[test]
fn no_forgotten_test_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
    for file in rust_files(&dir) {
        let stem = file.file_stem().and_then(|s| s.to_str()).expect("stem");
        if stem == "main" {
            continue;
        }
        assert!(
            main.contains(&format!("mod {stem};")),
            "tests/integration/{stem}.rs is not listed in main.rs"
        );
    }
}

#[test]
fn cmd_holds_one_module_per_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let registry = std::fs::read_to_string(root.join("src/cmd/mod.rs")).expect("cmd/mod.rs");
    let mut offences = Vec::new();
    for entry in std::fs::read_dir(root.join("src/cmd")).expect("read_dir") {
        let path = entry.expect("entry").path();
        let (name, file) = if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).expect("name");
            (name.to_owned(), path.join("mod.rs"))
        } else {
            let name = path.file_stem().and_then(|n| n.to_str()).expect("stem");
            (name.to_owned(), path.clone())
        };
        if name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let is_command = text.contains("pub struct Args")
            && text.contains("pub fn run(")
            && registry.contains(&format!("\n    {name} => "));
        if !is_command {
            offences.push(format!(
                "src/cmd/{name}: not a command (an `Args`, a `run` and a line in the `commands!` \
                 table); shared code belongs outside `cmd/`"
            ));
        }
    }
    offences.sort();
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}

/// The comment of a line of Rust: everything after the first `//` that is not inside a string
/// literal (a line-by-line approximation, which is enough for this repository's sources).
fn comment_of(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if in_string => at += 1,
            b'\'' if !in_string && bytes.get(at + 2) == Some(&b'\'') => at += 2,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(at + 1) == Some(&b'/') => return Some(&line[at..]),
            _ => {}
        }
        at += 1;
    }
    None
}

/// Every page a comment cites, with its anchor when it names one, as written (the style is
/// described in docs/README.md).
fn doc_citations(comment: &str) -> Vec<String> {
    let mut citations = Vec::new();
    for (at, _) in comment.match_indices("docs/") {
        let before = comment[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')) {
            continue;
        }
        let cited: String = comment[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '#' | '-' | '_'))
            .collect();
        citations.push(cited.trim_end_matches('.').to_owned());
    }
    citations
}

/// The anchor GitHub gives a Markdown heading: lowercase, punctuation dropped, spaces as `-`.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Comments cite the repository's own pages by page and heading, never section numbers of a
/// document outside the repository, and every citation leads somewhere.
#[test]
fn comments_cite_docs_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let section_sign = '\u{a7}';
    let mut offences = Vec::new();
    let mut cited = 0;
    let files = rust_files(&root.join("src"))
        .into_iter()
        .chain(rust_files(&root.join("tests/integration")));
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let name = file
            .strip_prefix(root)
            .expect("listed under the root")
            .display();
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = comment_of(line) else {
                continue;
            };
            let place = format!("{name}:{}", number + 1);
            if comment.contains(section_sign) {
                offences.push(format!(
                    "{place}: cites a section number; cite docs/<page>.md#<heading> instead"
                ));
            }
            for citation in doc_citations(comment) {
                cited += 1;
                let (page, anchor) = match citation.split_once('#') {
                    Some((page, anchor)) => (page, Some(anchor)),
                    None => (citation.as_str(), None),
                };
                let Ok(markdown) = std::fs::read_to_string(root.join(page)) else {
                    offences.push(format!("{place}: `{citation}`: there is no {page}"));
                    continue;
                };
                if !page.ends_with(".md") {
                    offences.push(format!("{place}: `{citation}`: not a Markdown page"));
                }
                let headings: Vec<String> = markdown
                    .lines()
                    .filter(|line| line.starts_with('#'))
                    .map(|line| heading_anchor(line.trim_start_matches('#')))
                    .collect();
                if let Some(anchor) = anchor
                    && !headings.iter().any(|heading| heading == anchor)
                {
                    offences.push(format!(
                        "{place}: `{citation}`: {page} has no heading with the anchor `{anchor}`"
                    ));
                }
            }
        }
    }
    assert!(
        cited > 0,
        "no comment cites docs/: the citation parser is broken"
    );
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}

/// Each function of rustfmt-formatted `lines`: its signature's first line and its length in
/// lines, from that line to its closing brace (a signature without a body is none).
fn function_lengths<'a>(lines: &[&'a str]) -> Vec<(&'a str, usize)> {
    const QUALIFIERS: [&str; 7] = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "const",
        "async",
        "unsafe",
        "extern",
    ];
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(at) = trimmed.find("fn ") else {
            continue;
        };
        let qualified = trimmed[..at]
            .split_whitespace()
            .all(|word| QUALIFIERS.contains(&word) || word == "\"C\"");
        if !qualified {
            continue;
        }
        let signature_end = lines[start..]
            .iter()
            .position(|line| line.ends_with('{') || line.ends_with(';') || line.ends_with('}'));
        let Some(signature_end) = signature_end else {
            continue;
        };
        let last = lines[start + signature_end];
        if last.ends_with(';') {
            continue;
        }
        if last.ends_with('}') {
            found.push((trimmed, signature_end + 1));
            continue;
        }
        let close = format!("{}}}", &line[..line.len() - trimmed.len()]);
        if let Some(end) = lines[start..].iter().position(|line| *line == close) {
            found.push((trimmed, end + 1));
        }
    }
    found
}

/// Outside tests, no source file holds more than 600 lines of code and no function more than
/// 100 (blank and comment lines not counted): past that, a unit is split along the seams its
/// code already marks.
#[test]
fn no_file_or_function_outgrows_its_limit() {
    const FILE_LIMIT: usize = 600;
    const FUNCTION_LIMIT: usize = 100;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for file in rust_files(&root) {
        let code = own_code(&file);
        let lines: Vec<&str> = code
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect();
        if lines.len() > FILE_LIMIT {
            offences.push(format!("{}: {} lines of code", file.display(), lines.len()));
        }
        for (signature, length) in function_lengths(&lines) {
            if length > FUNCTION_LIMIT {
                offences.push(format!("{}: `{signature}` {length} lines", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "split these along their seams:\n{}",
        offences.join("\n")
    );
}

#[test]
fn function_lengths_follow_rustfmt_layout() {
    let code = "fn one() {}\n\
                pub(crate) fn two(\n    a: u8,\n) -> u8 {\n    a\n}\n\
                trait T {\n    fn bodiless(&self);\n    fn body(&self) {\n        x();\n    }\n}\n\
                let f = |x| x; // fn inside a comment is no function\n";
    let lines: Vec<&str> = code.lines().collect();
    let found: Vec<(&str, usize)> = function_lengths(&lines);
    assert_eq!(
        found,
        [
            ("fn one() {}", 1),
            ("pub(crate) fn two(", 5),
            ("fn body(&self) {", 3)
        ]
    );
}
