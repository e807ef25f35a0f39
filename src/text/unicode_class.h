/* unicode_class.h: the classes of code points the pre-tokenizer's
 * patterns ask for: GPT-2's \p{L} (letters), \p{N} (numbers), \s
 * (Unicode's White_Space) and everything else. */
#ifndef KVSCOPE_TEXT_UNICODE_CLASS_H
#define KVSCOPE_TEXT_UNICODE_CLASS_H

#include <stdint.h>

typedef enum { UC_OTHER = 0, UC_LETTER = 1, UC_NUMBER = 2, UC_SPACE = 3 } UnicodeClass;

UnicodeClass unicode_class(uint32_t c);

#endif
