// UCXDT_TIMELINE (src/ucp_rndv/timeline.hpp): with it set, each worker writes its requests'
// protocol steps at destruction, one file per worker, steps in the order they happened; without
// it (or with it empty), none. An eager message and a rendezvous one (host staging) between two workers.
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/scoped_env.hpp"
#include "ucp_rndv/rndv_worker.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;

// The files below `dir` whose names start with `prefix`.
std::vector<std::string> files_of(const std::string &dir, const std::string &prefix) {
    std::vector<std::string> out;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d))
            if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(dir + "/" + e->d_name);
        closedir(d);
    }
    return out;
}

// Moves (count, type) from w[0] to w[1], sender and receiver in the same layout.
void one_message(T::RndvPair &p, const L::TypeDescPtr &desc, int64_t count) {
    T::Type t(*desc);
    T::Buffer src(*desc, count, 7), dst(*desc, count, 8);
    ucxdt_status_ptr_t r = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), count, t.h, 5, ~ucp_tag_t(0), nullptr);
    ucxdt_status_ptr_t s = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), count, t.h, 5, nullptr);
    EXPECT_EQ(T::status_name(p.wait(s)), T::status_name(UCXDT_OK));
    EXPECT_EQ(T::status_name(p.wait(r)), T::status_name(UCXDT_OK));
}

TEST(RndvTimeline, EachWorkerWritesItsRequestsStepsInOrder) {
    char tmpl[] = "/tmp/ucxdt_timeline_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl, prefix = "tl";
    const auto dbl = L::named(UCXDT_DOUBLE);
    {
        T::ScopedEnv env{{"UCXDT_TIMELINE", (dir + "/" + prefix).c_str()}};
        T::RndvPair p{T::RndvConfig{}};  // eager up to 1 KiB, host staging above
        ASSERT_EQ(p.error, "");
        one_message(p, L::vector(16, 2, 3, dbl), 1);     // 256 B: eager
        one_message(p, L::vector(4096, 2, 3, dbl), 1);   // 64 KiB: rendezvous
    }  // the workers are destroyed here, and write
    const std::vector<std::string> files = files_of(dir, prefix + ".");
    ASSERT_EQ(files.size(), 2u) << "one file per worker";
    std::map<std::string, std::vector<std::string>> steps;  // "side request" -> steps in order
    for (const std::string &f : files) {
        std::ifstream in(f);
        std::string line;
        std::getline(in, line);
        EXPECT_EQ(line, "ns,request,side,step");
        long long last = 0;
        while (std::getline(in, line)) {
            std::istringstream row(line);
            std::string ns, req, side, step;
            std::getline(row, ns, ','), std::getline(row, req, ','), std::getline(row, side, ','), std::getline(row, step);
            EXPECT_GE(std::stoll(ns), last) << "marks in time order: " << f;
            last = std::stoll(ns);
            steps[f + " " + side + " " + req].push_back(step);
        }
        std::remove(f.c_str());
    }
    rmdir(dir.c_str());
    // Two sends on one worker, two receives on the other, each from posted to complete; the
    // rendezvous send sends an RTS and sees the ATS, the receive of it sends the ATS.
    std::vector<std::vector<std::string>> sends, recvs;
    for (auto &[k, v] : steps) (k.find(" send ") != std::string::npos ? sends : recvs).push_back(v);
    ASSERT_EQ(sends.size(), 2u);
    ASSERT_EQ(recvs.size(), 2u);
    for (const auto &v : sends) {
        EXPECT_EQ(v.front(), "posted");
        EXPECT_EQ(v.back(), "complete");
    }
    for (const auto &v : recvs) {
        EXPECT_EQ(v.front(), "posted");
        EXPECT_EQ(v.back(), "complete");
        EXPECT_NE(std::find(v.begin(), v.end(), "matched"), v.end());
    }
    const auto has = [](const std::vector<std::vector<std::string>> &all, const char *step) {
        int n = 0;
        for (const auto &v : all) n += std::find(v.begin(), v.end(), step) != v.end();
        return n;
    };
    EXPECT_EQ(has(sends, "eager_sent"), 1);
    EXPECT_EQ(has(sends, "rts_sent"), 1);
    EXPECT_EQ(has(sends, "ats_seen"), 1);
    EXPECT_EQ(has(recvs, "ats_sent"), 1);
}

TEST(RndvTimeline, OffWhenUnsetOrEmpty) {
    T::ScopedEnv env{{"UCXDT_TIMELINE", ""}};  // empty: off, as unset
    {
        T::RndvPair p{T::RndvConfig{}};
        ASSERT_EQ(p.error, "");
        one_message(p, L::vector(16, 2, 3, L::named(UCXDT_DOUBLE)), 1);
        const auto *w = reinterpret_cast<const ucxdt::rndv::Worker *>(p.w[0]);
        EXPECT_EQ(w->timeline, nullptr);
    }
}

}  // namespace
