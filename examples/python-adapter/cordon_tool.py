"""A code-execution tool for an agent framework, built on the cordon binding.

The model calls a function tool `run_code` with source code; the tool runs
it with cordon under isolation "required" (a provider whose four isolation
axes the host itself observed true: never the unprotected trusted-local)
and returns what the model needs to go on: stdout, stderr, the exit code,
the status, and the files the program wrote to the declared outputs.

Nothing here is tied to one framework: TOOL_SPEC is the JSON-schema shape
function-calling APIs take, and handle_tool_call() takes the call's
arguments as a JSON string and returns the tool message as a JSON string.

    tool = CodeExecutionTool(image="/srv/python.tar@sha256:...")
    reply = tool.handle_tool_call('{"code": "print(6 * 7)"}')

Run as a script it executes code given on the command line or stdin and
prints the tool's reply:

    python3 cordon_tool.py --image IMAGE 'print(6 * 7)'
"""
import argparse
import json
import sys

import cordon

TOOL_SPEC = {
    "name": "run_code",
    "description": "Run a Python program in an isolated sandbox with no network. Files it "
                   "writes to ../output/NAME for a NAME listed in outputs are returned.",
    "parameters": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "the program (main.py)"},
            "outputs": {"type": "array", "items": {"type": "string"},
                        "description": "file names the program writes under ../output/"},
            "timeout_s": {"type": "number", "description": "deadline in seconds (default 30)"},
        },
        "required": ["code"],
    },
}

# What one tool call may use. The model chooses none of these.
LIMITS = {"cpus": 1, "memory_bytes": 256 << 20, "disk_bytes": 64 << 20, "pids": 64,
          "max_output_bytes": 1 << 20, "retention_bytes": 32 << 10}
MAX_TIMEOUT_S = 120


class CodeExecutionTool:
    """run_code over one cordon context (one call at a time: make one per
    worker thread). image: the provider's image (runc: a rootfs tar pinned
    by digest; docker: sha256:ID); providers: the candidates, in order
    (None: every installed provider); state_dir: cordon's state directory."""

    def __init__(self, image=None, providers=None, state_dir=None):
        self.image = image
        self.providers = providers
        self.cordon = cordon.Cordon(state_dir=state_dir)

    def close(self):
        self.cordon.close()

    def run_code(self, code, outputs=(), timeout_s=30):
        timeout_ms = int(min(max(float(timeout_s), 0.1), MAX_TIMEOUT_S) * 1000)
        try:
            r = self.cordon.run(files={"main.py": code}, language="python", entry="main.py",
                                outputs=list(outputs), isolation="required", limits=LIMITS,
                                timeout_ms=timeout_ms, image=self.image, providers=self.providers)
        except cordon.Error as e:
            # Refused before anything ran (bad outputs, no isolating provider):
            # the model is told why, in cordon's words.
            return {"status": "blocked", "error": {"code": e.code_name, "message": e.message}}
        reply = {"status": r.status, "exit_code": r.exit_code, "stdout": r.stdout,
                 "stderr": r.stderr, "provider": r["meta"].get("provider_id"), "outputs": {}}
        if r.get("stdout_truncated") or r.get("stderr_truncated"):
            reply["note"] = "output was truncated in the middle"
        if "error" in r:
            reply["error"] = r["error"]
        for o in r.outputs:
            name = o["path"][len("output/"):]
            if o.get("missing"):
                reply["outputs"][name] = None
            elif o["encoding"] == "utf-8":
                reply["outputs"][name] = o["data"]
            else:
                reply["outputs"][name] = {"base64": o["data"], "bytes": o["bytes"]}
        return reply

    def handle_tool_call(self, arguments_json):
        """The framework's hook: the call's arguments in, the tool message out."""
        try:
            args = json.loads(arguments_json)
            if not isinstance(args, dict) or not isinstance(args.get("code"), str):
                raise ValueError("arguments must be an object with a string \"code\"")
        except ValueError as e:
            return json.dumps({"status": "blocked", "error": {"code": "invalid_input",
                                                              "message": str(e)}})
        return json.dumps(self.run_code(args["code"], args.get("outputs", ()),
                                        args.get("timeout_s", 30)), ensure_ascii=False)


def main(argv=None):
    p = argparse.ArgumentParser(description="run code as the run_code tool would")
    p.add_argument("--image", help="the provider's image (runc: TAR@sha256:DIGEST)")
    p.add_argument("--provider", action="append", help="a candidate provider (repeatable)")
    p.add_argument("--state-dir")
    p.add_argument("--output", action="append", default=[], help="a declared output name")
    p.add_argument("code", nargs="?", help="the program (default: stdin)")
    a = p.parse_args(argv)
    tool = CodeExecutionTool(image=a.image, providers=a.provider, state_dir=a.state_dir)
    try:
        call = json.dumps({"code": a.code if a.code is not None else sys.stdin.read(),
                           "outputs": a.output})
        print(tool.handle_tool_call(call))
    finally:
        tool.close()


if __name__ == "__main__":
    main()
