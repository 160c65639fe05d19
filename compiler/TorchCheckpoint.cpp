//===- TorchCheckpoint.cpp - Read torch.save's state_dict files -----------===//

#include "compiler/TorchCheckpoint.h"
#include "compiler/Support.h"

#include "compiler/Zip.h"
#include "dialects/Tfm/IR/TfmOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace mlir;
using namespace mlir::tfm;
using llvm::formatv;

//===----------------------------------------------------------------------===//
// The pickle: a state_dict's opcodes and globals, nothing more
//===----------------------------------------------------------------------===//

namespace {
/// A value on the unpickler's stack: only what a state_dict holds.
struct PyValue {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    Tuple,
    Dict,
    Global,
    Storage,
    Tensor,
    Mark
  } kind = Kind::None;
  int64_t integer = 0; // Int, Bool; Storage: elements; Tensor: offset
  double real = 0;
  /// String; Global: "module.name"; Storage and Tensor: the storage key.
  std::string text;
  /// Tuple (and list) items; Dict: key, value, key, value, ...
  std::vector<PyValue> items;
  DType dtype = DType::F32;                  // Storage, Tensor
  llvm::SmallVector<int64_t> sizes, strides; // Tensor
  /// Values in this one, itself included, and how deeply they nest: a
  /// hostile pickle must not blow up memory or the stack.
  uint64_t count = 1, depth = 1;
};

/// A state_dict is a flat dict of shallow records.
constexpr uint64_t kMaxDepth = 32, kMaxValues = uint64_t(1) << 18;

using Kind = PyValue::Kind;

/// The storage classes torch.save names, and their element types.
std::optional<DType> storageDType(llvm::StringRef global) {
  return llvm::StringSwitch<std::optional<DType>>(global)
      .Case("torch.FloatStorage", DType::F32)
      .Case("torch.HalfStorage", DType::F16)
      .Case("torch.BFloat16Storage", DType::BF16)
      .Case("torch.DoubleStorage", DType::F64)
      .Case("torch.LongStorage", DType::I64)
      .Case("torch.IntStorage", DType::I32)
      .Case("torch.ShortStorage", DType::I16)
      .Case("torch.CharStorage", DType::I8)
      .Case("torch.ByteStorage", DType::U8)
      .Case("torch.BoolStorage", DType::Bool)
      .Default(std::nullopt);
}

bool allowedGlobal(llvm::StringRef global) {
  return global == "collections.OrderedDict" ||
         global == "torch._utils._rebuild_tensor_v2" ||
         global == "torch._utils._rebuild_parameter" ||
         storageDType(global).has_value();
}

class Unpickler {
public:
  Unpickler(llvm::StringRef where, llvm::StringRef code)
      : where(where), code(code) {}

  /// The pickled object.
  llvm::Expected<PyValue> run();

private:
  llvm::Error error(const llvm::Twine &message) const {
    return fail(where, formatv("byte {0}: ", opcodeAt).str() + message);
  }
  /// The next n bytes of the pickle, or an error at its end.
  llvm::Expected<llvm::StringRef> take(uint64_t n);
  llvm::Expected<uint64_t> takeUnsigned(unsigned n);
  llvm::Expected<PyValue> pop();
  /// The items pushed since the last mark, which is popped.
  llvm::Expected<std::vector<PyValue>> popToMark();
  llvm::Error reduce(PyValue callable, PyValue args);
  /// Pushes the global "module.name", if a state_dict may name it.
  llvm::Error pushGlobal(std::string global);
  llvm::Error setItems(std::vector<PyValue> pairs);

  llvm::StringRef where, code;
  uint64_t pos = 0, opcodeAt = 0;
  std::vector<PyValue> stack;
  std::vector<PyValue> memo;
};
} // namespace

llvm::Expected<llvm::StringRef> Unpickler::take(uint64_t n) {
  if (n > code.size() - pos)
    return error("the pickle ends in the middle of an opcode; truncated?");
  llvm::StringRef bytes = code.substr(pos, n);
  pos += n;
  return bytes;
}

llvm::Expected<uint64_t> Unpickler::takeUnsigned(unsigned n) {
  llvm::Expected<llvm::StringRef> bytes = take(n);
  if (!bytes)
    return bytes.takeError();
  uint64_t value = 0;
  for (unsigned i = 0; i < n; ++i)
    value |= uint64_t(uint8_t((*bytes)[i])) << (8 * i);
  return value;
}

llvm::Expected<PyValue> Unpickler::pop() {
  if (stack.empty() || stack.back().kind == Kind::Mark)
    return error("the pickle pops an empty stack");
  PyValue v = std::move(stack.back());
  stack.pop_back();
  return v;
}

llvm::Expected<std::vector<PyValue>> Unpickler::popToMark() {
  auto mark = std::find_if(stack.rbegin(), stack.rend(), [](const PyValue &v) {
    return v.kind == Kind::Mark;
  });
  if (mark == stack.rend())
    return error("the pickle has no mark to pop to");
  size_t at = stack.size() - (mark - stack.rbegin()) - 1;
  std::vector<PyValue> items(std::make_move_iterator(stack.begin() + at + 1),
                             std::make_move_iterator(stack.end()));
  stack.resize(at);
  return items;
}

llvm::Error Unpickler::setItems(std::vector<PyValue> pairs) {
  if (pairs.size() % 2)
    return error("SETITEMS with an odd number of items");
  if (stack.empty() || stack.back().kind != Kind::Dict)
    return error("SETITEMS on something that is not a dict");
  PyValue &dict = stack.back();
  for (PyValue &v : pairs) {
    dict.count += v.count;
    dict.depth = std::max(dict.depth, v.depth + 1);
    dict.items.push_back(std::move(v));
  }
  return llvm::Error::success();
}

llvm::Error Unpickler::pushGlobal(std::string global) {
  if (!allowedGlobal(global))
    return error("the pickle refers to '" + global +
                 "', which a saved state_dict does not; tfmc never runs "
                 "pickled code");
  PyValue v;
  v.kind = Kind::Global;
  v.text = std::move(global);
  stack.push_back(std::move(v));
  return llvm::Error::success();
}

/// The three calls a state_dict makes: an empty OrderedDict, a tensor
/// rebuilt from (storage, offset, sizes, strides, requires_grad, hooks), a
/// parameter wrapping a tensor.
llvm::Error Unpickler::reduce(PyValue callable, PyValue args) {
  if (callable.kind != Kind::Global || args.kind != Kind::Tuple)
    return error("REDUCE of something other than a global and a tuple");
  std::vector<PyValue> &a = args.items;
  if (callable.text == "collections.OrderedDict") {
    if (!a.empty())
      return error("OrderedDict built from arguments");
    PyValue dict;
    dict.kind = Kind::Dict;
    stack.push_back(std::move(dict));
    return llvm::Error::success();
  }
  if (callable.text == "torch._utils._rebuild_parameter") {
    if (a.empty() || a[0].kind != Kind::Tensor)
      return error("_rebuild_parameter without a tensor");
    stack.push_back(std::move(a[0]));
    return llvm::Error::success();
  }
  if (callable.text == "torch._utils._rebuild_tensor_v2") {
    if (a.size() < 4 || a[0].kind != Kind::Storage || a[1].kind != Kind::Int ||
        a[2].kind != Kind::Tuple || a[3].kind != Kind::Tuple ||
        a[2].items.size() != a[3].items.size())
      return error("_rebuild_tensor_v2 with arguments other than (storage, "
                   "offset, sizes, strides, ...)");
    PyValue tensor;
    tensor.kind = Kind::Tensor;
    tensor.text = a[0].text;
    tensor.dtype = a[0].dtype;
    tensor.integer = a[1].integer;
    for (size_t i = 0; i < a[2].items.size(); ++i) {
      const PyValue &size = a[2].items[i], &stride = a[3].items[i];
      if (size.kind != Kind::Int || stride.kind != Kind::Int ||
          size.integer < 0)
        return error("tensor sizes and strides must be integers");
      tensor.sizes.push_back(size.integer);
      tensor.strides.push_back(stride.integer);
    }
    stack.push_back(std::move(tensor));
    return llvm::Error::success();
  }
  return error("REDUCE calls '" + callable.text + "'");
}

llvm::Expected<PyValue> Unpickler::run() {
  auto push = [&](PyValue v) { stack.push_back(std::move(v)); };
  uint64_t values = 0; // made or copied so far
  auto integer = [](int64_t i) {
    PyValue v;
    v.kind = Kind::Int;
    v.integer = i;
    return v;
  };
  auto string = [](llvm::StringRef s) {
    PyValue v;
    v.kind = Kind::String;
    v.text = s.str();
    return v;
  };
  auto tuple = [](std::vector<PyValue> items) {
    PyValue v;
    v.kind = Kind::Tuple;
    v.items = std::move(items);
    for (const PyValue &item : v.items) {
      v.count += item.count;
      v.depth = std::max(v.depth, item.depth + 1);
    }
    return v;
  };
  // Memo and stack hold copies, not references: a state_dict never
  // mutates an object after it was memoized, except the dict being filled,
  // which stays on the stack.
  while (true) {
    opcodeAt = pos;
    llvm::Expected<llvm::StringRef> op = take(1);
    if (!op)
      return op.takeError();
    uint8_t opcode = uint8_t((*op)[0]);
    if (!stack.empty()) {
      values += stack.back().count;
      if (stack.back().depth > kMaxDepth || values > kMaxValues)
        return error("the pickle nests or repeats values far beyond a "
                     "state_dict");
    }
    switch (opcode) {
    case 0x80:   // PROTO
    case 0x95: { // FRAME: a length hint
      if (auto n = takeUnsigned(opcode == 0x80 ? 1 : 8); !n)
        return n.takeError();
      break;
    }
    case '.': { // STOP
      llvm::Expected<PyValue> result = pop();
      if (!result)
        return result.takeError();
      return result;
    }
    case '(': { // MARK
      PyValue mark;
      mark.kind = Kind::Mark;
      push(std::move(mark));
      break;
    }
    case ')': // EMPTY_TUPLE
      push(tuple({}));
      break;
    case ']': { // EMPTY_LIST: kept as a tuple, appended to below
      push(tuple({}));
      break;
    }
    case '}': { // EMPTY_DICT
      PyValue dict;
      dict.kind = Kind::Dict;
      push(std::move(dict));
      break;
    }
    case 'N': // NONE
      push(PyValue());
      break;
    case 0x88:   // NEWTRUE
    case 0x89: { // NEWFALSE
      PyValue v = integer(opcode == 0x88);
      v.kind = Kind::Bool;
      push(std::move(v));
      break;
    }
    case 'K':   // BININT1
    case 'M': { // BININT2
      llvm::Expected<uint64_t> n = takeUnsigned(opcode == 'K' ? 1 : 2);
      if (!n)
        return n.takeError();
      push(integer(int64_t(*n)));
      break;
    }
    case 'J': { // BININT: signed 32-bit
      llvm::Expected<uint64_t> n = takeUnsigned(4);
      if (!n)
        return n.takeError();
      push(integer(int32_t(uint32_t(*n))));
      break;
    }
    case 0x8a: { // LONG1: n bytes, two's complement
      llvm::Expected<uint64_t> n = takeUnsigned(1);
      if (!n)
        return n.takeError();
      if (*n > 8)
        return error("an integer wider than 64 bits");
      llvm::Expected<uint64_t> bits = takeUnsigned(unsigned(*n));
      if (!bits)
        return bits.takeError();
      int64_t value = int64_t(*bits);
      if (*n > 0 && *n < 8 && (*bits >> (8 * *n - 1)) & 1)
        value -= int64_t(1) << (8 * *n); // sign-extend
      push(integer(value));
      break;
    }
    case 'G': { // BINFLOAT: big-endian double
      llvm::Expected<llvm::StringRef> bytes = take(8);
      if (!bytes)
        return bytes.takeError();
      uint64_t bits = llvm::support::endian::read64be(bytes->data());
      PyValue v;
      v.kind = Kind::Float;
      v.real = llvm::bit_cast<double>(bits);
      push(std::move(v));
      break;
    }
    case 'X':    // BINUNICODE
    case 0x8c:   // SHORT_BINUNICODE
    case 0x8d: { // BINUNICODE8
      llvm::Expected<uint64_t> n = takeUnsigned(opcode == 'X'    ? 4
                                                : opcode == 0x8c ? 1
                                                                 : 8);
      if (!n)
        return n.takeError();
      llvm::Expected<llvm::StringRef> text = take(*n);
      if (!text)
        return text.takeError();
      push(string(*text));
      break;
    }
    case 't': { // TUPLE
      llvm::Expected<std::vector<PyValue>> items = popToMark();
      if (!items)
        return items.takeError();
      push(tuple(std::move(*items)));
      break;
    }
    case 0x85:   // TUPLE1
    case 0x86:   // TUPLE2
    case 0x87: { // TUPLE3
      std::vector<PyValue> items(opcode - 0x84);
      for (size_t i = items.size(); i-- > 0;) {
        llvm::Expected<PyValue> v = pop();
        if (!v)
          return v.takeError();
        items[i] = std::move(*v);
      }
      push(tuple(std::move(items)));
      break;
    }
    case 'a':   // APPEND
    case 'e': { // APPENDS
      std::vector<PyValue> items;
      if (opcode == 'a') {
        llvm::Expected<PyValue> v = pop();
        if (!v)
          return v.takeError();
        items.push_back(std::move(*v));
      } else {
        llvm::Expected<std::vector<PyValue>> marked = popToMark();
        if (!marked)
          return marked.takeError();
        items = std::move(*marked);
      }
      if (stack.empty() || stack.back().kind != Kind::Tuple)
        return error("APPEND to something that is not a list");
      PyValue &list = stack.back();
      for (PyValue &v : items) {
        list.count += v.count;
        list.depth = std::max(list.depth, v.depth + 1);
        list.items.push_back(std::move(v));
      }
      break;
    }
    case 's': { // SETITEM
      llvm::Expected<PyValue> value = pop();
      if (!value)
        return value.takeError();
      llvm::Expected<PyValue> key = pop();
      if (!key)
        return key.takeError();
      std::vector<PyValue> pair;
      pair.push_back(std::move(*key));
      pair.push_back(std::move(*value));
      if (llvm::Error e = setItems(std::move(pair)))
        return std::move(e);
      break;
    }
    case 'u': { // SETITEMS
      llvm::Expected<std::vector<PyValue>> pairs = popToMark();
      if (!pairs)
        return pairs.takeError();
      if (llvm::Error e = setItems(std::move(*pairs)))
        return std::move(e);
      break;
    }
    case 'q':    // BINPUT
    case 'r':    // LONG_BINPUT
    case 0x94: { // MEMOIZE
      uint64_t slot = memo.size();
      if (opcode != 0x94) {
        llvm::Expected<uint64_t> n = takeUnsigned(opcode == 'q' ? 1 : 4);
        if (!n)
          return n.takeError();
        slot = *n;
      }
      if (stack.empty())
        return error("memoizing an empty stack");
      // The pickler numbers its memo 0, 1, 2, ...
      if (slot > memo.size())
        return error("memo slot " + llvm::Twine(slot) + " is out of order");
      if (slot >= memo.size())
        memo.resize(slot + 1);
      memo[slot] = stack.back();
      break;
    }
    case 'h':   // BINGET
    case 'j': { // LONG_BINGET
      llvm::Expected<uint64_t> slot = takeUnsigned(opcode == 'h' ? 1 : 4);
      if (!slot)
        return slot.takeError();
      if (*slot >= memo.size())
        return error("memo slot " + llvm::Twine(*slot) + " is empty");
      push(memo[*slot]);
      break;
    }
    case 'c': { // GLOBAL: "module\nname\n"
      size_t moduleEnd = code.find('\n', pos);
      size_t nameEnd = moduleEnd == llvm::StringRef::npos
                           ? moduleEnd
                           : code.find('\n', moduleEnd + 1);
      if (nameEnd == llvm::StringRef::npos)
        return error("a GLOBAL without its two lines");
      std::string global = (code.slice(pos, moduleEnd) + "." +
                            code.slice(moduleEnd + 1, nameEnd))
                               .str();
      pos = nameEnd + 1;
      if (llvm::Error e = pushGlobal(std::move(global)))
        return std::move(e);
      break;
    }
    case 0x93: { // STACK_GLOBAL: module and name from the stack
      llvm::Expected<PyValue> name = pop();
      if (!name)
        return name.takeError();
      llvm::Expected<PyValue> module = pop();
      if (!module)
        return module.takeError();
      if (name->kind != Kind::String || module->kind != Kind::String)
        return error("STACK_GLOBAL of non-strings");
      std::string global = module->text + "." + name->text;
      if (llvm::Error e = pushGlobal(std::move(global)))
        return std::move(e);
      break;
    }
    case 'R': { // REDUCE
      llvm::Expected<PyValue> args = pop();
      if (!args)
        return args.takeError();
      llvm::Expected<PyValue> callable = pop();
      if (!callable)
        return callable.takeError();
      if (llvm::Error e = reduce(std::move(*callable), std::move(*args)))
        return std::move(e);
      break;
    }
    case 'b': { // BUILD: a state_dict's _metadata, not needed
      llvm::Expected<PyValue> state = pop();
      if (!state)
        return state.takeError();
      if (stack.empty() || stack.back().kind != Kind::Dict)
        return error("BUILD of something that is not a dict");
      break;
    }
    case 'Q': { // BINPERSID: ('storage', type, key, location, elements)
      llvm::Expected<PyValue> pid = pop();
      if (!pid)
        return pid.takeError();
      const std::vector<PyValue> &f = pid->items;
      if (pid->kind != Kind::Tuple || f.size() != 5 ||
          f[0].kind != Kind::String || f[0].text != "storage" ||
          f[1].kind != Kind::Global || f[2].kind != Kind::String ||
          f[4].kind != Kind::Int)
        return error("a persistent id other than a storage record");
      std::optional<DType> dtype = storageDType(f[1].text);
      if (!dtype)
        return error("'" + f[1].text + "' is not a storage type");
      PyValue storage;
      storage.kind = Kind::Storage;
      storage.dtype = *dtype;
      storage.text = f[2].text;
      storage.integer = f[4].integer;
      push(std::move(storage));
      break;
    }
    default:
      return error(formatv("opcode 0x{0:x2}, which a saved state_dict does "
                           "not use",
                           opcode)
                       .str());
    }
  }
}

//===----------------------------------------------------------------------===//
// The state_dict's tensors
//===----------------------------------------------------------------------===//

llvm::Expected<TorchCheckpointFile>
TorchCheckpointFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot open: " + buffer.getError().message());
  TorchCheckpointFile file;
  file.filePath = path.str();
  file.buffer = std::move(*buffer);
  llvm::StringRef data = file.buffer->getBuffer();
  llvm::Expected<llvm::StringMap<ZipEntry>> entries =
      readZipDirectory(path, data, "torch.save");
  if (!entries)
    return entries.takeError();

  // Every entry is PREFIX/...; the prefix is the directory of data.pkl.
  std::string prefix;
  for (const auto &entry : *entries) {
    llvm::StringRef name = entry.getKey();
    if (name.ends_with("/data.pkl") && name.count('/') == 1)
      prefix = name.drop_back(strlen("data.pkl")).str();
  }
  auto pickle = entries->find(prefix + "data.pkl");
  if (prefix.empty() || pickle == entries->end())
    return fail(path, "not a torch.save archive: no PREFIX/data.pkl entry");
  auto byteorder = entries->find(prefix + "byteorder");
  if (byteorder != entries->end() &&
      data.substr(byteorder->second.offset, byteorder->second.size) != "little")
    return fail(path, "tensors saved big-endian; tfmc reads little-endian");

  std::string where = (path + ": " + prefix + "data.pkl").str();
  Unpickler unpickler(where,
                      data.substr(pickle->second.offset, pickle->second.size));
  llvm::Expected<PyValue> dict = unpickler.run();
  if (!dict)
    return dict.takeError();
  if (dict->kind != Kind::Dict)
    return fail(where, "the pickle holds no dict of tensors (a state_dict)");

  for (size_t i = 0; i < dict->items.size(); i += 2) {
    const PyValue &key = dict->items[i], &value = dict->items[i + 1];
    if (key.kind != Kind::String)
      return fail(where, "a state_dict key that is not a string");
    auto bad = [&](const llvm::Twine &why) {
      return fail(path, "tensor '" + key.text + "': " + why);
    };
    if (value.kind != Kind::Tensor)
      return bad("not a tensor");
    auto storage = entries->find(prefix + "data/" + value.text);
    if (storage == entries->end())
      return bad("its storage " + prefix + "data/" + value.text +
                 " is missing");
    // Row-major and dense: stride[i] = prod(sizes[i+1:]) (any stride for a
    // dimension of size 1).
    uint64_t elements = 1;
    bool overflow = false;
    for (size_t d = value.sizes.size(); d-- > 0;) {
      if (value.sizes[d] != 1 && value.strides[d] != int64_t(elements))
        return bad("not contiguous (strides " + formatShape(value.strides) +
                   " for sizes " + formatShape(value.sizes) + ")");
      elements = llvm::SaturatingMultiply<uint64_t>(elements, value.sizes[d],
                                                    &overflow);
    }
    uint64_t size = dtypeSize(value.dtype);
    uint64_t storageElements = storage->second.size / size;
    if (overflow || value.integer < 0 ||
        uint64_t(value.integer) > storageElements ||
        elements > storageElements - uint64_t(value.integer))
      return bad(formatv("elements [{0}, {0} + {1}) lie outside its storage "
                         "of {2}",
                         value.integer, elements, storageElements)
                     .str());
    TensorInfo info;
    info.name = key.text;
    info.dtype = value.dtype;
    info.shape = value.sizes;
    info.begin = storage->second.offset + uint64_t(value.integer) * size;
    info.end = info.begin + elements * size;
    if (!file.index.try_emplace(info.name, file.tensorList.size()).second)
      return bad("appears twice");
    file.tensorList.push_back(std::move(info));
  }
  return std::move(file);
}

const TensorInfo *TorchCheckpointFile::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensorList[it->second];
}

llvm::ArrayRef<char>
TorchCheckpointFile::bytes(const TensorInfo &tensor) const {
  return llvm::ArrayRef<char>(buffer->getBufferStart() + tensor.begin,
                              tensor.end - tensor.begin);
}

bool TorchCheckpointFile::isMapped() const {
  return buffer->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
}
