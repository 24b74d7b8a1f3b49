//! `mcp`: a real Model Context Protocol session over stdio.

use std::io::BufRead;
use std::io::BufReader;
use std::io::Write;
use std::process::Stdio;

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

/// A running `epiphany mcp` and its stdio.
struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Session {
    fn start(env: &TestEnv) -> Session {
        let mut child = env
            .std_command(&["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Session {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("send");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        let response: Value = serde_json::from_str(&line).expect("a JSON-RPC response");
        assert_eq!(response["id"], id, "{response}");
        response
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
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
        "string"
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
    assert_eq!(
        conflict["structuredContent"]["error"]["kind"], "conflict",
        "{conflict}"
    );

    let unknown_flag = session.call(6, "show", json!({"colour": "red"}));
    assert_eq!(unknown_flag["isError"], true, "{unknown_flag}");

    let missing = session.request(7, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let unknown_method = session.request(8, "resources/list", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    assert_eq!(env.json(&["show"])["objective"], "answer through MCP");
}
