//! `mcp`: a real Model Context Protocol session over stdio, by hand and through the official
//! MCP Python and TypeScript SDKs (`tests/mcp/sdk_client.py`, `tests/mcp/sdk_client.mjs`).

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

/// The text of a tool call's first content item.
pub fn result_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

/// A running `epiphany mcp` and its stdio.
pub struct Session {
    child: std::process::Child,
    /// `None` once the session was closed.
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Session {
    pub fn start(env: &TestEnv) -> Session {
        Session::start_with(env, &[])
    }

    /// A session of `epiphany mcp` with `options` (`--tools read`).
    pub fn start_with(env: &TestEnv, options: &[&str]) -> Session {
        Session::spawn(env.std_command(&[&["mcp"], options].concat()))
    }

    /// A session of the server `command` starts.
    pub fn spawn(mut command: std::process::Command) -> Session {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Session {
            child,
            stdin: Some(stdin),
            stdout,
        }
    }

    pub fn send(&mut self, message: &Value) {
        self.send_line(message.to_string().as_bytes());
    }

    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        stdin.write_all(line).expect("send");
        stdin.write_all(b"\n").expect("send");
        stdin.flush().expect("flush");
    }

    /// Ends the session as a client does, closing the server's stdin, and waits until the
    /// server has finished what it was running and exited.
    pub fn close(&mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("the server exits");
        assert!(status.success(), "{status}");
    }

    pub fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).expect("a JSON-RPC response")
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.receive();
        assert_eq!(response["id"], id, "{response}");
        response
    }

    pub fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let response = self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        response["result"].clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_client_lists_and_calls_the_tools() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    let init = session.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test-client", "version": "1"}
        }),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "epiphany");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let list = session.request(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    for expected in [
        "show", "update", "distill", "promote", "scene", "reorient", "prompt", "verify",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let show = tools.iter().find(|t| t["name"] == "show").expect("show");
    assert_eq!(show["annotations"]["readOnlyHint"], true);
    assert_eq!(
        show["inputSchema"]["properties"]["revision"]["type"],
        json!(["integer", "string"])
    );
    let update = tools
        .iter()
        .find(|t| t["name"] == "update")
        .expect("update");
    assert_eq!(update["annotations"]["readOnlyHint"], false);

    let patch = json!({"objective": "answer through MCP"}).to_string();
    let written = session.call(3, "update", json!({"input": patch}));
    assert_eq!(written["isError"], false, "{written}");
    assert_eq!(written["structuredContent"]["revision"], 1, "{written}");

    let shown = session.call(4, "show", json!({}));
    assert_eq!(
        shown["structuredContent"]["objective"], "answer through MCP",
        "{shown}"
    );
    let text: Value = serde_json::from_str(shown["content"][0]["text"].as_str().expect("text"))
        .expect("json text");
    assert_eq!(text["revision"], 1);

    let conflict = session.call(5, "update", json!({"input": patch, "expected_revision": 0}));
    assert_eq!(conflict["isError"], true, "{conflict}");
    assert!(
        conflict.get("structuredContent").is_none(),
        "an error does not claim to match the report schema: {conflict}"
    );
    let error: Value = serde_json::from_str(conflict["content"][0]["text"].as_str().expect("text"))
        .expect("the error document");
    assert_eq!(error["error"]["kind"], "conflict", "{conflict}");

    let unknown_flag = session.call(6, "show", json!({"colour": "red"}));
    assert_eq!(unknown_flag["isError"], true, "{unknown_flag}");

    let missing = session.request(7, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let unknown_method = session.request(8, "resources/list", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    assert_eq!(env.json(&["show"])["objective"], "answer through MCP");
}

#[test]
fn broken_lines_and_batches_get_the_answers_the_specification_names() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    // JSON-RPC 2.0, section 5.1: -32700 parse error, -32600 invalid request, -32601 method not
    // found, -32602 invalid params; an id that cannot be read is answered as null.
    session.send_line(b"{\"jsonrpc\": \"2.0\", \"id\": 1,");
    let parse = session.receive();
    assert_eq!(
        (parse["id"].clone(), parse["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    session.send_line(b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"p\xffing\"}");
    let not_utf8 = session.receive();
    assert_eq!(not_utf8["error"]["code"], -32700, "{not_utf8}");
    session.send(&json!({"jsonrpc": "2.0", "id": 3, "params": {}}));
    let no_method = session.receive();
    assert_eq!(
        (no_method["id"].clone(), no_method["error"]["code"].clone()),
        (json!(3), json!(-32600))
    );
    let oops = session.request(
        4,
        "tools/call",
        json!({"name": "show", "arguments": "oops"}),
    );
    assert_eq!(oops["error"]["code"], -32602, "{oops}");
    assert!(
        oops["error"]["message"]
            .as_str()
            .expect("message")
            .contains("`arguments` must be an object")
    );

    // MCP 2025-03-26, "Batching": servers MUST support receiving JSON-RPC batches.
    session.send(&json!([
        {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "show", "arguments": {}}}
    ]));
    let batch = session.receive();
    let answers = batch.as_array().expect("a batch answer");
    assert_eq!(answers.len(), 2, "{batch}");
    assert_eq!(answers[0]["id"], 5);
    assert_eq!(answers[1]["id"], 6);
    assert_eq!(answers[1]["result"]["isError"], false, "{batch}");
    session.send(&json!([]));
    assert_eq!(session.receive()["error"]["code"], -32600);

    // And the server is still serving.
    let pong = session.request(7, "ping", json!({}));
    assert_eq!(pong["result"], json!({}));
}

#[test]
fn tool_errors_name_the_tools_arguments() {
    let env = TestEnv::new();
    let mut session = Session::start(&env);
    let text = result_text;
    let missing = session.call(1, "pressure", json!({}));
    assert_eq!(missing["isError"], true);
    assert_eq!(
        text(&missing),
        "`pressure` needs the argument `used` (an integer)"
    );
    let wrong = session.call(2, "pressure", json!({"used": "many"}));
    assert_eq!(
        text(&wrong),
        "argument `used` must be an integer, not a string that is not a whole number (4 characters)"
    );
    let unknown = session.call(3, "retrieve", json!({"query": "q", "path_prefix": "src"}));
    assert!(text(&unknown).starts_with("`retrieve` has no argument `path_prefix`; its arguments are: query, limit, path_prefixes, mode"), "{unknown}");
    let choice = session.call(4, "retrieve", json!({"query": "q", "mode": "fuzzy"}));
    assert_eq!(
        text(&choice),
        "argument `mode` must be one of hybrid, exact, lexical, semantic (a string of 5 characters was given)"
    );
    // The command's own complaints are renamed too.
    let empty = session.call(5, "init", json!({"objective": ""}));
    assert_eq!(empty["isError"], true, "{empty}");
    assert!(
        text(&empty).contains("`objective` must not be empty"),
        "{empty}"
    );
    assert!(!text(&empty).contains("--objective"), "{empty}");
}

#[test]
fn structured_content_matches_the_output_schema() {
    let env = TestEnv::new();
    env.update(&json!({"objective": "schemas"}));
    let mut session = Session::start(&env);
    let list = session.request(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let calls = [
        ("show", json!({})),
        ("verify", json!({})),
        ("scene", json!({})),
        ("pressure", json!({"used": 90, "context_window": 100})),
        ("reorient", json!({"check": true})),
        ("retrieve", json!({"query": "schemas"})),
        ("schema", json!({"command": "show"})),
    ];
    for (id, (name, arguments)) in (2..).zip(calls) {
        let tool = tools.iter().find(|t| t["name"] == name).expect("listed");
        let result = session.call(id, name, arguments);
        assert_eq!(result["isError"], false, "{name}: {result}");
        let document = &result["structuredContent"];
        // The outline the tool is listed with, and the full schema `epiphany schema` prints.
        let full = match name {
            "schema" => tool["outputSchema"].clone(),
            name => env.json(&["schema", name]),
        };
        let schemas = [&tool["outputSchema"], &full];
        for schema in schemas {
            let validator = jsonschema::validator_for(schema).expect("a valid schema");
            let errors: Vec<String> = validator
                .iter_errors(document)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{name}: {errors:?}\n{document}");
        }
        let properties = tool["outputSchema"]["properties"].as_object();
        let fields = properties.map_or(0, |properties| properties.len());
        assert!(
            fields > 0 || name == "schema",
            "{name}: an outline names the fields"
        );
    }
}

/// Runs an SDK script (`tests/mcp/sdk_client.*`) as `program script BINARY REPOSITORY` against
/// a repository with `src/lexer.rs` committed and no store; it passes when it prints no
/// failure and exits 0.
fn sdk_script_passes(program: &str, script: &Path) {
    let env = TestEnv::bare();
    env.write("src/lexer.rs", "pub fn retry_keeps_span() {}\n");
    env.commit_all("code");
    let output = std::process::Command::new(program)
        .arg(script)
        .arg(assert_cmd::cargo::cargo_bin("epiphany"))
        .arg(env.root())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()
        .unwrap_or_else(|err| panic!("run {program}: {err}"));
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The SDK scripts' folder.
fn sdk_scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

/// The official MCP Python SDK (`pip install mcp`, 1.x or 2.x) drives the server: a handshake in
/// every protocol revision, every tool called with its `structuredContent` validated against its
/// `outputSchema` by the SDK, bad arguments, and raw lines (a batch, malformed and non-UTF-8
/// lines) answered with messages the SDK's JSON-RPC models accept. CI installs the SDK
/// (`.ci/run`) and runs it ([`crate::common::require_tool`]).
#[test]
#[ignore = "needs python3 with the MCP SDK (pip install mcp jsonschema); .ci/run runs it"]
fn the_official_python_sdk_accepts_the_server() {
    crate::common::require_tool("python3", &["-c", "import mcp, jsonschema"]);
    sdk_script_passes("python3", &sdk_scripts().join("sdk_client.py"));
}

/// See: issue 50. The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned by
/// `tests/mcp/package-lock.json`) drives the server as the Python one does: a handshake in
/// every revision, every tool's schemas compiled by the SDK's Ajv, every tool called (its
/// `structuredContent` validated by the SDK), again with each optional list as `[]` (which
/// its input schema must accept) and as `null`, and bad arguments. `npm ci` installs the SDK
/// under the target directory, never into the source tree, and only when the lock file
/// changed since the last install.
#[test]
#[ignore = "needs node and npm (the SDK comes from npm ci); .ci/run runs it"]
fn the_official_typescript_sdk_accepts_the_server() {
    crate::common::require_tool("node", &["--version"]);
    crate::common::require_tool("npm", &["--version"]);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-typescript-sdk");
    std::fs::create_dir_all(&dir).expect("the SDK's folder");
    for file in ["package.json", "package-lock.json", "sdk_client.mjs"] {
        std::fs::copy(sdk_scripts().join(file), dir.join(file)).expect("copy the script");
    }
    let lock = std::fs::read(dir.join("package-lock.json")).expect("the lock file");
    let installed = dir.join("node_modules/.installed-package-lock.json");
    if std::fs::read(&installed).ok().as_ref() != Some(&lock) {
        let npm = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .output()
            .expect("run npm ci");
        assert!(
            npm.status.success(),
            "npm ci: {}",
            String::from_utf8_lossy(&npm.stderr)
        );
        std::fs::write(&installed, &lock).expect("note what is installed");
    }
    sdk_script_passes("node", &dir.join("sdk_client.mjs"));
}

/// See: issue 30. A `ping` sent while `index` runs is answered before the index is done (it
/// waited about 4 s behind one), and `notifications/cancelled` stops the call it names: no
/// answer comes for it, and the index it was building is never committed. What comes after is
/// served as usual.
#[test]
fn regression_30_ping_answers_while_a_tool_runs_and_cancel_stops_it() {
    let env = TestEnv::new();
    for n in 0..2000 {
        env.write(
            &format!("src/m{n}.rs"),
            format!("pub fn step_{n}(x: u32) -> u32 {{\n    x + {n}\n}}\n"),
        );
    }
    let mut session = Session::start(&env);
    session.request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    let index = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "index", "arguments": {"full": true}}});
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "the user moved on"}});
    // One write: the server has all three before the index can be done.
    session.send_line(format!("{index}\n{ping}\n{cancel}").as_bytes());
    assert_eq!(
        session.receive(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );
    // Calls run in order: once the next one is answered, the cancelled one is over.
    let log = session.call(4, "log", json!({}));
    assert_eq!(log["isError"], false, "{log}");
    drop(session);
    let status = env.run(&["--json", "index", "--check"]).json();
    assert_eq!(status["indexed_file_count"], json!(null), "{status}");
}

/// See: issue 50 item 3. A call cancelled while it runs no longer holds up the calls after
/// it: a `note` waiting for the store's lock (held by another process) is cancelled, and the
/// `log` sent next is answered while the lock is still held. Before, `log` waited until the
/// note had the lock and had written. Once the lock is free, the cancelled note writes
/// nothing.
#[test]
fn regression_50_a_cancelled_call_does_not_hold_up_the_next() {
    let env = TestEnv::new();
    let before = env.json(&["log"]);
    let lock = env.root().join(".epiphany/lock");
    // `--no-fork`: the process holding the lock is the one killed below.
    let mut holder = std::process::Command::new("flock")
        .arg("--no-fork")
        .arg(&lock)
        .args(["sleep", "60"])
        .spawn()
        .expect("flock (util-linux) holds the store's lock");
    // Probed with flock itself: a probe through epiphany would write once the lock is free,
    // and the holder may not have it yet.
    let locked = || {
        let probe = std::process::Command::new("flock")
            .args(["--nonblock", "--conflict-exit-code", "3"])
            .arg(&lock)
            .arg("true")
            .status();
        probe.expect("flock probes the lock").code() == Some(3)
    };
    while !locked() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut server = env.std_command(&["mcp"]);
    server.env("EPIPHANY_LOCK_TIMEOUT_MS", "120000");
    let mut session = Session::spawn(server);
    session.request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note", "arguments": {"text": "waits for the lock"}}}));
    // Cancelled once it runs: when the server has the lock file open, waiting for the lock.
    let lock = lock.canonicalize().expect("the lock file");
    let fds = format!("/proc/{}/fd", session.child.id());
    let waits = || {
        let open = std::fs::read_dir(&fds).expect("the server's open files");
        open.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == lock))
    };
    while !waits() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    session.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
    );
    let log = session.call(3, "log", json!({}));
    assert_eq!(log["isError"], false, "{log}");
    assert!(
        holder.try_wait().expect("the holder").is_none(),
        "`log` was answered only once the lock was free"
    );
    holder.kill().expect("release the lock");
    holder.wait().expect("the holder ends");
    // The next write takes the lock after the cancelled one let go of it.
    let after = session.call(4, "note", json!({"text": "written after"}));
    assert_eq!(after["isError"], false, "{after}");
    // The server exits once the cancelled call is over too.
    session.close();
    let entries = |log: &Value| log["entries"].as_array().expect("entries").len();
    let log = env.json(&["log"]);
    assert_eq!(
        entries(&log),
        entries(&before) + 1,
        "the cancelled note wrote: {log}"
    );
}

/// See: issue 30. `show` of a 400-node state returned 424k characters, past what hosts take
/// from a tool. Over MCP it pages by 50 unless told otherwise, each page naming where the next
/// starts; walking the pages with `--limit`/`--offset` gives every node once.
#[test]
fn regression_30_show_is_paged_for_hosts_and_the_pages_cover_the_state() {
    let env = TestEnv::new();
    let nodes: Vec<Value> = (0..400)
        .map(|n| {
            json!({"id": format!("node-{n:03}"), "title": format!("Node {n}"),
            "purpose": "handles one concern of the system ".repeat(20)})
        })
        .collect();
    env.update(&json!({"graphs": {"architecture": {"nodes": nodes}}}));
    let whole = env.ok(&["--json", "show"]).stdout;
    assert!(whole.len() > 250_000, "{}", whole.len());
    assert!(!whole.contains("\"page\""));

    let mut session = Session::start(&env);
    session.request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    let shown = session.call(2, "show", json!({}));
    let text = shown["content"][0]["text"].as_str().expect("text");
    assert!(
        text.len() < 60_000,
        "an MCP page is {} characters",
        text.len()
    );
    let page = &shown["structuredContent"]["page"];
    assert_eq!(page["next_offset"], 50, "{page}");
    assert_eq!(page["longest_list"], 400, "{page}");

    let mut seen = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let shown = env.json(&["show", "--limit", "150", "--offset", &at.to_string()]);
        for node in shown["graphs"]["architecture"]["nodes"]
            .as_array()
            .expect("nodes")
        {
            seen.push(node["id"].as_str().expect("id").to_owned());
        }
        offset = shown["page"]["next_offset"].as_u64();
    }
    let expected: Vec<String> = (0..400).map(|n| format!("node-{n:03}")).collect();
    assert_eq!(seen, expected);
    let refused = env.run(&["show", "--limit", "0"]);
    assert_eq!(refused.code, 2, "{refused}");
}
