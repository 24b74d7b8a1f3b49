"""Drive `epiphany mcp` with the official MCP Python SDK (the `mcp` package, 1.x or 2.x).

Usage: python3 sdk_client.py EPIPHANY_BINARY REPOSITORY

REPOSITORY is a git work tree with `src/lexer.rs` committed and no store yet. The script
prints one line per failed check and exits 1 when there is any; the Rust integration test
`test_mcp::the_official_python_sdk_accepts_the_server` runs it.

What the SDK itself checks, and so what this proves against a client nobody on this project
wrote:
- `ClientSession.initialize()` refuses a `protocolVersion` it does not support; the offered
  revision is swapped in for each revision the server speaks.
- `ClientSession.call_tool()` validates `structuredContent` against the tool's `outputSchema`
  from `tools/list` (jsonschema) and raises on a mismatch; every tool is called, and called
  again with each optional list argument as `[]` and as `null`.
- Raw lines (a batch, a malformed line, a non-UTF-8 line, bad `arguments`) are answered with
  messages the SDK's own JSON-RPC models accept.
"""

import asyncio
import json
import subprocess
import sys

import jsonschema
import mcp.client.session as session_module
import mcp.types as mcp_types
import pydantic
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, ROOT = sys.argv[1], sys.argv[2]
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)


def attr(model, snake, camel):
    """A field of an SDK model: 2.x spells it in snake_case, 1.x in camelCase."""
    if hasattr(model, snake):
        return getattr(model, snake)
    return getattr(model, camel)


def offer(revision):
    """Make `ClientSession.initialize()` offer `revision` instead of the SDK's newest."""
    if hasattr(session_module, "LATEST_HANDSHAKE_VERSION"):  # 2.x
        session_module.LATEST_HANDSHAKE_VERSION = revision
    else:  # 1.x reads mcp.types.LATEST_PROTOCOL_VERSION
        session_module.types.LATEST_PROTOCOL_VERSION = revision


def server():
    return StdioServerParameters(command=BINARY, args=["mcp"], cwd=ROOT)


def merge_a_conflict(branch):
    """Commits the store, then sets the checkpoint differently on a new branch `branch` and on
    the branch checked out, and merges `branch` with git: one open conflict (the checkpoint)."""

    def run(*args):
        subprocess.run(args, cwd=ROOT, check=True, capture_output=True)

    def git(*args):
        run("git", "-c", "user.name=sdk", "-c", "user.email=sdk@example.com", *args)

    def commit(message):
        git("add", "-A")
        git("commit", "-q", "-m", message)

    commit("the store so far")
    here = subprocess.run(
        ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    git("checkout", "-q", "-b", branch)
    run(BINARY, "checkpoint", "set", "--focus", f"{branch}'s focus", "--next", "merge")
    commit(f"{branch}'s checkpoint")
    git("checkout", "-q", here)
    run(BINARY, "checkpoint", "set", "--focus", f"{here}'s focus", "--next", "merge")
    commit(f"{here}'s checkpoint")
    git("merge", "-q", "--no-edit", branch)


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def handshake(revision):
    offer(revision)
    async with stdio_client(server()) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(
                attr(init, "protocol_version", "protocolVersion") == revision,
                f"{revision}: the server answered {attr(init, 'protocol_version', 'protocolVersion')}",
            )
            tools = (await session.list_tools()).tools
            check(len(tools) >= 20, f"{revision}: only {len(tools)} tools")
            for tool in tools:
                output = attr(tool, "output_schema", "outputSchema")
                if revision >= "2025-06-18":
                    check(output is not None, f"{revision}: `{tool.name}` has no outputSchema")
                else:
                    check(output is None, f"{revision}: `{tool.name}` has an outputSchema")
                if revision >= "2025-03-26":
                    check(tool.annotations is not None, f"{revision}: `{tool.name}` has no annotations")


async def every_tool():
    offer(REVISIONS[-1])
    async with stdio_client(server()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            called = set()

            async def call(name, arguments, error=False):
                # call_tool validates structuredContent against outputSchema and raises when it
                # does not match; the explicit check below says which tool it was.
                result = await session.call_tool(name, arguments)
                is_error = attr(result, "is_error", "isError")
                structured = attr(result, "structured_content", "structuredContent")
                check(is_error == error, f"{name} {arguments}: isError={is_error}: {text_of(result)}")
                if not is_error:
                    called.add(name)
                    schema = attr(tools[name], "output_schema", "outputSchema")
                    check(structured is not None, f"{name}: no structuredContent")
                    try:
                        jsonschema.validate(structured, schema)
                    except jsonschema.ValidationError as err:
                        check(False, f"{name}: structuredContent does not match outputSchema: {err.message}")
                return result, structured

            await call("init", {})
            _, draft = await call(
                "distill",
                {
                    "source_kind": "test",
                    "status": "ok",
                    "subject": "cargo test",
                    "code_refs": ["src/lexer.rs:1-1#retry_keeps_span"],
                    "input": "test result: ok. 3 passed; 0 failed",
                },
            )
            await call("update", {"input": json.dumps(draft)})
            _, proposal = await call("propose", {})
            await call(
                "promote",
                {
                    "input": json.dumps(proposal),
                    "verifier_kind": "test",
                    "verifier_status": "pass",
                    "verifier_summary": "suite green",
                },
            )
            checkpoint = {
                "investigation_checkpoint": {
                    "checkpoint_id": "ck",
                    "kind": "debug",
                    "disposition": "resume_ready",
                    "focus": "lexer",
                    "next_action": "reread",
                    "code_refs": [{"path": "src/lexer.rs"}],
                }
            }
            await call("update", {"input": json.dumps(checkpoint)})
            # The one-line writes, each with the arguments its flags name.
            for name, arguments in [
                ("note", {"text": "the lexer keeps the span on retry", "refs": ["src/lexer.rs:1-1#retry_keeps_span"], "kind": "finding"}),
                ("node_set", {"id": "lexer", "title": "Lexer", "purpose": "tokens", "refs": ["src/lexer.rs"]}),
                ("node_set", {"id": "parser", "purpose": "trees"}),
                ("edge_add", {"source": "lexer", "target": "parser", "kind": "feeds"}),
                ("recheck", {"nodes": ["lexer"]}),
                ("edge_rm", {"source": "lexer", "target": "parser", "kind": "feeds"}),
                ("node_rm", {"id": "parser"}),
                ("subgoal_add", {"title": "keep spans", "id": "spans"}),
                ("subgoal_done", {"id": "spans"}),
                ("backlog_add", {"title": "measure the lexer"}),
                ("checkpoint_set", {"focus": "lexer", "next_action": "reread", "refs": ["src/lexer.rs"]}),
            ]:
                await call(name, arguments)
            merge_a_conflict("side")
            await call("conflicts", {})
            await call("conflicts_settle", {"all": True, "take": "theirs"})
            for name, arguments in [
                ("show", {}),
                ("show", {"revision": "1"}),
                ("show", {"revision": 1}),
                ("diff", {"from": 1, "to": 2}),
                ("log", {}),
                ("diff", {}),
                ("verify", {}),
                ("scene", {}),
                ("context", {"nodes": ["missing-node"]}),
                ("graph", {"frontier": True, "depth": 2}),
                ("map", {"focus": ["lexer", "retry_keeps_span"], "max_chars": 800, "format": "mermaid"}),
                ("planning", {}),
                ("freshness", {}),
                ("freshness", {"fix": True}),
                ("pressure", {"used": 82, "auto_compact_limit": 100}),
                ("reorient", {"used": 10, "context_window": 100}),
                ("prompt", {}),
                ("index", {}),
                ("retrieve", {"query": ["keeps span on retry"]}),
                ("retrieve", {"query": "lexer", "mode": "exact"}),
                ("schema", {}),
                ("compact", {}),
                ("rollback", {"to_revision": 1}),
            ]:
                await call(name, arguments)
            check(called == set(tools), f"tools never called successfully: {sorted(set(tools) - called)}")

            # Models send `[]` or `null` for a list they have nothing for: the same as leaving
            # it out, for every optional list argument of every tool.
            await call("node_set", {"id": "lexer", "purpose": "tokens"})
            await call("node_set", {"id": "parser", "purpose": "trees"})
            await call("checkpoint_set", {"focus": "lexer", "next_action": "reread the lexer"})
            merge_a_conflict("other-side")
            lists_taken = {
                "distill": {"source_kind": "test", "status": "ok", "input": "3 passed"},
                "propose": {},
                "note": {"text": "empty lists are no lists", "dry_run": True},
                "node_set": {"id": "lexer", "purpose": "tokens", "dry_run": True},
                "edge_add": {"source": "lexer", "target": "parser", "kind": "feeds", "dry_run": True},
                "checkpoint_set": {"focus": "lexer", "next_action": "reread", "dry_run": True},
                "recheck": {"checkpoint": True, "dry_run": True},
                "context": {},
                "graph": {},
                "map": {},
                "retrieve": {"query": "lexer"},
                "conflicts_settle": {"all": True, "take": "theirs", "dry_run": True},
            }
            for name, tool in tools.items():
                schema = attr(tool, "input_schema", "inputSchema")
                lists = [
                    key
                    for key, argument in schema["properties"].items()
                    if argument.get("type") == "array" and key not in schema.get("required", [])
                ]
                check(not lists or name in lists_taken, f"`{name}` takes {lists}: add it to lists_taken")
                for key in lists:
                    for nothing in ([], None):
                        await call(name, {**lists_taken.get(name, {}), key: nothing})

            # Bad arguments are tool errors that name the tool's arguments, never CLI flags.
            result, _ = await call("show", {"colour": "red"}, error=True)
            check("`colour`" in text_of(result), f"unknown argument: {text_of(result)}")
            result, _ = await call("pressure", {}, error=True)
            check(
                text_of(result) == "`pressure` needs the argument `used` (an integer)",
                f"missing argument: {text_of(result)}",
            )
            result, _ = await call("show", {"revision": "three"}, error=True)
            check("--" not in text_of(result), f"wrong type: {text_of(result)}")
            result, _ = await call("show", {"revision": "99"}, error=True)
            check(json.loads(text_of(result))["error"]["kind"] == "usage", f"failure: {text_of(result)}")
            try:
                await session.call_tool("no-such-tool", {})
                check(False, "an unknown tool was called")
            except Exception as err:  # McpError (1.x) / MCPError (2.x), both carry the code
                code = getattr(getattr(err, "error", None), "code", None)
                check(code == -32602, f"unknown tool: {err!r}")


def raw_exchange():
    """Lines no SDK would send, answered with messages the SDK's JSON-RPC models accept."""
    message = pydantic.TypeAdapter(mcp_types.JSONRPCMessage)
    lines = [
        b"{not json\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "p\xffing"}\n',
        b'{"jsonrpc": "2.0", "id": 2}\n',
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "show", "arguments": "oops"}}\n',
        b'[{"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"},'
        b' {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]\n',
        b"[]\n",
        b'{"jsonrpc": "2.0", "id": 6, "method": "ping"}\n',
    ]
    process = subprocess.run(
        [BINARY, "mcp"], input=b"".join(lines), cwd=ROOT, capture_output=True, timeout=120
    )
    answers = [json.loads(line) for line in process.stdout.splitlines()]
    check(process.returncode == 0, f"the server exited with {process.returncode}")
    check(len(answers) == 7, f"expected 7 answers, got {len(answers)}: {answers}")
    if len(answers) != 7:
        return
    flat = []
    for answer in answers:
        flat.extend(answer if isinstance(answer, list) else [answer])
    # JSON-RPC 2.0 requires `"id": null` when the id of a broken request cannot be read; SDK 2.x
    # models that ("Required but nullable per JSON-RPC 2.0"), 1.x's JSONRPCError does not (its
    # client drops such a line), so with 1.x those answers are checked by hand above.
    null_id = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
    try:
        message.validate_python(null_id)
        models_null_id = True
    except pydantic.ValidationError:
        models_null_id = False
    for answer in flat:
        if answer.get("id") is None and not models_null_id:
            check(set(answer) == {"jsonrpc", "id", "error"}, f"malformed error: {answer}")
            continue
        try:
            message.validate_python(answer)
        except pydantic.ValidationError as err:
            check(False, f"the SDK rejects {answer}: {err}")
    codes = [a.get("error", {}).get("code") for a in answers[:4]]
    check(codes == [-32700, -32700, -32600, -32602], f"error codes: {codes}")
    check(isinstance(answers[4], list) and [a["id"] for a in answers[4]] == [4, 5], f"batch: {answers[4]}")
    check(answers[5].get("error", {}).get("code") == -32600, f"empty batch: {answers[5]}")
    check(answers[6] == {"jsonrpc": "2.0", "id": 6, "result": {}}, f"after all that: {answers[6]}")


async def main():
    for revision in REVISIONS:
        await handshake(revision)
    await every_tool()
    raw_exchange()


if __name__ == "__main__":
    asyncio.run(main())
    for failure in FAILURES:
        print(f"FAIL: {failure}")
    sys.exit(1 if FAILURES else 0)
