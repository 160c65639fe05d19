//===- ServeRequestFuzzer.cpp - Fuzz tfm-serve's requests -------*- C++ -*-===//
//
// Input: byte 0 chooses how the rest, a request body, is sent; the rest is
// the body. Byte 0:
//
//   bits 0-1    Content-Type: 0 application/json, 1 a form
//               (application/x-www-form-urlencoded), 2 " Application/JSON ;
//               charset=utf-8" (parameters, case, blanks), 3 text/plain
//   bit 2       small limits (4 items of 16 characters, 2 alternatives,
//               nesting 4), so that every limit is reached by small inputs
//
// The body goes through parseTranslateRequest (POST /translate), and also
// parseDetectRequest and parseNativeRequest (/detect, /v1/translate), which
// share its readers. Each answers an error a client may be sent (400, or
// 415 exactly for a media type it does not take) or a request holding what
// the server relies on: q's items valid UTF-8 within the limits, languages
// given, a count of alternatives within the limit that was written as an
// integer. An accepted request written back as JSON parses to itself.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tools/common/Text.h"
#include "tools/serve/Request.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

using namespace tfm_serve;
using json = nlohmann::json;

namespace {

const char *const kTypes[] = {
    "application/json", "application/x-www-form-urlencoded",
    " Application/JSON ; charset=utf-8", "text/plain"};

RequestLimits limitsOf(uint8_t mode) {
  if (!(mode & 4))
    return {};
  RequestLimits small;
  small.maxItems = 4;
  small.maxItemChars = 16;
  small.maxAlternatives = 2;
  small.maxDepth = 4;
  return small;
}

bool validUtf8(const std::string &text) {
  std::string copy = text;
  return !tfm_tools::replaceInvalidUtf8(copy);
}

/// An error a handler can send as it is: a client's fault (400), or 415
/// exactly when the media type is not one the parser takes.
void checkError(const HttpError &error, bool typeTaken) {
  if (tfm_fuzz::verbose())
    std::fprintf(stderr, "%d %s\n", error.status, error.message.c_str());
  TFM_FUZZ_CHECK(error.status == (typeTaken ? 400 : 415));
  TFM_FUZZ_CHECK(!error.message.empty());
}

void checkTexts(const std::vector<std::string> &texts,
                const RequestLimits &limits) {
  TFM_FUZZ_CHECK(!texts.empty() && texts.size() <= limits.maxItems);
  for (const std::string &text : texts) {
    TFM_FUZZ_CHECK(validUtf8(text));
    TFM_FUZZ_CHECK(countCodePoints(text) <= limits.maxItemChars);
  }
}

/// A form field as the client wrote it (the first, as the
/// parser reads repeated fields), or null.
std::optional<std::string> formField(const std::string &body,
                                     const std::string &name) {
  httplib::Params params;
  httplib::detail::parse_query_text(body, params);
  auto it = params.find(name);
  return it == params.end() ? std::nullopt : std::optional(it->second);
}

/// Decimal digits with an optional minus sign.
bool integerText(const std::string &text) {
  size_t start = !text.empty() && text[0] == '-' ? 1 : 0;
  return text.size() > start &&
         text.find_first_not_of("0123456789", start) == std::string::npos;
}

void checkTranslate(const TranslateRequest &request, const std::string &body,
                    bool form, const RequestLimits &limits) {
  checkTexts(request.q, limits);
  TFM_FUZZ_CHECK(request.batch ||
                 (request.q.size() == 1 && !request.q[0].empty()));
  TFM_FUZZ_CHECK(!request.source.empty() && !request.target.empty());
  TFM_FUZZ_CHECK(request.alternatives >= 0 &&
                 request.alternatives <= limits.maxAlternatives);
  if (form) {
    std::optional<std::string> alternatives = formField(body, "alternatives");
    TFM_FUZZ_CHECK(!alternatives || alternatives->empty() ||
                   integerText(*alternatives));
  }
  // Written back as JSON, the request parses to itself. (A form's
  // languages and key may be invalid UTF-8, which JSON cannot carry: the
  // server only compares them, so the parser lets them through.)
  if (!validUtf8(request.source) || !validUtf8(request.target) ||
      !validUtf8(request.apiKey))
    return;
  json again = {{"q", request.batch ? json(request.q) : json(request.q[0])},
                {"source", request.source},
                {"target", request.target},
                {"alternatives", request.alternatives},
                {"api_key", request.apiKey}};
  Parsed<TranslateRequest> reparsed =
      parseTranslateRequest(again.dump(), "application/json", limits);
  const auto *same = std::get_if<TranslateRequest>(&reparsed);
  TFM_FUZZ_CHECK(same && same->q == request.q && same->batch == request.batch &&
                 same->source == request.source &&
                 same->target == request.target &&
                 same->alternatives == request.alternatives &&
                 same->apiKey == request.apiKey);
}

void checkNative(const NativeRequest &request, const RequestLimits &limits) {
  checkTexts(request.source, limits);
  TFM_FUZZ_CHECK(!request.targetLang.empty());
  int maxBeam = limits.maxAlternatives + 1;
  TFM_FUZZ_CHECK(!request.beamSize ||
                 (*request.beamSize >= 1 && *request.beamSize <= maxBeam));
  TFM_FUZZ_CHECK(!request.nBest ||
                 (*request.nBest >= 1 && *request.nBest <= maxBeam));
  TFM_FUZZ_CHECK(request.targetPrefix.empty() ||
                 request.targetPrefix.size() == request.source.size());
  for (const auto &prefix : request.targetPrefix)
    for (const PrefixToken &token : prefix)
      TFM_FUZZ_CHECK(token.id < 0 || token.piece.empty());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  uint8_t mode = data[0];
  std::string body(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::string type = kTypes[mode & 3];
  bool jsonType = (mode & 3) == 0 || (mode & 3) == 2;
  bool form = (mode & 3) == 1;
  RequestLimits limits = limitsOf(mode);

  Parsed<TranslateRequest> translate =
      parseTranslateRequest(body, type, limits);
  if (const HttpError *error = errorOf(translate))
    checkError(*error, jsonType || form);
  else
    checkTranslate(std::get<TranslateRequest>(translate), body, form, limits);

  Parsed<std::string> detect = parseDetectRequest(body, type, limits);
  if (const HttpError *error = errorOf(detect))
    checkError(*error, jsonType || form);

  Parsed<NativeRequest> native = parseNativeRequest(body, type, limits);
  if (const HttpError *error = errorOf(native))
    checkError(*error, jsonType);
  else
    checkNative(std::get<NativeRequest>(native), limits);
  return 0;
}
