#include "watch/model.h"

#include <utility>

namespace gw::watch {

void ApplyFrame(WatchModel& model, Frame frame) {
  if (frame.snapshot) {
    model.snapshot = std::move(frame.snapshot);
    model.data_unix_ms = model.snapshot->time_unix_ms;
  }
  if (frame.diagnosis) model.diagnosis = std::move(frame.diagnosis);
  if (frame.queue.state != QueueView::State::kNotAsked) model.queue = std::move(frame.queue);
  model.driver_stuck = frame.driver_stuck;
  model.driver_message = std::move(frame.driver_message);
  model.updated_unix_ms = frame.time_unix_ms;
  ++model.frames;
}

}  // namespace gw::watch
