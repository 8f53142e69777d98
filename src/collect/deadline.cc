#include "collect/deadline.h"

namespace gw::collect {

struct DeadlineWorker::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> task;  // Posted, not yet taken.
  bool busy = false;           // A task is posted or running.
  uint64_t finished = 0;       // Tasks run to their end.
  bool stop = false;
};

namespace {

void Serve(std::shared_ptr<DeadlineWorker::Shared> shared) {
  std::unique_lock<std::mutex> lock(shared->mu);
  for (;;) {
    shared->cv.wait(lock, [&] { return shared->stop || shared->task != nullptr; });
    if (shared->task == nullptr) return;  // Stopped and idle.
    std::function<void()> task = std::move(shared->task);
    shared->task = nullptr;
    lock.unlock();
    task();
    task = nullptr;  // What it owns goes before the caller is told.
    lock.lock();
    shared->busy = false;
    ++shared->finished;
    shared->cv.notify_all();
    if (shared->stop) return;
  }
}

}  // namespace

DeadlineWorker::DeadlineWorker() : shared_(std::make_shared<Shared>()) {
  // Detached: it owns what it touches through shared_, and one stuck in the
  // kernel must not hold up the destructor.
  std::thread(Serve, shared_).detach();
}

DeadlineWorker::~DeadlineWorker() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  shared_->cv.notify_all();
}

bool DeadlineWorker::Post(std::function<void()> task, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  if (shared_->busy) {
    ++refused_;
    return false;
  }
  ++runs_;
  shared_->busy = true;
  shared_->task = std::move(task);
  const uint64_t ticket = shared_->finished + 1;
  shared_->cv.notify_all();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  return shared_->cv.wait_until(lock, deadline, [&] { return shared_->finished >= ticket; });
}

}  // namespace gw::collect
