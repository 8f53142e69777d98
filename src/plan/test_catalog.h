// The repository's own catalog (catalog/*.toml), read once for the tests
// that check figures against it.
#ifndef GPUWARDEN_PLAN_TEST_CATALOG_H_
#define GPUWARDEN_PLAN_TEST_CATALOG_H_

#include <gtest/gtest.h>

#include <string>

#include "plan/catalog.h"
#include "test_paths.h"

namespace gw::plan {

inline const Catalog& RepoCatalog() {
  static const Catalog catalog = [] {
    Result<Catalog> c = LoadCatalog(RealTextFiles(), gw::test::SourceDir() + "/catalog");
    if (!c.ok()) ADD_FAILURE() << c.error().message;
    return c.ok() ? *c : Catalog{};
  }();
  return catalog;
}

inline const ModelSpec& RepoModel(const std::string& name) {
  const ModelSpec* m = RepoCatalog().FindModel(name);
  if (m == nullptr) {
    ADD_FAILURE() << "catalog has no " << name;
    static const ModelSpec none;
    return none;
  }
  return *m;
}

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_TEST_CATALOG_H_
