//! Hardening II (issue 11), secrets and bounded input: no secret reaches the store or git,
//! whatever field, flag or command carries it; ordinary text is stored as written; `verify`
//! names a secret planted in a record; duplicate JSON keys are refused; error problem lists
//! are capped; binary input to `distill` is summarized, not scanned byte by byte.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;
use serde_json::json;

use crate::common::Output;
use crate::common::PASSING_VERIFIER;
use crate::common::TestEnv;
use crate::common::distill_args;
use crate::common::observation_patch;
use crate::common::sealed_line;

/// A private key block, as pasted from a key file (the body is random, not a key).
const PRIVATE_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\n\
    mHGJR1m4jfXuX8v/h2/1KZNUK9IKLdbFfu0XgOYgOjC29GFfm7sFog16pAgTtpU4\n\
    r16H1UrLqE9oNTJIyJEyFzfhbIH2denCJjluEV99TARR/rjp5B42HXtVtPLx2Vm7\n\
    Pkk3+7MbjNBkM/PKsCTPUpP4J4N6OCZFkUUdUYXyVXtwwl6KcChuLc2iNkQkJnOk\n\
    -----END RSA PRIVATE KEY-----";

/// The 22 kinds of secret of issue 11, the four shapes of issue 31 and the escaped JSON of
/// issue 48: a name, the text as a user would paste it, and the raw secret that must never be
/// stored. Every value is random, not a live credential.
const SECRETS: [(&str, &str, &str); 28] = [
    (
        "AWS secret key on a credentials.csv line",
        "deploy,,AKIAQX4BZNEK7WJR2PLM,Kq8vB3nX7mZ2pL9wR4tY6uI1oE5aS0dF3gH8jK2l",
        "Kq8vB3nX7mZ2pL9wR4tY6uI1oE5aS0dF3gH8jK2l",
    ),
    (
        "curl -u with a password holding !",
        "curl -u admin:Pr0d!Adm1n#2024 https://ci.internal/api",
        "Pr0d!Adm1n#2024",
    ),
    (
        "JSON apiKey",
        r#"{"apiKey": "Zx7Qm2Lp9Vw4Kt8Rn3Bj6Hd1"}"#,
        "Zx7Qm2Lp9Vw4Kt8Rn3Bj6Hd1",
    ),
    (
        "GitLab token in a PRIVATE-TOKEN header",
        "curl --header \"PRIVATE-TOKEN: glpat-Xk4mQ9vL2pR7wT3nB8zY\" https://gitlab.internal",
        "glpat-Xk4mQ9vL2pR7wT3nB8zY",
    ),
    (
        "aws_secret_access_key assignment",
        "aws_secret_access_key = 575yx8xm5MslfY5ubiheyEd7P4zDL+ak6J0kGODK",
        "575yx8xm5MslfY5ubiheyEd7P4zDL+ak6J0kGODK",
    ),
    (
        "AWS_SECRET_ACCESS_KEY env",
        "AWS_SECRET_ACCESS_KEY=beKXgzg2sye9b2Rann76dEyTzAeKOmXRrvftva9A",
        "beKXgzg2sye9b2Rann76dEyTzAeKOmXRrvftva9A",
    ),
    (
        "DB_PASSWORD env",
        "DB_PASSWORD=Tr0ub4dor&3xQz",
        "Tr0ub4dor&3xQz",
    ),
    (
        "JSON password",
        r#"{"user": "deploy", "password": "s3cr3t-Pa55w0rd!"}"#,
        "s3cr3t-Pa55w0rd!",
    ),
    (
        "postgres URL with credentials",
        "postgres://app_user:Vx9Qp2Lm7Rk4@db.internal:5432/app",
        "Vx9Qp2Lm7Rk4",
    ),
    (
        "Stripe sk_live_",
        "sk_live_MxaOSc2mlADxVxz6mMkgGYau",
        "sk_live_MxaOSc2mlADxVxz6mMkgGYau",
    ),
    (
        "Stripe rk_live_",
        "rk_live_5fZ1T436O8zKMmGLvZWqr6hV",
        "rk_live_5fZ1T436O8zKMmGLvZWqr6hV",
    ),
    (
        "JWT",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4MjE0NTYiLCJuYW1lIjoiZGVwbG95In0.q8Zl2Wm4Xv7Tn1Kc9Rj3Hs6Pd0Yf5Gb2",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4MjE0NTYiLCJuYW1lIjoiZGVwbG95In0.q8Zl2Wm4Xv7Tn1Kc9Rj3Hs6Pd0Yf5Gb2",
    ),
    (
        "npm token",
        "npm_hipgad35l9m26mi0yhz0nartbnlzgcjn2qav",
        "npm_hipgad35l9m26mi0yhz0nartbnlzgcjn2qav",
    ),
    (
        ".npmrc _authToken",
        "//registry.npmjs.org/:_authToken=8c59f8fc-a2f7-c164-c817-0fbe7d5d5a48",
        "8c59f8fc-a2f7-c164-c817-0fbe7d5d5a48",
    ),
    (
        "Authorization: Basic",
        "Authorization: Basic ZGVwbG95Ok5nVnBxQ3pHZFdtUHlh",
        "ZGVwbG95Ok5nVnBxQ3pHZFdtUHlh",
    ),
    (
        "private key",
        PRIVATE_KEY,
        "r16H1UrLqE9oNTJIyJEyFzfhbIH2denCJjluEV99TARR/rjp5B42HXtVtPLx2Vm7",
    ),
    (
        "AWS access key id",
        "AKIADORTVNZLEY7NHZBH",
        "AKIADORTVNZLEY7NHZBH",
    ),
    (
        "GitHub token",
        "ghp_1syeefnLOpaMxxNDi9LE1Ki3ylOjt6o0NpUm",
        "ghp_1syeefnLOpaMxxNDi9LE1Ki3ylOjt6o0NpUm",
    ),
    (
        "GitHub fine-grained token",
        "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",
        "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",
    ),
    (
        "Slack bot token",
        "xoxb-9551858317-1008989723213-l1ks7RgLdi8RDeWguzDBGwBn",
        "xoxb-9551858317-1008989723213-l1ks7RgLdi8RDeWguzDBGwBn",
    ),
    (
        "Google API key",
        "AIzauzX9k1gnneGEYG1_LwiqD9jJBAciI05Fhfw",
        "AIzauzX9k1gnneGEYG1_LwiqD9jJBAciI05Fhfw",
    ),
    (
        "OpenAI key",
        "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",
        "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",
    ),
    (
        "Anthropic key",
        "sk-ant-api03-lC4LvGNWAMsI-z0oaWdfZp_lvi60ZIF8-qR38Ony1dHqceytDbKPTF-n-pGz3cW0uABBrDSxOOyBymrEqlHXm31qzZcmzAA",
        "sk-ant-api03-lC4LvGNWAMsI-z0oaWdfZp_lvi60ZIF8-qR38Ony1dHqceytDbKPTF-n-pGz3cW0uABBrDSxOOyBymrEqlHXm31qzZcmzAA",
    ),
    (
        "bearer token",
        "curl -H 'Authorization: Bearer VXk07zi5v4ISxXBWlznUleZvtEga4wO5' https://api.internal",
        "VXk07zi5v4ISxXBWlznUleZvtEga4wO5",
    ),
    (
        "password=",
        "login with password=hunter2hunter2 then",
        "hunter2hunter2",
    ),
    (
        "client_secret YAML",
        "client_secret: 4814506442b83fe2906d62e61df59a9c",
        "4814506442b83fe2906d62e61df59a9c",
    ),
    (
        "JSON in a JSON string",
        r#"{\"user\":\"deploy\",\"password\":\"Qw7Rt2Yp9Lk4Zx\"}"#,
        "Qw7Rt2Yp9Lk4Zx",
    ),
    (
        "JSON escaped twice",
        r#"{\\\"token\\\": \\\"Xk9mP2vL8qRzW3\\\"}"#,
        "Xk9mP2vL8qRzW3",
    ),
];

/// Every text field a patch can carry (`.`-joined, `[]` for a list), read from the patch schema
/// the binary prints; fields whose value is one of a fixed set of words are apart.
#[derive(Debug, Default)]
struct Fields {
    text: BTreeSet<String>,
    enums: BTreeSet<String>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn schema_fields(env: &TestEnv) -> Fields {
    let schema = env.json(&["schema", "distill"]);
    let defs = &schema["$defs"];
    let mut fields = Fields::default();
    walk_schema(
        defs,
        &defs["Patch"],
        String::new(),
        &mut Vec::new(),
        &mut fields,
    );
    fields
}

fn walk_schema(defs: &Value, node: &Value, path: String, seen: &mut Vec<String>, out: &mut Fields) {
    if let Some(reference) = node["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default().to_owned();
        if seen.contains(&name) {
            return;
        }
        seen.push(name.clone());
        walk_schema(defs, &defs[&name], path, seen, out);
        seen.pop();
        return;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alternatives) = node[key].as_array() {
            for alternative in alternatives {
                walk_schema(defs, alternative, path.clone(), seen, out);
            }
            return;
        }
    }
    // A fixed word, or a string of a fixed form (a fingerprint): one that carries text is
    // refused, never stored.
    if node.get("const").is_some() || node.get("enum").is_some() || node.get("pattern").is_some() {
        out.enums.insert(path);
        return;
    }
    let kind = match &node["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ => "",
    };
    match kind {
        "object" => {
            for (key, field) in node["properties"].as_object().into_iter().flatten() {
                walk_schema(defs, field, join(&path, key), seen, out);
            }
        }
        "array" => walk_schema(defs, &node["items"], format!("{path}[]"), seen, out),
        "string" => {
            out.text.insert(path);
        }
        _ => {}
    }
}

/// The text fields a patch fills, in the schema's path form.
fn filled_fields(value: &Value, path: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::String(_) => {
            out.insert(path.to_owned());
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| filled_fields(item, &format!("{path}[]"), out)),
        Value::Object(fields) => fields
            .iter()
            .for_each(|(key, field)| filled_fields(field, &join(path, key), out)),
        _ => {}
    }
}

/// The full patch: three writes (replace every field, upsert every collection, remove from
/// every collection) that together fill every text field a patch has.
fn full_patch() -> Vec<Value> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/full_patch.json"),
    )
    .expect("fixture");
    let full: Value = serde_json::from_str(&text).expect("fixture is JSON");
    ["replace", "upsert", "remove", "recheck"]
        .iter()
        .map(|part| full[part].clone())
        .collect()
}

/// `value` with `secret` appended to every text field (fixed-word fields left as they are).
/// References stay consistent: the same text is redacted the same way everywhere.
fn with_secret(value: &Value, path: &str, enums: &BTreeSet<String>, secret: &str) -> Value {
    match value {
        Value::String(text) if !enums.contains(path) => Value::String(format!("{text} {secret}")),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| with_secret(item, &format!("{path}[]"), enums, secret))
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| {
                    let field = with_secret(field, &join(path, key), enums, secret);
                    (key.clone(), field)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// What one kind of secret did.
#[derive(Debug, Default)]
struct Tally {
    /// Field (or flag) placements checked.
    cases: usize,
    /// Places the raw secret was found (a stored field, a store file, git, command output).
    leaks: Vec<String>,
    /// Writes that were refused (the test then proves nothing about their fields).
    refused: Vec<String>,
    /// Stored fields with neither the secret nor a redaction marker.
    unredacted: Vec<String>,
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    let needle = needle.as_bytes();
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Compares what was sent with what the record stores, field by field.
fn check_fields(
    sent: &Value,
    stored: &Value,
    path: &str,
    enums: &BTreeSet<String>,
    raw: &str,
    tally: &mut Tally,
) {
    match sent {
        Value::String(_) if !enums.contains(path) => {
            tally.cases += 1;
            let stored = stored.as_str().unwrap_or_default();
            if stored.contains(raw) {
                tally.leaks.push(format!("field `{path}`"));
            } else if !stored.contains("[REDACTED:") {
                tally.unredacted.push(format!("field `{path}`: {stored:?}"));
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let path = format!("{path}[]");
                check_fields(item, &stored[index], &path, enums, raw, tally);
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields {
                check_fields(field, &stored[key], &join(path, key), enums, raw, tally);
            }
        }
        _ => {}
    }
}

/// The newest record of the store.
/// After a promotion given secret-laden verifier text (`how` names the way it was given), the
/// stored verifier's id, kind and summary must hold none of it; a refusal is tallied.
fn check_verifier(env: &TestEnv, output: &Output, how: &str, raw: &str, tally: &mut Tally) {
    if output.code != 0 {
        tally.refused.push(format!("{how}: {output}"));
        return;
    }
    let verifier = last_verifier(env);
    for field in ["id", "kind", "summary"] {
        check_text(&verifier[field], &format!("{how}{field}"), raw, tally);
    }
}

/// The verifier evidence the last promotion recorded (the patch's last evidence record).
fn last_verifier(env: &TestEnv) -> Value {
    last_record(env)["patch"]["evidence"]
        .as_array()
        .and_then(|evidence| evidence.last())
        .cloned()
        .expect("a promotion records its verifier as evidence")
}

fn last_record(env: &TestEnv) -> Value {
    let text = std::fs::read_to_string(env.last_segment()).expect("segment");
    let line = text.lines().last().expect("a record");
    serde_json::from_str(line).expect("a record is JSON")
}

/// One stored text, as a case.
fn check_text(stored: &Value, what: &str, raw: &str, tally: &mut Tally) {
    tally.cases += 1;
    let stored = stored.as_str().unwrap_or_default();
    if stored.contains(raw) {
        tally.leaks.push(what.to_owned());
    } else if !stored.contains("[REDACTED:") {
        tally.unredacted.push(format!("{what}: {stored:?}"));
    }
}

/// Runs the binary, counting a leak when its output shows the secret.
fn run_clean(
    env: &TestEnv,
    args: &[&str],
    stdin: Option<String>,
    raw: &str,
    tally: &mut Tally,
) -> crate::common::Output {
    let output = match stdin {
        Some(stdin) => env.run_with_stdin(args, stdin),
        None => env.run(args),
    };
    if output.stdout.contains(raw) || output.stderr.contains(raw) {
        tally.leaks.push(format!("output of `{}`", args.join(" ")));
    }
    output
}

/// Every file under `.epiphany/`, and the commit that records them, must not hold the secret
/// (in any of the spellings `raws`).
fn check_store_and_git(env: &TestEnv, raws: &[&str], tally: &mut Tally) {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&env.root().join(".epiphany"), &mut files);
    for file in files {
        let bytes = std::fs::read(&file).expect("read");
        if raws.iter().any(|raw| contains(&bytes, raw)) {
            tally.leaks.push(format!("file {}", file.display()));
        }
    }
    env.commit_all("store");
    let shown = env.git_output(&["show", "--no-color", "HEAD"]);
    if raws.iter().any(|raw| contains(&shown.stdout, raw)) {
        tally.leaks.push("git show HEAD".to_owned());
    }
}

/// Places one kind of secret in every text field of the full patch, the turn id, every
/// verifier flag, a verifier file, distilled text and `init --objective`.
fn secret_in_every_field(text: &str, raw: &str, parts: &[Value], fields: &Fields) -> Tally {
    let mut tally = Tally::default();
    let env = TestEnv::bare().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    env.ok(&["init"]);
    env.write("src/lib.rs", "pub fn sym() {}\n");

    // Every field of the patch, over three writes.
    for part in parts {
        let sent = with_secret(part, "", &fields.enums, text);
        let output = run_clean(
            &env,
            &["--json", "update", "--allow-missing-paths"],
            Some(sent.to_string()),
            raw,
            &mut tally,
        );
        if output.code != 0 {
            tally.refused.push(format!("update: {output}"));
            continue;
        }
        let record = last_record(&env);
        check_fields(&sent, &record["patch"], "", &fields.enums, raw, &mut tally);
    }

    // The turn id.
    let turn = format!("turn-7 {text}");
    let output = run_clean(
        &env,
        &["--json", "update", "--turn-id", &turn],
        Some(observation_patch("turn").to_string()),
        raw,
        &mut tally,
    );
    if output.code == 0 {
        check_text(&last_record(&env)["turn_id"], "--turn-id", raw, &mut tally);
    } else if !(turn.chars().any(char::is_control) && output.code == 2) {
        // A turn id with a newline (a private key block) is refused, its text redacted.
        tally.refused.push(format!("update --turn-id: {output}"));
    }

    // The verifier flags.
    let (kind, summary, id) = (
        format!("test {text}"),
        format!("suite green {text}"),
        format!("ev-verifier {text}"),
    );
    let output = run_clean(
        &env,
        &[
            "--json",
            "promote",
            "--verifier-kind",
            &kind,
            "--verifier-status",
            "pass",
            "--verifier-summary",
            &summary,
            "--verifier-id",
            &id,
        ],
        Some(observation_patch("flags").to_string()),
        raw,
        &mut tally,
    );
    check_verifier(&env, &output, "promote --verifier-", raw, &mut tally);
    // A status that carries a secret is not accepting: the gate says so without quoting it,
    // and nothing is written.
    let before = env.store_bytes();
    let status = format!("pass {text}");
    let output = run_clean(
        &env,
        &[
            "--json",
            "promote",
            "--verifier-kind",
            "test",
            "--verifier-status",
            &status,
            "--verifier-summary",
            "green",
        ],
        Some(observation_patch("status").to_string()),
        raw,
        &mut tally,
    );
    tally.cases += 1;
    assert_eq!(output.code, 1, "{output}");
    assert_eq!(env.store_bytes(), before);

    // A verifier file (kept outside the repository, so git never sees it).
    let outside = tempfile::tempdir().expect("tempdir");
    let verifier_file = outside.path().join("verifier.json");
    let record = json!({"id": format!("ev-file {text}"), "kind": format!("test {text}"),
                        "status": "pass", "summary": format!("green {text}")});
    std::fs::write(&verifier_file, record.to_string()).expect("write");
    let output = run_clean(
        &env,
        &[
            "--json",
            "promote",
            "--verifier-file",
            verifier_file.to_str().expect("utf-8 path"),
        ],
        Some(observation_patch("file").to_string()),
        raw,
        &mut tally,
    );
    check_verifier(&env, &output, "promote --verifier-file ", raw, &mut tally);

    // Distilled text, from `--text` and from stdin, then written.
    for stdin in [false, true] {
        let log = format!("deploy log (stdin: {stdin})\nerror: {text}\n");
        let mut args = vec![
            "--json",
            "distill",
            "--source-kind",
            "shell-tool",
            "--status",
            "failed",
            "--subject",
            "deploy",
        ];
        if !stdin {
            args.extend(["--text", &log]);
        }
        let draft = run_clean(&env, &args, stdin.then(|| log.clone()), raw, &mut tally);
        assert_eq!(draft.code, 0, "{draft}");
        let output = run_clean(
            &env,
            &["--json", "update"],
            Some(draft.stdout),
            raw,
            &mut tally,
        );
        if output.code == 0 {
            let record = last_record(&env);
            check_text(
                &record["patch"]["observations"][0]["summary"],
                "distilled text",
                raw,
                &mut tally,
            );
        } else {
            tally.refused.push(format!("update of a draft: {output}"));
        }
    }

    // A store that was only ever written redacted verifies clean.
    let verify = env.run(&["--json", "verify"]);
    assert_eq!(
        verify.code, 0,
        "redacted records must verify clean:\n{verify}"
    );
    check_store_and_git(&env, &[raw], &mut tally);

    // `init --objective`.
    let fresh = TestEnv::bare().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    let objective = format!("ship it {text}");
    let output = run_clean(
        &fresh,
        &["--json", "init", "--objective", &objective],
        None,
        raw,
        &mut tally,
    );
    if output.code == 0 {
        check_text(
            &last_record(&fresh)["patch"]["objective"],
            "init --objective",
            raw,
            &mut tally,
        );
        check_store_and_git(&fresh, &[raw], &mut tally);
    } else {
        tally.refused.push(format!("init --objective: {output}"));
    }
    tally
}

/// Issues 11, 31 and 48: 28 kinds of secret × every text field a patch can carry, plus `--turn-id`, the
/// verifier flags and file, distilled text and `init --objective`; the store files and `git
/// show` must never hold one.
#[test]
#[allow(clippy::print_stderr)]
fn no_secret_reaches_the_store_from_any_field() {
    let probe = TestEnv::new();
    let fields = schema_fields(&probe);
    let parts = full_patch();
    let mut filled = BTreeSet::new();
    for part in &parts {
        filled_fields(part, "", &mut filled);
    }
    let missing: Vec<&String> = fields.text.difference(&filled).collect();
    assert!(
        missing.is_empty(),
        "the full patch fixture leaves text fields empty: {missing:?}"
    );
    assert!(fields.text.len() > 300, "{} text fields", fields.text.len());

    let tallies = Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((name, text, raw)) = SECRETS.get(index) else {
                        return;
                    };
                    let tally = secret_in_every_field(text, raw, &parts, &fields);
                    tallies.lock().expect("lock").push((*name, tally));
                }
            });
        }
    });
    let tallies = tallies.into_inner().expect("lock");
    let cases: usize = tallies.iter().map(|(_, tally)| tally.cases).sum();
    let mut failures = Vec::new();
    for (name, tally) in &tallies {
        for leak in &tally.leaks {
            failures.push(format!("{name}: leaked in {leak}"));
        }
        for refused in &tally.refused {
            failures.push(format!("{name}: refused {refused}"));
        }
        for field in &tally.unredacted {
            failures.push(format!("{name}: not redacted in {field}"));
        }
    }
    eprintln!(
        "secrets: {} kinds x {} text fields (+ flags, files, commands): {cases} cases, {} leaks, {} refused",
        tallies.len(),
        fields.text.len(),
        tallies.iter().map(|(_, t)| t.leaks.len()).sum::<usize>(),
        tallies.iter().map(|(_, t)| t.refused.len()).sum::<usize>(),
    );
    assert_eq!(tallies.len(), SECRETS.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Prose, code, placeholders and the store's own hashes are stored exactly as written.
#[test]
fn ordinary_text_is_never_redacted() {
    let env = TestEnv::new();
    let first = env.update(&observation_patch("first"));
    let record_id = first["id"].as_str().expect("id").to_owned();
    let head = {
        env.commit_all("first");
        env.git(&["rev-parse", "HEAD"]).trim().to_owned()
    };
    let mut notes: Vec<String> = [
        "password: see vault",
        "the password is in the team vault; ask ops",
        "password: \"see the vault\"",
        "rotate the token before Friday; the secret manager holds it",
        "fn token_count(text: &str) -> usize",
        "let api_key = config.api_key;",
        "secret_key = os.environ[\"SECRET_KEY\"]",
        "token = get_token()",
        "max_tokens = 4096",
        "token_count: 12345678",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your password>",
        "password = \"changeme\"",
        "api_key: ********",
        "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
        "Authorization: required for every call",
        "the bearer of the request pays",
        "postgres://localhost:5432/app",
        "https://example.org/docs?page=2#keys",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "uuid 8f2b9c4e-71a3-4d5f-9e6b-2c8a0d1f3b7e",
        "src/policy/secrets/mod.rs:10-42#find_secrets",
        "The tokenizer splits on whitespace; keys are sorted; passwords are hashed with argon2id.",
        "cargo test --locked --test integration test_hardening",
        "AKIA is the prefix of an AWS access key id",
    ]
    .iter()
    .map(|note| note.to_string())
    .collect();
    notes.push(format!("rolled back to record {record_id}"));
    notes.push(format!("parents: [\"{record_id}\"]"));
    notes.push(format!("git_head {head}"));
    notes.push(format!("commit {}", &head[..12]));
    // Real code and prose: this project's own store and command sources and its README.
    for file in [
        "src/state/store/mod.rs",
        "src/state/store/history.rs",
        "src/state/store/lock.rs",
        "src/state/store/maintenance.rs",
        "src/state/store/read.rs",
        "src/state/store/tail.rs",
        "src/state/store/write.rs",
        "src/cmd/update.rs",
        "README.md",
    ] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .expect("source");
        notes.extend(
            text.lines()
                .filter(|line| !line.trim().is_empty())
                .map(str::to_owned),
        );
    }
    let output = env.run_with_stdin(
        &["--json", "update"],
        json!({"scratch": {"notes": notes}}).to_string(),
    );
    assert_eq!(output.code, 0, "{output}");
    let report = output.json();
    let stored = env.json(&["show"])["scratch"]["notes"].clone();
    let changed: Vec<String> = notes
        .iter()
        .enumerate()
        .filter(|(index, note)| stored[index].as_str() != Some(note.as_str()))
        .map(|(_, note)| note.clone())
        .collect();
    assert!(
        changed.is_empty() && report.get("redactions").is_none(),
        "{} false alarm(s) in {} texts: {changed:#?}\n{report}",
        changed.len(),
        notes.len()
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// A record written before redaction existed (here sealed by hand with a valid id) is named by
/// `verify`: the record, the place and the kind, never the value. So is a snapshot that folds it.
#[test]
fn verify_names_a_secret_already_in_the_store() {
    let raw = "ghp_1syeefnLOpaMxxNDi9LE1Ki3ylOjt6o0NpUm";
    let env = TestEnv::bare().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    env.ok(&["init"]);
    let first = env.update(&json!({"objective": "clean"}));
    let parent = first["id"].as_str().expect("id").to_owned();
    let (id, line) = sealed_line(&json!({
        "parents": [parent],
        "at": "2026-01-01T00:10:00Z",
        "source": "update",
        "turn_id": "old-turn",
        "changed_fields": ["objective"],
        "patch": {"objective": format!("deploy with {raw}")}
    }));
    let segment = env.last_segment();
    let mut text = std::fs::read_to_string(&segment).expect("segment");
    text.push_str(&line);
    std::fs::write(&segment, text).expect("plant");
    // A later write folds the planted record into a snapshot too.
    env.update(&json!({"scratch": {"notes": ["later"]}}));

    let output = env.run(&["--json", "verify"]);
    assert_eq!(output.code, 1, "{output}");
    assert!(
        !output.stdout.contains(raw) && !output.stderr.contains(raw),
        "{output}"
    );
    let report = output.json();
    let messages: Vec<&str> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|problem| problem["message"].as_str())
        .collect();
    let record_problem = format!(
        "record {} holds a secret: github_pat at `patch.objective`",
        &id[..12]
    );
    assert!(messages.contains(&record_problem.as_str()), "{report}");
    assert!(
        messages.iter().any(|m| m.starts_with("snapshot ")
            && m.ends_with("holds a secret: github_pat at `state.objective`")),
        "{report}"
    );
    assert!(
        output.stderr.contains("rotate the secret"),
        "{}",
        output.stderr
    );

    // Rolling back to the planted revision copies nothing: the rollback record names the
    // records it restores, so no new copy of the secret is written, and `verify` still names
    // the record that holds it.
    let rollback = env.run(&["--json", "rollback", "--to-revision", "2"]);
    assert_eq!(rollback.code, 0, "{rollback}");
    let restored = std::fs::read_to_string(env.last_segment()).expect("segment");
    let last = restored.lines().last().expect("a record");
    assert!(
        last.contains("\"source\":\"rollback\"") && !last.contains(raw),
        "{last}"
    );
    let report = env.json_allowing(&["verify"], 1);
    assert!(report.to_string().contains(&record_problem), "{report}");
}

#[test]
fn duplicate_json_keys_are_refused_naming_key_and_path() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let output = env.run_with_stdin(
        &["update"],
        r#"{"objective": "a", "scratch": {"notes": ["x"], "notes": ["y"]}, "objective": "b"}"#,
    );
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output
            .stderr
            .contains("  - scratch.notes: duplicate key `notes`"),
        "{output}"
    );
    assert!(
        output
            .stderr
            .contains("  - objective: duplicate key `objective`"),
        "{output}"
    );
    let promote: Vec<&str> = std::iter::once("--json").chain(PASSING_VERIFIER).collect();
    let envelope = env.run_with_stdin(
        &promote,
        r#"{"expected_revision": 0, "patch": {"objective": "a"}, "patch": {"objective": "b"}}"#,
    );
    assert_eq!(envelope.code, 2, "{envelope}");
    assert_eq!(
        envelope.json()["error"]["problems"],
        json!([{"path": "patch", "message": "duplicate key `patch`"}])
    );
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn a_refusal_with_many_problems_lists_the_first_hundred_and_counts_the_rest() {
    const OBSERVATIONS: usize = 20_000;
    let env = TestEnv::new();
    let before = env.store_bytes();
    let observations: Vec<Value> = (0..OBSERVATIONS)
        .map(|n| {
            json!({"id": format!("obs-{n}"), "summary": "s", "source_kind": "test",
                   "status": "ok", "evidence_ids": [format!("ev-missing-{n}")]})
        })
        .collect();
    let patch = json!({ "observations": observations }).to_string();
    let human = env.run_with_stdin(&["update"], patch.clone());
    assert_eq!(
        human.code,
        2,
        "{}",
        &human.stderr[..human.stderr.len().min(2000)]
    );
    let listed = human
        .stderr
        .lines()
        .filter(|l| l.starts_with("  - "))
        .count();
    assert_eq!(listed, 100, "{}", &human.stderr[..2000]);
    assert!(
        human.stderr.len() < 64 * 1024,
        "{} bytes",
        human.stderr.len()
    );
    let json = env.run_with_stdin(&["--json", "update"], patch);
    let error = &json.json()["error"];
    assert_eq!(error["problems"].as_array().map(Vec::len), Some(100));
    let omitted = error["problems_omitted"].as_u64().expect("a count");
    assert!(omitted as usize >= OBSERVATIONS - 100, "{error}");
    assert!(
        human
            .stderr
            .contains(&format!("  ... and {omitted} more problem(s) not listed")),
        "{}",
        &human.stderr[human.stderr.len().saturating_sub(500)..]
    );
    assert_eq!(env.store_bytes(), before);
}

#[test]
fn binary_input_to_distill_is_summarized_not_scanned() {
    const SIZE: usize = 64 * 1024 * 1024;
    let env = TestEnv::new();
    let before = env.store_bytes();
    let mut bytes = vec![0u8; SIZE];
    let mut seed: u32 = 0x1234_5678;
    for byte in bytes.iter_mut().step_by(3) {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *byte = (seed >> 24) as u8;
    }
    let started = std::time::Instant::now();
    let output = env.run_with_stdin(
        &distill_args("shell-tool", &["--json", "--subject", "cat core.dump"]),
        bytes,
    );
    let elapsed = started.elapsed();
    assert_eq!(output.code, 0, "{output}");
    let summary = output.json()["patch"]["observations"][0]["summary"]
        .as_str()
        .expect("summary")
        .to_owned();
    assert!(
        summary.starts_with(&format!(
            "cat core.dump: binary input, {SIZE} bytes (crc32 "
        )),
        "{summary}"
    );
    assert!(
        output
            .stderr
            .contains(&format!("warning: stdin is binary ({SIZE} bytes)")),
        "{output}"
    );
    // Byte by byte this took over 20 s; counted and checksummed it is a fraction of that.
    assert!(elapsed.as_secs() < 15, "{elapsed:?}");
    // Text with a stray Latin-1 letter is still text.
    let latin = env.run_with_stdin(
        &distill_args("shell-tool", &["--json"]),
        b"na\xefve build log: finished in 3s\n".to_vec(),
    );
    assert_eq!(latin.code, 0, "{latin}");
    assert!(
        latin.json()["patch"]["observations"][0]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("build log: finished in 3s")),
        "{latin}"
    );
    assert_eq!(env.store_bytes(), before);
}

/// Everything the store holds as text: every rollout segment, and every snapshot (tracked or
/// cached) as `textconv` shows it.
fn stored_text(env: &TestEnv) -> String {
    let mut text = env.rollout_text();
    for dir in [".epiphany/snapshots", ".epiphany/cache/snapshots"] {
        for name in crate::common::snapshot_names(&env.root().join(dir)) {
            let path = format!("{dir}/{name}");
            text.push_str(&env.ok(&["textconv", &path]).stdout);
        }
    }
    text
}

/// Findings 5: `distill` cut the summary to 320 characters before redacting it, so the start of
/// a credential cut by the limit (or by the digest's cap on a line) was drafted, stored by
/// `update`, and passed `verify`. Now the text is redacted first; nothing of the secret is
/// stored, and the summary keeps to the limit.
#[test]
fn a_distilled_summary_holds_no_part_of_a_secret() {
    let env = TestEnv::new().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    let github = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
    let aws = "AKIAIOSFODNN7EXAMPLE";
    let cases = [
        (
            "test",
            format!("{} {github} tail", "a".repeat(290)),
            "github_token",
        ),
        (
            "test",
            format!("{} {aws} tail", "a".repeat(300)),
            "aws_access_key",
        ),
        // A tool's line is kept to 321 characters: the cut goes through the token.
        (
            "shell-tool",
            format!("error {} {github} tail\nfinished", "a".repeat(300)),
            "",
        ),
    ];
    for (kind, text, redacted) in &cases {
        let draft = env.ok(&distill_args(kind, &["--json", "--text", text]));
        let summary = draft.json()["patch"]["observations"][0]["summary"]
            .as_str()
            .expect("summary")
            .to_owned();
        assert!(summary.chars().count() <= 320, "{summary}");
        if !redacted.is_empty() {
            assert!(
                draft
                    .stderr
                    .contains(&format!("redacted 1 {redacted} secret(s) from the draft")),
                "{draft}"
            );
        }
        let written = env.run_with_stdin(&["--json", "update"], draft.stdout);
        assert_eq!(written.code, 0, "{written}");
    }
    let stored = stored_text(&env);
    assert!(stored.contains("[REDACTED:github_token] tail"), "{stored}");
    for start in ["ghp_", "1234567890abc", "AKIAIOSFODNN7EXA"] {
        assert!(!stored.contains(start), "`{start}` is stored:\n{stored}");
    }
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Finding 6: the AWS secret access key in its usual spellings, a quoted passphrase, Azure,
/// Hugging Face and SendGrid keys, and keys glued to an identifier were stored as written.
#[test]
fn common_credentials_and_glued_tokens_are_redacted_before_writing() {
    let env = TestEnv::new().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    let notes = [
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
        "PASSWORD: \"correct horse battery staple\"",
        "AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZab==",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "my_AKIAIOSFODNN7EXAMPLE",
        "id_ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
        "xAKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7EXAMPLE_suffix",
    ];
    let output = env.run_with_stdin(
        &["--json", "update"],
        json!({"scratch": {"notes": notes}}).to_string(),
    );
    assert_eq!(output.code, 0, "{output}");
    let redacted: usize = output.json()["redactions"]
        .as_array()
        .expect("redactions")
        .iter()
        .map(|r| r["count"].as_u64().expect("count") as usize)
        .sum();
    assert_eq!(redacted, notes.len(), "{output}");
    let stored = stored_text(&env);
    for raw in [
        "wJalrXUtnFEMI",
        "correct horse",
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "hf_abc",
        "SG.abc",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_1234567890",
    ] {
        assert!(!stored.contains(raw), "`{raw}` is stored:\n{stored}");
    }
    assert!(stored.contains("my_[REDACTED:aws_access_key]"), "{stored}");
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Finding D2: an error that quotes its input quoted a key glued to an identifier.
#[test]
fn a_refusal_never_quotes_a_key_glued_to_an_identifier() {
    let env = TestEnv::new();
    let before = env.store_bytes();
    let output = env.run_with_stdin(
        &["--json", "update"],
        r#"{"objective":"x","my_AKIAIOSFODNN7EXAMPLE":1}"#,
    );
    assert_eq!(output.code, 2, "{output}");
    assert!(
        output.stdout.contains("my_[REDACTED:aws_access_key]"),
        "{output}"
    );
    assert!(
        !output.stdout.contains("AKIAIOSFODNN7EXAMPLE")
            && !output.stderr.contains("AKIAIOSFODNN7EXAMPLE"),
        "{output}"
    );
    assert_eq!(env.store_bytes(), before);
}

/// Issue 31: a secret typed where another value goes is never repeated by the usage error that
/// refuses it, on the command line (text and `--json`) or through MCP.
#[test]
fn usage_errors_never_repeat_what_was_typed() {
    let env = TestEnv::new();
    let token = "ghp_1syeefnLOpaMxxNDi9LE1Ki3ylOjt6o0NpUm";
    let password = "hunter2-Secret!";
    let key_line = "mHGJR1m4jfXuX8v";
    let before = env.store_bytes();
    for args in [
        vec!["update", "--expected-revision", token],
        vec!["--json", "update", "--expected-revision", token],
        vec!["update", "--turn-id", PRIVATE_KEY],
        vec!["log", "--limit", password],
        vec!["--json", "log", "--limit", password],
        vec!["scene", token],
        vec![token],
    ] {
        let output = env.run_with_stdin(&args, r#"{"objective": "x"}"#);
        assert_eq!(output.code, 2, "{args:?}: {output}");
        for raw in [token, password, key_line] {
            assert!(
                !output.stdout.contains(raw) && !output.stderr.contains(raw),
                "{args:?} repeats `{raw}`: {output}"
            );
        }
    }
    assert_eq!(env.store_bytes(), before);
    let call = |id: u32, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "test", "version": "1"}}})
        .to_string(),
        call(
            2,
            "update",
            json!({"expected_revision": token, "input": "{}"}),
        ),
        call(3, "retrieve", json!({"query": "q", "mode": password})),
        call(4, "pressure", json!({"used": format!("12{password}")})),
        call(
            5,
            "update",
            json!({"turn_id": PRIVATE_KEY, "input": r#"{"objective": "x"}"#}),
        ),
        call(6, "log", json!({"limit": token})),
    ]
    .join("\n");
    let output = env.run_with_stdin(&["mcp"], input);
    assert_eq!(output.code, 0, "{output}");
    let answers: Vec<Value> = output
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(answers.len(), 6, "{output}");
    for answer in &answers[1..] {
        // The private key as a turn id is redacted, and the write then goes through.
        if answer["id"] != 5 {
            assert_eq!(answer["result"]["isError"], true, "{answer}");
        }
        let text = answer.to_string();
        for raw in [token, password, key_line] {
            assert!(!text.contains(raw), "repeats `{raw}`: {answer}");
        }
    }
    assert!(!env.rollout_text().contains(key_line));
}

/// Issue 48: the shapes that still reached the store: escaped JSON, a password in a title (the
/// id was made of its words), credential files and command lines, bare bot tokens, and tokens
/// followed by punctuation. A name, the text, and the raw secret. Random values, no live one.
const ISSUE_48: [(&str, &str, &str); 16] = [
    (
        "escaped JSON",
        r#"{\"password\":\"Hx7Kq2Lm9Pw4\"}"#,
        "Hx7Kq2Lm9Pw4",
    ),
    (
        "JSON escaped twice",
        r#"{\\\"token\\\": \\\"Xk9mP2vL8qRzW3\\\"}"#,
        "Xk9mP2vL8qRzW3",
    ),
    (
        "a password in a title",
        "rotate db password=Jd4Rw8Nc2Vb6 for ops",
        "Jd4Rw8Nc2Vb6",
    ),
    (
        "a ~/.pgpass line",
        "db.example.com:5432:app:deploy:S3cr3tPassw0rd",
        "S3cr3tPassw0rd",
    ),
    (
        "mysql -p",
        "mysql -uroot -pVx9Qp2Lm7Rk4 app",
        "Vx9Qp2Lm7Rk4",
    ),
    (
        "a .netrc entry",
        "machine api.example.com login deploy password Zq8vN3xL5pW",
        "Zq8vN3xL5pW",
    ),
    (
        "sshpass -p",
        "sshpass -p Wm4Tn8Bq2Rz6 ssh deploy@host",
        "Wm4Tn8Bq2Rz6",
    ),
    (
        "htpasswd Apache MD5",
        "admin:$apr1$Xk9mP2vL$Q8wZ3nR5tY7uI1oE5aS0d.",
        "Q8wZ3nR5tY7uI1oE5aS0d",
    ),
    (
        "htpasswd bcrypt",
        "deploy:$2y$05$abcdefghijklmnopqrstuuN7JzGpXxEJAr3LvTBk8mI1H0Vo/Cw9e",
        "N7JzGpXxEJAr3LvTBk8mI1H0Vo",
    ),
    (
        "htpasswd SHA-1",
        "ops:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
        "W6ph5Mm5Pz8GgiULbPgzG37mj9g",
    ),
    (
        "a bare Telegram bot token",
        "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 is live",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    (
        "a DigitalOcean token before a full stop",
        "use dop_v1_4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f.",
        "4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f",
    ),
    (
        "a DigitalOcean OAuth token before a colon",
        "doo_v1_9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d: revoked",
        "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d",
    ),
    (
        "a Vault token before a comma",
        "tokens hvs.CAESIJk8mP2vL8qRzW3nB5tY7uI1oE5aS0dF, then more",
        "CAESIJk8mP2vL8qRzW3nB5tY7uI1oE5aS0dF",
    ),
    (
        "a Vault batch token in parentheses",
        "(hvb.AAAAAQKx7Rm2Lp9Vw4Kt8Rn3Bj6Hd1Yq5)",
        "AAAAAQKx7Rm2Lp9Vw4Kt8Rn3Bj6Hd1Yq5",
    ),
    (
        "a Square token at the end of a sentence",
        "rotate sq0atp-Wz5nK8rT2mQ7vL4xB9cY3d.",
        "Wz5nK8rT2mQ7vL4xB9cY3d",
    ),
];

/// One shape written through every one-line write and its flags (nodes `a` and `b` stand),
/// `--turn-id`, `update`, `--dry-run`, `distill`, refused as a code ref and echoed by
/// `retrieve`; what a run printed that shows the secret (as typed, or lowercased as an id's
/// words would hold it) is returned.
fn write_everywhere(env: &TestEnv, n: usize, text: &str, raws: &[String]) -> Vec<String> {
    let mut leaks = Vec::new();
    let (note, title, next) = (format!("n{n}"), format!("t{n}"), format!("next {n}"));
    let node = format!("node-{n}");
    let update = json!({"objective": text, "scratch": {"notes": [text]}}).to_string();
    let runs: [(Vec<&str>, Option<&str>); 18] = [
        (vec!["note", text], None),
        (
            vec!["--json", "note", &note, "--dry-run", "--turn-id", text],
            None,
        ),
        (vec!["note", &note, "--turn-id", text], None),
        (vec!["subgoal", "add", text], None),
        (vec!["--json", "subgoal", "add", &title, "--id", text], None),
        (vec!["subgoal", "done", text], None),
        (vec!["backlog", "add", text], None),
        (
            vec!["--json", "backlog", "add", &title, "--summary", text],
            None,
        ),
        (vec!["node", "set", &node, "--purpose", text], None),
        (vec!["edge", "add", "a", "b", "--kind", text], None),
        (
            vec![
                "--json", "edge", "add", "a", "b", "--kind", "k", "--id", text,
            ],
            None,
        ),
        (vec!["note", &note, "--ref", text], None),
        (
            vec!["checkpoint", "set", "--focus", text, "--next", &next],
            None,
        ),
        (
            vec![
                "--json",
                "checkpoint",
                "set",
                "--summary",
                text,
                "--question",
                text,
            ],
            None,
        ),
        (vec!["update", "--turn-id", text], Some(&update)),
        (vec!["--json", "update", "--dry-run"], Some(&update)),
        (
            distill_args("shell-tool", &["--json", "--text", text]),
            None,
        ),
        (vec!["retrieve", text], None),
    ];
    for (args, stdin) in runs {
        let output = match stdin {
            Some(stdin) => env.run_with_stdin(&args, stdin),
            None => env.run(&args),
        };
        assert!(output.code == 0 || output.code == 2, "{args:?}: {output}");
        for raw in raws {
            if output.stdout.contains(raw.as_str()) || output.stderr.contains(raw.as_str()) {
                leaks.push(format!("output of `{}`: {output}", args.join(" ")));
            }
        }
    }
    leaks
}

/// Issue 48: each shape, through `note`, `subgoal add`, `backlog add`, `node set --purpose`,
/// `checkpoint set`, `--turn-id` and `update`, never reaches a file under `.epiphany/` or the
/// commit that records it (as typed, or lowercased into an id), and no command prints it.
#[test]
fn issue_48_shapes_never_reach_the_store_or_the_output() {
    let env = TestEnv::new().with_var("EPIPHANY_SNAPSHOT_EVERY", "1");
    for node in ["a", "b"] {
        env.ok(&["node", "set", node, "--purpose", "an end"]);
    }
    let mut leaks = Vec::new();
    for (n, (name, text, raw)) in ISSUE_48.iter().enumerate() {
        let raws = [raw.to_string(), raw.to_lowercase()];
        for leak in write_everywhere(&env, n, text, &raws) {
            leaks.push(format!("{name}: {leak}"));
        }
        let mut tally = Tally::default();
        check_store_and_git(&env, &[&raws[0], &raws[1]], &mut tally);
        leaks.extend(tally.leaks.iter().map(|leak| format!("{name}: in {leak}")));
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    // What was written is there, redacted: the subgoal made from a title holding a password is
    // named by the redaction.
    let state = env.json(&["show"]);
    let ids: Vec<&str> = (state["subgoals"].as_array().expect("subgoals").iter())
        .filter_map(|subgoal| subgoal["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"sg-rotate-db-password-redacted-generic-api"),
        "{ids:?}"
    );
    assert_eq!(env.json(&["verify"])["ok"], true);
}

/// Issue 48: look-alikes of the new shapes are stored as written.
#[test]
fn look_alikes_of_the_issue_48_shapes_are_stored_as_written() {
    let env = TestEnv::new();
    let notes = [
        "mysql -u root -p app",
        "mysql -h db -P 3306 -p",
        "ssh -p2222 host && mkdir -p build",
        "localhost:5432:app",
        "db.example.com:5432:app:deploy",
        "src/main.rs:12:5: error: unused variable",
        "localhost:5432:mydb:postgres:postgres",
        "the machine learning login page password reset",
        "bcrypt hashes start with $2y$ and a cost",
        "the {SHA} prefix marks a SHA-1 hash",
        "12345:abcdefghijklmnopqrstuvwxyzabcdefghi",
        "hvs.configuration_of_the_vault_server",
        r#"{\"password\": \"see the vault\"}"#,
        r#"{\"token_count\": \"12345678\"}"#,
    ];
    let output = env.run_with_stdin(
        &["--json", "update"],
        json!({"scratch": {"notes": notes}}).to_string(),
    );
    assert_eq!(output.code, 0, "{output}");
    assert!(output.json().get("redactions").is_none(), "{output}");
    assert_eq!(env.json(&["show"])["scratch"]["notes"], json!(notes));
}
