#!/usr/bin/env python3
"""unicode_class.py: writes unicode_class.c, the code point classes the
pre-tokenizer's patterns ask for (\\p{L}, \\p{N}, the rest), as ranges from
this Python's Unicode database. Run: python3 src/text/unicode_class.py >
src/text/unicode_class.c"""
import sys
import unicodedata

def cls(c):
    cat = unicodedata.category(chr(c))
    return 1 if cat[0] == 'L' else 2 if cat[0] == 'N' else 0

starts = []
prev = None
for c in range(0x110000):
    k = cls(c)
    if k != prev:
        starts.append((c, k))
        prev = k
out = sys.stdout
out.write('/* unicode_class.c: each code point\'s class for the pre-tokenizer\n'
          ' * (unicode_class.h), from Unicode %s\'s general categories. Written by\n'
          ' * unicode_class.py; not edited by hand. */\n'
          '#include "text/unicode_class.h"\n\n'
          '#include <stddef.h>\n#include <stdint.h>\n\n'
          '/* where each run of one class starts, and the class (0 other, 1 letter, 2 number) */\n'
          'static const uint32_t run_start[%d] = {\n' % (unicodedata.unidata_version, len(starts)))
for i in range(0, len(starts), 8):
    out.write('    ' + ', '.join('0x%x' % s for s, _ in starts[i:i + 8]) + ',\n')
out.write('};\nstatic const unsigned char run_class[%d] = {\n' % len(starts))
for i in range(0, len(starts), 24):
    out.write('    ' + ', '.join(str(k) for _, k in starts[i:i + 24]) + ',\n')
out.write('''};

UnicodeClass unicode_class(uint32_t c)
{
    if (c == 0x9 || c == 0xa || c == 0xb || c == 0xc || c == 0xd || c == 0x20 || c == 0x85 || c == 0xa0 ||
        c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
        c == 0x205f || c == 0x3000)
        return UC_SPACE; /* Unicode's White_Space property */
    size_t lo = 0, hi = sizeof run_start / sizeof run_start[0];
    while (hi - lo > 1) { /* the last run that starts at or before c */
        size_t mid = (lo + hi) / 2;
        if (run_start[mid] <= c)
            lo = mid;
        else
            hi = mid;
    }
    return c >= 0x110000 ? UC_OTHER : (UnicodeClass)run_class[lo];
}
''')
