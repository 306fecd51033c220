// A test agent on the official ACP TypeScript SDK (pinned in package.json): ACP v1 and the
// v2 Preview side by side behind the SDK's protocol router, so the client's initialize
// chooses. One scenario on both: in its turn it writes a file and runs a command through
// the MCP server the client handed it in session/new (the client's files and terminals as
// MCP tools), then answers with what the command printed.
//
// Its MCP client is minimal on purpose: streamable HTTP with JSON responses, or a stdio
// server it starts, whichever the client offered (it advertises both; with
// TS_AGENT_MCP=stdio only stdio). A v2 session can be resumed (session/resume sends the
// current state before its reply, as the SDK requires) and prompted again. Each session
// offers one config option, "effort" (low | high), keyed as each version's schema keys it
// (v1 `id`, v2 `configId`), and takes the SDK's own validation of the request that sets it.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2";

const FILE = "from-ts-agent.txt";
const TRANSPORTS = process.env.TS_AGENT_MCP === "stdio" ? { stdio: {} } : { http: {}, stdio: {} };
const CONTENT = "written through the bridge's MCP tools\n";

// --- a minimal MCP client ---------------------------------------------------------------

function header(list, name) {
  return (list || []).find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;
}

async function mcpHttp(server) {
  let session;
  let id = 0;
  const headers = Object.fromEntries((server.headers || []).map((h) => [h.name, h.value]));
  async function post(body) {
    const response = await fetch(server.url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        ...(session ? { "mcp-session-id": session } : {}),
      },
      body: JSON.stringify(body),
    });
    session = response.headers.get("mcp-session-id") || session;
    const text = await response.text();
    if (!("id" in body)) return undefined;
    if (!response.ok) throw new Error(`MCP HTTP ${response.status}: ${text}`);
    const data = text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data:")).slice(5);
    return JSON.parse(data);
  }
  const call = async (method, params) => post({ jsonrpc: "2.0", id: ++id, method, params });
  const notify = async (method, params) => post({ jsonrpc: "2.0", method, params });
  return { call, notify, close: async () => {} };
}

async function mcpStdio(server) {
  const env = { ...process.env, ...Object.fromEntries((server.env || []).map((e) => [e.name, e.value])) };
  const child = spawn(server.command, server.args || [], { env, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line);
    if ("id" in message && waiting.has(message.id)) waiting.get(message.id)(message);
  });
  let id = 0;
  const send = (message) => child.stdin.write(JSON.stringify(message) + "\n");
  const call = (method, params) =>
    new Promise((resolve) => {
      const mine = ++id;
      waiting.set(mine, resolve);
      send({ jsonrpc: "2.0", id: mine, method, params });
    });
  const notify = async (method, params) => send({ jsonrpc: "2.0", method, params });
  const close = async () => {
    child.stdin.end();
    await new Promise((resolve) => child.on("exit", resolve));
  };
  return { call, notify, close };
}

async function useTools(servers, cwd) {
  const server = servers.find((s) => s.name === "acp-bridge");
  if (!server) throw new Error("the client offered no acp-bridge MCP server");
  const mcp = server.url ? await mcpHttp(server) : await mcpStdio(server);
  await mcp.call("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "ts-test-agent", version: "1" },
  });
  await mcp.notify("notifications/initialized", {});
  const tool = async (name, args) => {
    const reply = await mcp.call("tools/call", { name, arguments: args });
    if (reply.error) throw new Error(`${name}: ${reply.error.message}`);
    return reply.result;
  };
  const wrote = await tool("write_text_file", { path: `${cwd}/${FILE}`, content: CONTENT });
  const ran = await tool("run_command", { command: "cat", args: [FILE] });
  await mcp.close();
  const text = (result) => (result.content || []).map((c) => c.text || "").join("");
  return { wrote: !wrote.isError, ran: text(ran), ranError: ran.isError === true, structured: ran.structuredContent };
}

function answerOf(outcome) {
  const exit = outcome.structured ? outcome.structured.exit_code : "?";
  return `wrote=${outcome.wrote} exit=${exit} output=${JSON.stringify(outcome.structured?.output ?? outcome.ran)}`;
}

function effortOption(key, current) {
  const options = [{ value: "low", name: "Low" }, { value: "high", name: "High" }];
  return { [key]: "effort", name: "Effort", type: "select", currentValue: current, options };
}

// --- ACP v2 -----------------------------------------------------------------------------

const sessions2 = new Map();
let messages = 0;
const v2agent = v2
  .agent({ name: "ts-test-agent" })
  .onRequest(v2.methods.agent.initialize, () => ({
    protocolVersion: 2,
    info: { name: "ts-test-agent", version: "2.4.0" },
    capabilities: { session: { mcp: TRANSPORTS } },
  }))
  .onRequest(v2.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-v2-${sessions2.size + 1}`;
    sessions2.set(sessionId, params);
    return { sessionId, configOptions: [effortOption("configId", "high")] };
  })
  .onRequest(v2.methods.agent.session.setConfigOption, ({ params }) => ({
    configOptions: [effortOption("configId", params.value)],
  }))
  .onRequest(v2.methods.agent.session.resume, async ({ params, client }) => {
    // This process never saw the session: it goes on from what the client sends again.
    sessions2.set(params.sessionId, params);
    const snapshot = { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" };
    await client.notify(v2.methods.client.session.update, { sessionId: params.sessionId, update: snapshot });
    return {};
  })
  .onRequest(v2.methods.agent.session.prompt, ({ params, client }) => {
    const session = sessions2.get(params.sessionId);
    const update = (body) => client.notify(v2.methods.client.session.update, { sessionId: params.sessionId, update: body });
    const userId = `user-${++messages}`;
    setTimeout(async () => {
      await update({ sessionUpdate: "state_update", state: "running" });
      await update({ sessionUpdate: "user_message", messageId: userId, content: params.prompt });
      await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", title: "write and run", name: "mcp_tools", kind: "execute", status: "in_progress" });
      let answer;
      try {
        answer = answerOf(await useTools(session.mcpServers || [], session.cwd));
        await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
      } catch (error) {
        answer = `failed: ${error.message}`;
        await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" });
      }
      await update({ sessionUpdate: "agent_message_chunk", messageId: `agent-${messages}`, content: { type: "text", text: answer } });
      await update({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
    }, 0);
    return { messageId: userId };
  })
  .onRequest(v2.methods.agent.session.close, () => undefined)
  .onNotification(v2.methods.agent.session.cancel, () => undefined);

// --- ACP v1 -----------------------------------------------------------------------------

const sessions1 = new Map();
const v1agent = v1
  .agent({ name: "ts-test-agent" })
  .onRequest(v1.methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentInfo: { name: "ts-test-agent", version: "2.4.0" },
    agentCapabilities: { mcpCapabilities: { http: true } },
  }))
  .onRequest(v1.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-v1-${sessions1.size + 1}`;
    sessions1.set(sessionId, params);
    return { sessionId, configOptions: [effortOption("id", "high")] };
  })
  .onRequest(v1.methods.agent.session.setConfigOption, ({ params }) => ({
    configOptions: [effortOption("id", params.value)],
  }))
  .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions1.get(params.sessionId);
    const update = (body) => client.notify(v1.methods.client.session.update, { sessionId: params.sessionId, update: body });
    await update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "write and run", name: "mcp_tools", kind: "execute", status: "in_progress" });
    let answer;
    try {
      answer = answerOf(await useTools(session.mcpServers || [], session.cwd));
      await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    } catch (error) {
      answer = `failed: ${error.message}`;
      await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" });
    }
    await update({ sessionUpdate: "agent_message_chunk", messageId: "agent-1", content: { type: "text", text: answer } });
    return { stopReason: "end_turn" };
  })
  .onNotification(v1.methods.agent.session.cancel, () => undefined);

const stream = v2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const router = v2.agentProtocolRouter().withV1(v1agent).withV2(v2agent);
await router.connect(stream).closed;
