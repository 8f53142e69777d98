#include "kmsg/scan.h"

#include <algorithm>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gw::kmsg::internal {
namespace {

constexpr char kNvrm[] = "NVRM";
constexpr size_t kNvrmLen = 4;
constexpr char kLinux[] = "Linux version";
constexpr size_t kLinuxLen = 13;
// journalctl's lines between two boots: "-- Boot 5c3b… --", "-- Reboot --".
constexpr char kBoot[] = "-- Boot ";
constexpr size_t kBootLen = 8;
constexpr char kReboot[] = "-- Reboot --";
constexpr size_t kRebootLen = 12;

// True when a needle starts at `p`.
inline bool MatchAt(const char* s, size_t n, size_t p) {
  if (s[p] == 'N') return p + kNvrmLen <= n && std::memcmp(s + p, kNvrm, kNvrmLen) == 0;
  if (s[p] == 'L') return p + kLinuxLen <= n && std::memcmp(s + p, kLinux, kLinuxLen) == 0;
  if (s[p] == '-') {
    return (p + kBootLen <= n && std::memcmp(s + p, kBoot, kBootLen) == 0) ||
           (p + kRebootLen <= n && std::memcmp(s + p, kReboot, kRebootLen) == 0);
  }
  return false;
}

size_t ScanScalar(const char* s, size_t n, size_t i) {
  // One memmem per needle over the rest would be simpler but read everything
  // several times; the rest is short here (the SIMD loops leave < 64 bytes)
  // or this is a non-x86 build, where memmem's own skip loop does the work.
  size_t best = n;
  for (const auto& [needle, len] : {std::pair{kNvrm, kNvrmLen}, std::pair{kLinux, kLinuxLen},
                                    std::pair{kBoot, kBootLen}, std::pair{kReboot, kRebootLen}}) {
    // Only a match that starts before the best so far matters.
    const size_t end = best == n ? n : std::min(n, best + len - 1);
    const void* a = memmem(s + i, end - i, needle, len);
    if (a) best = static_cast<size_t>(static_cast<const char*>(a) - s);
  }
  return best;
}

#if defined(__x86_64__)
// The needles are tested with two bytes each (the "first and last byte"
// filter): 'N' at p and 'M' at p+3, 'L' at p and 'n' at p+12, '-' at p and
// 'B' or 'R' at p+3. Ordinary log text almost never passes the filter, so the
// memcmp behind it is rare.
__attribute__((target("avx2"))) size_t ScanAvx2(const char* s, size_t n, size_t i) {
  const __m256i vn = _mm256_set1_epi8('N'), vm = _mm256_set1_epi8('M');
  const __m256i vl = _mm256_set1_epi8('L'), vsmall_n = _mm256_set1_epi8('n');
  const __m256i vdash = _mm256_set1_epi8('-'), vb = _mm256_set1_epi8('B'),
                vr = _mm256_set1_epi8('R');
  while (i + 12 + 32 <= n) {
    const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i a3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 3));
    const __m256i a12 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 12));
    const __m256i marker =
        _mm256_and_si256(_mm256_cmpeq_epi8(a0, vdash),
                         _mm256_or_si256(_mm256_cmpeq_epi8(a3, vb), _mm256_cmpeq_epi8(a3, vr)));
    const __m256i hit = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_and_si256(_mm256_cmpeq_epi8(a0, vn), _mm256_cmpeq_epi8(a3, vm)),
            _mm256_and_si256(_mm256_cmpeq_epi8(a0, vl), _mm256_cmpeq_epi8(a12, vsmall_n))),
        marker);
    unsigned mask = static_cast<unsigned>(_mm256_movemask_epi8(hit));
    while (mask != 0) {
      const size_t p = i + static_cast<size_t>(__builtin_ctz(mask));
      if (MatchAt(s, n, p)) return p;
      mask &= mask - 1;
    }
    i += 32;
  }
  return ScanScalar(s, n, i);
}

size_t ScanSse2(const char* s, size_t n, size_t i) {
  const __m128i vn = _mm_set1_epi8('N'), vm = _mm_set1_epi8('M');
  const __m128i vl = _mm_set1_epi8('L'), vsmall_n = _mm_set1_epi8('n');
  const __m128i vdash = _mm_set1_epi8('-'), vb = _mm_set1_epi8('B'), vr = _mm_set1_epi8('R');
  while (i + 12 + 16 <= n) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i a3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 3));
    const __m128i a12 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 12));
    const __m128i marker = _mm_and_si128(
        _mm_cmpeq_epi8(a0, vdash), _mm_or_si128(_mm_cmpeq_epi8(a3, vb), _mm_cmpeq_epi8(a3, vr)));
    const __m128i hit = _mm_or_si128(
        _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(a0, vn), _mm_cmpeq_epi8(a3, vm)),
                     _mm_and_si128(_mm_cmpeq_epi8(a0, vl), _mm_cmpeq_epi8(a12, vsmall_n))),
        marker);
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
    while (mask != 0) {
      const size_t p = i + static_cast<size_t>(__builtin_ctz(mask));
      if (MatchAt(s, n, p)) return p;
      mask &= mask - 1;
    }
    i += 16;
  }
  return ScanScalar(s, n, i);
}

using ScanFn = size_t (*)(const char*, size_t, size_t);
ScanFn PickScan() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? ScanAvx2 : ScanSse2;
}
#endif

}  // namespace

size_t FindCandidate(std::string_view text, size_t from) {
  if (from >= text.size()) return text.size();
#if defined(__x86_64__)
  static const ScanFn scan = PickScan();
  return scan(text.data(), text.size(), from);
#else
  return ScanScalar(text.data(), text.size(), from);
#endif
}

}  // namespace gw::kmsg::internal
