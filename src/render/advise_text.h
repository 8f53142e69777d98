// `gpuwarden advise` as text: the VRAM breakdown with its formulas, what
// each choice saves, which catalog GPUs fit, this server now, the requests.
#ifndef GPUWARDEN_RENDER_ADVISE_TEXT_H_
#define GPUWARDEN_RENDER_ADVISE_TEXT_H_

#include <string>

#include "plan/advice.h"

namespace gw::render {

std::string RenderAdviseText(const plan::Advice& advice);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_ADVISE_TEXT_H_
