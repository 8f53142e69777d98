#include "os/errno_text.h"

#include <system_error>

namespace gw::os {

std::string ErrnoText(int err) { return std::generic_category().message(err); }

}  // namespace gw::os
