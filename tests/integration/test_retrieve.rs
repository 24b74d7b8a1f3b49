//! `index` and `retrieve`: the persistent index, its freshness, and ranked answers with and
//! without a store.

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

const ENGINE: &str = "\
/// Applies a change to the state after checking it.
pub fn apply(state: &mut State, change: Change) -> Result<(), Refusal> {
    validate_patch(&change.patch)?;
    state.merge(change);
    Ok(())
}

fn validate_patch(patch: &Patch) -> Result<(), Refusal> {
    if patch.fields.is_empty() {
        return Err(Refusal::Empty);
    }
    Ok(())
}
";

const RENDER: &str = "\
pub fn render(frame: &Frame) -> String {
    frame.lines.join(\"\\n\")
}
";

fn repository(env: &TestEnv) {
    env.write("src/engine.rs", ENGINE);
    env.write("src/render.rs", RENDER);
    env.write("README.md", "# demo\n\nA demo project.\n");
}

/// `(kind, path)` of every result.
fn ranked(answer: &Value) -> Vec<(String, String)> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| {
            (
                hit["kind"].as_str().expect("kind").to_owned(),
                hit["path"].as_str().expect("path").to_owned(),
            )
        })
        .collect()
}

fn paths(answer: &Value) -> Vec<String> {
    ranked(answer).into_iter().map(|(_, path)| path).collect()
}

/// The published index generation's directory, relative to the root.
pub fn generation_dir(env: &TestEnv) -> String {
    let current = env.read(".epiphany/cache/retrieval/CURRENT");
    let current = String::from_utf8(current).expect("utf-8");
    format!(".epiphany/cache/retrieval/gen-{}", current.trim())
}

#[test]
fn index_edit_check_retrieve_reindex() {
    let env = TestEnv::new();
    repository(&env);
    let built = env.json(&["index"]);
    assert_eq!(built["status"], "ready");
    assert_eq!(built["mode"], "full");
    assert_eq!(built["indexed_file_count"], 3);
    assert_eq!(built["dirty_paths"], json!([]));
    assert!(
        built["index_revision"]
            .as_str()
            .expect("revision")
            .starts_with("tantivy")
    );
    assert!(built["elapsed_ms"].is_u64());
    env.ok(&["index", "--check"]);

    env.write(
        "src/render.rs",
        "pub fn render(frame: &Frame) -> String {\n    rasterize_glyphs(frame)\n}\n",
    );
    // The check fails naming the edited file, and a query finds the new text in it (read from
    // the work tree, not the stale index), saying the index is stale.
    let stale = json!({
        "index --check": env.json_answer(&["index", "--check"]),
        "retrieve": env.json_answer(&["retrieve", "rasterize glyphs"]),
    });
    insta::assert_snapshot!(serde_json::to_string_pretty(&stale).expect("json"));
    // The old text is not answered from the stale index.
    let old = env.json(&["retrieve", "--mode", "lexical", "lines join"]);
    assert_eq!(ranked(&old), Vec::<(String, String)>::new());

    let updated = env.json(&["index"]);
    assert_eq!(updated["mode"], "incremental");
    assert_eq!(updated["reindexed_file_count"], 1, "{updated}");
    env.ok(&["index", "--check"]);
    let again = env.json(&["index"]);
    assert_eq!(again["mode"], "unchanged");
    let answer = env.json(&["retrieve", "rasterize glyphs"]);
    assert_eq!(answer["index"]["status"], "ready");
    assert_eq!(paths(&answer), ["src/render.rs"]);
}

#[test]
fn added_and_removed_files_are_dirty_until_indexed() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    env.write("src/tessellate.rs", "fn tessellate_mesh() {}\n");
    std::fs::remove_file(env.root().join("src/engine.rs")).expect("remove");
    let answer = env.json(&["retrieve", "tessellate mesh"]);
    assert_eq!(
        answer["index"]["dirty_paths"],
        json!(["src/engine.rs", "src/tessellate.rs"])
    );
    assert_eq!(paths(&answer), ["src/tessellate.rs"]);
    let gone = env.json(&["retrieve", "validate patch"]);
    assert!(
        !paths(&gone).contains(&"src/engine.rs".to_owned()),
        "{gone}"
    );
    let updated = env.json(&["index"]);
    assert_eq!(updated["removed_file_count"], 1);
    assert_eq!(updated["reindexed_file_count"], 1);
    env.ok(&["index", "--check"]);
}

#[test]
fn touching_a_file_does_not_make_it_dirty() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let path = env.root().join("src/render.rs");
    let later = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_modified(later))
        .expect("touch");
    env.ok(&["index", "--check"]);
    assert_eq!(env.json(&["index"])["mode"], "unchanged");
}

#[test]
fn chunk_search_finds_a_concept_exact_name_search_misses() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let query = "where are patches validated";
    let exact = env.json(&["retrieve", "--mode", "exact", query]);
    assert_eq!(ranked(&exact), Vec::<(String, String)>::new());
    let hybrid = env.json(&["retrieve", query]);
    assert_eq!(
        ranked(&hybrid),
        [("chunk".to_owned(), "src/engine.rs".to_owned())]
    );
    let hit = &hybrid["results"][0];
    assert_eq!(hit["ranking"], "lexical", "{hybrid}");
    assert_eq!(
        (hit["start_line"].as_u64(), hit["end_line"].as_u64()),
        (Some(3), Some(13))
    );
}

/// Issue 13, item 3: exact lookup matches identifiers across spelling conventions, in file
/// names and in definitions, in each supported language.
/// With an index (the parsers' definitions) and without one (a scan, where Rust, Python and
/// Go lines say what they define by their keywords and the other languages are parsed).
#[test]
fn exact_finds_identifiers_in_paths_and_definitions() {
    for indexed in [true, false] {
        exact_finds_identifiers(indexed);
    }
}

fn exact_finds_identifiers(indexed: bool) {
    let env = TestEnv::new();
    env.write("src/net/socketaddr.rs", "pub fn parse() {}\n");
    env.write(
        "src/util/cancel.rs",
        "use std::sync::Arc;\n\npub struct CancellationToken {\n    flag: Arc<bool>,\n}\n",
    );
    env.write(
        "py/transport.py",
        "import ssl\n\nclass HTTPTransport:\n    pass\n",
    );
    env.write(
        "web/url.ts",
        "// helpers\nexport function safeEncodeURI(uri: string): string {\n  return uri\n}\n",
    );
    env.write(
        "go/server.go",
        "package server\n\nfunc (s *Server) ServeHTTP(w Writer, r *Request) {\n}\n",
    );
    env.write(
        "java/Parser.java",
        "class Parser {\n    public static int parseCount(String s) {\n        return 1;\n    }\n}\n",
    );
    env.write(
        "c/header.c",
        "#include <string.h>\n\nstatic int parse_header(const char *s)\n{\n    return 0;\n}\n",
    );
    // Declarations without a body: an interface's method, a C prototype.
    env.write(
        "java/Store.java",
        "interface Store {\n    Record loadRecord(String id);\n}\n",
    );
    env.write("c/table.h", "int table_lookup(const char *key);\n");
    // Declarations: a Java constant, a Rust struct's field.
    env.write(
        "java/Options.java",
        "class Options {\n    private static final boolean SERIALIZE_NULLS = false;\n}\n",
    );
    env.write(
        "src/config.rs",
        "pub struct Config {\n    pub retry_limit: u32,\n}\n",
    );
    env.write("src/render/frame.rs", "// a frame\n");
    if indexed {
        env.ok(&["index"]);
    }
    let first = |query: &str| {
        let answer = env.json(&["retrieve", "--mode", "exact", query]);
        let hit = answer["results"][0].clone();
        (
            hit["kind"].as_str().unwrap_or_default().to_owned(),
            hit["ranking"].as_str().unwrap_or_default().to_owned(),
            hit["path"].as_str().unwrap_or_default().to_owned(),
            hit["start_line"].as_u64(),
        )
    };
    // A name match is a `file` without lines; a definition is a `definition` with its lines.
    let file = |path: &str, line: Option<u64>| {
        let kind = if line.is_some() { "definition" } else { "file" };
        (kind.to_owned(), "exact".to_owned(), path.to_owned(), line)
    };
    assert_eq!(first("SocketAddr"), file("src/net/socketaddr.rs", None));
    assert_eq!(first("socket_addr"), file("src/net/socketaddr.rs", None));
    assert_eq!(
        first("cancellation token"),
        file("src/util/cancel.rs", Some(3))
    );
    assert_eq!(first("HttpTransport"), file("py/transport.py", Some(3)));
    assert_eq!(first("safe_encode_uri"), file("web/url.ts", Some(2)));
    assert_eq!(first("ServeHTTP"), file("go/server.go", Some(3)));
    assert_eq!(first("parse_count"), file("java/Parser.java", Some(2)));
    assert_eq!(first("parseHeader"), file("c/header.c", Some(3)));
    assert_eq!(first("load_record"), file("java/Store.java", Some(2)));
    assert_eq!(first("tableLookup"), file("c/table.h", Some(1)));
    assert_eq!(first("SERIALIZE_NULLS"), file("java/Options.java", Some(2)));
    assert_eq!(first("retryLimit"), file("src/config.rs", Some(2)));
    let directory = env.json(&["retrieve", "--mode", "exact", "render"]);
    assert_eq!(
        ranked(&directory).last(),
        Some(&("directory".to_owned(), "src/render".to_owned()))
    );
    let excerpt = env.json(&["retrieve", "--mode", "exact", "CancellationToken"]);
    assert!(
        excerpt["results"][0]["excerpt"]
            .as_str()
            .expect("excerpt")
            .starts_with("pub struct CancellationToken"),
        "{excerpt}"
    );
    // Hybrid fuses exact lookup with chunk search by rank: the definition comes first for
    // an identifier query, and lexical mode has chunks only.
    let hybrid = env.json(&["retrieve", "CancellationToken"]);
    assert_eq!(paths(&hybrid)[0], "src/util/cancel.rs");
    let lexical = env.json(&["retrieve", "--mode", "lexical", "render"]);
    assert!(ranked(&lexical).iter().all(|(kind, _)| kind == "chunk"));
    assert!(
        lexical["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|hit| hit["ranking"] == "lexical"),
        "{lexical}"
    );
}

/// Issue 13, item 4: without an embedding model, semantic search says it is unavailable
/// instead of running BM25 under its name.
#[test]
fn semantic_mode_reports_itself_unavailable() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let output = env.run(&["--json", "retrieve", "--mode", "semantic", "render"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output.stderr.contains("semantic search is not available"),
        "{output}"
    );
    // `semantic_available` is false, which the report leaves out.
    let answer = env.json(&["retrieve", "render"]);
    assert!(
        answer["index"]
            .get("semantic_available")
            .is_none_or(|available| available == false),
        "{answer}"
    );
}

/// Writes a model2vec model into `dir`: a WordPiece `tokenizer.json` (lowercasing) with
/// `vocabulary`, and `model.safetensors` holding one F32 row of `embeddings` per word.
fn write_model(dir: &std::path::Path, vocabulary: &[(&str, [f32; 3])]) {
    std::fs::create_dir_all(dir).expect("model dir");
    let vocab: serde_json::Map<String, Value> = vocabulary
        .iter()
        .zip(0u32..)
        .map(|((word, _), id)| ((*word).to_owned(), id.into()))
        .collect();
    let tokenizer = json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("tokenizer");
    let data: Vec<u8> = vocabulary
        .iter()
        .flat_map(|(_, row)| row.iter().flat_map(|x| x.to_le_bytes()))
        .collect();
    let header = json!({"embeddings": {"dtype": "F32", "shape": [vocabulary.len(), 3],
                                       "data_offsets": [0, data.len()]}});
    let header = header.to_string().into_bytes();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    bytes.extend(data);
    std::fs::write(dir.join("model.safetensors"), bytes).expect("weights");
}

/// Issue 13, item 4: with a model, `index` stores chunk vectors (embedding changed files
/// only on later runs) and `--mode semantic` finds a file by meaning, through synonyms that
/// share a vector, where the query has no word in common with it.
#[test]
fn semantic_mode_finds_files_by_meaning_with_a_model() {
    const VEHICLES: [f32; 3] = [1.0, 0.0, 0.0];
    const MONEY: [f32; 3] = [0.0, 1.0, 0.0];
    let env = TestEnv::new();
    let model = tempfile::tempdir().expect("model dir");
    write_model(
        model.path(),
        &[
            ("[UNK]", [0.0, 0.0, 1.0]),
            ("car", VEHICLES),
            ("automobile", VEHICLES),
            ("vehicle", VEHICLES),
            ("##s", [0.0, 0.0, 0.0]),
            ("money", MONEY),
            ("deposit", MONEY),
            ("cash", MONEY),
        ],
    );
    let model_dir = model.path().to_str().expect("utf-8 path");
    env.write(
        "src/garage.rs",
        "fn park_automobile(slot: u32) {\n    // vehicles wait here\n}\n",
    );
    env.write(
        "src/ledger.rs",
        "fn deposit(amount: u64) {\n    cash(amount)\n}\n",
    );

    let built = env.json(&["index", "--model", model_dir]);
    assert_eq!(built["semantic_available"], true, "{built}");
    assert_eq!(built["vectors"]["vector_count"], 2, "{built}");
    assert_eq!(built["vectors"]["embedded_count"], 2, "{built}");

    // Neither "car" nor "money" appears in the code: BM25 finds nothing, semantic search does.
    let lexical = env.json(&["retrieve", "--mode", "lexical", "where is the car"]);
    assert!(paths(&lexical).is_empty(), "{lexical}");
    let answer = env.json(&["retrieve", "--mode", "semantic", "where is the car"]);
    assert_eq!(answer["index"]["semantic_available"], true, "{answer}");
    assert_eq!(
        ranked(&answer)[0],
        ("chunk".to_owned(), "src/garage.rs".to_owned()),
        "{answer}"
    );
    assert_eq!(answer["results"][0]["ranking"], "semantic", "{answer}");
    assert_eq!(answer["results"][0]["start_line"], 1, "{answer}");
    let answer = env.json(&["retrieve", "--mode", "semantic", "money"]);
    assert_eq!(paths(&answer)[0], "src/ledger.rs", "{answer}");

    // A file added since the index is embedded at query time; the next index run embeds
    // only it, keeping the others' vectors.
    env.write("src/bank.rs", "fn withdraw() {\n    cash()\n}\n");
    let answer = env.json(&["retrieve", "--mode", "semantic", "money"]);
    assert!(
        paths(&answer).contains(&"src/bank.rs".to_owned()),
        "{answer}"
    );
    let updated = env.json(&["index"]);
    assert_eq!(updated["vectors"]["vector_count"], 3, "{updated}");
    assert_eq!(updated["vectors"]["embedded_count"], 1, "{updated}");

    // The index remembers its model; once that is gone, semantic search says so.
    drop(model);
    let output = env.run(&["retrieve", "--mode", "semantic", "car"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(output.stderr.contains("does not load"), "{output}");
    let output = env.run(&["index", "--no-model"]);
    assert_eq!(output.code, 0, "{output}");
    let output = env.run(&["retrieve", "--mode", "semantic", "car"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output.stderr.contains("built without an embedding model"),
        "{output}"
    );
}

#[test]
fn retrieve_works_without_a_store_and_writes_nothing() {
    for env in [TestEnv::plain(), TestEnv::bare()] {
        repository(&env);
        let answer = env.json(&["retrieve", "where are patches validated"]);
        assert_eq!(paths(&answer), ["src/engine.rs"]);
        assert_eq!(answer["index"]["index_revision"], "query-time-bm25-v1");
        assert_eq!(answer["index"]["status"], "ready");
        assert_eq!(answer["index"]["indexed_file_count"], 3);
        assert!(!env.root().join(".epiphany").exists());
    }
}

#[test]
fn retrieve_with_a_store_but_no_index_writes_nothing() {
    let env = TestEnv::new();
    repository(&env);
    let answer = env.json(&["retrieve", "render frame"]);
    assert_eq!(paths(&answer)[0], "src/render.rs");
    assert!(!env.root().join(".epiphany/cache").exists());
    let check = env.run(&["index", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(check.stdout.contains("no index yet"), "{check}");
}

#[test]
fn path_prefixes_scope_results_and_bad_ones_are_dropped() {
    let env = TestEnv::new();
    env.write("app/render.rs", "fn render() {}\n");
    env.write("lib/render.rs", "fn render() {}\n");
    env.ok(&["index"]);
    let scoped = env.json(&["retrieve", "--path-prefix", "./lib/", "render"]);
    assert!(
        paths(&scoped).iter().all(|path| path.starts_with("lib/")),
        "{scoped}"
    );
    let output = env.run(&["--json", "retrieve", "--path-prefix", "../app", "render"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stderr.contains("ignoring `--path-prefix ../app`"),
        "{output}"
    );
    let all = paths(&output.json());
    assert!(all.contains(&"app/render.rs".to_owned()));
    assert!(all.contains(&"lib/render.rs".to_owned()));
}

#[test]
fn bad_input_exits_two_with_a_clear_error() {
    let env = TestEnv::new();
    let empty = env.run(&["retrieve", "  "]);
    insta::assert_snapshot!(empty, @r#"
    ------- stderr -------
    error: query must not be empty
    hint: pass what to look for, e.g. `epiphany retrieve "where are patches validated"`
    [exit status: 2]
    "#);
    let zero = env.run(&["--json", "retrieve", "--limit", "0", "walk"]);
    assert_eq!(zero.code, 2, "{zero}");
    assert_eq!(zero.json()["error"]["kind"], "usage");
    assert!(
        zero.stderr.contains("`--limit` must be greater than zero"),
        "{zero}"
    );
    let both = env.run(&["index", "--full", "--check"]);
    assert_eq!(both.code, 2, "{both}");
}

#[test]
fn index_needs_a_store() {
    let env = TestEnv::plain();
    let output = env.run(&["index"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output.stderr.contains("hint: run `epiphany init`"),
        "{output}"
    );
}

#[test]
fn quiet_retrieve_answers_with_the_exit_code() {
    let env = TestEnv::new();
    repository(&env);
    let found = env.run(&["-q", "retrieve", "render"]);
    assert_eq!((found.code, found.stdout.as_str()), (0, ""));
    let missing = env.run(&["-q", "retrieve", "zeppelin"]);
    assert_eq!((missing.code, missing.stdout.as_str()), (1, ""));
    let loud = env.run(&["retrieve", "zeppelin"]);
    assert_eq!(loud.code, 0, "{loud}");
    assert_eq!(loud.stdout, "no results for `zeppelin`\n");
}

#[test]
fn human_output_shows_ranked_paths_and_lines() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let output = env.run(&["retrieve", "validate patch"]);
    insta::assert_snapshot!(output, @r"
    src/engine.rs:3-13  (1.00)  matched validate, patch
          3      validate_patch(&change.patch)?;
          4      state.merge(change);
          5      Ok(())
          6  }
          7
          8  fn validate_patch(patch: &Patch) -> Result<(), Refusal> {
          9      if patch.fields.is_empty() {
         10          return Err(Refusal::Empty);
         11      }
         12      Ok(())
         13  }
    [exit status: 0]
    ");
}

#[test]
fn binary_non_utf8_and_large_files_are_skipped_and_listed() {
    let env = TestEnv::new();
    repository(&env);
    env.write(
        "assets/logo.png",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice(),
    );
    env.write("data/latin1.txt", b"caf\xe9 render\n".as_slice());
    env.write("data/huge.rs", "fn render() {}\n".repeat(400_000));
    env.write("data/table.json", "[\"render\"],\n".repeat(30_000));
    // A source file of 1 MB, with what it is about at its very end.
    let mut big = "fn filler() { let x = 1; }\n".repeat(38_000);
    big.push_str("fn tessellate_mesh() { subdivide(); }\n");
    env.write("src/big.rs", &big);
    // A name that is not UTF-8 cannot be a path key: listed with its bad byte replaced.
    let bad_name =
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"data/bad\xffname.rs");
    std::fs::write(env.root().join(bad_name), "fn render() {}\n").expect("write");
    let output = env.run(&["--json", "index"]);
    assert_eq!(output.code, 0, "{output}");
    let built = output.json();
    assert_eq!(
        built["skipped"],
        json!({"too_large": 2, "binary": 1, "not_utf8": 1, "unreadable": 1})
    );
    assert!(
        output
            .stderr
            .contains("`data/bad\u{FFFD}name.rs` could not be read"),
        "{output}"
    );
    assert_eq!(
        built["skipped_files"],
        json!([
            {"path": "data/bad\u{FFFD}name.rs", "reason": "unreadable", "size_bytes": 0},
            {"path": "assets/logo.png", "reason": "binary", "size_bytes": 16},
            {"path": "data/huge.rs", "reason": "too_large", "size_bytes": 6_000_000},
            {"path": "data/latin1.txt", "reason": "not_utf8", "size_bytes": 12},
            {"path": "data/table.json", "reason": "too_large", "size_bytes": 360_000},
        ])
    );
    assert!(
        output.stderr.contains("`data/huge.rs` is 5859 KiB"),
        "{output}"
    );
    assert!(!output.stderr.contains("table.json"), "{output}");
    assert_eq!(built["indexed_file_count"], 4);
    env.ok(&["index", "--check"]);
    let answer = env.json(&["retrieve", "--mode", "lexical", "render"]);
    assert_eq!(paths(&answer), ["src/render.rs"]);
    let answer = env.json(&["retrieve", "tessellate mesh"]);
    assert_eq!(answer["results"][0]["path"], "src/big.rs", "{answer}");
    assert_eq!(answer["results"][0]["start_line"], 38_001, "{answer}");
}

#[test]
fn a_corrupt_index_is_reported_still_answers_and_is_rebuilt() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let generation = generation_dir(&env);
    env.write(&format!("{generation}/index/meta.json"), "{ not json");
    let answer = env.json(&["retrieve", "render frame"]);
    assert_eq!(answer["index"]["status"], "stale");
    assert_eq!(paths(&answer)[0], "src/render.rs");
    let check = env.run(&["--json", "index", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(
        check.json()["problem"]
            .as_str()
            .expect("problem")
            .contains("does not open")
    );
    let rebuilt = env.run(&["--json", "index"]);
    assert_eq!(rebuilt.code, 0, "{rebuilt}");
    assert!(
        rebuilt.stderr.contains("rebuilt the index from scratch"),
        "{rebuilt}"
    );
    assert_eq!(rebuilt.json()["mode"], "full");
    env.ok(&["index", "--check"]);

    let generation = generation_dir(&env);
    env.write(&format!("{generation}/manifest.msgpack"), b"\x91\xc0");
    let check = env.run(&["index", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(check.stdout.contains("manifest does not decode"), "{check}");
    let rebuilt = env.json(&["index"]);
    assert_eq!(rebuilt["mode"], "full");
    assert_eq!(rebuilt["indexed_file_count"], 3);
}

#[test]
fn a_version_mismatched_manifest_is_rebuilt() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let path = format!("{}/manifest.msgpack", generation_dir(&env));
    let mut manifest: Value = rmp_serde::from_slice(&env.read(&path)).expect("manifest");
    manifest["index_revision"] = json!("tantivy-bm25-v0");
    env.write(&path, rmp_serde::to_vec_named(&manifest).expect("encode"));
    let check = env.run(&["index", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(check.stdout.contains("tantivy-bm25-v0"), "{check}");
    let answer = env.json(&["retrieve", "render"]);
    assert_eq!(answer["index"]["status"], "stale");
    let rebuilt = env.json(&["index"]);
    assert_eq!(rebuilt["mode"], "full");
    env.ok(&["index", "--check"]);
}

#[test]
fn ignored_files_are_not_indexed() {
    let env = TestEnv::new();
    repository(&env);
    env.write(".gitignore", "target/\n");
    env.write("target/debug/render.rs", "fn render() {}\n");
    env.write(".epiphanyignore", "vendor/\n");
    env.write("vendor/render.rs", "fn render() {}\n");
    env.write(".config/render.rs", "fn render() {}\n");
    env.ok(&["index"]);
    let answer = env.json(&["retrieve", "--limit", "50", "render"]);
    let found = paths(&answer);
    assert!(found.contains(&".config/render.rs".to_owned()), "{answer}");
    assert!(
        found.iter().all(|path| !path.starts_with("target/")
            && !path.starts_with("vendor/")
            && !path.starts_with(".epiphany/")),
        "{answer}"
    );
}

/// Sets the time of every file and directory under `dir` (but `.git`) to 2001, so the index
/// trusts directory times and checks freshness without walking.
fn age(dir: &std::path::Path) {
    let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() && entry.file_name() != ".git" {
            age(&path);
        }
    }
    std::fs::File::open(dir)
        .and_then(|file| file.set_modified(past))
        .expect("set time");
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        if entry.path().is_file() {
            std::fs::File::options()
                .write(true)
                .open(entry.path())
                .and_then(|file| file.set_modified(past))
                .expect("set time");
        }
    }
}

#[test]
fn stat_only_freshness_still_sees_new_edited_and_ignored_files() {
    let env = TestEnv::new();
    repository(&env);
    env.write(".gitignore", "target/\n");
    age(env.root());
    env.ok(&["index"]);
    env.ok(&["index", "--check"]);

    env.write("src/render.rs", "fn render() { rasterize() }\n");
    let check = env.run(&["--json", "index", "--check"]);
    assert_eq!(
        check.json()["dirty_paths"],
        json!(["src/render.rs"]),
        "{check}"
    );
    env.ok(&["index"]);

    env.write("src/deep/new.rs", "fn tessellate() {}\n");
    let answer = env.json(&["retrieve", "tessellate"]);
    assert_eq!(answer["index"]["dirty_paths"], json!(["src/deep/new.rs"]));
    assert_eq!(paths(&answer), ["src/deep/new.rs"]);
    env.ok(&["index"]);

    env.write(".gitignore", "target/\nsrc/deep/\n");
    let check = env.run(&["--json", "index", "--check"]);
    assert_eq!(
        check.json()["dirty_paths"],
        json!([".gitignore", "src/deep/new.rs"]),
        "{check}"
    );
}

#[test]
fn full_rebuild_renumbers_files_under_a_new_generation() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let generation = |env: &TestEnv| {
        let manifest = format!("{}/manifest.msgpack", generation_dir(env));
        let manifest: Value = rmp_serde::from_slice(&env.read(&manifest)).expect("manifest");
        manifest["generation"].as_u64().expect("generation")
    };
    assert_eq!(generation(&env), 1);
    std::fs::remove_file(env.root().join("README.md")).expect("remove");
    let rebuilt = env.json(&["index", "--full"]);
    assert_eq!(
        (
            rebuilt["mode"].as_str(),
            rebuilt["indexed_file_count"].as_u64()
        ),
        (Some("full"), Some(2))
    );
    assert_eq!(generation(&env), 2);
    let answer = env.json(&["retrieve", "render frame"]);
    assert_eq!(answer["index"]["status"], "ready");
    assert_eq!(paths(&answer)[0], "src/render.rs");
}

#[test]
fn truncated_index_segments_are_reported_and_rebuilt() {
    let env = TestEnv::new();
    repository(&env);
    env.ok(&["index"]);
    let dir = env.root().join(generation_dir(&env)).join("index");
    for entry in std::fs::read_dir(&dir).expect("index dir").flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with('.') && name != "meta.json" {
            std::fs::write(entry.path(), b"").expect("truncate");
        }
    }
    let answer = env.json(&["retrieve", "render frame"]);
    assert_eq!(answer["index"]["status"], "stale");
    assert_eq!(paths(&answer)[0], "src/render.rs");
    let check = env.run(&["--json", "index", "--check"]);
    assert_eq!(check.code, 1, "{check}");
    assert!(check.json()["problem"].is_string(), "{check}");
    let rebuilt = env.json(&["index"]);
    assert_eq!(rebuilt["mode"], "full");
    env.ok(&["index", "--check"]);
}

#[test]
fn retrieve_json_contract() {
    let env = TestEnv::plain();
    env.write("src/render.rs", RENDER);
    env.write("src/render/frame.rs", "pub struct Frame;\n");
    let output = env.run(&["--json", "retrieve", "--limit", "3", "render"]);
    let pretty = serde_json::to_string_pretty(&output.json()).expect("json");
    insta::assert_snapshot!(pretty, @r#"
    {
      "query": "render",
      "index": {
        "workspace_root": "[ROOT]",
        "index_revision": "query-time-bm25-v1",
        "status": "ready",
        "last_indexed_at_unix_seconds": 1767225600,
        "indexed_file_count": 2,
        "indexed_chunk_count": 2,
        "shards": [
          {
            "shard_id": "workspace",
            "path_prefix": ".",
            "indexed_file_count": 2,
            "indexed_chunk_count": 2,
            "status": "ready",
            "exact_available": true
          }
        ]
      },
      "search": "scan",
      "left_out_files": 0,
      "results": [
        {
          "kind": "chunk",
          "ranking": "lexical",
          "path": "src/render.rs",
          "score": 1.0,
          "start_line": 1,
          "end_line": 3,
          "excerpt": "pub fn render(frame: &Frame) -> String {\n    frame.lines.join(\"\\n\")\n}",
          "why": {
            "terms": [
              "render"
            ],
            "path": [
              "render"
            ],
            "definition": {
              "name": "render",
              "line": 1
            }
          }
        },
        {
          "kind": "chunk",
          "ranking": "lexical",
          "path": "src/render/frame.rs",
          "score": 1.0,
          "start_line": 1,
          "end_line": 1,
          "excerpt": "pub struct Frame;",
          "why": {
            "terms": [],
            "path": [
              "render"
            ]
          }
        },
        {
          "kind": "directory",
          "ranking": "exact",
          "path": "src/render",
          "score": 1.0,
          "start_line": null,
          "end_line": null,
          "excerpt": null,
          "why": {
            "terms": [],
            "path": [
              "render"
            ]
          }
        }
      ]
    }
    "#);
}

/// Issue 12, item 5: a background `index` publishes each generation atomically, so queries
/// running while it writes and commits always read a complete index (with the files changed
/// since as an overlay) and never fall back to searching the whole tree.
#[test]
fn regression_12_retrieve_never_scans_while_index_commits() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering;

    let env = TestEnv::new();
    repository(&env);
    for n in 0..40 {
        env.write(
            &format!("src/module_{n}.rs"),
            format!("pub fn helper_{n}() -> usize {{\n    {n}\n}}\n"),
        );
    }
    env.ok(&["index"]);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let root = env.root().to_path_buf();
        let mut index = env.std_command(&["-q", "index"]);
        let mut full = env.std_command(&["-q", "index", "--full"]);
        std::thread::spawn(move || {
            let mut runs = 0_u32;
            while !stop.load(Ordering::Relaxed) || runs < 4 {
                let body = format!(
                    "pub fn render(frame: &Frame) -> String {{\n    // edit {runs}\n    frame.lines.join(\"\\n\")\n}}\n"
                );
                // Replaced whole, as editors save, so a query never reads a half-written file.
                std::fs::write(root.join("render.tmp"), body).expect("edit");
                std::fs::rename(root.join("render.tmp"), root.join("src/render.rs")).expect("edit");
                let command = if runs % 3 == 2 { &mut full } else { &mut index };
                let output = command.output().expect("index");
                assert!(output.status.success(), "{output:?}");
                runs += 1;
            }
            runs
        })
    };
    let mut retrieve = env.std_command(&["--json", "retrieve", "render frame"]);
    let started = std::time::Instant::now();
    let mut queries = 0;
    while started.elapsed() < std::time::Duration::from_secs(3) || queries < 20 {
        let output = retrieve.output().expect("retrieve");
        assert!(output.status.success(), "{output:?}");
        let answer: Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_ne!(answer["search"], "scan", "{answer}");
        assert_eq!(paths(&answer)[0], "src/render.rs", "{answer}");
        queries += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let runs = writer.join().expect("writer");
    assert!(runs >= 4, "{runs} index runs");
}

/// Issue 13, item 5: BM25 statistics come from live chunks only, so an index updated
/// incrementally (its deleted chunks still in tantivy's own counts) ranks exactly like a
/// fresh full build of the same tree.
#[test]
fn incremental_and_full_index_rank_the_same() {
    let env = TestEnv::new();
    repository(&env);
    for n in 0..12 {
        let body: String = (0..30)
            .map(|line| format!("fn frame_{n}_{line}() {{ render(patch_{line}); }}\n"))
            .collect();
        env.write(&format!("src/gen_{n}.rs"), body);
    }
    env.ok(&["index"]);
    for n in 0..6 {
        env.write(&format!("src/gen_{n}.rs"), format!("fn quiet_{n}() {{}}\n"));
    }
    std::fs::remove_file(env.root().join("src/gen_7.rs")).expect("remove");
    env.write("src/late.rs", "fn render_patch() { frame(); }\n");
    assert_eq!(env.json(&["index"])["mode"], "incremental");
    let queries = ["render frame", "validate patch", "render patch frame"];
    let answers = |env: &TestEnv| -> Vec<Value> {
        queries
            .iter()
            .map(|query| {
                let answer = env.json(&["retrieve", "--mode", "lexical", "-n", "50", query]);
                assert_eq!(answer["search"], "index", "{answer}");
                answer["results"].clone()
            })
            .collect()
    };
    let incremental = answers(&env);
    assert_eq!(env.json(&["index", "--full"])["mode"], "full");
    assert_eq!(answers(&env), incremental);
}

/// Issue 13, item 2: tests rank below the code they test unless the question is about tests.
#[test]
fn tests_rank_below_their_source_unless_the_query_names_tests() {
    let env = TestEnv::new();
    env.write(
        "src/url.rs",
        "/// Encodes a URL path without encoding it twice.\npub fn encode_url_path(path: &str) -> String {\n    path.replace(' ', \"%20\")\n}\n",
    );
    env.write(
        "tests/url.rs",
        "#[test]\nfn encode_url_path_twice() {\n    assert_eq!(encode_url_path(\"a b\"), encode_url_path(&encode_url_path(\"a b\")));\n    // encode url path encode url path\n}\n",
    );
    env.ok(&["index"]);
    let source_first = env.json(&["retrieve", "--mode", "lexical", "encode url path"]);
    assert_eq!(paths(&source_first), ["src/url.rs", "tests/url.rs"]);
    let test_first = env.json(&["retrieve", "--mode", "lexical", "test encode url path"]);
    assert_eq!(paths(&test_first), ["tests/url.rs", "src/url.rs"]);
}

/// Issue 28, item 7: in hybrid mode a file that defines an identifier of a prose question
/// (`EvictionPolicy` for "eviction policy") outranks a file that only repeats its words a
/// little more often; lexical mode, without that signal, keeps the word count's order.
#[test]
fn a_file_defining_the_querys_identifier_ranks_first_in_hybrid() {
    let env = TestEnv::new();
    env.write(
        "src/store.rs",
        "/// Decides which entries leave the cache once it is full or past their timeout.\npub struct EvictionPolicy {\n    pub limit: u64,\n}\n",
    );
    env.write(
        "src/notes.rs",
        "// The eviction policy runs on a timeout; each eviction policy is checked\n// against the timeout before an eviction.\npub fn sweep() {}\n",
    );
    env.ok(&["index"]);
    let query = "eviction policy timeout";
    let lexical = env.json(&["retrieve", "--mode", "lexical", query]);
    assert_eq!(paths(&lexical), ["src/notes.rs", "src/store.rs"]);
    let hybrid = env.json(&["retrieve", query]);
    assert_eq!(paths(&hybrid), ["src/store.rs", "src/notes.rs"]);
}

/// Issue 13, item 7: `--scope state` searches the state's records, including those no longer
/// in the head state (here rolled back), and returns their ids, kinds and revisions.
#[test]
fn scope_state_finds_a_rolled_back_observation() {
    let env = TestEnv::new();
    repository(&env);
    env.update(&json!({
        "observations": [{"id": "obs-kept", "summary": "the renderer joins frame lines",
                          "source_kind": "test", "status": "ok", "evidence_ids": ["ev-kept"]}],
        "evidence": [{"id": "ev-kept", "kind": "test", "status": "ok", "summary": "kept"}]
    }));
    env.update(&json!({
        "observations": [{"id": "obs-retry", "summary": "retry storms saturate the connection pool",
                          "source_kind": "test", "status": "ok",
                          "code_refs": [{"path": "src/engine.rs"}], "evidence_ids": ["ev-retry"]}],
        "evidence": [{"id": "ev-retry", "kind": "test", "status": "ok", "summary": "pool"}]
    }));
    env.ok(&["rollback", "--to-revision", "1"]);
    let answer = env.json(&[
        "retrieve",
        "--scope",
        "state",
        "connection pool saturated by retries",
    ]);
    let hit = &answer["results"][0];
    assert_eq!(hit["kind"], "state_record", "{answer}");
    assert_eq!(hit["record"]["id"], "obs-retry", "{answer}");
    assert_eq!(hit["record"]["kind"], "observations");
    assert_eq!(hit["record"]["revision"], 2);
    assert_eq!(hit["record"]["status"], "superseded");
    assert_eq!(hit["path"], "src/engine.rs");
    let current = env.json(&["retrieve", "--scope", "state", "renderer frame lines"]);
    assert_eq!(
        current["results"][0]["record"]["id"], "obs-kept",
        "{current}"
    );
    assert_eq!(current["results"][0]["record"]["status"], "current");
    let all = env.json(&["retrieve", "--scope", "all", "-n", "20", "render frame"]);
    let kinds: Vec<String> = ranked(&all).into_iter().map(|(kind, _)| kind).collect();
    assert!(kinds.contains(&"state_record".to_owned()), "{all}");
    assert!(kinds.contains(&"chunk".to_owned()), "{all}");
    let plain = TestEnv::plain();
    let output = plain.run(&["retrieve", "--scope", "state", "anything"]);
    assert_eq!(output.code, 2, "{output}");
}

/// Issue 13, item 7: the map's words boost the code the map cites. A question phrased in a
/// node's words finds the file the node cites, though the file shares no word with it; a
/// file that matches lexically still ranks first.
#[test]
fn the_maps_words_find_the_code_the_map_cites() {
    let env = TestEnv::new();
    repository(&env);
    env.write(
        "src/throttle.rs",
        "pub fn pace(tokens: u32) -> Duration {\n    Duration::from_millis(u64::from(tokens) * 10)\n}\n",
    );
    env.write(
        "src/outbox.rs",
        "/// Queues outgoing messages; bursts are sent as they come.\npub fn enqueue(message: Message) {}\n",
    );
    env.ok(&["index"]);
    let query = "where are outgoing bursts smoothed";
    let before = env.json(&["retrieve", query]);
    assert!(
        !paths(&before).contains(&"src/throttle.rs".to_owned()),
        "{before}"
    );
    env.update(&json!({"upsert": {"architecture_nodes": [{
        "id": "burst-smoother", "title": "Burst smoother",
        "purpose": "smooths outgoing bursts of requests before they reach the network",
        "code_refs": [{"path": "src/throttle.rs"}]
    }]}}));
    for args in [
        vec!["retrieve", query],
        vec!["retrieve", "--scope", "all", query],
    ] {
        let after = env.json(&args);
        let found: Vec<String> = ranked(&after)
            .into_iter()
            .filter(|(kind, _)| kind != "state_record")
            .map(|(_, path)| path)
            .collect();
        assert_eq!(found[0], "src/outbox.rs", "{after}");
        assert!(
            found.iter().take(3).any(|path| path == "src/throttle.rs"),
            "{after}"
        );
    }
    let unrelated = env.json(&["retrieve", "render frame"]);
    assert!(
        !paths(&unrelated).contains(&"src/throttle.rs".to_owned()),
        "{unrelated}"
    );
}

/// An identifier lookup whose file holds the definition in one chunk and the most uses in
/// another shows the definition: the hit names it, so its excerpt must hold it.
#[test]
fn a_hit_that_names_a_definition_shows_it() {
    for indexed in [true, false] {
        let env = TestEnv::new();
        let uses =
            "    boolean check() { return SERIALIZE_NULLS && !SERIALIZE_NULLS; }\n".repeat(6);
        let filler = "    void step() {}\n".repeat(40);
        env.write(
            "src/Options.java",
            format!(
                "class Options {{\n    static final boolean SERIALIZE_NULLS = false;\n{filler}{uses}}}\n"
            ),
        );
        if indexed {
            env.ok(&["index"]);
        }
        let answer = env.json(&["retrieve", "SERIALIZE_NULLS"]);
        let hit = &answer["results"][0];
        assert_eq!(hit["path"], "src/Options.java", "{answer}");
        assert_eq!(hit["kind"], "definition", "{answer}");
        assert_eq!(hit["start_line"], 2, "{answer}");
        let excerpt = hit["excerpt"].as_str().expect("an excerpt");
        assert!(
            excerpt.contains("static final boolean SERIALIZE_NULLS = false;"),
            "{answer}"
        );
    }
}
