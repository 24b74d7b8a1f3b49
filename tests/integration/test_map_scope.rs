//! `map`: references as the language sees them (imports, type positions, names resolved in
//! scope, standard names and other languages left out) and a map without an index that parses
//! what the other files import first.

use serde_json::Value;

use crate::common::TestEnv;

/// The shown files' paths, best first.
fn paths(map: &Value) -> Vec<&str> {
    (map["files"].as_array().expect("files").iter())
        .map(|file| file["path"].as_str().expect("path"))
        .collect()
}

/// How many files reference the definition `name` of the file at `path`, as the map says.
fn referenced_by(map: &Value, path: &str, name: &str) -> u64 {
    let file = (map["files"].as_array().expect("files").iter())
        .find(|file| file["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not in the map: {map:#}"));
    (file["definitions"].as_array().expect("definitions").iter())
        .find(|definition| definition["name"] == name)
        .and_then(|definition| definition["referenced_by"].as_u64())
        .unwrap_or_else(|| panic!("{name} is not shown in {path}: {file:#}"))
}

/// `src/engine.rs` defines `Engine`; three files use it only through `use` and a parameter
/// type (and a method call on the parameter), one from a test that names the crate. An
/// unrelated file beside `engine.rs` defines more. `src/glob.rs` has a `type Err` that every
/// file's `Err(...)` calls do not mean, and a JavaScript file defines the function the Rust
/// files call by a name nothing in Rust defines.
fn engine_repository() -> TestEnv {
    let env = TestEnv::new();
    for (path, text) in [
        (
            "src/lib.rs",
            "pub mod cli;\npub mod engine;\npub mod glob;\npub mod net;\npub mod unrelated;\n",
        ),
        (
            "src/engine.rs",
            "pub struct Engine {\n    pub speed: u32,\n}\n\nimpl Engine {\n    pub fn start(&self) -> u32 {\n        self.speed\n    }\n}\n",
        ),
        (
            "src/cli.rs",
            "use crate::engine::Engine;\n\npub fn drive(engine: &Engine) -> Result<u32, String> {\n    if engine.start() == 0 {\n        return Err(\"stalled\".to_owned());\n    }\n    Ok(engine.start())\n}\n",
        ),
        (
            "src/net/serve.rs",
            "use crate::engine::Engine;\n\npub fn serve(engine: &mut Engine) -> Result<(), String> {\n    render_page();\n    Err(format!(\"{}\", engine.start()))\n}\n",
        ),
        (
            "tests/engine_test.rs",
            "use app::engine::Engine;\n\nfn checks(engine: Engine) -> Result<(), String> {\n    Err(engine.start().to_string())\n}\n",
        ),
        (
            "src/unrelated.rs",
            "pub fn tally(values: &[u32]) -> u32 {\n    values.iter().sum()\n}\n\npub fn average(values: &[u32]) -> u32 {\n    tally(values) / 2\n}\n",
        ),
        (
            "src/glob.rs",
            "pub struct Glob(String);\n\nimpl std::str::FromStr for Glob {\n    type Err = String;\n\n    fn from_str(text: &str) -> Result<Glob, String> {\n        Err(text.to_owned())\n    }\n}\n",
        ),
        ("src/net/mod.rs", "pub mod serve;\n"),
        (
            "web/page.js",
            "export function render_page() {\n  return 1;\n}\n",
        ),
    ] {
        env.write(path, text);
    }
    env
}

#[test]
fn a_type_used_through_imports_and_parameters_draws_its_users() {
    let env = engine_repository();
    for indexed in [false, true] {
        if indexed {
            env.ok(&["index"]);
        }
        let map = env.json(&["map", "--focus", "src/engine.rs"]);
        let ranked = paths(&map);
        let at = |path: &str| {
            (ranked.iter().position(|shown| *shown == path))
                .unwrap_or_else(|| panic!("{path} is not in the map: {ranked:?}"))
        };
        assert_eq!(ranked[0], "src/engine.rs", "indexed: {indexed}");
        for user in ["src/cli.rs", "src/net/serve.rs", "tests/engine_test.rs"] {
            assert!(
                at(user) < at("src/unrelated.rs"),
                "indexed: {indexed}: {user} after src/unrelated.rs in {ranked:?}"
            );
        }
        assert_eq!(referenced_by(&map, "src/engine.rs", "Engine"), 3);
    }
}

#[test]
fn standard_names_and_other_languages_make_no_local_definition_central() {
    let env = engine_repository();
    env.ok(&["index"]);
    let map = env.json(&["map", "--max-chars", "100000"]);
    assert_eq!(referenced_by(&map, "src/glob.rs", "Err"), 0, "{map:#}");
    assert_eq!(referenced_by(&map, "web/page.js", "render_page"), 0);
    assert_eq!(paths(&map)[0], "src/engine.rs", "{:?}", paths(&map));
}

/// 1,600 Python files of about 3 KB all import `zzz/core.py`, whose path sorts last: without
/// an index the map parses what fits in its time bound, the imported file first, and shows it
/// among its first 10 files; it says how many files it parsed and left out.
#[test]
fn a_map_without_an_index_parses_what_the_others_import_first() {
    let env = TestEnv::bare();
    let body: String = (0..40)
        .map(|at| format!("def step_{at}(value):\n    return engine_core(value) + {at}\n\n"))
        .collect();
    for at in 0..1600 {
        let text = format!("from zzz.core import engine_core\n\n\n{body}");
        env.write(&format!("pkg{}/mod_{at:04}.py", at % 16), text);
    }
    env.write(
        "zzz/core.py",
        "def engine_core(value):\n    return value * 2\n",
    );
    let map = env.json(&["map"]);
    assert_eq!(map["source"], "scan");
    let ranked = paths(&map);
    assert!(
        ranked.iter().take(10).any(|path| *path == "zzz/core.py"),
        "{ranked:?}"
    );
    let covered = map["ranked_files"].as_u64().expect("ranked_files");
    let left_out = map["left_out_files"].as_u64().expect("left_out_files");
    assert_eq!(covered + left_out, 1601);
}
