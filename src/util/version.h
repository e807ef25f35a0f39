/* version.h: kvscope's version, for --version and the files it writes. */
#ifndef KVSCOPE_UTIL_VERSION_H
#define KVSCOPE_UTIL_VERSION_H

#define KVSCOPE_VERSION "0.1.0"

#endif
