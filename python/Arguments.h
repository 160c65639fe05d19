//===- Arguments.h - Python arguments checked and converted -----*- C++ -*-===//
//
// Every argument of the module is a Python object checked here before the
// runtime sees it: a wrong type or value is a TypeError or ValueError
// naming the argument, never a pybind11 cast error.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PYTHON_ARGUMENTS_H
#define TFM_PYTHON_ARGUMENTS_H

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace tfm_python {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

/// The most OpenMP threads: libomp aborts the process (no error to return)
/// when it cannot start a team's threads, as with threads=10**6; no model
/// gains from more threads than this on one machine.
constexpr int64_t kMaxThreads = 1024;

bool isFile(const std::string &path);

/// Raises the Python error that is set.
[[noreturn]] void throwPythonError();

/// A value's repr for a message, cut when long (10**400, a long list).
std::string reprText(pybind11::handle value);

/// A value for a type error: its type, and its repr when short ("float
/// 2.5", "NoneType None", "generator").
std::string describe(pybind11::handle value);

/// Whether `value` is an integer to us: whatever has __index__ counts
/// (numpy's integers), bool does not: True for a beam size or a token id is
/// a mistake, not a 1.
bool isInteger(pybind11::handle value);

/// `value` as an integer (isInteger) in [min, max], else a TypeError or
/// ValueError naming `name`; `why` says where a bound comes from.
int64_t intArg(pybind11::handle value, const std::string &name, int64_t min,
               int64_t max, const std::string &why = "");

/// `value` as an unsigned 64-bit integer (a seed), else a TypeError or
/// ValueError naming `name`.
uint64_t seedArg(pybind11::handle value, const std::string &name);

/// `value` as a finite float32 (the runtime's options are float), else a
/// TypeError or ValueError naming `name`: a NaN length penalty would make
/// every score NaN and the ranking arbitrary.
float floatArg(pybind11::handle value, const std::string &name);

/// `value` as a bool (Python's or numpy's), else a TypeError naming `name`:
/// return_scores="no" would be true.
bool boolArg(pybind11::handle value, const std::string &name);

/// A str, bytes or os.PathLike path as the file system's bytes (a str with
/// undecodable file-name bytes gets them back, as open() does); an empty
/// one names nothing and is a ValueError.
std::string pathArg(pybind11::handle value, const std::string &name);

/// An optional language code argument: None or a str; "" (no code)
/// would read as None, and is a ValueError.
std::string codeArg(pybind11::handle arg, const std::string &name);

/// An integer's value through __index__ (raising what it raises); none
/// when it does not fit a long long.
std::optional<long long> indexValue(pybind11::handle token);

/// The UTF-8 of `text`; returns whether something was replaced by U+FFFD
/// (lone surrogates, repaired as the translator repairs a file's bytes).
bool utf8Text(pybind11::handle text, std::string &out);

/// Issues a Python warning; with warnings turned into errors, raises it.
void warn(PyObject *category, const std::string &message);

} // namespace tfm_python

#endif // TFM_PYTHON_ARGUMENTS_H
