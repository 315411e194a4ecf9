"""cordon's error codes (<cordon/error.h>) as Python exceptions.

Every failure the library reports carries a negative CORDON_E_* code and a
one-line message that names the field, the value and the limit. The binding
raises an Error subclass for it; ``err.code`` is an ErrorCode member, whose
``name`` is the C name (``"CORDON_E_INVALID"``) and whose int value is the
C value (-2), and ``err.code_name`` is the document spelling
(``"invalid_input"``, docs/json.md section 2).
"""
import enum


class ErrorCode(enum.IntEnum):
    """The values of enum cordon_error_code; fixed forever."""

    CORDON_OK = 0
    CORDON_E_PROVIDER = -1
    CORDON_E_INVALID = -2
    CORDON_E_NOMEM = -3
    CORDON_E_LIMIT = -4
    CORDON_E_UNSAFE = -5
    CORDON_E_NOT_FOUND = -6
    CORDON_E_EXISTS = -7
    CORDON_E_UNAVAILABLE = -8
    CORDON_E_UNSUPPORTED = -9
    CORDON_E_DENIED = -10
    CORDON_E_IO = -11
    CORDON_E_TIMEOUT = -12
    CORDON_E_CANCELLED = -13
    CORDON_E_ABI = -14
    CORDON_E_PROVIDER_UNAVAILABLE = -15
    CORDON_E_CHECKPOINT_INVALID = -16
    CORDON_E_CHECKPOINT_NOT_FOUND = -17
    CORDON_E_BUSY = -18


# cordon_error_name(): the snake_case names the JSON documents use.
_NAMES = {
    ErrorCode.CORDON_OK: "ok",
    ErrorCode.CORDON_E_PROVIDER: "provider_error",
    ErrorCode.CORDON_E_INVALID: "invalid_input",
    ErrorCode.CORDON_E_NOMEM: "out_of_memory",
    ErrorCode.CORDON_E_LIMIT: "limit_exceeded",
    ErrorCode.CORDON_E_UNSAFE: "unsafe_path",
    ErrorCode.CORDON_E_NOT_FOUND: "not_found",
    ErrorCode.CORDON_E_EXISTS: "already_exists",
    ErrorCode.CORDON_E_UNAVAILABLE: "unavailable",
    ErrorCode.CORDON_E_UNSUPPORTED: "unsupported",
    ErrorCode.CORDON_E_DENIED: "denied",
    ErrorCode.CORDON_E_IO: "io_error",
    ErrorCode.CORDON_E_TIMEOUT: "timeout",
    ErrorCode.CORDON_E_CANCELLED: "cancelled",
    ErrorCode.CORDON_E_ABI: "abi_mismatch",
    ErrorCode.CORDON_E_PROVIDER_UNAVAILABLE: "provider_unavailable",
    ErrorCode.CORDON_E_CHECKPOINT_INVALID: "checkpoint_invalid",
    ErrorCode.CORDON_E_CHECKPOINT_NOT_FOUND: "checkpoint_not_found",
    ErrorCode.CORDON_E_BUSY: "busy",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}


class Error(Exception):
    """A cordon failure.

    code: an ErrorCode (a code the binding does not know reads as
    CORDON_E_PROVIDER, as in C); code_name: its document spelling;
    message: cordon's one-line message; os_errno: the errno behind it, or 0;
    result: for a run that was refused ("status": "blocked"), the whole
    result document (a Result), else None.
    """

    code = ErrorCode.CORDON_E_PROVIDER

    def __init__(self, message, code=None, os_errno=0, result=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.os_errno = os_errno
        self.result = result

    @property
    def code_name(self):
        return _NAMES[self.code]

    def __str__(self):
        return "%s (%s %d): %s" % (self.code_name, self.code.name, int(self.code), self.message)


def _subclass(name, code, doc):
    return type(name, (Error,), {"code": code, "__doc__": doc, "__module__": "cordon"})


ProviderError = _subclass("ProviderError", ErrorCode.CORDON_E_PROVIDER, "generic provider failure")
InvalidInput = _subclass("InvalidInput", ErrorCode.CORDON_E_INVALID, "bad input; the message names the field")
OutOfMemory = _subclass("OutOfMemory", ErrorCode.CORDON_E_NOMEM, "out of memory")
LimitExceeded = _subclass("LimitExceeded", ErrorCode.CORDON_E_LIMIT, "a bound was exceeded; the message names it")
UnsafePath = _subclass("UnsafePath", ErrorCode.CORDON_E_UNSAFE, "a path, link or tar entry was refused")
NotFound = _subclass("NotFound", ErrorCode.CORDON_E_NOT_FOUND, "no such execution, file, provider, program")
AlreadyExists = _subclass("AlreadyExists", ErrorCode.CORDON_E_EXISTS, "an execution id in use")
Unavailable = _subclass("Unavailable", ErrorCode.CORDON_E_UNAVAILABLE, "the mechanism is not reachable now")
Unsupported = _subclass("Unsupported", ErrorCode.CORDON_E_UNSUPPORTED, "not supported")
Denied = _subclass("Denied", ErrorCode.CORDON_E_DENIED, "refused by policy")
IOFailure = _subclass("IOFailure", ErrorCode.CORDON_E_IO, "an I/O error")
Timeout = _subclass("Timeout", ErrorCode.CORDON_E_TIMEOUT, "a deadline passed")
Cancelled = _subclass("Cancelled", ErrorCode.CORDON_E_CANCELLED, "cancelled")
AbiMismatch = _subclass("AbiMismatch", ErrorCode.CORDON_E_ABI, "a .so that is not a loadable provider of this ABI")
ProviderUnavailable = _subclass("ProviderUnavailable", ErrorCode.CORDON_E_PROVIDER_UNAVAILABLE,
                                "selection found no usable provider")
CheckpointInvalid = _subclass("CheckpointInvalid", ErrorCode.CORDON_E_CHECKPOINT_INVALID,
                              "a checkpoint that does not validate")
CheckpointNotFound = _subclass("CheckpointNotFound", ErrorCode.CORDON_E_CHECKPOINT_NOT_FOUND,
                               "no such checkpoint")
Busy = _subclass("Busy", ErrorCode.CORDON_E_BUSY, "the execution is locked by another call")

_CLASSES = {c.code: c for c in (
    ProviderError, InvalidInput, OutOfMemory, LimitExceeded, UnsafePath, NotFound, AlreadyExists,
    Unavailable, Unsupported, Denied, IOFailure, Timeout, Cancelled, AbiMismatch,
    ProviderUnavailable, CheckpointInvalid, CheckpointNotFound, Busy)}


def error_for(code, message, os_errno=0, result=None):
    """The exception for a C code (an int) or a document code name (a str)."""
    if isinstance(code, str):
        c = _BY_NAME.get(code, ErrorCode.CORDON_E_PROVIDER)
    else:
        try:
            c = ErrorCode(code)
        except ValueError:
            c = ErrorCode.CORDON_E_PROVIDER
    if c == ErrorCode.CORDON_OK:
        c = ErrorCode.CORDON_E_PROVIDER
    return _CLASSES[c](message, c, os_errno, result)
