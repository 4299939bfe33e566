# libFuzzer targets: tests/fuzz/fuzz_*.c, built with clang against a sanitized,
# fuzzer-instrumented twin of the library. `make fuzz` configures this.
set(KFT_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -g -O1)
add_library(kftrainer_fuzz STATIC ${KFT_LIB_ALL})
target_include_directories(kftrainer_fuzz PUBLIC ${CMAKE_SOURCE_DIR}/include
                           PRIVATE ${CMAKE_SOURCE_DIR}/src ${KFT_GENERATED_INCLUDE})
target_compile_options(kftrainer_fuzz PRIVATE ${KFT_FUZZ_FLAGS})
target_link_libraries(kftrainer_fuzz PUBLIC ${KFT_LIB_DEPS})
file(GLOB KFT_FUZZERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
foreach(src ${KFT_FUZZERS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined -g -O1)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE kftrainer_fuzz)
endforeach()
