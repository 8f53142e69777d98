#include "placement/placement.h"

#include <gtest/gtest.h>

namespace gw::placement {
namespace {

TEST(PlacementPlaceholder, Builds) { EXPECT_EQ(Count(Bit(3) | Bit(5)), 2u); }

}  // namespace
}  // namespace gw::placement
