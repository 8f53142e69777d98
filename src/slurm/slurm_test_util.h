// For gw_slurm's tests: the test inputs of testdata/ (README.md there says
// which are captured and which hand-made).
#ifndef GPUWARDEN_SLURM_SLURM_TEST_UTIL_H_
#define GPUWARDEN_SLURM_SLURM_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace gw::slurm {

inline std::string ReadTestdata(const std::string& name) {
  std::ifstream in(gw::test::SourceDir() + "/src/slurm/testdata/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_SLURM_TEST_UTIL_H_
