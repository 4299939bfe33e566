# The built-in plugins: which there are and the order the framework runs them
# in (the order kft_framework_new documents, framework.h). The registry never
# names them: this list generates <build>/generated/builtin_plugins.c, the
# table src/framework/builtins.h declares, and <build>/generated/plugins/
# builtin.h, the plugins' own declarations (their tests call them directly),
# as nginx's configure writes ngx_modules.c.
#
# An entry is NAME (the table kft_plugin_NAME, defined in src/plugins/) or
# NAME:GATE, registered only when the feature gate GATE (a KFT_FEATURE_*
# macro of framework.h) is on. A new built-in plugin: its file in
# src/plugins/, a line here.
set(KFT_BUILTIN_PLUGINS
  plainml
  torch
  mpi
  jax
  xgboost
  flux
  coscheduling
  volcano
  jobset
  trainjobstatus:KFT_FEATURE_TRAINJOB_STATUS)

set(KFT_BUILTIN_DECLS "")
set(KFT_BUILTIN_TABLE "")
foreach(entry ${KFT_BUILTIN_PLUGINS})
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 name)
  list(LENGTH parts n)
  set(gate 0)
  if(n GREATER 1)
    list(GET parts 1 gate)
  endif()
  string(APPEND KFT_BUILTIN_DECLS "extern const kft_plugin kft_plugin_${name};\n")
  string(APPEND KFT_BUILTIN_TABLE "\t{&kft_plugin_${name}, ${gate}},\n")
endforeach()
configure_file(${CMAKE_SOURCE_DIR}/cmake/builtin_plugins.c.in
               ${CMAKE_BINARY_DIR}/generated/builtin_plugins.c @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/builtin_plugins.h.in
               ${CMAKE_BINARY_DIR}/generated/plugins/builtin.h @ONLY)
