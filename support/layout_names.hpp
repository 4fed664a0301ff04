// The application layouts as test parameters: built once, named for GoogleTest.
#pragma once

#include "support/app_layouts.hpp"

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

namespace ucxdt::support {

namespace L = ucxdt::layouts;

/// The application layouts, built once per process.
inline const std::vector<L::Layout> &app_layouts() {
    static const std::vector<L::Layout> v = L::application_layouts();
    return v;
}

/// A GoogleTest parameter name for layout `index` called `name`: "<index>_<name>" with every
/// character that is not a letter or digit replaced by '_'.
inline std::string param_name(size_t index, const std::string &name) {
    std::string s = std::to_string(index) + "_" + name;
    for (char &c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

/// The name generator of INSTANTIATE_TEST_SUITE_P over indices of app_layouts().
template <typename ParamInfo>
std::string app_layout_test_name(const ParamInfo &info) {
    return param_name(info.param, app_layouts()[info.param].name);
}

}  // namespace ucxdt::support
