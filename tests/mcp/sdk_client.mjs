// Drive `epiphany mcp` with the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, the
// version package-lock.json pins), as the twin of sdk_client.py.
//
// Usage: node sdk_client.mjs EPIPHANY_BINARY REPOSITORY
//
// REPOSITORY is a git work tree with `src/lexer.rs` committed and no store yet. The script
// prints one line per failed check and exits 1 when there is any; the Rust integration test
// `test_mcp::the_official_typescript_sdk_accepts_the_server` installs the SDK and runs it.
//
// What the SDK itself checks, and so what this proves against a client nobody on this project
// wrote:
// - `Client.connect()` refuses an `initialize` answer it cannot parse or a revision it does
//   not support; the transport offers each revision the server speaks in turn.
// - `Client.listTools()` parses every tool with the SDK's own models and compiles every
//   `outputSchema` with Ajv; every `inputSchema` is compiled here with the SDK's Ajv validator.
// - `Client.callTool()` validates `structuredContent` against the tool's `outputSchema` and
//   throws on a mismatch; every tool is called, and called again with each optional list
//   argument as `[]` (which its `inputSchema` must accept) and as `null`.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { execFileSync } from "node:child_process";

const [BINARY, ROOT] = process.argv.slice(2);
const REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const NEWEST = REVISIONS[REVISIONS.length - 1];
const failures = [];
const validator = new AjvJsonSchemaValidator();

/** Commits the store, then sets the checkpoint differently on a new branch `branch` and on the
 * branch checked out, and merges `branch` with git: one open conflict (the checkpoint). */
function mergeAConflict(branch) {
  const run = (program, args) => execFileSync(program, args, { cwd: ROOT, encoding: "utf8" });
  const git = (...args) => run("git", ["-c", "user.name=sdk", "-c", "user.email=sdk@example.com", ...args]);
  const commit = (message) => {
    git("add", "-A");
    git("commit", "-q", "-m", message);
  };
  commit("the store so far");
  const here = git("rev-parse", "--abbrev-ref", "HEAD").trim();
  git("checkout", "-q", "-b", branch);
  run(BINARY, ["checkpoint", "set", "--focus", `${branch}'s focus`, "--next", "merge"]);
  commit(`${branch}'s checkpoint`);
  git("checkout", "-q", here);
  run(BINARY, ["checkpoint", "set", "--focus", `${here}'s focus`, "--next", "merge"]);
  commit(`${here}'s checkpoint`);
  git("merge", "-q", "--no-edit", branch);
}

function check(condition, what) {
  if (!condition) {
    failures.push(what);
  }
}

/** A stdio transport to the server that offers `revision` in `initialize` instead of the
 * SDK's newest, and keeps the revision the server answered (the client hands it over). */
class Transport extends StdioClientTransport {
  constructor(revision) {
    // The server runs git: it gets the test's environment, not the SDK's short default one.
    super({ command: BINARY, args: ["mcp"], cwd: ROOT, env: { ...process.env } });
    this.offered = revision;
    this.answered = undefined;
  }

  send(message, options) {
    if (message.method === "initialize") {
      message = { ...message, params: { ...message.params, protocolVersion: this.offered } };
    }
    return super.send(message, options);
  }

  setProtocolVersion(version) {
    this.answered = version;
  }
}

async function connect(revision) {
  const transport = new Transport(revision);
  const client = new Client({ name: "epiphany-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

function textOf(result) {
  return (result.content ?? []).map((block) => block.text ?? "").join("");
}

async function handshake(revision) {
  const { client, transport } = await connect(revision);
  try {
    check(transport.answered === revision, `${revision}: the server answered ${transport.answered}`);
    const { tools } = await client.listTools();
    check(tools.length >= 20, `${revision}: only ${tools.length} tools`);
    for (const tool of tools) {
      if (revision >= "2025-06-18") {
        check(tool.outputSchema !== undefined, `${revision}: \`${tool.name}\` has no outputSchema`);
      } else {
        check(tool.outputSchema === undefined, `${revision}: \`${tool.name}\` has an outputSchema`);
      }
      if (revision >= "2025-03-26") {
        check(tool.annotations !== undefined, `${revision}: \`${tool.name}\` has no annotations`);
      }
    }
  } finally {
    await client.close();
  }
}

/** Every tool called as the Python script calls it, then with empty and null lists, then
 * with bad arguments. */
async function everyTool() {
  const { client } = await connect(NEWEST);
  try {
    const tools = new Map((await client.listTools()).tools.map((tool) => [tool.name, tool]));
    const inputValidators = new Map();
    for (const [name, tool] of tools) {
      try {
        inputValidators.set(name, validator.getValidator(tool.inputSchema));
      } catch (err) {
        check(false, `\`${name}\`: its inputSchema does not compile: ${err.message}`);
      }
    }
    const called = new Set();

    // callTool validates structuredContent against outputSchema and throws when it does not
    // match: the message says which call it was.
    async function call(name, args, { error = false } = {}) {
      const what = `${name} ${JSON.stringify(args)}`;
      let result;
      try {
        result = await client.callTool({ name, arguments: args });
      } catch (err) {
        check(false, `${what}: ${err.message}`);
        return { result: {}, structured: undefined };
      }
      const isError = result.isError === true;
      check(isError === error, `${what}: isError=${isError}: ${textOf(result)}`);
      if (!isError) {
        called.add(name);
        check(result.structuredContent !== undefined, `${what}: no structuredContent`);
      }
      return { result, structured: result.structuredContent };
    }

    await call("init", {});
    const { structured: draft } = await call("distill", {
      source_kind: "test",
      status: "ok",
      subject: "cargo test",
      code_refs: ["src/lexer.rs:1-1#retry_keeps_span"],
      input: "test result: ok. 3 passed; 0 failed",
    });
    await call("update", { input: JSON.stringify(draft) });
    const { structured: proposal } = await call("propose", {});
    await call("promote", {
      input: JSON.stringify(proposal),
      verifier_kind: "test",
      verifier_status: "pass",
      verifier_summary: "suite green",
    });
    const checkpoint = {
      investigation_checkpoint: {
        checkpoint_id: "ck",
        kind: "debug",
        disposition: "resume_ready",
        focus: "lexer",
        next_action: "reread",
        code_refs: [{ path: "src/lexer.rs" }],
      },
    };
    await call("update", { input: JSON.stringify(checkpoint) });
    const writes = [
      // The one-line writes, each with the arguments its flags name.
      ["note", { text: "the lexer keeps the span on retry", refs: ["src/lexer.rs:1-1#retry_keeps_span"], kind: "finding" }],
      ["node_set", { id: "lexer", title: "Lexer", purpose: "tokens", refs: ["src/lexer.rs"] }],
      ["node_set", { id: "parser", purpose: "trees" }],
      ["edge_add", { source: "lexer", target: "parser", kind: "feeds" }],
      ["recheck", { nodes: ["lexer"] }],
      ["edge_rm", { source: "lexer", target: "parser", kind: "feeds" }],
      ["node_rm", { id: "parser" }],
      ["subgoal_add", { title: "keep spans", id: "spans" }],
      ["subgoal_done", { id: "spans" }],
      ["backlog_add", { title: "measure the lexer" }],
      ["checkpoint_set", { focus: "lexer", next_action: "reread", refs: ["src/lexer.rs"] }],
    ];
    for (const [name, args] of writes) {
      await call(name, args);
    }
    mergeAConflict("side");
    await call("conflicts", {});
    await call("conflicts_settle", { all: true, take: "theirs" });
    const calls = [
      // The reads, and revisions as numbers and as strings.
      ["show", {}],
      ["show", { revision: "1" }],
      ["show", { revision: 1 }],
      ["diff", { from: 1, to: 2 }],
      ["log", {}],
      ["diff", {}],
      ["verify", {}],
      ["scene", {}],
      ["context", { nodes: ["missing-node"] }],
      ["graph", { frontier: true, depth: 2 }],
      ["map", { focus: ["lexer", "retry_keeps_span"], max_chars: 800, format: "mermaid" }],
      ["planning", {}],
      ["freshness", {}],
      ["freshness", { fix: true }],
      ["pressure", { used: 82, auto_compact_limit: 100 }],
      ["reorient", { used: 10, context_window: 100 }],
      ["prompt", {}],
      ["index", {}],
      ["retrieve", { query: ["keeps span on retry"] }],
      ["retrieve", { query: "lexer", mode: "exact" }],
      ["schema", {}],
      ["compact", {}],
      ["rollback", { to_revision: 1 }],
    ];
    for (const [name, args] of calls) {
      await call(name, args);
    }
    const never = [...tools.keys()].filter((name) => !called.has(name));
    check(never.length === 0, `tools never called successfully: ${never.join(", ")}`);

    // Models send `[]` or `null` for a list they have nothing for: the same as leaving it out,
    // for every optional list argument of every tool. `[]` is what the declared schema allows.
    await call("node_set", { id: "lexer", purpose: "tokens" });
    await call("node_set", { id: "parser", purpose: "trees" });
    await call("checkpoint_set", { focus: "lexer", next_action: "reread the lexer" });
    mergeAConflict("other-side");
    const listsTaken = {
      distill: { source_kind: "test", status: "ok", input: "3 passed" },
      propose: {},
      note: { text: "empty lists are no lists", dry_run: true },
      node_set: { id: "lexer", purpose: "tokens", dry_run: true },
      edge_add: { source: "lexer", target: "parser", kind: "feeds", dry_run: true },
      checkpoint_set: { focus: "lexer", next_action: "reread", dry_run: true },
      recheck: { checkpoint: true, dry_run: true },
      context: {},
      graph: {},
      map: {},
      retrieve: { query: ["lexer"] },
      conflicts_settle: { all: true, take: "theirs", dry_run: true },
    };
    for (const [name, tool] of tools) {
      const required = tool.inputSchema.required ?? [];
      const lists = Object.entries(tool.inputSchema.properties ?? {})
        .filter(([key, argument]) => argument.type === "array" && !required.includes(key))
        .map(([key]) => key);
      check(lists.length === 0 || name in listsTaken, `\`${name}\` takes ${lists}: add it to listsTaken`);
      for (const key of lists) {
        const empty = { ...listsTaken[name], [key]: [] };
        const fits = inputValidators.get(name)?.(empty);
        check(fits?.valid, `${name}: its inputSchema refuses ${JSON.stringify(empty)}: ${fits?.errorMessage}`);
        await call(name, empty);
        await call(name, { ...listsTaken[name], [key]: null });
      }
    }

    // Bad arguments are tool errors that name the tool's arguments, never CLI flags.
    let { result } = await call("show", { colour: "red" }, { error: true });
    check(textOf(result).includes("`colour`"), `unknown argument: ${textOf(result)}`);
    ({ result } = await call("pressure", {}, { error: true }));
    check(
      textOf(result) === "`pressure` needs the argument `used` (an integer)",
      `missing argument: ${textOf(result)}`,
    );
    ({ result } = await call("show", { revision: "three" }, { error: true }));
    check(!textOf(result).includes("--"), `wrong type: ${textOf(result)}`);
    ({ result } = await call("show", { revision: "99" }, { error: true }));
    let kind;
    try {
      kind = JSON.parse(textOf(result)).error.kind;
    } catch (err) {
      kind = `not an error document (${err.message})`;
    }
    check(kind === "usage", `failure: ${textOf(result)}`);
    try {
      await client.callTool({ name: "no-such-tool", arguments: {} });
      check(false, "an unknown tool was called");
    } catch (err) {
      check(err.code === -32602, `unknown tool: ${err}`);
    }
  } finally {
    await client.close();
  }
}

async function main() {
  for (const revision of REVISIONS) {
    await handshake(revision);
  }
  await everyTool();
}

try {
  await main();
} catch (err) {
  failures.push(`the script stopped: ${err.stack ?? err}`);
}
for (const failure of failures) {
  console.log(`FAIL: ${failure}`);
}
process.exitCode = failures.length > 0 ? 1 : 0;
