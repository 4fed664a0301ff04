#!/usr/bin/env python3
"""MPICH's own test suite (test/mpi of its source archive) against Open MPI 5, under a reference
PML and under pml ucxdt in the same run (issue 61).

MPICH's tests are plain MPI C programs that print "No Errors"; its testlist files give each
one's rank counts and arguments, and its Makefile.am files its sources and defines. This script
builds them with Open MPI's mpicc without MPICH's configure (the few definitions configure would
make for Open MPI are written here), runs every test of the directories asked for under each
PML, and judges a run as MPICH's runtests does (exit status 0, a "No Errors" line and no other
output on stdout; "Test Skipped" is a skip), with a time limit per run.

The check: every test that passes under the reference PML passes under the others; every test
that fails under all of them, or fails under one for a reason not yet fixed, is listed in the
known-failures file with its cause; and every entry of that file still fails as it says (so the
file cannot go stale). Exit status 0 when the check holds, 1 when not, 2 on a setup error.

With --gpu the same is done for MPICH's GPU lists (each directory's testlist.gpu: pt2pt, coll,
rma) in a tree of its own whose MTest is built with CUDA (HAVE_CUDA: -memtype, -sendmem,
-recvmem of device, host, reg_host and shared allocate with cudaMalloc, cudaMallocHost and
cudaMallocManaged), under a CUDA-aware reference. --gpu-subset bounds those lists (see
gpu_subset) so that a directory runs in minutes on one GPU.

Usage: run_suite.py --archive mpich-5.0.1.tar.gz --work DIR --ompi PREFIX
                    [--component-path P] [--pmls ob1,ucxdt] [--pml-args PML=ARGS] [--known FILE] [--limit S]
                    [--gpu [--cuda DIR] [--gpu-subset]] [--deadline S] [--results FILE] DIR...
"""
import argparse
import concurrent.futures
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time

# What MPICH's configure would define for Open MPI 5 on Linux with GCC (include/mpitestconf.h).
# USE_STRICT_MPI: no MPICH extensions (MPIX_*); strict=FALSE tests are left out for it.
MPITESTCONF = """\
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define USE_STRICT_MPI 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_LONG_DOUBLE 1
#define HAVE__BOOL 1
#define HAVE_ATOMIC 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_TYPE_CREATE_STRUCT 1
#define HAVE_MPI2_COMBINERS 1
#define HAVE_MPI_IO 1
"""

# What configure adds with --with-cuda: MTest's allocators (util/mtest_common.c) for device,
# registered host and shared (managed) memory.
MPITESTCONF_GPU = "#define HAVE_CUDA 1\n"

# Settings of a testlist that have no effect here, dropped (and the runs they made distinct
# merged): MPICH's own (MPIR_CVAR_*), and the GPU visibility masks MTest sets for Level Zero only.
DROPPED_ENV = re.compile(r"^(MPIR_CVAR_|MTEST_GPU_VISIBILITY_)")

# Runs whose testlist says they need more memory (mem=, GB) are left out, as runtests leaves
# them out under a memory limit: a 24 GiB machine runs the rest.
MAX_MEM_GB = 4

WARNING = re.compile(r"^(MPICH: |WARNING: |(Abort.*)?application called MPI_Abort)")
STRAY_OK = re.compile(r"^(\s*No [Ee]rrors\s*|\s*Test Skipped\s*|.*(FORTRAN STOP|requesting checkpoint|checkpoint completed)\s*)$")


def log(msg):
    print(msg, flush=True)


class Locked:
    """An exclusive lock on a file, so that CTest's parallel runs of this script share one tree."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def kill_session(sid):
    """SIGKILL to every process of session sid: mpirun gives each rank a process group of its
    own, but they all stay in the session that start_new_session made."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # the session ID, after state, ppid and pgrp
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass


def run(cmd, cwd=None, env=None, timeout=None):
    """(exit status, or None on time-out, stdout, stderr) of cmd. A command run past its time is
    killed with its whole process group: mpirun, its daemons and the ranks."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        kill_session(p.pid)
        out, err = p.communicate()
        rc = None
    return rc, out.decode(errors="replace"), err.decode(errors="replace")


def prepare_tree(archive, work, gpu=False):
    """Extracts test/mpi once per archive (by its hash) and writes the configure-made headers.
    The GPU build is a tree of its own (mpi-<hash>-gpu): its programs are built in place."""
    os.makedirs(work, exist_ok=True)
    digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()[:16]
    top = os.path.join(work, "mpi-" + digest + ("-gpu" if gpu else ""))
    with Locked(os.path.join(work, ".lock")):
        if not os.path.exists(os.path.join(top, ".complete")):
            log("[mpich-suite] extracting test/mpi from %s" % archive)
            tmp = top + ".tmp"
            subprocess.run(["rm", "-rf", tmp], check=True)
            os.makedirs(tmp)
            with tarfile.open(archive) as t:
                members = [m for m in t.getmembers() if re.match(r"^[^/]+/test/mpi/", m.name)]
                if not members:
                    sys.exit("[mpich-suite] %s has no test/mpi" % archive)
                t.extractall(tmp, members)
            (root,) = os.listdir(tmp)
            subprocess.run(["rm", "-rf", top], check=True)
            os.rename(os.path.join(tmp, root, "test", "mpi"), top)
            subprocess.run(["rm", "-rf", tmp], check=True)
            with open(os.path.join(top, "include", "mpitestconf.h"), "w") as f:
                f.write(MPITESTCONF + (MPITESTCONF_GPU if gpu else ""))
            open(os.path.join(top, "include", "mtest_mpix.h"), "w").close()  # as MPICH's autogen.sh
            open(os.path.join(top, "dtpools", "dtpoolsconf.h"), "w").close()
            open(os.path.join(top, ".complete"), "w").close()
    return top


def cflags(top, cuda=None):
    """Compiler flags; with cuda (the CUDA toolkit's directory) its headers too."""
    return ["-O1", "-w", "-I" + os.path.join(top, "include"), "-I" + os.path.join(top, "dtpools", "include")] + \
           (["-I" + os.path.join(cuda, "include")] if cuda else [])


def cuda_ldflags(cuda):
    """What a program of the GPU tree links besides MTest: the CUDA runtime, found at run time
    through LD_LIBRARY_PATH or else where it was here (the GPU machine has it there too)."""
    if not cuda:
        return []
    lib = os.path.join(cuda, "lib64")
    return ["-L" + lib, "-Wl,-rpath," + lib, "-lcudart"]


def build_libs(top, mpicc, env, cuda=None):
    """libmtest_single.a, libmtest_thread.a, libdtypes.a and libdtpools.a under top/lib, once."""
    lib = os.path.join(top, "lib")
    with Locked(os.path.join(top, ".lock")):
        if os.path.exists(os.path.join(lib, ".complete-2")):
            return lib
        os.makedirs(lib, exist_ok=True)
        u, d = os.path.join(top, "util"), os.path.join(top, "dtpools", "src")
        libs = {
            "mtest_single": [(u, "mtest.c", []), (u, "mtest_common.c", []), (u, "mtest_single.c", [])],
            "mtest_thread": [(u, "mtest.c", ["-DMTEST_USE_THREAD"]), (u, "mtest_common.c", ["-DMTEST_USE_THREAD"]),
                             (u, "mtest_thread.c", ["-DMTEST_USE_THREAD"])],
            "dtypes": [(u, "dtypes.c", [])],
            # main() for the tests that define only run(const char *args) (MPICH links it in the
            # same way): an archive member, so taken only by programs without a main of their own.
            "run_mpitests": [(u, "run_mpitests.c", [])],
            "dtpools": [(d, f, []) for f in sorted(os.listdir(d)) if f.endswith(".c")],
        }
        for name, sources in libs.items():
            objs = []
            for src_dir, src, extra in sources:
                obj = os.path.join(lib, "%s-%s.o" % (name, src[:-2]))
                rc, out, err = run([mpicc] + cflags(top, cuda) + extra + ["-c", os.path.join(src_dir, src), "-o", obj], env=env)
                if rc != 0:
                    sys.stderr.write(out + err)
                    sys.exit("[mpich-suite] cannot build %s for lib%s" % (src, name))
                objs.append(obj)
            subprocess.run(["ar", "rcs", os.path.join(lib, "lib%s.a" % name)] + objs, check=True)
        open(os.path.join(lib, ".complete-2"), "w").close()
    return lib


def makefile(dir_path):
    """A directory's Makefile.am: (automake's variables, name -> words with continuations joined
    and += appended; whether its programs are the threaded ones)."""
    raw = open(os.path.join(dir_path, "Makefile.am")).read()
    text = re.sub(r"\\\n", " ", raw)
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        m = re.match(r"^\s*([A-Za-z0-9_]+)\s*(\+?=)\s*(.*)$", line)
        if m:
            words = m.group(3).split()
            out[m.group(1)] = (out.get(m.group(1), []) if m.group(2) == "+=" else []) + words
    return out, "Makefile_threads.mtest" in raw


def program_spec(dir_path, name, mk):
    """(sources, defines) of program `name` in this directory, from its Makefile.am's variables."""
    key = re.sub(r"[^A-Za-z0-9_]", "_", name)
    sources = mk.get(key + "_SOURCES", [name + ".c"])
    defines = [w for w in mk.get(key + "_CPPFLAGS", []) if w.startswith("-D")]
    return [os.path.join(dir_path, s) for s in sources], defines


HOST_LISTS = ("testlist.in", "testlist")
GPU_LISTS = ("testlist.gpu",)


def testlist(dir_path, lists=HOST_LISTS):
    """The runs of a directory's list (the first of `lists` it has): dicts of name, np, args,
    limit, env, result. Settings with no effect here (DROPPED_ENV) are dropped, and the runs they
    made distinct merged."""
    path = next((os.path.join(dir_path, f) for f in lists if os.path.exists(os.path.join(dir_path, f))), None)
    if path is None:
        sys.exit("[mpich-suite] %s has none of %s" % (dir_path, ", ".join(lists)))
    runs, seen = [], set()
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#") or "@" in line:
            continue
        words = shlex.split(line)
        if len(words) < 2 or not words[1].isdigit():
            continue  # a subdirectory's name (threads/, ...), which is asked for on its own
        r = {"name": words[0], "np": int(words[1]), "args": [], "limit": None, "env": [], "result": None}
        skip = False
        for w in words[2:]:
            k, _, v = w.partition("=")
            if k == "arg":
                r["args"].append(v)
            elif k == "timeLimit":
                r["limit"] = int(v)
            elif k == "strict" and v.lower() == "false":
                skip = True  # needs MPICH's extensions
            elif k == "env" and not DROPPED_ENV.match(v):
                r["env"].append(v)
            elif k == "resultTest":
                r["result"] = v
            elif k == "mem" and float(v) > MAX_MEM_GB:
                skip = True  # as runtests with a memory limit: gather_big wants 20.1 GB
        key = (r["name"], r["np"], tuple(r["args"]), tuple(r["env"]))
        if skip or key in seen:
            continue
        seen.add(key)
        runs.append(r)
    return runs


# --gpu-subset: the most random datatypes a (type, count) of a DTPools test builds, and the fewest.
SUBSET_TESTSIZES = (2, 10)
MEM_PAIRS = (("sendmem", "recvmem"), ("evenmemtype", "oddmemtype"))


def gpu_subset(runs):
    """The runs of a GPU list bounded for one GPU (--gpu-subset): of the runs that name a pair of
    memory types (-sendmem/-recvmem, -evenmemtype/-oddmemtype: 16 pairs of device, host,
    reg_host and shared), those with device memory on one side at least, or shared (managed)
    memory on both, and one run per program, rank count and pair; each DTPools test's
    -testsizes=MIN,MAX capped to SUBSET_TESTSIZES, so that every typelist entry and count still
    runs, with fewer random types of each. A run keeps its id (the testlist's line): only what
    is run changes (run_args)."""
    kept, seen = [], set()
    for r in runs:
        opts = dict(a[1:].split("=", 1) for a in r["args"] if a.startswith("-") and "=" in a)
        pair = next((tuple(opts.get(k) for k in p) for p in MEM_PAIRS if p[0] in opts or p[1] in opts), None)
        if pair is not None:
            if "device" not in pair and pair != ("shared", "shared"):
                continue
            key = (r["name"], r["np"], pair)
            if key in seen:
                continue
            seen.add(key)
        args = []
        for a in r["args"]:
            if a.startswith("-testsizes="):
                sizes = [int(x) for x in a.split("=", 1)[1].split(",")]
                lo, hi = min(sizes[0], SUBSET_TESTSIZES[0]), min(sizes[-1], SUBSET_TESTSIZES[1])
                a = "-testsizes=%d,%d" % (lo, max(lo, hi))
            args.append(a)
        kept.append(dict(r, run_args=args))
    return kept


def run_id(d, r):
    return " ".join(["%s/%s" % (d, r["name"]), str(r["np"])] + r["args"] + r["env"])


def judge(rc, out, result_test=None):
    """MPICH's runtests on stdout, by the run's resultTest: pass, skip, or what failed. The
    default wants a "No Errors" line, no other output and exit status 0; TestAllowWarnings lets
    warnings by; TestStatus and TestErrFatal want a non-zero exit status (a program that must
    fail), TestStatusNoErrors that and "No Errors"; TestBench exit status 0 alone."""
    if rc is None:
        return "timeout"
    lines = out.splitlines()
    noerr = any(re.match(r"^\s*No [Ee]rrors\s*$", l) for l in lines)
    skipped = any(re.match(r"^\s*Test Skipped\s*$", l) for l in lines)
    warnings = [l for l in lines if WARNING.match(l)]
    stray = [l for l in lines if not STRAY_OK.match(l) and not WARNING.match(l)]
    status = "exit %d" % rc if rc > 0 else "signal %d" % -rc
    if result_test in ("TestStatus", "TestErrFatal"):
        return "pass" if rc != 0 else "exit 0 where it must fail"
    if result_test == "TestBench":
        return "pass" if rc == 0 else status
    if result_test == "TestStatusNoErrors":
        if not noerr:
            return "no 'No Errors'"
        return "stray output" if stray else "pass" if rc != 0 else "exit 0 where it must fail"
    if rc != 0:
        return status
    if skipped and not noerr:
        return "skip"
    if not noerr:
        return "no 'No Errors'"
    if stray or (warnings and result_test != "TestAllowWarnings"):
        return "stray output"
    return "pass"


def read_known(path):
    """known-failures file: lines `<dir/test> <np> [args] | <pml>|all | <cause>`."""
    known = {}
    if not path or not os.path.exists(path):
        return known
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or not parts[2]:
            sys.exit("[mpich-suite] %s:%d: expected `test np [args] | pml or all | cause`" % (path, n))
        known[(" ".join(parts[0].split()), parts[1])] = parts[2]
    return known


def check(results, known, pmls):
    """(problems, counts) of results ({run id: {pml: verdict}}) against the known failures
    ({(run id, pml or "all"): cause}); pmls[0] is the reference."""
    ref, others = pmls[0], pmls[1:]
    problems, counts = [], {p: {"pass": 0, "fail": 0, "skip": 0} for p in pmls}
    used = set()
    for rid, v in results.items():
        for p in pmls:
            counts[p]["pass" if v[p] == "pass" else "skip" if v[p] == "skip" else "fail"] += 1
        failing = [p for p in others if v[p] not in ("pass", "skip")]
        ours = [p for p in failing if (rid, p) in known]  # listed as ours to fix
        used.update((rid, p) for p in ours)
        unlisted = [p for p in failing if p not in ours]
        if v[ref] in ("pass", "skip"):
            problems += ["%s passes under %s and fails under %s: %s" % (rid, ref, p, v[p]) for p in unlisted]
        elif (rid, "all") in known and len(failing) == len(others):
            used.add((rid, "all"))
        elif unlisted:
            problems.append("%s fails under every PML (%s) and is not in the known-failures file" %
                            (rid, ", ".join("%s: %s" % (p, v[p]) for p in pmls)))
        # The reference failing alone is no regression of ours, and tells nothing of the others.
    for k, cause in known.items():
        rid, p = k
        if rid in results and k not in used and not cause.startswith("not run"):
            problems.append("%s is listed as failing under %s (%s) but did not" % (rid, p, cause))

    return problems, counts


def export(top, dirs, lists, programs, dest):
    """Copies what --tree needs to run dirs into dest: each directory's list and its programs
    ({(dir, name): path}), at the same paths (a program runs in its directory, as built)."""
    subprocess.run(["rm", "-rf", dest], check=True)
    for d in dirs:
        os.makedirs(os.path.join(dest, d))
        lst = next(f for f in lists if os.path.exists(os.path.join(top, d, f)))
        shutil.copy2(os.path.join(top, d, lst), os.path.join(dest, d, lst))
    for (d, name), path in sorted(programs.items()):
        shutil.copy2(path, os.path.join(dest, d, name))
    log("[mpich-suite] %d programs and the lists of %s in %s" % (len(programs), " ".join(dirs), dest))


def run_limit(limit, list_limit, left=None):
    """(seconds, whether the deadline set them) a run may take: --limit, or the testlist's
    timeLimit when larger up to 3 x --limit (its limits reach 600 s), and no more than the time
    left before the deadline (left, when there is one)."""
    t = min(max(limit, list_limit or 0), 3 * limit)
    return (t, False) if left is None or left >= t else (max(0, left), True)


def main():
    t_start = time.time()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", help="MPICH's source archive; its test/mpi is extracted under --work")
    ap.add_argument("--work", help="where the tree is extracted and built")
    ap.add_argument("--tree", help="a tree this script extracted and built before (--build-only): run its "
                                   "programs as they are, building nothing (on a machine without mpicc)")
    ap.add_argument("--build-only", action="store_true", help="extract and build, run nothing")
    ap.add_argument("--export", help="with --build-only: copy what --tree needs to run the DIRs (their lists "
                                     "and programs) into this folder, to carry to another machine")
    ap.add_argument("--ompi", required=True, help="the Open MPI 5 prefix")
    ap.add_argument("--component-path", default="", help="mca_base_component_path (where pml ucxdt is)")
    ap.add_argument("--pmls", default="ob1,ucxdt", help="the reference PML first")
    ap.add_argument("--known", default="")
    ap.add_argument("--limit", type=int, default=60, help="seconds a run may take (testlist's timeLimit if larger)")
    ap.add_argument("--jobs", type=int, default=2, help="programs built at once")
    ap.add_argument("--gpu", action="store_true", help="MPICH's GPU lists (testlist.gpu) in a tree whose MTest is "
                                                       "built with CUDA, instead of the host lists")
    ap.add_argument("--cuda", default="/usr/local/cuda", help="the CUDA toolkit that --gpu builds against")
    ap.add_argument("--gpu-subset", action="store_true", help="bound the GPU lists for one GPU (gpu_subset: memory "
                                                              "pairs with device memory, fewer random types)")
    ap.add_argument("--deadline", type=int, default=0, help="seconds from the start after which no run starts, and "
                                                            "none runs past (0: none); runs left out fail the check")
    ap.add_argument("--no-retry", action="store_true", help="a run that times out under a PML other than the "
                                                            "reference is not run again with twice the time")
    ap.add_argument("--mpirun-args", default="", help="more arguments for mpirun (e.g. '-x LD_LIBRARY_PATH')")
    ap.add_argument("--pml-args", action="append", default=[], metavar="PML=ARGS",
                    help="more arguments for mpirun under one PML only, e.g. 'ob1=--mca osc ucx,sm' for a "
                         "reference whose one-sided component is osc ucx (repeatable)")
    ap.add_argument("--results", default="", help="write every run's verdicts and seconds here (JSON)")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    pmls = a.pmls.split(",")
    pml_args = {}
    for spec in a.pml_args:
        name, sep, args = spec.partition("=")
        if not sep or name not in pmls:
            ap.error("--pml-args %r: expected PML=ARGS with PML one of --pmls" % spec)
        pml_args[name] = pml_args.get(name, []) + shlex.split(args)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PATH=os.path.join(a.ompi, "bin") + ":" + os.environ.get("PATH", ""))
    mpicc, mpirun = os.path.join(a.ompi, "bin", "mpicc"), os.path.join(a.ompi, "bin", "mpirun")
    cuda = a.cuda if a.gpu else None
    lists = GPU_LISTS if a.gpu else HOST_LISTS
    if a.tree:
        top, lib = os.path.abspath(a.tree), None
    elif a.archive and a.work:
        top = prepare_tree(a.archive, a.work, gpu=a.gpu)
        lib = build_libs(top, mpicc, env, cuda)
    else:
        ap.error("--archive and --work, or --tree")
    if a.gpu_subset and not a.gpu:
        ap.error("--gpu-subset bounds the GPU lists: with --gpu")
    if a.export and not (a.build_only and lib):
        ap.error("--export: with --build-only, and --archive and --work")
    known = read_known(a.known)

    # Build every program the runs need, a few at once.
    runs = [(d, r) for d in a.dirs
            for r in (gpu_subset if a.gpu_subset else list)(testlist(os.path.join(top, d), lists))]
    makefiles = {d: makefile(os.path.join(top, d)) for d in a.dirs} if lib else {}

    def build(d, name):
        dp = os.path.join(top, d)
        exe = os.path.join(dp, name)  # where the tests that spawn look for themselves (./name)
        if not lib:  # --tree: built before
            return (exe, None) if os.path.exists(exe) else (None, ["not built"])
        mk, threaded = makefiles[d]
        sources, defines = program_spec(dp, name, mk)
        if os.path.exists(exe) and all(os.path.getmtime(s) <= os.path.getmtime(exe) for s in sources if os.path.exists(s)):
            return exe, None
        cmd = [mpicc] + cflags(top, cuda) + defines + (["-DMTEST_USE_THREAD"] if threaded else []) + sources + \
              ["-L" + lib, "-lrun_mpitests", "-lmtest_thread" if threaded else "-lmtest_single", "-ldtypes", "-ldtpools", "-lm", "-lpthread"] + \
              cuda_ldflags(cuda) + ["-o", exe + ".tmp"]
        rc, out, err = run(cmd, cwd=dp, env=env, timeout=300)
        if rc != 0:
            return None, (err or out).strip().splitlines()[:3]
        os.rename(exe + ".tmp", exe)  # a build cut short leaves no program that looks current
        return exe, None

    programs = sorted({(d, r["name"]) for d, r in runs})
    built = {}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for key, res in zip(programs, pool.map(lambda k: build(*k), programs)):
            built[key] = res
    log("[mpich-suite] %d programs for %d runs in %s, built in %.0f s (%d did not build)" %
        (len(programs), len(runs), " ".join(a.dirs), time.time() - t0, sum(1 for e, _ in built.values() if not e)))

    if a.build_only:
        if a.export:
            export(top, a.dirs, lists, {k: e for k, (e, _) in built.items() if e}, a.export)
        return 0
    results = {}  # run id -> {pml: verdict}
    seconds = {}  # run id -> {pml: seconds}
    not_run, late = [], []
    deadline = t_start + a.deadline if a.deadline else None
    left = lambda: deadline - time.time() if deadline else None  # noqa: E731
    run_args = {}  # run id -> what was run, where --gpu-subset changed it
    for d, r in runs:
        rid = run_id(d, r)
        exe, why = built[(d, r["name"])]
        if known.get((rid, "all"), "").startswith("not run"):
            not_run.append(rid)  # hangs under every PML: listed, with its cause, and not run
            continue
        if deadline and deadline - time.time() < 5:
            late.append(rid)
            continue
        results[rid], seconds[rid] = {}, {}
        for pml in pmls:
            if known.get((rid, pml), "").startswith("not run"):
                results[rid][pml] = "not run"  # hangs under this PML: listed, with its cause
                continue
            if not exe:
                results[rid][pml] = "build: " + (why[0] if why else "failed")
                continue
            cmd = [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(r["np"]), "--mca", "pml", pml,
                   "--mca", "mca_base_component_show_load_errors", "0"]
            if a.component_path:
                cmd += ["--mca", "mca_base_component_path", a.component_path]
            for e in r["env"]:
                cmd += ["-x", e]
            cmd += shlex.split(a.mpirun_args) + pml_args.get(pml, []) + [exe] + r.get("run_args", r["args"])
            if r.get("run_args", r["args"]) != r["args"]:
                run_args[rid] = " ".join(r["run_args"])
            limit, cut = run_limit(a.limit, r["limit"], left())
            s = time.time()
            rc, out, err = run(cmd, cwd=os.path.join(top, d), env=env, timeout=limit)
            if rc is None and pml != pmls[0] and not cut and not a.no_retry:
                # Once more with twice the time: 2 busy cores slow the threaded tests. (The
                # reference timing out alone is no failure of ours: not waited for twice.)
                limit, cut = run_limit(2 * a.limit, 2 * (r["limit"] or 0), left())
                rc, out, err = run(cmd, cwd=os.path.join(top, d), env=env, timeout=limit)
            seconds[rid][pml] = round(time.time() - s, 1)
            if rc is None and cut:
                late.append(rid)  # cut by the deadline, not by its own limit: not judged
                del results[rid]
                break
            v = judge(rc, out, r["result"])
            results[rid][pml] = v
            if v not in ("pass", "skip"):
                # The first lines of stderr too: where a rank aborts (an assertion, a fault, a
                # transport's error) mpirun's own account of it comes last.
                errs = [l for l in err.strip().splitlines() if l.strip() and not l.startswith(("-----", " "))]
                shown = [l for l in out.strip().splitlines() if l.strip()][-3:] + errs[:2] + errs[max(2, len(errs) - 2):]
                log("  %-50s %-6s %s (%.1f s)%s" % (rid, pml, v, time.time() - s, "".join("\n      | " + l for l in shown)))

    problems, counts = check(results, known, pmls)
    if late:
        problems.append("%d run(s) not run to the end before the deadline (%d s): %s" % (len(late), a.deadline, ", ".join(late)))
    if a.results:
        with open(a.results, "w") as f:
            json.dump({"pmls": pmls, "pml_args": pml_args, "dirs": a.dirs, "gpu": a.gpu, "gpu_subset": a.gpu_subset,
                       "verdicts": results, "seconds": seconds, "run_args": run_args, "late": late, "not_run": not_run,
                       "problems": problems}, f, indent=1)
    slowest = sorted(((t, rid, p) for rid, v in seconds.items() for p, t in v.items()), reverse=True)[:5]
    if slowest:
        log("[mpich-suite] slowest: " + "; ".join("%s %s %.1f s" % (rid, p, t) for t, rid, p in slowest))
    for p in pmls:
        log("[mpich-suite] %-6s %d passed, %d failed, %d skipped" % (p, counts[p]["pass"], counts[p]["fail"], counts[p]["skip"]))
    for line in problems:
        log("[mpich-suite] FAIL: " + line)
    if not_run:
        log("[mpich-suite] not run (listed as hanging under every PML): " + ", ".join(not_run))
    log("[mpich-suite] %d runs under %s in %.0f s: %d problem(s)" %
        (len(results), " and ".join(pmls), time.time() - t_start, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
