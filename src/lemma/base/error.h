// Typed errors thrown at lemma's boundaries (files, requests, command lines).
// Internal invariants use assertions; kernels never throw.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace lemma {

// Base of every error lemma reports to a user. The message names what was wrong and where.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A file on disk is malformed (bad header, truncated, overlapping tensors, ...).
class FormatError : public Error {
 public:
  using Error::Error;
};

// Input the caller gave is invalid (bad argument, impossible parameter).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Something the format allows but lemma does not implement.
class Unsupported : public Error {
 public:
  using Error::Error;
};

// An operating-system call failed; the message carries errno's text.
class IoError : public Error {
 public:
  using Error::Error;
};

template <typename E = Error, typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

// Throws IoError "<what>: <strerror(errno)>".
[[noreturn]] void fail_errno(const std::string& what);

}  // namespace lemma
