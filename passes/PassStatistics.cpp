//===- PassStatistics.cpp - What the tfm passes did -------------*- C++ -*-===//

#include "passes/PassStatistics.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>
#include <string>

using namespace mlir;

namespace {
struct Counter {
  std::string name, description;
  int64_t value = 0;
};
struct Registry {
  std::mutex mutex;
  llvm::MapVector<std::string, llvm::SmallVector<Counter>,
                  llvm::StringMap<unsigned>>
      passes;
};
} // namespace

/// A plain static, not a ManagedStatic: tools print the statistics after
/// MlirOptMain, whose llvm_shutdown() has destroyed ManagedStatics by then.
static Registry &getRegistry() {
  static Registry registry;
  return registry;
}

void tfm::recordPassStatistic(llvm::StringRef pass, llvm::StringRef name,
                              llvm::StringRef description, int64_t value) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  llvm::SmallVector<Counter> &counters = registry.passes[pass.str()];
  for (Counter &c : counters)
    if (c.name == name) {
      c.value += value;
      return;
    }
  counters.push_back({name.str(), description.str(), value});
}

void tfm::printPassStatistics(llvm::raw_ostream &os) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  os << "===- tfm pass statistics -===\n";
  for (auto &[pass, counters] : registry.passes) {
    os << pass << "\n";
    for (const Counter &c : counters)
      os << "  (S) " << c.value << " " << c.name << " - " << c.description
         << "\n";
  }
}
