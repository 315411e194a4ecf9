#!/usr/bin/env python3
"""python/cordon/errors.py says what <cordon/error.h> says: the same
CORDON_* names with the same values, the same document names
(cordon_error_name), and an exception class for every code. Run by make
check; a code added to the header without the binding, or the other way
round, fails here.

    tests/python/error-codes.py [ERROR_H [ERRORS_PY]]

Prints what differs, then "error-codes: N passed, N failed"; exits 1 when
anything differs.
"""
import importlib.util
import os
import re
import sys

top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
header = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "plugin-api", "cordon", "error.h")
module = sys.argv[2] if len(sys.argv) > 2 else os.path.join(top, "python", "cordon", "errors.py")

with open(header, encoding="utf-8") as f:
    text = f.read()
enum_body = re.search(r"enum cordon_error_code\s*\{(.*?)\};", text, re.S)
switch_body = re.search(r"cordon_error_name\(int code\)\s*\{(.*?)\n\}", text, re.S)
c_values = {}
if enum_body:
    for name, value in re.findall(r"\b(CORDON_[A-Z_]+?)\s*=\s*(-?\d+)", enum_body.group(1)):
        if not name.endswith("_"):   # CORDON_E_MAX_ marks the end, it is no code
            c_values[name] = int(value)
c_names = dict(re.findall(r"case\s+(CORDON_[A-Z_]+):\s*return\s+\"([a-z_]+)\"", switch_body.group(1))) \
    if switch_body else {}
default = re.search(r"default:\s*return\s+\"([a-z_]+)\"", switch_body.group(1)) if switch_body else None
# The switch's default is CORDON_E_PROVIDER's name (unknown codes read as it).
if default and "CORDON_E_PROVIDER" not in c_names:
    c_names["CORDON_E_PROVIDER"] = default.group(1)

spec = importlib.util.spec_from_file_location("cordon_errors", module)
errors = importlib.util.module_from_spec(spec)
spec.loader.exec_module(errors)
py_values = {m.name: int(m) for m in errors.ErrorCode}
py_names = {code.name: name for code, name in errors._NAMES.items()}
py_classes = set(code.name for code in errors._CLASSES)

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("error-codes: " + what)


check(len(c_values) >= 19, "%s: only %d codes read from enum cordon_error_code" % (header, len(c_values)))
check(len(c_names) >= 19, "%s: only %d names read from cordon_error_name" % (header, len(c_names)))
for name in sorted(set(c_values) | set(py_values)):
    check(name in py_values, "%s = %s is in error.h, not in ErrorCode" % (name, c_values.get(name)))
    check(name in c_values, "%s is in ErrorCode, not in error.h" % name)
    if name in c_values and name in py_values:
        check(c_values[name] == py_values[name],
              "%s is %d in error.h, %d in ErrorCode" % (name, c_values[name], py_values[name]))
    check(c_names.get(name) is not None and c_names.get(name) == py_names.get(name),
          "%s: cordon_error_name says %r, _NAMES says %r" % (name, c_names.get(name), py_names.get(name)))
    if name != "CORDON_OK":
        check(name in py_classes, "%s has no exception class in _CLASSES" % name)
print("error-codes: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
