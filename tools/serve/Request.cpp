//===- Request.cpp - Requests parsed into plain structs ---------*- C++ -*-===//

#include "tools/serve/Request.h"

#include "tools/common/Text.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <set>

using namespace tfm_serve;
using json = nlohmann::json;

namespace {

/// Thrown inside the parsers, returned by their entry points.
struct Invalid {
  HttpError error;
};

[[noreturn]] void refuse(int status, std::string message) {
  throw Invalid{{status, std::move(message)}};
}

[[noreturn]] void badRequest(std::string message) {
  refuse(400, "Invalid request: " + message);
}

/// "application/json" of "Application/JSON; charset=utf-8".
std::string mediaType(const std::string &contentType) {
  std::string type = contentType.substr(0, contentType.find(';'));
  type.erase(0, type.find_first_not_of(" \t"));
  type.erase(type.find_last_not_of(" \t") + 1);
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return type;
}

/// nlohmann's message without its "[json.exception...] " tag, kept short.
std::string jsonMessage(const std::exception &e) {
  std::string message = e.what();
  size_t tag = message.find("] ");
  if (tag != std::string::npos)
    message.erase(0, tag + 2);
  if (message.size() > 200)
    message = message.substr(0, 200) + "...";
  return message;
}

/// Refuses nesting past `maxDepth` and a key given twice in one object:
/// nlohmann keeps the last of them, another parser the first, so a request
/// such as {"api_key": "a", "api_key": "b"} would mean what the reader
/// picked. Keys are kept per open object, as the parse enters and leaves it.
class JsonChecks {
public:
  explicit JsonChecks(int maxDepth) : maxDepth(maxDepth) {}

  bool operator()(int depth, json::parse_event_t event, json &parsed) {
    if (depth > maxDepth)
      refuse(400, fmt::format("Invalid JSON: nested deeper than {} levels",
                              maxDepth));
    if (event == json::parse_event_t::object_start)
      openObjects.emplace_back();
    else if (event == json::parse_event_t::object_end)
      openObjects.pop_back();
    else if (event == json::parse_event_t::key &&
             !openObjects.back().insert(parsed.get<std::string>()).second)
      badRequest(fmt::format("the key '{}' appears twice in one object",
                             parsed.get<std::string>().substr(0, 50)));
    return true;
  }

private:
  int maxDepth;
  std::vector<std::set<std::string>> openObjects;
};

json parseJsonObject(const std::string &body, int maxDepth) {
  json value;
  try {
    // parse copies its callback: the copy keeps the keys.
    value = json::parse(body, JsonChecks(maxDepth));
  } catch (const json::exception &e) {
    refuse(400, "Invalid JSON: " + jsonMessage(e));
  }
  if (!value.is_object())
    refuse(400, fmt::format("Invalid JSON format: expected an object, found "
                            "{}",
                            value.type_name()));
  return value;
}

/// Form fields as a JSON object of strings (the first of repeated ones, as
/// LibreTranslate reads them).
json parseForm(const std::string &body) {
  httplib::Params params;
  httplib::detail::parse_query_text(body, params);
  json object = json::object();
  for (const auto &[key, value] : params)
    if (!object.contains(key))
      object[key] = value;
  return object;
}

const char *kMediaTypes = "application/json or "
                          "application/x-www-form-urlencoded";

/// A request's fields, and whether they came from a form (all strings).
struct Body {
  json object;
  bool form = false;
};

Body bodyObject(const std::string &body, const std::string &contentType,
                const RequestLimits &limits, bool formAllowed) {
  std::string type = mediaType(contentType);
  if (type == "application/json")
    return {parseJsonObject(body, limits.maxDepth), false};
  if (formAllowed && type == "application/x-www-form-urlencoded")
    return {parseForm(body), true};
  refuse(415, fmt::format("Content-Type must be {}, found '{}'",
                          formAllowed ? kMediaTypes : "application/json",
                          type.substr(0, 100)));
}

const json *field(const json &object, const char *name) {
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> stringField(const json &object, const char *name) {
  const json *value = field(object, name);
  if (!value)
    return std::nullopt;
  if (!value->is_string())
    badRequest(
        fmt::format("{} must be a string, found {}", name, value->type_name()));
  return value->get<std::string>();
}

std::string requiredString(const json &object, const char *name) {
  std::optional<std::string> value = stringField(object, name);
  if (!value || value->empty())
    badRequest(fmt::format("missing {} parameter", name));
  return *value;
}

/// The value of decimal digits with an optional minus sign (a form's
/// number), or NaN for any other text: "1-2" or "-" is not a number.
double integerText(const std::string &text) {
  size_t start = !text.empty() && text[0] == '-' ? 1 : 0;
  bool digits =
      text.size() > start && text.size() < 12 &&
      text.find_first_not_of("0123456789", start) == std::string::npos;
  return digits ? std::strtod(text.c_str(), nullptr) : NAN;
}

/// An integer in [min, max]: a JSON integer or integral number, or in a
/// form (whose fields are all strings) decimal digits. A JSON string is
/// refused: "2" where a number belongs is a client's mistake.
std::optional<int64_t> intField(const json &object, const char *name,
                                int64_t min, int64_t max, bool form = false) {
  const json *value = field(object, name);
  if (!value)
    return std::nullopt;
  if (!value->is_number() && !form)
    badRequest(fmt::format("{} must be an integer, found {}", name,
                           value->type_name()));
  double number = NAN;
  if (value->is_number())
    number = value->get<double>();
  else if (value->is_string())
    number = integerText(value->get_ref<const std::string &>());
  bool integral = value->is_number_integer() ||
                  (std::isfinite(number) && number == std::floor(number));
  if (!integral)
    badRequest(fmt::format("{} parameter is not an integer", name));
  if (number < double(min) || number > double(max))
    badRequest(fmt::format("{} must be in [{}, {}], found {}", name, min, max,
                           number));
  return int64_t(number);
}

std::optional<double> numberField(const json &object, const char *name,
                                  double min) {
  const json *value = field(object, name);
  if (!value)
    return std::nullopt;
  if (!value->is_number())
    badRequest(
        fmt::format("{} must be a number, found {}", name, value->type_name()));
  double number = value->get<double>();
  if (!std::isfinite(number) || number < min || std::fabs(number) > 1e6)
    badRequest(fmt::format("{} must be a finite number in [{}, 1e6], found {}",
                           name, min, number));
  return number;
}

/// A 32-bit integer of at most `max`, the server's limit (`why`); its
/// other values are the runtime's to judge.
std::optional<int64_t> intFieldAtMost(const json &object, const char *name,
                                      int64_t max, const char *why) {
  std::optional<int64_t> value = intField(object, name, INT32_MIN, INT32_MAX);
  if (value && *value > max)
    badRequest(fmt::format("{} must be at most {} ({}), found {}", name, max,
                           why, *value));
  return value;
}

std::optional<bool> boolField(const json &object, const char *name) {
  const json *value = field(object, name);
  if (!value)
    return std::nullopt;
  if (!value->is_boolean())
    badRequest(fmt::format("{} must be a boolean, found {}", name,
                           value->type_name()));
  return value->get<bool>();
}

std::string itemName(const char *name, size_t index, bool batch) {
  return batch ? fmt::format("{}[{}]", name, index) : name;
}

/// Texts within the limits, each valid UTF-8.
void checkTexts(const std::vector<std::string> &texts, const char *name,
                bool batch, const RequestLimits &limits) {
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string copy = texts[i];
    if (tfm_tools::replaceInvalidUtf8(copy))
      badRequest(itemName(name, i, batch) + " is not valid UTF-8");
    size_t chars = countCodePoints(texts[i]);
    if (chars > limits.maxItemChars)
      badRequest(fmt::format("{} has {} characters, more than the limit of {}",
                             itemName(name, i, batch), chars,
                             limits.maxItemChars));
  }
}

/// An array of strings, within the limit on its items.
std::vector<std::string> stringArray(const json &array, const char *name,
                                     const RequestLimits &limits) {
  if (array.size() > limits.maxItems)
    badRequest(fmt::format("{} has {} items, more than the limit of {}", name,
                           array.size(), limits.maxItems));
  std::vector<std::string> out;
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string())
      badRequest(fmt::format("{}[{}] must be a string, found {}", name, i,
                             array[i].type_name()));
    out.push_back(array[i].get<std::string>());
  }
  return out;
}

/// q, a string or an array of strings; `batch` is set for an array.
std::vector<std::string> readQ(const json &object, bool &batch,
                               const RequestLimits &limits) {
  const json *q = field(object, "q");
  if (!q)
    badRequest("missing q parameter");
  std::vector<std::string> texts;
  batch = q->is_array();
  if (q->is_string())
    texts = {q->get<std::string>()};
  else if (q->is_array())
    texts = stringArray(*q, "q", limits);
  else
    badRequest(fmt::format("q must be a string or an array of strings, found "
                           "{}",
                           q->type_name()));
  if (texts.empty() || (!batch && texts[0].empty()))
    badRequest("q is empty");
  checkTexts(texts, "q", batch, limits);
  return texts;
}

/// Whether format is "html" ("text" is the default; LibreTranslate knows
/// no other).
bool readFormat(const json &object) {
  std::string format = stringField(object, "format").value_or("text");
  if (format.empty() || format == "text")
    return false;
  if (format != "html")
    badRequest(fmt::format("format {} is not supported: send text or html",
                           format.substr(0, 50)));
  return true;
}

void readNativeSource(const json &object, NativeRequest &request,
                      const RequestLimits &limits) {
  const json *source = field(object, "source");
  if (!source)
    badRequest("missing source parameter (a list of sentences)");
  if (!source->is_array())
    badRequest(fmt::format("source must be an array of strings, found {}",
                           source->type_name()));
  request.source = stringArray(*source, "source", limits);
  if (request.source.empty())
    badRequest("source is empty");
  checkTexts(request.source, "source", true, limits);
}

std::vector<PrefixToken> prefixTokens(const json &prefix, size_t sentence) {
  std::string where = fmt::format("target_prefix[{}]", sentence);
  if (prefix.is_null())
    return {};
  if (!prefix.is_array() || prefix.size() > 64)
    badRequest(where + " must be null or an array of at most 64 pieces "
                       "(strings) or target ids");
  std::vector<PrefixToken> tokens;
  for (const json &token : prefix) {
    if (token.is_string())
      tokens.push_back({token.get<std::string>(), -1});
    else if (token.is_number_integer() && token.get<int64_t>() >= 0 &&
             token.get<int64_t>() <= INT32_MAX)
      tokens.push_back({"", token.get<int64_t>()});
    else
      badRequest(where + " holds " + token.type_name() +
                 ": expected a piece (string) or a target id");
  }
  return tokens;
}

void readTargetPrefix(const json &object, NativeRequest &request) {
  const json *prefix = field(object, "target_prefix");
  if (!prefix)
    return;
  if (!prefix->is_array() || prefix->size() != request.source.size())
    badRequest(fmt::format("target_prefix must be an array with one prefix "
                           "(or null) per sentence: {} sentences",
                           request.source.size()));
  for (size_t i = 0; i < prefix->size(); ++i)
    request.targetPrefix.push_back(prefixTokens((*prefix)[i], i));
}

void refuseUnknownFields(const json &object) {
  static const std::set<std::string> known = {"source",
                                              "source_lang",
                                              "target_lang",
                                              "beam_size",
                                              "n_best",
                                              "max_length",
                                              "min_length",
                                              "max_length_ratio",
                                              "length_penalty",
                                              "return_scores",
                                              "target_prefix",
                                              "api_key",
                                              "repetition_penalty",
                                              "no_repeat_ngram_size",
                                              "use_vmap",
                                              "sampling_topk",
                                              "sampling_topp",
                                              "sampling_temperature",
                                              "seed",
                                              "return_token_scores",
                                              "model"};
  for (const auto &item : object.items())
    if (!known.count(item.key()))
      badRequest(fmt::format("unknown field '{}'", item.key().substr(0, 50)));
}

/// sampling_topk, sampling_topp, sampling_temperature (numbers here; the
/// runtime judges their values, Service::nativeSearch reports it) and seed
/// an integer in [0, 2^53] (JSON's exact integers): any of them samples,
/// as the translator's --sampling-* and --seed.
void readSamplingOptions(const json &object, NativeRequest &request) {
  request.samplingTopk =
      intField(object, "sampling_topk", INT32_MIN, INT32_MAX);
  request.samplingTopp = numberField(object, "sampling_topp", -1e6);
  request.samplingTemperature =
      numberField(object, "sampling_temperature", -1e6);
  request.seed = intField(object, "seed", 0, int64_t(1) << 53);
  request.sampling = request.samplingTopk || request.samplingTopp ||
                     request.samplingTemperature || request.seed;
}

/// The C API reads a repetition penalty of 0 as "the model's", which a
/// request says by leaving the field out: 0 given is a mistake the runtime
/// cannot see. The runtime judges the other values.
std::optional<double> repetitionPenaltyField(const json &object) {
  std::optional<double> penalty =
      numberField(object, "repetition_penalty", -1e6);
  if (penalty == 0.0)
    badRequest("repetition_penalty 0 is no penalty: leave it out for the "
               "model's, 1 turns it off");
  return penalty;
}

void readNativeOptions(const json &object, NativeRequest &request,
                       const RequestLimits &limits) {
  // The server's limit on the beam; the runtime judges beam_size and
  // n_best otherwise (Service::nativeSearch reports it).
  int maxBeam = limits.maxAlternatives + 1;
  const char *why = "the server's --max-alternatives + 1";
  request.beamSize = intFieldAtMost(object, "beam_size", maxBeam, why);
  request.nBest = intFieldAtMost(object, "n_best", maxBeam, why);
  request.maxLength = intField(object, "max_length", 1, 1 << 20);
  request.minLength = intField(object, "min_length", 0, 1 << 20);
  request.maxLengthRatio = numberField(object, "max_length_ratio", 0);
  request.lengthPenalty = numberField(object, "length_penalty", -1e6);
  request.repetitionPenalty = repetitionPenaltyField(object);
  request.noRepeatNgramSize =
      intField(object, "no_repeat_ngram_size", 0, 1 << 20);
  if (std::optional<bool> scores = boolField(object, "return_scores"))
    request.returnScores = *scores;
  if (std::optional<bool> scores = boolField(object, "return_token_scores"))
    request.returnTokenScores = *scores;
  request.useVmap = boolField(object, "use_vmap");
  readSamplingOptions(object, request);
}

/// The parts named `name`.
std::vector<const UploadPart *> partsNamed(const std::vector<UploadPart> &parts,
                                           const char *name) {
  std::vector<const UploadPart *> out;
  for (const UploadPart &part : parts)
    if (part.name == name)
      out.push_back(&part);
  return out;
}

/// A text field of the form: the first of its parts (none: empty).
std::string formText(const std::vector<UploadPart> &parts, const char *name) {
  std::vector<const UploadPart *> found = partsNamed(parts, name);
  if (found.empty())
    return "";
  if (!found.front()->filename.empty())
    badRequest(fmt::format("{} must be a text field, found a file", name));
  return found.front()->content;
}

/// The one part `file`, an upload (with a file name).
const UploadPart &uploadedFile(const std::vector<UploadPart> &parts) {
  std::vector<const UploadPart *> files = partsNamed(parts, "file");
  if (files.empty())
    badRequest("missing file parameter");
  if (files.size() > 1)
    badRequest(fmt::format("file given {} times: send one file", files.size()));
  if (files.front()->filename.empty())
    badRequest("file must be a file upload (a part with a filename)");
  return *files.front();
}

/// A file's name must be a name alone: the name of the download is made
/// from it, and a path, a control character or a hidden name is a
/// client's mistake or a trick.
void checkFileName(const std::string &name) {
  std::string shown = name;
  if (tfm_tools::replaceInvalidUtf8(shown))
    badRequest("the file name is not valid UTF-8");
  shown = shown.substr(0, 100);
  if (name.size() > 255)
    badRequest("the file name is longer than 255 bytes");
  if (name.find_first_of("/\\") != std::string::npos)
    badRequest(fmt::format("the file name '{}' holds a path: send the name "
                           "alone",
                           shown));
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F)
      badRequest("the file name holds a control character");
  if (name.front() == '.')
    badRequest(fmt::format("the file name '{}' starts with a dot", shown));
}

/// ".TXT" of "notes.TXT" as ".txt"; empty without one.
std::string lowerExtension(const std::string &name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos)
    return "";
  std::string extension = name.substr(dot);
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return extension;
}

FileKind fileKind(const std::string &extension) {
  const std::vector<std::string> &known = supportedFileExtensions();
  if (std::find(known.begin(), known.end(), extension) == known.end())
    badRequest(fmt::format("file format not supported: '{}' (supported: "
                           "{})",
                           extension.substr(0, 20), fmt::join(known, ", ")));
  return extension == ".txt" ? FileKind::Text : FileKind::Html;
}

void checkFileContent(const std::string &content, const FileLimits &limits) {
  if (content.size() > limits.maxBytes)
    refuse(413, fmt::format("Payload too large: file has {} bytes, more than "
                            "the limit of {} (--max-file-bytes)",
                            content.size(), limits.maxBytes));
  std::string copy = content;
  if (tfm_tools::replaceInvalidUtf8(copy))
    badRequest("file is not valid UTF-8 text");
}

} // namespace

const std::vector<std::string> &tfm_serve::supportedFileExtensions() {
  static const std::vector<std::string> extensions = {".txt", ".html", ".htm"};
  return extensions;
}

Parsed<FileRequest>
tfm_serve::parseFileRequest(const std::vector<UploadPart> &parts,
                            const FileLimits &limits) {
  try {
    const UploadPart &file = uploadedFile(parts);
    FileRequest request;
    checkFileName(file.filename);
    request.filename = file.filename;
    request.extension = lowerExtension(file.filename);
    request.kind = fileKind(request.extension);
    checkFileContent(file.content, limits);
    request.content = file.content;
    request.source = formText(parts, "source");
    if (request.source.empty())
      badRequest("missing source parameter");
    request.target = formText(parts, "target");
    if (request.target.empty())
      badRequest("missing target parameter");
    request.apiKey = formText(parts, "api_key");
    return request;
  } catch (const Invalid &invalid) {
    return invalid.error;
  }
}

size_t tfm_serve::countCodePoints(const std::string &text) {
  return size_t(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

Parsed<TranslateRequest>
tfm_serve::parseTranslateRequest(const std::string &body,
                                 const std::string &contentType,
                                 const RequestLimits &limits) {
  try {
    Body parsed = bodyObject(body, contentType, limits, true);
    const json &object = parsed.object;
    TranslateRequest request;
    request.q = readQ(object, request.batch, limits);
    request.source = requiredString(object, "source");
    request.target = requiredString(object, "target");
    request.html = readFormat(object);
    request.alternatives = int(
        intField(object, "alternatives", 0, limits.maxAlternatives, parsed.form)
            .value_or(0));
    request.apiKey = stringField(object, "api_key").value_or("");
    return request;
  } catch (const Invalid &invalid) {
    return invalid.error;
  }
}

Parsed<NativeRequest>
tfm_serve::parseNativeRequest(const std::string &body,
                              const std::string &contentType,
                              const RequestLimits &limits) {
  try {
    json object = bodyObject(body, contentType, limits, false).object;
    refuseUnknownFields(object);
    NativeRequest request;
    readNativeSource(object, request, limits);
    request.sourceLang = stringField(object, "source_lang").value_or("auto");
    request.targetLang = requiredString(object, "target_lang");
    if (std::optional<std::string> model = stringField(object, "model")) {
      if (model->empty())
        badRequest("model is empty: give the name of a served model");
      request.model = *model;
    }
    readNativeOptions(object, request, limits);
    readTargetPrefix(object, request);
    request.apiKey = stringField(object, "api_key").value_or("");
    return request;
  } catch (const Invalid &invalid) {
    return invalid.error;
  }
}

Parsed<DetectRequest>
tfm_serve::parseDetectQuery(const std::string &body,
                            const std::string &contentType,
                            const RequestLimits &limits) {
  try {
    json object = bodyObject(body, contentType, limits, true).object;
    DetectRequest request;
    request.q = readQ(object, request.batch, limits);
    request.apiKey = stringField(object, "api_key").value_or("");
    return request;
  } catch (const Invalid &invalid) {
    return invalid.error;
  }
}

Parsed<std::string>
tfm_serve::parseDetectRequest(const std::string &body,
                              const std::string &contentType,
                              const RequestLimits &limits) {
  Parsed<DetectRequest> request = parseDetectQuery(body, contentType, limits);
  if (const HttpError *error = errorOf(request))
    return *error;
  return std::get<DetectRequest>(request).apiKey;
}
