#include "diagnose/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "diagnose/rules.h"
#include "diagnose/rules_xid.h"
#include "diagnose/test_util.h"
#include "kmsg/xid_catalog.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;

TEST(CatalogTest, EveryCodeIsComplete) {
  ASSERT_GE(AllSpecs().size(), 50u);
  std::set<std::string_view> codes;
  auto upper_snake = [](std::string_view code) {
    return code.size() >= 2 && code.front() >= 'A' && code.front() <= 'Z' && code.back() != '_' &&
           std::all_of(code.begin(), code.end(), [](char c) {
             return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
           });
  };
  for (const FindingSpec& spec : AllSpecs()) {
    SCOPED_TRACE(std::string(spec.code));
    EXPECT_TRUE(upper_snake(spec.code));
    EXPECT_TRUE(codes.insert(spec.code).second) << "duplicate code";
    EXPECT_FALSE(spec.title.empty());
    EXPECT_NE(spec.title.back(), '.');
    EXPECT_FALSE(SplitSteps(spec.next_steps).empty());
    EXPECT_GT(spec.explanation.size(), 80u);
    EXPECT_NE(SeverityName(spec.severity), "?");
    EXPECT_NE(CategoryName(spec.category), "?");
    EXPECT_NE(VerdictName(spec.implies), "?");
    EXPECT_NE(ActorName(spec.actor), "?");
  }
}

TEST(CatalogTest, PlaceholdersAreKnown) {
  auto known = KnownPlaceholders();
  for (const FindingSpec& spec : AllSpecs()) {
    // Every "<word>" with a lower-case word is a placeholder.
    const std::string_view steps = spec.next_steps;
    for (size_t open = steps.find('<'); open != std::string_view::npos;
         open = steps.find('<', open + 1)) {
      size_t close = open + 1;
      while (close < steps.size() && steps[close] >= 'a' && steps[close] <= 'z') ++close;
      if (close == open + 1 || close == steps.size() || steps[close] != '>') continue;
      const std::string_view word = steps.substr(open, close - open + 1);
      EXPECT_NE(std::find(known.begin(), known.end(), word), known.end())
          << spec.code << " uses unknown placeholder " << word;
    }
  }
}

TEST(CatalogTest, SeverityMatchesVerdict) {
  for (const FindingSpec& spec : AllSpecs()) {
    SCOPED_TRACE(std::string(spec.code));
    // A fault is always critical; an application problem never breaks a GPU.
    if (spec.implies == Verdict::kFault) {
      EXPECT_EQ(spec.severity, Severity::kCritical);
    }
    if (spec.category == Category::kApplication) {
      EXPECT_NE(spec.implies, Verdict::kFault);
    }
    // Holders are capacity, a resource matter: never a fault.
    if (spec.category == Category::kHolder) {
      EXPECT_NE(spec.implies, Verdict::kFault);
    }
  }
}

TEST(CatalogTest, GpuResetIsForAdminsOnly) {
  for (const FindingSpec& spec : AllSpecs()) {
    for (const std::string& step : SplitSteps(spec.next_steps)) {
      if (step.find("nvidia-smi -r") != std::string::npos ||
          step.find("modprobe") != std::string::npos) {
        EXPECT_EQ(step.rfind("admin:", 0), 0u) << spec.code << ": " << step;
      }
    }
  }
}

TEST(CatalogTest, FindSpec) {
  const FindingSpec* spec = FindSpec("IDLE_HOLDER");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->code, "IDLE_HOLDER");
  EXPECT_EQ(spec->implies, Verdict::kReclaimable);
  EXPECT_EQ(spec->actor, Actor::kOwner);
  EXPECT_EQ(FindSpec("GPU_LOST")->implies, Verdict::kFault);
  EXPECT_EQ(FindSpec("NO_SUCH_CODE"), nullptr);
  EXPECT_EQ(FindSpec(""), nullptr);
  EXPECT_EQ(FindSpec("idle_holder"), nullptr);  // Codes are case-sensitive.
}

TEST(CatalogTest, ExpandStepsFillsAndDrops) {
  const FindingSpec& spec = *FindSpec("ZOMBIE_HOLDER");
  StepValues values;
  values.gpu = "3";
  values.pgid = 4200;
  std::vector<std::string> steps = ExpandSteps(spec, values);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0], "End the processes of its run that inherited the device file: kill -- -4200");
  EXPECT_EQ(steps[1], "See what holds the GPU now: gpuwarden status --gpu 3");
  EXPECT_NE(steps[2].find("sudo nvidia-smi -r -i 3"), std::string::npos);
  // Without a process group to name, the step that needs it is dropped.
  values.pgid.reset();
  steps = ExpandSteps(spec, values);
  ASSERT_EQ(steps.size(), 2u);
  for (const std::string& step : steps) EXPECT_EQ(step.find("<"), std::string::npos);
}

TEST(CatalogTest, SplitSteps) {
  EXPECT_THAT(SplitSteps("a\nb c\n\nd"), ElementsAre("a", "b c", "d"));
  EXPECT_TRUE(SplitSteps("").empty());
}

TEST(CatalogTest, EveryCodeHasARuleAndEveryRuleCodeIsCataloged) {
  std::set<std::string_view> emitted;
  std::set<std::string_view> names;
  for (const RuleInfo& rule : ListRules()) {
    EXPECT_TRUE(names.insert(rule.name).second) << "duplicate rule " << rule.name;
    EXPECT_FALSE(rule.codes.empty()) << rule.name;
    for (std::string_view code : rule.codes) {
      EXPECT_NE(FindSpec(code), nullptr) << rule.name << " emits uncataloged " << code;
      EXPECT_TRUE(emitted.insert(code).second) << code << " emitted by two rules";
    }
  }
  for (const FindingSpec& spec : AllSpecs()) {
    EXPECT_TRUE(emitted.count(spec.code)) << spec.code << " has no rule";
  }
}

TEST(CatalogTest, NameFunctions) {
  EXPECT_EQ(VerdictName(Verdict::kReclaimable), "RECLAIMABLE");
  EXPECT_EQ(SeverityName(Severity::kCritical), "critical");
  EXPECT_EQ(CategoryName(Category::kNvlink), "nvlink");
  EXPECT_EQ(ActorName(Actor::kVendor), "vendor");
  EXPECT_GT(VerdictRank(Verdict::kFault), VerdictRank(Verdict::kDegraded));
  EXPECT_GT(VerdictRank(Verdict::kDegraded), VerdictRank(Verdict::kBusy));
  EXPECT_EQ(VerdictRank(Verdict::kBusy), VerdictRank(Verdict::kReclaimable));
  EXPECT_GT(VerdictRank(Verdict::kBusy), VerdictRank(Verdict::kUnknown));
  EXPECT_GT(VerdictRank(Verdict::kUnknown), VerdictRank(Verdict::kOk));
}

// Findings whose category follows the Xid they report say so in the catalog;
// every other code keeps its one category.
TEST(CatalogTest, CategorySourceIsExplicit) {
  const std::set<std::string_view> by_cause = {"XID_FATAL", "XID_WARNING",   "XID_APPLICATION",
                                               "XID_OTHER", "XID_RECOVERED", "XID_HISTORY"};
  for (const FindingSpec& spec : AllSpecs()) {
    SCOPED_TRACE(std::string(spec.code));
    EXPECT_EQ(spec.category_source == CategorySource::kXidCause, by_cause.count(spec.code) == 1);
  }
  EXPECT_EQ(FindSpec("GPU_MISSING")->implies, Verdict::kFault);
  EXPECT_EQ(FindSpec("XID_HISTORY")->implies, Verdict::kOk);
  EXPECT_EQ(FindSpec("XID_RECOVERED")->implies, Verdict::kOk);
}

// Every cause class maps to the category word kmsg uses for `events`.
TEST(CatalogTest, XidCategoryWordsAgreeWithKmsg) {
  for (kmsg::CauseClass c :
       {kmsg::CauseClass::kApplication, kmsg::CauseClass::kEngine, kmsg::CauseClass::kDriver,
        kmsg::CauseClass::kFirmware, kmsg::CauseClass::kMemory, kmsg::CauseClass::kBus,
        kmsg::CauseClass::kThermalPower, kmsg::CauseClass::kNvlink,
        kmsg::CauseClass::kInformational, kmsg::CauseClass::kUnknown}) {
    EXPECT_EQ(CategoryName(XidCategory(c)), kmsg::CategoryWord(c));
  }
}

// Over the whole Xid catalog (and unknown codes): one current Xid on one GPU
// gives one finding whose code, category, severity, verdict and first step
// follow the catalog entry.
TEST(CatalogTest, EveryXidCodeBecomesAConsistentFinding) {
  std::vector<unsigned> codes;
  for (const kmsg::XidInfo& x : kmsg::XidCatalog()) codes.push_back(x.code);
  codes.push_back(4242);
  codes.push_back(999);
  ASSERT_EQ(codes.size(), 174u);  // NVIDIA's 172, one unknown code and NVML's 999.
  for (unsigned code : codes) {
    SCOPED_TRACE(code);
    Snapshot s = fixtures::HealthyServer(4);
    // GPU 3 lost: an Xid 79 on a GPU that reads normally would be "recovered".
    s.gpus[3].unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 3u, 15};
    s.gpus[3].memory = {};
    s.gpus[3].utilization_gpu_pct.reset();
    kmsg::KernelEvent e;
    e.kind = kmsg::kKindXid;
    e.xid = code;
    e.pci_bus_id = s.gpus[3].pci_bus_id;
    e.raw = "NVRM: Xid";
    std::vector<kmsg::KernelEvent> events = {e};
    const std::vector<Finding> findings = RunRules(std::span<const Snapshot>(&s, 1), {}, events);
    std::vector<const Finding*> xid;
    for (const Finding& f : findings) {
      if (f.code.rfind("XID_", 0) == 0) xid.push_back(&f);
    }
    ASSERT_EQ(xid.size(), 1u);
    const Finding& f = *xid[0];
    const kmsg::XidInfo info = kmsg::LookupXid(code);
    const kmsg::XidAssessment a = kmsg::AssessXid(e);
    EXPECT_EQ(f.code, XidFindingCode(a.cause, a.impact));
    EXPECT_EQ(f.category, XidCategory(info.cause));
    EXPECT_EQ(CategoryName(f.category), kmsg::CategoryWord(info.cause));
    const FindingSpec* spec = FindSpec(f.code);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(f.severity, spec->severity);
    EXPECT_EQ(f.implies, spec->implies);
    const Verdict want = a.impact == kmsg::XidImpact::kFault      ? Verdict::kFault
                         : a.impact == kmsg::XidImpact::kDegraded ? Verdict::kDegraded
                                                                  : Verdict::kOk;
    EXPECT_EQ(f.implies, want);
    EXPECT_EQ(f.gpus, std::vector<unsigned>{3});
    ASSERT_FALSE(f.next_steps.empty());
    EXPECT_NE(f.next_steps[0].find(fmt::format("NVIDIA's action for Xid {}: ", code)),
              std::string::npos)
        << f.next_steps[0];
    EXPECT_NE(f.next_steps[0].find(std::string(info.advice)), std::string::npos);
    EXPECT_TRUE(EvidenceNumber(f, fmt::format("xid_{}", code)).has_value());
  }
}

}  // namespace
}  // namespace gw::diagnose
