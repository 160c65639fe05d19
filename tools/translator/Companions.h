//===- Companions.h - Inputs read in step with the source -------*- C++ -*-===//
//
// The target prefixes (--target-prefix, --target-prefix-file) and --score's
// targets (a second file, or after a TAB), line for line with the input.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_COMPANIONS_H
#define TFM_TOOLS_TRANSLATOR_COMPANIONS_H

#include "tools/common/Text.h"
#include "tools/translator/Errors.h"
#include "tools/translator/Session.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tfm_translator {

using tfm_tools::LineReader;
using tfm_tools::Location;

/// The next line of `file`, read in step with the `side` line at `where`
/// (its location in `at`); a file that ends first is an error naming
/// both, `what` saying what its lines give.
inline std::string companionLine(LineReader &file, const std::string &fileName,
                                 const Location &where, const char *what,
                                 const char *side, Location &at) {
  std::string line;
  if (!file.next(line, at))
    die(fmt::format("{}: no {} for this line: {} has fewer lines than the {}",
                    where.str(), what, fileName, side));
  return line;
}

/// The target prefix of each input line: --target-prefix for all, or the
/// lines of --target-prefix-file in step with the input's.
class TargetPrefixes {
public:
  TargetPrefixes(const Options &o, const Session &s)
      : s(s), fileName(o.targetPrefixFile) {
    if (!o.targetPrefixFile.empty()) {
      file.emplace(std::vector<std::string>{o.targetPrefixFile}, die);
      file->checkReadable();
    } else if (!o.targetPrefix.empty()) {
      fixed = parse(o.targetPrefix, "--target-prefix");
    }
  }

  /// The prefix for the input line at `where`: the target language's
  /// token, then the line's own.
  std::vector<int32_t> next(const Location &where) {
    const tfm_language_tokens &t = s.languageTokens;
    std::vector<int32_t> prefix(t.target_prefix,
                                t.target_prefix + t.target_prefix_length);
    if (!file) {
      prefix.insert(prefix.end(), fixed.begin(), fixed.end());
      return prefix;
    }
    Location at{};
    std::string line =
        companionLine(*file, fileName, where, "target prefix", "input", at);
    std::vector<int32_t> own = parse(line, at.str());
    prefix.insert(prefix.end(), own.begin(), own.end());
    return prefix;
  }

  /// Fails when the prefix file has lines left over.
  void checkAllUsed() {
    std::string line;
    Location at{};
    if (file && file->next(line, at))
      die(fmt::format("{}: a target prefix beyond the input's last line",
                      at.str()));
  }

private:
  /// Space-separated target ids (ids output) or vocabulary pieces; EOS
  /// and padding are refused here, where the line is known (the runtime
  /// would name the sentence's place in its batch).
  std::vector<int32_t> parse(const std::string &text,
                             const std::string &where) const {
    std::vector<int32_t> ids;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
      int32_t id = s.outputFormat == Format::Ids ? parseId(word, where)
                                                 : pieceId(word, where);
      if (id == s.cfg.eos_token_id || id == s.cfg.pad_token_id)
        die(fmt::format("{}: the target prefix holds '{}', the model's {}",
                        where, word,
                        id == s.cfg.eos_token_id ? "EOS" : "padding"));
      ids.push_back(id);
    }
    return ids;
  }
  int32_t parseId(const std::string &word, const std::string &where) const {
    char *stop = nullptr;
    errno = 0;
    long id = std::strtol(word.c_str(), &stop, 10);
    if (errno || *stop || id < 0 || id >= s.cfg.target_vocab_size)
      die(fmt::format("{}: '{}' is not a target token id in [0, {})", where,
                      word, s.cfg.target_vocab_size));
    return int32_t(id);
  }
  int32_t pieceId(const std::string &word, const std::string &where) const {
    int32_t id = 0;
    if (tfm_status status =
            tfm_tokenizer_piece_id(s.tokenizer, word.data(), word.size(), &id))
      die(fmt::format("{}: {}", where, tfm_status_message(status)));
    return id;
  }

  const Session &s;
  std::string fileName;
  std::optional<LineReader> file;
  std::vector<int32_t> fixed;
};

/// --score's targets: the lines of a second file in step with the
/// source's, or the part after the TAB of each source line (which keeps
/// the part before it).
class ScoredTargets {
public:
  explicit ScoredTargets(const Options &o) {
    if (o.inputs.size() == 2) {
      file.emplace(std::vector<std::string>{o.inputs[1]}, die);
      file->checkReadable();
      fileName = o.inputs[1];
    }
  }

  /// The target text of the source line at `where`.
  std::string next(std::string &sourceLine, const Location &where) {
    if (!file) {
      size_t tab = sourceLine.find('\t');
      if (tab == std::string::npos)
        die(fmt::format("{}: --score expects SOURCE<TAB>TARGET lines (or a "
                        "source file and a target file); this line has no "
                        "TAB",
                        where.str()));
      std::string target = sourceLine.substr(tab + 1);
      sourceLine.resize(tab);
      return target;
    }
    Location at{};
    return companionLine(*file, fileName, where, "target", "source", at);
  }

  /// Fails when the target file has lines left over.
  void checkAllUsed() {
    std::string line;
    Location at{};
    if (file && file->next(line, at))
      die(fmt::format("{}: a target beyond the source's last line", at.str()));
  }

private:
  std::string fileName;
  std::optional<LineReader> file;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_COMPANIONS_H
