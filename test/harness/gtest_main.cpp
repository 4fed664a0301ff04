// main() of the GoogleTest binaries here, in place of GTest::gtest_main (test/CMakeLists.txt):
// the same run, and an exit status that tells a run in which nothing was checked from a pass.
//   0   some case passed and none failed
//   77  cases ran and every one skipped (GTEST_SKIP: no GPU here, for one): CTest's
//       SKIP_RETURN_CODE reports the entry Skipped
//   1   a case failed (GoogleTest's own status), or no case ran at all (a filter that
//       matches nothing: the entry checked nothing, and must not read Passed)
// A failure never reads as a skip: GoogleTest's non-zero status is returned as it is.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = RUN_ALL_TESTS();
    // Listing (gtest_discover_tests) runs nothing, on purpose.
    if (rc != 0 || GTEST_FLAG_GET(list_tests)) return rc;
    const ::testing::UnitTest &u = *::testing::UnitTest::GetInstance();
    if (u.Failed()) return 1;
    const int passed = u.successful_test_count(), skipped = u.skipped_test_count();
    if (passed > 0) return 0;
    if (skipped > 0) {
        std::printf("gtest_main: all %d cases that ran skipped: exit status 77 (skipped)\n", skipped);
        return 77;
    }
    std::printf("gtest_main: no case ran (does --gtest_filter match any?): exit status 1\n");
    return 1;
}
