//===- SentencePieceModel.cpp - What tfmc reads of a .spm file --*- C++ -*-===//

#include "compiler/SentencePieceModel.h"
#include "compiler/Support.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;
using mlir::tfm::fail;
using mlir::tfm::SentencePieceSummary;

namespace {

/// One field of a protocol buffer message.
struct ProtoField {
  uint64_t number = 0;
  uint64_t wireType = 0; // 0: a varint, 2: length-delimited, ...
  StringRef payload;     // a length-delimited field's bytes
  uint64_t value = 0;    // a varint's value
};

class ProtoReader {
public:
  explicit ProtoReader(StringRef bytes) : bytes(bytes) {}
  bool done() const { return pos >= bytes.size(); }
  bool varint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
      uint8_t byte = uint8_t(bytes[pos++]);
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }
  /// The next field; false when the bytes are not a message.
  bool field(ProtoField &out) {
    uint64_t key, length;
    if (!varint(key))
      return false;
    out = ProtoField();
    out.number = key >> 3;
    out.wireType = key & 7;
    switch (out.wireType) {
    case 0:
      return varint(out.value);
    case 1:
      return skip(8);
    case 5:
      return skip(4);
    case 2:
      if (!varint(length) || length > bytes.size() - pos)
        return false;
      out.payload = bytes.substr(pos, length);
      pos += length;
      return true;
    default:
      return false;
    }
  }

private:
  bool skip(size_t n) {
    if (n > bytes.size() - pos)
      return false;
    pos += n;
    return true;
  }
  StringRef bytes;
  size_t pos = 0;
};

/// The text of a serialized SentencePiece (its field 1).
std::string pieceText(StringRef piece) {
  ProtoReader fields(piece);
  ProtoField f;
  std::string text;
  while (!fields.done() && fields.field(f))
    if (f.number == 1)
      text = f.payload.str();
  return text;
}

/// NormalizerSpec's add_dummy_prefix (its field 3).
bool addsDummyPrefix(StringRef normalizerSpec) {
  ProtoReader fields(normalizerSpec);
  ProtoField f;
  bool dummyPrefix = true;
  while (!fields.done() && fields.field(f))
    if (f.number == 3 && f.wireType == 0)
      dummyPrefix = f.value != 0;
  return dummyPrefix;
}

} // namespace

Expected<SentencePieceSummary> mlir::tfm::readSentencePiece(StringRef path) {
  auto bytes = MemoryBuffer::getFile(path, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
  if (!bytes)
    return fail(path + ": " + bytes.getError().message());
  SentencePieceSummary summary;
  ProtoReader model((*bytes)->getBuffer());
  ProtoField f;
  while (!model.done()) {
    if (!model.field(f))
      return fail(path + ": not a SentencePiece model (a serialized "
                         "ModelProto)");
    if (f.number == 1)
      summary.pieces.push_back(pieceText(f.payload));
    else if (f.number == 3)
      summary.dummyPrefix = addsDummyPrefix(f.payload);
  }
  if (summary.pieces.empty())
    return fail(path + ": not a SentencePiece model: it has no pieces");
  return summary;
}
