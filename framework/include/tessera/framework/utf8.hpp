// Text that leaves the program as UTF-8 (HDF5 string attributes, JSON) where the bytes it holds
// (a file name in another encoding) may not be.
#pragma once

#include <cstddef>
#include <string>

namespace tessera {

// Length of the well-formed UTF-8 sequence at s[i] (1 to 4 bytes), or 0 where the bytes there are
// not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
// i < s.size().
std::size_t utf8_length(const std::string& s, std::size_t i);

// `s` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string valid_utf8(const std::string& s);

}  // namespace tessera
