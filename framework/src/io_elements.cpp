// Element types in HDF5 files (io_elements.hpp): the HDF5 types of any element type the io layer can
// name, and the checks of a file's type against one.
#include "io_elements.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "io_probe.hpp"
#include "io_verdict.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::io {

namespace detail {

std::string compound_name(const std::vector<H5Member>& members) {
  std::string text = "{";
  for (std::size_t i = 0; i < members.size(); ++i) text += (i ? ", " : "") + members[i].name;
  return text + "}";
}

H5Types h5_types(const H5Type& type) {
  H5Types t;
  t.bytes = type.bytes;
  t.name = type.name;
  if (type.cls == H5Type::Class::number) {
    const H5Element e = h5_element(type.kind, type.bytes, type.name.c_str());
    t.memory = Handle(TESSERA_H5_CHECK(H5Tcopy(e.memory_type)), H5Tclose);
    t.file = Handle(TESSERA_H5_CHECK(H5Tcopy(e.file_type)), H5Tclose);
    return t;
  }
  TESSERA_ASSERT(type.cls == H5Type::Class::compound && !type.members.empty(), "h5_types: a type HDF5 cannot name");
  std::vector<H5Types> members;
  std::size_t packed = 0;
  for (const H5Member& m : type.members) {
    members.push_back(h5_types(m.type));
    packed += H5Tget_size(members.back().file.get());
  }
  t.memory = Handle(TESSERA_H5_CHECK(H5Tcreate(H5T_COMPOUND, type.bytes)), H5Tclose);
  t.file = Handle(TESSERA_H5_CHECK(H5Tcreate(H5T_COMPOUND, packed)), H5Tclose);
  std::size_t at = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const H5Member& m = type.members[i];
    TESSERA_ASSERT(m.offset + m.type.bytes <= type.bytes, "h5_types: a member beyond the end of its struct");
    TESSERA_H5_CHECK(H5Tinsert(t.memory.get(), m.name.c_str(), m.offset, members[i].memory.get()));
    TESSERA_H5_CHECK(H5Tinsert(t.file.get(), m.name.c_str(), at, members[i].file.get()));
    at += H5Tget_size(members[i].file.get());
  }
  return t;
}

void require_named(const H5Type& type, const char* operation, const DatasetPath& path) {
  std::string why;
  auto check = [&](const H5Type& t, const std::string& where, auto& self) -> void {
    if (t.cls == H5Type::Class::none) {
      why = where.empty() ? "the element type (" + t.name + ")"
                          : "its member " + in_quotes(where) + " (" + t.name + ")";
      return;
    }
    for (const H5Member& m : t.members) {
      if (!why.empty()) return;
      self(m.type, where.empty() ? m.name : where + "." + m.name, self);
    }
  };
  check(type, "", check);
  if (!why.empty())
    throw IoError(std::string(operation) + " " + quoted_path(path) + ": " + why +
                      " has no HDF5 name; HDF5 stores numbers, std::complex<float> and std::complex<double>, and "
                      "structs whose fields are named with TESSERA_HDF5_FIELDS (tessera/framework/io.hpp)",
                  path.file, path.dataset);
}

std::string describe_file_type(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t bytes = H5Tget_size(type);
  if (cls == H5T_INTEGER)
    return std::to_string(bytes * 8) + "-bit " + (H5Tget_sign(type) == H5T_SGN_2 ? "signed" : "unsigned") + " integer";
  if (cls == H5T_FLOAT) return std::to_string(bytes * 8) + "-bit float";
  if (cls == H5T_COMPOUND) {
    std::string text = "compound {";
    const int n = H5Tget_nmembers(type);
    for (int i = 0; i < n; ++i) {
      char* name = H5Tget_member_name(type, static_cast<unsigned>(i));
      Handle member(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
      text += (i ? ", " : "") + std::string(name ? name : "?") + ": " +
              (member.valid() ? describe_file_type(member.get()) : std::string("?"));
      if (name) H5free_memory(name);
    }
    return text + "}";
  }
  return "a type of class " + std::to_string(static_cast<int>(cls)) + " (" + std::to_string(bytes) + " bytes)";
}

std::string compound_mismatch(hid_t file_type, const H5Type& wanted) {
  if (H5Tget_class(file_type) != H5T_COMPOUND)
    return "holds " + describe_file_type(file_type) + "s, not a compound with the members " + compound_name(wanted.members) +
           " that " + wanted.name + " needs";
  for (const H5Member& m : wanted.members) {
    const int index = H5Tget_member_index(file_type, m.name.c_str());
    if (index < 0)
      return "holds " + describe_file_type(file_type) + ", which has no member " + in_quotes(m.name) + " (" +
             wanted.name + " needs " + compound_name(wanted.members) + ")";
    Handle member(TESSERA_H5_CHECK(H5Tget_member_type(file_type, static_cast<unsigned>(index))), H5Tclose);
    const H5T_class_t cls = H5Tget_class(member.get());
    if (m.type.cls == H5Type::Class::number) {
      if (cls != H5T_INTEGER && cls != H5T_FLOAT)
        return "has the member " + in_quotes(m.name) + " of " + describe_file_type(member.get()) + ", not a number";
    } else {
      const std::string inner = compound_mismatch(member.get(), m.type);
      if (!inner.empty()) return "has the member " + in_quotes(m.name) + " that " + inner;
    }
  }
  return "";
}

bool is_complex_compound(hid_t type, std::size_t* component_bytes) {
  if (H5Tget_class(type) != H5T_COMPOUND || H5Tget_nmembers(type) != 2) return false;
  const int r = H5Tget_member_index(type, "r"), i = H5Tget_member_index(type, "i");
  if (r < 0 || i < 0) return false;
  Handle real(H5Tget_member_type(type, static_cast<unsigned>(r)), H5Tclose);
  Handle imag(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
  if (!real.valid() || !imag.valid() || H5Tget_class(real.get()) != H5T_FLOAT || H5Tget_class(imag.get()) != H5T_FLOAT)
    return false;
  const std::size_t bytes = H5Tget_size(real.get());
  if (bytes != H5Tget_size(imag.get()) || (bytes != 4 && bytes != 8)) return false;
  *component_bytes = bytes;
  return true;
}

}  // namespace detail

DatasetInfo probe_numeric_or_complex(const Context& ctx, const DatasetPath& path) {
  return detail::probe(ctx, path, /*need_dtype=*/true, nullptr, /*accept_complex=*/true);
}

}  // namespace tessera::io
