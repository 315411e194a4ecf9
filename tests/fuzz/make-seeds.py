#!/usr/bin/env python3
"""Write the seed corpora of tests/fuzz/corpus/<target>/ (run from anywhere).

Each seed is a good input or one of the hostile cases the unit and
mechanism tests already refuse; the fuzzers start from them. The corpus in
the repository is this script's output: rerun it after changing it.
Deterministic (fixed mtimes, sorted), so a rerun changes nothing.
"""
import io
import json
import os
import tarfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tar(entries, fmt=tarfile.PAX_FORMAT):
    """entries: (name, type, payload-or-linkname, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, kind, payload, mode in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            ti.mode = mode
            ti.type = kind
            data = None
            if kind == tarfile.REGTYPE:
                data = payload if isinstance(payload, bytes) else payload.encode()
                ti.size = len(data)
            elif kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                ti.linkname = payload
            elif kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                ti.devmajor, ti.devminor = 1, 3
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    # tarfile pads to 10 KiB records: keep the entries and the two zero blocks
    raw = buf.getvalue().rstrip(b"\0")
    end = (len(raw) + 511) // 512 * 512
    return raw.ljust(end, b"\0") + b"\0" * 1024


F, D, L, H = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
TARS = {
    "good": [("a", D, None, 0o755), ("a/b.txt", F, "hello\n", 0o644), ("run.sh", F, "#!/bin/sh\n", 0o755)],
    "dotdot": [("../escape", F, "x", 0o644)],
    "inner-dotdot": [("a/../../escape", F, "x", 0o644)],
    "absolute": [("/etc/cordon-fuzz", F, "x", 0o644)],
    "symlink-abs": [("l", L, "/etc", 0o777)],
    "symlink-out": [("l", L, "../../..", 0o777)],
    "symlink-then-through": [("d", L, "sub", 0o777), ("sub", D, None, 0o755), ("d/f", F, "x", 0o644)],
    "symlink-inside": [("sub", D, None, 0o755), ("sub/f", F, "x", 0o644), ("l", L, "sub/f", 0o777)],
    "hardlink": [("f", F, "x", 0o644), ("h", H, "f", 0o644)],
    "hardlink-out": [("h", H, "/etc/passwd", 0o644)],
    "device": [("null", tarfile.CHRTYPE, None, 0o666)],
    "fifo": [("p", tarfile.FIFOTYPE, None, 0o644)],
    "setuid": [("s", F, "x", 0o4755)],
    "dup-file-dir": [("x", F, "x", 0o644), ("x/y", F, "y", 0o644)],
    "dup-dir-file": [("x", D, None, 0o755), ("x", F, "x", 0o644)],
    "longname": [("d/" + "n" * 300, F, "x", 0o644)],
    "source-tree": [("source", D, None, 0o755), ("source/main.py", F, "print(1)\n", 0o644),
                    ("output", D, None, 0o755), ("output/r.txt", F, "r", 0o644)],
    "control-chars": [("a\x1b[31mred", F, "x", 0o644)],
    "dot-entries": [(".", D, None, 0o755), ("./a", F, "x", 0o644), ("a/.", D, None, 0o755)],
}


def tar_seeds():
    i = 0
    for name, entries in sorted(TARS.items()):
        data = tar(entries)
        gnu = tar(entries, tarfile.GNU_FORMAT)
        # fuzz-tar: first byte = path (low 3 bits) and flags (bits 3..6)
        for sel in (0, 1, 2, 4, 5):
            flags = (i + sel) % 16
            put("fuzz-tar", "%s-%d" % (name, sel), bytes([sel | flags << 3]) + (gnu if sel % 2 else data))
        # fuzz-docker: 5 = import filter, 0x85 = export filter (root, NUL, tar)
        put("fuzz-docker", "import-" + name, bytes([5]) + data)
        put("fuzz-docker", "export-" + name, bytes([0x85]) + b"\0" + data)
        i += 1
    # a manifest + data pair for import_files
    manifest = json.dumps({"files": [{"path": "main.py", "size": 9, "mode": 420},
                                     {"path": "lib/x.py", "size": 2, "mode": 493}]})
    for sel in (6, 7):
        put("fuzz-tar", "files-%d" % sel, bytes([sel]) + manifest.encode() + b"\0print(1)\nx\n")
    put("fuzz-tar", "files-short", bytes([6]) + manifest.encode() + b"\0print")
    put("fuzz-tar", "files-dotdot", bytes([7]) + json.dumps(
        {"files": [{"path": "../x", "size": 1, "mode": 420}]}).encode() + b"\0x")
    # a truncated header and a header with a huge size
    good = tar(TARS["good"])
    put("fuzz-tar", "truncated", bytes([0]) + good[:700])
    huge = bytearray(tar([("big", F, "", 0o644)]))
    huge[124:136] = b"77777777777\0"
    put("fuzz-tar", "huge-size", bytes([2]) + bytes(huge))
    # A file 1,500 directories deep (one 3,000-byte pax name): more than
    # the host's removal holds fds for, which it must remove all the same
    # (the 10-minute run found the harness's own cleanup failing on one).
    put("fuzz-tar", "deep-tree", bytes([4]) + tar([("d/" * 1500 + "f", F, "x", 0o644)]))


def c_strings(path):
    """The static const char NAME[] = "..." "..."; literals of a test file."""
    import ast
    import re
    text = open(path).read()
    out = {}
    for m in re.finditer(r'static const char (\w+)\[\] =\s*((?:"(?:[^"\\]|\\.)*"\s*)+);', text):
        pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2))
        out[m.group(1)] = "".join(ast.literal_eval('"' + p + '"') for p in pieces)
    return out


def observe_seeds():
    # The reports and host views the unit tests compare, each report with
    # each view, and each report with one check broken at a time.
    unit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit")
    lit = {}
    for f in ("test_observe.c", "test_observe_kinds.c"):
        lit.update(c_strings(os.path.join(unit, f)))
    reports = {k: v for k, v in lit.items() if k.endswith("report")}
    views = {k: v for k, v in lit.items() if k.endswith("view")}
    for rn, rv in sorted(reports.items()):
        for vn, vv in sorted(views.items()):
            put("fuzz-observe", "%s-%s" % (rn, vn), rv + "\0" + vv)
        doc = json.loads(rv)
        breaks = {"pid-shared": ("ns", "pid", 4026531836), "canary-seen": ("canary_file", "exists", True),
                  "nnp-off": ("status", "NoNewPrivs", 0), "seccomp-off": ("status", "Seccomp", 0),
                  "caps": ("status", "CapEff", "000001ffffffffff"), "uid0": ("ids", "uid", 0)}
        for bn, (a, b, v) in sorted(breaks.items()):
            if isinstance(doc.get(a), dict):
                d = json.loads(rv)
                d[a][b] = v
                put("fuzz-observe", "%s-%s" % (rn, bn), json.dumps(d) + "\0" + sorted(views.values())[0])
    put("fuzz-observe", "empty-objects", "{}\0{}")
    put("fuzz-observe", "not-json", "{\"ns\": \0{")
    put("fuzz-observe", "deep", "[" * 2000 + "\0" + views["host_view"])
    put("fuzz-observe", "wrong-types", json.dumps({"ns": 1, "uid": "root", "seccomp": [2],
                                                   "kernel": {"kind": 7}}) + "\0" + views["host_view"])


def facts_seeds():
    facts = {"provider_id": "example", "provider_version": "1.0.0", "abi": "1.2",
             "safety_class": "container", "observed_by": "cordon-observe",
             "isolation": {"process_contained": True, "host_filesystem_restricted": True,
                           "privilege_escalation_blocked": True, "syscalls_restricted": True},
             "network": "none", "toolchains": {"python": {"available": True, "version": "3.11.2",
                                                          "raw_version": "Python 3.11.2"},
                                               "go": {"available": False, "reason": "not installed"}},
             "limits": {"cpus": True, "memory_bytes": True}}
    put("fuzz-facts", "facts", b"\0" + json.dumps(facts).encode())
    # the facts the unit tests validate, and each with one member removed
    unit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit")
    good = c_strings(os.path.join(unit, "test_facts.c"))["good_facts"]
    put("fuzz-facts", "unit-good-facts", b"\0" + good.encode())
    doc = json.loads(good)
    for k in sorted(doc):
        d = dict(doc)
        del d[k]
        put("fuzz-facts", "unit-without-" + k, b"\0" + json.dumps(d).encode())
    lying = dict(facts, observed_by="cordon-observe", isolation={"process_contained": "yes"})
    put("fuzz-facts", "facts-wrong-types", b"\0" + json.dumps(lying).encode())
    put("fuzz-facts", "facts-empty", b"\0{}")
    put("fuzz-facts", "facts-huge-number", b"\0" + b'{"abi": 1e999, "network": null}')
    for i, (tool, raw) in enumerate((("python", "Python 3.11.2"), ("node", "v20.19.2"),
                                     ("go", "go version go1.19.8 linux/amd64"),
                                     ("c++", "c++ (Debian 12.2.0-14) 12.2.0"),
                                     ("python", "Python 3." + "9" * 200), ("node", "vv.."))):
        put("fuzz-facts", "version-%d" % i, b"\1" + tool.encode() + b"\0" + raw.encode())
    for i, (a, b) in enumerate((("3.10", "3.9"), ("1.0", "1"), ("99999999999999999999.1", "1.2"), ("", "."))):
        put("fuzz-facts", "compare-%d" % i, b"\2" + a.encode() + b"\0" + b.encode())


def units_seeds():
    for i, s in enumerate(("512M", "1G", "4096", "0", "18446744073709551615", "16E", "1.5G", "-1", "1 G",
                           "99999999999999999999999T", "")):
        put("fuzz-units", "size-%d" % i, b"\0" + s.encode())
    for i, s in enumerate(("250ms", "10s", "5m", "1h", "30", "0s", "1e9h", "18446744073709551615ms", "1hms")):
        put("fuzz-units", "duration-%d" % i, b"\1" + s.encode())
    limits = {"cpus": 1.5, "memory_bytes": 536870912, "disk_bytes": 268435456, "pids": 256,
              "runtime_ms": 30000, "max_output_bytes": 8388608}
    put("fuzz-units", "limits", b"\2" + json.dumps(limits).encode())
    put("fuzz-units", "limits-negative", b"\2" + json.dumps(dict(limits, cpus=-1, pids=1e300)).encode())
    put("fuzz-units", "limits-dup", b"\2" + b'{"cpus": 1, "cpus": 2}')
    for i, s in enumerate(('"required"', '"preferred"', '"none"', '"Required"', '1')):
        put("fuzz-units", "isolation-%d" % i, b"\3" + s.encode())
    put("fuzz-units", "env", b"\4" + json.dumps({"LANG": "C.UTF-8", "A_B": "x"}).encode())
    put("fuzz-units", "env-bad", b"\4" + json.dumps({"1X": "y", "AWS_SECRET_ACCESS_KEY": "k",
                                                     "LD_PRELOAD": "/x.so", "P": "a\u0000b"}).encode())


def bundle_seeds():
    good = {"language": "python", "files": [{"path": "main.py", "content": "print('hi')\n"}],
            "entrypoint": "main.py", "args": ["a"], "outputs": ["output/result.txt"]}
    put("fuzz-bundle", "python", b"\0" + json.dumps(good).encode())
    for lang, fname in (("node", "main.js"), ("go", "main.go"), ("cpp", "main.cpp")):
        put("fuzz-bundle", lang, b"\0" + json.dumps(dict(good, language=lang, entrypoint=fname,
                                                         files=[{"path": fname, "content": "x"}])).encode())
    put("fuzz-bundle", "dotdot", b"\0" + json.dumps(dict(good, files=[{"path": "../x", "content": ""}])).encode())
    put("fuzz-bundle", "absolute-output", b"\0" + json.dumps(dict(good, outputs=["/etc/passwd"])).encode())
    put("fuzz-bundle", "case-dup", b"\0" + json.dumps(dict(good, files=[{"path": "A.py", "content": ""},
                                                                        {"path": "a.py", "content": ""}])).encode())
    put("fuzz-bundle", "unknown-key", b"\0" + json.dumps(dict(good, sudo=True)).encode())
    put("fuzz-bundle", "args-string", b"\0" + json.dumps(dict(good, args="rm -rf /")).encode())
    for i, paths in enumerate((["a/b", "a"], ["./x//y/", "x/y"], ["..", "a/../b"], ["a\x01b"], ["A", "a"],
                               ["output/r", "output"])):
        put("fuzz-bundle", "paths-%d" % i, b"\1" + b"\0".join(p.encode() for p in paths))


def checkpoint_seeds():
    ws = tar(TARS["good"])
    import hashlib
    manifest = {"version": 1, "checkpoint_id": "ckpt-000000000000000000000000",
                "source_execution_id": "exec-1", "provider_id": "runc", "image": "x@sha256:" + "0" * 64,
                "resources": {"cpus": 1, "memory_bytes": 536870912, "disk_bytes": 268435456, "pids": 256,
                              "runtime_ms": 30000, "max_output_bytes": 8388608},
                "network": {"mode": "none"}, "environment": {"A": "b"}, "metadata": {},
                "created_at": "2026-12-03T09:00:00Z",
                "workspace": {"sha256": hashlib.sha256(ws).hexdigest(), "bytes": len(ws), "entries": 3}}
    put("fuzz-checkpoint", "good", json.dumps(manifest).encode() + b"\0" + ws)
    put("fuzz-checkpoint", "wrong-id", json.dumps(dict(manifest, checkpoint_id="ckpt-../../x")).encode() + b"\0" + ws)
    put("fuzz-checkpoint", "bytes-mismatch", json.dumps(dict(manifest, workspace=dict(manifest["workspace"], bytes=1))).encode() + b"\0" + ws)
    put("fuzz-checkpoint", "extra-key", json.dumps(dict(manifest, evil=1)).encode() + b"\0" + ws)
    put("fuzz-checkpoint", "bad-resources", json.dumps(dict(manifest, resources={"cpus": -1})).encode() + b"\0" + ws)
    put("fuzz-checkpoint", "trailing", json.dumps(manifest).encode() + b" {}\0" + ws)


def docker_seeds():
    def frame(kind, payload):
        return bytes([kind, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload
    put("fuzz-docker", "demux", bytes([0, 5]) + frame(1, b"out\n") + frame(2, b"err\n") + frame(1, b""))
    put("fuzz-docker", "demux-oci-error", bytes([0, 3]) + frame(1, b"OCI runtime exec failed: exec failed"))
    put("fuzz-docker", "demux-daemon-stream", bytes([0, 9]) + frame(3, b"daemon says no"))
    put("fuzz-docker", "demux-bad-type", bytes([0, 0]) + frame(7, b"x"))
    put("fuzz-docker", "demux-huge-frame", bytes([0, 1]) + bytes([1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]) + b"x")
    put("fuzz-docker", "head-101", b"\1HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
        b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" + frame(1, b"hi"))
    put("fuzz-docker", "head-404", b"\1HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        b"Content-Length: 30\r\n\r\n{\"message\":\"No such exec: x\"}")
    put("fuzz-docker", "head-length-lies", b"\1HTTP/1.1 500 x\r\nContent-Length: -5\r\n\r\n{\"message\":1}")
    put("fuzz-docker", "head-length-huge", b"\1HTTP/1.1 409 x\r\nContent-Length: 99999999999999999999\r\n\r\nbody")
    put("fuzz-docker", "header-api", b"\2Api-Version:   1.41\r\n")
    put("fuzz-docker", "header-long", b"\2API-VERSION:" + b"9" * 100 + b"\r\n")
    put("fuzz-docker", "error-json", b"\3\x90{\"message\": \"conflict: \\u001b[31mred\"}")
    put("fuzz-docker", "error-raw", b"\3\x04plain text\nsecond line")
    req = {"argv": ["python3", "main.py"], "cwd": "source", "env": {"A": "b"},
           "workspace_env": {"HOME": "build/home"}, "timeout_ms": 1000}
    put("fuzz-docker", "request", b"\4\1" + json.dumps(req).encode())
    put("fuzz-docker", "request-bad-cwd", b"\4\0" + json.dumps(dict(req, cwd="../..")).encode())
    put("fuzz-docker", "request-env-under-source", b"\4\1" + json.dumps(dict(req, workspace_env={"X": "source/x"})).encode())
    put("fuzz-docker", "request-argv-empty", b"\4\0" + json.dumps(dict(req, argv=[])).encode())


def documents_seeds():
    req = {"argv": ["python3", "main.py", "a b"], "cwd": "source", "env": {"PATH": "/usr/bin:/bin"},
           "workspace_env": {"HOME": "build/home", "TMPDIR": "build/tmp"}, "timeout_ms": 29985}
    put("fuzz-documents", "request", b"\0" + json.dumps(req).encode())
    put("fuzz-documents", "request-minimal", b"\0" + b'{"argv": ["id"]}')
    put("fuzz-documents", "request-nulls", b"\0" + json.dumps(dict(req, cwd=None, env=None, workspace_env=None,
                                                                   timeout_ms=None)).encode())
    put("fuzz-documents", "request-cwd-up", b"\0" + json.dumps(dict(req, cwd="../..")).encode())
    put("fuzz-documents", "request-cwd-dots", b"\0" + json.dumps(dict(req, cwd="./a//b/./")).encode())
    put("fuzz-documents", "request-argv-empty", b"\0" + json.dumps(dict(req, argv=[""])).encode())
    put("fuzz-documents", "request-argv-number", b"\0" + json.dumps(dict(req, argv=["id", 3])).encode())
    put("fuzz-documents", "request-env-dup", b"\0" + b'{"argv": ["id"], "env": {"A": "1", "A": "2"}}')
    put("fuzz-documents", "request-env-bad", b"\0" + json.dumps(dict(req, env={"1X": "y", "P": "a\u0000b"})).encode())
    put("fuzz-documents", "request-wenv-abs", b"\0" + json.dumps(dict(req, workspace_env={"H": "/etc"})).encode())
    put("fuzz-documents", "request-timeout-huge", b"\0" + json.dumps(dict(req, timeout_ms=1e300)).encode())
    spec = {"execution_id": "rec-demo", "image": None,
            "resources": {"cpus": 0.5, "memory_bytes": 268435456, "disk_bytes": 67108864, "pids": 64,
                          "runtime_ms": 300000, "max_output_bytes": 1048576},
            "network": {"mode": "none"}, "environment": {"LANG": "C.UTF-8"}, "layout": "host",
            "expires_at_ms": 1795946710761}
    put("fuzz-documents", "spec", b"\1" + json.dumps(spec).encode())
    put("fuzz-documents", "spec-minimal", b"\1" + json.dumps({k: spec[k] for k in ("execution_id", "resources")}).encode())
    put("fuzz-documents", "spec-image", b"\1" + json.dumps(dict(spec, image="/srv/rootfs.tar@sha256:" + "a" * 64, layout="code")).encode())
    put("fuzz-documents", "spec-nulls", b"\1" + json.dumps(dict(spec, image=None, environment=None, expires_at_ms=None)).encode())
    put("fuzz-documents", "spec-id-bad", b"\1" + json.dumps(dict(spec, execution_id="../x")).encode())
    put("fuzz-documents", "spec-network-host", b"\1" + json.dumps(dict(spec, network={"mode": "host"})).encode())
    put("fuzz-documents", "spec-pids-low", b"\1" + json.dumps(dict(spec, resources=dict(spec["resources"], pids=1))).encode())
    put("fuzz-documents", "spec-layout-bad", b"\1" + json.dumps(dict(spec, layout="all")).encode())
    put("fuzz-documents", "result-exited", b"\2" + b'{"status": "exited", "exit_code": 3}')
    put("fuzz-documents", "result-folded", b"\2" + b'{"status": "exited", "exit_code": 137, "signal_folded": true}')
    put("fuzz-documents", "result-signaled", b"\2" + b'{"status": "signaled", "signal": 9, "backstop_timeout": true}')
    put("fuzz-documents", "result-oom", b"\2" + b'{"status": "oom"}')
    put("fuzz-documents", "result-bad-code", b"\2" + b'{"status": "exited", "exit_code": 256}')
    put("fuzz-documents", "spec-env-dup", b"\1" + json.dumps(spec).encode().replace(b'"LANG": "C.UTF-8"', b'"A": "1", "A": "2"'))


if __name__ == "__main__":
    tar_seeds()
    observe_seeds()
    facts_seeds()
    units_seeds()
    bundle_seeds()
    checkpoint_seeds()
    docker_seeds()
    documents_seeds()
