// HistoryStore: where the daemon's history lives between restarts. One
// interface, two homes: SqliteHistoryStore (STATE_DIR/history.db) and
// MemoryHistoryStore (tests, and a daemon whose file cannot be used). Points
// are kept per tier (0: 1 s, 1: 1 min, 2: 1 h), one per (tier, time).
//
// Durability is not the queue's: a point lost in a crash is a second of
// history, so writes are not synced (SQLite synchronous=NORMAL), and History
// writes its 1-s points a few at a time (history.h). A write that fails
// returns the error and changes nothing.
//
// SqliteHistoryStore keeps points in their compact binary form
// (AppendPointBinary); rows written as JSON text by earlier versions are read
// as they are. Reads go through a small page cache (kCacheKiB) and stream
// (ForEach), so a query over 7 days holds no more than the points it asks for.
#ifndef GPUWARDEN_FLEET_HISTORY_STORE_H_
#define GPUWARDEN_FLEET_HISTORY_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
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
  using Visitor = std::function<Status(HistoryPoint&&)>;

  virtual ~HistoryStore() = default;
  // Replaces a point of the same tier and time.
  virtual Status Append(int tier, const HistoryPoint& point) = 0;
  // Appends `points` as Append does, all or none (one transaction).
  virtual Status AppendAll(int tier, std::span<const HistoryPoint> points) = 0;
  // Calls `visit` with each point of `tier` with from_s <= time < to_s, by
  // time, one at a time; stops at the first error it returns (and returns it).
  virtual Status ForEach(int tier, int64_t from_s, int64_t to_s, const Visitor& visit) = 0;
  // The time of the newest point of `tier` before before_s; nullopt: none.
  virtual Result<std::optional<int64_t>> LastTime(int tier, int64_t before_s) = 0;
  // Drops the points of `tier` older than before_s.
  virtual Status Prune(int tier, int64_t before_s) = 0;

  // Points of `tier` with from_s <= time < to_s, by time (ForEach, gathered).
  Result<std::vector<HistoryPoint>> Read(int tier, int64_t from_s, int64_t to_s);
};

class MemoryHistoryStore final : public HistoryStore {
 public:
  Status Append(int tier, const HistoryPoint& point) override;
  Status AppendAll(int tier, std::span<const HistoryPoint> points) override;
  Status ForEach(int tier, int64_t from_s, int64_t to_s, const Visitor& visit) override;
  Result<std::optional<int64_t>> LastTime(int tier, int64_t before_s) override;
  Status Prune(int tier, int64_t before_s) override;

  // How many times AppendAll was called (tests: that 1-s points are batched).
  int append_all_calls() const { return append_all_calls_; }

 private:
  std::map<std::pair<int, int64_t>, HistoryPoint> points_;
  int append_all_calls_ = 0;
};

class SqliteHistoryStore final : public HistoryStore {
 public:
  // SQLite's page cache for the file: enough for the writes' pages and a
  // query's path down the tree; a 7-day read streams through it.
  static constexpr int kCacheKiB = 128;

  // Opens or creates the file (mode 0600: it names users). Errors: "store",
  // naming the path; a file of another program is refused unchanged.
  static Result<std::unique_ptr<SqliteHistoryStore>> Open(const std::string& path);
  ~SqliteHistoryStore() override;
  SqliteHistoryStore(const SqliteHistoryStore&) = delete;
  SqliteHistoryStore& operator=(const SqliteHistoryStore&) = delete;

  Status Append(int tier, const HistoryPoint& point) override;
  Status AppendAll(int tier, std::span<const HistoryPoint> points) override;
  Status ForEach(int tier, int64_t from_s, int64_t to_s, const Visitor& visit) override;
  Result<std::optional<int64_t>> LastTime(int tier, int64_t before_s) override;
  Status Prune(int tier, int64_t before_s) override;

  // Writes rows as JSON text, as versions before the binary form did (tests:
  // that such files are still read).
  void WriteJsonForTests() { write_json_ = true; }

 private:
  SqliteHistoryStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Error SqlError(const std::string& what) const;
  Status Insert(int tier, const HistoryPoint& point);
  Status Exec(const char* sql, const char* what);

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* append_ = nullptr;
  sqlite3_stmt* read_ = nullptr;
  sqlite3_stmt* last_ = nullptr;
  sqlite3_stmt* prune_ = nullptr;
  std::string row_;  // The row being written, its buffer kept.
  bool write_json_ = false;
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HISTORY_STORE_H_
