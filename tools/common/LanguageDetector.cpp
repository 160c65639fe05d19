//===- LanguageDetector.cpp - The language of a text, by CLD2 ---*- C++ -*-===//

#include "tools/common/LanguageDetector.h"

#include <cstdio> // compact_lang_det.h uses FILE without including it
// Its order matters: compact_lang_det.h needs FILE declared first.
#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>

#include <algorithm>
#include <climits>
#include <malloc.h>
#include <mutex>

using namespace tfm_tools;

namespace {

/// CLD2's codes that differ from ISO 639-1, both ways.
const std::pair<const char *, const char *> kRenamed[] = {
    {"iw", "he"}, {"jw", "jv"}, {"zh-Hant", "zh"}, {"sr-ME", "sr"}};

/// Whether a CLD2 code names a language: not "un" (unknown), "xxx" or a
/// script alone ("xx-Latn").
bool namesLanguage(const std::string &code) {
  return code != "un" && code != "xxx" && code.rfind("xx-", 0) != 0;
}

struct Cld2Answer {
  CLD2::Language languages[3];
  int percents[3];
  bool reliable = false;
};

Cld2Answer askCld2(const std::string &text, int flags) {
  static const CLD2::CLDHints kNoHints{nullptr, nullptr, CLD2::UNKNOWN_ENCODING,
                                       CLD2::UNKNOWN_LANGUAGE};
  Cld2Answer answer;
  double scores[3];
  int textBytes = 0, validBytes = 0;
  int length = int(std::min(text.size(), size_t(INT_MAX)));
  CLD2::ExtDetectLanguageSummaryCheckUTF8(
      text.data(), length, /*is_plain_text=*/true, &kNoHints, flags,
      answer.languages, answer.percents, scores, nullptr, &textBytes,
      &answer.reliable, &validBytes);
  return answer;
}

/// CLD2 allocates and frees a few hundred KB of tables on every call;
/// glibc hands the freed top of the heap back to the kernel (brk) past
/// 128 KB and faults it in again on the next call, which took ten times
/// the detection itself. A process that detects keeps up to 64 MB.
void keepFreedHeap() {
  static std::once_flag once;
  std::call_once(once, [] { mallopt(M_TRIM_THRESHOLD, 64 << 20); });
}

} // namespace

std::string tfm_tools::canonicalLanguage(const std::string &code) {
  for (const auto &[cld2, iso] : kRenamed)
    if (code == cld2)
      return iso;
  return code;
}

LanguageDetector::LanguageDetector(std::vector<std::string> sources)
    : sourceCodes(std::move(sources)) {
  keepFreedHeap();
}

bool LanguageDetector::isSource(const std::string &language) const {
  return std::find(sourceCodes.begin(), sourceCodes.end(), language) !=
         sourceCodes.end();
}

std::vector<DetectedLanguage>
LanguageDetector::detect(const std::string &text) const {
  Cld2Answer answer = askCld2(text, 0);
  // Short texts: CLD2's best guess rather than none.
  if (!answer.reliable)
    answer = askCld2(text, CLD2::kCLDFlagBestEffort);
  std::vector<DetectedLanguage> found;
  for (int i = 0; i < 3; ++i) {
    std::string code = CLD2::LanguageCode(answer.languages[i]);
    if (!namesLanguage(code) || answer.percents[i] <= 0)
      continue;
    code = canonicalLanguage(code);
    auto same = std::find_if(found.begin(), found.end(),
                             [&](const auto &d) { return d.language == code; });
    if (same != found.end()) // zh and zh-Hant: one language
      same->confidence += answer.percents[i];
    else
      found.push_back({code, double(answer.percents[i])});
  }
  // The sources first, each group in CLD2's order.
  std::vector<DetectedLanguage> ranked;
  for (bool sources : {true, false})
    for (const DetectedLanguage &d : found)
      if (isSource(d.language) == sources)
        ranked.push_back(d);
  return ranked;
}
