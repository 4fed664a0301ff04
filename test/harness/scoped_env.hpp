// Environment variables set for the workers a test creates (they read their settings when
// made), and restored when the scope ends.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ucxdt::testing {

class ScopedEnv {
public:
    ScopedEnv(std::initializer_list<std::pair<const char *, const char *>> vars) {
        for (const auto &[name, value] : vars) {
            const char *old = std::getenv(name);
            saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
            setenv(name, value, 1);
        }
    }
    ~ScopedEnv() {
        for (const auto &[name, old] : saved_) old ? setenv(name.c_str(), old->c_str(), 1) : unsetenv(name.c_str());
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace ucxdt::testing
