"""Code-execution tools for an agent framework, built on cordon.Sandbox.

One agent conversation holds one sandbox: the model's programs, shell
commands and files stay there between calls, and a command that fails,
times out or floods its output ends alone, never the sandbox. The sandbox
runs under isolation "required" (a provider whose four isolation axes the
host itself observed true: never the unprotected trusted-local), with no
network, and with limits that are the operator's, never the model's.

Nothing here is tied to one framework: TOOLS are the JSON-schema shapes
function-calling APIs take, and handle_tool_call(name, arguments_json)
returns the tool message as a JSON string.

    with SandboxTools(provider="runc", image="/srv/python.tar@sha256:...") as tools:
        tools.handle_tool_call("write_file", '{"path": "data.csv", "content": "a,b\\n1,2\\n"}')
        tools.handle_tool_call("run_python", '{"code": "print(open(\\"data.csv\\").read())"}')

Run as a script it runs one program in a fresh sandbox and prints the reply:

    python3 cordon_tool.py --provider runc --image IMAGE 'print(6 * 7)'
"""
import argparse
import json
import sys

import cordon

TOOLS = [
    {"name": "run_python",
     "description": "Run a Python program in the sandbox (no network). Files it writes stay for "
                    "later calls.",
     "parameters": {"type": "object", "required": ["code"], "properties": {
         "code": {"type": "string", "description": "the program"},
         "timeout_s": {"type": "number", "description": "deadline in seconds (default 30)"}}}},
    {"name": "run_shell",
     "description": "Run a shell command in the sandbox's /workspace (no network).",
     "parameters": {"type": "object", "required": ["command"], "properties": {
         "command": {"type": "string"},
         "timeout_s": {"type": "number", "description": "deadline in seconds (default 30)"}}}},
    {"name": "write_file",
     "description": "Write a text file in the sandbox's /workspace.",
     "parameters": {"type": "object", "required": ["path", "content"], "properties": {
         "path": {"type": "string"}, "content": {"type": "string"}}}},
    {"name": "read_file",
     "description": "Read a text file from the sandbox's /workspace.",
     "parameters": {"type": "object", "required": ["path"], "properties": {
         "path": {"type": "string"}}}},
]

# What the sandbox may use. The model chooses none of these.
LIMITS = {"cpus": 1, "memory_bytes": 512 << 20, "disk_bytes": 256 << 20, "pids": 128,
          "runtime_ms": 30 * 60 * 1000, "max_output_bytes": 1 << 20}
MAX_TIMEOUT_S = 120
MAX_READ = 256 << 10     # what read_file hands the model at most


class SandboxTools:
    """The tools over one sandbox, made at once and killed by close() (or the
    end of a with block). provider and image: the sandbox's (runc: a rootfs
    tar pinned by digest; docker: sha256:ID; bubblewrap: the host's /usr);
    best_effort_limits: limits the provider may leave unenforced (an
    ordinary user's bubblewrap: ["cpus", "disk_bytes"]); state_dir:
    cordon's state directory."""

    def __init__(self, provider="runc", image=None, state_dir=None, best_effort_limits=None):
        self.sandbox = cordon.Sandbox.create(provider=provider, image=image, limits=LIMITS,
                                             isolation="required", state_dir=state_dir,
                                             best_effort_limits=best_effort_limits)

    def close(self):
        self.sandbox.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _command(self, argv, timeout_s):
        timeout = min(max(float(timeout_s), 0.1), MAX_TIMEOUT_S)
        try:
            r = self.sandbox.commands.run(argv, timeout=timeout)
        except cordon.CommandExitError as e:
            r = e.command_result
        except (cordon.Timeout, cordon.Cancelled, cordon.LimitExceeded) as e:
            r = e.command_result
        reply = {"status": r.status, "exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr}
        if r.result.get("stdout_truncated") or r.result.get("stderr_truncated"):
            reply["note"] = "output was truncated in the middle"
        if r.execution_terminated:
            reply["note"] = "the sandbox ended with this command; its files are gone"
        return reply

    def run_python(self, code, timeout_s=30):
        self.sandbox.files.write(".tool/main.py", code)
        return self._command(["python3", ".tool/main.py"], timeout_s)

    def run_shell(self, command, timeout_s=30):
        return self._command(["/bin/sh", "-c", command], timeout_s)

    def write_file(self, path, content):
        return {"status": "ok", "bytes": self.sandbox.files.write(path, content)["size"]}

    def read_file(self, path):
        text = self.sandbox.files.read(path)
        if len(text) > MAX_READ:
            return {"status": "ok", "content": text[:MAX_READ], "note": "cut at %d characters" % MAX_READ}
        return {"status": "ok", "content": text}

    def handle_tool_call(self, name, arguments_json):
        """The framework's hook: the tool's name and the call's arguments in,
        the tool message out. Whatever cordon refuses comes back with its
        error code and message, so the model can correct itself."""
        tools = {"run_python": self.run_python, "run_shell": self.run_shell,
                 "write_file": self.write_file, "read_file": self.read_file}
        try:
            args = json.loads(arguments_json)
            if name not in tools:
                raise ValueError("no tool named %r" % name)
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
            reply = tools[name](**args)
        except (ValueError, TypeError) as e:
            reply = {"status": "blocked", "error": {"code": "invalid_input", "message": str(e)}}
        except cordon.Error as e:
            reply = {"status": "blocked", "error": {"code": e.code_name, "message": e.message}}
        return json.dumps(reply, ensure_ascii=False)


def main(argv=None):
    p = argparse.ArgumentParser(description="run one program as the run_python tool would")
    p.add_argument("--provider", default="runc")
    p.add_argument("--image", help="the provider's image (runc: TAR@sha256:DIGEST)")
    p.add_argument("--best-effort", action="append", default=None, help="a limit the provider may leave unenforced")
    p.add_argument("--state-dir")
    p.add_argument("code", nargs="?", help="the program (default: stdin)")
    a = p.parse_args(argv)
    with SandboxTools(provider=a.provider, image=a.image, state_dir=a.state_dir,
                      best_effort_limits=a.best_effort) as tools:
        code = a.code if a.code is not None else sys.stdin.read()
        print(tools.handle_tool_call("run_python", json.dumps({"code": code})))


if __name__ == "__main__":
    main()
