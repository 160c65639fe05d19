//===- Keywords.cpp - A method's keyword options, read by name --*- C++ -*-===//

#include "python/Keywords.h"

#include "python/Arguments.h"

#include <cstring>
#include <stdexcept>

namespace py = pybind11;

namespace tfm_python {

/// The option's default as a Python object.
static py::object defaultObject(const KeywordOption &option) {
  const auto &value = option.defaultValue;
  if (const bool *flag = std::get_if<bool>(&value))
    return py::bool_(*flag);
  if (const int *integer = std::get_if<int>(&value))
    return py::int_(*integer);
  if (const double *number = std::get_if<double>(&value))
    return py::float_(*number);
  if (const char *const *text = std::get_if<const char *>(&value))
    return py::str(*text);
  return py::none();
}

static const KeywordOption *find(const KeywordTable &table, const char *name) {
  for (const KeywordOption &option : table)
    if (std::strcmp(name, option.name) == 0)
      return &option;
  return nullptr;
}

/// Whether `table` names `keyword` (a str, which may hold lone surrogates).
static bool names(const KeywordTable &table, py::handle keyword) {
  for (const KeywordOption &option : table)
    if (PyUnicode_CompareWithASCIIString(keyword.ptr(), option.name) == 0)
      return true;
  return false;
}

std::string keywordSignature(const KeywordTable &table) {
  std::string signature;
  for (const KeywordOption &option : table) {
    if (!signature.empty())
      signature += ", ";
    signature += std::string(option.name) + "=" +
                 py::repr(defaultObject(option)).cast<std::string>();
  }
  return signature;
}

KeywordArgs::KeywordArgs(const char *method, const KeywordTable &table,
                         py::dict given)
    : table(table), given(std::move(given)) {
  std::vector<std::string> unknown;
  for (auto item : this->given)
    if (!names(table, item.first))
      unknown.push_back(py::repr(item.first).cast<std::string>());
  if (unknown.empty())
    return;
  std::string names = unknown[0];
  for (size_t i = 1; i < unknown.size(); ++i)
    names += ", " + unknown[i];
  throw py::type_error(std::string(method) + "() got " +
                       (unknown.size() == 1 ? "an unexpected keyword argument "
                                            : "unexpected keyword arguments ") +
                       names);
}

py::object KeywordArgs::operator[](const char *name) const {
  const KeywordOption *option = find(table, name);
  if (!option)
    throw std::logic_error(std::string("no keyword option ") + name);
  if (given.contains(name))
    return given[name];
  return defaultObject(*option);
}

int64_t KeywordArgs::integer(const char *name, int64_t min, int64_t max) const {
  return intArg((*this)[name], name, min, max);
}

float KeywordArgs::number(const char *name) const {
  return floatArg((*this)[name], name);
}

bool KeywordArgs::boolean(const char *name) const {
  return boolArg((*this)[name], name);
}

size_t KeywordArgs::choice(const char *name,
                           const std::vector<const char *> &choices) const {
  py::object value = (*this)[name];
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i)
    expected += std::string(i == 0                    ? ""
                            : i + 1 == choices.size() ? " or "
                                                      : ", ") +
                "'" + choices[i] + "'";
  if (!PyUnicode_Check(value.ptr()))
    throw py::type_error(std::string(name) + " must be " + expected +
                         ", found " + describe(value));
  // Compared as Python's str: a value with lone surrogates is no choice.
  for (size_t i = 0; i < choices.size(); ++i)
    if (PyUnicode_CompareWithASCIIString(value.ptr(), choices[i]) == 0)
      return i;
  throw py::value_error(std::string(name) + " must be " + expected +
                        ", found " + reprText(value));
}

} // namespace tfm_python
