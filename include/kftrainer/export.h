/*
 * export.h - which symbols libkftrainer exports.
 *
 * The library is compiled with -fvisibility=hidden: a function is visible to
 * programs and plugins only when its declaration in include/kftrainer/ is
 * marked KFT_EXPORT. Everything under src/ stays internal to the library
 * (the CLI, the controller and the tests link the static archive, which
 * keeps every symbol). The `exports` test holds the shared library to this:
 * every symbol it exports is declared in an installed header.
 */
#ifndef KFTRAINER_EXPORT_H
#define KFTRAINER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define KFT_EXPORT __attribute__((visibility("default")))
#else
#define KFT_EXPORT
#endif

#endif
