"""A sandbox an agent holds: one long-lived execution behind an object.

    from cordon import Sandbox
    with Sandbox.create(provider="runc", image="/srv/py.tar@sha256:...") as sbx:
        sbx.commands.run("echo hi > note.txt")
        print(sbx.commands.run("cat note.txt").stdout)      # hi

The names follow e2b's Python SDK where the meaning is the same
(Sandbox.create, sandbox_id, commands.run, kill, set_timeout, context
manager), so that code moves over with few changes; what cordon adds (the
host's isolation verdict, checkpoints) has names of its own. See
docs/python.md.
"""
import asyncio
import functools
import threading

from . import Cordon
from .errors import Cancelled, Error, ErrorCode, LimitExceeded, NotFound, Timeout

#: What a Sandbox gets for each limit the caller does not give: e2b's five
#: minutes of life, and room for a package install.
DEFAULT_LIMITS = {
    "cpus": 1,
    "memory_bytes": 512 << 20,
    "disk_bytes": 1 << 30,
    "pids": 256,
    "runtime_ms": 300000,
    "max_output_bytes": 1 << 20,
}


class CommandResult:
    """How one command ended: stdout, stderr (str, UTF-8 with replacement),
    exit_code (None when it did not exit), status ("exited", "signaled",
    "timeout", "cancelled", "output_limit", "expired"),
    execution_terminated (True when the sandbox ended with the command:
    its deadline passed, or its provider can end a command only with the
    sandbox) and the whole exec result document as .result."""

    def __init__(self, result):
        self.result = result
        self.status = result.get("status")
        self.exit_code = result.get("exit_code")
        self.stdout = result.get("stdout", "")
        self.stderr = result.get("stderr", "")
        self.execution_terminated = bool(result.get("execution_terminated", False))

    @property
    def error(self):
        """None for exit code 0, else a one-line reason (e2b's .error)."""
        if self.status == "exited" and self.exit_code == 0:
            return None
        if self.status == "exited":
            return "exit code %d" % self.exit_code
        return self.status

    def __repr__(self):
        return "CommandResult(status=%r, exit_code=%r, stdout=%r, stderr=%r)" % (
            self.status, self.exit_code, self.stdout[:80], self.stderr[:80])


class CommandExitError(Error):
    """A command that exited non-zero (e2b's CommandExitException): the
    CommandResult's fields are on the exception too."""

    code = ErrorCode.CORDON_E_PROVIDER

    def __init__(self, res):
        super().__init__("the command ended with %s" % res.error, self.code, 0, None)
        self.command_result = res
        self.exit_code, self.stdout, self.stderr = res.exit_code, res.stdout, res.stderr

    def __str__(self):
        tail = self.stderr.strip().splitlines()[-1:] if self.stderr else []
        return self.message + (": " + tail[0][:200] if tail else "")


# A command that did not exit raises the exception of its status; the
# CommandResult is .command_result on it.
_RAISES = {"timeout": Timeout, "cancelled": Cancelled, "output_limit": LimitExceeded,
           "expired": Timeout}


def _argv(cmd):
    """A string runs through /bin/sh -c (as e2b runs it through a shell); a
    list is the argv itself."""
    if isinstance(cmd, str):
        return "/bin/sh", ["-c", cmd]
    cmd = list(cmd)
    if not cmd:
        raise ValueError("cmd: an empty argv")
    return cmd[0], cmd[1:]


class Commands:
    """sandbox.commands."""

    def __init__(self, sandbox):
        self._sbx = sandbox

    def run(self, cmd, timeout=60, cwd=None, envs=None, stdin=None, cancel_fd=None, on_stdout=None,
            on_stderr=None):
        """Run cmd (a shell string, or an argv list) and wait for it.

        timeout: seconds (None: up to the sandbox's own end); stdin: None,
        bytes, str, an fd or a file object; cancel_fd: an fd whose becoming
        readable cancels the command; on_stdout, on_stderr: called with each
        line of that stream (str, with its newline) as it comes, on a thread
        of the binding's (Cordon.exec). Returns a CommandResult when the
        command exited 0; raises CommandExitError for another exit code,
        Timeout, Cancelled or LimitExceeded (output over max_output_bytes)
        for a command that did not exit, each with .command_result; Error
        when the mechanism failed. A timeout, cancel or overflow ends the
        command's process group, not the sandbox (unless
        .command_result.execution_terminated says otherwise).
        """
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout: must be > 0 seconds, or None")
        command, args = _argv(cmd)
        doc = self._sbx._cordon().exec(
            self._sbx.sandbox_id, command, args=args, cwd=cwd, environment=envs,
            timeout_ms=None if timeout is None else max(1, int(timeout * 1000)), stdin=stdin,
            cancel_fd=cancel_fd, on_stdout=on_stdout, on_stderr=on_stderr)
        res = CommandResult(doc)
        if res.status == "exited" and res.exit_code == 0:
            return res
        if res.status in _RAISES:
            e = _RAISES[res.status]("the command ended: %s" % res.status, None, 0, None)
            e.command_result = res
            raise e
        raise CommandExitError(res)


class Files:
    """sandbox.files: e2b's names over cordon files (streamed through the
    provider, not bounded by max_output_bytes; disk_bytes bounds each file).
    Paths are relative to /workspace ("/workspace/p" works too)."""

    def __init__(self, sandbox):
        self._sbx = sandbox

    def write(self, path, data, mode=0o644):
        """Write data (str, bytes, a file object or an os.PathLike naming a
        host file) as the file path; parents are made."""
        return self._sbx._cordon().files_write(self._sbx.sandbox_id, path, data, mode)

    def read(self, path, format="text"):
        """The file's content: str (UTF-8, with replacement) or, with
        format="bytes", bytes."""
        data = self._sbx._cordon().files_read(self._sbx.sandbox_id, path)
        return data if format == "bytes" else data.decode("utf-8", "replace")

    def list(self, path=""):
        """The entries of a directory, one level: [{"name", "type", "size", ...}]."""
        return self._sbx._cordon().files_list(self._sbx.sandbox_id, path)["entries"]

    def exists(self, path):
        try:
            self._sbx._cordon().files_list(self._sbx.sandbox_id, path)
            return True
        except NotFound:
            return False

    def remove(self, path):
        """Remove the file or directory path."""
        self._sbx._cordon().files_remove(self._sbx.sandbox_id, path)


class Sandbox:
    """One execution (cordon provision), held until kill() or the end of a
    with block. Use Sandbox.create(); Sandbox.connect() takes an existing
    one by id; Sandbox.restore() starts one from a checkpoint.

    Each thread that uses a Sandbox gets a libcordon context of its own; the
    host runs one command of a sandbox at a time (each exec holds the
    execution's record), so commands from several threads take turns.
    """

    def __init__(self, sandbox_id, info=None, state_dir=None, config=None):
        self.sandbox_id = sandbox_id
        #: The provision (or restore) result: provider, the host's verdict...
        self.info = info or {}
        self.commands = Commands(self)
        self.files = Files(self)
        self._opts = {"state_dir": state_dir, "config": config}
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    def _cordon(self):
        c = getattr(self._local, "cordon", None)
        if c is None:
            c = Cordon(**self._opts)
            self._local.cordon = c
            with self._lock:
                self._all.append(c)
        return c

    @classmethod
    def create(cls, provider="runc", image=None, timeout=None, limits=None, isolation="required",
               envs=None, metadata=None, state_dir=None, config=None, **provision):
        """Provision a sandbox. timeout: its lifetime in seconds (e2b's
        timeout; default DEFAULT_LIMITS' 300 s); limits: any of the six
        limits, the rest from DEFAULT_LIMITS; envs: variables every command
        gets. Other keywords go to Cordon.provision (provider_config,
        allow_unsafe_local, execution_id...)."""
        res = dict(DEFAULT_LIMITS)
        res.update(limits or {})
        if timeout is not None:
            if timeout <= 0:
                raise ValueError("timeout: must be > 0 seconds")
            res["runtime_ms"] = int(timeout * 1000)
        sbx = cls(None, state_dir=state_dir, config=config)
        try:
            info = sbx._cordon().provision(provider, res, image=image, environment=envs,
                                           metadata=metadata, isolation=isolation, **provision)
        except BaseException:
            sbx._close()
            raise
        sbx.sandbox_id, sbx.info = info["execution_id"], info
        return sbx

    @classmethod
    def connect(cls, sandbox_id, state_dir=None, config=None):
        """The sandbox sandbox_id, made earlier (by this process or another)."""
        sbx = cls(sandbox_id, state_dir=state_dir, config=config)
        for e in sbx._cordon().ls()["executions"]:
            if e.get("execution_id") == sandbox_id:
                sbx.info = e
                return sbx
        sbx._close()
        raise NotFound("execution %s: no such execution" % sandbox_id, ErrorCode.CORDON_E_NOT_FOUND)

    @classmethod
    def restore(cls, checkpoint_id, state_dir=None, config=None, **restore):
        """A new sandbox from checkpoint_id (Cordon.restore's keywords)."""
        sbx = cls(None, state_dir=state_dir, config=config)
        try:
            info = sbx._cordon().restore(checkpoint_id, **restore)
        except BaseException:
            sbx._close()
            raise
        sbx.sandbox_id, sbx.info = info["execution_id"], info
        return sbx

    def checkpoint(self, metadata=None):
        """Save the workspace; returns the checkpoint id."""
        return self._cordon().checkpoint(self.sandbox_id, metadata)["checkpoint_id"]

    def set_timeout(self, timeout):
        """e2b's set_timeout: the sandbox ends timeout seconds from now (sooner
        or later than before), at most 24 h after its creation (cordon
        extend). Unsupported from a provider that cannot move the deadline."""
        if timeout <= 0:
            raise ValueError("timeout: must be > 0 seconds")
        self._cordon().extend(self.sandbox_id, max(1, int(timeout * 1000)))

    def is_running(self):
        """True while the host has a record of it that has not expired."""
        for e in self._cordon().ls()["executions"]:
            if e.get("execution_id") == self.sandbox_id:
                return e.get("phase") == "ready" and not e.get("expired", False)
        return False

    def kill(self):
        """Destroy the sandbox; True when it was there to destroy."""
        try:
            return not self._cordon().terminate(self.sandbox_id).get("already_gone", False)
        finally:
            self._close()

    def _close(self):
        with self._lock:
            cs, self._all = self._all, []
        for c in cs:
            c.close()
        self._local = threading.local()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.sandbox_id is not None:
            self.kill()

    def __repr__(self):
        return "Sandbox(%r)" % self.sandbox_id


class _AsyncCommands:
    def __init__(self, sandbox):
        self._sbx = sandbox

    async def run(self, cmd, **kwargs):
        """Sandbox.commands.run, on a worker thread."""
        return await self._sbx._off(self._sbx._sync.commands.run, cmd, **kwargs)


class AsyncSandbox:
    """Sandbox for asyncio: the same calls, awaited; each runs on the
    loop's default executor while libcordon works without the GIL."""

    def __init__(self, sync):
        self._sync = sync
        self.sandbox_id = sync.sandbox_id
        self.info = sync.info
        self.commands = _AsyncCommands(self)

    @staticmethod
    async def _off(fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

    @classmethod
    async def create(cls, **kwargs):
        return cls(await cls._off(Sandbox.create, **kwargs))

    @classmethod
    async def connect(cls, sandbox_id, **kwargs):
        return cls(await cls._off(Sandbox.connect, sandbox_id, **kwargs))

    async def checkpoint(self, metadata=None):
        return await self._off(self._sync.checkpoint, metadata)

    async def set_timeout(self, timeout):
        return await self._off(self._sync.set_timeout, timeout)

    async def is_running(self):
        return await self._off(self._sync.is_running)

    async def kill(self):
        return await self._off(self._sync.kill)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.kill()

    def __repr__(self):
        return "AsyncSandbox(%r)" % self.sandbox_id
