// The TypeScript ACP SDK 2.4 as a client, for benchmarks/peers.py: spawn the agent, initialize, session/new,
// then the same prompt twice, its session/update notifications counted: the first warms the JIT up, the
// second is timed; print {"updates", "seconds", "coldSeconds"} as JSON (updates: of the timed turn).
// SDK 2.x has no ClientSideConnection: this is its app API (client().onNotification(...).connectWith(...)),
// whose handlers get a context ({params, ...}), not the params.
// Usage: node benchmarks/peers_sdk24.mjs PROMPT COUNT AGENT_COMMAND [ARGS...]   (Node 24, tests/node installed)
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";

const require = createRequire(new URL("../tests/node/package.json", import.meta.url));
const acp = await import(require.resolve("acp-sdk-24"));

const [prompt, count, command, ...args] = process.argv.slice(2);
const expected = Number(count);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

let seen = 0;
let allSeen = () => {};
const app = acp.client({ name: "silo-nb-peers" }).onNotification(acp.methods.client.session.update, () => {
  seen += 1;
  if (seen === expected) allSeen();
});

try {
  const [coldSeconds, seconds, updates] = await app.connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    const turn = async () => {
      seen = 0;
      const done = new Promise((resolve) => (allSeen = resolve));
      const started = performance.now();
      await ctx.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
      await done; // the turn is over once every update was handled
      return (performance.now() - started) / 1000;
    };
    const cold = await turn();
    return [cold, await turn(), seen];
  });
  console.log(JSON.stringify({ updates, seconds, coldSeconds }));
} finally {
  agent.stdin.end();
  agent.kill();
}
