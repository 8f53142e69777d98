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

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS points ("
    "  tier INTEGER NOT NULL, t INTEGER NOT NULL, data TEXT NOT NULL,"
    "  PRIMARY KEY (tier, t)) WITHOUT ROWID;";

struct Reset {
  sqlite3_stmt* s;
  ~Reset() {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

}  // namespace

Status MemoryHistoryStore::Append(int tier, const HistoryPoint& point) {
  points_[{tier, point.time_s}] = point;
  return Status::Ok();
}

Result<std::vector<HistoryPoint>> MemoryHistoryStore::Read(int tier, int64_t from_s, int64_t to_s) {
  std::vector<HistoryPoint> out;
  for (auto it = points_.lower_bound({tier, from_s});
       it != points_.end() && it->first.first == tier && it->first.second < to_s; ++it) {
    out.push_back(it->second);
  }
  return out;
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
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; {} PRAGMA application_id = {};",
      kSchema, kApplicationId);
  char* err = nullptr;
  if (sqlite3_exec(db, setup.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string what = err ? err : "unknown error";
    sqlite3_free(err);
    return MakeError("store", fmt::format("{}: setting up: {}", path, what));
  }
  return store;
}

SqliteHistoryStore::~SqliteHistoryStore() {
  for (sqlite3_stmt* s : {append_, read_, prune_}) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Error SqliteHistoryStore::SqlError(const std::string& what) const {
  return MakeError(
      "store", fmt::format("{}: {}: {}", path_, what, db_ ? sqlite3_errmsg(db_) : "out of memory"));
}

Status SqliteHistoryStore::Append(int tier, const HistoryPoint& point) {
  if (!append_ &&
      sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO points(tier, t, data) VALUES (?, ?, ?)", -1,
                         &append_, nullptr) != SQLITE_OK) {
    return SqlError("preparing a write");
  }
  Reset reset{append_};
  const std::string data = PointToJson(point).dump();
  sqlite3_bind_int(append_, 1, tier);
  sqlite3_bind_int64(append_, 2, point.time_s);
  sqlite3_bind_text(append_, 3, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(append_) != SQLITE_DONE) return SqlError("writing a point");
  return Status::Ok();
}

Result<std::vector<HistoryPoint>> SqliteHistoryStore::Read(int tier, int64_t from_s, int64_t to_s) {
  if (!read_ && sqlite3_prepare_v2(db_,
                                   "SELECT data FROM points WHERE tier = ? AND t >= ? AND t < ? "
                                   "ORDER BY t",
                                   -1, &read_, nullptr) != SQLITE_OK) {
    return SqlError("preparing a read");
  }
  Reset reset{read_};
  sqlite3_bind_int(read_, 1, tier);
  sqlite3_bind_int64(read_, 2, from_s);
  sqlite3_bind_int64(read_, 3, to_s);
  std::vector<HistoryPoint> out;
  for (;;) {
    const int rc = sqlite3_step(read_);
    if (rc == SQLITE_DONE) return out;
    if (rc != SQLITE_ROW) return SqlError("reading points");
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(read_, 0));
    const int n = sqlite3_column_bytes(read_, 0);
    nlohmann::json j = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
    Result<HistoryPoint> p = PointFromJson(j);
    if (!p.ok()) {
      return MakeError("store", fmt::format("{}: a damaged point: {}", path_, p.error().message));
    }
    out.push_back(std::move(*p));
  }
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
