//===- GraphPicture.cpp - The model graph as a Graphviz picture ---*- C++ -*-===//

#include "compiler/GraphPicture.h"

#include "dialects/Tfm/IR/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>
#include <optional>

using namespace mlir;
using namespace mlir::tfm;

/// "encoder" / "decoder" and the layer of an op, from the importer's
/// locations ("model.encoder.layers.3.self_attn").
static std::optional<std::pair<std::string, int64_t>> layerOf(Operation *op) {
  auto name = dyn_cast<NameLoc>(op->getLoc());
  if (!name)
    return std::nullopt;
  llvm::StringRef text = name.getName().getValue();
  for (llvm::StringRef side : {"encoder", "decoder"}) {
    std::string prefix = ("model." + side + ".layers.").str();
    if (!text.consume_front(prefix))
      continue;
    int64_t layer;
    if (text.consumeInteger(10, layer))
      return std::nullopt;
    return std::make_pair(side.str(), layer);
  }
  return std::nullopt;
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

namespace {
class GraphWriter {
public:
  explicit GraphWriter(llvm::raw_ostream &os) : os(os) {}

  void function(func::FuncOp func) {
    os << llvm::formatv("  subgraph cluster_{0} {{\n    label=\"{0}\";\n"
                        "    style=rounded; color=gray60;\n",
                        func.getName());
    // Layers after the first of each side: counted, drawn once.
    std::map<std::string, int64_t> hiddenLayers;
    for (Operation &op : func.getBody().front())
      if (auto layer = layerOf(&op); layer && layer->second > 0)
        hiddenLayers[layer->first] =
            std::max(hiddenLayers[layer->first], layer->second);
    for (BlockArgument arg : func.getArguments()) {
      // The caches of the other layers belong to their node.
      if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
            auto layer = layerOf(user);
            return layer && layer->second > 0;
          }))
        continue;
      std::string id = nodeId();
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    "tfm.name");
      os << llvm::formatv("    {0} [label=\"{1}\\n{2}\", shape=ellipse];\n", id,
                          name ? name.getValue().str()
                               : "arg" + std::to_string(arg.getArgNumber()),
                          typeText(arg.getType()));
      valueNode[arg] = id;
    }
    for (Operation &op : func.getBody().front()) {
      if (isa<WeightOp, arith::ConstantOp>(op))
        continue;
      std::string id;
      auto layer = layerOf(&op);
      if (layer && layer->second > 0) {
        // One node for every op of the other layers of this side.
        std::string &collapsed = collapsedNode[func.getName().str() + "." +
                                               layer->first];
        if (collapsed.empty()) {
          collapsed = nodeId();
          int64_t more = hiddenLayers[layer->first];
          os << llvm::formatv(
              "    {0} [label=\"{1} layers 1-{2}\\n({3} more, the ops of layer "
              "0 over their own weights)\", shape=box3d, style=filled, "
              "fillcolor=gray90];\n",
              collapsed, layer->first, more, more);
        }
        id = collapsed;
      } else {
        id = opNode(op);
      }
      for (Value operand : op.getOperands()) {
        auto from = valueNode.find(operand);
        if (from != valueNode.end() && from->second != id &&
            drawnEdges.insert({from->second, id}).second)
          edges.push_back({from->second, id});
      }
      for (Value result : op.getResults())
        valueNode[result] = id;
    }
    for (auto &[from, to] : edges)
      os << "    " << from << " -> " << to << ";\n";
    edges.clear();
    drawnEdges.clear();
    os << "  }\n";
  }

private:
  std::string nodeId() { return "n" + std::to_string(nextId++); }

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
    if (op.getNumResults())
      label += "\\n" + typeText(op.getResult(0).getType());
    for (Value operand : op.getOperands())
      if (auto w = operand.getDefiningOp<WeightOp>())
        label += "\\n" + escape(shortWeightName(w));
    std::string fill = "white";
    if (auto backend = op.getAttrOfType<StringAttr>(kBackendAttr)) {
      label += "\\n-> " + backend.getValue().str();
      fill = backend.getValue() == "onednn" ? "lightsalmon" : "lightblue";
    }
    std::vector<std::string> replaced = replacedOps(&op);
    if (!replaced.empty()) {
      os << llvm::formatv("    subgraph cluster_fused_{0} {{\n      label=\"fused "
                          "{1}\"; style=filled; fillcolor=lightyellow;\n",
                          id, op.getName().stripDialect());
      os << llvm::formatv("      {0}_replaced [label=\"replaces:\\n{1}\", "
                          "shape=note, fontsize=8, fillcolor=white, "
                          "style=filled];\n",
                          id, llvm::join(replaced, "\\n"));
    }
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
  std::map<std::string, std::string> collapsedNode;
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
  for (StringRef name : {"encode", "decode_step"})
    if (auto func = module.lookupSymbol<func::FuncOp>(name))
      writer.function(func);
  os << "}\n";
}
