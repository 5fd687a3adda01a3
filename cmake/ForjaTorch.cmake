# Finds LibTorch and defines the interface target forja::torch.
#  - A LibTorch with TorchConfig.cmake (the PyTorch wheel, the official zip): CMAKE_PREFIX_PATH points at it.
#  - Debian's libtorch-dev ships no TorchConfig.cmake: headers in /usr/include, libraries torch, torch_cpu, c10.
# Sets FORJA_TORCH_CUDA when the LibTorch build has CUDA.
set(FORJA_TORCH_CUDA OFF)
find_package(Torch CONFIG QUIET)
add_library(forja_torch INTERFACE)
add_library(forja::torch ALIAS forja_torch)
if(Torch_FOUND)
  message(STATUS "LibTorch: TorchConfig.cmake in ${Torch_DIR}")
  target_link_libraries(forja_torch INTERFACE ${TORCH_LIBRARIES})
  # TORCH_CXX_FLAGS carries the C++ ABI define the build was made with.
  separate_arguments(_forja_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(forja_torch INTERFACE ${_forja_torch_flags})
  if(TARGET torch_cuda OR "${TORCH_LIBRARIES}" MATCHES "torch_cuda")
    set(FORJA_TORCH_CUDA ON)
  endif()
else()
  find_path(FORJA_TORCH_API_INCLUDE torch/torch.h PATHS /usr/include/torch/csrc/api/include NO_DEFAULT_PATH)
  find_path(FORJA_ATEN_INCLUDE ATen/ATen.h)
  find_library(FORJA_LIB_TORCH torch)
  find_library(FORJA_LIB_TORCH_CPU torch_cpu)
  find_library(FORJA_LIB_C10 c10)
  if(NOT FORJA_TORCH_API_INCLUDE OR NOT FORJA_ATEN_INCLUDE OR NOT FORJA_LIB_TORCH OR NOT FORJA_LIB_TORCH_CPU
     OR NOT FORJA_LIB_C10)
    message(FATAL_ERROR "LibTorch not found. On Debian install libtorch-dev (scripts/setup does); elsewhere set "
                        "CMAKE_PREFIX_PATH to a LibTorch with TorchConfig.cmake, e.g. "
                        "$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)').")
  endif()
  message(STATUS "LibTorch: Debian layout (${FORJA_LIB_TORCH})")
  target_include_directories(forja_torch SYSTEM INTERFACE ${FORJA_ATEN_INCLUDE} ${FORJA_TORCH_API_INCLUDE})
  target_link_libraries(forja_torch INTERFACE ${FORJA_LIB_TORCH} ${FORJA_LIB_TORCH_CPU} ${FORJA_LIB_C10})
endif()
target_compile_definitions(forja_torch INTERFACE FORJA_TORCH_CUDA=$<BOOL:${FORJA_TORCH_CUDA}>)
add_feature_info(TORCH_CUDA FORJA_TORCH_CUDA "LibTorch built with CUDA")
# GCC 13 reports -Warray-bounds and -Wstringop-overflow inside libstdc++'s vector<bool> as LibTorch 2.x's custom_function.h instantiates it
# (torch::autograd::Function::apply); the warning is in those headers' code, inlined into ours, not in ours.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
  target_compile_options(forja_torch INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds -Wno-stringop-overflow>)
endif()
