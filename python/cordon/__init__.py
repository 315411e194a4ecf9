"""cordon: run untrusted code in a sandbox that proves what it isolates.

A pure-Python binding over libcordon's JSON API (<cordon/cordon.h>) through
ctypes: each call builds the request document of docs/json.md, hands it to
the library and returns the document the library produced, parsed. Nothing
is compiled on the user's side.

    import cordon
    r = cordon.run(files={"main.py": "print(6 * 7)"}, image="...")
    r.stdout            # '42\\n'

Failures raise cordon.Error (a subclass per code: InvalidInput, NotFound,
...) with .code (an ErrorCode: .name "CORDON_E_INVALID", int value -2),
.code_name ("invalid_input") and .message. See docs/python.md.

Threads: every call releases the GIL while libcordon works. A Cordon
object runs one call at a time (it holds a lock); different Cordon objects
may be used from different threads at once. The module-level functions use
one default Cordon per thread.
"""
import base64
import codecs
import ctypes
import json
import os
import threading

from . import _lib
from .errors import (
    AbiMismatch, AlreadyExists, Busy, Cancelled, CheckpointInvalid, CheckpointNotFound, Denied,
    Error, ErrorCode, InvalidInput, IOFailure, LimitExceeded, NotFound, OutOfMemory,
    ProviderError, ProviderUnavailable, Timeout, UnsafePath, Unavailable, Unsupported, error_for,
)

__all__ = [
    "Cordon", "Result", "Error", "ErrorCode", "run", "provision", "exec", "checkpoint", "restore",
    "terminate", "reclaim", "ls", "gc", "providers", "probe", "files_write", "files_read", "files_list",
    "files_remove",
    "extend", "checkpoint_ls", "checkpoint_rm",
    "AbiMismatch", "AlreadyExists", "Busy", "Cancelled", "CheckpointInvalid", "CheckpointNotFound",
    "Denied", "InvalidInput", "IOFailure", "LimitExceeded", "NotFound", "OutOfMemory",
    "ProviderError", "ProviderUnavailable", "Timeout", "UnsafePath", "Unavailable", "Unsupported",
    "Sandbox", "AsyncSandbox", "CommandResult", "CommandExitError", "ExecStream", "LINE_MAX",
]

_LIB = _lib.load()
#: Where the library was loaded from.
library = _LIB._name


def _c(text):
    """A str/bytes/PathLike as the char * libcordon takes (None stays NULL)."""
    if text is None:
        return None
    if isinstance(text, bytes):
        return text
    return os.fsencode(text) if isinstance(text, os.PathLike) else str(text).encode("utf-8")


def _doc(obj):
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


class Result(dict):
    """The run result document (docs/json.md section 6), a dict, with
    shortcuts for what a caller reads most."""

    @property
    def ok(self):
        return bool(self.get("ok"))

    @property
    def status(self):
        return self.get("status")

    @property
    def exit_code(self):
        return self.get("exit_code")

    @property
    def stdout(self):
        return self.get("stdout", "")

    @property
    def stderr(self):
        return self.get("stderr", "")

    @property
    def stdout_bytes(self):
        """The retained stdout bytes exactly (stdout_base64 when not UTF-8)."""
        return _stream_bytes(self, "stdout")

    @property
    def stderr_bytes(self):
        return _stream_bytes(self, "stderr")

    @property
    def outputs(self):
        return self.get("outputs", [])

    def output(self, path):
        """The bytes of declared output path ("report.txt" or
        "output/report.txt") returned inline, or None when it is missing.
        KeyError when it was not declared or not returned inline."""
        want = path if path.startswith("output/") else "output/" + path
        for o in self.outputs:
            if o.get("path") != want:
                continue
            if o.get("missing"):
                return None
            if "data" not in o:
                raise KeyError("%s: collected into %s, not inline" % (path, o.get("host_path")))
            if o.get("encoding") == "base64":
                return base64.b64decode(o["data"])
            return o["data"].encode("utf-8")
        raise KeyError("%s: not a declared output of this run" % path)


def _stream_bytes(doc, name):
    if name + "_base64" in doc:
        return base64.b64decode(doc[name + "_base64"])
    return doc.get(name, "").encode("utf-8")


def _files(files):
    """{path: str | bytes | {"content"|"content_base64"|"data", "executable"}}
    or the JSON list form, as the request's "files"."""
    if not isinstance(files, dict):
        return list(files)
    out = []
    for path, v in files.items():
        f = {"path": os.fspath(path)}
        if isinstance(v, dict):
            v = dict(v)
            data = v.pop("data", None)
            if data is not None:
                v.update(_content(data))
            f.update(v)
        else:
            f.update(_content(v))
        out.append(f)
    return out


def _content(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"content_base64": base64.b64encode(bytes(v)).decode("ascii")}
    return {"content": v}


def _put(req, **keys):
    for k, v in keys.items():
        if v is not None:
            req[k] = v
    return req


class _Stdin:
    """stdin for exec: None (/dev/null), an fd, a file object, or bytes/str
    (written to an anonymous file that cordon reads)."""

    def __init__(self, stdin):
        self.fd, self._own = -1, None
        if stdin is None:
            return
        if isinstance(stdin, int):
            self.fd = stdin
        elif hasattr(stdin, "fileno"):
            self.fd = stdin.fileno()
        else:
            data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
            self._own = os.memfd_create("cordon-stdin", os.MFD_CLOEXEC)
            view = memoryview(data)
            while view:
                view = view[os.write(self._own, view):]
            os.lseek(self._own, 0, os.SEEK_SET)
            self.fd = self._own

    def close(self):
        if self._own is not None:
            os.close(self._own)
            self._own = None


LINE_MAX = 65536   # a longer line comes to on_stdout / on_stderr in pieces of this size


class _Lines:
    """One stream's bytes as lines: str (UTF-8, undecodable bytes as U+FFFD),
    each with its newline, or bytes when raw; a line longer than LINE_MAX
    bytes comes in pieces, so that output without newlines is bounded."""

    def __init__(self, deliver, raw):
        self._deliver, self._raw, self._buf = deliver, raw, b""
        self._dec = None if raw else codecs.getincrementaldecoder("utf-8")("replace")

    def _give(self, piece, final=False):
        self._deliver(piece if self._raw else self._dec.decode(piece, final))

    def feed(self, data):
        self._buf += data
        while True:
            nl = self._buf.find(b"\n", 0, LINE_MAX)
            if nl < 0 and len(self._buf) < LINE_MAX:
                return
            cut = nl + 1 if nl >= 0 else LINE_MAX
            piece, self._buf = self._buf[:cut], self._buf[cut:]
            self._give(piece)

    def end(self):
        rest, self._buf = self._buf, b""
        if self._raw:
            if rest:
                self._deliver(rest)
            return
        text = self._dec.decode(rest, True)
        if text:
            self._deliver(text)


def _pump(fds, sinks, errors):
    """Read both pipes to their end, handing lines to the sinks; a sink
    that raises gets nothing more (its error is re-raised by exec), the
    pipe is read on so that the command is not held."""
    import select
    live = dict(zip(fds, sinks))
    poller = select.poll()
    for fd in live:
        poller.register(fd, select.POLLIN)
    while live:
        for fd, _ in poller.poll():
            if fd not in live:
                continue
            data = os.read(fd, 65536)
            sink = live[fd]
            try:
                if sink is not None and not errors:
                    sink.end() if not data else sink.feed(data)
            except BaseException as e:  # noqa: B902 (handed back to the caller)
                errors.append(e)
            if not data:
                poller.unregister(fd)
                del live[fd]


class ExecStream:
    """Iterate over an exec's output as it comes: (stream, line) pairs,
    stream "stdout" or "stderr", line as for on_stdout. The exec runs on a
    thread of its own; at most `buffered` lines wait for the reader, then
    the sandbox's output waits (backpressure). .result is the exec result
    once the iteration ended. Stop early with close(): the exec is
    cancelled and its result waited for."""

    _END = object()

    def __init__(self, cordon_, execution_id, command, buffered=256, **kwargs):
        import queue
        self._q = queue.Queue(maxsize=max(1, int(buffered)))
        self._cancel_r, self._cancel_w = os.pipe()
        self.result, self._error = None, None
        if kwargs.get("cancel_fd") is not None:
            raise InvalidInput("cancel_fd: use close() to stop an ExecStream", ErrorCode.CORDON_E_INVALID)
        kwargs.update(on_stdout=lambda line: self._q.put(("stdout", line)),
                      on_stderr=lambda line: self._q.put(("stderr", line)), cancel_fd=self._cancel_r)

        def run():
            try:
                self.result = cordon_.exec(execution_id, command, **kwargs)
            except BaseException as e:  # noqa: B902 (re-raised by the iteration)
                self._error = e
            finally:
                self._q.put(self._END)
        self._thread = threading.Thread(target=run, name="cordon-exec-stream", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._thread is None:
            raise StopIteration
        item = self._q.get()
        if item is self._END:
            self._finish()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return item

    def _finish(self):
        self._thread.join()
        self._thread = None
        os.close(self._cancel_r)
        os.close(self._cancel_w)

    def close(self):
        """Cancel the exec (when still running) and wait for its result."""
        if self._thread is None:
            return
        os.write(self._cancel_w, b"x")
        while self._q.get() is not self._END:
            pass
        self._finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Cordon:
    """A libcordon host context (struct cordon_ctx): a state directory, the
    provider search path, the providers it loaded.

    state_dir: None for $CORDON_STATE_DIR, else /var/lib/cordon (root) or
    ~/.local/state/cordon; config: a JSON configuration file (cordon(1));
    observer: the cordon-observe to use (None: the installed one);
    fresh: bypass the probe cache. Close it with close() or a with block.
    """

    def __init__(self, state_dir=None, config=None, observer=None, fresh=False):
        self._lock = threading.Lock()
        self._ctx = ctypes.c_void_p()
        opts = _lib.CtxOpts(ctypes.sizeof(_lib.CtxOpts), _c(state_dir), _c(config), _c(observer),
                            bool(fresh))
        err = _err()
        r = _LIB.cordon_ctx_new(ctypes.byref(opts), ctypes.byref(self._ctx), ctypes.byref(err))
        if r < 0:
            self._ctx = ctypes.c_void_p()
            raise _error(r, err)

    def close(self):
        with self._lock:
            if self._ctx:
                _LIB.cordon_ctx_free(self._ctx)
                self._ctx = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _call(self, fn, *args):
        """fn(ctx, *args, &out, &err): the parsed document, the returned
        buffer freed with cordon_free whatever happens."""
        out, err = ctypes.c_void_p(), _err()
        with self._lock:
            if not self._ctx:
                raise InvalidInput("this Cordon is closed", ErrorCode.CORDON_E_INVALID)
            r = fn(self._ctx, *args, ctypes.byref(out), ctypes.byref(err))
        try:
            if r < 0:
                raise _error(r, err)
            text = ctypes.string_at(out.value) if out.value else b""
        finally:
            if out.value:
                _LIB.cordon_free(out)
        return json.loads(text.decode("utf-8"))

    # --- the code-execution flow -------------------------------------------

    def run(self, files, language=None, entry=None, args=None, outputs=None, isolation="required",
            providers=None, allow_unsafe_local=None, limits=None, timeout_ms=None, workspace=None,
            inputs=None, image=None, environment=None, toolchain=None, cancel_fd=None,
            best_effort_limits=None):
        """Run a bundle (cordon_run_json; docs/json.md sections 5 and 6).

        files: {path: text | bytes | {"data": ..., "executable": True}} or
        the request's list form. entry: the entrypoint path. outputs:
        declared outputs, relative to output/; without workspace they come
        back inline (Result.output). isolation: "required" (default),
        "preferred" or "none". Returns a Result whatever the program did
        (status success, error, timeout, output_limit, oom, cancelled);
        raises Error when the run was refused ("status": "blocked": a bad
        request, no usable provider), with the result in err.result.
        cancel_fd: an fd whose becoming readable (write to a pipe from
        another thread) ends the run with status "cancelled", its program
        killed and what it made torn down.
        """
        req = _put({"files": _files(files)}, language=language, entrypoint=entry,
                   args=list(args) if args is not None else None,
                   outputs=list(outputs) if outputs is not None else None, isolation=isolation,
                   providers=list(providers) if providers is not None else None,
                   allow_unsafe_local=allow_unsafe_local, limits=limits, timeout_ms=timeout_ms,
                   workspace=os.fspath(workspace) if workspace is not None else None,
                   inputs=[os.fspath(i) for i in inputs] if inputs is not None else None,
                   image=image, environment=environment, toolchain=toolchain,
                   best_effort_limits=list(best_effort_limits) if best_effort_limits is not None else None)
        result = Result(self._call(_LIB.cordon_run_cancellable_json, _doc(req),
                                   -1 if cancel_fd is None else int(cancel_fd)))
        if result.get("status") == "blocked":
            first = result.get("error") or (result.get("diagnostics") or [{}])[0]
            raise error_for(first.get("code", "provider_error"),
                            first.get("message", "the run was refused"), result=result)
        return result

    # --- the execution-host lifecycle --------------------------------------

    def provision(self, provider, resources, image=None, workspace=None, network=None,
                  environment=None, metadata=None, execution_id=None, isolation=None,
                  allow_unsafe_local=None, allow_unpinned=None, provider_config=None, best_effort_limits=None):
        """Create a long-lived execution (cordon provision; json.md section 7).
        resources: all six limits. Returns the provision result."""
        req = _put({"provider": provider, "resources": resources}, image=image,
                   workspace=workspace, network=network, environment=environment,
                   metadata=metadata, execution_id=execution_id, isolation=isolation,
                   allow_unsafe_local=allow_unsafe_local, allow_unpinned=allow_unpinned,
                   provider_config=provider_config,
                   best_effort_limits=list(best_effort_limits) if best_effort_limits is not None else None)
        return self._call(_LIB.cordon_provision_json, _doc(req))

    def exec(self, execution_id, command, args=None, cwd=None, environment=None, timeout_ms=None,
             stdin=None, cancel_fd=None, on_stdout=None, on_stderr=None, raw=False):
        """Run a command in an execution (cordon exec; json.md section 8).
        stdin: None, bytes, str, an fd or a file object; cancel_fd: an fd
        whose becoming readable cancels the exec (the command's process
        group is killed; the execution stays ready unless the result says
        "execution_terminated"). on_stdout, on_stderr: called, on a thread
        of the binding's, with each line of that stream as it comes (str
        with its newline; bytes when raw; a line over LINE_MAX bytes in
        pieces), the streams kept apart (cordon_exec_stream_json). A slow
        callback holds the sandbox's output, not the timeout; one that
        raises gets no more lines and its exception is raised once the
        command ended. Returns the exec result: its "status" says how the
        command ended; Error only when the mechanism failed."""
        req = _put({"command": command}, args=list(args) if args is not None else None, cwd=cwd,
                   environment=environment, timeout_ms=timeout_ms)
        cancel = -1 if cancel_fd is None else int(cancel_fd)
        fd = _Stdin(stdin)
        try:
            if on_stdout is None and on_stderr is None:
                return self._call(_LIB.cordon_exec_json, _c(execution_id), _doc(req), fd.fd, cancel)
            return self._exec_streamed(execution_id, req, fd.fd, cancel, on_stdout, on_stderr, raw)
        finally:
            fd.close()

    def _exec_streamed(self, execution_id, req, stdin_fd, cancel, on_stdout, on_stderr, raw):
        pipes = [os.pipe() if cb is not None else (-1, -1) for cb in (on_stdout, on_stderr)]
        sinks = [_Lines(cb, raw) if cb is not None else None for cb in (on_stdout, on_stderr)]
        errors = []
        reader = threading.Thread(target=_pump, name="cordon-exec-output",
                                  args=([p[0] for p in pipes if p[0] >= 0],
                                        [k for k in sinks if k is not None], errors), daemon=True)
        reader.start()
        try:
            doc = self._call(_LIB.cordon_exec_stream_json, _c(execution_id), _doc(req), stdin_fd,
                             pipes[0][1], pipes[1][1], cancel)
        finally:
            for p in pipes:
                if p[1] >= 0:
                    os.close(p[1])
            reader.join()
            for p in pipes:
                if p[0] >= 0:
                    os.close(p[0])
        if errors:
            raise errors[0]
        return doc

    def exec_stream(self, execution_id, command, buffered=256, **kwargs):
        """exec as an iterator of (stream, line) pairs, as they come; the
        result is the iterator's .result once it ended (ExecStream)."""
        return ExecStream(self, execution_id, command, buffered=buffered, **kwargs)

    def checkpoint(self, execution_id, metadata=None):
        """Save an execution's /workspace; returns the manifest (section 9)."""
        return self._call(_LIB.cordon_checkpoint_json, _c(execution_id),
                          _doc(metadata) if metadata is not None else None)

    def restore(self, checkpoint_id, provider=None, provider_config=None, image=None,
                execution_id=None, allow_unsafe_local=None, allow_unpinned=None, isolation=None):
        """A new execution from a checkpoint (section 10)."""
        req = _put({}, provider=provider, provider_config=provider_config, image=image,
                   execution_id=execution_id, allow_unsafe_local=allow_unsafe_local,
                   allow_unpinned=allow_unpinned, isolation=isolation)
        return self._call(_LIB.cordon_restore_json, _c(checkpoint_id), _doc(req))

    def extend(self, execution_id, runtime_ms):
        """Set the execution's remaining lifetime to runtime_ms from now (sooner or later than
        before), at most 24 h after its creation (section 11.1); a provider that cannot move
        the deadline raises Unsupported and nothing changes."""
        return self._call(_LIB.cordon_extend_json, _c(execution_id), _doc({"runtime_ms": runtime_ms}))

    def checkpoint_ls(self, execution_id=None):
        """{"checkpoints": [...]}: the store, or the checkpoints of execution_id (section 11.2)."""
        return self._call(_LIB.cordon_checkpoint_list_json, _c(execution_id))

    def checkpoint_rm(self, checkpoint_id):
        """Remove a checkpoint; Busy while a restore reads it."""
        return self._call(_LIB.cordon_checkpoint_remove_json, _c(checkpoint_id))

    def terminate(self, execution_id):
        """Destroy an execution; idempotent ("already_gone": true)."""
        return self._call(_LIB.cordon_terminate_json, _c(execution_id))

    def reclaim(self, execution_id, provider=None):
        """Destroy whatever a provider holds for execution_id, record or not."""
        return self._call(_LIB.cordon_reclaim_json, _c(execution_id), _c(provider))

    def ls(self):
        """{"executions": [...]}"""
        return self._call(_LIB.cordon_ls_json)

    def gc(self):
        """Reclaim expired, crashed and unrecorded executions."""
        return self._call(_LIB.cordon_gc_json)

    # --- the warm pool ---------------------------------------------------------

    def pool_fill(self, size, for_="run", ttl_ms=None, **request):
        """Top up the warm pool of one target to size executions (cordon pool
        fill; cordon_pool_fill_json). for_: "run" (request: run()'s keys
        but files, e.g. providers, image, limits, isolation) or "provision"
        (request: provision()'s keys: provider, resources, image,
        environment...). A later run or provision with the same target
        claims one. Returns {"key", "added": [...], ...}."""
        req = _put({"for": for_, "size": size}, ttl_ms=ttl_ms, **request)
        return self._call(_LIB.cordon_pool_fill_json, _doc(req))

    def pool_ls(self):
        """{"pools": [...]}: the unclaimed pooled executions, by key."""
        return self._call(_LIB.cordon_pool_ls_json)

    def pool_drain(self):
        """Destroy every unclaimed pooled execution."""
        return self._call(_LIB.cordon_pool_drain_json)

    # --- files in an execution (json.md section 13) -------------------------

    def files_write(self, execution_id, path, data, mode=0o644):
        """Write data as the regular file path of the execution's /workspace
        (parents created, a regular file there replaced). data: bytes, str
        (UTF-8), a file object or an fd (read from its offset to its end),
        or an os.PathLike naming a host file. Streamed: max_output_bytes
        does not apply; the execution's disk_bytes bounds it. Returns
        {"ok", "execution_id", "path", "size", "mode"}."""
        if isinstance(data, os.PathLike):
            with open(data, "rb") as f:
                return self._call(_LIB.cordon_files_write_json, _c(execution_id), _c(path), int(mode),
                                  f.fileno())
        fd = _Stdin(data)
        try:
            return self._call(_LIB.cordon_files_write_json, _c(execution_id), _c(path), int(mode), fd.fd)
        finally:
            fd.close()

    def files_read(self, execution_id, path, to=None):
        """The bytes of the regular file path in the execution's /workspace.
        With to (an fd or a file object) they stream there instead and the
        result {"ok", "execution_id", "path", "size", "mode"} is returned;
        after a failure to holds a cut-off start that the caller discards.
        A symbolic link is refused (UnsafePath), never followed."""
        if to is not None:
            fd = to if isinstance(to, int) else to.fileno()
            if hasattr(to, "flush"):
                to.flush()
            return self._call(_LIB.cordon_files_read_json, _c(execution_id), _c(path), fd)
        tmp = os.memfd_create("cordon-files-read", os.MFD_CLOEXEC)
        try:
            self._call(_LIB.cordon_files_read_json, _c(execution_id), _c(path), tmp)
            os.lseek(tmp, 0, os.SEEK_SET)
            with os.fdopen(os.dup(tmp), "rb") as f:
                return f.read()
        finally:
            os.close(tmp)

    def files_list(self, execution_id, path=""):
        """{"path", "type", "entries": [{"name", "type", "size", "mode",
        "mtime", "target"}]}: a directory's entries (one level), or the one
        entry of a file or link; "" is the workspace."""
        return self._call(_LIB.cordon_files_list_json, _c(execution_id), _c(path))

    def files_remove(self, execution_id, path):
        """Remove path (a directory with what it holds); missing is NotFound."""
        return self._call(_LIB.cordon_files_remove_json, _c(execution_id), _c(path))

    def providers(self):
        """{"providers": [...]} for every provider .so on the search path."""
        return self._call(_LIB.cordon_providers_json)

    def probe(self, ids=None, config=None):
        """Probe the named providers (all when ids is None): {"probes": [...]}."""
        arr = None
        if ids:
            arr = (ctypes.c_char_p * (len(ids) + 1))(*[_c(i) for i in ids], None)
        return self._call(_LIB.cordon_probe_json, arr, _doc(config) if config is not None else None)


def _err():
    e = _lib.CordonErrorStruct()
    e.struct_size = ctypes.sizeof(e)
    return e


def _error(r, err):
    code = err.code if err.code < 0 else r
    return error_for(code, err.message.decode("utf-8", "replace"), err.os_errno)


_local = threading.local()


def _default():
    c = getattr(_local, "cordon", None)
    if c is None:
        c = _local.cordon = Cordon()
    return c


def run(files, **kwargs):
    """Cordon.run on this thread's default context."""
    return _default().run(files, **kwargs)


def provision(provider, resources, **kwargs):
    return _default().provision(provider, resources, **kwargs)


def exec(execution_id, command, **kwargs):  # noqa: A001 (the cordon verb)
    return _default().exec(execution_id, command, **kwargs)


def checkpoint(execution_id, metadata=None):
    return _default().checkpoint(execution_id, metadata)


def restore(checkpoint_id, **kwargs):
    return _default().restore(checkpoint_id, **kwargs)


def terminate(execution_id):
    return _default().terminate(execution_id)


def extend(execution_id, runtime_ms):
    return _default().extend(execution_id, runtime_ms)


def checkpoint_ls(execution_id=None):
    return _default().checkpoint_ls(execution_id)


def checkpoint_rm(checkpoint_id):
    return _default().checkpoint_rm(checkpoint_id)


def reclaim(execution_id, provider=None):
    return _default().reclaim(execution_id, provider)


def ls():
    return _default().ls()


def gc():
    return _default().gc()


def providers():
    return _default().providers()


def probe(ids=None, config=None):
    return _default().probe(ids, config)


def files_write(execution_id, path, data, mode=0o644):
    """Cordon.files_write on this thread's default context."""
    return _default().files_write(execution_id, path, data, mode)


def files_read(execution_id, path, to=None):
    return _default().files_read(execution_id, path, to)


def files_list(execution_id, path=""):
    return _default().files_list(execution_id, path)


def files_remove(execution_id, path):
    return _default().files_remove(execution_id, path)


# The Sandbox object is built on Cordon, defined above.
from .sandbox import AsyncSandbox, CommandExitError, CommandResult, Sandbox  # noqa: E402
from . import pool  # noqa: E402,F401  (cordon.pool.fill / ls / drain)
