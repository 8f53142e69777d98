#include "fleet/history_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace gw::fleet {
namespace {

// PRAGMA application_id of a gpuwarden history file ("GWHI").
constexpr int32_t kApplicationId = 0x47574849;

// A table with rowids: a row of up to ~4 KB stays in its page (a WITHOUT
// ROWID table moves all but ~500 bytes of a row over ~1 KB to an overflow
// page of its own, 4.6 KB a point from 16 GPUs on). Files made before keep
// their WITHOUT ROWID table and JSON text rows; the same statements serve both.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS points ("
    "  tier INTEGER NOT NULL, t INTEGER NOT NULL, data BLOB NOT NULL,"
    "  PRIMARY KEY (tier, t));";

struct Reset {
  sqlite3_stmt* s;
  ~Reset() {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

// The point in the current row's first column: the binary form, or JSON text
// (a row of a version before it).
Result<HistoryPoint> PointOfRow(sqlite3_stmt* stmt) {
  // The type first, then the value, then its length (sqlite3_column_blob's
  // rules on conversions).
  if (sqlite3_column_type(stmt, 0) == SQLITE_BLOB) {
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt, 0));
    const int n = sqlite3_column_bytes(stmt, 0);
    return PointFromBinary(std::string_view(bytes, static_cast<size_t>(n)));
  }
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  const int n = sqlite3_column_bytes(stmt, 0);
  nlohmann::json j = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  return PointFromJson(j);
}

}  // namespace

Result<std::vector<HistoryPoint>> HistoryStore::Read(int tier, int64_t from_s, int64_t to_s) {
  std::vector<HistoryPoint> out;
  Status s = ForEach(tier, from_s, to_s, [&out](HistoryPoint&& p) {
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!s.ok()) return s.error();
  return out;
}

Status MemoryHistoryStore::Append(int tier, const HistoryPoint& point) {
  points_[{tier, point.time_s}] = point;
  return Status::Ok();
}

Status MemoryHistoryStore::AppendAll(int tier, std::span<const HistoryPoint> points) {
  ++append_all_calls_;
  for (const HistoryPoint& p : points) points_[{tier, p.time_s}] = p;
  return Status::Ok();
}

Status MemoryHistoryStore::ForEach(int tier, int64_t from_s, int64_t to_s, const Visitor& visit) {
  for (auto it = points_.lower_bound({tier, from_s});
       it != points_.end() && it->first.first == tier && it->first.second < to_s; ++it) {
    HistoryPoint copy = it->second;
    if (Status s = visit(std::move(copy)); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> MemoryHistoryStore::LastTime(int tier, int64_t before_s) {
  auto it = points_.lower_bound({tier, before_s});
  if (it == points_.begin()) return std::optional<int64_t>();
  --it;
  if (it->first.first != tier) return std::optional<int64_t>();
  return std::optional<int64_t>(it->first.second);
}

Status MemoryHistoryStore::Prune(int tier, int64_t before_s) {
  points_.erase(points_.lower_bound({tier, INT64_MIN}), points_.lower_bound({tier, before_s}));
  return Status::Ok();
}

Result<std::unique_ptr<SqliteHistoryStore>> SqliteHistoryStore::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return MakeError("store",
                     fmt::format("{}: cannot open or create: {}", path, std::strerror(errno)));
  }
  fchmod(fd, 0600);
  close(fd);
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_EXRESCODE, nullptr);
  std::unique_ptr<SqliteHistoryStore> store(new SqliteHistoryStore(path, db));
  if (rc != SQLITE_OK) return store->SqlError("opening");
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* id = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT (SELECT application_id FROM pragma_application_id), "
                         "(SELECT count(*) FROM sqlite_schema)",
                         -1, &id, nullptr) != SQLITE_OK ||
      sqlite3_step(id) != SQLITE_ROW) {
    sqlite3_finalize(id);
    return store->SqlError("reading the header");
  }
  const int64_t app = sqlite3_column_int64(id, 0);
  const int64_t objects = sqlite3_column_int64(id, 1);
  sqlite3_finalize(id);
  if (app != kApplicationId && (app != 0 || objects != 0)) {
    return MakeError("store", fmt::format("{}: a SQLite database of another program, not "
                                          "gpuwarden's history; refusing to change it",
                                          path));
  }
  const std::string setup = fmt::format(
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{}; {} "
      "PRAGMA application_id = {};",
      kCacheKiB, kSchema, kApplicationId);
  char* err = nullptr;
  if (sqlite3_exec(db, setup.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string what = err ? err : "unknown error";
    sqlite3_free(err);
    return MakeError("store", fmt::format("{}: setting up: {}", path, what));
  }
  return store;
}

SqliteHistoryStore::~SqliteHistoryStore() {
  for (sqlite3_stmt* s : {append_, read_, last_, prune_}) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Error SqliteHistoryStore::SqlError(const std::string& what) const {
  return MakeError(
      "store", fmt::format("{}: {}: {}", path_, what, db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

Status SqliteHistoryStore::Exec(const char* sql, const char* what) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return SqlError(what);
  return Status::Ok();
}

Status SqliteHistoryStore::Insert(int tier, const HistoryPoint& point) {
  if (!append_ &&
      sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO points(tier, t, data) VALUES (?, ?, ?)", -1,
                         &append_, nullptr) != SQLITE_OK) {
    return SqlError("preparing a write");
  }
  Reset reset{append_};
  row_.clear();
  sqlite3_bind_int(append_, 1, tier);
  sqlite3_bind_int64(append_, 2, point.time_s);
  if (write_json_) {
    row_ = PointToJson(point).dump();
    sqlite3_bind_text(append_, 3, row_.data(), static_cast<int>(row_.size()), SQLITE_STATIC);
  } else {
    AppendPointBinary(row_, point);
    sqlite3_bind_blob(append_, 3, row_.data(), static_cast<int>(row_.size()), SQLITE_STATIC);
  }
  if (sqlite3_step(append_) != SQLITE_DONE) return SqlError("writing a point");
  return Status::Ok();
}

Status SqliteHistoryStore::Append(int tier, const HistoryPoint& point) {
  return Insert(tier, point);
}

Status SqliteHistoryStore::AppendAll(int tier, std::span<const HistoryPoint> points) {
  if (points.empty()) return Status::Ok();
  if (points.size() == 1) return Insert(tier, points.front());
  if (Status s = Exec("BEGIN", "starting a write"); !s.ok()) return s;
  for (const HistoryPoint& p : points) {
    if (Status s = Insert(tier, p); !s.ok()) {
      // SQLite may have rolled the transaction back already.
      if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    }
  }
  if (Status s = Exec("COMMIT", "writing points"); !s.ok()) {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }
  return Status::Ok();
}

Status SqliteHistoryStore::ForEach(int tier, int64_t from_s, int64_t to_s, const Visitor& visit) {
  if (!read_ && sqlite3_prepare_v2(db_,
                                   "SELECT data FROM points WHERE tier = ? AND t >= ? AND t < ? "
                                   "ORDER BY t",
                                   -1, &read_, nullptr) != SQLITE_OK) {
    return SqlError("preparing a read");
  }
  // A visitor may read again (History::Load closes a minute from the store):
  // this statement is busy until the loop ends, so such a read gets its own.
  sqlite3_stmt* stmt = read_;
  sqlite3_stmt* own = nullptr;
  if (sqlite3_stmt_busy(read_)) {
    if (sqlite3_prepare_v2(db_, sqlite3_sql(read_), -1, &own, nullptr) != SQLITE_OK) {
      return SqlError("preparing a read");
    }
    stmt = own;
  }
  struct Done {
    sqlite3_stmt* s;
    sqlite3_stmt* own;
    ~Done() {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      sqlite3_finalize(own);
    }
  } done{stmt, own};
  sqlite3_bind_int(stmt, 1, tier);
  sqlite3_bind_int64(stmt, 2, from_s);
  sqlite3_bind_int64(stmt, 3, to_s);
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return SqlError("reading points");
    Result<HistoryPoint> p = PointOfRow(stmt);
    if (!p.ok()) {
      return MakeError("store", fmt::format("{}: a damaged point: {}", path_, p.error().message));
    }
    if (Status s = visit(std::move(*p)); !s.ok()) return s;
  }
}

Result<std::optional<int64_t>> SqliteHistoryStore::LastTime(int tier, int64_t before_s) {
  if (!last_ && sqlite3_prepare_v2(db_, "SELECT max(t) FROM points WHERE tier = ? AND t < ?", -1,
                                   &last_, nullptr) != SQLITE_OK) {
    return SqlError("preparing a read");
  }
  Reset reset{last_};
  sqlite3_bind_int(last_, 1, tier);
  sqlite3_bind_int64(last_, 2, before_s);
  if (sqlite3_step(last_) != SQLITE_ROW) return SqlError("reading the last point");
  if (sqlite3_column_type(last_, 0) == SQLITE_NULL) return std::optional<int64_t>();
  return std::optional<int64_t>(sqlite3_column_int64(last_, 0));
}

Status SqliteHistoryStore::Prune(int tier, int64_t before_s) {
  if (!prune_ && sqlite3_prepare_v2(db_, "DELETE FROM points WHERE tier = ? AND t < ?", -1, &prune_,
                                    nullptr) != SQLITE_OK) {
    return SqlError("preparing a prune");
  }
  Reset reset{prune_};
  sqlite3_bind_int(prune_, 1, tier);
  sqlite3_bind_int64(prune_, 2, before_s);
  if (sqlite3_step(prune_) != SQLITE_DONE) return SqlError("pruning");
  return Status::Ok();
}

}  // namespace gw::fleet
