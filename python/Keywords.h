//===- Keywords.h - A method's keyword options, read by name ----*- C++ -*-===//
//
// translate_batch and score_batch take their options as keywords only. Each
// method's options (names and defaults) are one table, written where the
// method is bound (Module.cpp): the binding takes **kwargs, its docstring's
// signature is made from the table, and the method reads each option by
// its name, the name its error messages use.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PYTHON_KEYWORDS_H
#define TFM_PYTHON_KEYWORDS_H

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tfm_python {

/// A keyword option: its name, and its value when not given (nullptr
/// for None, a string for a str).
struct KeywordOption {
  const char *name;
  std::variant<std::nullptr_t, bool, int, double, const char *> defaultValue;
};

using KeywordTable = std::vector<KeywordOption>;

/// "name=default, ..." of `table`, in its order, the defaults as Python
/// writes them: a docstring's signature.
std::string keywordSignature(const KeywordTable &table);

/// The keyword arguments of one call, read against the method's table.
class KeywordArgs {
public:
  /// Refuses a keyword the table does not name with a TypeError, as Python
  /// does ("translate_batch() got an unexpected keyword argument 'x'").
  KeywordArgs(const char *method, const KeywordTable &table,
              pybind11::dict given);

  /// Option `name`: as given, else its default.
  pybind11::object operator[](const char *name) const;
  bool isNone(const char *name) const { return (*this)[name].is_none(); }

  /// Option `name` read by Arguments.h's intArg, floatArg and boolArg,
  /// its errors naming it.
  int64_t integer(const char *name, int64_t min, int64_t max) const;
  float number(const char *name) const;
  bool boolean(const char *name) const;
  /// Option `name`, a str that must be one of `choices`; its index in
  /// them, else a TypeError or ValueError naming it and the choices.
  size_t choice(const char *name,
                const std::vector<const char *> &choices) const;

private:
  const KeywordTable &table;
  pybind11::dict given;
};

} // namespace tfm_python

#endif // TFM_PYTHON_KEYWORDS_H
