"""Loading libcordon and declaring the C functions the binding calls.

The library is found, in order: the path in $CORDON_LIBRARY (then nothing
else is tried), the libdir that `make install` wrote into _build.py, the
soname through the dynamic linker's own search (ld.so.cache,
LD_LIBRARY_PATH), and ctypes.util.find_library("cordon"). Failing all of
them is an ImportError that lists what was tried.
"""
import ctypes
import ctypes.util
import os

try:
    from . import _build
except ImportError:  # a source tree: make generates _build.py at install time
    _build = None

SONAME = getattr(_build, "SONAME", "libcordon.so.0")
# The release this binding was installed with; a source tree has none and
# wants only a library that can say its version.
VERSION = getattr(_build, "VERSION", None)


def _release(text):
    """'1.2.3' -> (1, 2, 3); None when text is not of that form."""
    try:
        parts = tuple(int(p) for p in text.split("."))
    except (AttributeError, ValueError):
        return None
    return parts if len(parts) == 3 else None


def _too_old(lib):
    """Why lib is older than this binding, or None when it is not."""
    if not hasattr(lib, "cordon_version"):
        return "it is older than cordon_version(), the binding wants %s" % (VERSION or "0.1.0")
    lib.cordon_version.argtypes = []
    lib.cordon_version.restype = ctypes.c_char_p
    have = lib.cordon_version().decode("utf-8", "replace")
    if VERSION is not None and (_release(have) is None or _release(have) < _release(VERSION)):
        return "it is release %s, the binding is %s" % (have, VERSION)
    return None


class CordonErrorStruct(ctypes.Structure):
    """struct cordon_error."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("code", ctypes.c_int32),
        ("os_errno", ctypes.c_int32),
        ("message", ctypes.c_char * 512),
    ]


class CtxOpts(ctypes.Structure):
    """struct cordon_ctx_opts."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("state_dir", ctypes.c_char_p),
        ("config_path", ctypes.c_char_p),
        ("observer_path", ctypes.c_char_p),
        ("fresh", ctypes.c_bool),
    ]


def _candidates():
    explicit = os.environ.get("CORDON_LIBRARY")
    if explicit:
        return [explicit]
    names = []
    libdir = getattr(_build, "LIBDIR", None)
    if libdir:
        names.append(os.path.join(libdir, SONAME))
    names.append(SONAME)
    found = ctypes.util.find_library("cordon")
    if found and found not in names:
        names.append(found)
    return names


def load():
    tried = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            tried.append("%s (%s)" % (name, e))
            continue
        if not hasattr(lib, "cordon_run_json") or not hasattr(lib, "cordon_free"):
            tried.append("%s (not libcordon: no cordon_run_json or cordon_free)" % name)
            continue
        old = _too_old(lib)
        if old is not None:
            tried.append("%s (%s)" % (name, old))
            continue
        _declare(lib)
        return lib
    raise ImportError("cordon: cannot load libcordon (%s); tried: %s. Install libcordon "
                      "(make install, or the libcordon package), or set CORDON_LIBRARY to "
                      "its path" % (SONAME, "; ".join(tried)))


def _declare(lib):
    ctx_p, err_p = ctypes.c_void_p, ctypes.POINTER(CordonErrorStruct)
    out_p, s = ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p
    protos = {
        "cordon_ctx_new": [ctypes.POINTER(CtxOpts), ctypes.POINTER(ctx_p), err_p],
        "cordon_ctx_free": [ctx_p],
        "cordon_free": [ctypes.c_void_p],
        "cordon_providers_json": [ctx_p, out_p, err_p],
        "cordon_probe_json": [ctx_p, ctypes.POINTER(s), s, out_p, err_p],
        "cordon_run_json": [ctx_p, s, out_p, err_p],
        "cordon_run_cancellable_json": [ctx_p, s, ctypes.c_int, out_p, err_p],
        "cordon_provision_json": [ctx_p, s, out_p, err_p],
        "cordon_exec_json": [ctx_p, s, s, ctypes.c_int, ctypes.c_int, out_p, err_p],
        "cordon_exec_stream_json": [ctx_p, s, s, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    out_p, err_p],
        "cordon_checkpoint_json": [ctx_p, s, s, out_p, err_p],
        "cordon_restore_json": [ctx_p, s, s, out_p, err_p],
        "cordon_terminate_json": [ctx_p, s, out_p, err_p],
        "cordon_reclaim_json": [ctx_p, s, s, out_p, err_p],
        "cordon_ls_json": [ctx_p, out_p, err_p],
        "cordon_gc_json": [ctx_p, out_p, err_p],
        "cordon_pool_fill_json": [ctx_p, s, out_p, err_p],
        "cordon_pool_ls_json": [ctx_p, out_p, err_p],
        "cordon_pool_drain_json": [ctx_p, out_p, err_p],
        "cordon_files_write_json": [ctx_p, s, s, ctypes.c_uint32, ctypes.c_int, out_p, err_p],
        "cordon_files_read_json": [ctx_p, s, s, ctypes.c_int, out_p, err_p],
        "cordon_files_list_json": [ctx_p, s, s, out_p, err_p],
        "cordon_files_remove_json": [ctx_p, s, s, out_p, err_p],
        "cordon_extend_json": [ctx_p, s, s, out_p, err_p],
        "cordon_checkpoint_list_json": [ctx_p, s, out_p, err_p],
        "cordon_checkpoint_remove_json": [ctx_p, s, out_p, err_p],
    }
    for name, args in protos.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = None if name in ("cordon_ctx_free", "cordon_free") else ctypes.c_int
