//===- LanguageDetector.h - The language of a text, by CLD2 -----*- C++ -*-===//
//
// Which language a text is in, as Google's Compact Language Detector 2
// (Debian's libcld2) says, under ISO 639-1 codes ("de", "he" where CLD2
// says "iw"), ranked for a caller that translates from a few languages:
// those it translates from first, the others CLD2 found after them. CLD2
// is asked once, and once more in its best-effort mode when it finds the
// first answer unreliable (short texts), as LibreTranslate asks it. Plain
// C++; CLD2's headers stay in the .cpp. Thread-safe: CLD2 keeps no state.
// The first detector raises glibc's heap trim threshold for the process
// (see keepFreedHeap in the .cpp): CLD2's tables are freed on every call.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_LANGUAGEDETECTOR_H
#define TFM_TOOLS_COMMON_LANGUAGEDETECTOR_H

#include <string>
#include <vector>

namespace tfm_tools {

/// A language CLD2 found, and its share of the text's letters in percent
/// (LibreTranslate's "confidence").
struct DetectedLanguage {
  std::string language;
  double confidence = 0;
};

class LanguageDetector {
public:
  /// `sources`: the ISO 639-1 codes (or other codes as CLD2 names
  /// languages: "haw", "ceb") the caller translates from, ranked first.
  /// CLD2 is not told them (its content-language hint): on short texts the
  /// hint pulls answers towards its first language, English to German.
  explicit LanguageDetector(std::vector<std::string> sources);

  /// The languages of valid UTF-8 `text`, best first: the sources CLD2
  /// found (in its order), then the others; empty when it found none (no
  /// letters, digits only, or invalid UTF-8).
  std::vector<DetectedLanguage> detect(const std::string &text) const;

  /// Whether `language` is one of the sources.
  bool isSource(const std::string &language) const;
  const std::vector<std::string> &sources() const { return sourceCodes; }

private:
  std::vector<std::string> sourceCodes;
};

/// The ISO 639-1 code of a code as CLD2 or a model may write it ("iw" ->
/// "he", "zh-Hant" -> "zh", "jw" -> "jv"); others unchanged.
std::string canonicalLanguage(const std::string &code);

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_LANGUAGEDETECTOR_H
