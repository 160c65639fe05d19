//===- Request.h - Requests parsed into plain structs -----------*- C++ -*-===//
//
// The bodies of POST /translate (LibreTranslate's fields, JSON or
// form-encoded) and POST /v1/translate (the translator's options, JSON)
// parsed and checked into plain structs, or an HTTP status and a message
// naming the problem. JSON is nlohmann's, form fields cpp-httplib's; no
// HTTP here beyond the Content-Type, so a fuzzer can call these directly.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_REQUEST_H
#define TFM_TOOLS_SERVE_REQUEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tfm_serve {

/// An error answer: its status and the message of {"error": ...}.
struct HttpError {
  int status;
  std::string message;
};

template <class T> using Parsed = std::variant<T, HttpError>;

/// The error of a Parsed, or null when it holds a value.
template <class T> const HttpError *errorOf(const Parsed<T> &parsed) {
  return std::get_if<HttpError>(&parsed);
}

struct RequestLimits {
  /// Items of an array q (sentences of /v1/translate).
  size_t maxItems = 128;
  /// Characters (code points) of one item.
  size_t maxItemChars = 5000;
  /// alternatives (LibreTranslate), n_best - 1 and beam_size - 1 (native).
  int maxAlternatives = 8;
  /// Nesting of JSON arrays and objects.
  int maxDepth = 16;
};

/// POST /detect: the texts (an array q is detected as one text, as
/// LibreTranslate weighs its items by length) and the key.
struct DetectRequest {
  std::vector<std::string> q;
  bool batch = false;
  std::string apiKey;
};

/// POST /translate, LibreTranslate's fields.
struct TranslateRequest {
  std::vector<std::string> q;
  /// q was an array: the answer holds arrays.
  bool batch = false;
  std::string source, target, apiKey;
  int alternatives = 0;
  /// format "html": each item is a document whose text is translated and
  /// whose markup is kept (alternatives are then empty, as LibreTranslate
  /// gives them).
  bool html = false;
};

/// POST /translate_file: what an upload may be.
struct FileLimits {
  /// Bytes of the uploaded file (413 past it).
  size_t maxBytes = size_t(1) << 20;
  /// Translated files kept at once for download (503 when all are taken).
  size_t maxFiles = 100;
  /// Seconds a translated file can be downloaded.
  double expirySeconds = 600;
};

/// A part of a multipart/form-data body, as the HTTP layer parsed it.
struct UploadPart {
  std::string name, filename, content;
};

/// The kinds of file /translate_file translates, by extension.
enum class FileKind { Text, Html };

/// POST /translate_file, LibreTranslate's fields.
struct FileRequest {
  /// The uploaded file's name (no path) and lower-case extension (".txt").
  std::string filename, extension;
  FileKind kind = FileKind::Text;
  std::string content;
  std::string source, target, apiKey;
};

/// The extensions /translate_file takes, as LibreTranslate lists them in
/// supportedFilesFormat.
const std::vector<std::string> &supportedFileExtensions();

/// A token of a target prefix: a vocabulary piece, or a target id.
struct PrefixToken {
  std::string piece;
  int64_t id = -1;
};

/// POST /v1/translate: the translator's options, named as the Python API
/// (and CTranslate2's translate_batch) names them; unset ones take the
/// server's defaults.
struct NativeRequest {
  std::vector<std::string> source;
  std::string sourceLang = "auto", targetLang, apiKey;
  /// The model to translate with, by name; empty: the one that serves the
  /// pair first (several models may serve one pair).
  std::string model;
  std::optional<int> beamSize, nBest, maxLength, minLength;
  std::optional<double> maxLengthRatio, lengthPenalty;
  /// Repetition guards (unset: the model's generation config) and the
  /// vocabulary shortlist (unset: the model's, if it has one).
  std::optional<double> repetitionPenalty;
  std::optional<int> noRepeatNgramSize;
  std::optional<bool> useVmap;
  /// Sampling instead of search when any of its fields is given.
  bool sampling = false;
  std::optional<int> samplingTopk;
  std::optional<double> samplingTopp, samplingTemperature;
  std::optional<int64_t> seed;
  bool returnScores = false, returnTokenScores = false;
  /// Per sentence, the tokens its translations start with (none: empty).
  std::vector<std::vector<PrefixToken>> targetPrefix;
};

/// Parses a /translate body whose Content-Type header is `contentType`.
Parsed<TranslateRequest>
parseTranslateRequest(const std::string &body, const std::string &contentType,
                      const RequestLimits &limits = {});

/// Parses a /detect body: q (a string or an array of strings, checked as
/// /translate checks it) and api_key.
Parsed<DetectRequest> parseDetectQuery(const std::string &body,
                                       const std::string &contentType,
                                       const RequestLimits &limits = {});

/// parseDetectQuery's api_key (empty without one), or its error: the
/// fuzz target's entry point, kept until it calls parseDetectQuery.
Parsed<std::string> parseDetectRequest(const std::string &body,
                                       const std::string &contentType,
                                       const RequestLimits &limits = {});

/// Parses a /v1/translate body (JSON).
Parsed<NativeRequest> parseNativeRequest(const std::string &body,
                                         const std::string &contentType,
                                         const RequestLimits &limits = {});

/// Checks the parts of a /translate_file body: one `file` with a plain
/// name of a supported extension, within the limit, valid UTF-8; `source`
/// and `target`; `api_key` optional (repeated fields: the first).
Parsed<FileRequest> parseFileRequest(const std::vector<UploadPart> &parts,
                                     const FileLimits &limits = {});

/// The number of code points of valid UTF-8 text.
size_t countCodePoints(const std::string &text);

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_REQUEST_H
