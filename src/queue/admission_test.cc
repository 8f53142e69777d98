#include "queue/admission.h"
#include "core/units.h"

#include <gtest/gtest.h>

#include <set>

namespace gw::queue {
namespace {
JobSpec Spec(unsigned gpus, uint64_t vram_bytes) {
  JobSpec s;
  s.argv = {"/bin/true"};
  s.cwd = "/";
  s.gpus = gpus;
  s.vram_bytes = vram_bytes;
  return s;
}

// A GPU of `total` bytes (0: unknown) of which the driver reserves `reserved`.
placement::Candidate Gpu(unsigned index, uint64_t total, uint64_t reserved = 0) {
  placement::Candidate c;
  c.index = index;
  if (total > 0) c.total_bytes = total;
  c.reserved_bytes = reserved;
  return c;
}

AdmissionFacts TwoGpus(uint64_t a, uint64_t b) {
  AdmissionFacts f;
  f.gpus = {Gpu(0, a), Gpu(1, b)};
  f.job_exists = [](JobId id) { return std::set<JobId>{1, 2, 3}.count(id) > 0; };
  return f;
}

std::string Refusal(const JobSpec& spec, const AdmissionFacts& facts) {
  auto e = CheckAdmission(spec, facts);
  if (!e) return "";
  EXPECT_EQ(e->code, "unsatisfiable");
  return e->message;
}

TEST(Admission, AcceptsWhatFitsSomeday) {
  const AdmissionFacts f = TwoGpus(80 * kGiB, 80 * kGiB);
  EXPECT_EQ(Refusal(Spec(1, 0), f), "");
  EXPECT_EQ(Refusal(Spec(2, 79 * kGiB), f), "");  // A whole GPU each, less the margin.
  EXPECT_EQ(Refusal(Spec(0, 0), f), "");
  JobSpec after = Spec(1, 20 * kGiB);
  after.after = {1, 3};
  EXPECT_EQ(Refusal(after, f), "");
}

TEST(Admission, RefusesMoreGpusThanTheServerHas) {
  EXPECT_EQ(Refusal(Spec(3, 0), TwoGpus(80 * kGiB, 80 * kGiB)), "--gpus 3: this server has 2 GPUs");
  AdmissionFacts one;
  one.gpus = {Gpu(0, 16 * kGiB)};
  EXPECT_EQ(Refusal(Spec(2, 0), one), "--gpus 2: this server has 1 GPU");
}

TEST(Admission, RefusesMoreMemoryThanAnyGpuHas) {
  EXPECT_EQ(Refusal(Spec(1, 100 * kGiB), TwoGpus(80 * kGiB, 40 * kGiB)),
            "--vram 100 GiB: no GPU here has that much (the largest has 80 GiB usable; 512 MiB "
            "is kept free on each)");
  // Two GPUs asked, only one big enough.
  EXPECT_EQ(Refusal(Spec(2, 60 * kGiB), TwoGpus(80 * kGiB, 40 * kGiB)),
            "--gpus 2 --vram 60 GiB: only 1 GPU here has 60 GiB");
}

// What the driver reserves is never free, and the margin is kept free: a
// need between "usable" and "total" can never be placed (why --need says
// NEVER_FITS for it; the queue must not accept it to wait for ever).
TEST(Admission, CountsTheDriversReservationAndTheMargin) {
  AdmissionFacts h100;
  h100.gpus = {Gpu(0, 81559 * kMiB, 552 * kMiB), Gpu(1, 81559 * kMiB, 552 * kMiB)};
  EXPECT_EQ(Refusal(Spec(1, 79 * kGiB), h100),
            "--vram 79 GiB: no GPU here has that much (the largest has 79.1 GiB usable; 512 MiB "
            "is kept free on each)");
  EXPECT_EQ(Refusal(Spec(2, 78 * kGiB), h100), "");
  EXPECT_EQ(Refusal(Spec(1, 80 * kGiB), TwoGpus(80 * kGiB, 80 * kGiB)),
            "--vram 80 GiB: no GPU here has that much (the largest has 80 GiB usable; 512 MiB is "
            "kept free on each)");
}

// Never must be certain: a GPU whose total is unknown may be big enough, and
// a server whose GPUs are unknown (no NVML yet) refuses nothing on GPUs.
TEST(Admission, UnknownGpusRefuseNothing) {
  EXPECT_EQ(Refusal(Spec(1, 100 * kGiB), TwoGpus(0, 40 * kGiB)), "");
  EXPECT_EQ(Refusal(Spec(2, 100 * kGiB), TwoGpus(0, 40 * kGiB)),
            "--gpus 2 --vram 100 GiB: only 1 GPU here has 100 GiB");
  AdmissionFacts unknown;
  EXPECT_EQ(Refusal(Spec(8, 500 * kGiB), unknown), "");
}

TEST(Admission, RefusesAfterAJobThatDoesNotExist) {
  JobSpec s = Spec(1, 0);
  s.after = {2, 9999, 3};
  EXPECT_EQ(Refusal(s, TwoGpus(80 * kGiB, 80 * kGiB)), "--after 9999: no such job");
  AdmissionFacts no_lookup;
  EXPECT_EQ(Refusal(s, no_lookup), "");
}

}  // namespace
}  // namespace gw::queue
