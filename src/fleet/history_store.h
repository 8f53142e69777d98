// HistoryStore: where the daemon's history lives between restarts. One
// interface, two homes: SqliteHistoryStore (STATE_DIR/history.db) and
// MemoryHistoryStore (tests). Points are kept per tier (0: 1 s, 1: 1 min,
// 2: 1 h), one per (tier, time).
//
// Durability is not the queue's: a point lost in a crash is a second of
// history, so writes are not synced (SQLite synchronous=NORMAL). A write that
// fails returns the error and changes nothing.
#ifndef GPUWARDEN_FLEET_HISTORY_STORE_H_
#define GPUWARDEN_FLEET_HISTORY_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "fleet/history_point.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gw::fleet {

class HistoryStore {
 public:
  virtual ~HistoryStore() = default;
  // Replaces a point of the same tier and time.
  virtual Status Append(int tier, const HistoryPoint& point) = 0;
  // Points of `tier` with from_s <= time < to_s, by time.
  virtual Result<std::vector<HistoryPoint>> Read(int tier, int64_t from_s, int64_t to_s) = 0;
  // Drops the points of `tier` older than before_s.
  virtual Status Prune(int tier, int64_t before_s) = 0;
};

class MemoryHistoryStore final : public HistoryStore {
 public:
  Status Append(int tier, const HistoryPoint& point) override;
  Result<std::vector<HistoryPoint>> Read(int tier, int64_t from_s, int64_t to_s) override;
  Status Prune(int tier, int64_t before_s) override;

 private:
  std::map<std::pair<int, int64_t>, HistoryPoint> points_;
};

class SqliteHistoryStore final : public HistoryStore {
 public:
  // Opens or creates the file (mode 0600: it names users). Errors: "store",
  // naming the path; a file of another program is refused unchanged.
  static Result<std::unique_ptr<SqliteHistoryStore>> Open(const std::string& path);
  ~SqliteHistoryStore() override;
  SqliteHistoryStore(const SqliteHistoryStore&) = delete;
  SqliteHistoryStore& operator=(const SqliteHistoryStore&) = delete;

  Status Append(int tier, const HistoryPoint& point) override;
  Result<std::vector<HistoryPoint>> Read(int tier, int64_t from_s, int64_t to_s) override;
  Status Prune(int tier, int64_t before_s) override;

 private:
  SqliteHistoryStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Error SqlError(const std::string& what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* append_ = nullptr;
  sqlite3_stmt* read_ = nullptr;
  sqlite3_stmt* prune_ = nullptr;
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HISTORY_STORE_H_
