# Unit tests: every tests/unit/test_*.c is one cmocka program. Each is built
# twice: against the ordinary static library, and against a twin of the library
# compiled with AddressSanitizer + UndefinedBehaviorSanitizer, so one ctest run
# covers both (labels "unit" and "asan").
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
# OpenSSL: the tests' independent implementation (keys, certificates and
# hashes made with mbedTLS are checked against it); nothing shipped links it.
pkg_check_modules(OPENSSL REQUIRED IMPORTED_TARGET openssl)
set(KFT_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

add_library(kftrainer_asan STATIC ${KFT_LIB_ALL})
target_include_directories(kftrainer_asan PUBLIC ${CMAKE_SOURCE_DIR}/include
                           PRIVATE ${CMAKE_SOURCE_DIR}/src ${KFT_GENERATED_INCLUDE})
target_compile_options(kftrainer_asan PRIVATE ${KFT_WARNINGS} ${KFT_SAN_FLAGS} -O1 -g)
target_link_libraries(kftrainer_asan PUBLIC ${KFT_LIB_DEPS})
target_link_options(kftrainer_asan PUBLIC ${KFT_SAN_FLAGS})

file(GLOB KFT_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src ${KFT_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  foreach(variant plain asan)
    if(variant STREQUAL plain)
      set(exe ${name})
      set(lib kftrainer_static)
      set(extra "")
    else()
      set(exe ${name}_asan)
      set(lib kftrainer_asan)
      set(extra ${KFT_SAN_FLAGS})
    endif()
    add_executable(${exe} ${src})
    set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit
                               ${KFT_GENERATED_INCLUDE})
    target_compile_options(${exe} PRIVATE ${KFT_WARNINGS} ${extra})
    target_compile_definitions(${exe} PRIVATE KFT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    target_link_libraries(${exe} PRIVATE ${lib} PkgConfig::CMOCKA PkgConfig::MHD
      PkgConfig::OPENSSL)
    add_test(NAME ${exe} COMMAND ${exe} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    if(variant STREQUAL plain)
      set_tests_properties(${exe} PROPERTIES LABELS unit)
    else()
      set_tests_properties(${exe} PROPERTIES LABELS asan
        ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1")
    endif()
  endforeach()
endforeach()

# The kube client's TLS and authentication tests, and the initializers'
# https downloads, once more over the libcurl the CLI and the controller link
# (mbedTLS, kftrainer_slim), where util/curl_tls.c adds the IP-address host
# check (KFT_TEST_CURL_MBEDTLS switches on the cases only that build is held
# to). Plain builds only: the slim archive has no sanitized twin.
if(KFT_SLIM)
  foreach(name test_kube_tls test_kube_config test_kube_client test_fetch_tls)
    if(NOT EXISTS ${CMAKE_SOURCE_DIR}/tests/unit/${name}.c)
      continue()
    endif()
    add_executable(${name}_slim tests/unit/${name}.c)
    set_target_properties(${name}_slim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    target_include_directories(${name}_slim PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit)
    target_compile_options(${name}_slim PRIVATE ${KFT_WARNINGS})
    target_compile_definitions(${name}_slim PRIVATE KFT_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
      KFT_TEST_CURL_MBEDTLS)
    # OpenSSL: the tests make their certificates with it
    target_link_libraries(${name}_slim PRIVATE kftrainer_slim ${KFT_SLIM_STATIC_DEPS}
      PkgConfig::SQLITE PkgConfig::CMOCKA PkgConfig::MHD PkgConfig::OPENSSL)
    add_test(NAME ${name}_slim COMMAND ${name}_slim WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(${name}_slim PROPERTIES LABELS unit)
  endforeach()
endif()

# Tiers driven by scripts: each tests/<tier>/run-tier prints its own
# "N passed, N failed" line and exits non-zero on failure, or 77 when this
# machine cannot run the tier at all (the cluster tier without Go): ctest then
# reports it Skipped, and the "SKIP: <tier> tier: <reason>" line in its
# output says why (ctest -V, Testing/Temporary/LastTest.log).
foreach(tier validate golden plugins local python browser deploy cluster)
  if(EXISTS ${CMAKE_SOURCE_DIR}/tests/${tier}/run-tier)
    add_test(NAME tier_${tier} COMMAND ${CMAKE_SOURCE_DIR}/tests/${tier}/run-tier
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(tier_${tier} PROPERTIES LABELS ${tier}
      ENVIRONMENT "KFTRAINER=${CMAKE_BINARY_DIR}/bin/kftrainer;KFT_BUILD_DIR=${CMAKE_BINARY_DIR}"
      TIMEOUT 3000 SKIP_RETURN_CODE 77)
  endif()
endforeach()
# The llm tier's make-test variant (tests/llm/run-tier --fast: a tiny Llama 3.2 through the
# shipped torchtune runtime with real torchtune from PyPI); `make test-llm` runs the whole tier.
add_test(NAME tier_llm_fast COMMAND ${CMAKE_SOURCE_DIR}/tests/llm/run-tier --fast
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(tier_llm_fast PROPERTIES LABELS llm
  ENVIRONMENT "KFTRAINER=${CMAKE_BINARY_DIR}/bin/kftrainer;KFT_BUILD_DIR=${CMAKE_BINARY_DIR}"
  TIMEOUT 3000 SKIP_RETURN_CODE 77)
# Tiers that bring up (and down) the worktree's one simulated cluster never
# run at the same time.
foreach(tier browser cluster)
  if(TEST tier_${tier})
    set_tests_properties(tier_${tier} PROPERTIES RESOURCE_LOCK kft_cluster)
  endif()
endforeach()

# Programs the cluster tier runs against its real API server
# (tests/cluster/progs/*.c -> <build>/tests/cluster/<name>); scripts in
# tests/cluster/t/ find them through KFT_BUILD_DIR.
file(GLOB KFT_CLUSTER_PROGS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cluster/progs/*.c)
foreach(src ${KFT_CLUSTER_PROGS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/cluster)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${KFT_WARNINGS})
  target_link_libraries(${name} PRIVATE kftrainer_static)
endforeach()

# Every fuzz target's corpus, replayed by a plain driver (tests/fuzz/replay.c)
# against the sanitized library: a seed that crashes or breaks a target's
# promise fails here, in every build, without clang. `make fuzz` builds the
# real fuzzers.
file(GLOB KFT_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
foreach(src ${KFT_FUZZ_TARGETS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(replay_${name} ${src} ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c)
  set_target_properties(replay_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(replay_${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${KFT_GENERATED_INCLUDE})
  target_compile_options(replay_${name} PRIVATE ${KFT_WARNINGS} ${KFT_SAN_FLAGS})
  target_link_libraries(replay_${name} PRIVATE kftrainer_asan)
  add_test(NAME fuzz_replay_${name}
           COMMAND replay_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS "unit;fuzz"
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1")
endforeach()

# The shared library's exports are its installed headers' declarations, no
# more (tests/exports/check; -fvisibility=hidden and KFT_EXPORT, export.h).
add_test(NAME exports COMMAND ${CMAKE_SOURCE_DIR}/tests/exports/check
         $<TARGET_FILE:kftrainer> ${KFT_PUBLIC_HEADERS})
set_tests_properties(exports PROPERTIES LABELS unit)

# The installed headers are what an embedding program or an out-of-tree
# plugin uses, from C++ too: tests/exports/embed.cpp includes every one of
# them (the list is generated from include/kftrainer/), compiled as C++11
# with -pedantic-errors and linked against libkftrainer.so, and loads a
# plugin written in C++ (cxx_plugin.cpp), both built with include/ alone.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  set(KFT_HEADERS_CXX "/* Generated by cmake/tests.cmake: every installed header. */\n")
  foreach(h ${KFT_PUBLIC_HEADERS})
    get_filename_component(name ${h} NAME)
    string(APPEND KFT_HEADERS_CXX "#include <kftrainer/${name}>\n")
  endforeach()
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/cxx/public_headers.h
       CONTENT "${KFT_HEADERS_CXX}")
  set(KFT_CXX_FLAGS -std=c++11 -Wall -Wextra -pedantic-errors -Werror -fvisibility=hidden)
  add_library(cxx-plugin MODULE ${CMAKE_SOURCE_DIR}/tests/exports/cxx_plugin.cpp)
  set_target_properties(cxx-plugin PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY
                        ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(cxx-plugin PRIVATE ${CMAKE_SOURCE_DIR}/include ${JANSSON_INCLUDE_DIRS})
  target_compile_options(cxx-plugin PRIVATE ${KFT_CXX_FLAGS})
  add_executable(embed-cxx ${CMAKE_SOURCE_DIR}/tests/exports/embed.cpp)
  set_target_properties(embed-cxx PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(embed-cxx PRIVATE ${CMAKE_BINARY_DIR}/generated/cxx)
  target_compile_options(embed-cxx PRIVATE ${KFT_CXX_FLAGS})
  target_link_libraries(embed-cxx PRIVATE kftrainer)
  add_test(NAME public_headers_cxx COMMAND embed-cxx
           ${CMAKE_SOURCE_DIR}/manifests/runtimes/torch-distributed.yaml $<TARGET_FILE:cxx-plugin>)
else()
  add_test(NAME public_headers_cxx COMMAND sh -c "echo 'no C++ compiler: skipped'; exit 77")
endif()
set_tests_properties(public_headers_cxx PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
