//===- GraphPicture.cpp - The model graph as a Graphviz picture -----------===//

#include "compiler/GraphPicture.h"

#include "dialects/Tfm/IR/TfmLayers.h"
#include "dialects/Tfm/IR/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>
#include <set>

using namespace mlir;
using namespace mlir::tfm;

/// `name` with each dotted number made `#`: the layer-independent form
/// of "model.decoder.layers.3.encoder_attn.k_proj.weight" or "cache_key.3".
static std::string withoutLayerNumbers(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '.');
  for (llvm::StringRef &part : parts)
    if (!part.empty() && llvm::all_of(part, llvm::isDigit))
      part = "#";
  return llvm::join(parts, ".");
}

/// The last component of a weight's name, for labels: "fc1.weight".
static std::string shortWeightName(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '.');
  if (parts.size() < 2)
    return name.str();
  return (parts[parts.size() - 2] + "." + parts.back()).str();
}

/// A weight's short name, or its stacked parts' joined by '+'.
static std::string shortWeightName(WeightOp w) {
  return llvm::join(
      llvm::map_range(w.getTensorNames(),
                      [](StringRef name) { return shortWeightName(name); }),
      "+");
}

static std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// The names of the ops `op` stands for: its decomposition, made and then
/// undone, in order.
static std::vector<std::string> replacedOps(Operation *op) {
  auto aggregated = dyn_cast<linalg::AggregatedOpInterface>(op);
  if (!aggregated)
    return {};
  OpBuilder b(op);
  Block *block = op->getBlock();
  llvm::DenseSet<Operation *> before;
  for (Operation &existing : *block)
    before.insert(&existing);
  if (failed(aggregated.decomposeOperation(b)))
    return {};
  std::vector<std::string> names;
  std::vector<Operation *> created;
  for (Operation &o : *block)
    if (!before.contains(&o))
      created.push_back(&o);
  for (Operation *o : created)
    if (o->getDialect() == op->getDialect())
      names.push_back(o->getName().stripDialect().str());
  for (Operation *o : llvm::reverse(created))
    o->erase();
  return names;
}

/// The backend recorded on `op`; none where it has none, or a name that
/// names no backend (a hand-written graph's).
static std::optional<Backend> backendOf(Operation &op) {
  llvm::Expected<std::optional<Backend>> backend = opBackend(&op);
  if (backend)
    return *backend;
  llvm::consumeError(backend.takeError());
  return std::nullopt;
}

namespace {
/// Draws functions as clusters. What a model repeats once per layer is one
/// node with its count: the calls of a layer (the value each passes to the
/// next drawn as a loop), the per-layer arguments (cache_key.0 ...
/// cache_key.N), and ops that differ only in which layer's weights they
/// read or which of those nodes they take.
class GraphWriter {
public:
  explicit GraphWriter(llvm::raw_ostream &os) : os(os) {}

  void function(func::FuncOp func, int64_t calls) {
    std::string title = func.getName().str();
    if (isLayer(func))
      title += llvm::formatv(" (a layer, called {0} times)", calls).str();
    os << llvm::formatv("  subgraph cluster_{0} {{\n    label=\"{1}\";\n"
                        "    style=rounded; color=gray60;\n",
                        func.getName(), title);
    for (BlockArgument arg : func.getArguments())
      argumentNode(func, arg);
    for (Operation &op : func.getBody().front())
      if (!isa<WeightOp, arith::ConstantOp>(op))
        drawOp(op);
    for (auto &[id, count] : counts)
      if (count > 1)
        os << llvm::formatv("    {0} [label=\"{1}\\n× {2}\"];\n", id,
                            labels[id], count);
    for (auto &[from, to] : edges)
      os << "    " << from << " -> " << to
         << (from == to ? " [label=\"next layer\"]" : "") << ";\n";
    edges.clear();
    drawnEdges.clear();
    groups.clear();
    counts.clear();
    os << "  }\n";
  }

private:
  std::string nodeId() { return "n" + std::to_string(nextId++); }

  /// An argument's node; arguments named alike but for a layer number
  /// (cache_key.0, cache_key.1) share one.
  void argumentNode(func::FuncOp func, BlockArgument arg) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tfm.name");
    std::string text = name ? name.getValue().str()
                            : "arg" + std::to_string(arg.getArgNumber());
    std::string key =
        "arg " + withoutLayerNumbers(text) + " " + typeText(arg.getType());
    std::string id = groupOf(key, {});
    if (id.empty()) {
      id = nodeId();
      groups.push_back({key, {}, id});
      os << llvm::formatv("    {0} [label=\"{1}\\n{2}\", shape=ellipse];\n", id,
                          text, typeText(arg.getType()));
      labels[id] = withoutLayerNumbers(text) + "\\n" + typeText(arg.getType());
    }
    ++counts[id];
    valueNode[arg] = id;
  }

  /// The op's node: the group of ops like it, or a new one. An operand
  /// from the group itself is the previous layer's value.
  void drawOp(Operation &op) {
    std::string key = op.getName().getStringRef().str();
    for (Type type : op.getResultTypes())
      key += " " + typeText(type);
    if (auto call = dyn_cast<func::CallOp>(op))
      key += " @" + call.getCallee().str();
    SmallVector<std::string> inputs;
    for (Value operand : op.getOperands()) {
      if (auto w = operand.getDefiningOp<WeightOp>())
        key += " " + withoutLayerNumbers(llvm::join(w.getTensorNames(), "+"));
      auto from = valueNode.find(operand);
      if (from != valueNode.end())
        inputs.push_back(from->second);
    }
    std::string id = groupOf(key, inputs);
    if (id.empty()) {
      id = opNode(op);
      groups.push_back({key, inputs, id});
    }
    ++counts[id];
    for (const std::string &from : inputs)
      if (drawnEdges.insert({from, id}).second)
        edges.push_back({from, id});
    for (Value result : op.getResults())
      valueNode[result] = id;
  }

  /// The node of a group of `key` whose ops read `inputs`, an input equal
  /// to the group's node standing for any: the loop over the layers.
  std::string groupOf(const std::string &key, ArrayRef<std::string> inputs) {
    for (const Group &group : groups) {
      if (group.key != key || group.inputs.size() != inputs.size())
        continue;
      bool same = llvm::all_of(llvm::zip(group.inputs, inputs), [&](auto pair) {
        return std::get<0>(pair) == std::get<1>(pair) ||
               std::get<1>(pair) == group.id;
      });
      if (same)
        return group.id;
    }
    return "";
  }

  static std::string typeText(Type type) {
    if (auto shaped = dyn_cast<ShapedType>(type))
      return formatShape(shaped.getShape());
    std::string text;
    llvm::raw_string_ostream(text) << type;
    return text;
  }

  /// A node for `op`: its name, result shape, the weights it reads and the
  /// backend chosen for it; a fused op in a cluster with what it replaced.
  std::string opNode(Operation &op) {
    std::string id = nodeId();
    std::string label = op.getName().getStringRef().str();
    if (auto call = dyn_cast<func::CallOp>(op))
      label = "call @" + call.getCallee().str();
    if (op.getNumResults())
      label += "\\n" + typeText(op.getResult(0).getType());
    for (Value operand : op.getOperands())
      if (auto w = operand.getDefiningOp<WeightOp>())
        label += "\\n" + escape(shortWeightName(w));
    std::string fill = "white";
    if (std::optional<Backend> backend = backendOf(op)) {
      label += "\\n-> " + backendName(*backend).str();
      fill = *backend == Backend::OneDnn ? "lightsalmon" : "lightblue";
    }
    std::vector<std::string> replaced = replacedOps(&op);
    if (!replaced.empty()) {
      os << llvm::formatv(
          "    subgraph cluster_fused_{0} {{\n      label=\"fused "
          "{1}\"; style=filled; fillcolor=lightyellow;\n",
          id, op.getName().stripDialect());
      os << llvm::formatv("      {0}_replaced [label=\"replaces:\\n{1}\", "
                          "shape=note, fontsize=8, fillcolor=white, "
                          "style=filled];\n",
                          id, llvm::join(replaced, "\\n"));
    }
    labels[id] = label;
    os << llvm::formatv("    {0} [label=\"{1}\", style=\"filled{2}\", "
                        "fillcolor={3}];\n",
                        id, label, replaced.empty() ? "" : ",bold", fill);
    if (!replaced.empty())
      os << llvm::formatv("      {0}_replaced -> {0} [style=dotted, "
                          "arrowhead=none];\n    }\n",
                          id);
    return id;
  }

  llvm::raw_ostream &os;
  int64_t nextId = 0;
  llvm::DenseMap<Value, std::string> valueNode;
  /// Per function: the groups of ops (what they are, the nodes they read,
  /// their node), how many each node stands for; every node's label.
  struct Group {
    std::string key;
    SmallVector<std::string> inputs;
    std::string id;
  };
  std::vector<Group> groups;
  std::map<std::string, int64_t> counts;
  std::map<std::string, std::string> labels;
  /// Edges between drawn nodes, each once, in the order found.
  std::vector<std::pair<std::string, std::string>> edges;
  std::set<std::pair<std::string, std::string>> drawnEdges;
};
} // namespace

void mlir::tfm::writeGraphPicture(ModuleOp module, llvm::StringRef title,
                                  llvm::raw_ostream &os) {
  os << "digraph model {\n  label=\"" << escape(title)
     << "\"; labelloc=t; fontname=Helvetica;\n"
        "  node [shape=box, fontname=Helvetica, fontsize=10];\n"
        "  edge [color=gray40];\n";
  GraphWriter writer(os);
  SymbolTable symbols(module);
  llvm::DenseMap<Operation *, int64_t> calls;
  module.walk([&](func::CallOp call) {
    if (weightsPrefix(call))
      ++calls[symbols.lookup(call.getCallee())];
  });
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      writer.function(func, calls.lookup(func));
  os << "}\n";
}
