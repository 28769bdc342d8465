// How a generic local operation picks its backend: the queue's backend at run time, and, for the
// cuda backend, the code this translation unit can reach at compile time.
//
//   cpu queue   the header templates in tessera/kernels/cpu/ run the functor on host threads. A
//               functor that exists only on the device (an extended __device__ lambda) cannot:
//               that is a UsageError, raised before any work.
//   cuda queue  in a translation unit compiled by nvcc, the templates of tessera/kernels/cuda/ are
//               instantiated with the functor; elsewhere only the library's precompiled instances
//               (the operations the apps use) are reachable, and anything else is a UsageError
//               that says to compile the file with nvcc.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::detail {

// True when F is an nvcc extended lambda marked __device__ only: it cannot run on the host.
#if defined(__CUDACC__) && defined(__CUDACC_EXTENDED_LAMBDA__)
template <class F>
inline constexpr bool is_device_only_lambda = __nv_is_extended_device_lambda_closure_type(F);
#else
template <class F>
inline constexpr bool is_device_only_lambda = false;
#endif

// True when F cannot run on the host: a __device__-only extended lambda, or a wrapper of one (a
// function object that names what it wraps with `using wrapped_functor = Inner;`).
template <class F, class = void>
struct is_device_only : std::bool_constant<is_device_only_lambda<F>> {};
template <class F>
struct is_device_only<F, std::void_t<typename F::wrapped_functor>> : is_device_only<typename F::wrapped_functor> {};

template <class... F>
inline constexpr bool host_callable = (!is_device_only<std::remove_cvref_t<F>>::value && ...);

// For the compile-time checks of functor signatures: the host cannot see how a __device__-only
// lambda is called, so such a lambda passes (its kernel instantiation checks it).
template <class F, class... Args>
inline constexpr bool invocable_with =
    is_device_only<std::remove_cvref_t<F>>::value || std::is_invocable_v<F&, Args...>;
template <class R, class F, class... Args>
inline constexpr bool invocable_r_with =
    is_device_only<std::remove_cvref_t<F>>::value || std::is_invocable_r_v<R, F&, Args...>;

// For a second check after invocable_with: false only where F takes Args and its result does not
// convert to R (where F does not take Args, the first check has said so).
template <class R, class F, class... Args>
inline constexpr bool result_converts_to = is_device_only<std::remove_cvref_t<F>>::value ||
                                           !std::is_invocable_v<F&, Args...> || std::is_invocable_r_v<R, F&, Args...>;

// True when F is a lambda that only the host can call, in a translation unit that nvcc compiles: a
// lambda without __host__ __device__ (or __device__), which nvcc cannot instantiate a kernel with.
// nvcc's front end names a lambda's closure type "lambda [...](...)", and says which lambdas are
// extended (--extended-lambda); a struct whose operator() lacks TESSERA_HOST_DEVICE cannot be told
// from one that has it, and fails at the kernel's call instead.
#if defined(__CUDACC__)
template <class F>
constexpr std::string_view type_text() {
  return __PRETTY_FUNCTION__;
}
template <class F>
constexpr bool is_lambda_closure() {
  constexpr std::string_view text = type_text<F>();
  constexpr std::size_t at = text.find("F = ");
  if constexpr (at == std::string_view::npos) {
    return false;
  } else {
    return text.substr(at + 4).starts_with("lambda [");
  }
}
#if defined(__CUDACC_EXTENDED_LAMBDA__)
template <class F>
inline constexpr bool is_host_lambda = is_lambda_closure<F>() && !__nv_is_extended_host_device_lambda_closure_type(F) &&
                                       !__nv_is_extended_device_lambda_closure_type(F);
#else
template <class F>
inline constexpr bool is_host_lambda = is_lambda_closure<F>();
#endif
#else
template <class F>
inline constexpr bool is_host_lambda = false;
#endif

// The same through the library's wrappers (`using wrapped_functor = Inner;`).
template <class F, class = void>
struct is_host_only_lambda : std::bool_constant<is_host_lambda<F>> {};
template <class F>
struct is_host_only_lambda<F, std::void_t<typename F::wrapped_functor>> : is_host_only_lambda<typename F::wrapped_functor> {};

// Called where a translation unit compiled by nvcc instantiates the device passes with the functors:
// `if constexpr (require_device_callable<F>()) { ...device pass... }` (false: the message, and no
// device pass instantiated to add nvcc's own errors to it).
template <class... F>
constexpr bool require_device_callable() {
  static_assert(!(is_host_only_lambda<std::remove_cvref_t<F>>::value || ...),
                "a lambda without __host__ __device__ cannot run on the GPU, and nvcc compiles this call for it: "
                "write [] TESSERA_HOST_DEVICE (...) { ... } (nvcc --extended-lambda, which Tessera::kernels adds), "
                "or a struct whose operator() is TESSERA_HOST_DEVICE (docs/API.md, nvcc's lambda rules)");
  return !(is_host_only_lambda<std::remove_cvref_t<F>>::value || ...);
}

// True when this translation unit can instantiate the CUDA templates.
#if defined(__CUDACC__)
inline constexpr bool cuda_in_this_translation_unit = true;
#else
inline constexpr bool cuda_in_this_translation_unit = false;
#endif

// Thrown as UsageError, with the operation's name.
[[noreturn]] void throw_device_only_functor_on_cpu(const char* operation);
[[noreturn]] void throw_needs_cuda_compiler(const char* operation);
[[noreturn]] void throw_no_cuda_backend(const char* operation);

// A negative count is a bug of the caller, not user input.
void check_count(index_t n, const char* operation);

}  // namespace tessera::kernels::detail
