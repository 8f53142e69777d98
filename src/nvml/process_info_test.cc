#include "nvml/process_info.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace gw::nvml {
namespace {

struct Entry {
  uint32_t pid;
  uint64_t used;
  uint32_t gi = 0xFFFFFFFF;
  uint32_t ci = 0xFFFFFFFF;
};

// A buffer as a driver leaves it: sentinel-filled, then `entries` written with
// `stride` bytes each (the bytes past offset 24 of each entry set to `tail`
// when `write_tail`, else left as they were).
std::vector<uint8_t> Written(const std::vector<Entry>& entries, size_t stride,
                             bool write_tail = true, uint8_t tail = 0,
                             size_t capacity_entries = 8) {
  std::vector<uint8_t> buffer(capacity_entries * kMaxProcessInfoStride, kProcessInfoSentinel);
  for (size_t i = 0; i < entries.size(); ++i) {
    uint8_t* base = buffer.data() + i * stride;
    std::memset(base, 0, 24);  // Padding after pid is written too.
    std::memcpy(base + 0, &entries[i].pid, 4);
    std::memcpy(base + 8, &entries[i].used, 8);
    std::memcpy(base + 16, &entries[i].gi, 4);
    std::memcpy(base + 20, &entries[i].ci, 4);
    if (write_tail && stride > 24) std::memset(base + 24, tail, stride - 24);
  }
  return buffer;
}

TEST(MeasureWrittenExtent, FindsLastNonSentinelByte) {
  std::vector<uint8_t> buffer(64, 0xA5);
  EXPECT_EQ(MeasureWrittenExtent(buffer, 0xA5), 0u);
  buffer[10] = 0;
  EXPECT_EQ(MeasureWrittenExtent(buffer, 0xA5), 11u);
  buffer[63] = 1;
  EXPECT_EQ(MeasureWrittenExtent(buffer, 0xA5), 64u);
}

TEST(DeriveProcessInfoStride, RoundsUpToMultipleOfEight) {
  EXPECT_EQ(DeriveProcessInfoStride(3 * 24, 3), 24u);
  EXPECT_EQ(DeriveProcessInfoStride(3 * 32, 3), 32u);
  // The last entry's tail left unwritten (or equal to the sentinel).
  EXPECT_EQ(DeriveProcessInfoStride(2 * 32 + 24, 3), 32u);
  EXPECT_EQ(DeriveProcessInfoStride(3 * 24 - 4, 3), 24u);
  EXPECT_EQ(DeriveProcessInfoStride(2 * 40, 2), 40u);
  // Never below the declared size.
  EXPECT_EQ(DeriveProcessInfoStride(12, 1), 24u);
}

TEST(DecodeProcessInfoBuffer, Stride24) {
  auto buffer = Written({{100, 1ULL << 30}, {200, 2ULL << 30}, {300, ~0ULL}}, 24);
  auto decoded = DecodeProcessInfoBuffer(buffer, 3, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 24u);
  ASSERT_EQ(decoded->entries.size(), 3u);
  EXPECT_EQ(decoded->entries[0].pid, 100u);
  EXPECT_EQ(decoded->entries[1].pid, 200u);
  EXPECT_EQ(decoded->entries[1].used_gpu_memory, 2ULL << 30);
  EXPECT_EQ(decoded->entries[2].pid, 300u);
  EXPECT_EQ(decoded->entries[2].used_gpu_memory, ~0ULL);
  EXPECT_EQ(decoded->entries[2].gpu_instance_id, 0xFFFFFFFFu);
}

TEST(DecodeProcessInfoBuffer, Stride32AsR535Writes) {
  auto buffer = Written({{4242, 70000ULL << 20, 1, 0}, {4243, 512ULL << 20}, {4244, 0}}, 32);
  auto decoded = DecodeProcessInfoBuffer(buffer, 3, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 32u);
  ASSERT_EQ(decoded->entries.size(), 3u);
  EXPECT_EQ(decoded->entries[0].pid, 4242u);
  EXPECT_EQ(decoded->entries[0].used_gpu_memory, 70000ULL << 20);
  EXPECT_EQ(decoded->entries[0].gpu_instance_id, 1u);
  EXPECT_EQ(decoded->entries[0].compute_instance_id, 0u);
  EXPECT_EQ(decoded->entries[1].pid, 4243u);
  EXPECT_EQ(decoded->entries[2].pid, 4244u);
  EXPECT_EQ(decoded->entries[2].used_gpu_memory, 0u);
}

TEST(DecodeProcessInfoBuffer, Stride32WithTailsLeftUnwritten) {
  auto buffer = Written({{11, 1}, {12, 2}, {13, 3}, {14, 4}}, 32, /*write_tail=*/false);
  auto decoded = DecodeProcessInfoBuffer(buffer, 4, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 32u);
  ASSERT_EQ(decoded->entries.size(), 4u);
  EXPECT_EQ(decoded->entries[3].pid, 14u);
  EXPECT_EQ(decoded->entries[3].used_gpu_memory, 4u);
}

TEST(DecodeProcessInfoBuffer, Stride32WithTailEqualToSentinel) {
  auto buffer = Written({{11, 1}, {12, 2}}, 32, /*write_tail=*/true, kProcessInfoSentinel);
  auto decoded = DecodeProcessInfoBuffer(buffer, 2, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 32u);
  EXPECT_EQ(decoded->entries[1].pid, 12u);
}

TEST(DecodeProcessInfoBuffer, LargerStride) {
  auto buffer = Written({{21, 1}, {22, 2}, {23, 3}}, 48);
  auto decoded = DecodeProcessInfoBuffer(buffer, 3, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 48u);
  EXPECT_EQ(decoded->entries[2].pid, 23u);
}

TEST(DecodeProcessInfoBuffer, SingleEntryDecodesWhateverTheStride) {
  auto buffer = Written({{77, 5}}, 32);
  auto decoded = DecodeProcessInfoBuffer(buffer, 1, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->entries.size(), 1u);
  EXPECT_EQ(decoded->entries[0].pid, 77u);
  EXPECT_EQ(decoded->entries[0].used_gpu_memory, 5u);
}

TEST(DecodeProcessInfoBuffer, NoEntries) {
  std::vector<uint8_t> buffer(8 * kMaxProcessInfoStride, kProcessInfoSentinel);
  auto decoded = DecodeProcessInfoBuffer(buffer, 0, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->entries.empty());
}

TEST(DecodeProcessInfoBuffer, NothingWrittenIsAnError) {
  std::vector<uint8_t> buffer(8 * kMaxProcessInfoStride, kProcessInfoSentinel);
  auto decoded = DecodeProcessInfoBuffer(buffer, 2, kProcessInfoSentinel);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().code, "nvml_layout");
}

TEST(DecodeProcessInfoBuffer, ZeroPidIsRejected) {
  auto buffer = Written({{0, 1}, {0, 2}}, 24);
  auto decoded = DecodeProcessInfoBuffer(buffer, 2, kProcessInfoSentinel);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().code, "nvml_layout");
}

TEST(DecodeProcessInfoBuffer, GarbageStrideFallsBackToAValidOne) {
  // 24-byte entries, but something wrote a stray byte far past them: the
  // derived stride (large) yields garbage PIDs, 24 validates.
  auto buffer = Written({{31, 1}, {32, 2}}, 24);
  buffer[2 * 64 - 1] = 0x00;
  auto decoded = DecodeProcessInfoBuffer(buffer, 2, kProcessInfoSentinel);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 24u);
  EXPECT_EQ(decoded->entries[1].pid, 32u);
}

TEST(IsPlausiblePid, Bounds) {
  EXPECT_FALSE(IsPlausiblePid(0));
  EXPECT_TRUE(IsPlausiblePid(1));
  EXPECT_TRUE(IsPlausiblePid(4194304));
  EXPECT_FALSE(IsPlausiblePid(4194305));
  EXPECT_FALSE(IsPlausiblePid(0xFFFFFFFFu));
}

}  // namespace
}  // namespace gw::nvml
