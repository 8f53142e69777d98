// A small deterministic generator for the benchmarks' synthetic inputs: the
// same server, queue or cluster every run (a linear congruential generator,
// Knuth's MMIX constants).
#ifndef GPUWARDEN_BENCH_LCG_H_
#define GPUWARDEN_BENCH_LCG_H_

#include <cstdint>

namespace gw::bench {

class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  // A number in [0, bound).
  unsigned Next(unsigned bound) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned>((state_ >> 33) % bound);
  }

 private:
  uint64_t state_;
};

}  // namespace gw::bench

#endif  // GPUWARDEN_BENCH_LCG_H_
