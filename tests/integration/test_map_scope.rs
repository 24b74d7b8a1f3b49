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
/// file's `Err(...)` calls do not mean; `src/poll.rs` a `struct Ready` that `Poll::Ready(...)`
/// does not mean and `src/wait.rs` imports; a Java `class Box` that `Box::new` does not mean.
/// A JavaScript file defines the function the Rust files and a TypeScript file call by a name
/// nothing in Rust defines, a Python file defines it too. A test fixture's `fn f` and
/// `function test` are what every closure call `f(...)` and vitest `test(...)` would match.
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
            "use std::task::Poll;\n\nuse crate::engine::Engine;\n\npub fn drive(engine: &Engine) -> Result<u32, String> {\n    if engine.start() == 0 {\n        return Err(\"stalled\".to_owned());\n    }\n    Ok(engine.start())\n}\n\npub fn poll(f: impl Fn(u32) -> u32) -> Poll<Box<u32>> {\n    Poll::Ready(Box::new(f(1)))\n}\n",
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
            "src/poll.rs",
            "pub struct Ready(pub u32);\n\nimpl Ready {\n    pub fn get(&self) -> u32 {\n        self.0\n    }\n}\n",
        ),
        (
            "src/wait.rs",
            "use crate::poll::Ready;\n\npub fn wait(f: impl Fn() -> u32) -> Ready {\n    Ready(f())\n}\n",
        ),
        (
            "web/page.js",
            "export function render_page() {\n  return 1;\n}\n",
        ),
        (
            "web/app.ts",
            "export function mount(): number {\n  return render_page();\n}\n",
        ),
        (
            "web/app.test.js",
            "test('mounts', () => {\n  mount();\n});\n",
        ),
        ("tools/page.py", "def render_page():\n    return Box()\n"),
        (
            "tools/Box.java",
            "class Box {\n    static Box make() {\n        return new Box();\n    }\n}\n",
        ),
        (
            "tests/fixtures/sample.rs",
            "pub fn f() -> u32 {\n    1\n}\n",
        ),
        (
            "web/__fixtures__/spec.js",
            "export function test() {\n  return 1;\n}\n",
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
    let count = |path: &str, name: &str| referenced_by(&map, path, name);
    assert_eq!(count("src/glob.rs", "Err"), 0, "{map:#}");
    assert_eq!(
        count("src/poll.rs", "Ready"),
        1,
        "only src/wait.rs imports it"
    );
    assert_eq!(count("tools/Box.java", "Box"), 0, "Box::new is Rust's Box");
    assert_eq!(count("web/page.js", "render_page"), 1, "only web/app.ts");
    assert_eq!(count("tools/page.py", "render_page"), 0);
    assert_eq!(
        count("tests/fixtures/sample.rs", "f"),
        0,
        "closure calls f(...)"
    );
    assert_eq!(
        count("web/__fixtures__/spec.js", "test"),
        0,
        "vitest's test(...)"
    );
    let ranked = paths(&map);
    assert_eq!(ranked[0], "src/engine.rs", "{ranked:?}");
    let at = |path: &str| ranked.iter().position(|shown| *shown == path).expect(path);
    for central in ["src/engine.rs", "src/poll.rs", "web/page.js"] {
        for unused in ["src/glob.rs", "tests/fixtures/sample.rs", "tools/Box.java"] {
            assert!(
                at(central) < at(unused),
                "{central} after {unused}: {ranked:?}"
            );
        }
    }
}

/// Three implementations' `type Output` and `fn poll` lines, and the overloads of a
/// TypeScript function, are one line each with a count; at any budget every path printed
/// comes with at least one of its definitions.
#[test]
fn the_budget_shows_distinct_definitions_and_no_bare_paths() {
    let env = TestEnv::new();
    let impls: String = (0..3)
        .map(|at| {
            format!(
                "pub struct Step{at};\n\nimpl Future for Step{at} {{\n    type Output = u32;\n\n    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {{\n        Poll::Ready({at})\n    }}\n}}\n\n"
            )
        })
        .collect();
    env.write(
        "src/steps.rs",
        format!("use std::future::Future;\nuse std::pin::Pin;\nuse std::task::{{Context, Poll}};\n\n{impls}"),
    );
    env.write(
        "web/config.ts",
        "export function defineConfig(config: string): string;\nexport function defineConfig(config: number): number;\nexport function defineConfig(config: any): any {\n  return config;\n}\n",
    );
    for at in 0..12 {
        env.write(
            &format!("src/user_{at:02}.rs"),
            format!("use crate::steps::Step{step};\n\npub fn make_{at}() -> Step{step} {{\n    Step{step}\n}}\n", step = at % 3),
        );
    }
    env.ok(&["index"]);
    let map = env.json(&["map", "--max-chars", "100000"]);
    let file = |path: &str| {
        (map["files"].as_array().expect("files").iter())
            .find(|file| file["path"] == path)
            .unwrap_or_else(|| panic!("{path} is not in the map: {map:#}"))
            .clone()
    };
    let shown = |path: &str| -> Vec<(String, u64)> {
        (file(path)["definitions"]
            .as_array()
            .expect("definitions")
            .iter())
        .map(|d| {
            (
                d["name"].as_str().expect("name").to_owned(),
                d["more"].as_u64().unwrap_or(0),
            )
        })
        .collect()
    };
    let steps = shown("src/steps.rs");
    for (name, more) in [("Output", 2), ("poll", 2)] {
        let found: Vec<&(String, u64)> = steps.iter().filter(|(shown, _)| shown == name).collect();
        assert_eq!(found, [&(name.to_owned(), more)], "{steps:?}");
    }
    assert_eq!(shown("web/config.ts"), [("defineConfig".to_owned(), 2)]);
    let text = env.ok(&["map", "--max-chars", "100000"]).stdout;
    assert!(
        text.contains("export function defineConfig(config: string): string;  (+2 more)"),
        "{text}"
    );
    for budget in ["60", "150", "300", "700", "1200"] {
        let text = env.ok(&["map", "--max-chars", budget]).stdout;
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            if !line.starts_with(' ') {
                let next = lines.get(at + 1).copied().unwrap_or_default();
                assert!(
                    next.starts_with("  "),
                    "budget {budget}: {line} shown bare:\n{text}"
                );
            }
        }
        assert!(text.len() <= budget.parse().expect("number"), "{text}");
    }
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
