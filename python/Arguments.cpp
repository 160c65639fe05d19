//===- Arguments.cpp - Python arguments checked and converted ---*- C++ -*-===//

#include "python/Arguments.h"

#include "tfm/Utf8.h"
#include "tools/common/Text.h"

#include <sys/stat.h>

#include <cfloat>
#include <cmath>

namespace py = pybind11;

namespace tfm_python {

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

[[noreturn]] void throwPythonError() { throw py::error_already_set(); }

/// A value's repr for a message, cut when long (10**400, a long list).
std::string reprText(py::handle value) {
  std::string text = py::repr(value).cast<std::string>();
  if (text.size() > 60)
    text = text.substr(0, 50) + "...";
  return text;
}

/// A value for a type error: its type, and its repr when short ("float
/// 2.5", "NoneType None", "generator").
std::string describe(py::handle value) {
  std::string text = Py_TYPE(value.ptr())->tp_name;
  std::string shown = py::repr(value).cast<std::string>();
  if (shown.size() <= 40 && shown.find(" at 0x") == std::string::npos)
    text += " " + shown;
  return text;
}

bool isInteger(py::handle value) {
  return !PyBool_Check(value.ptr()) && PyIndex_Check(value.ptr());
}

/// An integer's value as a Python int, through __index__ (raising what it
/// raises).
static py::object indexObject(py::handle value) {
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index)
    throwPythonError();
  return index;
}

int64_t intArg(py::handle value, const std::string &name, int64_t min,
               int64_t max, const std::string &why) {
  if (!isInteger(value))
    throw py::type_error(name + " must be an int, found " + describe(value));
  std::optional<long long> v = indexValue(value);
  if (!v || *v < min || *v > max)
    throw py::value_error(name + " must be an int in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "]" + why + ", found " +
                          reprText(value));
  return *v;
}

uint64_t seedArg(py::handle value, const std::string &name) {
  if (!isInteger(value))
    throw py::type_error(name + " must be an int, found " + describe(value));
  unsigned long long v = PyLong_AsUnsignedLongLong(indexObject(value).ptr());
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(name + " must be an int in [0, 2**64 - 1], found " +
                          reprText(value));
  }
  return v;
}

float floatArg(py::handle value, const std::string &name) {
  PyObject *p = value.ptr();
  PyNumberMethods *number = Py_TYPE(p)->tp_as_number;
  auto notANumber = [&] {
    return py::type_error(name + " must be a number, found " + describe(value));
  };
  if (PyBool_Check(p) ||
      !(PyFloat_Check(p) || PyIndex_Check(p) || (number && number->nb_float)))
    throw notANumber();
  double v = PyFloat_AsDouble(p);
  if (v == -1.0 && PyErr_Occurred()) {
    // An int past a double's range is not finite either.
    if (!PyErr_ExceptionMatches(PyExc_OverflowError) &&
        !PyErr_ExceptionMatches(PyExc_TypeError))
      throwPythonError();
    bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (!overflow)
      throw notANumber();
    v = HUGE_VAL;
  }
  if (!std::isfinite(v) || std::fabs(v) > FLT_MAX)
    throw py::value_error(name + " must be a finite number, found " +
                          reprText(value));
  return float(v);
}

bool boolArg(py::handle value, const std::string &name) {
  std::string type = Py_TYPE(value.ptr())->tp_name;
  if (!PyBool_Check(value.ptr()) && type != "numpy.bool_" &&
      type != "numpy.bool")
    throw py::type_error(name + " must be a bool, found " + describe(value));
  return PyObject_IsTrue(value.ptr()) == 1;
}

/// A str, bytes or os.PathLike path as the file system's bytes (a str with
/// undecodable file-name bytes gets them back, as open() does); an empty
/// one names nothing and is a ValueError.
std::string pathArg(py::handle value, const std::string &name) {
  auto path = py::reinterpret_steal<py::object>(PyOS_FSPath(value.ptr()));
  if (!path) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError))
      throwPythonError();
    PyErr_Clear();
    throw py::type_error(name + " must be a str or os.PathLike, found " +
                         describe(value));
  }
  if (PyUnicode_Check(path.ptr())) {
    path = py::reinterpret_steal<py::object>(
        PyUnicode_EncodeFSDefault(path.ptr()));
    if (!path)
      throwPythonError();
  }
  std::string out(PyBytes_AS_STRING(path.ptr()),
                  size_t(PyBytes_GET_SIZE(path.ptr())));
  if (out.find('\0') != std::string::npos)
    throw py::value_error(name +
                          " contains a NUL character: " + reprText(value));
  if (out.empty())
    throw py::value_error(name +
                          " must not be empty: it names a file or directory");
  return out;
}

bool utf8Text(py::handle text, std::string &out) {
  Py_ssize_t size = 0;
  if (const char *data = PyUnicode_AsUTF8AndSize(text.ptr(), &size)) {
    out.assign(data, size_t(size));
    return false;
  }
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
    throwPythonError();
  PyErr_Clear();
  std::string bytes;
  int kind = PyUnicode_KIND(text.ptr());
  const void *chars = PyUnicode_DATA(text.ptr());
  for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text.ptr()); i < n; ++i) {
    Py_UCS4 c = PyUnicode_READ(kind, chars, i);
    if (c >= 0xDC80 && c <= 0xDCFF)
      bytes += char(c - 0xDC00);
    else if (c >= 0xD800 && c <= 0xDFFF)
      bytes += "\xEF\xBF\xBD";
    else
      tfm_runtime::appendUtf8(bytes, c);
  }
  tfm_tools::replaceInvalidUtf8(bytes);
  out = std::move(bytes);
  return true;
}

void warn(PyObject *category, const std::string &message) {
  if (PyErr_WarnEx(category, message.c_str(), 1) < 0)
    throwPythonError();
}

std::optional<long long> indexValue(py::handle token) {
  int overflow = 0;
  long long id =
      PyLong_AsLongLongAndOverflow(indexObject(token).ptr(), &overflow);
  if (id == -1 && PyErr_Occurred())
    throwPythonError();
  if (overflow)
    return std::nullopt;
  return id;
}

/// An optional language code argument: None or a str; "" (no code)
/// would read as None, and is a ValueError.
std::string codeArg(py::handle arg, const std::string &name) {
  if (arg.is_none())
    return "";
  if (!PyUnicode_Check(arg.ptr()))
    throw py::type_error(name +
                         " must be a str (a language code such as "
                         "\"de\") or None, found " +
                         describe(arg));
  std::string code = arg.cast<std::string>();
  if (code.empty())
    throw py::value_error(name + " must not be empty: give a language "
                                 "code such as \"de\", or None");
  return code;
}

} // namespace tfm_python
