//! JSON-RPC 2.0 over stdio, as the Model Context Protocol frames it: one message per line.
//!
//! A line that is not JSON (including one that is not UTF-8) gets a parse error (-32700) and the
//! server keeps reading. A batch (a JSON array, which the 2025-03-26 revision requires servers
//! to accept) gets one array of answers in any revision; an empty batch or a member that is not
//! a request gets an invalid-request error (-32600), as does a request without a `method`.
//! Notifications and responses from the client are never answered. `params` must be an object
//! (-32602 otherwise).
//!
//! Tool calls run one at a time on a worker thread, in the order they came, while the server
//! goes on reading: `ping`, `tools/list` and the rest are answered at once, and
//! `notifications/cancelled` stops the call it names (a waiting one never starts, a running
//! one is asked to stop) and that call gets no answer, as the specification asks. A running
//! call that was cancelled is left to its worker, and a new worker takes the calls after it
//! at once: none waits for work nobody wants. A batch is answered whole, its calls run in
//! place.

use std::collections::HashMap;
use std::io::BufRead;
use std::io::Write;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::sync::mpsc;

use anyhow::Result;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::ctx::Cancel;
use crate::ctx::Ctx;
use crate::cmd::mcp::frame::Line;
use crate::cmd::mcp::frame::MAX_LINE_BYTES;
use crate::cmd::mcp::frame::read_line;
use crate::cmd::mcp::tools;
use crate::cmd::mcp::tools::Toolbox;

/// The protocol revisions this server speaks, oldest first.
pub const REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// JSON-RPC error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters are wrong.
    pub const INVALID_PARAMS: i64 = -32602;
}

/// A JSON-RPC error: its code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The code (see [`code`]).
    pub code: i64,
    /// What is wrong.
    pub message: String,
}

impl RpcError {
    /// An error with `code`.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

/// A protocol revision, by its place in [`REVISIONS`]; later revisions compare greater.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Revision(usize);

impl Revision {
    /// The newest revision this server speaks, used before `initialize` settles one.
    pub const LATEST: Revision = Revision(REVISIONS.len() - 1);
    /// 2025-03-26: tool annotations, batches.
    pub const ANNOTATIONS: Revision = Revision(1);
    /// 2025-06-18: `outputSchema` and `structuredContent`.
    pub const STRUCTURED: Revision = Revision(2);

    /// The revision named `name`, when this server speaks it.
    pub fn named(name: &str) -> Option<Revision> {
        REVISIONS.iter().position(|r| *r == name).map(Revision)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        REVISIONS[self.0]
    }
}

/// One client connection: the negotiated revision, the context tools run in, and the tool
/// calls sent to the worker and not answered yet (by their id's JSON text).
pub struct Server<'a> {
    ctx: &'a Ctx,
    toolbox: Toolbox,
    revision: Revision,
    pending: HashMap<String, Cancel>,
}

/// What the server does with one message.
enum Reply {
    /// Answer now, or say nothing (a notification).
    Now(Option<Value>),
    /// A tool call, for the worker.
    Call(Box<Call>),
}

/// A tool call on its way to the worker.
struct Call {
    id: Value,
    prepared: tools::Prepared,
    revision: Revision,
    cancel: Cancel,
}

/// The tool calls sent to the worker, and the cancel of the one it runs.
struct Queue {
    waiting: Mutex<mpsc::Receiver<Call>>,
    running: Mutex<Option<Cancel>>,
}

impl Queue {
    fn new(waiting: mpsc::Receiver<Call>) -> Queue {
        Queue {
            waiting: Mutex::new(waiting),
            running: Mutex::new(None),
        }
    }

    /// Runs the calls one at a time, in the order they came, sending each answer to the
    /// server loop, until the queue closes, the loop stops listening, or the call it runs is
    /// left to it ([`Queue::leave_cancelled`]): then it stops after that call.
    fn work(&self, ctx: &Ctx, events: &mpsc::Sender<Event>) {
        loop {
            let next = lock(&self.waiting).recv();
            let Ok(call) = next else { return };
            {
                let mut running = lock(&self.running);
                if call.cancel.is_set() {
                    continue;
                }
                *running = Some(call.cancel.clone());
            }
            let result = tools::call(ctx, &call.prepared, call.revision, &call.cancel);
            let answer = reply(Some(call.id.clone()), result).unwrap_or(Value::Null);
            let left = lock(&self.running).take().is_none();
            if events.send(Event::Answered(call.id, answer)).is_err() || left {
                return;
            }
        }
    }

    /// Whether the running call was cancelled: it is then left to its worker, which stops
    /// once the call does, and the caller starts another worker for the calls after it, so
    /// that none of them waits for work nobody wants.
    fn leave_cancelled(&self) -> bool {
        let mut running = lock(&self.running);
        let cancelled = running.as_ref().is_some_and(Cancel::is_set);
        if cancelled {
            *running = None;
        }
        cancelled
    }
}

/// The value behind `mutex`, even if a worker panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the server loop waits for.
enum Event {
    /// A line the reader read, or the end of the input (`None`).
    Line(std::io::Result<Option<Line>>),
    /// The worker's answer to a call.
    Answered(Value, Value),
}

impl<'a> Server<'a> {
    /// A server for a new connection, offering the tools of `toolbox`.
    pub fn new(ctx: &'a Ctx, toolbox: Toolbox) -> Server<'a> {
        Server {
            ctx,
            toolbox,
            revision: Revision::LATEST,
            pending: HashMap::new(),
        }
    }

    /// Serves `input` until it ends, writing every answer to `output` as one line. A line
    /// longer than [`MAX_LINE_BYTES`] is not kept: it is read past and answered with a parse
    /// error, which carries the request's id when either end of the line shows it.
    /// Tool calls run on a worker (see the module docs); the input's end waits for the calls
    /// still running.
    pub fn serve(&mut self, input: impl BufRead + Send, mut output: impl Write) -> Result<()> {
        let ctx = self.ctx;
        let (events, received) = mpsc::channel::<Event>();
        let (calls, to_run) = mpsc::channel::<Call>();
        let queue = &Queue::new(to_run);
        std::thread::scope(|scope| {
            // Moved in, so that however the loop ends, the queue closes with it and the worker
            // stops after the call it runs.
            let calls = calls;
            let lines = events.clone();
            scope.spawn(move || read_lines(input, &lines));
            let worker = events.clone();
            scope.spawn(move || queue.work(ctx, &worker));
            let mut ended = false;
            while !(ended && self.pending.is_empty()) {
                let Ok(event) = received.recv() else { break };
                let answer = match event {
                    Event::Line(Ok(None)) => {
                        ended = true;
                        None
                    }
                    Event::Line(Ok(Some(Line::TooLong(edges)))) => Some(error_response(
                        edges.id().unwrap_or(Value::Null),
                        &RpcError::new(
                            code::PARSE_ERROR,
                            format!(
                                "the message is longer than {} MiB; it was not read",
                                MAX_LINE_BYTES / (1024 * 1024)
                            ),
                        ),
                    )),
                    Event::Line(Ok(Some(Line::Whole(line)))) => match self.reply_to_line(&line) {
                        Reply::Now(answer) => answer,
                        Reply::Call(call) => {
                            self.pending
                                .insert(call.id.to_string(), call.cancel.clone());
                            // The worker lives as long as this loop.
                            let _ = calls.send(*call);
                            None
                        }
                    },
                    Event::Line(Err(err)) => return Err(err.into()),
                    // A cancelled call was forgotten: its answer is not sent.
                    Event::Answered(id, answer) => {
                        self.pending.remove(&id.to_string()).map(|_| answer)
                    }
                };
                if queue.leave_cancelled() {
                    let worker = events.clone();
                    scope.spawn(move || queue.work(ctx, &worker));
                }
                if let Some(answer) = answer {
                    writeln!(output, "{answer}")?;
                    output.flush()?;
                }
            }
            Ok(())
        })
    }

    /// What to do with one line: a single tool call goes to the worker.
    fn reply_to_line(&mut self, line: &[u8]) -> Reply {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Reply::Now(None);
        }
        let message = match parse(line) {
            Ok(message) => message,
            Err(message) => {
                return Reply::Now(Some(error_response(
                    Value::Null,
                    &RpcError::new(code::PARSE_ERROR, message),
                )));
            }
        };
        match message {
            Value::Array(batch) if batch.is_empty() => Reply::Now(Some(error_response(
                Value::Null,
                &RpcError::new(code::INVALID_REQUEST, "an empty batch is not a request"),
            ))),
            Value::Array(batch) => {
                let answers: Vec<Value> = (batch.iter())
                    .filter_map(|message| match self.answer(message, true) {
                        Reply::Now(answer) => answer,
                        Reply::Call(call) => run(self.ctx, *call),
                    })
                    .collect();
                Reply::Now((!answers.is_empty()).then_some(Value::Array(answers)))
            }
            message => self.answer(&message, false),
        }
    }

    /// What to do with one message: answer it (nothing for a notification or a client's
    /// response), or run it as a tool call.
    fn answer(&mut self, message: &Value, in_batch: bool) -> Reply {
        let now = Reply::Now;
        let Some(object) = message.as_object() else {
            return now(Some(error_response(
                Value::Null,
                &RpcError::new(code::INVALID_REQUEST, "a message must be a JSON object"),
            )));
        };
        let id = match object.get("id") {
            None => None,
            Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
            Some(_) => {
                return now(Some(error_response(
                    Value::Null,
                    &RpcError::new(code::INVALID_REQUEST, "`id` must be a string or a number"),
                )));
            }
        };
        let method = match object.get("method") {
            Some(Value::String(method)) => method.as_str(),
            // A response to a request of ours: the server sends none, so there is nothing to do.
            _ if id.is_some()
                && (object.contains_key("result") || object.contains_key("error")) =>
            {
                return now(None);
            }
            Some(_) => {
                return now(reply(id, Err(invalid_request("`method` must be a string"))));
            }
            None => {
                return now(reply(
                    id,
                    Err(invalid_request("the request has no `method`")),
                ));
            }
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return now(reply(id, Err(invalid_request("`jsonrpc` must be \"2.0\""))));
        }
        // Notifications need no answer; a cancellation stops the call it names.
        let Some(id) = id else {
            if method == "notifications/cancelled"
                && let Some(named) = object.get("params").and_then(|p| p.get("requestId"))
                && let Some(cancel) = self.pending.remove(&named.to_string())
            {
                cancel.set();
            }
            return now(None);
        };
        let empty = Map::new();
        let params = match object.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(params)) => params,
            Some(_) => {
                return now(reply(
                    Some(id),
                    Err(RpcError::new(
                        code::INVALID_PARAMS,
                        "`params` must be an object",
                    )),
                ));
            }
        };
        let result = match method {
            "initialize" if in_batch => {
                Err(invalid_request("`initialize` must not be part of a batch"))
            }
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({ "tools": self.toolbox.list(self.revision) })),
            "tools/call" => match self.toolbox.prepare(params) {
                Ok(prepared) => {
                    return Reply::Call(Box::new(Call {
                        id,
                        prepared,
                        revision: self.revision,
                        cancel: Cancel::default(),
                    }));
                }
                Err(err) => Err(err),
            },
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: `{other}`"),
            )),
        };
        now(reply(Some(id), result))
    }

    fn initialize(&mut self, params: &Map<String, Value>) -> Value {
        // The client's revision when we speak it, else our newest: the client decides whether
        // it can go on with that.
        self.revision = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .and_then(Revision::named)
            .unwrap_or(Revision::LATEST);
        json!({
            "protocolVersion": self.revision.name(),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "epiphany", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "epiphany keeps this repository's typed understanding (objective, graphs, observations, evidence, checkpoint) in .epiphany/. Start with `reorient` and `prompt`; record findings with `distill` then `update`; search code with `retrieve`."
        })
    }
}

/// Runs a tool call in place and answers it.
fn run(ctx: &Ctx, call: Call) -> Option<Value> {
    let result = tools::call(ctx, &call.prepared, call.revision, &call.cancel);
    reply(Some(call.id), result)
}

/// Reads `input` line by line onto `events` until it ends (a `None` line) or fails, or the
/// server stops listening.
fn read_lines(mut input: impl BufRead, events: &mpsc::Sender<Event>) {
    loop {
        let read = read_line(&mut input, MAX_LINE_BYTES);
        let last = !matches!(read, Ok(Some(_)));
        if events.send(Event::Line(read)).is_err() || last {
            return;
        }
    }
}

fn parse(line: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(line)
        .map_err(|err| format!("parse error: the line is not UTF-8 ({err})"))?;
    serde_json::from_str(text).map_err(|err| format!("parse error: {err}"))
}

fn invalid_request(message: &str) -> RpcError {
    RpcError::new(code::INVALID_REQUEST, message)
}

fn reply(id: Option<Value>, result: Result<Value, RpcError>) -> Option<Value> {
    let id = id.unwrap_or(Value::Null);
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(err) => error_response(id, &err),
    })
}

fn error_response(id: Value, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": err.code, "message": err.message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::Ui;

    fn test_ctx() -> Ctx {
        Ctx {
            cwd: std::path::PathBuf::from("/nonexistent"),
            ui: Ui::capturing().0,
            now: jiff::Timestamp::UNIX_EPOCH,
            lock_timeout: std::time::Duration::ZERO,
            snapshot_every: crate::state::store::DEFAULT_SNAPSHOT_EVERY,
            stdin: crate::ctx::Stdin::Given(Vec::new()),
            model_dir: None,
            cancel: Cancel::default(),
            started: std::time::Instant::now(),
            parse_time: crate::ctx::PARSE_TIME,
        }
    }

    /// The answer to one line, its tool calls run in place: a response, an array of responses
    /// for a batch, or nothing.
    fn answer_to(line: impl AsRef<[u8]>) -> Option<Value> {
        let ctx = test_ctx();
        match Server::new(&ctx, Toolbox::default()).reply_to_line(line.as_ref()) {
            Reply::Now(answer) => answer,
            Reply::Call(call) => run(&ctx, *call),
        }
    }

    fn error_code(answer: &Value) -> i64 {
        answer["error"]["code"].as_i64().expect("an error")
    }

    #[test]
    fn a_line_too_long_is_a_parse_error_and_the_session_goes_on() {
        let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let big = "x".repeat(MAX_LINE_BYTES);
        let call = format!(r#"{{"jsonrpc":"2.0","id":"big-1","method":"tools/call","p":"{big}"}}"#);
        let input = format!("{big}x\n{call}\n{ping}\n");
        let mut output = Vec::new();
        Server::new(&test_ctx(), Toolbox::default())
            .serve(input.as_bytes(), &mut output)
            .expect("serve");
        let answers: Vec<Value> = String::from_utf8(output)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert_eq!(error_code(&answers[0]), code::PARSE_ERROR);
        assert_eq!(answers[0]["id"], Value::Null, "nothing to read an id from");
        assert_eq!(error_code(&answers[1]), code::PARSE_ERROR);
        assert_eq!(answers[1]["id"], "big-1");
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .expect("a message")
                .contains("64 MiB")
        );
        assert_eq!(answers[2]["id"], 7);
    }

    #[test]
    fn malformed_lines_get_parse_errors() {
        for line in ["{not json", "\"half"] {
            let answer = answer_to(line).expect("an answer");
            assert_eq!(error_code(&answer), code::PARSE_ERROR, "{answer}");
            assert_eq!(answer["id"], Value::Null);
        }
        let answer = answer_to(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"p\xffing\"}")
            .expect("an answer");
        assert_eq!(error_code(&answer), code::PARSE_ERROR, "{answer}");
    }

    #[test]
    fn invalid_requests_are_named_as_such() {
        let cases = [
            r#"{"jsonrpc": "2.0", "id": 1}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": 7}"#,
            r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}"#,
            "[]",
            "3",
        ];
        for line in cases {
            let answer = answer_to(line).expect("an answer");
            assert_eq!(
                error_code(&answer),
                code::INVALID_REQUEST,
                "{line}: {answer}"
            );
        }
        let answer = answer_to(r#"{"jsonrpc": "2.0", "id": 4}"#).expect("an answer");
        assert_eq!(answer["id"], 4);
    }

    #[test]
    fn notifications_and_client_responses_get_no_answer() {
        assert_eq!(
            answer_to(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#),
            None
        );
        assert_eq!(
            answer_to(r#"{"jsonrpc": "2.0", "method": "no/such/notification"}"#),
            None
        );
        assert_eq!(
            answer_to(r#"{"jsonrpc": "2.0", "id": 9, "result": {}}"#),
            None
        );
        assert_eq!(
            answer_to(r#"[{"jsonrpc": "2.0", "method": "notifications/initialized"}]"#),
            None
        );
    }

    #[test]
    fn a_batch_gets_one_answer_per_request() {
        let batch = r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
                        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}},
                        5]"#;
        let answers = answer_to(batch).expect("answers");
        let answers = answers.as_array().expect("an array");
        assert_eq!(answers.len(), 4, "{answers:?}");
        assert_eq!(answers[0]["result"], json!({}));
        assert_eq!(error_code(&answers[1]), code::METHOD_NOT_FOUND);
        assert_eq!(error_code(&answers[2]), code::INVALID_REQUEST);
        assert_eq!(error_code(&answers[3]), code::INVALID_REQUEST);
    }

    #[test]
    fn the_revision_is_the_clients_when_known() {
        for revision in REVISIONS {
            let line = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"protocolVersion": revision, "capabilities": {}}});
            let answer = answer_to(line.to_string()).expect("an answer");
            assert_eq!(answer["result"]["protocolVersion"], revision);
        }
        let line = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}"#;
        let answer = answer_to(line).expect("an answer");
        assert_eq!(answer["result"]["protocolVersion"], Revision::LATEST.name());
        let bad =
            answer_to(r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": [1]}"#)
                .expect("an answer");
        assert_eq!(error_code(&bad), code::INVALID_PARAMS);
    }
}
