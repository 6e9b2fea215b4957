"""A minimal MCP server on stdio in plain Python (standard library only),
as a server installed with `python3 /path/server.py` runs: newline-delimited
JSON-RPC, with initialize, tools/list and tools/call. Tools: add(a, b), and
inside, which reports what the process sees of /proc."""
import json
import os
import sys

TOOLS = [
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
    {"name": "inside", "description": "Report the processes visible.", "inputSchema": {"type": "object"}},
]


def call(name, args):
    if name == "add":
        s = args["a"] + args["b"]
        return str(int(s)) if s == int(s) else str(s)
    if name == "inside":
        pids = [e for e in os.listdir("/proc") if e.isdigit()]
        return json.dumps({"pid": os.getpid(), "pids": len(pids), "runtime": "python"})
    raise ValueError("no tool " + name)


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        return {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "pyserver", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        p = msg["params"]
        return {"content": [{"type": "text", "text": call(p["name"], p.get("arguments") or {})}], "isError": False}
    raise LookupError("method not found: %s" % method)


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if msg.get("id") is None:
        continue  # a notification
    try:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
    except LookupError as e:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": str(e)}}
    except Exception as e:  # noqa: BLE001 - the error goes back to the client
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": str(e)}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
