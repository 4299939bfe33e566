/*
 * export.h - which symbols libkftrainer exports.
 *
 * The library is compiled with -fvisibility=hidden: a function is visible to
 * programs and plugins only when its declaration in include/kftrainer/ is
 * marked KFT_EXPORT, or stands between KFT_EXPORT_BEGIN and KFT_EXPORT_END
 * (controller.h, until it is split into its public and internal halves).
 * Everything under src/ stays internal to the library
 * (the CLI, the controller and the tests link the static archive, which
 * keeps every symbol). The `exports` test holds the shared library to this:
 * every symbol it exports is declared in an installed header.
 */
#ifndef KFTRAINER_EXPORT_H
#define KFTRAINER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define KFT_EXPORT       __attribute__((visibility("default")))
#define KFT_EXPORT_BEGIN _Pragma("GCC visibility push(default)")
#define KFT_EXPORT_END   _Pragma("GCC visibility pop")
#else
#define KFT_EXPORT
#define KFT_EXPORT_BEGIN
#define KFT_EXPORT_END
#endif

#endif
