//! Rules about the code itself: policy stays pure, state depends on nothing above it, state
//! and search return typed errors, `cmd/` holds only commands, and no test file is forgotten.

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
        "crate::state::store",
        "crate::state::fs",
        "crate::state::git",
        "crate::search",
        "crate::cmd",
        "crate::cli",
        "crate::ui",
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

#[test]
fn state_depends_on_nothing_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let forbidden = ["crate::policy", "crate::search", "crate::cmd", "crate::cli"];
    let mut offences = Vec::new();
    for file in rust_files(&root.join("src/state")) {
        let text = std::fs::read_to_string(&file).expect("read");
        // Unit tests may use policy fixtures; the module's own code may not.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for needle in forbidden {
            if code.contains(needle) {
                offences.push(format!("{}: uses `{needle}`", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "src/state must not depend on the layers above it:\n{}",
        offences.join("\n")
    );
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
            && registry.contains(&format!("{name}::run(ctx, args)"));
        if !is_command {
            offences.push(format!(
                "src/cmd/{name}: not a command (an `Args`, a `run` and a place in the dispatch \
                 `match`); shared code belongs outside `cmd/`"
            ));
        }
    }
    offences.sort();
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}
