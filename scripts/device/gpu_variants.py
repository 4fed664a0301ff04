#!/usr/bin/env python3
"""The GPU tests' environment variants, as test/CMakeLists.txt registers them with CTest.

Usage: gpu_variants.py OUT CTEST_JSON, where CTEST_JSON is `ctest --show-only=json-v1` of the
build. Writes OUT (run-on-device.sh's test_gpu_variants.tsv) with one line per variant:
name <TAB> binary <TAB> environment (K=V ...) <TAB> arguments. Tests registered one by one (as
gtest_discover_tests does) are merged into one run per environment with a joined filter.
"""
import json, os, re, sys
out = sys.argv[1]
try:
    tests = json.load(open(sys.argv[2])).get("tests", [])
except ValueError:
    tests = []
groups = {}  # (binary, environment tuple) -> list of argument lists
for t in tests:
    cmd = t.get("command") or []
    binary = os.path.basename(cmd[0]) if cmd else ""
    if not (binary.startswith("test_gpu_") or binary in ("test_ucp_generic", "test_rndv", "test_rma", "test_rma_ipc")):
        continue
    env = []
    for p in t.get("properties", []):
        if p.get("name") == "ENVIRONMENT":
            env = [e for e in p.get("value", []) if e.startswith("UCXDT_")]
    if env:
        groups.setdefault((binary, tuple(sorted(env))), []).append(cmd[1:])
lines = []
for (binary, env), arglists in sorted(groups.items()):
    name = re.sub(r"[^A-Za-z0-9]+", "_", " ".join(env).replace("UCXDT_", "").lower()).strip("_")
    def split(args):
        filt = [a for a in args if a.startswith("--gtest_filter=")]
        rest = [a for a in args if not a.startswith("--gtest_filter=")
                and a != "--gtest_also_run_disabled_tests"]
        return filt, rest
    parts = [split(a) for a in arglists]
    mergeable = len(arglists) > 1 and all(
        len(f) == 1 and "-" not in f[0].split("=", 1)[1] and r == parts[0][1] for f, r in parts)
    if mergeable:
        joined = ":".join(f[0][len("--gtest_filter="):] for f, _ in parts)
        lines.append((name, binary, env, parts[0][1] + ["--gtest_filter=" + joined]))
    else:
        for args in sorted(set(map(tuple, arglists))):
            lines.append((name, binary, env, list(args)))
with open(out, "w") as f:
    if not lines:
        # Not registered (yet): the variants the GPU engine's environment knobs call for.
        f.write("# no GPU test environment variants in CTest; defaults\n")
        lines = [("gpu_method_kernel", "test_gpu_method", ("UCXDT_GPU_METHOD=kernel",), []),
                 ("gpu_method_kernel", "test_gpu_engine", ("UCXDT_GPU_METHOD=kernel",),
                  ["--gtest_filter=App/GpuLayouts.*"]),
                 ("gpu_method_copy", "test_gpu_method", ("UCXDT_GPU_METHOD=copy",), []),
                 ("gpu_method_copy", "test_gpu_engine", ("UCXDT_GPU_METHOD=copy",),
                  ["--gtest_filter=App/GpuLayouts.*"]),
                 ("staging_mb_1", "test_gpu_memory", ("UCXDT_STAGING_MB=1",),
                  ["--gtest_filter=GpuStaging.*"])]
    else:
        f.write("# from ctest --show-only=json-v1 of build/\n")
    for name, binary, env, args in lines:
        f.write("%s\t%s\t%s\t%s\n" % (name, binary, " ".join(env), " ".join(args)))
