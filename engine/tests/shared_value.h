/* shared_value.h — the shots of shared_child.c: every value says its writer
 * and its index, so shared_main.c can tell any shot from any other. */
#ifndef ZC_TEST_SHARED_VALUE_H
#define ZC_TEST_SHARED_VALUE_H

#include <stdint.h>

#define SHARED_DISK_KEEP 4 /* spill files each child keeps of its own */

/* Value k of shot index of writer: exact in float32 (below 2^24). */
static inline float shared_value(int writer, int index, int64_t k)
{
    if (k == 0)
        return (float)(writer * 100000 + index);
    return (float)((k * 7 + index * 131 + writer * 65537) % 16777216);
}

static inline void shared_fill(float *data, int64_t n, int writer, int index)
{
    for (int64_t k = 0; k < n; k++)
        data[k] = shared_value(writer, index, k);
}

#endif
