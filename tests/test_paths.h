// Where a test finds the project's files and the programs the build made.
//
// These are functions, defined in one file that CMake generates
// (tests/test_paths.cc.in), not macros: the clone's absolute path then appears
// in that one small translation unit, and every other test file compiles to
// the same text in every clone, which the compiler cache shares between a
// developer's tree and CI's fresh clone (docs/benchmarks.md, §11).
#pragma once

#include <string>

namespace gw::test {

// The source tree's root (where CMakeLists.txt is), without a trailing slash.
std::string SourceDir();

// The build tree's root (where gpuwarden, gpuwardend and sim/ are built).
std::string BinaryDir();

}  // namespace gw::test
