//===- ServeFileFuzzer.cpp - Fuzz tfm-serve's /translate_file ---*- C++ -*-===//
//
// The request path of POST /translate_file after cpp-httplib (a library,
// not instrumented) has cut the multipart body into parts: the checks of
// the parts (parseFileRequest), a text file's lines and their endings, the
// download's name and its Content-Disposition header, and the download
// token's check.
//
// Input: byte 0 chooses the limits (bit 0: a file of at most 64 bytes);
// the rest is parts separated by "\xff\xff", each "name\xfefilename\xfe
// content" (missing fields empty).
//
// Checked: an error is a 400, or a 413 exactly for a file past the
// limit, with a message; an accepted request has one plain file name
// (no path, no control character, no leading dot, valid UTF-8) of a
// supported extension, content within the limit and valid UTF-8, and
// both languages. Its lines joined with their endings give the file back;
// the header holds printable ASCII only, its quoted name no quote, and
// its percent-encoded name decodes to the download's name; a token is
// accepted exactly when it is 1 to 64 letters and digits.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tools/common/Text.h"
#include "tools/serve/Files.h"
#include "tools/serve/Request.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

using namespace tfm_serve;

namespace {

std::vector<std::string> splitOn(const std::string &text,
                                 const std::string &separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos)
      return out;
    start = end + separator.size();
  }
}

std::vector<UploadPart> partsOf(const std::string &body) {
  std::vector<UploadPart> parts;
  for (const std::string &text : splitOn(body, "\xff\xff")) {
    std::vector<std::string> fields = splitOn(text, "\xfe");
    fields.resize(3);
    parts.push_back({fields[0], fields[1], fields[2]});
  }
  return parts;
}

bool validUtf8(const std::string &text) {
  std::string copy = text;
  return !tfm_tools::replaceInvalidUtf8(copy);
}

size_t fileBytes(const std::vector<UploadPart> &parts) {
  for (const UploadPart &part : parts)
    if (part.name == "file")
      return part.content.size();
  return 0;
}

void checkFileName(const std::string &name) {
  TFM_FUZZ_CHECK(!name.empty() && name.size() <= 255 && name[0] != '.');
  TFM_FUZZ_CHECK(name.find_first_of("/\\") == std::string::npos);
  TFM_FUZZ_CHECK(std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
  }));
  TFM_FUZZ_CHECK(validUtf8(name));
}

int hexValue(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'A' + 10;
}

std::string percentDecoded(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += char(hexValue(text[i + 1]) * 16 + hexValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

void checkDisposition(const std::string &name) {
  std::string header = contentDisposition(name);
  TFM_FUZZ_CHECK(std::all_of(header.begin(), header.end(),
                             [](char c) { return c >= 0x20 && c < 0x7F; }));
  const std::string open = "attachment; filename=\"";
  TFM_FUZZ_CHECK(header.compare(0, open.size(), open) == 0);
  size_t close = header.find('"', open.size());
  TFM_FUZZ_CHECK(close == open.size() + name.size());
  const std::string encoded = "; filename*=UTF-8''";
  TFM_FUZZ_CHECK(header.compare(close + 1, encoded.size(), encoded) == 0);
  TFM_FUZZ_CHECK(percentDecoded(header.substr(close + 1 + encoded.size())) ==
                 name);
}

void checkAccepted(const FileRequest &request, const FileLimits &limits) {
  checkFileName(request.filename);
  const std::vector<std::string> &known = supportedFileExtensions();
  TFM_FUZZ_CHECK(std::find(known.begin(), known.end(), request.extension) !=
                 known.end());
  TFM_FUZZ_CHECK(request.content.size() <= limits.maxBytes);
  TFM_FUZZ_CHECK(validUtf8(request.content));
  TFM_FUZZ_CHECK(!request.source.empty() && !request.target.empty());
  TextFileLines split = splitTextFile(request.content);
  for (const std::string &line : split.lines)
    TFM_FUZZ_CHECK(line.find('\n') == std::string::npos);
  TFM_FUZZ_CHECK(joinTextFile(split, split.lines) == request.content);
  std::string name = downloadName(request.filename, request.target);
  TFM_FUZZ_CHECK(name.size() > request.filename.size());
  checkDisposition(name);
}

void checkToken(const std::string &text) {
  bool expected = !text.empty() && text.size() <= 64 &&
                  std::all_of(text.begin(), text.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                           (c >= 'A' && c <= 'Z');
                  });
  TFM_FUZZ_CHECK(isDownloadToken(text) == expected);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  FileLimits limits;
  if (data[0] & 1)
    limits.maxBytes = 64;
  std::string body(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::vector<UploadPart> parts = partsOf(body);
  Parsed<FileRequest> request = parseFileRequest(parts, limits);
  if (const HttpError *error = errorOf(request)) {
    if (tfm_fuzz::verbose())
      std::fprintf(stderr, "%d %s\n", error->status, error->message.c_str());
    TFM_FUZZ_CHECK(!error->message.empty());
    TFM_FUZZ_CHECK(
        error->status == 400 ||
        (error->status == 413 && fileBytes(parts) > limits.maxBytes));
  } else {
    checkAccepted(std::get<FileRequest>(request), limits);
  }
  for (const UploadPart &part : parts)
    checkToken(part.content);
  // Any name's header, not only accepted ones: the name is the client's.
  checkDisposition(parts.front().filename);
  return 0;
}
