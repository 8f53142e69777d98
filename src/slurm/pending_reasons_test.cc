// The pending-reason catalog: well formed, and complete against the
// installed Slurm's own list (libslurmfull's job_reason_string, which Debian's
// slurm-wlm-basic-plugins ships; scripts/setup.sh installs it).
#include "slurm/pending_reasons.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gw::slurm {
namespace {

TEST(PendingReasons, EveryEntryIsWellFormed) {
  std::set<std::string> codes;
  for (const PendingReason& r : AllPendingReasons()) {
    EXPECT_TRUE(codes.insert(r.code).second) << "twice: " << r.code;
    EXPECT_FALSE(r.meaning.empty()) << r.code;
    EXPECT_FALSE(r.next.empty()) << r.code;
    EXPECT_EQ(r.meaning.back(), '.') << r.code << ": " << r.meaning;
    EXPECT_EQ(r.next.back(), '.') << r.code << ": " << r.next;
    // "Never as asked" is exactly the outlook "never".
    EXPECT_EQ(r.kind == WaitKind::kNeverAsAsked, r.outlook == Outlook::kNever) << r.code;
    EXPECT_EQ(r.kind == WaitKind::kEnded, r.outlook == Outlook::kNotWaiting) << r.code;
    EXPECT_EQ(FindPendingReason(r.code), &r) << r.code;
  }
  EXPECT_EQ(FindPendingReason("NoSuchReasonCode"), nullptr);
}

TEST(PendingReasons, TheLimitFamilySaysWhichLimitAndWhetherItPasses) {
  const PendingReason* per_user = FindPendingReason("QOSMaxGRESPerUser");
  ASSERT_NE(per_user, nullptr);
  EXPECT_EQ(per_user->kind, WaitKind::kLimit);
  EXPECT_EQ(per_user->outlook, Outlook::kByItself);
  EXPECT_NE(per_user->meaning.find("GPUs"), std::string::npos) << per_user->meaning;
  EXPECT_NE(per_user->meaning.find("MaxTRESPerUser"), std::string::npos) << per_user->meaning;
  const PendingReason* per_job = FindPendingReason("AssocMaxGRESPerJob");
  ASSERT_NE(per_job, nullptr);
  EXPECT_EQ(per_job->outlook, Outlook::kNever);
  EXPECT_NE(per_job->meaning.find("association"), std::string::npos);
  const PendingReason* group = FindPendingReason("AssocGrpGRES");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->outlook, Outlook::kByItself);
  EXPECT_NE(group->meaning.find("GrpTRES"), std::string::npos);
  const PendingReason* budget = FindPendingReason("QOSGrpGRESMinutes");
  ASSERT_NE(budget, nullptr);
  EXPECT_EQ(budget->outlook, Outlook::kNeedsSomeone);
  EXPECT_EQ(FindPendingReason("Resources")->kind, WaitKind::kResources);
  EXPECT_EQ(FindPendingReason("BeginTime")->kind, WaitKind::kTime);
  EXPECT_EQ(FindPendingReason("ReqNodeNotAvail")->kind, WaitKind::kNodes);
}

// Slurm's own list of reason strings, from the installed library; empty (with
// *why) when there is none.
std::vector<std::string> InstalledSlurmReasons(std::string* why, std::string* version) {
  std::vector<std::string> out;
  void* lib = nullptr;
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so",
                           "/usr/lib/aarch64-linux-gnu/slurm-wlm/libslurmfull.so",
                           "/usr/lib64/slurm/libslurmfull.so"}) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
  }
  if (lib == nullptr) {
    *why = "no libslurmfull.so (Slurm is not installed)";
    return out;
  }
  using ReasonString = char* (*)(int);
  using ApiVersion = long (*)();
  auto reason_string = reinterpret_cast<ReasonString>(dlsym(lib, "job_reason_string"));
  auto api_version = reinterpret_cast<ApiVersion>(dlsym(lib, "slurm_api_version"));
  if (reason_string == nullptr || api_version == nullptr) {
    *why = "libslurmfull.so has no job_reason_string/slurm_api_version";
    return out;
  }
  const long v = api_version();
  *version = std::to_string((v >> 16) & 0xff) + "." + std::to_string((v >> 8) & 0xff);
  // Past the last code, Slurm prints the number itself.
  for (int i = 0; i < 4096; ++i) {
    const std::string s = reason_string(i);
    if (s == std::to_string(i)) break;
    out.push_back(s);
  }
  return out;
}

TEST(PendingReasons, EveryReasonOfTheInstalledSlurm2205IsCatalogued) {
  std::string why;
  std::string version;
  const std::vector<std::string> installed = InstalledSlurmReasons(&why, &version);
  if (installed.empty()) GTEST_SKIP() << why;
  std::set<std::string> distinct(installed.begin(), installed.end());
  for (const std::string& code : distinct) {
    EXPECT_NE(FindPendingReason(code), nullptr)
        << "Slurm " << version << " reason \"" << code << "\" has no entry in the catalog";
  }
  if (version == "38.0") {  // Slurm 22.05's API: the catalog is exactly its list.
    EXPECT_EQ(distinct.size(), AllPendingReasons().size());
    for (const PendingReason& r : AllPendingReasons()) {
      EXPECT_EQ(distinct.count(r.code), 1u) << r.code << " is not a Slurm " << version << " code";
    }
  }
}

}  // namespace
}  // namespace gw::slurm
