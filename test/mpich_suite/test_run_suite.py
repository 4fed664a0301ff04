#!/usr/bin/env python3
"""run_suite.py's verdicts and check, on made-up runs: that the check fails where it must."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_suite  # noqa: E402

P = ["ob1", "ucxdt"]


class Judge(unittest.TestCase):
    def test_default_wants_no_errors_alone_and_status_zero(self):
        self.assertEqual(run_suite.judge(0, " No Errors\n"), "pass")
        self.assertEqual(run_suite.judge(1, " No Errors\n"), "exit 1")
        self.assertEqual(run_suite.judge(-11, ""), "signal 11")
        self.assertEqual(run_suite.judge(0, "Found 2 errors\n"), "no 'No Errors'")
        self.assertEqual(run_suite.judge(0, "x = 3\n No Errors\n"), "stray output")
        self.assertEqual(run_suite.judge(0, " Test Skipped\n"), "skip")
        self.assertEqual(run_suite.judge(None, " No Errors\n"), "timeout")

    def test_result_tests(self):
        self.assertEqual(run_suite.judge(0, "WARNING: a\n No Errors\n"), "stray output")
        self.assertEqual(run_suite.judge(0, "WARNING: a\n No Errors\n", "TestAllowWarnings"), "pass")
        self.assertEqual(run_suite.judge(2, "", "TestStatus"), "pass")
        self.assertEqual(run_suite.judge(0, " No Errors\n", "TestErrFatal"), "exit 0 where it must fail")
        self.assertEqual(run_suite.judge(1, " No Errors\n", "TestStatusNoErrors"), "pass")
        self.assertEqual(run_suite.judge(1, "", "TestStatusNoErrors"), "no 'No Errors'")
        self.assertEqual(run_suite.judge(0, "anything\n", "TestBench"), "pass")


class Check(unittest.TestCase):
    def problems(self, results, known=None):
        return run_suite.check(results, known or {}, P)[0]

    def test_a_regression_fails_unless_listed_for_ucxdt(self):
        r = {"pt2pt/a 2": {"ob1": "pass", "ucxdt": "timeout"}}
        self.assertEqual(len(self.problems(r)), 1)
        self.assertEqual(self.problems(r, {("pt2pt/a 2", "ucxdt"): "why"}), [])
        self.assertEqual(len(self.problems(r, {("pt2pt/a 2", "all"): "why"})), 2)  # not ob1's failure

    def test_a_failure_under_both_must_be_listed(self):
        r = {"coll/b 4": {"ob1": "exit 1", "ucxdt": "exit 1"}}
        self.assertEqual(len(self.problems(r)), 1)
        self.assertEqual(self.problems(r, {("coll/b 4", "all"): "why"}), [])

    def test_the_reference_failing_alone_is_not_ours(self):
        self.assertEqual(self.problems({"c 1": {"ob1": "timeout", "ucxdt": "pass"}}), [])

    def test_a_listed_run_that_passes_fails_the_check(self):
        r = {"d 2": {"ob1": "pass", "ucxdt": "pass"}}
        self.assertEqual(len(self.problems(r, {("d 2", "ucxdt"): "why"})), 1)
        self.assertEqual(len(self.problems(r, {("d 2", "all"): "why"})), 1)
        r = {"e 2": {"ob1": "exit 1", "ucxdt": "pass"}}
        self.assertEqual(len(self.problems(r, {("e 2", "all"): "why"})), 1)

    def test_not_run_entries(self):
        r = {"f 2": {"ob1": "pass", "ucxdt": "not run"}}
        self.assertEqual(self.problems(r, {("f 2", "ucxdt"): "not run: hangs"}), [])
        r = {"g 2": {"ob1": "timeout", "ucxdt": "not run"}}
        self.assertEqual(self.problems(r, {("g 2", "ucxdt"): "not run: hangs"}), [])


    def test_reference_not_run(self):
        # A run left out under the reference (it hangs there) judges nothing and goes stale never.
        r = {"h 4": {"ob1": "not run", "ucxdt": "pass"}}
        self.assertEqual(self.problems(r, {("h 4", "ob1"): "not run: hangs under osc ucx"}), [])
        # ...but a failure under pml ucxdt there is still one.
        r = {"h 4": {"ob1": "not run", "ucxdt": "exit 1"}}
        self.assertTrue(self.problems(r, {("h 4", "ob1"): "not run: hangs under osc ucx"}))


class Parse(unittest.TestCase):
    def test_known_files_of_the_repository_parse_and_give_causes(self):
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("known_failures.txt", "known_failures_gpu.txt"):
            path = os.path.join(here, name)
            self.assertTrue(os.path.exists(path), name)
            known = run_suite.read_known(path)
            if name == "known_failures.txt":
                self.assertTrue(known)  # the GPU file stays empty until a GPU run shows a failure
            for (rid, pml), cause in known.items():
                self.assertIn(pml, ("all", "ucxdt", "ob1"), rid)
                self.assertTrue(cause.strip(), rid)
                if pml == "ob1":  # only to leave a run that hangs under the reference out of it
                    self.assertTrue(cause.startswith("not run"), rid)


GPU_LIST = """\
# comment
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8,100 arg=-sendmem=device arg=-recvmem=device
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8,100 arg=-sendmem=device arg=-recvmem=host
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8,100 arg=-sendmem=host arg=-recvmem=host
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8,100 arg=-sendmem=reg_host arg=-recvmem=shared
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8,100 arg=-sendmem=shared arg=-recvmem=shared
sendrecv1 2 arg=-typelist=MPI_INT arg=-counts=1,65530 arg=-testsizes=8 arg=-sendmem=device arg=-recvmem=device env=MPIR_CVAR_X=1 timeLimit=600
allred2 8 arg=-memtype=all env=MTEST_GPU_VISIBILITY_AFFINITY=CONTIGUOUS_DEVICE
allred2 8 arg=-memtype=all env=MTEST_GPU_VISIBILITY_AFFINITY=CONTIGUOUS_SUBDEVICE
bcast 4 arg=-testsizes=2,50 arg=-evenmemtype=host arg=-oddmemtype=device
bcast 4 arg=-testsizes=2,50 arg=-evenmemtype=reg_host arg=-oddmemtype=host
getfence1 2 arg=-testsizes=2,20 arg=-memtype=random timeLimit=600
"""


class GpuLists(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        with open(os.path.join(self.dir, "testlist.gpu"), "w") as f:
            f.write(GPU_LIST)
        with open(os.path.join(self.dir, "testlist.in"), "w") as f:
            f.write("sendself 1\n")

    def test_each_mode_reads_its_own_list(self):
        self.assertEqual([r["name"] for r in run_suite.testlist(self.dir)], ["sendself"])
        runs = run_suite.testlist(self.dir, run_suite.GPU_LISTS)
        # The Level Zero masks (MTEST_GPU_VISIBILITY_*) do nothing under CUDA: their runs merge.
        self.assertEqual(len([r for r in runs if r["name"] == "allred2"]), 1)
        self.assertEqual(len(runs), 10)
        self.assertTrue(all(not r["env"] for r in runs))

    def test_a_missing_list_is_a_setup_error(self):
        os.remove(os.path.join(self.dir, "testlist.gpu"))
        with self.assertRaises(SystemExit):
            run_suite.testlist(self.dir, run_suite.GPU_LISTS)

    def test_subset_keeps_device_pairs_and_shared_both_sides(self):
        runs = run_suite.gpu_subset(run_suite.testlist(self.dir, run_suite.GPU_LISTS))
        pairs = [[a for a in r["args"] if "mem" in a] for r in runs]
        self.assertEqual(pairs, [
            ["-sendmem=device", "-recvmem=device"], ["-sendmem=device", "-recvmem=host"],
            ["-sendmem=shared", "-recvmem=shared"],
            # the second device/device run (MPICH's own settings dropped) is one pair too many
            ["-memtype=all"], ["-evenmemtype=host", "-oddmemtype=device"], ["-memtype=random"]])

    def test_subset_caps_testsizes_and_keeps_the_run_ids(self):
        full = run_suite.testlist(self.dir, run_suite.GPU_LISTS)
        runs = run_suite.gpu_subset(full)
        sizes = [[a for a in r["run_args"] if a.startswith("-testsizes=")] for r in runs]
        self.assertEqual(sizes, [["-testsizes=2,10"]] * 3 + [[]] + [["-testsizes=2,10"]] * 2)
        ids = {run_suite.run_id("d", r) for r in full}
        for r in runs:
            self.assertIn(run_suite.run_id("d", r), ids)  # the known-failures file names runs so
            self.assertEqual(len(r["run_args"]), len(r["args"]))
        self.assertEqual(run_suite.gpu_subset([dict(full[0], args=["-testsizes=8"])])[0]["run_args"],
                         ["-testsizes=2,8"])

    def test_cuda_flags_only_in_gpu_mode(self):
        self.assertFalse([f for f in run_suite.cflags("/t") if "cuda" in f])
        self.assertIn("-I/opt/cuda/include", run_suite.cflags("/t", "/opt/cuda"))
        self.assertEqual(run_suite.cuda_ldflags(None), [])
        self.assertIn("-lcudart", run_suite.cuda_ldflags("/opt/cuda"))
        self.assertIn("-Wl,-rpath,/opt/cuda/lib64", run_suite.cuda_ldflags("/opt/cuda"))

    def test_export_carries_lists_and_programs_alone(self):
        top, dest = os.path.join(self.dir, "top"), os.path.join(self.dir, "dest")
        os.makedirs(os.path.join(top, "pt2pt"))
        for f in ("testlist.gpu", "testlist.in", "Makefile.am", "sendrecv1.c", "sendrecv1"):
            open(os.path.join(top, "pt2pt", f), "w").close()
        run_suite.export(top, ["pt2pt"], run_suite.GPU_LISTS,
                         {("pt2pt", "sendrecv1"): os.path.join(top, "pt2pt", "sendrecv1")}, dest)
        self.assertEqual(sorted(os.listdir(os.path.join(dest, "pt2pt"))), ["sendrecv1", "testlist.gpu"])


class Limits(unittest.TestCase):
    def test_testlist_limit_is_capped(self):
        self.assertEqual(run_suite.run_limit(60, None), (60, False))
        self.assertEqual(run_suite.run_limit(60, 100), (100, False))
        self.assertEqual(run_suite.run_limit(60, 600), (180, False))

    def test_the_deadline_cuts_a_run_and_says_so(self):
        self.assertEqual(run_suite.run_limit(60, 600, left=500), (180, False))
        self.assertEqual(run_suite.run_limit(60, 600, left=42), (42, True))
        self.assertEqual(run_suite.run_limit(60, None, left=-3), (0, True))


if __name__ == "__main__":
    unittest.main()
