// A minimal MCP server on stdio in plain Node (no npm packages), as a
// server installed with `node /path/server.js` runs: newline-delimited
// JSON-RPC, with initialize, tools/list and tools/call. Tools: add(a, b),
// and inside, which reports what the process sees of /proc.
'use strict';
const fs = require('fs');
const readline = require('readline');

const tools = [
  { name: 'add', description: 'Add two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
  { name: 'inside', description: 'Report the processes visible.', inputSchema: { type: 'object' } },
];

function call(name, args) {
  if (name === 'add') return String(args.a + args.b);
  if (name === 'inside') {
    const pids = fs.readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e));
    return JSON.stringify({ pid: process.pid, pids: pids.length, runtime: 'node' });
  }
  throw new Error('no tool ' + name);
}

function answer(msg) {
  switch (msg.method) {
    case 'initialize':
      return { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'jsserver', version: '1' } };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call':
      return { content: [{ type: 'text', text: call(msg.params.name, msg.params.arguments || {}) }], isError: false };
    default:
      throw Object.assign(new Error('method not found: ' + msg.method), { code: -32601 });
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined || msg.id === null) return; // a notification
  let reply;
  try {
    reply = { jsonrpc: '2.0', id: msg.id, result: answer(msg) };
  } catch (e) {
    reply = { jsonrpc: '2.0', id: msg.id, error: { code: e.code || -32603, message: e.message } };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});
