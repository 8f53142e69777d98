// The one way an errno value becomes words in an error message.
#ifndef GPUWARDEN_OS_ERRNO_TEXT_H_
#define GPUWARDEN_OS_ERRNO_TEXT_H_

#include <string>

namespace gw::os {

// "No space left on device" for ENOSPC: the C library's text, thread-safe.
std::string ErrnoText(int err);

}  // namespace gw::os

#endif  // GPUWARDEN_OS_ERRNO_TEXT_H_
