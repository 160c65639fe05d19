//===- TokenizerInfo.cpp - tfmc's description of a tokenizer ----*- C++ -*-===//

#include "runtime/src/TokenizerInfo.h"

#include "runtime/src/Status.h"
#include "tfm/abi/EmbeddedFiles.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <unordered_set>

using namespace tfm_runtime;

namespace {

/// Parses the records of tokenizer.tfm, one line at a time.
class InfoParser {
public:
  InfoParser(const NamedBytes &file, const tfm_model_config &config,
             TokenizerInfo &info)
      : file(file), config(config), info(info) {}

  tfm_status parse();

private:
  tfm_status record(const std::string &key,
                    const std::vector<std::string> &fields);
  tfm_status text(const std::string &key,
                  const std::vector<std::string> &fields);
  tfm_status language(const std::vector<std::string> &fields);
  tfm_status frame(const std::vector<std::string> &fields,
                   std::vector<int32_t> &out);
  tfm_status count(const std::vector<std::string> &fields, size_t n) const;
  tfm_status number(const std::string &text, int64_t max, int64_t &out) const;
  tfm_status languageIndex(const std::string &code, int32_t &out) const;
  tfm_status checkWhole() const;
  tfm_status error(const std::string &message) const {
    return makeError("{}: line {}: {}", file.name, line, message);
  }

  const NamedBytes &file;
  const tfm_model_config &config;
  TokenizerInfo &info;
  size_t line = 0;
};

tfm_status InfoParser::count(const std::vector<std::string> &fields,
                             size_t n) const {
  return fields.size() == n
             ? nullptr
             : error(fmt::format("expected {} field{} after "
                                 "the key, found {}",
                                 n, n == 1 ? "" : "s", fields.size()));
}

tfm_status InfoParser::number(const std::string &text, int64_t max,
                              int64_t &out) const {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || value < 0 || value > max)
    return error(fmt::format("'{}' is not a number in [0, {}]", text, max));
  out = value;
  return nullptr;
}

/// Ids of the model's vocabulary, or `source` / `target`.
tfm_status InfoParser::frame(const std::vector<std::string> &fields,
                             std::vector<int32_t> &out) {
  if (fields.size() > kMaxFrameTokens)
    return error(fmt::format("more than {} tokens", kMaxFrameTokens));
  out.clear();
  for (const std::string &field : fields) {
    int64_t id = 0;
    if (field == "source")
      id = kSourceLanguageToken;
    else if (field == "target")
      id = kTargetLanguageToken;
    else if (tfm_status s = number(field, config.target_vocab_size - 1, id))
      return s;
    out.push_back(int32_t(id));
  }
  return nullptr;
}

tfm_status InfoParser::languageIndex(const std::string &code,
                                     int32_t &out) const {
  for (size_t i = 0; i < info.languages.size(); ++i)
    if (info.languages[i].code == code) {
      out = int32_t(i);
      return nullptr;
    }
  return error(fmt::format("'{}' is not a language of this file", code));
}

/// Records of one text field.
tfm_status InfoParser::text(const std::string &key,
                            const std::vector<std::string> &fields) {
  if (tfm_status s = count(fields, 1))
    return s;
  std::string &into = key == "kind"         ? info.kind
                      : key == "source-spm" ? info.sourceSpm
                      : key == "target-spm" ? info.targetSpm
                                            : info.defaultSource;
  into = fields[0];
  return nullptr;
}

tfm_status InfoParser::language(const std::vector<std::string> &fields) {
  if (fields.size() < 2)
    return error("a language needs its code and id");
  int64_t id = 0;
  if (tfm_status s = number(fields[1], config.target_vocab_size - 1, id))
    return s;
  info.languages.push_back(
      {fields[0], int32_t(id), {fields.begin() + 2, fields.end()}});
  return nullptr;
}

tfm_status InfoParser::record(const std::string &key,
                              const std::vector<std::string> &fields) {
  int64_t vocab = config.target_vocab_size, value = 0;
  if (key == "kind" || key == "source-spm" || key == "target-spm" ||
      key == "default-source")
    return text(key, fields);
  if (key == "vocab") {
    if (tfm_status s = count(fields, 2))
      return s;
    info.vocab = fields[0];
    return number(fields[1], vocab, info.vocabCount);
  }
  if (key == "offset" || key == "size") {
    if (tfm_status s = count(fields, 1))
      return s;
    if (tfm_status s = number(fields[0], vocab, value))
      return s;
    if (key == "offset")
      info.offset = int32_t(value);
    else
      info.size = value;
    return nullptr;
  }
  if (key == "special") {
    if (tfm_status s = count(fields, 2))
      return s;
    if (tfm_status s = number(fields[1], vocab - 1, value))
      return s;
    info.specials.emplace_back(fields[0], int32_t(value));
    return nullptr;
  }
  if (key == "language")
    return language(fields);
  if (key == "source-prefix")
    return frame(fields, info.sourcePrefix);
  if (key == "source-suffix")
    return frame(fields, info.sourceSuffix);
  if (key == "source-prefix-with-target")
    return frame(fields, info.sourcePrefixWithTarget.emplace());
  if (key == "target-prefix")
    return frame(fields, info.targetPrefix);
  if (key == "pair") {
    if (tfm_status s = count(fields, 2))
      return s;
    info.pairSource = int32_t(info.languages.size());
    info.pairTarget = info.pairSource + (fields[0] != fields[1]);
    info.languages.push_back({fields[0], -1, {}});
    if (fields[0] != fields[1])
      info.languages.push_back({fields[1], -1, {}});
    return nullptr;
  }
  return error(fmt::format("unknown record '{}' (a tfmc newer than this "
                           "runtime wrote it?)",
                           key));
}

/// What holds across records: names choose one language each, the frames
/// have the languages they name.
tfm_status InfoParser::checkWhole() const {
  std::unordered_set<std::string> names;
  for (const LanguageEntry &l : info.languages) {
    if (!names.insert(l.code).second)
      return makeError("{}: language '{}' appears twice", file.name, l.code);
    for (const std::string &name : l.names)
      if (name != l.code && !names.insert(name).second)
        return makeError("{}: the name '{}' is given to two languages",
                         file.name, name);
  }
  std::vector<const std::vector<int32_t> *> sourceFrames = {&info.sourcePrefix,
                                                            &info.sourceSuffix};
  if (info.sourcePrefixWithTarget)
    sourceFrames.push_back(&*info.sourcePrefixWithTarget);
  bool needsSource = false;
  for (const std::vector<int32_t> *frame : sourceFrames)
    for (int32_t id : *frame)
      needsSource |= id == kSourceLanguageToken;
  if (needsSource && info.defaultSource.empty())
    return makeError("{}: the source is framed with its language, but no "
                     "default-source is given",
                     file.name);
  // A description without languages (T5 without MADLAD-400's) has no
  // default source either.
  if (!info.defaultSource.empty() &&
      std::none_of(
          info.languages.begin(), info.languages.end(),
          [&](const LanguageEntry &l) { return l.code == info.defaultSource; }))
    return makeError("{}: default-source '{}' is not one of its languages",
                     file.name, info.defaultSource);
  if (info.size > config.target_vocab_size)
    return makeError("{}: size {} exceeds the model's vocabulary of {}",
                     file.name, info.size, config.target_vocab_size);
  return nullptr;
}

tfm_status InfoParser::parse() {
  std::istringstream lines(file.bytes);
  std::string text;
  while (std::getline(lines, text)) {
    ++line;
    std::istringstream words(text);
    std::string key;
    std::vector<std::string> fields;
    if (!(words >> key))
      continue;
    for (std::string field; words >> field;)
      fields.push_back(field);
    if (line == 1 && text != kTokenizerInfoHeader)
      return error(fmt::format("expected '{}', found '{}'",
                               kTokenizerInfoHeader, text.substr(0, 40)));
    if (line == 1)
      continue;
    if (tfm_status s = record(key, fields))
      return s;
  }
  if (line == 0)
    return makeError("{}: empty", file.name);
  return checkWhole();
}

} // namespace

tfm_status tfm_runtime::readTokenizerInfo(const ModelFiles &files,
                                          const tfm_model_config &config,
                                          TokenizerInfo &out) {
  out = TokenizerInfo();
  if (!files.has(kTokenizerInfoName))
    return nullptr;
  NamedBytes file;
  if (tfm_status s = files.read(kTokenizerInfoName, file))
    return s;
  out.described = true;
  out.name = file.name;
  return InfoParser(file, config, out).parse();
}
